//! Repair (`--repair FILE --from COPY`, `--repair-from DIR`): put back the damaged byte ranges
//! of a corrupt file from a copy, leaf by leaf, checking every leaf of the copy against the
//! recorded leaf digest before a byte is written.
//!
//! Only what is known to be damaged is touched: the leaves whose digests differ from the
//! outboard ([`super::outboard`]). Nothing at all is written unless every leaf to fetch from
//! the copy checks out and the copy has the file's size; then the store marks the repair as
//! in progress (durably), the leaves are written in place, flushed to the disk, the recorded
//! mtime is put back (the content is the recorded one again), the whole file is verified
//! against its record, and the record, checked `ok`, ends the mark.
//!
//! A repair cut short between the first write and the mtime put back (killed, a power cut, an
//! I/O error) leaves a half-repaired file with a new mtime. The mark says why
//! ([`RecordStore::begin_repair`]): audits call the file `corrupt`, not `modified`, and keep
//! its record, and the next repair takes up the work, comparing the leaves with the recorded
//! ones whatever the mtime, and putting the mtime back even when every leaf is good already.

use std::fs::{File, OpenOptions};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use crate::source::{InputError, Mtime, Stamp};

use super::AuditError;
use super::outboard::{self, Outboard};
use super::read::{self, Io};
use super::store::{Change, Prior, Record, RecordStore, Status, Store, StoreError};
use crate::engine::{Request, Side};
use crate::reference;

/// Why a file was not repaired. The message is the part after `mtsum: FILE: `.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    #[error("no record of this file in the database")]
    NoRecord,
    #[error("the database has no leaf digests of this file (audit it once with --db first)")]
    NoOutboard,
    #[error(
        "the file was modified since it was recorded (size or mtime differ): not bit rot, nothing to repair"
    )]
    Modified,
    #[error(
        "the leaf digests find no damage but the digest differs: the record and its leaf digests disagree"
    )]
    Undetected,
    /// The copy could not be opened or read: the message names it, not the file.
    #[error("cannot read the copy {copy}: {error}")]
    CopyUnreadable { copy: PathBuf, error: InputError },
    #[error("the copy {copy} has {got} bytes, the file {want}: refused, nothing written")]
    CopySize { copy: PathBuf, want: u64, got: u64 },
    #[error("the copy {copy} is damaged too (bytes {}-{}): refused, nothing written", .range.start, .range.end)]
    CopyDamaged { copy: PathBuf, range: Range<u64> },
    #[error("still corrupt after the repair")]
    StillCorrupt,
    #[error("{0}")]
    Input(#[from] InputError),
    #[error("{0}")]
    Store(#[from] AuditError),
}

impl From<std::io::Error> for RepairError {
    fn from(e: std::io::Error) -> Self {
        RepairError::Input(InputError::Io(e))
    }
}

impl From<StoreError> for RepairError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::File(e) => RepairError::Input(e),
            StoreError::Fatal(e) => RepairError::Store(e),
        }
    }
}

/// A damaged file as its record and leaf digests show it.
#[derive(Clone, Copy, Debug)]
pub struct Damage<'a> {
    pub record: &'a Record,
    /// The recorded leaf digests; `None` for a file of one leaf, which keeps none
    /// ([`outboard::kept`]): the record checks its one leaf.
    pub recorded: Option<&'a Outboard>,
    /// The byte ranges (end exclusive) whose leaves differ from the recorded ones: none when
    /// only the mtime of an interrupted repair is left to put back.
    pub ranges: &'a [Range<u64>],
}

/// What a repair did (or, in a dry run, would do).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repaired {
    /// The byte ranges taken from the copy (end exclusive); none when the file was fine, or
    /// when only an interrupted repair's mtime was left to put back.
    pub ranges: Vec<Range<u64>>,
    /// Whether the file needed a repair: damaged ranges, or an interrupted repair to finish.
    pub needed: bool,
    /// Whether anything was written.
    pub written: bool,
}

