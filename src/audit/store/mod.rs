//! Where records live: one extended attribute per file ([`xattr`]) or one manifest file
//! ([`manifest`]), each behind [`RecordStore`], the only face of a store the run sees.
//!
//! A store answers "what was recorded about this file?" while the audit walks, takes the
//! records the verdicts call for, and makes them durable when asked ([`RecordStore::finish`]).
//! Lookups always see the store as it was before the audit: records set during a run are not
//! read back by the same run, so an argument named twice gets the same verdict twice whatever
//! the order in which files finish.

#[cfg(feature = "database")]
pub mod database;
pub mod manifest;
pub mod xattr;

use std::fmt;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::algorithm::{Algorithm, Digest};
use crate::layout::{Layout, Root};
use crate::source::{InputError, Mtime, Stamp};
use crate::sumfile;

use super::AuditError;
use super::outboard::Outboard;

/// What an audit remembers about one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub layout: Layout,
    pub algorithm: Algorithm,
    /// Size and mtime of the version of the file that `value` belongs to.
    pub stamp: Stamp,
    /// The whole value the layout gives the file, as the storage system shows it: with S3's
    /// part count, so that an exported record checks out with `-c` (`<md5>-5`, not `<md5>`).
    /// Imported values are kept as written, a count that is not the one the size implies
    /// included (an AWS CLI `-1` ETag); [`Record::new`] reads a value without a count.
    pub value: Root,
}

impl Record {
    /// A record of `value`. A value without a part count where the layout gives the file
    /// one (an S3 multipart value) stands for the value with the count its size implies:
    /// earlier versions of mtsum kept S3 values as bare digests, and the count of a value
    /// follows from the size and the part size ([`Layout::value_of`]). A bare digest that is
    /// not the multipart digest differs from the file's value either way, with or without a
    /// count, so the reading decides nothing but how old records are shown.
    pub fn new(layout: Layout, algorithm: Algorithm, stamp: Stamp, value: Root) -> Record {
        let value = match value.parts() {
            Some(_) => value,
            None => layout
                .value_of(algorithm, stamp.len, *value.digest())
                .with_encoding(value.encoding()),
        };
        Record {
            layout,
            algorithm,
            stamp,
            value,
        }
    }

    /// Whether `current`, the file's value computed now in the record's layout and
    /// algorithm, is the recorded value: as `-c` decides it ([`Layout::matches`]), so that an
    /// audit and a check of an exported record never disagree.
    pub fn matches(&self, current: &Root) -> bool {
        self.layout.matches(self.algorithm, current, &self.value)
    }

    /// The record's value as the binary stores keep it (extended attributes, the database):
    /// the digest's bytes, then, only where the value's part count is not the one the size
    /// implies ([`Record::new`]), the count as 8 bytes little-endian. Records of every value
    /// a file's bytes give are thus what earlier versions wrote, and read by them.
    pub(crate) fn value_bytes(&self) -> Vec<u8> {
        let mut out = self.value.digest().as_bytes().to_vec();
        let implied = self
            .layout
            .value_of(self.algorithm, self.stamp.len, *self.value.digest());
        if let (Some(parts), false) = (self.value.parts(), implied.parts() == self.value.parts()) {
            out.extend_from_slice(&parts.to_le_bytes());
        }
        out
    }

    /// Reads a record whose value [`Record::value_bytes`] wrote; the error says what is
    /// wrong with the bytes.
    pub(crate) fn from_value_bytes(
        layout: Layout,
        algorithm: Algorithm,
        stamp: Stamp,
        bytes: &[u8],
    ) -> Result<Record, String> {
        let len = algorithm.digest_len();
        let (digest, count) = match bytes.len() {
            n if n == len => (bytes, None),
            n if n == len + 8 => {
                let (digest, count) = bytes.split_at(len);
                let count = u64::from_le_bytes(count.try_into().expect("8 bytes"));
                if count == 0 {
                    return Err("part count 0".into());
                }
                (digest, Some(count))
            }
            n => return Err(format!("{n} digest bytes, {algorithm} has {len}")),
        };
        let value = Root::new(Digest::from_slice(digest)).with_encoding(layout.encoding(algorithm));
        let value = match count {
            Some(parts) => value.with_parts(parts),
            None => value,
        };
        Ok(Record::new(layout, algorithm, stamp, value))
    }

