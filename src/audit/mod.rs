//! Integrity audits (`--audit`): remember each file's digest, size and modification time,
//! and later tell silent corruption (bit rot) from a legitimate edit.
//!
//! An audit walks the paths it is given and sorts every regular file into one [`Status`]:
//!
//! | status | when | the record afterwards |
//! |---|---|---|
//! | `ok` | same size and mtime as recorded, same digest | kept (a cshatag record is converted) |
//! | `corrupt` | same size and mtime, **different digest**: the alarm | kept, unless [`Operation::Audit`]`{ fix }` |
//! | `repaired` | was `corrupt`, and its damaged ranges were put back from a copy ([`Options::repair_from`]): it checks out now | kept |
//! | `modified` | size or mtime differs from the record | refreshed with `update`, else kept |
//! | `new` | no record yet | recorded |
//! | `missing` | a record but no file (manifest and database stores) | dropped with `update`, else kept |
//! | `changed` | size or mtime moved while the file was read, or it vanished | kept |
//! | `unreadable` | an I/O or permission error, a damaged record | kept |
//!
//! BitTorrent v2 gives an empty file no value (BEP 52): with that layout for new records, an
//! empty file gets no verdict and no record (it has nothing to rot), and is counted in
//! [`Summary::no_value`]; one recorded with content and emptied since is `modified`, and
//! `update` drops its record.
//!
//! The digest is recomputed with the layout and algorithm the record names, so records made
//! with different `-a`/`-t` choices coexist; new records get [`Options::layout`] and
//! [`Options::algorithm`], plain BLAKE3 by default: it is as fast as the page cache hands a
//! file over (measured on the 2-core EPYC of `docs/performance.md`, AVX-512, 2026-11-29:
//! `mtsum -p 1 -t plain -a blake3` of a cached 2 GiB file, 5 runs, 0.28–0.41 s of user time,
//! median 0.38 s or 5.7 GB/s, against 0.41–0.59 s of system time copying the bytes out of the
//! page cache), its 4 MiB subtrees spread a large file over every core, it is a 256-bit
//! cryptographic hash that no bit rot can fool, and `b3sum` verifies it without mtsum.
//!
//! Timestamps are compared at a [`Resolution`], nanoseconds by default: file systems such as
//! SMB keep 100 ns, FAT 2 s, and a copy to one of them must not make every file `modified`.
//!
//! Records live in a [`Store`]: one extended attribute per file ([`xattr`], the default), one
//! manifest file ([`manifest`]), or one SQLite database ([`database`]) for file servers: it
//! commits as the audit goes, remembers when each file was last verified (`--max-age`,
//! `--time-budget`), and keeps records of any number of trees.
//!
//! Each file is read once, through the engine as `mtsum -r` reads ([`read`]): small files side
//! by side, a large one on every core; every digest the audit needs of it comes from that
//! read (the others are the engine's side outputs, as is a record in an extended attribute,
//! read from the file opened); verdicts come back in walk order (with a
//! time budget, least recently verified first). The engine's stamp (size and mtime) of the file
//! it opened held until the last byte was read; where the audit had to look at the file
//! before reading it (`--max-age`, a record that calls for its size), that stamp is compared
//! with the one taken then. If they differ, or the read saw the file change, the file is
//! `changed`: its digest belongs to no version of the file and proves nothing.
//!
//! # The parts
//! - [`store`]: where records live, each store behind the one trait [`RecordStore`]
//!   ([`xattr`], [`manifest`], [`database`]), and [`transfer`] between stores and formats;
//! - [`verdict`]: the rules that classify a file and decide what happens to its record;
//! - `run`: the walk, the lookups, which files are due, their order, the verdicts in order;
//! - [`read`]: which files go to the engine, in which order (physical on a spinning disk), and
//!   the decisions as the reads end, reported in order;
//! - [`report`]: what the caller is told ([`Event`], [`Summary`]).
//!
//! ```
//! use mtsum::audit::{self, Event, Options, Status, Store};
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
//! audit::audit(&targets, &options, &mut on)?;
//! audit::audit(&targets, &options, &mut on)?;
//! assert_eq!(seen, [Status::New, Status::Ok]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod outboard;
pub mod plan;
pub mod read;
pub mod repair;
pub mod report;
mod run;
pub mod store;
pub mod transfer;
pub mod verdict;

use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::algorithm::Algorithm;
use crate::layout::Layout;
use crate::source::{InputError, Target};
use crate::walk::Recursion;

pub use crate::source::{Mtime, Stamp};
pub use read::Io;
pub use report::{Event, Postponed, Summary};
#[cfg(feature = "database")]
pub use store::database;
pub use store::manifest::{self, ManifestError};
pub use store::{
    Change, DatabaseError, Entry, Prior, Record, RecordStore, Store, StoreError, xattr,
};
pub use verdict::{Action, FileError, Resolution, Status, Verdict};

/// Decisions reported at most in one batch ([`Event::Committed`]): the store commits them in
/// one transaction, and their lines can be written at once, instead of a commit and a write
/// per file.
pub const BATCH_FILES: usize = 512;

