//! The manifest store (`--manifest FILE`): every record in one text file, for file systems and
//! media without extended attributes, or when the files must not be touched at all.
//!
//! # Format
//!
//! ```text
//! # mtsum audit manifest 1
//! 65536 1700000000.123456789 BLAKE3 (photos/2023/a.jpg) = 8f4e…
//! 10 1700000001.000000000 MTSUM-SHA256 (notes.txt) = 2c26…
//! ```
//!
//! The first line names the format and its version; then one line per file, sorted bytewise
//! by name: the size in bytes, the modification time as `SECONDS.NANOSECONDS` (the two fields
//! of `st_mtim`), and a checksum line exactly as `mtsum --tag` writes it ([`sumfile`]): the tag
//! says layout and algorithm, and a name holding `\`, a newline or a carriage return is
//! escaped and the checksum line starts with `\`. So `cut -d' ' -f3- FILE | mtsum -c` checks
//! the files without the audit, and for plain layouts `sha256sum -c` or `b3sum -c` do too.
//!
//! Names are the paths as the audit met them, lexically tidied ([`key`]: no `./`, no doubled
//! or trailing `/`), so `dir`, `./dir/` and `dir//` name the same records. Nothing is resolved
//! against the current directory: audit with the same spelling each time (absolute paths in
//! cron jobs).
//!
//! # Writing
//!
//! The manifest is replaced, never modified in place ([`write_atomically`](crate::replace::write_atomically)): the new content
//! goes to a temporary file in the same directory, is flushed to the disk (`fsync`), and is
//! then renamed over the old one, and the directory is flushed. A crash, a `kill -9` or a
//! full disk at any moment leaves either the old manifest or the new one, never a mix; at
//! worst a temporary file `.NAME.*.tmp` is left behind, which the audit skips.

use std::borrow::Cow;
use std::ffi::OsString;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use std::thread;

use crate::audit::AuditError;
use crate::source::{InputError, Mtime, Stamp};
use crate::sumfile::{self, Format, Terminator};

use super::{Change, Entry, OwnFile, Prior, Record, RecordStore, StoreError, is_unwalked};

/// The first line, up to the version.
const HEADER: &str = "# mtsum audit manifest ";
const VERSION: &str = "1";

/// Why a manifest could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Reading failed; the message is the system's, as coreutils prints it.
    #[error("{0}")]
    Io(InputError),
    /// The file exists but does not start with the manifest header: it is not ours, and
    /// rewriting it would destroy someone's data.
    #[error("not an mtsum audit manifest (the first line is not '{HEADER}{VERSION}')")]
    NotAManifest,
    #[error("line {line}: {why}")]
    Line { line: u64, why: String },
}

impl From<io::Error> for ManifestError {
    fn from(e: io::Error) -> Self {
        ManifestError::Io(InputError::Io(e))
    }
}

/// The records of a manifest, by name ([`key`]): one sorted table rather than a tree, so
/// that a manifest read (written in name order) is built as it comes, a lookup names a
/// record by its place ([`ManifestStore`] marks the records it met in a bit per record, not a
/// set of names), and dropping it frees one allocation per name, not per name and node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Sorted bytewise by name, each name once.
    records: Named,
}