    /// The tag naming layout and algorithm, as in sum files: `BLAKE3`, `MTSUM-SHA256`.
    pub fn tag(&self) -> String {
        sumfile::tag(self.layout, self.algorithm)
    }
}

/// What the store knew about a file before the audit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prior {
    /// Nothing: the file is new.
    None,
    Record(Record),
    /// cshatag's attributes: the plain SHA-256 of the file at `mtime` (cshatag keeps no size).
    Cshatag {
        mtime: Mtime,
        digest: Digest,
    },
    /// A record that cannot be used (damaged, or from a newer mtsum), and why.
    Unusable(String),
}

impl Prior {
    /// The layout and algorithm to recompute the recorded digest with.
    pub fn spec(&self) -> Option<(Layout, Algorithm)> {
        match self {
            Prior::Record(r) => Some((r.layout, r.algorithm)),
            Prior::Cshatag { .. } => Some((Layout::Plain, Algorithm::Sha256)),
            Prior::None | Prior::Unusable(_) => None,
        }
    }

    /// The recorded value (cshatag's: a plain digest).
    pub fn value(&self) -> Option<Root> {
        match self {
            Prior::Record(r) => Some(r.value),
            Prior::Cshatag { digest, .. } => Some(Root::new(*digest)),
            Prior::None | Prior::Unusable(_) => None,
        }
    }

    /// Whether this is a record of mtsum's own (usable or not), as opposed to none or
    /// another program's: what forgetting a file removes.
    pub fn is_ours(&self) -> bool {
        matches!(self, Prior::Record(_) | Prior::Unusable(_))
    }
}

/// The class of a file, as an audit sorts it (see the
/// [verdict module](crate::audit::verdict)): kept here, beside the records, because the
/// stores keep it too (the last status of each file) and the verdict and the repair read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    Ok,
    Corrupt,
    /// Found corrupt, and its damaged ranges put back from a copy (`--repair-from`): it
    /// checks out again. Damage was found, and nothing is wrong any more.
    Repaired,
    Modified,
    New,
    Missing,
    Changed,
    Unreadable,
}

impl Status {
    /// Every status, in the order summaries list them.
    pub const ALL: [Status; 8] = [
        Status::Ok,
        Status::Corrupt,
        Status::Repaired,
        Status::Modified,
        Status::New,
        Status::Missing,
        Status::Changed,
        Status::Unreadable,
    ];

    /// The word printed for it: `ok`, `corrupt`, …
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Corrupt => "corrupt",
            Status::Repaired => "repaired",
            Status::Modified => "modified",
            Status::New => "new",
            Status::Missing => "missing",
            Status::Changed => "changed",
            Status::Unreadable => "unreadable",
        }
    }

    /// Whether this calls for attention (exit status 1): data lost or not verifiable.
    pub fn is_problem(self) -> bool {
        matches!(self, Status::Corrupt | Status::Unreadable)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a store holds about one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub prior: Prior,
    /// When the file last matched its record (it was audited `ok`, or the record was
    /// written), where the store keeps it: `--max-age` and `--time-budget` go by it.
    pub verified: Option<SystemTime>,
    /// Whether the store keeps the file's leaf digests ([`RecordStore::outboard`]).
    pub has_outboard: bool,
    /// A repair of the file from a copy began and was not seen through (killed, a power cut,
    /// an I/O error): [`RecordStore::begin_repair`] marked it. Until the file matches its
    /// record again, an mtime other than the recorded one is the repair's doing, not an edit.
    pub repairing: bool,
}

impl Entry {
    /// What a store that keeps no times knows.
    pub fn of(prior: Prior) -> Entry {
        Entry {
            prior,
            verified: None,
            has_outboard: false,
            repairing: false,
        }
    }
}

