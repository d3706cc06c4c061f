//! `--compare LOCAL REMOTE`: whether two trees hold the same files, a local directory and
//! an `s3://` prefix (or two directories), with one verdict per name ([`Record`]) and the
//! counts at the end ([`Summary`]).
//!
//! Where the store reports a value that vouches for an object's bytes (a checksum, an MD5
//! ETag with the part size the store tells), only the local file is read and hashed for that
//! value ([`choose()`]): a bucket is compared without downloading it. Where it reports none
//! (SSE-KMS, a garbled ETag), the name is `unverified` unless [`ReadRemote`] says to read the
//! object's bytes, which are then hashed like the local file's, as the two sides of two
//! local trees always are. Every read goes through the [`Engine`]: files and objects alike,
//! many at once, large ones on every core.
//!
//! Both sides are listed first, then paired by name in bytewise order (the order of the
//! walk, `find | LC_ALL=C sort`, and of an S3 listing), so verdicts come out sorted by name.

pub mod choose;
pub mod record;

use std::cell::Cell;
use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

use crate::algorithm::Algorithm;
use crate::engine::{Engine, FileDigest, Request, Task};
use crate::layout::Layout;
use crate::source::{InputError, Target, remote};
use crate::stored::StoredObject;
use crate::tries::{Found, Tries};
use crate::walk::{Recursion, Walked, walk};

pub use choose::{Choice, choose, common};
pub use record::{Method, Record, Status, Summary};

/// When the remote side's bytes are read rather than its reported values used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadRemote {
    /// Never: a name no reported value vouches for is `unverified`.
    #[default]
    Never,
    /// For the names no reported value vouches for (`--read-remote`).
    Unverified,
    /// For every name: only bytes are trusted (`--read-remote=all`).
    All,
}

/// How to compare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// What the bytes of both sides are hashed with where both are read (two local trees,
    /// [`ReadRemote`]): plain BLAKE3 by default, the fastest on every core.
    pub request: Request,
    pub read_remote: ReadRemote,
    /// `--one-way`: only what the first side holds must be on the second; names only the
    /// second has are not reported.
    pub one_way: bool,
    /// `--size-only`: equal sizes are taken for equal bytes; nothing is read.
    pub size_only: bool,
    /// How local directories are walked (`-L` follows symbolic links).
    pub recursion: Recursion,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            request: Request::new(Layout::Plain, Algorithm::Blake3),
            read_remote: ReadRemote::Never,
            one_way: false,
            size_only: false,
            recursion: Recursion::SkipSymlinks,
        }
    }
}

/// A root that could not be listed: nothing was compared.
#[derive(Debug, thiserror::Error)]
#[error("{cause}")]
pub struct ListError {
    /// The root as named.
    pub root: Vec<u8>,
    pub cause: InputError,
}

/// Compares the tree at `local` (a directory, or an `s3://` prefix) with the one at
/// `remote`, handing `sink` one [`Record`] per name in bytewise order of the names; a sink
/// that breaks stops the comparison after the names under way. The names of a side whose
/// root cannot be listed are not compared: that is an error.
pub fn compare(
    engine: &Engine,
    local: &Target,
    remote: &Target,
    options: &Options,
    sink: &mut dyn FnMut(&Record) -> ControlFlow<()>,
) -> Result<Summary, ListError> {
    let started = Instant::now();
    let first = list(local, options.recursion)?;
    let second = list(remote, options.recursion)?;
    Ok(run(engine, first, second, options, sink, started))
}

/// A name below the roots of a comparison, and whether the first and the second side hold it.
pub type Listed = (Vec<u8>, bool, bool);

/// The names below both roots in bytewise order, and which side holds each: what
/// [`compare`] compares, listed cheaply (a walk of a directory, the keys of a prefix without
/// their `HEAD`s), for a caller that hands them out in parts to [`compare_names`]
/// (`mtsum.dask.compare`'s workers).
pub fn names(
    local: &Target,
    remote: &Target,
    recursion: Recursion,
) -> Result<Vec<Listed>, ListError> {
    let names = |root: &Target| -> Result<Vec<(Vec<u8>, ())>, ListError> {
        let Target::Url(url) = root else {
            let listed = list(root, recursion)?;
            return Ok(listed.into_iter().map(|(name, _)| (name, ())).collect());
        };
        let fail = |cause| ListError {
            root: root.name_bytes().to_vec(),
            cause,
        };
        let prefix = prefix_of(url).map_err(fail)?;
        let start = prefix.as_str().len();
        let objects = remote::list(&prefix).map_err(fail)?;
        let mut names: Vec<(Vec<u8>, ())> = objects
            .iter()
            .map(|o| (o.as_str().as_bytes()[start..].to_vec(), ()))
            .collect();
        names.sort();
        Ok(names)
    };
    let paired = pair(names(local)?, names(remote)?);
    Ok(paired
        .map(|(name, a, b)| (name, a.is_some(), b.is_some()))
        .collect())
}

