//! Integrity audits (`--audit`): remember each file's digest, size and modification time,
//! and later tell silent corruption (bit rot) from a legitimate edit.
//!
//! An audit walks the paths it is given and sorts every regular file into one [`Status`]:
//!
//! | status | when | the record afterwards |
//! |---|---|---|
//! | `ok` | same size and mtime as recorded, same digest | kept (a cshatag record is converted) |
//! | `corrupt` | same size and mtime, **different digest**: the alarm | kept, unless [`Operation::Audit`]`{ fix }` |
//! | `modified` | size or mtime differs from the record | refreshed with `update`, else kept |
//! | `new` | no record yet | recorded |
//! | `missing` | a record but no file (manifest store only) | dropped with `update`, else kept |
//! | `changed` | size or mtime moved while the file was read, or it vanished | kept |
//! | `unreadable` | an I/O or permission error, a damaged record | kept |
//!
//! The digest is recomputed with the layout and algorithm the record names, so records made
//! with different `-a`/`-t` choices coexist; new records get [`Options::layout`] and
//! [`Options::algorithm`], plain BLAKE3 by default: on the machine of `docs/performance.md`
//! it hashes at 5.7 GB/s on one core, faster than the page cache delivers a file (a 2 GiB
//! file audits as fast as with the parallel tree layout), it is a 256-bit cryptographic hash
//! that no bit rot can fool, and `b3sum` verifies it without mtsum.
//!
//! Timestamps are compared at a [`Resolution`], nanoseconds by default: file systems such as
//! SMB keep 100 ns, FAT 2 s, and a copy to one of them must not make every file `modified`.
//!
//! Records live in a [`Store`]: one extended attribute per file ([`xattr`], the default), or
//! one manifest file ([`manifest`]).
//!
//! Files are hashed on the [`Engine`], in parallel, and verdicts come back in walk order. The
//! stamp (size and mtime) is taken before a file is handed to the engine and again after its
//! digest is known; if they differ, or the engine saw the file change, the file is `changed`:
//! its digest belongs to no version of the file and proves nothing.
//!
//! ```
//! use mtsum::audit::{self, Event, Options, Status, Store};
//! use mtsum::engine::Engine;
//! use mtsum::source::Target;
//! use mtsum::walk::Recursion;
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("a"), "data")?;
//! let mut options = Options::new(Store::Manifest(dir.path().join("manifest")));
//! options.recursion = Recursion::SkipSymlinks;
//! let targets = [Target::Path(dir.path().join("a"))];
//!
//! let mut seen = Vec::new();
//! let mut on = |e: Event| if let Event::Verdict(v) = e { seen.push(v.status) };
//! audit::audit(&Engine::default(), &targets, &options, &mut on)?;
//! audit::audit(&Engine::default(), &targets, &options, &mut on)?;
//! assert_eq!(seen, [Status::New, Status::Ok]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod manifest;
pub mod xattr;

use std::cell::RefCell;
use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::fs::{self, Metadata};
use std::io;
use std::num::NonZeroU64;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::algorithm::{Algorithm, Digest};
use crate::engine::{Engine, FileDigest, Request, Task};
use crate::layout::Layout;
use crate::source::{InputError, Target};
use crate::sumfile;
use crate::walk::{Recursion, SkipReason, Walked, walk};

use manifest::{Manifest, ManifestError};

/// A modification time as `stat` gives it: seconds since the epoch and nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mtime {
    pub sec: i64,
    /// Below 10⁹.
    pub nsec: u32,
}

impl Mtime {
    /// `None` when `nsec` is not below 10⁹.
    pub fn new(sec: i64, nsec: u32) -> Option<Mtime> {
        (nsec < 1_000_000_000).then_some(Mtime { sec, nsec })
    }

    /// The modification time of `meta`.
    pub fn of(meta: &Metadata) -> Mtime {
        Mtime {
            sec: meta.mtime(),
            nsec: meta.mtime_nsec() as u32,
        }
    }

    fn nanos(self) -> i128 {
        i128::from(self.sec) * 1_000_000_000 + i128::from(self.nsec)
    }

    /// Whether the two times are the same at `resolution`: they differ by less than it. A
    /// tolerance rather than truncation, since file systems round either way (FAT rounds up
    /// to even seconds, SMB truncates to 100 ns).
    pub fn matches(self, other: Mtime, resolution: Resolution) -> bool {
        (self.nanos() - other.nanos()).unsigned_abs() < u128::from(resolution.nanos())
    }
}

/// `SECONDS.NANOSECONDS` with nine digits after the point, as cshatag writes its timestamps
/// (`1700000000.000000042`; seconds may be negative, before 1970).
impl fmt::Display for Mtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}", self.sec, self.nsec)
    }
}

impl FromStr for Mtime {
    type Err = String;