impl Manifest {
    /// Reads the manifest at `path`; a file that does not exist yet is an empty manifest.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        match fs::read(path) {
            Ok(text) => Manifest::parse(&text),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Manifest::default()),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads a manifest from `input`. Every line must be well-formed: a record dropped here
    /// would be dropped from the manifest written back.
    pub fn read(mut input: impl Read) -> Result<Manifest, ManifestError> {
        let mut text = Vec::new();
        input.read_to_end(&mut text)?;
        Manifest::parse(&text)
    }

    /// Parses the whole text of a manifest, on every core where it is long enough (64 KiB
    /// a thread): an audit's readers wait for its records, with the cores idle.
    /// Of several bad lines, the first is named, as a reading line by line would.
    pub fn parse(text: &[u8]) -> Result<Manifest, ManifestError> {
        let threads = thread::available_parallelism().map_or(1, |n| n.get());
        Manifest::parse_in(text, threads.min(text.len() / PARALLEL_MIN).max(1))
    }

    /// [`Manifest::parse`] in `runs` runs of lines, each on a thread of its own.
    fn parse_in(text: &[u8], runs: usize) -> Result<Manifest, ManifestError> {
        if text.is_empty() {
            return Ok(Manifest::default());
        }
        let body = match memchr::memchr(b'\n', text) {
            Some(end) if is_header(&text[..=end]) => &text[end + 1..],
            None if is_header(text) => &[],
            _ => return Err(ManifestError::NotAManifest),
        };
        let runs = line_runs(body, runs);
        let parsed = thread::scope(|scope| {
            let threads: Vec<_> = runs[1..]
                .iter()
                .map(|&run| {
                    let spawned = thread::Builder::new()
                        .name("mtsum-manifest".into())
                        .spawn_scoped(scope, move || parse_run(run));
                    (run, spawned)
                })
                .collect();
            let mut parsed = vec![parse_run(runs[0])];
            for (run, spawned) in threads {
                // A thread that could not be started leaves its run to this one.
                parsed.push(match spawned {
                    Ok(handle) => handle
                        .join()
                        .unwrap_or_else(|p| std::panic::resume_unwind(p)),
                    Err(_) => parse_run(run),
                });
            }
            parsed
        });
        let mut records = Vec::new();
        // The header is line 1; each run's lines follow those of the runs before it.
        let mut line = 1;
        for run in parsed {
            match run {
                // The first run's table grows to take the others, rather than all being
                // copied into a new one.
                Ok(run) if records.is_empty() => {
                    line += run.len() as u64;
                    records = run;
                }
                Ok(mut run) => {
                    line += run.len() as u64;
                    records.append(&mut run);
                }
                Err((at, why)) => {
                    return Err(ManifestError::Line {
                        line: line + 1 + at as u64,
                        why,
                    });
                }
            }
        }
        Ok(records.into_iter().collect())
    }

    /// Writes the manifest, header first, in name order.
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(
            out,
            "{HEADER}{VERSION} (size, mtime seconds.nanoseconds, then a line of mtsum --tag)"
        )?;
        for (name, record) in &self.records {
            out.write_all(&format_line(name, record))?;
        }
        Ok(())
    }

    /// Replaces the file at `path` with this manifest, atomically ([`write_atomically`](crate::replace::write_atomically)).
    pub fn save(&self, path: &Path) -> io::Result<()> {
        crate::replace::write_atomically(path, |out| self.write(out))
    }

    /// Where the record named `name` is in the table, or where it would go.
    fn position(&self, name: &[u8]) -> Result<usize, usize> {
        self.records
            .binary_search_by(|(k, _)| k.as_slice().cmp(name))
    }

    /// The record named `name`.
    pub fn get(&self, name: &[u8]) -> Option<&Record> {
        self.position(name).ok().map(|i| &self.records[i].1)
    }

    /// Sets the record named `name`. Records are kept in name order, so setting many in
    /// another order costs a move of the ones after each: collect them
    /// ([`FromIterator`]) instead.
    pub fn insert(&mut self, name: Vec<u8>, record: Record) {
        match self.position(&name) {
            Ok(i) => self.records[i].1 = record,
            Err(i) => self.records.insert(i, (name, record)),
        }
    }

    /// Removes the record named `name`, returning it.
    pub fn remove(&mut self, name: &[u8]) -> Option<Record> {
        let i = self.position(name).ok()?;
        Some(self.records.remove(i).1)
    }

    /// Sets (`Some`) or removes (`None`) records, the last edit of a name counting, all in
    /// one pass over the table; whether the records differ from before.
    pub fn apply(&mut self, mut edits: Vec<(Vec<u8>, Option<Record>)>) -> bool {
        if edits.is_empty() {
            return false;
        }
        sort_keeping_last(&mut edits);
        let mut old = std::mem::take(&mut self.records).into_iter().peekable();
        let mut changed = false;
        for (name, edit) in edits {
            while let Some(before) = old.next_if(|(k, _)| *k < name) {
                self.records.push(before);
            }
            let was = old.next_if(|(k, _)| *k == name).map(|(_, r)| r);
            changed |= was != edit;
            if let Some(record) = edit {
                self.records.push((name, record));
            }
        }
        self.records.extend(old);
        changed
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there is no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The records in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Record)> {
        self.records.iter().map(|(k, v)| (k.as_slice(), v))
    }

    /// The records at or below `arg` (a [`key`]), in name order: what an audit of `arg`
    /// covers.
    pub fn within<'a>(&'a self, arg: &'a [u8]) -> impl Iterator<Item = (&'a [u8], &'a Record)> {
        self.places_within(arg).map(|i| {
            let (k, v) = &self.records[i];
            (k.as_slice(), v)
        })
    }

    /// The places in the table of the records [`Manifest::within`] gives.
    fn places_within<'a>(&'a self, arg: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
        let start: &[u8] = if arg == b"." { b"" } else { arg };
        let first = self.records.partition_point(|(k, _)| k.as_slice() < start);
        (first..self.records.len())
            .take_while(move |&i| self.records[i].0.starts_with(start))
            .filter(move |&i| is_within(&self.records[i].0, arg))
    }
}