/// Repairs `file` from `copy` with the record and leaf digests that `store` (a database)
/// keeps for it, or finishes a repair of it that was cut short.
pub fn repair(
    store: &Store,
    file: &Path,
    copy: &Path,
    dry_run: bool,
    io: &Io,
) -> Result<Repaired, RepairError> {
    if store.path().is_some_and(|p| !p.exists()) {
        // No database yet: nothing recorded, and none is created.
        return Err(RepairError::NoRecord);
    }
    let mut store = store.open(!dry_run, false)?;
    let entry = store.lookup(file)?;
    let Prior::Record(record) = entry.prior else {
        return Err(RepairError::NoRecord);
    };
    let recorded = store.outboard(file)?.filter(|o| o.fits(record.stamp.len));
    if recorded.is_none() && outboard::kept(record.stamp.len) {
        return Err(RepairError::NoOutboard);
    }
    let stamp = Stamp::of(&std::fs::metadata(file)?);
    // An interrupted repair leaves its mtime, never another size.
    let ours = entry.repairing && stamp.len == record.stamp.len;
    if stamp != record.stamp && !ours {
        return Err(RepairError::Modified);
    }
    let request = Request {
        side: Side {
            digests: Vec::new(),
            leaves: recorded.as_ref().map(Outboard::side),
            xattr: None,
        },
        ..Request::new(record.layout, record.algorithm)
    };
    let now = read::hash_file(file, &request, io)?;
    let repaired = if record.matches(&now.root) && stamp == record.stamp {
        Repaired {
            ranges: Vec::new(),
            needed: false,
            written: false,
        }
    } else {
        let len = record.stamp.len;
        let ranges = match &recorded {
            Some(recorded) => {
                let current = now.side.leaves.ok_or(InputError::Changed)?;
                recorded.damaged(&current, len)
            }
            // One leaf, and the record says it differs (or a repair of it was cut short).
            None => (len > 0).then_some(0..len).into_iter().collect(),
        };
        let damage = Damage {
            record: &record,
            recorded: recorded.as_ref(),
            ranges: &ranges,
        };
        from_copy(&mut *store, file, damage, copy, dry_run, io)?
    };
    // A file that matches its record again ends the mark, also where the repair that set it
    // got as far as verifying.
    if repaired.written || entry.repairing {
        let checked = Change::Checked {
            status: Status::Ok,
            outboard: None,
        };
        store.set(file, checked)?;
        store.finish()?;
    }
    Ok(repaired)
}

/// Puts back the damaged ranges of `file` from `copy`: checks every leaf of the copy first,
/// writes nothing if one is bad, else marks the repair in `store` ([`RecordStore::begin_repair`]),
/// writes the leaves, flushes, restores the mtime and verifies the whole file. The caller
/// then records the file checked `ok`, which ends the mark; on an error the mark stays (the
/// file may be half repaired).
pub fn from_copy(
    store: &mut dyn RecordStore,
    file: &Path,
    damage: Damage,
    copy: &Path,
    dry_run: bool,
    io: &Io,
) -> Result<Repaired, RepairError> {
    let Damage {
        record,
        recorded,
        ranges,
    } = damage;
    // Nothing to write and the mtime is the recorded one: nothing explains the digest.
    if ranges.is_empty() && Stamp::of(&std::fs::metadata(file)?) == record.stamp {
        return Err(RepairError::Undetected);
    }
    let len = record.stamp.len;
    let source = File::open(copy).map_err(copy_unreadable(copy))?;
    let got = source.metadata().map_err(copy_unreadable(copy))?.len();
    if got != len {
        return Err(RepairError::CopySize {
            copy: copy.to_path_buf(),
            want: len,
            got,
        });
    }
    let leaves = match recorded {
        Some(recorded) => recorded.leaves_of(ranges),
        None => (0..ranges.len().min(1)).collect(),
    };
    // Every leaf checked before anything is written.
    for &i in &leaves {
        good_leaf(&source, damage, i, copy)?;
    }
    if dry_run {
        return Ok(Repaired {
            ranges: ranges.to_vec(),
            needed: true,
            written: false,
        });
    }
    let target = OpenOptions::new().write(true).open(file)?;
    // Durably, before the first byte: from here on the file may be half repaired.
    store.begin_repair(file, record.stamp)?;
    for &i in &leaves {
        // Read and checked again: the copy may have changed since.
        let (start, bytes) = good_leaf(&source, damage, i, copy)?;
        target.write_all_at(&bytes, start)?;
    }
    target.sync_all()?;
    target.set_modified(system_time(record.stamp.mtime))?;
    target.sync_all()?;
    drop(target);
    let request = Request::new(record.layout, record.algorithm);
    let after = read::hash_file(file, &request, io)?;
    if !record.matches(&after.root) {
        return Err(RepairError::StillCorrupt);
    }
    Ok(Repaired {
        ranges: ranges.to_vec(),
        needed: true,
        written: true,
    })
}

