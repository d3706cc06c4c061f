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
//! # The parts
//! - [`store`]: where records live, each store behind the one trait [`RecordStore`]
//!   ([`xattr`], [`manifest`]);
//! - [`verdict`]: the rules that classify a file and decide what happens to its record;
//! - `run`: the walk, the lookups, the hashing and the order of the verdicts;
//! - [`report`]: what the caller is told ([`Event`], [`Summary`]).
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

pub mod report;
mod run;
pub mod store;
pub mod transfer;
pub mod verdict;

use std::io;
use std::path::{Path, PathBuf};

use crate::algorithm::Algorithm;
use crate::engine::Engine;
use crate::layout::Layout;
use crate::source::{InputError, Target};
use crate::walk::Recursion;

pub use crate::source::{Mtime, Stamp};
pub use report::{Event, Summary};
pub use store::database::{self, DatabaseError};
pub use store::manifest::{self, ManifestError};
pub use store::{Change, Entry, Prior, Record, RecordStore, Store, StoreError, xattr};
pub use verdict::{Action, FileError, Resolution, Status, Verdict};

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
            | AuditError::Database { path, .. } => Some(path),
            AuditError::Unsupported(_) => None,
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
    let store = options.store.open(!options.dry_run)?;
    run::run(engine, targets, options, store, on)
}

#[cfg(test)]
mod tests {
    use super::*;

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