/// A manifest of these records, the last of a name counting where a name comes twice. Records
/// in name order (a manifest's own lines) are taken as they are.
impl FromIterator<(Vec<u8>, Record)> for Manifest {
    fn from_iter<I: IntoIterator<Item = (Vec<u8>, Record)>>(records: I) -> Manifest {
        let mut records: Vec<_> = records.into_iter().collect();
        if !records.windows(2).all(|w| w[0].0 < w[1].0) {
            sort_keeping_last(&mut records);
        }
        Manifest { records }
    }
}

/// Sorts `named` by name, keeping of the entries of one name the last only.
fn sort_keeping_last<T>(named: &mut Vec<(Vec<u8>, T)>) {
    // Reversed, then sorted stably: of the entries of one name, the last comes first.
    named.reverse();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    named.dedup_by(|later, first| later.0 == first.0);
}

/// Bytes of manifest per thread at least when it is parsed on several: a thread costs about
/// what a few hundred lines do.
const PARALLEL_MIN: usize = 64 << 10;

/// `text` cut into at most `n` runs of whole lines (the last may lack its newline), of about
/// equal size; none is empty, and one run holds an empty `text`.
fn line_runs(text: &[u8], n: usize) -> Vec<&[u8]> {
    let mut runs = Vec::with_capacity(n);
    let mut rest = text;
    for left in (2..=n).rev() {
        if rest.is_empty() {
            break;
        }
        let from = rest.len() / left;
        let end = memchr::memchr(b'\n', &rest[from..]).map_or(rest.len(), |i| from + i + 1);
        let (run, after) = rest.split_at(end);
        runs.push(run);
        rest = after;
    }
    if !rest.is_empty() || runs.is_empty() {
        runs.push(rest);
    }
    runs
}

/// Records by name, in the order they come.
type Named = Vec<(Vec<u8>, Record)>;

/// The records of the lines of `run`, in order, or the first bad line's index in the run and
/// what is wrong with it.
fn parse_run(run: &[u8]) -> Result<Named, (usize, String)> {
    // Counted first: a table grown as it goes would be copied and faulted in twice over.
    let mut records = Vec::with_capacity(memchr::memchr_iter(b'\n', run).count() + 1);
    let mut rest = run;
    while !rest.is_empty() {
        let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
        let (line, after) = rest.split_at(end);
        records.push(parse_line(line).map_err(|why| (records.len(), why))?);
        rest = after;
    }
    Ok(records)
}

/// Whether the record name `name` is `arg` or below it (both [`key`]s).
pub fn is_within(name: &[u8], arg: &[u8]) -> bool {
    if arg == b"." {
        // Every relative name that does not climb out.
        return !name.starts_with(b"/") && name != b".." && !name.starts_with(b"../");
    }
    if arg == b"/" {
        return name.starts_with(b"/");
    }
    name == arg || (name.starts_with(arg) && name[arg.len()] == b'/')
}

/// The name a path is recorded under: the path as spelled, without `.` components, doubled
/// or trailing slashes (`./a//b/` is `a/b`). `..` is kept: it cannot be removed without
/// asking the file system, where a symbolic link may lead elsewhere.
pub fn key(path: &Path) -> Vec<u8> {
    tidy(path).into_owned()
}