    fn from_str(s: &str) -> Result<Mtime, String> {
        let bad = || format!("'{s}' is not a time SECONDS.NANOSECONDS");
        let (sec, nsec) = s.split_once('.').ok_or_else(bad)?;
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        if !digits(sec.strip_prefix('-').unwrap_or(sec)) || nsec.len() != 9 || !digits(nsec) {
            return Err(bad());
        }
        let sec = sec.parse().map_err(|_| bad())?;
        Mtime::new(sec, nsec.parse().map_err(|_| bad())?).ok_or_else(bad)
    }
}

/// How close two modification times must be to count as the same (`--mtime-resolution`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolution(NonZeroU64);

impl Resolution {
    /// Exact comparison, the default: local file systems keep nanoseconds.
    pub const NANOSECOND: Resolution = Resolution(NonZeroU64::MIN);

    /// A resolution of `nanos` nanoseconds; `None` for 0.
    pub fn from_nanos(nanos: u64) -> Option<Resolution> {
        NonZeroU64::new(nanos).map(Resolution)
    }

    pub fn nanos(self) -> u64 {
        self.0.get()
    }
}

impl Default for Resolution {
    fn default() -> Self {
        Resolution::NANOSECOND
    }
}

const UNITS: [(&str, u64); 5] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];

/// `ns`, `100ns`, `us`, `ms`, `s`, `2s`: an optional count and a unit.
impl FromStr for Resolution {
    type Err = String;

    fn from_str(s: &str) -> Result<Resolution, String> {
        let bad = || format!("'{s}' is not a resolution such as ns, 100ns, us, ms, s or 2s");
        let split = s.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let (count, unit) = s.split_at(split);
        let count: u64 = if count.is_empty() {
            1
        } else {
            count.parse().map_err(|_| bad())?
        };
        let unit = UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .ok_or_else(bad)?
            .1;
        count
            .checked_mul(unit)
            .and_then(Resolution::from_nanos)
            .ok_or_else(bad)
    }
}

impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.nanos();
        let (name, unit) = UNITS
            .iter()
            .rev()
            .find(|(name, unit)| n.is_multiple_of(*unit) && *name != "µs")
            .expect("every count is a multiple of 1 ns");
        match n / unit {
            1 => write!(f, "{name}"),
            count => write!(f, "{count}{name}"),
        }
    }
}

/// What an audit remembers about one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub layout: Layout,
    pub algorithm: Algorithm,
    /// Bytes.
    pub size: u64,
    pub mtime: Mtime,
    pub digest: Digest,
}

impl Record {
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

    /// The recorded digest.
    pub fn digest(&self) -> Option<&Digest> {
        match self {
            Prior::Record(r) => Some(&r.digest),
            Prior::Cshatag { digest, .. } => Some(digest),
            Prior::None | Prior::Unusable(_) => None,
        }
    }
}

/// The class of a file (see the [module documentation](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    Ok,
    Corrupt,
    Modified,
    New,
    Missing,
    Changed,
    Unreadable,
}

impl Status {
    /// Every status, in the order summaries list them.
    pub const ALL: [Status; 7] = [
        Status::Ok,
        Status::Corrupt,
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

/// What an audit did (or, in a dry run, would have done) to a file's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// The record stays as it was.
    Kept,
    /// A new file got its first record.
    Recorded,
    /// A modified file's record was refreshed (`update`).
    Updated,
    /// A corrupt file's record, or an unusable one, was replaced by the file's current digest
    /// (`fix`).
    Fixed,
    /// A cshatag record that checked out was copied into an mtsum record.
    Converted,
    /// A missing file's record was dropped (`update`).
    Removed,
    /// The record was removed ([`Operation::Forget`]).
    Forgotten,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Kept => "kept",
            Action::Recorded => "recorded",
            Action::Updated => "updated",
            Action::Fixed => "fixed",
            Action::Converted => "converted",
            Action::Removed => "removed",
            Action::Forgotten => "forgotten",
        }
    }

    /// Every action, in the order summaries list them.
    pub const ALL: [Action; 7] = [
        Action::Kept,
        Action::Recorded,
        Action::Updated,
        Action::Fixed,
        Action::Converted,
        Action::Removed,
        Action::Forgotten,
    ];
}

/// Why a file is `unreadable` or `changed`. The message is the part after `mtsum: NAME: `.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Opening, reading or examining the file failed, or it changed while being read.
    #[error("{0}")]
    Input(#[from] InputError),
    #[error("not a regular file")]
    NotRegular,
    /// The walk listed it, and then it was gone.
    #[error("vanished during the audit")]
    Vanished,
    /// Its record cannot be used.
    #[error("{0}")]
    Record(String),
    #[error("standard input cannot be audited")]
    Stdin,
}