/// The longest a decision waits for its batch: what a `kill -9` may lose of an audit's
/// progress (never a decision that was reported).
pub const BATCH_TIME: Duration = Duration::from_secs(1);

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
    /// Audit only files whose record was not verified within this time (the database, and
    /// extended attributes, which then carry the time: not a manifest); the others are
    /// counted as not due.
    pub max_age: Option<Duration>,
    /// Stop handing out files once this much time has passed, the least recently verified
    /// files first, so that the next audit goes on where this one stopped.
    pub time_budget: Option<Duration>,
    /// Record files that check out with [`Options::layout`] and [`Options::algorithm`] when
    /// their record has another, computed from the same read that verified them.
    pub migrate: bool,
    /// How files are read.
    pub io: Io,
    /// Repair corrupt files whose damage the database locates from the copies in this
    /// directory, which mirrors each argument (`--repair-from`).
    pub repair_from: Option<PathBuf>,
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
            max_age: None,
            time_budget: None,
            migrate: false,
            io: Io::default(),
            repair_from: None,
        }
    }
}

/// Parses a duration for `--max-age` and `--time-budget`: a count and a unit, `s`, `m`, `h`
/// or `d` (`90s`, `45m`, `12h`, `30d`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("'{s}' is not a duration such as 90s, 45m, 12h or 30d");
    let split = s.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (count, unit) = s.split_at(split);
    let count: u64 = count.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "s" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    count
        .checked_mul(seconds)
        .map(Duration::from_secs)
        .ok_or_else(bad)
}

/// Parses a rate for `--limit-rate`: bytes per second, with the binary suffixes of `-l`
/// (`100M` is 100 MiB/s).
pub fn parse_rate(s: &str) -> Result<u64, String> {
    s.parse::<crate::layout::LeafSize>()
        .map(|r| r.get())
        .map_err(|_| {
            format!(
                "'{s}' is not a rate such as 20M or 100M (bytes per second; K, M, G: binary units)"
            )
        })
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
    /// The manifest could not be replaced at the end, found before the audit starts (`why`
    /// ends the message: its directory does not exist, say).
    #[error("cannot write the manifest: {why}")]
    ManifestUnwritable { path: PathBuf, why: String },
    /// The manifest could not be written; the old one is intact.
    #[error("cannot write the manifest (the previous one is intact): {error}")]
    ManifestWrite { path: PathBuf, error: InputError },
    /// The database cannot be used, or failed; what was committed stands.
    #[error("{error}")]
    Database { path: PathBuf, error: DatabaseError },
    /// The store cannot do what was asked of it.
    #[error("{0}")]
    Unsupported(String),
}

impl AuditError {
    /// The file the error is about, if it is about one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            AuditError::XattrUnsupported { path }
            | AuditError::ManifestRead { path, .. }
            | AuditError::ManifestWrite { path, .. }
            | AuditError::ManifestUnwritable { path, .. }
            | AuditError::Database { path, .. } => Some(path),
            AuditError::Unsupported(_) => None,
        }
    }
}

/// What the caller of [`audit`] answers to each event: `()` to go on whatever happens, or a
/// [`ControlFlow`] that can stop the audit early (its output is gone: `mtsum --audit >/dev/full`).
pub trait Flow {
    fn flow(self) -> ControlFlow<()>;
}

impl Flow for () {
    fn flow(self) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

impl Flow for ControlFlow<()> {
    fn flow(self) -> ControlFlow<()> {
        self
    }
}

/// Audits the files at and (with recursion) below `targets` as `options` say, calling `on`
/// with each verdict in walk order, then each argument's `missing` records. Verdicts come in
/// batches, each once the store has recorded it, followed by [`Event::Committed`]. Per-file
/// trouble is a verdict and the audit goes on; an [`AuditError`] stops it (verdicts already
/// reported stand, a manifest is left as it was).
///
/// When `on` answers [`ControlFlow::Break`], no further file is handed to the readers and
/// none is decided or recorded (files already being read are read to their end, and
/// dropped); what was recorded until then stays, a manifest included, and the summary counts
/// only that. (Files are decided, and recorded, as soon as they are read; those read ahead of
/// their turn in walk order, and the rest of the batch `on` stopped in, stay recorded though
/// `on` does not hear of them.)
pub fn audit<F: Flow>(
    targets: &[Target],
    options: &Options,
    on: &mut dyn FnMut(Event) -> F,
) -> Result<Summary, AuditError> {
    let timed = options.max_age.is_some() || options.time_budget.is_some();
    if timed && matches!(options.store, Store::Manifest(_)) {
        return Err(AuditError::Unsupported(
            "--max-age and --time-budget need verification times, which a manifest does not keep: use --db FILE or extended attributes".into(),
        ));
    }
    let store = options.store.open(!options.dry_run, timed)?;
    run::run(targets, options, store, &mut |event| on(event).flow())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_rates_read_as_the_options_document_them() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("12h"), Ok(Duration::from_secs(12 * 3600)));
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bad in ["", "h", "12", "1.5h", "-1d", "3w", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_rate("20M"), Ok(20 << 20));
        assert_eq!(parse_rate("512"), Ok(512));
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("fast").is_err());
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
        assert_eq!(e.path(), Some(Path::new("/mnt/x")));
    }
}