/// What the audit asks a store to do with one file's entry. Each of them but a `Checked`
/// that is not `ok` also ends a repair in progress ([`RecordStore::begin_repair`]): the file
/// matches a record again, or its record is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change<'a> {
    /// Write `record`: the file as it is now, judged `status` (new, modified, corrupt under
    /// `--fix`, ok for a converted record), with its leaf digests where the store keeps them.
    Set {
        record: &'a Record,
        status: Status,
        outboard: Option<&'a Outboard>,
    },
    /// The file was read and judged `status`; its record stays. The leaf digests of a file
    /// that checked out, where the store had none.
    Checked {
        status: Status,
        outboard: Option<&'a Outboard>,
    },
    /// Write `record`, brought from elsewhere (`--import`): never verified by an audit.
    Import { record: &'a Record },
    /// Remove the record.
    Remove,
}

/// Which store to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Store {
    /// The extended attribute `user.mtsum` of each file ([`xattr`]).
    Xattr,
    /// One manifest file ([`manifest`]).
    Manifest(PathBuf),
    /// One SQLite database ([`database`]).
    Database(PathBuf),
}

impl Store {
    /// Opens the store for one audit, or for reading only (`writable` false: a dry run,
    /// an export), which takes no lock and writes nothing. With `keep_times`, stores that
    /// keep verification times only where asked (extended attributes) keep them.
    pub fn open(
        &self,
        writable: bool,
        keep_times: bool,
    ) -> Result<Box<dyn RecordStore>, AuditError> {
        Ok(match self {
            Store::Xattr => Box::new(xattr::XattrStore::new(keep_times)),
            Store::Manifest(path) => Box::new(manifest::ManifestStore::open(path, writable)?),
            #[cfg(feature = "database")]
            Store::Database(path) => Box::new(database::DatabaseStore::open(path, writable)?),
            #[cfg(not(feature = "database"))]
            Store::Database(_) => {
                return Err(AuditError::Unsupported(
                    "this mtsum was built without the database store (Cargo feature `database`)"
                        .into(),
                ));
            }
        })
    }

    /// The file the store lives in, if it is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Store::Xattr => None,
            Store::Manifest(path) | Store::Database(path) => Some(path),
        }
    }
}

/// The end of a message about a store whose directory does not exist.
const NO_DIRECTORY: &str = "its directory does not exist";

/// Why a store cannot create a file in its directory (a manifest's temporary file, a
/// database or its log), as the end of a message.
pub(crate) fn directory_error(e: std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => NO_DIRECTORY.into(),
        _ => format!(
            "cannot create a file in its directory: {}",
            InputError::Io(e)
        ),
    }
}

/// The file a store at `path` lives in, past symbolic links, also one to a store not created
/// yet (else `path` itself). SQLite creates a database, and keeps its log, beside that file,
/// so that is the directory that must be writable; and a manifest is replaced there.
pub(crate) use crate::replace::resolved;

/// Whether `path` and `other` lie in the same directory (`a` and `./b` do): how a store
/// recognises the files it keeps beside its own (a manifest's temporary files, a database's
/// log) when the audited tree holds them.
pub(crate) fn same_directory(path: &Path, other: &Path) -> bool {
    let dir = |p: &Path| {
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
        std::fs::canonicalize(parent.unwrap_or(Path::new(".")))
    };
    matches!((dir(path), dir(other)), (Ok(a), Ok(b)) if a == b)
}

/// Arguments beyond which [`alone`] takes every argument to overlap another, rather than
/// compare each with each.
const ALONE_UP_TO: usize = 64;

/// For each of the arguments `args`, whether no other lies at, below or above it: then no
/// file is looked up twice in one audit, and a store need not remember what a lookup of it
/// found ([`RecordStore::walking`]). Beyond `ALONE_UP_TO` (64) arguments (a shell's expansion of
/// a tree's files), none is taken to be alone.
pub fn alone(args: &[&Path]) -> Vec<bool> {
    if args.len() > ALONE_UP_TO {
        return vec![false; args.len()];
    }
    let keys: Vec<Vec<u8>> = args.iter().map(|a| manifest::key(a)).collect();
    (0..keys.len())
        .map(|i| {
            (0..keys.len()).all(|j| {
                i == j
                    || !(manifest::is_within(&keys[i], &keys[j])
                        || manifest::is_within(&keys[j], &keys[i]))
            })
        })
        .collect()
}