/// The outcome for one file.
#[derive(Debug)]
pub struct Verdict {
    /// As the walk met it; for `missing`, the name in the manifest.
    pub path: PathBuf,
    pub status: Status,
    /// What the store held before.
    pub prior: Prior,
    /// The size and mtime when the audit looked, before hashing.
    pub state: Option<(u64, Mtime)>,
    /// The file as it is now, in the record's layout and algorithm: what a refreshed record
    /// holds. `None` unless the file was hashed and held still.
    pub current: Option<Record>,
    /// Why it is `unreadable` or `changed`.
    pub error: Option<FileError>,
    pub action: Action,
    /// The store refused the action (a file we may read but not tag, say).
    pub action_error: Option<InputError>,
}

/// One thing an audit reports, in walk order.
#[derive(Debug)]
pub enum Event<'a> {
    Verdict(&'a Verdict),
    /// The record of `path` was removed ([`Operation::Forget`]; in a dry run, would be), or
    /// the store refused (`error`).
    Forgotten {
        path: &'a Path,
        error: Option<&'a InputError>,
    },
    /// A path met during recursion that is not a regular file; worth a note with `--verbose`.
    Skipped {
        path: &'a Path,
        reason: SkipReason,
    },
}

/// Where records live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Store {
    /// The extended attribute `user.mtsum` of each file ([`xattr`]).
    Xattr,
    /// One manifest file ([`manifest`]).
    Manifest(PathBuf),
}

/// What to do with the files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Classify every file, recording new ones.
    Audit {
        /// Refresh the records of modified files; drop those of missing files.
        update: bool,
        /// Replace the records of corrupt files (and unusable records) with the current digest.
        fix: bool,
    },
    /// Remove the records of the files (and, in a manifest, every record below the paths),
    /// without hashing anything.
    Forget,
}

/// How to audit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    pub store: Store,
    pub operation: Operation,
    pub recursion: Recursion,
    /// Layout of new records.
    pub layout: Layout,
    /// Algorithm of new records.
    pub algorithm: Algorithm,
    pub resolution: Resolution,
    /// Decide everything, write nothing.
    pub dry_run: bool,
}

impl Options {
    /// The layout of new records unless told otherwise: plain, so that ordinary tools can
    /// verify a file too (see the [module documentation](self)).
    pub const DEFAULT_LAYOUT: Layout = Layout::Plain;
    /// The algorithm of new records unless told otherwise.
    pub const DEFAULT_ALGORITHM: Algorithm = Algorithm::Blake3;

    /// An audit without recursion or updates, keeping records in `store`.
    pub fn new(store: Store) -> Options {
        Options {
            store,
            operation: Operation::Audit {
                update: false,
                fix: false,
            },
            recursion: Recursion::Off,
            layout: Self::DEFAULT_LAYOUT,
            algorithm: Self::DEFAULT_ALGORITHM,
            resolution: Resolution::NANOSECOND,
            dry_run: false,
        }
    }
}

/// The counts of a finished audit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Files per [`Status`], indexed as [`Status::ALL`].
    pub statuses: [u64; 7],
    /// Files per [`Action`], indexed as [`Action::ALL`].
    pub actions: [u64; 7],
    /// Actions the store refused.
    pub action_errors: u64,
    /// Bytes hashed.
    pub bytes: u64,
    /// Whether the manifest was rewritten.
    pub manifest_written: bool,
}

impl Summary {
    pub fn count(&self, status: Status) -> u64 {
        self.statuses[Status::ALL
            .iter()
            .position(|s| *s == status)
            .expect("listed")]
    }

    pub fn actions(&self, action: Action) -> u64 {
        self.actions[Action::ALL
            .iter()
            .position(|a| *a == action)
            .expect("listed")]
    }

    /// Files that got a verdict.
    pub fn files(&self) -> u64 {
        self.statuses.iter().sum()
    }

    /// Nothing corrupt or unreadable, and every record written that had to be.
    pub fn is_clean(&self) -> bool {
        Status::ALL
            .iter()
            .all(|s| !s.is_problem() || self.count(*s) == 0)
            && self.action_errors == 0
    }

    fn note(&mut self, action: Action, refused: bool) {
        let index = Action::ALL.iter().position(|a| *a == action);
        self.actions[index.expect("listed")] += 1;
        self.action_errors += u64::from(refused);
    }

    fn add(&mut self, verdict: &Verdict) {
        let status = Status::ALL.iter().position(|s| *s == verdict.status);
        self.statuses[status.expect("listed")] += 1;
        self.note(verdict.action, verdict.action_error.is_some());
        self.bytes += verdict.current.map_or(0, |r| r.size);
    }
}

/// An error that stops the audit.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The file system of `path` has no user extended attributes.
    #[error(
        "the file system does not support user extended attributes ({ERROR}); keep the records in a manifest instead: --manifest FILE",
        ERROR = InputError::Io(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
    )]
    XattrUnsupported { path: PathBuf },
    /// The manifest could not be read.
    #[error("{error}")]
    ManifestRead { path: PathBuf, error: ManifestError },
    /// The manifest could not be written; the old one is intact.
    #[error("cannot write the manifest (the previous one is intact): {error}")]
    ManifestWrite { path: PathBuf, error: InputError },
}