/// [`key`], borrowed from `path` where it is the path as spelled: as an audit meets its files,
/// so that looking one up allocates nothing.
fn tidy(path: &Path) -> Cow<'_, [u8]> {
    let spelled = path.as_os_str().as_bytes();
    // The length of the components joined by single slashes: the spelling's own length only
    // where nothing is dropped (no `.`, no doubled or trailing slash).
    let mut len = 0;
    let mut after_root = true;
    for component in path.components() {
        if component == Component::CurDir {
            len = usize::MAX;
            break;
        }
        len += usize::from(!after_root) + component.as_os_str().len();
        after_root = component == Component::RootDir;
    }
    if len == spelled.len() && len != 0 {
        return Cow::Borrowed(spelled);
    }
    let mut tidy = PathBuf::new();
    for component in path.components() {
        if component != Component::CurDir {
            tidy.push(component);
        }
    }
    if tidy.as_os_str().is_empty() {
        return Cow::Borrowed(b".");
    }
    Cow::Owned(tidy.into_os_string().into_vec())
}

fn is_header(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(HEADER.as_bytes()) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix(VERSION.as_bytes()) else {
        return false;
    };
    matches!(rest.first(), None | Some(b' ' | b'\n'))
}

/// One record line, newline included.
fn format_line(name: &[u8], record: &Record) -> Vec<u8> {
    let mut line = format!("{} {} ", record.stamp.len, record.stamp.mtime).into_bytes();
    line.extend_from_slice(&sumfile::format_line(
        Format::Tag,
        Terminator::Newline,
        record.layout,
        record.algorithm,
        &record.value,
        name,
    ));
    line
}

/// The name and record of one line.
fn parse_line(line: &[u8]) -> Result<(Vec<u8>, Record), String> {
    let mut fields = line.splitn(3, |&b| b == b' ');
    let (Some(size), Some(mtime), Some(rest)) = (fields.next(), fields.next(), fields.next())
    else {
        return Err("expected SIZE MTIME TAG (NAME) = DIGEST".into());
    };
    let text = |b| std::str::from_utf8(b).ok();
    let size: u64 = text(size).and_then(|s| s.parse().ok()).ok_or("bad size")?;
    let mtime: Mtime = text(mtime)
        .and_then(|s| s.parse().ok())
        .ok_or("bad modification time")?;
    let entry = sumfile::parse_line(rest)
        .map_err(|e| e.to_string())?
        .ok_or("no checksum")?;
    let (layout, algorithm) = entry.spec.ok_or("the checksum has no tag")?;
    let record = Record::new(layout, algorithm, Stamp::new(size, mtime), entry.expected);
    Ok((entry.name, record))
}

/// Whether `path` is a temporary file that [`write_atomically`](crate::replace::write_atomically) makes for `target`: it must
/// not be audited as if it were data.
pub fn is_temporary_of(path: &Path, target: &Path) -> bool {
    let (Some(name), Some(target_name)) = (path.file_name(), target.file_name()) else {
        return false;
    };
    crate::replace::is_temporary_name(name, target_name) && super::same_directory(path, target)
}

/// A manifest as one audit uses it: the records as loaded (every lookup reads these), the
/// names the walk met, and the changes, applied and saved at the end ([`RecordStore::finish`]).
pub struct ManifestStore {
    path: PathBuf,
    old: Manifest,
    /// The manifest file itself, so that an audit of the tree holding it skips it.
    own: Option<OwnFile>,
    /// Where it lies, past a symbolic link ([`super::resolved`]): its temporary files are
    /// made beside it.
    file: PathBuf,
    /// The records of `old` that a lookup asked for, by place.
    seen: Vec<bool>,
    /// The records of `old` already reported unseen (arguments may overlap), by place.
    reported: Vec<bool>,
    /// Records to set (`Some`) or remove (`None`), in the order the audit decided them.
    edits: Vec<(Vec<u8>, Option<Record>)>,
    /// The place after the last record a lookup found: a walk looks its files up in name
    /// order ([`RecordStore::walking`]), so it is most often the next one asked for.
    next: usize,
}

impl ManifestStore {
    /// Loads the manifest at `path` (none yet is an empty one). A `writable` store makes sure
    /// first that the manifest can be replaced at the end: an audit that would read a whole
    /// tree only to fail at its last step fails before the first.
    pub fn open(path: &Path, writable: bool) -> Result<ManifestStore, AuditError> {
        let old = Manifest::load(path).map_err(|error| AuditError::ManifestRead {
            path: path.to_path_buf(),
            error,
        })?;
        let file = super::resolved(path);
        if writable {
            let (temp, _) = crate::replace::temporary_beside(&file).map_err(|e| {
                AuditError::ManifestUnwritable {
                    path: path.to_path_buf(),
                    why: super::directory_error(e),
                }
            })?;
            let _ = fs::remove_file(temp);
        }
        Ok(ManifestStore {
            path: path.to_path_buf(),
            own: OwnFile::of(path),
            file,
            seen: vec![false; old.len()],
            reported: vec![false; old.len()],
            old,
            edits: Vec::new(),
            next: 0,
        })
    }
}