/// [`compare`] of the names `listed` only (as [`names`] gives them), each looked up on the
/// sides that hold it: a local file by `stat`, an object by its `HEAD`s.
pub fn compare_names(
    engine: &Engine,
    local: &Target,
    remote: &Target,
    listed: &[Listed],
    options: &Options,
    sink: &mut dyn FnMut(&Record) -> ControlFlow<()>,
) -> Result<Summary, ListError> {
    let started = Instant::now();
    let on = |side: fn(&Listed) -> bool| -> Vec<Vec<u8>> {
        listed
            .iter()
            .filter(|l| side(l))
            .map(|l| l.0.clone())
            .collect()
    };
    let first = look_up(local, on(|l| l.1))?;
    let second = look_up(remote, on(|l| l.2))?;
    Ok(run(engine, first, second, options, sink, started))
}

/// Reads both sides' entries, name by name, through the engine, and hands `sink` each
/// record.
fn run(
    engine: &Engine,
    first: Vec<(Vec<u8>, Entry)>,
    second: Vec<(Vec<u8>, Entry)>,
    options: &Options,
    sink: &mut dyn FnMut(&Record) -> ControlFlow<()>,
    started: Instant,
) -> Summary {
    let stopped = Cell::new(false);
    let pairs = pair(first, second).filter(|(_, first, _)| !options.one_way || first.is_some());
    let tasks = pairs
        .take_while(|_| !stopped.get())
        .flat_map(|(name, first, second)| plan(name, first, second, options));
    let mut summary = Summary::default();
    let mut pieces: Vec<(Piece, Option<Result<FileDigest, InputError>>)> = Vec::new();
    engine.run(tasks, |mut piece: Piece, outcome| {
        let finish = piece.finish.take();
        if let Some(Ok(digest)) = &outcome {
            summary.bytes += digest.size;
        }
        pieces.push((piece, outcome));
        let Some(mut pending) = finish else {
            return;
        };
        let recheck_of = pending.recheck.take();
        let mut record = decide(pending, std::mem::take(&mut pieces));
        // A second look happens at once, while the later names wait in the engine's
        // queues: nothing is held for the end, and the sink takes the records in order
        // of the names. Rare (a multipart value that does not match the part sizes
        // inferred), so the readers' short pause costs little.
        if let Some(again) = recheck_of.filter(|_| record.status == Status::Differs) {
            record = recheck(engine, record, again, &mut summary);
        }
        summary.add(&record);
        if stopped.get() {
            return;
        }
        if sink(&record).is_break() {
            stopped.set(true);
        }
    });
    summary.elapsed = started.elapsed();
    summary
}

/// What a second look at a `differs` needs: the local file, and the object whose part
/// sizes were inferred from its first and last parts.
#[derive(Debug)]
struct Recheck {
    side: Side,
    local: Target,
    object: StoredObject,
}

/// Whether a verdict on `stored`'s value under `tries` rests on part sizes inferred, not
/// told: a multipart value of parts that keep to one size at both ends but may differ in
/// the middle ([`crate::stored::Parts::may_differ_inside`]), which S3 allows and no
/// client makes. Asking every part's size of each such object up front costs a `HEAD` per
/// part (`--every-part`); asked only of one that seems to differ, it costs nothing where
/// the copies agree, and no such object is called `differs` while it is fine.
fn inferred(stored: &StoredObject, tries: &Tries) -> bool {
    let parts = stored.parts.as_ref().is_some_and(|p| p.may_differ_inside());
    parts && tries.layouts().iter().all(|l| matches!(l, Layout::S3(_)))
}