impl AuditError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            AuditError::XattrUnsupported { path }
            | AuditError::ManifestRead { path, .. }
            | AuditError::ManifestWrite { path, .. } => path,
        }
    }
}

/// Audits the files at and (with recursion) below `targets` as `options` say, calling `on`
/// with each verdict in walk order, then each argument's `missing` records. Per-file trouble is
/// a verdict and the audit goes on; an [`AuditError`] stops it (verdicts already reported
/// stand, a manifest is left as it was).
pub fn audit(
    engine: &Engine,
    targets: &[Target],
    options: &Options,
    on: &mut dyn FnMut(Event),
) -> Result<Summary, AuditError> {
    let manifest = match &options.store {
        Store::Xattr => None,
        Store::Manifest(path) => Some(ManifestPlan::load(path)?),
    };
    let fatal = RefCell::new(None);
    let mut planner = Planner {
        options,
        args: targets.iter(),
        current: None,
        manifest,
        queue: VecDeque::new(),
        fatal: &fatal,
    };
    let mut sink = Sink {
        options,
        on,
        summary: Summary::default(),
        edits: Vec::new(),
        fatal: &fatal,
    };
    engine.run(&mut planner, |item, result| sink.on(item, result));
    if let Some(e) = fatal.take() {
        return Err(e);
    }
    let mut summary = sink.summary;
    if let Some(plan) = planner.manifest {
        let mut manifest = plan.old;
        let mut changed = false;
        for (name, record) in sink.edits {
            changed |= manifest.get(&name) != record.as_ref();
            match record {
                Some(r) => manifest.insert(name, r),
                None => {
                    manifest.remove(&name);
                }
            }
        }
        if changed && !options.dry_run {
            manifest
                .save(&plan.path)
                .map_err(|e| AuditError::ManifestWrite {
                    path: plan.path.clone(),
                    error: InputError::Io(e),
                })?;
            summary.manifest_written = true;
        }
    }
    Ok(summary)
}

/// The manifest being audited against, and which of its records the walk has met.
struct ManifestPlan {
    path: PathBuf,
    old: Manifest,
    /// The manifest file itself, so that an audit of the tree holding it skips it.
    id: Option<(u64, u64)>,
    seen: HashSet<Vec<u8>>,
    /// Records already reported missing (arguments may overlap).
    reported: HashSet<Vec<u8>>,
}

impl ManifestPlan {
    fn load(path: &Path) -> Result<ManifestPlan, AuditError> {
        let old = Manifest::load(path).map_err(|error| AuditError::ManifestRead {
            path: path.to_path_buf(),
            error,
        })?;
        Ok(ManifestPlan {
            path: path.to_path_buf(),
            old,
            id: fs::metadata(path).ok().map(|m| (m.dev(), m.ino())),
            seen: HashSet::new(),
            reported: HashSet::new(),
        })
    }

    /// Whether `path` is the manifest or one of its temporary files.
    fn is_own(&self, path: &Path, meta: &Metadata) -> bool {
        self.id == Some((meta.dev(), meta.ino())) || manifest::is_temporary_of(path, &self.path)
    }
}

/// What travels through the engine with each file.
enum Item {
    /// A regular file hashed with its prior's layout and algorithm (or the defaults).
    File {
        path: PathBuf,
        key: Option<Vec<u8>>,
        before: (u64, Mtime),
        prior: Prior,
    },
    /// Decided without hashing.
    Done(Verdict),
    /// A manifest record below an argument that the walk did not meet.
    Missing {
        key: Vec<u8>,
        record: Record,
    },
    /// A file whose record is to be removed ([`Operation::Forget`]).
    Forget {
        path: PathBuf,
        key: Option<Vec<u8>>,
        prior: Prior,
    },
    Skipped {
        path: PathBuf,
        reason: SkipReason,
    },
}

/// Turns the arguments into tasks, one argument's walk at a time, looking up each file's
/// record on the way.
struct Planner<'a> {
    options: &'a Options,
    args: std::slice::Iter<'a, Target>,
    /// The argument being walked, and its walk.
    current: Option<(Target, crate::walk::Walk<std::iter::Once<Target>>)>,
    manifest: Option<ManifestPlan>,
    queue: VecDeque<Task<Item>>,
    fatal: &'a RefCell<Option<AuditError>>,
}

impl Iterator for Planner<'_> {
    type Item = Task<Item>;

    fn next(&mut self) -> Option<Task<Item>> {
        loop {
            if self.fatal.borrow().is_some() {
                return None;
            }
            if let Some(task) = self.queue.pop_front() {
                return Some(task);
            }
            if let Some((arg, walk)) = &mut self.current {
                match walk.next() {
                    Some(walked) => {
                        let arg = arg.clone();
                        self.plan(&arg, walked);
                    }
                    None => {
                        let (arg, _) = self.current.take().expect("walking");
                        self.report_missing(&arg);
                    }
                }
                continue;
            }
            let arg = self.args.next()?.clone();
            let walk = walk(std::iter::once(arg.clone()), self.options.recursion);
            self.current = Some((arg, walk));
        }
    }
}