/// An I/O error of the copy `copy`, as its own error: printed after the file's name, a bare
/// cause would blame the file.
fn copy_unreadable(copy: &Path) -> impl FnOnce(std::io::Error) -> RepairError + '_ {
    move |error| RepairError::CopyUnreadable {
        copy: copy.to_path_buf(),
        error: InputError::Io(error),
    }
}

/// Where leaf `i` of `copy` starts, and its bytes, if they have the recorded digest: the
/// leaf's in the outboard, or for a file of one leaf the record's own (a leaf of at most
/// [`outboard::MIN_LEAF`] bytes in memory, hashed by the definition of its layout).
fn good_leaf(
    copy: &File,
    damage: Damage,
    i: usize,
    name: &Path,
) -> Result<(u64, Vec<u8>), RepairError> {
    let (record, len) = (damage.record, damage.record.stamp.len);
    let range = match damage.recorded {
        Some(recorded) => recorded.range(i, len),
        None => 0..len,
    };
    let mut bytes = vec![0; (range.end - range.start) as usize];
    copy.read_exact_at(&mut bytes, range.start)
        .map_err(copy_unreadable(name))?;
    let good = match damage.recorded {
        Some(recorded) => recorded.leaf_digest(i, &bytes) == recorded.leaves[i],
        None => reference::checksum(record.layout, record.algorithm, &bytes)
            .is_ok_and(|root| record.matches(&root)),
    };
    if !good {
        return Err(RepairError::CopyDamaged {
            copy: name.to_path_buf(),
            range,
        });
    }
    Ok((range.start, bytes))
}

fn system_time(t: Mtime) -> std::time::SystemTime {
    let nanos = Duration::from_nanos(u64::from(t.nsec));
    if t.sec >= 0 {
        UNIX_EPOCH + Duration::from_secs(t.sec as u64) + nanos
    } else {
        UNIX_EPOCH - Duration::from_secs(t.sec.unsigned_abs()) + nanos
    }
}

/// Where the copy of `path` lies when the tree `arg` is mirrored at `dir` (`--repair-from`).
pub fn copy_path(dir: &Path, arg: &Path, path: &Path) -> Option<PathBuf> {
    if path == arg {
        return path.file_name().map(|name| dir.join(name));
    }
    path.strip_prefix(arg).ok().map(|rest| dir.join(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_found_by_the_path_below_the_argument() {
        let dir = Path::new("/backup/data");
        assert_eq!(
            copy_path(dir, Path::new("/srv/data"), Path::new("/srv/data/a/b")),
            Some(PathBuf::from("/backup/data/a/b"))
        );
        assert_eq!(
            copy_path(
                dir,
                Path::new("/srv/data/x.img"),
                Path::new("/srv/data/x.img")
            ),
            Some(PathBuf::from("/backup/data/x.img"))
        );
        assert_eq!(
            copy_path(dir, Path::new("/srv/a"), Path::new("/srv/b/c")),
            None
        );
    }

    #[test]
    fn mtimes_before_and_after_the_epoch_become_system_times() {
        let t = system_time(Mtime::new(-2, 500_000_000).unwrap());
        assert_eq!(
            UNIX_EPOCH.duration_since(t).unwrap(),
            Duration::from_millis(1500)
        );
        let t = system_time(Mtime::new(3, 7).unwrap());
        assert_eq!(t.duration_since(UNIX_EPOCH).unwrap(), Duration::new(3, 7));
    }
}