/// The record of a name that `differs` under part sizes inferred ([`inferred`]): every
/// part's size is asked of the store, and where they are not those inferred the local file
/// is hashed again at the parts' exact ends, which decide. Where the store cannot tell
/// them, the first verdict stands.
fn recheck(engine: &Engine, record: Record, again: Recheck, summary: &mut Summary) -> Record {
    let Recheck {
        side,
        local,
        object,
    } = again;
    let Some(told) = every_part(&object) else {
        return record;
    };
    let Choice::Values(tries) = choose(&told) else {
        return record;
    };
    if tries.layouts().iter().all(|l| matches!(l, Layout::S3(_))) {
        // The parts are of the size inferred: the verdict stands.
        return record;
    }
    let names = [
        local.name_bytes().to_vec(),
        told.url.as_str().as_bytes().to_vec(),
    ];
    let names = match side {
        Side::First => names,
        Side::Second => [names[1].clone(), names[0].clone()],
    };
    let piece = Piece {
        what: Work::Value(side, Box::new(tries.clone())),
        finish: None,
    };
    let mut pending = Some(Pending {
        record,
        names,
        recheck: None,
    });
    let mut decided = None;
    let task = Task::hash(local, tries.request(), piece);
    engine.run([task], |piece: Piece, outcome| {
        if let Some(Ok(digest)) = &outcome {
            summary.bytes += digest.size;
        }
        if let Some(pending) = pending.take() {
            decided = Some(decide(pending, vec![(piece, outcome)]));
        }
    });
    decided.expect("the engine hands back every task")
}

/// `object` as the store describes it with every part's size asked; `None` where it
/// cannot be asked again.
fn every_part(object: &StoredObject) -> Option<StoredObject> {
    let url = &object.url;
    let key = url.as_str();
    let cut = key.rfind('/')? + 1;
    let options = remote::Options {
        every_part: true,
        ..(**url.options()).clone()
    };
    let prefix = remote::Url::with_options(&key[..cut], std::sync::Arc::new(options)).ok()?;
    let name = key[cut..].to_string();
    let told = remote::head_stored(&prefix, &[name]).ok()?.pop()?.ok()?;
    Some(StoredObject {
        url: url.clone(),
        ..told
    })
}

/// One name of a listing.
#[derive(Debug)]
struct Entry {
    /// What to read for its bytes.
    target: Target,
    /// Its size, where known without reading it.
    size: Option<u64>,
    /// What the store reports of it.
    stored: Option<StoredObject>,
    /// Why it cannot be read (met while walking, or by `stat`).
    error: Option<InputError>,
}

impl Entry {
    fn full_name(&self) -> Vec<u8> {
        self.target.name_bytes().to_vec()
    }
}