impl Planner<'_> {
    fn done(&mut self, path: PathBuf, status: Status, prior: Prior, error: FileError) {
        self.queue.push_back(Task::pass(Item::Done(Verdict {
            path,
            status,
            prior,
            state: None,
            current: None,
            error: Some(error),
            action: Action::Kept,
            action_error: None,
        })));
    }

    fn plan(&mut self, arg: &Target, walked: Walked) {
        let path = match walked {
            Walked::Input(Target::Path(path)) => path,
            Walked::Input(Target::Stdin) => {
                return self.done(
                    "-".into(),
                    Status::Unreadable,
                    Prior::None,
                    FileError::Stdin,
                );
            }
            Walked::Skipped { path, reason } => {
                let item = Item::Skipped { path, reason };
                return self.queue.push_back(Task::pass(item));
            }
            Walked::Error { path, error } => {
                return self.done(path, Status::Unreadable, Prior::None, error.into());
            }
        };
        let named = matches!(arg, Target::Path(a) if *a == path);
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if !named {
                    return self.done(path, Status::Changed, Prior::None, FileError::Vanished);
                }
                let has_records = self
                    .manifest
                    .as_ref()
                    .is_some_and(|m| m.old.within(&manifest::key(&path)).next().is_some());
                if has_records {
                    // Its records are reported missing when the argument is done.
                    return;
                }
                return self.done(
                    path,
                    Status::Unreadable,
                    Prior::None,
                    InputError::Io(e).into(),
                );
            }
            Err(e) => {
                return self.done(
                    path,
                    Status::Unreadable,
                    Prior::None,
                    InputError::Io(e).into(),
                );
            }
        };
        if meta.is_dir() {
            let e = InputError::IsADirectory.into();
            return self.done(path, Status::Unreadable, Prior::None, e);
        }
        if !meta.is_file() {
            return self.done(path, Status::Unreadable, Prior::None, FileError::NotRegular);
        }
        if self
            .manifest
            .as_ref()
            .is_some_and(|m| m.is_own(&path, &meta))
        {
            return;
        }
        let before = (meta.len(), Mtime::of(&meta));
        let key = self.manifest.as_ref().map(|_| manifest::key(&path));
        let prior = match (&mut self.manifest, &key) {
            (Some(m), Some(key)) => {
                m.seen.insert(key.clone());
                m.old.get(key).map_or(Prior::None, |r| Prior::Record(*r))
            }
            _ => match xattr::read(&path) {
                Ok(prior) => prior,
                Err(e) if xattr::is_unsupported(&e) => {
                    *self.fatal.borrow_mut() = Some(AuditError::XattrUnsupported { path });
                    return;
                }
                Err(e) => {
                    let e = InputError::Io(e).into();
                    return self.done(path, Status::Unreadable, Prior::None, e);
                }
            },
        };
        if self.options.operation == Operation::Forget {
            let item = Item::Forget { path, key, prior };
            return self.queue.push_back(Task::pass(item));
        }
        let (layout, algorithm) = prior
            .spec()
            .unwrap_or((self.options.layout, self.options.algorithm));
        let request = Request::new(layout, algorithm);
        let target = Target::Path(path.clone());
        let item = Item::File {
            path,
            key,
            before,
            prior,
        };
        self.queue.push_back(Task::hash(target, request, item));
    }

    /// Queues the records below `arg` that its walk did not meet.
    fn report_missing(&mut self, arg: &Target) {
        let (Some(m), Target::Path(path)) = (&mut self.manifest, arg) else {
            return;
        };
        let arg = manifest::key(path);
        for (key, record) in m.old.within(&arg) {
            if !m.seen.contains(key) && m.reported.insert(key.to_vec()) {
                let item = Item::Missing {
                    key: key.to_vec(),
                    record: *record,
                };
                self.queue.push_back(Task::pass(item));
            }
        }
    }
}

/// Receives the engine's results in order, classifies, acts on the store and reports.
struct Sink<'a> {
    options: &'a Options,
    on: &'a mut dyn FnMut(Event),
    summary: Summary,
    /// Manifest records to set (`Some`) or remove (`None`), applied at the end.
    edits: Vec<(Vec<u8>, Option<Record>)>,
    fatal: &'a RefCell<Option<AuditError>>,
}

