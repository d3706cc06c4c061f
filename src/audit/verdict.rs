//! The verdict: the rules that sort a file into a [`Status`] from what was recorded and what
//! the file is now, and what then happens to its record ([`Action`]). Pure functions of their
//! arguments, so every rule is tested here without a file.
//!
//! The rules, in order:
//! 1. the file could not be hashed, or its stamp (size and mtime) moved while it was read:
//!    `unreadable` or `changed`; its digest, if any, belongs to no version of the file;
//! 2. no record: `new`; a record that cannot be used: `unreadable` (but hashed, so `--fix` can
//!    replace it);
//! 3. another size or mtime (at the [`Resolution`]) than recorded: `modified`, whatever the
//!    digest: an edit; but the same size and another mtime while the store marks a repair of
//!    the file in progress ([`Entry::repairing`](super::store::Entry::repairing)): `corrupt`,
//!    the mtime is the repair's that was cut short before putting it back (a repair never
//!    changes the size);
//! 4. same stamp: `ok` if the digest is the recorded one, else `corrupt` (with the
//!    interrupted repair as its cause where one is marked).

use std::fmt;
use std::io;
use std::num::NonZeroU64;
use std::path::PathBuf;
use std::str::FromStr;

use crate::algorithm::Algorithm;
use crate::layout::{Layout, NoRoot, Root};
use crate::source::{InputError, Mtime, Stamp};

use super::Operation;
pub use super::store::Status;
use super::store::{Prior, Record};

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

    /// Whether the two times are the same at this resolution: they differ by less than it. A
    /// tolerance rather than truncation, since file systems round either way (FAT rounds up
    /// to even seconds, SMB truncates to 100 ns).
    pub fn matches(self, a: Mtime, b: Mtime) -> bool {
        (a.nanos() - b.nanos()).unsigned_abs() < u128::from(self.nanos())
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
    /// A file that checked out was recorded with the new algorithm (`--migrate`).
    Migrated,
    /// A corrupt file's damaged ranges were put back from a copy (`--repair-from`); the
    /// record stays.
    Repaired,
    /// A missing file's record was dropped (`update`), or that of a file emptied since,
    /// to which its layout gives no value (BitTorrent v2).
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
            Action::Migrated => "migrated",
            Action::Repaired => "repaired",
            Action::Removed => "removed",
            Action::Forgotten => "forgotten",
        }
    }

    /// Every action, in the order summaries list them.
    pub const ALL: [Action; 9] = [
        Action::Kept,
        Action::Recorded,
        Action::Updated,
        Action::Fixed,
        Action::Converted,
        Action::Migrated,
        Action::Repaired,
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
    /// The walk listed it, and then it was gone.
    #[error("vanished during the audit")]
    Vanished,
    /// Its record cannot be used.
    #[error("{0}")]
    Record(String),
    #[error("standard input cannot be audited")]
    Stdin,
    /// A directory named that holds nothing, while the store has records below it: most
    /// likely a file system that is not mounted, whose records `--update` would drop.
    #[error(
        "empty, but {} below it: is its file system mounted? (the records are kept; --forget drops them)",
        match .0 { 1 => "1 record lies".to_string(), n => format!("{n} records lie") }
    )]
    EmptyWithRecords(usize),
    /// Why a file is `corrupt` whose repair was cut short ([`super::repair`]).
    #[error("a repair was interrupted; run --repair again")]
    RepairInterrupted,
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
    pub state: Option<Stamp>,
    /// The file as it is now, in the record's layout and algorithm: what a refreshed record
    /// holds. `None` unless the file was hashed and held still.
    pub current: Option<Record>,
    /// Why it is `unreadable` or `changed`, or `corrupt` when there is more to say than the
    /// digest (an interrupted repair).
    pub error: Option<FileError>,
    /// Where a `corrupt` file differs from its record: byte ranges, end exclusive (stores
    /// that keep leaf digests only, see [`super::outboard`]).
    pub damaged: Option<Vec<std::ops::Range<u64>>>,
    /// Why a repair from a copy (`--repair-from`) was refused.
    pub repair_error: Option<super::repair::RepairError>,
    pub action: Action,
    /// The store refused the action (a file we may read but not tag, say).
    pub action_error: Option<InputError>,
}

impl Verdict {
    /// A verdict reached without reading the file: no current record, no error, the record
    /// kept.
    pub(super) fn unread(path: PathBuf, status: Status, prior: Prior) -> Verdict {
        Verdict {
            path,
            status,
            prior,
            state: None,
            current: None,
            error: None,
            damaged: None,
            repair_error: None,
            action: Action::Kept,
            action_error: None,
        }
    }
}