/// The names below `root` with what is known of each, sorted by name.
fn list(root: &Target, recursion: Recursion) -> Result<Vec<(Vec<u8>, Entry)>, ListError> {
    let fail = |cause| ListError {
        root: root.name_bytes().to_vec(),
        cause,
    };
    let mut entries = match root {
        Target::Url(url) => list_remote(url).map_err(fail)?,
        Target::Path(path) | Target::File(path) => list_local(path, recursion).map_err(fail)?,
        Target::Stdin => {
            let cause = "--compare takes directories and s3:// prefixes, not standard input";
            return Err(fail(InputError::Io(std::io::Error::other(cause))));
        }
    };
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

fn list_local(root: &Path, recursion: Recursion) -> Result<Vec<(Vec<u8>, Entry)>, InputError> {
    if !std::fs::metadata(root)?.is_dir() {
        return Err(std::io::Error::from_raw_os_error(libc::ENOTDIR).into());
    }
    let relative = |path: &Path| -> Vec<u8> {
        let name = path.strip_prefix(root).unwrap_or(path);
        name.as_os_str().as_bytes().to_vec()
    };
    let mut entries = Vec::new();
    for item in walk([Target::Path(root.to_path_buf())], recursion) {
        let (path, target, error) = match item {
            Walked::Input(target) => match target.path() {
                Some(path) => (path.to_path_buf(), target, None),
                None => continue,
            },
            Walked::Error { path, error } => (path.clone(), Target::File(path), Some(error)),
            Walked::Skipped { .. } => continue,
        };
        let (size, error) = match error {
            Some(e) => (None, Some(e)),
            None => match std::fs::metadata(&path) {
                Ok(meta) => (Some(meta.len()), None),
                Err(e) => (None, Some(e.into())),
            },
        };
        let entry = Entry {
            target,
            size,
            stored: None,
            error,
        };
        entries.push((relative(&path), entry));
    }
    Ok(entries)
}

/// The prefix `url` names: with a `/` added to a URL that has none (`s3://b/dir` compares
/// as `s3://b/dir/`, as `aws s3 sync` takes it).
fn prefix_of(url: &remote::Url) -> Result<remote::Url, InputError> {
    let prefix = match url.is_prefix() {
        true => url.clone(),
        false => remote::Url::with_options(&format!("{url}/"), url.options().clone())
            .map_err(InputError::Remote)?,
    };
    match prefix.is_prefix() {
        true => Ok(prefix),
        false => Err(InputError::Remote(
            "not an s3:// prefix: --compare lists s3://BUCKET/PREFIX/".into(),
        )),
    }
}

/// The objects below the prefix `url` with what the store reports of each.
fn list_remote(url: &remote::Url) -> Result<Vec<(Vec<u8>, Entry)>, InputError> {
    let prefix = prefix_of(url)?;
    Ok(remote_entries(&prefix, remote::list_stored(&prefix)?))
}

/// The entries of what the store reported of objects below `prefix`.
#[allow(clippy::type_complexity)]
fn remote_entries(
    prefix: &remote::Url,
    listed: Vec<Result<StoredObject, (remote::Url, InputError)>>,
) -> Vec<(Vec<u8>, Entry)> {
    let start = prefix.as_str().len();
    let name = |url: &remote::Url| url.as_str().as_bytes()[start..].to_vec();
    listed
        .into_iter()
        .map(|listed| match listed {
            Ok(object) => {
                let entry = Entry {
                    target: Target::Url(object.url.clone()),
                    size: Some(object.size),
                    error: None,
                    stored: None,
                };
                let name = name(&object.url);
                let stored = Some(object);
                (name, Entry { stored, ..entry })
            }
            Err((url, error)) => {
                let entry = Entry {
                    target: Target::Url(url.clone()),
                    size: None,
                    stored: None,
                    error: Some(error),
                };
                (name(&url), entry)
            }
        })
        .collect()
}

/// The entries of `names` below `root`: a local file's size by `stat`, an object's values
/// by its `HEAD`s.
fn look_up(root: &Target, names: Vec<Vec<u8>>) -> Result<Vec<(Vec<u8>, Entry)>, ListError> {
    let fail = |cause| ListError {
        root: root.name_bytes().to_vec(),
        cause,
    };
    let Target::Url(url) = root else {
        let Some(dir) = root.path() else {
            return list(root, Recursion::Off);
        };
        let entries = names.into_iter().map(|name| {
            let path = dir.join(std::ffi::OsStr::from_bytes(&name));
            let (size, error) = match std::fs::metadata(&path) {
                Ok(meta) => (Some(meta.len()), None),
                Err(e) => (None, Some(e.into())),
            };
            let target = Target::File(path);
            let stored = None;
            (
                name,
                Entry {
                    target,
                    size,
                    stored,
                    error,
                },
            )
        });
        return Ok(entries.collect());
    };
    let prefix = prefix_of(url).map_err(fail)?;
    let keys: Vec<String> = names
        .iter()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect();
    let heads = remote::head_stored(&prefix, &keys).map_err(fail)?;
    Ok(remote_entries(&prefix, heads))
}

/// The names of two sorted listings, each with its entry on either side.
fn pair<E>(
    first: Vec<(Vec<u8>, E)>,
    second: Vec<(Vec<u8>, E)>,
) -> impl Iterator<Item = (Vec<u8>, Option<E>, Option<E>)> {
    let mut first = first.into_iter().peekable();
    let mut second = second.into_iter().peekable();
    std::iter::from_fn(move || {
        let order = match (first.peek(), second.peek()) {
            (None, None) => return None,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(a), Some(b)) => a.0.cmp(&b.0),
        };
        Some(match order {
            std::cmp::Ordering::Less => {
                let (name, a) = first.next()?;
                (name, Some(a), None)
            }
            std::cmp::Ordering::Greater => {
                let (name, b) = second.next()?;
                (name, None, Some(b))
            }
            std::cmp::Ordering::Equal => {
                let (name, a) = first.next()?;
                let (_, b) = second.next()?;
                (name, Some(a), Some(b))
            }
        })
    })
}

/// Which side of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    First,
    Second,
}

/// One task of a name: a read of one side, or nothing to read.
#[derive(Debug)]
struct Piece {
    what: Work,
    /// The last piece of a name carries what decides it.
    finish: Option<Pending>,
}

#[derive(Debug)]
enum Work {
    /// Decided without reading.
    Nothing,
    /// One side hashed for a value the other side's store reports, under each layout it
    /// may have been made with, in one read.
    Value(Side, Box<Tries>),
    /// One side's bytes, hashed with the options' request.
    Bytes(Side),
}