impl Sink<'_> {
    fn on(&mut self, item: Item, result: Option<Result<FileDigest, InputError>>) {
        let verdict = match item {
            Item::Done(verdict) => verdict,
            Item::Skipped { path, reason } => {
                return (self.on)(Event::Skipped {
                    path: &path,
                    reason,
                });
            }
            Item::File {
                path,
                key,
                before,
                prior,
            } => {
                let hashed = result
                    .expect("files are hashed")
                    .map(|d| (*d.root.digest(), d.size));
                let after = fs::metadata(&path).map(|m| (m.len(), Mtime::of(&m)));
                let (status, current, error) = judge(
                    &prior,
                    before,
                    hashed,
                    after,
                    self.options.resolution,
                    prior
                        .spec()
                        .unwrap_or((self.options.layout, self.options.algorithm)),
                );
                let action = decide(status, &prior, self.options.operation);
                let mut verdict = Verdict {
                    path,
                    status,
                    prior,
                    state: Some(before),
                    current,
                    error,
                    action,
                    action_error: None,
                };
                verdict.action_error = self.act(&verdict, key);
                verdict
            }
            Item::Missing { key, record } => {
                let path = PathBuf::from(std::ffi::OsString::from_vec(key.clone()));
                if self.options.operation == Operation::Forget {
                    return self.forget(&path, Some(key));
                }
                let mut verdict = Verdict {
                    path,
                    status: Status::Missing,
                    prior: Prior::Record(record),
                    state: None,
                    current: None,
                    error: None,
                    action: decide(Status::Missing, &Prior::None, self.options.operation),
                    action_error: None,
                };
                verdict.action_error = self.act(&verdict, Some(key));
                verdict
            }
            Item::Forget { path, key, prior } => {
                // Only our records: cshatag's attributes are left alone.
                if matches!(prior, Prior::Record(_) | Prior::Unusable(_)) {
                    self.forget(&path, key);
                }
                return;
            }
        };
        self.summary.add(&verdict);
        (self.on)(Event::Verdict(&verdict));
    }

    fn forget(&mut self, path: &Path, key: Option<Vec<u8>>) {
        let error = self.store(path, key, None);
        self.summary.note(Action::Forgotten, error.is_some());
        let error = error.as_ref();
        (self.on)(Event::Forgotten { path, error });
    }

    /// Carries out `verdict.action` on the store; the error if the store refused.
    fn act(&mut self, verdict: &Verdict, key: Option<Vec<u8>>) -> Option<InputError> {
        let record = match verdict.action {
            Action::Kept => return None,
            Action::Recorded | Action::Updated | Action::Fixed | Action::Converted => {
                Some(verdict.current.expect("a record to write"))
            }
            Action::Removed | Action::Forgotten => None,
        };
        self.store(&verdict.path, key, record)
    }

    /// Sets (`Some`) or removes the record of `path` (`key` in a manifest), unless this is a
    /// dry run; the error if the store refused.
    fn store(
        &mut self,
        path: &Path,
        key: Option<Vec<u8>>,
        record: Option<Record>,
    ) -> Option<InputError> {
        if self.options.dry_run {
            return None;
        }
        if let Some(key) = key {
            self.edits.push((key, record));
            return None;
        }
        let result = match &record {
            Some(record) => xattr::write(path, record),
            None => xattr::remove(path).map(|_| ()),
        };
        let e = result.err()?;
        if xattr::is_unsupported(&e) {
            let path = path.to_path_buf();
            self.fatal
                .borrow_mut()
                .get_or_insert(AuditError::XattrUnsupported { path });
        }
        Some(InputError::Io(e))
    }
}

/// The class of a file hashed as `spec`, from its prior, its stamps before and after hashing,
/// and the hash result (digest and bytes hashed): the status, the file's current record when it held still, and the
/// error when it did not or could not be read.
fn judge(
    prior: &Prior,
    before: (u64, Mtime),
    hashed: Result<(Digest, u64), InputError>,
    after: io::Result<(u64, Mtime)>,
    resolution: Resolution,
    (layout, algorithm): (Layout, Algorithm),
) -> (Status, Option<Record>, Option<FileError>) {
    let changed = |e: FileError| (Status::Changed, None, Some(e));
    let unreadable = |e: FileError| (Status::Unreadable, None, Some(e));
    let (digest, hashed_size) = match hashed {
        Ok(d) => d,
        Err(InputError::Changed) => return changed(InputError::Changed.into()),
        Err(InputError::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
            return changed(FileError::Vanished);
        }
        Err(e) => return unreadable(e.into()),
    };
    let after = match after {
        Ok(after) => after,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return changed(FileError::Vanished),
        Err(e) => return unreadable(InputError::Io(e).into()),
    };
    if after != before || hashed_size != before.0 {
        return changed(InputError::Changed.into());
    }
    let current = Record {
        layout,
        algorithm,
        size: before.0,
        mtime: before.1,
        digest,
    };
    let (recorded_size, mtime, expected) = match prior {
        Prior::None => return (Status::New, Some(current), None),
        Prior::Unusable(why) => {
            return (
                Status::Unreadable,
                Some(current),
                Some(FileError::Record(why.clone())),
            );
        }
        Prior::Record(r) => (Some(r.size), r.mtime, r.digest),
        Prior::Cshatag { mtime, digest } => (None, *mtime, *digest),
    };
    let same_stamp =
        recorded_size.is_none_or(|s| s == current.size) && mtime.matches(current.mtime, resolution);
    let status = match (same_stamp, expected == current.digest) {
        (false, _) => Status::Modified,
        (true, true) => Status::Ok,
        (true, false) => Status::Corrupt,
    };
    (status, Some(current), None)
}