impl RecordStore for ManifestStore {
    fn describe(&self) -> String {
        format!("manifest {}", self.path.display())
    }

    fn is_own(&self, path: &Path, meta: &fs::Metadata) -> bool {
        self.own.is_some_and(|own| own.is(meta)) || is_temporary_of(path, &self.file)
    }

    fn may_be_own(&self, path: &Path) -> bool {
        super::may_be_own(path, &self.file, self.own)
    }

    fn lookup(&mut self, path: &Path) -> Result<Entry, StoreError> {
        let name = tidy(path);
        let place = match self.old.records.get(self.next) {
            Some((next, _)) if *next == *name => Ok(self.next),
            _ => self.old.position(&name),
        };
        let prior = match place {
            Ok(i) => {
                self.next = i + 1;
                self.seen[i] = true;
                Prior::Record(self.old.records[i].1)
            }
            Err(_) => Prior::None,
        };
        Ok(Entry::of(prior))
    }

    fn has_records_below(&self, path: &Path) -> bool {
        self.old.within(&tidy(path)).next().is_some()
    }

    fn unseen_below(&mut self, arg: &Path, unwalked: &[PathBuf]) -> Vec<(PathBuf, Record)> {
        let arg = tidy(arg);
        let mut unseen = Vec::new();
        for i in self.old.places_within(&arg) {
            let (name, record) = &self.old.records[i];
            if !self.seen[i] && !self.reported[i] && !is_unwalked(name, unwalked) {
                self.reported[i] = true;
                let path = PathBuf::from(OsString::from_vec(name.clone()));
                unseen.push((path, *record));
            }
        }
        unseen
    }

    fn set(&mut self, path: &Path, change: Change) -> Result<(), StoreError> {
        let record = match change {
            Change::Set { record, .. } | Change::Import { record } => Some(*record),
            Change::Checked { .. } => return Ok(()),
            Change::Remove => None,
        };
        self.edits.push((key(path), record));
        Ok(())
    }

    fn finish(&mut self) -> Result<bool, AuditError> {
        // The records change places: the run is over, and what was seen is no more asked.
        let changed = self.old.apply(std::mem::take(&mut self.edits));
        self.seen = vec![false; self.old.len()];
        self.reported = vec![false; self.old.len()];
        changed
            .then(|| self.old.save(&self.path))
            .transpose()
            .map(|saved| saved.is_some())
            .map_err(|e| AuditError::ManifestWrite {
                path: self.path.clone(),
                error: InputError::Io(e),
            })
    }