/// A name's record so far, and the full names of its sides for messages.
#[derive(Debug)]
struct Pending {
    record: Record,
    names: [Vec<u8>; 2],
    /// Where a `differs` is to be looked at again with every part's size.
    recheck: Option<Recheck>,
}

/// The tasks of one name: none to read (a name on one side, sizes that differ, a value
/// nobody reports), one per value to try on the local side, or one per side to read.
fn plan(
    name: Vec<u8>,
    first: Option<Entry>,
    second: Option<Entry>,
    options: &Options,
) -> Vec<Task<Piece>> {
    let decided = |record: Record, names: [Vec<u8>; 2]| {
        let finish = Some(Pending {
            record,
            names,
            recheck: None,
        });
        vec![Task::pass(Piece {
            what: Work::Nothing,
            finish,
        })]
    };
    let (mut a, mut b) = match (first, second) {
        (Some(a), Some(b)) => (a, b),
        (a, _) => {
            let status = match a.is_some() {
                true => Status::OnlyLocal,
                false => Status::OnlyRemote,
            };
            return decided(Record::new(name, status), [Vec::new(), Vec::new()]);
        }
    };
    let names = [a.full_name(), b.full_name()];
    let mut record = Record::new(name, Status::Ok);
    record.size = a.size;
    record.remote_size = b.size;
    for (entry, side) in [(&mut a, 0), (&mut b, 1)] {
        if let Some(cause) = entry.error.take() {
            record.status = Status::Unreadable;
            record.error = Some((names[side].clone(), cause));
            return decided(record, names);
        }
    }
    if let (Some(x), Some(y)) = (a.size, b.size)
        && (x != y || options.size_only)
    {
        record.method = Some(Method::Size);
        record.status = if x == y { Status::Ok } else { Status::Differs };
        return decided(record, names);
    }
    // The local side hashed for a value the other reports, where one does.
    let vouched = match (&a.stored, &b.stored) {
        _ if options.read_remote == ReadRemote::All => None,
        (None, Some(r)) => Some((Side::First, &a, r)),
        (Some(r), None) => Some((Side::Second, &b, r)),
        _ => None,
    };
    let both_local = is_local(&a) && is_local(&b);
    let mut why = None;
    // Two objects: the cheapest value both stores report, compared without reading.
    if let (Some(x), Some(y)) = (&a.stored, &b.stored)
        && options.read_remote != ReadRemote::All
    {
        match common(x, y) {
            Some((mine, theirs)) => {
                record.method = Some(Method::Stored);
                record.status = match mine.expected == theirs.expected {
                    true => Status::Ok,
                    false => Status::Differs,
                };
                record.layout = Some(theirs.layout);
                record.algorithm = Some(theirs.algorithm);
                record.expected = Some(theirs.expected);
                record.digest = Some(mine.expected);
                return decided(record, names);
            }
            None => why = Some("the two stores report no value of the same kind".into()),
        }
    }
    if let Some((side, local, stored)) = vouched.filter(|(_, local, _)| is_local(local)) {
        match choose(stored) {
            Choice::Values(tries) => {
                let sizes = tries.layouts().len();
                record.sizes_tried = (sizes > 1).then_some(sizes);
                let recheck = inferred(stored, &tries).then(|| Recheck {
                    side,
                    local: local.target.clone(),
                    object: stored.clone(),
                });
                let piece = Piece {
                    what: Work::Value(side, Box::new(tries.clone())),
                    finish: Some(Pending {
                        record,
                        names,
                        recheck,
                    }),
                };
                return vec![Task::hash(local.target.clone(), tries.request(), piece)];
            }
            Choice::Unverifiable(reason) => why = Some(reason),
        }
    }
    let read = both_local || options.read_remote != ReadRemote::Never;
    if !read {
        record.status = Status::Unverified;
        record.why = Some(why.unwrap_or_else(|| "the store reports no value of it".into()));
        return decided(record, names);
    }
    let request = options.request.clone();
    record.layout = Some(request.layout);
    record.algorithm = Some(request.algorithm);
    let piece = |side, finish| Piece {
        what: Work::Bytes(side),
        finish,
    };
    let finish = Pending {
        record,
        names,
        recheck: None,
    };
    vec![
        Task::hash(a.target, request.clone(), piece(Side::First, None)),
        Task::hash(b.target, request, piece(Side::Second, Some(finish))),
    ]
}