/// The class of a file hashed as `spec`, from its prior (and whether a repair of it is in
/// progress), its stamps before and after hashing, and the hash result (digest and bytes
/// hashed): the status, the file's current record when it held still, and the error when it
/// did not or could not be read, or was left half repaired. Without a stamp before (the file
/// was not examined before the read), the file is judged as the engine opened it: its stamp
/// then held until the last byte was read, or the read failed with `Changed`.
pub(super) fn judge(
    (prior, repairing): (&Prior, bool),
    before: Option<Stamp>,
    hashed: Result<(Root, u64), InputError>,
    after: io::Result<Stamp>,
    resolution: Resolution,
    (layout, algorithm): (Layout, Algorithm),
) -> (Status, Option<Record>, Option<FileError>) {
    let changed = |e: FileError| (Status::Changed, None, Some(e));
    let unreadable = |e: FileError| (Status::Unreadable, None, Some(e));
    let (digest, hashed_size) = match hashed {
        Ok(d) => d,
        // Only files that had content when planned are read where a layout gives an empty
        // file no value ([`Layout::check_size`]): this one was emptied meanwhile.
        Err(InputError::Changed | InputError::NoRoot(NoRoot::EmptyFile(_))) => {
            return changed(InputError::Changed.into());
        }
        // Gone, with its directory where that is a file now.
        Err(InputError::Io(e)) if is_gone(&e) => return changed(FileError::Vanished),
        Err(e) => return unreadable(e.into()),
    };
    let after = match after {
        Ok(after) => after,
        Err(e) if is_gone(&e) => return changed(FileError::Vanished),
        Err(e) => return unreadable(InputError::Io(e).into()),
    };
    let before = before.unwrap_or(after);
    if after != before || hashed_size != before.len {
        return changed(InputError::Changed.into());
    }
    let current = Record::new(layout, algorithm, before, digest);
    let (recorded_size, mtime, same_value) = match prior {
        Prior::None => return (Status::New, Some(current), None),
        Prior::Unusable(why) => {
            return (
                Status::Unreadable,
                Some(current),
                Some(FileError::Record(why.clone())),
            );
        }
        Prior::Record(r) => (Some(r.stamp.len), r.stamp.mtime, r.matches(&current.value)),
        Prior::Cshatag { mtime, digest } => (None, *mtime, current.value == *digest),
    };
    let same_size = recorded_size.is_none_or(|s| s == current.stamp.len);
    let same_stamp = same_size && resolution.matches(mtime, current.stamp.mtime);
    let status = match (same_stamp, same_value) {
        (false, _) if repairing && same_size => Status::Corrupt,
        (false, _) => Status::Modified,
        (true, true) => Status::Ok,
        (true, false) => Status::Corrupt,
    };
    let error = (repairing && status == Status::Corrupt).then_some(FileError::RepairInterrupted);
    (status, Some(current), error)
}