/// A store's own file, as the walk of a tree holding it may meet it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OwnFile {
    /// Its device and inode.
    id: (u64, u64),
    /// Whether it has other names than its own (hard links).
    linked: bool,
}

impl OwnFile {
    /// The file at `path`, if there is one.
    pub(crate) fn of(path: &Path) -> Option<OwnFile> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(OwnFile {
            id: (meta.dev(), meta.ino()),
            linked: meta.nlink() > 1,
        })
    }

    /// Whether `meta` is the metadata of this file.
    pub(crate) fn is(&self, meta: &Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.id == (meta.dev(), meta.ino())
    }
}

/// Whether `path` may be the store file `file` (`own`), or a file kept beside it, by its
/// name: one that starts with the store's (`DB-wal`), or with a dot and then the store's
/// (`.MANIFEST.PID-N.tmp`). Without other names, the store's file is met in a walk only under
/// its own name (a bind mount of its directory included), so the other files of a tree need no
/// `stat` to be told apart from it; with hard links, any file may be it.
pub(crate) fn may_be_own(path: &Path, file: &Path, own: Option<OwnFile>) -> bool {
    if own.is_some_and(|o| o.linked) {
        return true;
    }
    let (Some(name), Some(own_name)) = (path.file_name(), file.file_name()) else {
        return true;
    };
    let (name, own_name) = (name.as_encoded_bytes(), own_name.as_encoded_bytes());
    name.starts_with(own_name)
        || name
            .strip_prefix(b".")
            .is_some_and(|n| n.starts_with(own_name))
}

/// `PRAGMA user_version` of the database store's schema ([`database`], feature `database`).
pub const SCHEMA_VERSION: i32 = 3;

/// Why a database cannot be used (the database store, feature `database`). The message is the part after `mtsum: FILE: `.
#[derive(Debug, thiserror::Error)]
pub enum DatabaseError {
    #[error("another mtsum is using this database; try again when it is done")]
    Busy,
    #[error("the database is read-only{0}")]
    ReadOnly(String),
    /// A reader cannot create the index of a log that holds changes (a read-only directory).
    #[error(
        "its log holds changes of an audit that was stopped, and reading them needs an index file beside it, which cannot be created here; an audit that may write the database folds them in"
    )]
    LogUnreadable,
    /// A reader met a rollback journal of a change cut short, which only a writer can undo.
    #[error(
        "its journal holds a change that was cut short, which only a program that may write the database can undo; an audit that may write it does so first"
    )]
    JournalUnfinished,
    /// The database would be created in a directory that does not exist.
    #[error("cannot create the database: {NO_DIRECTORY}")]
    NoDirectory,
    #[error("not an mtsum database ({0})")]
    Foreign(String),
    #[error(
        "the database was made by a newer mtsum (schema version {0}, this mtsum reads {SCHEMA_VERSION})"
    )]
    Newer(i32),
    #[error("the database is damaged: {0}")]
    Corrupt(String),
    #[error("{0}")]
    Sqlite(String),
}

/// Why a store could not read or write one file's record.
#[derive(Debug)]
pub enum StoreError {
    /// This file's record only: the audit goes on.
    File(InputError),
    /// The store as a whole (no extended attributes on this file system, say): the audit
    /// stops.
    Fatal(AuditError),
}

/// Whether the record `name` lies at or below one of the `unwalked` paths
/// ([`RecordStore::unseen_below`]).
fn is_unwalked(name: &[u8], unwalked: &[PathBuf]) -> bool {
    unwalked
        .iter()
        .any(|dir| manifest::is_within(name, &manifest::key(dir)))
}

/// A place records live in, as one audit uses it.
pub trait RecordStore {
    /// What the summary calls it: `extended attributes`, `manifest FILE`.
    fn describe(&self) -> String;

    /// Whether `path` (with metadata `meta`) is the store's own file, or one of its temporary
    /// files, which an audit of the tree holding it must skip.
    fn is_own(&self, _path: &Path, _meta: &Metadata) -> bool {
        false
    }