fn is_local(entry: &Entry) -> bool {
    !matches!(entry.target, Target::Url(_))
}

/// The record of a name from what its pieces gave.
fn decide(
    pending: Pending,
    pieces: Vec<(Piece, Option<Result<FileDigest, InputError>>)>,
) -> Record {
    let Pending {
        mut record, names, ..
    } = pending;
    let unreadable = |mut record: Record, side: Side, e: InputError| {
        let index = if side == Side::First { 0 } else { 1 };
        record.status = Status::Unreadable;
        record.error = Some((names[index].clone(), e));
        record
    };
    let mut hashed: Option<(Tries, Found)> = None;
    let mut read: [Option<FileDigest>; 2] = [None, None];
    let mut failed = None;
    for (piece, outcome) in pieces {
        match (piece.what, outcome) {
            (Work::Nothing, _) => {}
            (Work::Value(_, tries), Some(Ok(digest))) => {
                let found = tries.found(&digest);
                hashed = Some((*tries, found));
            }
            (Work::Bytes(side), Some(Ok(digest))) => read[side as usize] = Some(digest),
            (Work::Value(side, ..) | Work::Bytes(side), Some(Err(e))) => {
                failed.get_or_insert((side, e));
            }
            (Work::Value(side, ..) | Work::Bytes(side), None) => {
                let e = InputError::Interrupted;
                failed.get_or_insert((side, e));
            }
        }
    }
    if let [Some(first), Some(second)] = read {
        record.method = Some(Method::Read);
        record.status = match first.root == second.root {
            true => Status::Ok,
            false => Status::Differs,
        };
        record.expected = Some(second.root);
        record.digest = Some(first.root);
        record.size = Some(first.size);
        record.remote_size = Some(second.size);
        return record;
    }
    if let Some((tries, found)) = hashed {
        record.method = Some(Method::Stored);
        record.status = match found.matched {
            true => Status::Ok,
            false => Status::Differs,
        };
        record.layout = Some(found.layout);
        record.algorithm = Some(tries.algorithm);
        record.expected = Some(tries.expected);
        record.digest = Some(found.root.with_encoding(tries.expected.encoding()));
        return record;
    }
    match failed {
        Some((side, e)) => unreadable(record, side, e),
        None => record,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{PartSize, Root};
    use crate::stored::Parts;

    /// A local file against an ETag of parts whose size the store did not tell: the sizes of
    /// `-c --part-size auto`, all in one read, find the one it was uploaded with.
    #[test]
    fn an_etag_of_an_untold_part_size_is_found_among_the_guesses_of_one_read() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..(21u32 << 20) + 3).map(|i| (i % 251) as u8).collect();
        let path = dir.path().join("f");
        std::fs::write(&path, &data).unwrap();
        // 16 MiB parts: not the AWS CLI's 8 MiB, the first guess.
        let part = PartSize::new(16 << 20).unwrap();
        let etag: Root =
            crate::reference::checksum(Layout::S3(part), Algorithm::Md5, &data).unwrap();
        let url = remote::Url::parse("s3://b/f").unwrap();
        let object = StoredObject {
            name: "f".into(),
            url: url.clone(),
            size: data.len() as u64,
            etag: Some(etag.to_string()),
            encryption: None,
            checksums: Vec::new(),
            parts: Some(Parts {
                count: 2,
                first: None,
                last: None,
                sizes: Vec::new(),
            }),
        };
        let local = Entry {
            target: Target::File(path),
            size: Some(data.len() as u64),
            stored: None,
            error: None,
        };
        let remote = Entry {
            target: Target::Url(url),
            size: Some(data.len() as u64),
            stored: Some(object),
            error: None,
        };
        let mut records = Vec::new();
        let engine = Engine::new(std::num::NonZeroUsize::new(2).unwrap());
        let options = Options::default();
        let first = vec![(b"f".to_vec(), local)];
        let second = vec![(b"f".to_vec(), remote)];
        run(
            &engine,
            first,
            second,
            &options,
            &mut |r| {
                records.push((r.status, r.layout, r.sizes_tried, r.digest));
                ControlFlow::Continue(())
            },
            Instant::now(),
        );
        let guesses = Layout::S3(PartSize::DEFAULT).size_guesses(data.len() as u64, &etag);
        assert!(guesses.len() > 2);
        assert_eq!(
            records,
            [(
                Status::Ok,
                Some(Layout::S3(part)),
                Some(guesses.len()),
                Some(etag)
            )]
        );
    }
}