    fn records(&mut self) -> Result<Vec<(PathBuf, Record)>, AuditError> {
        Ok(self
            .old
            .iter()
            .map(|(name, record)| (PathBuf::from(OsString::from_vec(name.to_vec())), *record))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Algorithm, Layout, LeafSize};

    fn record(n: u64) -> Record {
        Record {
            layout: Layout::Plain,
            algorithm: Algorithm::Blake3,
            stamp: Stamp::new(n, Mtime::new(1_700_000_000 + n as i64, 7).unwrap()),
            value: Algorithm::Blake3.hash(&n.to_le_bytes()).into(),
        }
    }

    #[test]
    fn names_are_tidied_lexically_only() {
        let cases = [
            ("a", "a"),
            ("./a", "a"),
            ("a//b/", "a/b"),
            ("a/./b", "a/b"),
            (".", "."),
            ("./", "."),
            ("/", "/"),
            ("//x/", "/x"),
            ("../x", "../x"),
            ("a/../b", "a/../b"),
            ("a/.", "a"),
            ("/.", "/"),
            ("", "."),
            ("/a/b", "/a/b"),
        ];
        for (path, want) in cases {
            assert_eq!(key(Path::new(path)), want.as_bytes(), "{path}");
            // A path already tidy is its own key, borrowed.
            let borrowed =
                matches!(tidy(Path::new(path)), Cow::Borrowed(k) if k == path.as_bytes());
            assert_eq!(borrowed, path == want, "{path}");
        }
    }

    #[test]
    fn within_means_the_path_or_below_it() {
        assert!(is_within(b"dir", b"dir"));
        assert!(is_within(b"dir/a", b"dir"));
        assert!(!is_within(b"dir.bak/a", b"dir"));
        assert!(!is_within(b"dirx", b"dir"));
        assert!(is_within(b"a/b", b"."));
        assert!(!is_within(b"/a", b"."));
        assert!(!is_within(b"../a", b"."));
        assert!(is_within(b"/a", b"/"));
        assert!(!is_within(b"a", b"/"));
    }

    #[test]
    fn within_finds_exactly_the_records_below_an_argument() {
        let mut m = Manifest::default();
        for (i, name) in [
            "dir",
            "dir.bak/x",
            "dir/a",
            "dir/b/c",
            "dir0",
            "/abs",
            "../up",
        ]
        .iter()
        .enumerate()
        {
            m.insert(name.as_bytes().to_vec(), record(i as u64));
        }
        let names = |arg: &[u8]| -> Vec<String> {
            m.within(arg)
                .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
                .collect()
        };
        assert_eq!(names(b"dir"), ["dir", "dir/a", "dir/b/c"]);
        assert_eq!(names(b"dir/b"), ["dir/b/c"]);
        assert_eq!(
            names(b"."),
            ["dir", "dir.bak/x", "dir/a", "dir/b/c", "dir0"]
        );
        assert_eq!(names(b"/"), ["/abs"]);
    }

    #[test]
    fn every_name_and_record_survive_the_round_trip() {
        let mut m = Manifest::default();
        let names: [&[u8]; 6] = [
            b"plain",
            b"with space",
            b"back\\slash",
            b"new\nline",
            b"paren) = x",
            b"\xff\xfe not utf-8",
        ];
        for (i, name) in names.iter().enumerate() {
            let mut r = record(i as u64);
            if i == 1 {
                r.layout = Layout::Rfc6962(LeafSize::new(4096).unwrap());
                r.algorithm = Algorithm::Sha512;
                r.value = Algorithm::Sha512.hash(b"x").into();
                r.stamp.mtime = Mtime::new(-3, 5).unwrap();
            }
            m.insert(name.to_vec(), r);
        }
        let mut text = Vec::new();
        m.write(&mut text).unwrap();
        assert_eq!(Manifest::read(&text[..]).unwrap(), m);
        let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        assert_eq!(lines.len(), names.len() + 2, "one line per record");
    }

    #[test]
    fn a_line_is_size_mtime_and_a_tagged_checksum_line() {
        let mut m = Manifest::default();
        m.insert(b"a b".to_vec(), record(1));
        let mut text = Vec::new();
        m.write(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        let second = text.lines().nth(1).unwrap();
        let hex = record(1).value;
        assert_eq!(
            second,
            format!("1 1700000001.000000007 BLAKE3 (a b) = {hex}")
        );
    }

    #[test]
    fn a_file_that_is_not_a_manifest_is_refused() {
        assert!(matches!(
            Manifest::read(&b"hello\n"[..]),
            Err(ManifestError::NotAManifest)
        ));
        assert!(matches!(
            Manifest::read(&b"# mtsum audit manifest 2\n"[..]),
            Err(ManifestError::NotAManifest)
        ));
        assert_eq!(Manifest::read(&b""[..]).unwrap(), Manifest::default());
    }

    #[test]
    fn a_damaged_line_is_an_error_naming_the_line() {
        let text = b"# mtsum audit manifest 1\n12 1.000000000 SHA256 (a) = zz\n";
        match Manifest::read(&text[..]) {
            Err(ManifestError::Line { line: 2, .. }) => {}
            other => panic!("{other:?}"),
        }
        let text = b"# mtsum audit manifest 1\nx 1.000000000 SHA256 (a) = 00\n";
        assert!(matches!(
            Manifest::read(&text[..]),
            Err(ManifestError::Line { line: 2, .. })
        ));
    }

    /// The text of a manifest of `n` records, names of every kind among them.
    fn manifest_text(n: usize) -> Vec<u8> {
        let m: Manifest = (0..n)
            .map(|i| {
                let name = match i % 4 {
                    0 => format!("dir/{i:05}"),
                    1 => format!("dir/{i:05} with space"),
                    2 => format!("dir/{i:05}\nnewline\\"),
                    _ => format!("/abs/{i:05}"),
                };
                (name.into_bytes(), record(i as u64))
            })
            .collect();
        let mut text = Vec::new();
        m.write(&mut text).unwrap();
        text
    }

    /// A manifest read as earlier versions did: line by line, each record set in turn.
    fn line_by_line(text: &[u8]) -> Result<Named, String> {
        use std::io::BufRead;
        let mut input = text;
        let mut records = std::collections::BTreeMap::new();
        let (mut line, mut number) = (Vec::new(), 0);
        loop {
            line.clear();
            if input.read_until(b'\n', &mut line).unwrap() == 0 {
                return Ok(records.into_iter().collect());
            }
            number += 1;
            if number == 1 {
                assert!(is_header(&line));
                continue;
            }
            let (name, record) =
                parse_line(&line).map_err(|why| format!("line {number}: {why}"))?;
            records.insert(name, record);
        }
    }

    /// Every way of cutting `text` into runs of lines gives what a reading line by line does.
    fn assert_parsed_as_line_by_line(text: &[u8]) {
        let want = line_by_line(text);
        for runs in 1..=7 {
            let got = Manifest::parse_in(text, runs)
                .map(|m| m.records)
                .map_err(|e| e.to_string());
            assert_eq!(got, want, "{runs} runs");
        }
    }

    #[test]
    fn a_manifest_parsed_in_runs_has_the_records_of_one_read_line_by_line() {
        let text = manifest_text(40);
        assert_parsed_as_line_by_line(&text);
        let unterminated = text.strip_suffix(b"\n").unwrap();
        assert_parsed_as_line_by_line(unterminated);
        assert_eq!(Manifest::parse(unterminated).unwrap().len(), 40);
        // Around the size from which a parse is split across threads.
        let mut over = 2 * PARALLEL_MIN / 130;
        while manifest_text(over).len() <= 2 * PARALLEL_MIN {
            over += 8;
        }
        let sizes: Vec<usize> = (over - 8..=over)
            .map(|n| {
                let text = manifest_text(n);
                assert_eq!(
                    Manifest::parse(&text).map(|m| m.records).ok(),
                    line_by_line(&text).ok()
                );
                text.len()
            })
            .collect();
        assert!(sizes[0] <= 2 * PARALLEL_MIN, "{sizes:?}");
    }

    #[test]
    fn the_first_bad_line_is_named_whichever_run_it_lies_in() {
        let text = manifest_text(40);
        let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
        for bad in [2, 3, 21, 40, 41] {
            let mut damaged = lines.clone();
            damaged[bad - 1] = b"12 1.000000000 SHA256 (a) = zz\n";
            let damaged = damaged.concat();
            assert_parsed_as_line_by_line(&damaged);
            let e = Manifest::parse_in(&damaged, 3).unwrap_err().to_string();
            assert!(e.starts_with(&format!("line {bad}: ")), "{e}");
        }
        // Two bad lines in different runs: the first is named.
        let mut damaged = lines.clone();
        damaged[35] = b"x\n";
        damaged[4] = b"y\n";
        let e = Manifest::parse_in(&damaged.concat(), 4).unwrap_err();
        assert!(matches!(e, ManifestError::Line { line: 5, .. }), "{e}");
        // The last line, without its newline.
        let mut damaged = lines.concat();
        damaged.extend_from_slice(b"1 2");
        let e = Manifest::parse_in(&damaged, 5).unwrap_err();
        assert!(matches!(e, ManifestError::Line { line: 42, .. }), "{e}");
    }

    #[test]
    fn runs_are_whole_lines_of_about_equal_size() {
        let lines: Vec<Vec<u8>> = (0..12)
            .map(|i| [vec![b'x'; i % 5], vec![b'\n']].concat())
            .collect();
        for count in 0..=lines.len() {
            let mut text = lines[..count].concat();
            for unterminated in [false, true] {
                if unterminated {
                    text.extend_from_slice(b"end");
                }
                for n in 1..=6 {
                    let runs = line_runs(&text, n);
                    assert!(!runs.is_empty() && runs.len() <= n);
                    assert_eq!(runs.concat(), text, "{count} lines in {n}");
                    for run in &runs[..runs.len() - 1] {
                        assert!(!run.is_empty() && run.ends_with(b"\n"), "{run:?}");
                    }
                    // No run is longer than its share and the rest of a line.
                    let longest = 5;
                    assert!(runs.iter().all(|r| r.len() <= text.len() / n + longest));
                }
            }
        }
    }

    #[test]
    fn lines_out_of_order_are_sorted_and_the_last_of_a_name_counts() {
        let mut text = b"# mtsum audit manifest 1\n".to_vec();
        for (name, n) in [("b", 1), ("a", 2), ("b", 3), ("c", 4)] {
            text.extend_from_slice(&format_line(name.as_bytes(), &record(n)));
        }
        let m = Manifest::parse_in(&text, 2).unwrap();
        let names: Vec<&[u8]> = m.iter().map(|(k, _)| k).collect();
        assert_eq!(names, [&b"a"[..], b"b", b"c"]);
        assert_eq!(m.get(b"b"), Some(&record(3)));
        assert_parsed_as_line_by_line(&text);
        // Runs each in order, but not one after the other; a name at the end of one run and
        // the start of the next.
        for names in [["c", "d", "a", "b"], ["a", "b", "b", "c"]] {
            let mut text = b"# mtsum audit manifest 1\n".to_vec();
            for (n, name) in names.iter().enumerate() {
                text.extend_from_slice(&format_line(name.as_bytes(), &record(n as u64)));
            }
            assert_parsed_as_line_by_line(&text);
        }
    }

    #[test]
    fn lookups_in_any_order_find_their_records_and_leave_the_rest_unseen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        let names = ["t/a", "t/b", "t/c", "t/d", "t/e"];
        let m: Manifest = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_bytes().to_vec(), record(i as u64)))
            .collect();
        m.save(&path).unwrap();
        let mut store = ManifestStore::open(&path, false).unwrap();
        // In name order, with a gap and a file the manifest does not hold, then back again.
        for (asked, want) in [
            ("t/a", Some(0)),
            ("t/b", Some(1)),
            ("t/bb", None),
            ("t/d", Some(3)),
            ("./t//a", Some(0)),
        ] {
            let prior = store.lookup(Path::new(asked)).unwrap().prior;
            let want = want.map_or(Prior::None, |i| Prior::Record(record(i)));
            assert_eq!(prior, want, "{asked}");
        }
        let unseen: Vec<PathBuf> = store
            .unseen_below(Path::new("t"), &[])
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(unseen, [Path::new("t/c"), Path::new("t/e")]);
        assert!(
            store.unseen_below(Path::new("t/"), &[]).is_empty(),
            "reported once"
        );
    }

    #[test]
    fn edits_apply_in_order_and_say_whether_anything_changed() {
        let mut m: Manifest = [("a", 1), ("c", 3)]
            .map(|(k, n)| (k.as_bytes().to_vec(), record(n)))
            .into_iter()
            .collect();
        let before = m.clone();
        assert!(!m.apply(Vec::new()));
        // A record set and set back, another set to what it was: nothing changed.
        let edits = vec![
            (b"a".to_vec(), Some(record(9))),
            (b"c".to_vec(), Some(record(3))),
            (b"a".to_vec(), Some(record(1))),
        ];
        assert!(!m.apply(edits));
        assert_eq!(m, before);
        let edits = vec![
            (b"d".to_vec(), Some(record(4))),
            (b"b".to_vec(), Some(record(2))),
            (b"a".to_vec(), None),
            (b"0".to_vec(), None),
        ];
        assert!(m.apply(edits));
        let got: Vec<(&[u8], u64)> = m.iter().map(|(k, r)| (k, r.stamp.len)).collect();
        assert_eq!(got, [(&b"b"[..], 2), (b"c", 3), (b"d", 4)]);
    }

    #[test]
    fn temporary_files_are_recognised_by_name_and_directory() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("m");
        let temp = dir.path().join(".m.123-0.tmp");
        assert!(is_temporary_of(&temp, &target));
        assert!(!is_temporary_of(&dir.path().join(".m.txt"), &target));
        assert!(!is_temporary_of(&dir.path().join("m"), &target));
        let other = tempfile::tempdir().unwrap();
        assert!(!is_temporary_of(&other.path().join(".m.1-0.tmp"), &target));
    }
}