/// What to do with the record of a file in `status`.
fn decide(status: Status, prior: &Prior, operation: Operation) -> Action {
    let Operation::Audit { update, fix } = operation else {
        return Action::Forgotten;
    };
    match status {
        Status::New => Action::Recorded,
        Status::Ok if matches!(prior, Prior::Cshatag { .. }) => Action::Converted,
        Status::Modified if update => Action::Updated,
        Status::Corrupt if fix => Action::Fixed,
        // A damaged record: the file was hashed, so `fix` can replace it.
        Status::Unreadable if fix && matches!(prior, Prior::Unusable(_)) => Action::Fixed,
        Status::Missing if update => Action::Removed,
        _ => Action::Kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: (Layout, Algorithm) = (Layout::Plain, Algorithm::Blake3);

    fn t(sec: i64, nsec: u32) -> Mtime {
        Mtime::new(sec, nsec).unwrap()
    }

    fn hashed(data: &[u8]) -> Result<(Digest, u64), InputError> {
        Ok((Algorithm::Blake3.hash(data), data.len() as u64))
    }

    fn recorded(data: &[u8], mtime: Mtime) -> Prior {
        Prior::Record(Record {
            layout: Layout::Plain,
            algorithm: Algorithm::Blake3,
            size: data.len() as u64,
            mtime,
            digest: Algorithm::Blake3.hash(data),
        })
    }

    fn status(prior: &Prior, data: &[u8], mtime: Mtime) -> Status {
        let stamp = (data.len() as u64, mtime);
        judge(
            prior,
            stamp,
            hashed(data),
            Ok(stamp),
            Resolution::NANOSECOND,
            SPEC,
        )
        .0
    }

    #[test]
    fn same_stamp_and_digest_is_ok() {
        assert_eq!(
            status(&recorded(b"abc", t(5, 1)), b"abc", t(5, 1)),
            Status::Ok
        );
    }

    #[test]
    fn same_stamp_and_other_digest_is_corrupt() {
        assert_eq!(
            status(&recorded(b"abc", t(5, 1)), b"abd", t(5, 1)),
            Status::Corrupt
        );
    }

    #[test]
    fn another_mtime_or_size_is_modified_whatever_the_digest() {
        let prior = recorded(b"abc", t(5, 1));
        assert_eq!(status(&prior, b"abd", t(5, 2)), Status::Modified);
        assert_eq!(status(&prior, b"abc", t(6, 1)), Status::Modified);
        assert_eq!(status(&prior, b"abcd", t(5, 1)), Status::Modified);
    }

    #[test]
    fn no_record_is_new_and_an_unusable_record_is_unreadable_but_hashed() {
        assert_eq!(status(&Prior::None, b"abc", t(5, 1)), Status::New);
        let prior = Prior::Unusable("damaged".into());
        let stamp = (3, t(5, 1));
        let (status, current, error) = judge(
            &prior,
            stamp,
            hashed(b"abc"),
            Ok(stamp),
            Resolution::NANOSECOND,
            SPEC,
        );
        assert_eq!(status, Status::Unreadable);
        assert!(current.is_some(), "--fix can replace it");
        assert_eq!(error.unwrap().to_string(), "damaged");
    }

    #[test]
    fn a_cshatag_record_ignores_the_size_it_does_not_keep() {
        let prior = Prior::Cshatag {
            mtime: t(5, 1),
            digest: Algorithm::Blake3.hash(b"abc"),
        };
        assert_eq!(status(&prior, b"abc", t(5, 1)), Status::Ok);
        assert_eq!(status(&prior, b"abd", t(5, 1)), Status::Corrupt);
        assert_eq!(status(&prior, b"abd", t(5, 0)), Status::Modified);
    }

    #[test]
    fn a_stamp_that_moved_while_hashing_is_changed_never_ok_or_corrupt() {
        let prior = recorded(b"abc", t(5, 1));
        let before = (3, t(5, 1));
        let res = Resolution::NANOSECOND;
        for after in [(3, t(5, 2)), (4, t(5, 1))] {
            let (status, current, _) = judge(&prior, before, hashed(b"abd"), Ok(after), res, SPEC);
            assert_eq!((status, current), (Status::Changed, None));
        }
        let engine_saw_it = judge(
            &prior,
            before,
            Err(InputError::Changed),
            Ok(before),
            res,
            SPEC,
        );
        assert_eq!(engine_saw_it.0, Status::Changed);
        let gone = io::Error::from_raw_os_error(libc::ENOENT);
        let vanished = judge(&prior, before, hashed(b"abc"), Err(gone), res, SPEC);
        assert_eq!(vanished.0, Status::Changed);
    }

    #[test]
    fn a_read_error_is_unreadable_with_its_cause() {
        let e = InputError::Io(io::Error::from_raw_os_error(libc::EIO));
        let stamp = (3, t(5, 1));
        let res = Resolution::NANOSECOND;
        let (status, _, error) = judge(&Prior::None, stamp, Err(e), Ok(stamp), res, SPEC);
        assert_eq!(status, Status::Unreadable);
        assert_eq!(error.unwrap().to_string(), "Input/output error");
    }

    #[test]
    fn timestamps_match_within_the_resolution() {
        let us = "us".parse().unwrap();
        assert!(t(5, 1_000).matches(t(5, 1_999), us));
        assert!(!t(5, 1_000).matches(t(5, 2_000), us));
        let two_s: Resolution = "2s".parse().unwrap();
        assert!(t(10, 0).matches(t(11, 999_999_999), two_s));
        assert!(t(-1, 999_999_999).matches(t(0, 0), Resolution::from_nanos(2).unwrap()));
        assert!(!t(5, 1).matches(t(5, 2), Resolution::NANOSECOND));
    }

    #[test]
    fn resolutions_parse_and_print_as_written() {
        for (text, nanos) in [
            ("ns", 1),
            ("100ns", 100),
            ("us", 1_000),
            ("ms", 1_000_000),
            ("s", 1_000_000_000),
            ("2s", 2_000_000_000),
        ] {
            let r: Resolution = text.parse().unwrap();
            assert_eq!(r.nanos(), nanos);
            assert_eq!(r.to_string(), text);
        }
        assert_eq!("µs".parse::<Resolution>().unwrap().nanos(), 1_000);
        for bad in ["", "0s", "s2", "1h", "-1s", "1.5s", "99999999999999999999s"] {
            assert!(bad.parse::<Resolution>().is_err(), "{bad}");
        }
    }

    #[test]
    fn mtimes_read_and_print_as_cshatag_writes_them() {
        assert_eq!(t(1_700_000_000, 42).to_string(), "1700000000.000000042");
        assert_eq!("0000000001.000000042".parse(), Ok(t(1, 42)));
        assert_eq!("-1.500000000".parse(), Ok(t(-1, 500_000_000)));
        for bad in [
            "1",
            "1.5",
            "1.0000000000",
            "a.000000000",
            "1.-00000000",
            ".000000000",
        ] {
            assert!(bad.parse::<Mtime>().is_err(), "{bad}");
        }
    }

    #[test]
    fn records_are_overwritten_only_when_asked() {
        let audit = |update, fix| Operation::Audit { update, fix };
        let prior = recorded(b"x", t(1, 0));
        let cshatag = Prior::Cshatag {
            mtime: t(1, 0),
            digest: Algorithm::Sha256.hash(b"x"),
        };
        assert_eq!(
            decide(Status::New, &Prior::None, audit(false, false)),
            Action::Recorded
        );
        assert_eq!(decide(Status::Ok, &prior, audit(true, true)), Action::Kept);
        assert_eq!(
            decide(Status::Ok, &cshatag, audit(false, false)),
            Action::Converted
        );
        assert_eq!(
            decide(Status::Modified, &prior, audit(false, true)),
            Action::Kept
        );
        assert_eq!(
            decide(Status::Modified, &prior, audit(true, false)),
            Action::Updated
        );
        assert_eq!(
            decide(Status::Corrupt, &prior, audit(true, false)),
            Action::Kept
        );
        assert_eq!(
            decide(Status::Corrupt, &prior, audit(false, true)),
            Action::Fixed
        );
        assert_eq!(
            decide(Status::Corrupt, &cshatag, audit(true, false)),
            Action::Kept
        );
        assert_eq!(
            decide(Status::Changed, &prior, audit(true, true)),
            Action::Kept
        );
        assert_eq!(
            decide(Status::Unreadable, &prior, audit(true, true)),
            Action::Kept
        );
        let damaged = Prior::Unusable("x".into());
        assert_eq!(
            decide(Status::Unreadable, &damaged, audit(false, true)),
            Action::Fixed
        );
        assert_eq!(
            decide(Status::Missing, &prior, audit(false, true)),
            Action::Kept
        );
        assert_eq!(
            decide(Status::Missing, &prior, audit(true, false)),
            Action::Removed
        );
    }

    #[test]
    fn the_unsupported_error_points_to_the_manifest() {
        let e = AuditError::XattrUnsupported {
            path: "/mnt/x".into(),
        };
        assert_eq!(
            e.to_string(),
            "the file system does not support user extended attributes (Operation not supported); keep the records in a manifest instead: --manifest FILE"
        );
        assert_eq!(e.path(), Path::new("/mnt/x"));
    }
}