/// Whether `e` says that a file is no longer there: gone, or its directory replaced by a
/// file.
pub(super) fn is_gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// What to do with the record of a file in `status`.
pub(super) fn decide(status: Status, prior: &Prior, operation: Operation) -> Action {
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

    fn hashed(data: &[u8]) -> Result<(Root, u64), InputError> {
        Ok((Root::new(Algorithm::Blake3.hash(data)), data.len() as u64))
    }

    fn recorded(data: &[u8], mtime: Mtime) -> Prior {
        Prior::Record(Record {
            layout: Layout::Plain,
            algorithm: Algorithm::Blake3,
            stamp: Stamp::new(data.len() as u64, mtime),
            value: Root::new(Algorithm::Blake3.hash(data)),
        })
    }

    fn status(prior: &Prior, data: &[u8], mtime: Mtime) -> Status {
        let stamp = Stamp::new(data.len() as u64, mtime);
        judge(
            (prior, false),
            Some(stamp),
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
        let stamp = Stamp::new(3, t(5, 1));
        let (status, current, error) = judge(
            (&prior, false),
            Some(stamp),
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
    fn a_new_mtime_during_a_repair_in_progress_is_corrupt_with_the_cause_not_modified() {
        let prior = recorded(b"abc", t(5, 1));
        let judged = |data: &[u8], mtime| {
            let stamp = Stamp::new(data.len() as u64, mtime);
            let res = Resolution::NANOSECOND;
            let (status, _, error) = judge(
                (&prior, true),
                Some(stamp),
                hashed(data),
                Ok(stamp),
                res,
                SPEC,
            );
            (status, error.map(|e| e.to_string()))
        };
        let interrupted = Some("a repair was interrupted; run --repair again".to_string());
        assert_eq!(
            judged(b"abd", t(6, 0)),
            (Status::Corrupt, interrupted.clone())
        );
        // Every leaf written, the mtime not yet put back: still the repair's to finish.
        assert_eq!(
            judged(b"abc", t(6, 0)),
            (Status::Corrupt, interrupted.clone())
        );
        assert_eq!(judged(b"abd", t(5, 1)), (Status::Corrupt, interrupted));
        assert_eq!(judged(b"abc", t(5, 1)), (Status::Ok, None));
        // A repair never changes the size: that is an edit.
        assert_eq!(judged(b"abcd", t(6, 0)), (Status::Modified, None));
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
        let before = Stamp::new(3, t(5, 1));
        let res = Resolution::NANOSECOND;
        for after in [Stamp::new(3, t(5, 2)), Stamp::new(4, t(5, 1))] {
            let (status, current, _) = judge(
                (&prior, false),
                Some(before),
                hashed(b"abd"),
                Ok(after),
                res,
                SPEC,
            );
            assert_eq!((status, current), (Status::Changed, None));
        }
        let engine_saw_it = judge(
            (&prior, false),
            Some(before),
            Err(InputError::Changed),
            Ok(before),
            res,
            SPEC,
        );
        assert_eq!(engine_saw_it.0, Status::Changed);
        // Planned with content, read empty where the layout gives an empty file no value.
        let emptied = InputError::NoRoot(NoRoot::EmptyFile("btv2"));
        let emptied = judge(
            (&prior, false),
            Some(before),
            Err(emptied),
            Ok(before),
            res,
            SPEC,
        );
        assert_eq!(emptied.0, Status::Changed);
        let gone = io::Error::from_raw_os_error(libc::ENOENT);
        let vanished = judge(
            (&prior, false),
            Some(before),
            hashed(b"abc"),
            Err(gone),
            res,
            SPEC,
        );
        assert_eq!(vanished.0, Status::Changed);
    }

    #[test]
    fn a_file_not_examined_before_the_read_is_judged_as_the_engine_opened_it() {
        let prior = recorded(b"abc", t(5, 1));
        let res = Resolution::NANOSECOND;
        let opened = |data: &[u8], mtime| {
            let stamp = Stamp::new(data.len() as u64, mtime);
            judge((&prior, false), None, hashed(data), Ok(stamp), res, SPEC).0
        };
        assert_eq!(opened(b"abc", t(5, 1)), Status::Ok);
        assert_eq!(opened(b"abd", t(5, 1)), Status::Corrupt);
        assert_eq!(opened(b"abd", t(6, 1)), Status::Modified);
        // What the engine saw move while it read is still `changed`; a file gone before it
        // was opened, with its directory replaced by a file, vanished.
        let moved = judge(
            (&prior, false),
            None,
            Err(InputError::Changed),
            Ok(Stamp::new(3, t(5, 1))),
            res,
            SPEC,
        );
        assert_eq!(moved.0, Status::Changed);
        for errno in [libc::ENOENT, libc::ENOTDIR] {
            let gone = InputError::Io(io::Error::from_raw_os_error(errno));
            let (status, _, error) = judge(
                (&prior, false),
                None,
                Err(gone),
                Ok(Stamp::new(3, t(5, 1))),
                res,
                SPEC,
            );
            assert_eq!(
                (status, error.map(|e| e.to_string())),
                (Status::Changed, Some(FileError::Vanished.to_string()))
            );
        }
    }

    #[test]
    fn a_read_error_is_unreadable_with_its_cause() {
        let e = InputError::Io(io::Error::from_raw_os_error(libc::EIO));
        let stamp = Stamp::new(3, t(5, 1));
        let res = Resolution::NANOSECOND;
        let (status, _, error) = judge(
            (&Prior::None, false),
            Some(stamp),
            Err(e),
            Ok(stamp),
            res,
            SPEC,
        );
        assert_eq!(status, Status::Unreadable);
        assert_eq!(error.unwrap().to_string(), "Input/output error");
    }

    #[test]
    fn timestamps_match_within_the_resolution() {
        let us = "us".parse().unwrap();
        let us: Resolution = us;
        assert!(us.matches(t(5, 1_000), t(5, 1_999)));
        assert!(!us.matches(t(5, 1_000), t(5, 2_000)));
        let two_s: Resolution = "2s".parse().unwrap();
        assert!(two_s.matches(t(10, 0), t(11, 999_999_999)));
        let two_ns = Resolution::from_nanos(2).unwrap();
        assert!(two_ns.matches(t(-1, 999_999_999), t(0, 0)));
        assert!(!Resolution::NANOSECOND.matches(t(5, 1), t(5, 2)));
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
}