    /// Whether `path` may be the store's own file or one of its temporary files, judged by
    /// its name: where not, [`is_own`](Self::is_own) is false, and the audit need not
    /// examine the file before the engine opens it.
    fn may_be_own(&self, _path: &Path) -> bool {
        false
    }

    /// The entry of the regular file `path`, as the store held it before the audit.
    fn lookup(&mut self, path: &Path) -> Result<Entry, StoreError>;

    /// The extended attribute in which each file keeps its record, where the store is
    /// the files' own attributes: the reader that opens a file for the audit reads it from
    /// the open file ([`Side::xattr`](crate::engine::Side::xattr)), and
    /// [`lookup_read`](Self::lookup_read) takes it, where a lookup by path would walk the
    /// path once more.
    fn record_attribute(&self) -> Option<&'static str> {
        None
    }

    /// [`lookup`](Self::lookup), given `attr`, the value of
    /// [`record_attribute`](Self::record_attribute) read from the open file (`None`: it has
    /// none).
    fn lookup_read(&mut self, path: &Path, _attr: Option<&[u8]>) -> Result<Entry, StoreError> {
        self.lookup(path)
    }

    /// The walk of the argument `path` begins: its files will be looked up in the bytewise
    /// order of their paths, which a store may use to read their records ahead. `alone`: no
    /// other argument of the audit lies at, below or above it ([`alone`]), so no file of
    /// this walk is looked up again.
    fn walking(&mut self, _path: &Path, _alone: bool) {}

    /// Whether the store holds records of files at or below `path` (which does not exist):
    /// they are reported `missing` rather than the path being unreadable.
    fn has_records_below(&self, _path: &Path) -> bool {
        false
    }

    /// The records at or below the argument `arg` that no [`lookup`](Self::lookup) asked
    /// for, each only once per audit, in name order: the files gone since they were
    /// recorded. Records at or below the `unwalked` directories (which the walk could not
    /// read) are not among them: nothing says their files are gone. Stores kept with the
    /// files themselves have none.
    fn unseen_below(&mut self, _arg: &Path, _unwalked: &[PathBuf]) -> Vec<(PathBuf, Record)> {
        Vec::new()
    }

    /// Carries out `change` on the entry of `path`. It may be held back until
    /// [`commit`](Self::commit) or [`finish`](Self::finish).
    fn set(&mut self, path: &Path, change: Change) -> Result<(), StoreError>;

    /// Commits the changes set so far where the store gathers them in transactions (the
    /// database): from here on a `kill -9` does not lose them. The audit commits before it
    /// reports the decisions of a batch, so that whatever it printed is recorded.
    fn commit(&mut self) -> Result<(), AuditError> {
        Ok(())
    }

    /// Makes every change durable; `Ok(true)` when the store's file was rewritten.
    fn finish(&mut self) -> Result<bool, AuditError>;

    /// Whether the store keeps leaf digests ([`super::outboard`]): then the audit computes
    /// them wherever it writes a record.
    fn keeps_outboards(&self) -> bool {
        false
    }

    /// The leaf digests recorded for `path`, if the store keeps them. Read only when needed
    /// (a corrupt file, a repair): they are large.
    fn outboard(&mut self, _path: &Path) -> Result<Option<Outboard>, StoreError> {
        Ok(None)
    }

    /// Records durably, before a repair writes the first byte of `path` in place, that the
    /// repair is under way and will put back the recorded `stamp`: a repair cut short leaves
    /// the file with a new mtime, which must not pass for an edit ([`Entry::repairing`]).
    /// The mark stays until a [`Change`] says the file matches a record again. Only stores
    /// that keep leaf digests can repair, and only they keep the mark.
    fn begin_repair(&mut self, _path: &Path, _stamp: Stamp) -> Result<(), StoreError> {
        Err(StoreError::Fatal(AuditError::Unsupported(
            "repairs need the database store (--db FILE)".into(),
        )))
    }

    /// Every record, in name order (for `--export`).
    fn records(&mut self) -> Result<Vec<(PathBuf, Record)>, AuditError>;
}

/// Nanoseconds since the epoch (negative before it), saturating.
pub(crate) fn nanos(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_nanos()).map_or(i64::MIN, |n| -n),
    }
}

