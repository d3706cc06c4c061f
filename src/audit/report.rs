//! What an audit reports: one [`Event`] per file as it is decided, in walk order, and the
//! [`Summary`] of counts at the end. How these are printed is the caller's business.

use std::path::Path;
use std::time::Duration;

use crate::source::InputError;
use crate::walk::SkipReason;

use super::verdict::{Action, Status, Verdict};

/// One thing an audit reports, in walk order.
#[derive(Debug)]
pub enum Event<'a> {
    Verdict(&'a Verdict),
    /// The record of `path` was removed ([`Operation::Forget`](super::Operation::Forget); in a dry run, would be), or
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
    /// A regular file of `size` bytes left unread this time: a progress display that counted
    /// it stops waiting for it.
    Postponed {
        path: &'a Path,
        size: u64,
        why: Postponed,
    },
    /// The end of a batch: the decisions reported so far are recorded (a `kill -9` does not
    /// lose them). A caller that gathers its lines writes them now, and may stop the audit
    /// if that fails: the next batch is decided and recorded only if it goes on.
    Committed,
}

/// Why a file was left unread ([`Event::Postponed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Postponed {
    /// Verified within `--max-age`, and not edited since.
    NotDue,
    /// The `--time-budget` ran out: the next run starts with it.
    Deferred,
    /// An empty file, to which the layout of new records gives no value (BitTorrent v2 has
    /// no pieces root for it, BEP 52): there is nothing to record, and nothing to rot. It is
    /// not recorded, and stays so until it has content.
    NoValue,
}

/// The counts of a finished audit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Files per [`Status`], indexed as [`Status::ALL`].
    pub statuses: [u64; Status::ALL.len()],
    /// Files per [`Action`], indexed as [`Action::ALL`].
    pub actions: [u64; Action::ALL.len()],
    /// Actions the store refused.
    pub action_errors: u64,
    /// Bytes hashed.
    pub bytes: u64,
    /// Whether the store's file (a manifest) was rewritten.
    pub store_written: bool,
    /// Files verified within `--max-age`, not read.
    pub not_due: u64,
    /// Files not read because the time budget ran out: the next run starts with them.
    pub deferred: u64,
    /// Empty files not recorded, the layout of new records giving them no value
    /// ([`Postponed::NoValue`]).
    pub no_value: u64,
    /// Files read twice: read with the layout and algorithm of the records met before,
    /// their own record, read with their bytes, was of another (a tree recorded with several).
    pub reread: u64,
    /// From the start of the audit to its end.
    pub elapsed: Duration,
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

    /// Counts `action`, or, where the store `refused` the record's change, the error: a record
    /// that was not written is not counted as written. A record kept, or a file repaired, is
    /// counted either way: what the store refused then was only the note that it was checked.
    pub(super) fn note(&mut self, action: Action, refused: bool) {
        self.action_errors += u64::from(refused);
        if refused && !matches!(action, Action::Kept | Action::Repaired) {
            return;
        }
        let index = Action::ALL.iter().position(|a| *a == action);
        self.actions[index.expect("listed")] += 1;
    }

    pub(super) fn add(&mut self, verdict: &Verdict) {
        let status = Status::ALL.iter().position(|s| *s == verdict.status);
        self.statuses[status.expect("listed")] += 1;
        self.note(verdict.action, verdict.action_error.is_some());
        self.bytes += verdict.current.map_or(0, |r| r.stamp.len);
    }
}