pub(crate) fn time(nanos: i64) -> SystemTime {
    let magnitude = Duration::from_nanos(nanos.unsigned_abs());
    if nanos >= 0 {
        UNIX_EPOCH + magnitude
    } else {
        UNIX_EPOCH - magnitude
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_survive_nanoseconds_since_the_epoch_both_sides_of_it() {
        for t in [
            UNIX_EPOCH,
            UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789),
            UNIX_EPOCH - Duration::new(5, 1),
        ] {
            assert_eq!(time(nanos(t)), t);
        }
    }

    #[test]
    fn an_s3_record_without_a_count_has_the_count_its_size_implies() {
        let layout = Layout::S3(crate::layout::PartSize::DEFAULT);
        let alg = Algorithm::Md5;
        let mtime = Mtime::new(1, 0).unwrap();
        let digest = alg.hash(b"x");
        // Three parts of 8 MiB: an old record (a bare digest) reads as `<md5>-3`.
        let big = Stamp::new((16 << 20) + 1, mtime);
        let old = Record::new(layout, alg, big, Root::new(digest));
        assert_eq!(old.value, Root::new(digest).with_parts(3));
        assert_eq!(old.value_bytes(), digest.as_bytes(), "written as before");
        // One part: a single upload's value has no count.
        let small = Stamp::new(5, mtime);
        assert_eq!(Record::new(layout, alg, small, digest.into()).value, digest);
        // A count the size does not imply (an AWS CLI `-1` ETag, a wrong count) is kept.
        for (stamp, parts) in [(small, 1), (big, 7)] {
            let odd = Record::new(layout, alg, stamp, Root::new(digest).with_parts(parts));
            assert_eq!(odd.value.parts(), Some(parts));
            let bytes = odd.value_bytes();
            assert_eq!(bytes.len(), 16 + 8);
            assert_eq!(
                Record::from_value_bytes(layout, alg, stamp, &bytes),
                Ok(odd)
            );
        }
        let bad = [digest.as_bytes(), &[0; 8]].concat();
        assert!(Record::from_value_bytes(layout, alg, big, &bad).is_err());
        assert!(Record::from_value_bytes(layout, alg, big, &bad[..17]).is_err());
    }

    #[test]
    fn an_argument_is_alone_unless_another_lies_at_below_or_above_it() {
        let paths = |names: &[&str]| -> Vec<bool> {
            let paths: Vec<&Path> = names.iter().map(Path::new).collect();
            alone(&paths)
        };
        assert_eq!(paths(&["a", "b", "a.txt", "ab"]), [true; 4]);
        assert_eq!(paths(&["a", "b", "./a/x/"]), [false, true, false]);
        assert_eq!(paths(&["t", "t"]), [false, false]);
        assert_eq!(paths(&[".", "/abs", "../up"]), [true, true, true]);
        assert_eq!(paths(&[".", "sub"]), [false, false]);
        let many: Vec<String> = (0..=ALONE_UP_TO).map(|i| i.to_string()).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(paths(&many).iter().all(|a| !a));
    }

    #[test]
    fn only_files_named_like_the_store_may_be_it_unless_it_has_other_names() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        std::fs::write(&db, "").unwrap();
        let own = OwnFile::of(&db);
        let may_be = |name: &str| may_be_own(&Path::new("tree").join(name), &db, own);
        for name in ["db", "db-wal", "db-shm", "db-journal", ".db.12-3.tmp"] {
            assert!(may_be(name), "{name}");
        }
        for name in ["a", "d", "xdb", ".d"] {
            assert!(!may_be(name), "{name}");
        }
        std::fs::hard_link(&db, dir.path().join("other")).unwrap();
        let own = OwnFile::of(&db);
        assert!(
            may_be_own(Path::new("tree/a"), &db, own),
            "a hard link may be named a"
        );
    }

    #[test]
    fn files_side_by_side_are_in_the_same_directory_however_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        assert!(same_directory(&a, &dir.path().join("./b")));
        assert!(!same_directory(&a, &dir.path().join("sub/b")));
        assert!(same_directory(Path::new("x"), Path::new("./y")));
    }
}
