//! The run: walks the arguments, looks up each file's record, decides which files are due,
//! hands them to the readers ([`super::read`]), and turns each result into a verdict as soon
//! as it comes, writing its record at once; the verdicts are reported in walk order (with a
//! time budget: least recently verified first).
//!
//! The stamp (size and mtime) of a file is the one the engine takes when it opens it, which
//! held until its digest was known; where the planner must know the file before it is read
//! ([`examine_first`], a record that calls for the size), one taken then too, and [`judge`]
//! compares them. Records below an argument that its walk did not
//! meet are reported `missing` once the argument is done.
//!
//! A record kept in an attribute of its file is read, where nothing needs it before the read,
//! by the reader that opens the file ([`Item::Unlooked`]): the file is read with the layout
//! and algorithm of the last record met, and again with its own where its record differs.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fs;
use std::io;
use std::ops::{ControlFlow, Range};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use crate::algorithm::Algorithm;
use crate::engine::{FileDigest, Request, Side};
use crate::layout::{Layout, NoRoot};
use crate::source::{InputError, Stamp, Target, XattrValue};
use crate::walk::{SkipReason, Walk, Walked, walk};

use super::outboard::{self, Outboard};
use super::plan;
use super::read::{self, Work};
use super::repair;
use super::report::{Event, Postponed, Summary};
use super::store::{Change, Prior, Record, RecordStore, StoreError};
use super::verdict::{Action, FileError, Status, Verdict, decide, judge};
use super::{AuditError, BATCH_FILES, BATCH_TIME, Operation, Options};

/// State shared by the planner and the sink, which run in turn on one thread.
struct Shared {
    store: Box<dyn RecordStore>,
    /// The first error that stops the audit.
    fatal: Option<AuditError>,
    /// The caller stopped the audit.
    stopped: bool,
    /// The layout and algorithm of the last record the sink met: what the planner asks of
    /// the readers for a file whose record is read with its bytes ([`Item::Unlooked`]), as
    /// the files of a tree are mostly recorded alike.
    predicted: Option<(Layout, Algorithm)>,
}

impl Shared {
    /// Whether no more files are to be handed out.
    fn stops(&self) -> bool {
        self.fatal.is_some() || self.stopped
    }
}

/// Audits `targets` with `store` (see [`super::audit`]).
pub(super) fn run(
    targets: &[Target],
    options: &Options,
    store: Box<dyn RecordStore>,
    on: &mut dyn FnMut(Event) -> ControlFlow<()>,
) -> Result<Summary, AuditError> {
    let started = Instant::now();
    let shared = RefCell::new(Shared {
        store,
        fatal: None,
        stopped: false,
        predicted: None,
    });
    let paths: Vec<&Path> = targets.iter().filter_map(Target::path).collect();
    let mut planner = Planner {
        options,
        args: targets.iter(),
        current: None,
        queue: VecDeque::new(),
        shared: &shared,
        unwalked: Vec::new(),
        walked_any: false,
        now: SystemTime::now(),
        deadline: options.time_budget.map(|budget| started + budget),
        ordered: None,
        spinning: false,
        alone: super::store::alone(&paths).into_iter(),
        walking_alone: false,
        seeded: false,
        examine_first: true,
    };
    planner.spinning = spinning(targets, options.recursion);
    planner.examine_first = examine_first(options, planner.spinning);
    let mut sink = Sink {
        options,
        on,
        summary: Summary::default(),
        shared: &shared,
        held: Vec::new(),
        released: Instant::now(),
    };
    let mut io = options.io.clone();
    // One reader when the files lie on a spinning disk (seeks between readers would cost
    // more than they gain), else one per core.
    if planner.spinning {
        io.readers = io.readers.or(Some(std::num::NonZeroUsize::MIN));
    }
    // With a time budget, a file or so per reader at a time, so that none is handed out
    // long after the budget ran out.
    let ahead = options.time_budget.map(|_| io.engine().threads());
    read::in_order(&io, &mut planner, &mut sink, ahead);
    sink.release();
    let mut summary = sink.summary;
    let mut shared = shared.into_inner();
    if let Some(e) = shared.fatal {
        return Err(e);
    }
    summary.store_written = shared.store.finish()?;
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// Whether the reads must spare a spinning disk: an argument lies on a rotational one, and
/// its files are not in memory. A disk that only says it spins (a virtual one) while the
/// files are in the page cache costs nothing to read in parallel: a sample of the first files
/// of the walk decides ([`plan::resident_share`]), unless [`plan::ROTATIONAL_VAR`] says.
fn spinning(targets: &[Target], recursion: crate::walk::Recursion) -> bool {
    use std::os::unix::fs::MetadataExt;
    let claims = targets.iter().any(|t| {
        t.path()
            .is_some_and(|p| fs::metadata(p).is_ok_and(|m| plan::is_rotational(m.dev())))
    });
    if !claims || plan::rotational_forced() {
        return claims;
    }
    let sample: Vec<PathBuf> = walk(targets.iter().cloned(), recursion)
        .filter_map(|w| match w {
            Walked::Input(Target::Path(p) | Target::File(p)) => Some(p),
            _ => None,
        })
        .take(plan::RESIDENCY_SAMPLE_FILES)
        .collect();
    plan::resident_share(sample.iter().map(PathBuf::as_path))
        .is_none_or(|share| share < plan::MOSTLY_RESIDENT)
}

/// Whether the planner must examine every file before the engine opens it: to decide
/// before reading whether it is due (`--max-age`, `--time-budget`), where it lies on a spinning
/// disk, what a migration's layout gives it, or whether it is the store's own file behind a
/// symbolic link (`-L`). Otherwise the stamp the engine takes when it opens a file is the one
/// it is judged by, and the planner's own `stat` (path lookup and all: a sixth of a verify's
/// main thread) is spared wherever the record does not call for the size.
fn examine_first(options: &Options, spinning: bool) -> bool {
    options.max_age.is_some()
        || options.time_budget.is_some()
        || spinning
        || options.migrate
        || options.recursion == crate::walk::Recursion::FollowSymlinks
        || !matches!(options.operation, Operation::Audit { .. })
}

/// What travels through the readers with each file.
enum Item {
    /// A regular file read for its prior's layout and algorithm (or the defaults), and
    /// with `migrate_to` for that one too.
    File {
        path: PathBuf,
        /// Its stamp when the walk met it, where the planner examined it; else the one the
        /// engine takes when it opens the file stands for it.
        before: Option<Stamp>,
        prior: Prior,
        migrate_to: Option<(Layout, Algorithm)>,
        /// Whether the store has the file's leaf digests already.
        has_outboard: bool,
        /// Whether a repair of the file was cut short ([`super::store::Entry::repairing`]).
        repairing: bool,
        /// Where its copy lies (`--repair-from`).
        copy: Option<PathBuf>,
    },
    /// A regular file read with the layout and algorithm `predicted`, before its record was
    /// looked up: the reader that opens it reads the record too, from the open file, where
    /// the store keeps records in an attribute of each file
    /// ([`RecordStore::record_attribute`]); the sink decides on it then
    /// ([`Sink::unlooked`]). Only where the plan needs nothing of the record before the read
    /// ([`Planner::unlooked`]).
    Unlooked {
        path: PathBuf,
        predicted: (Layout, Algorithm),
        copy: Option<PathBuf>,
    },
    /// Decided without reading.
    Done(Box<Verdict>),
    /// A record below an argument that the walk did not meet.
    Missing {
        path: PathBuf,
        record: Record,
    },
    /// A file whose record is to be removed ([`Operation::Forget`]).
    Forget {
        path: PathBuf,
        prior: Prior,
    },
    Skipped {
        path: PathBuf,
        reason: SkipReason,
    },
    /// A regular file of `size` bytes left unread.
    Postponed {
        path: PathBuf,
        size: u64,
        why: Postponed,
    },
}

/// Turns the arguments into work, one argument's walk at a time, looking up each file's
/// record on the way.
struct Planner<'a> {
    options: &'a Options,
    args: std::slice::Iter<'a, Target>,
    /// The argument being walked, and its walk.
    current: Option<(Target, Walk<std::iter::Once<Target>>)>,
    queue: VecDeque<(Option<SystemTime>, Work<Item>)>,
    shared: &'a RefCell<Shared>,
    /// The paths below the current argument that its walk could not read: their records
    /// are not `missing`.
    unwalked: Vec<PathBuf>,
    /// Whether the walk of the current argument met anything.
    walked_any: bool,
    /// When the audit started, for `--max-age`.
    now: SystemTime,
    /// When the time budget runs out.
    deadline: Option<Instant>,
    /// With a time budget, all the work, planned before anything is read, in the order it
    /// is handed out.
    ordered: Option<VecDeque<Work<Item>>>,
    /// Whether the reads spare a spinning disk ([`spinning`]): then they go in physical
    /// order.
    spinning: bool,
    /// For each argument that is a path, in order, whether no other overlaps it
    /// ([`super::store::alone`]).
    alone: std::vec::IntoIter<bool>,
    /// Whether no other argument overlaps the one being walked.
    walking_alone: bool,
    /// Whether a file was looked up by path, whose record (if any) [`Shared::predicted`]
    /// took: the reads of files before their lookup start after it ([`Planner::unlooked`]).
    seeded: bool,
    /// Whether every file is examined (`stat`) before its record is looked up, not only
    /// where the record calls for its size ([`Planner::plan`]).
    examine_first: bool,
}

impl Iterator for Planner<'_> {
    type Item = Work<Item>;

    fn next(&mut self) -> Option<Work<Item>> {
        if self.shared.borrow().stops() {
            return None;
        }
        if self.deadline.is_none() {
            return self.next_planned().map(|(_, work)| work);
        }
        if self.ordered.is_none() {
            // Everything first, then the files least recently verified (never, first); the
            // sort is stable, so ties keep the walk's order.
            let mut all: Vec<(Option<SystemTime>, Work<Item>)> =
                std::iter::from_fn(|| self.next_planned()).collect();
            all.sort_by_key(|(verified, work)| (work.read.is_some(), *verified));
            self.ordered = Some(all.into_iter().map(|(_, work)| work).collect());
        }
        let work = self.ordered.as_mut().expect("planned").pop_front()?;
        let late = self.deadline.is_some_and(|d| Instant::now() >= d);
        Some(match (work.context, late) {
            (Item::File { path, before, .. }, true) => Work {
                read: None,
                context: Item::Postponed {
                    path,
                    size: before.map_or(0, |b| b.len),
                    why: Postponed::Deferred,
                },
            },
            (context, _) => Work { context, ..work },
        })
    }
}

impl Planner<'_> {
    /// The next piece of work in walk order, with when its file was last verified.
    fn next_planned(&mut self) -> Option<(Option<SystemTime>, Work<Item>)> {
        loop {
            if self.shared.borrow().stops() {
                return None;
            }
            if let Some(work) = self.queue.pop_front() {
                return Some(work);
            }
            if let Some((arg, walk)) = &mut self.current {
                match walk.next() {
                    Some(walked) => {
                        let arg = arg.clone();
                        self.walked_any = true;
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
            self.walking_alone = false;
            if let Some(path) = arg.path() {
                let alone = self.alone.next().unwrap_or(false);
                self.walking_alone = alone;
                self.shared.borrow_mut().store.walking(path, alone);
            }
            let walk = walk(std::iter::once(arg.clone()), self.options.recursion);
            self.current = Some((arg, walk));
            self.walked_any = false;
        }
    }

    fn pass(&mut self, item: Item) {
        let work = Work {
            read: None,
            context: item,
        };
        self.queue.push_back((None, work));
    }

    fn done(&mut self, path: PathBuf, status: Status, error: FileError) {
        self.pass(unread(path, status, error));
    }

    fn unreadable(&mut self, path: PathBuf, error: impl Into<FileError>) {
        self.done(path, Status::Unreadable, error.into());
    }

    /// `unreadable`, for a path named that is there but could not be audited as a file: a
    /// directory named without `-r`, a file in a directory the user may not search. Its
    /// records, and those below it, are not missing: an audit keeps them, even with
    /// `--update`. `--forget` was asked to remove them, and does (with a manifest or a
    /// database, every record below the path).
    fn unexamined(&mut self, path: PathBuf, error: impl Into<FileError>) {
        if self.options.operation != Operation::Forget {
            self.unwalked.push(path.clone());
        }
        self.unreadable(path, error);
    }

    fn plan(&mut self, arg: &Target, walked: Walked) {
        let (path, found_regular) = match walked {
            Walked::Input(Target::File(path)) => (path, true),
            Walked::Input(Target::Path(path)) => (path, false),
            Walked::Input(Target::Stdin) => return self.unreadable("-".into(), FileError::Stdin),
            Walked::Input(Target::Url(url)) => {
                let why = FileError::Record("remote objects cannot be audited".into());
                return self.unreadable(url.as_str().into(), why);
            }
            Walked::Skipped { path, reason } => return self.pass(Item::Skipped { path, reason }),
            Walked::Error { path, error } => {
                // A directory that vanished took its files with it; one that could not be
                // read says nothing of them.
                let gone =
                    matches!(&error, InputError::Io(e) if e.kind() == io::ErrorKind::NotFound);
                if !gone {
                    self.unwalked.push(path.clone());
                }
                return self.unreadable(path, error);
            }
        };
        let named = matches!(arg, Target::Path(a) if *a == path);
        // A regular file the walk found is looked up first, and examined only where its
        // record calls for the size (see [`examine_first`]).
        let mut meta = None;
        if !found_regular || self.examine_first || self.shared.borrow().store.may_be_own(&path) {
            let Some(examined) = self.examine(&path, named) else {
                return;
            };
            meta = Some(examined);
        }
        if meta.is_none()
            && let Some(work) = self.unlooked(arg, &path)
        {
            return self.queue.push_back((None, work));
        }
        let entry = match self.shared.borrow_mut().store.lookup(&path) {
            Ok(entry) => entry,
            Err(StoreError::Fatal(e)) => {
                self.shared.borrow_mut().fatal.get_or_insert(e);
                return;
            }
            Err(StoreError::File(e)) => return self.unreadable(path, e),
        };
        let new = (self.options.layout, self.options.algorithm);
        if let Some(spec) = entry.prior.spec() {
            self.shared.borrow_mut().predicted = Some(spec);
        }
        let spec = entry.prior.spec().unwrap_or(new);
        let Operation::Audit { update, fix } = self.options.operation else {
            // Forgetting reads nothing.
            return self.pass(Item::Forget {
                path,
                prior: entry.prior,
            });
        };
        // Leaf digests wherever a record with them may be written: a new file, a record of
        // several leaves without them yet, records refreshed by --update, --fix or a
        // migration; never of a file of one leaf, which keeps none (a verify of small files
        // needs not even their size before the read).
        let keeps = self.shared.borrow().store.keeps_outboards();
        let may_write = |migrates: bool| {
            keeps
                && match &entry.prior {
                    Prior::Record(r) => {
                        (!entry.has_outboard && outboard::kept(r.stamp.len))
                            || update
                            || fix
                            || migrates
                    }
                    _ => true,
                }
        };
        if meta.is_none() && (may_write(false) || has_no_value(spec.0, 0).is_some()) {
            let Some(examined) = self.examine(&path, named) else {
                return;
            };
            meta = Some(examined);
        }
        let before = meta.as_ref().map(Stamp::of);
        // Not due: verified recently, and not edited since (an edit is always worth a line),
        // nor half repaired.
        let recent = |verified: SystemTime| {
            self.options.max_age.is_some_and(|age| {
                self.now
                    .duration_since(verified)
                    .is_ok_and(|since| since < age)
            })
        };
        if let (Some(verified), Prior::Record(r), Some(before)) =
            (entry.verified, &entry.prior, before)
            && recent(verified)
            && !entry.repairing
            && r.stamp.len == before.len
            && self.options.resolution.matches(r.stamp.mtime, before.mtime)
        {
            return self.pass(Item::Postponed {
                path,
                size: before.len,
                why: Postponed::NotDue,
            });
        }
        if let Some(before) = before
            && let Some(why) = has_no_value(spec.0, before.len)
        {
            return self.pass(valueless(self.options, path, before, entry.prior, why));
        }
        // A file that checks out keeps its record where the new layout gives it no value.
        let migrate_to = (self.options.migrate && matches!(entry.prior, Prior::Record(_)))
            .then_some(new)
            .filter(|&new| {
                new != spec && before.is_some_and(|b| has_no_value(new.0, b.len).is_none())
            });
        let leaves = before
            .filter(|b| may_write(migrate_to.is_some()) && outboard::kept(b.len))
            .map(|b| outboard::side(b.len));
        let request = Request {
            side: Side {
                digests: migrate_to.into_iter().collect(),
                leaves,
                xattr: None,
            },
            ..Request::new(spec.0, spec.1)
        };
        let item = Item::File {
            path: path.clone(),
            before,
            prior: entry.prior,
            migrate_to,
            has_outboard: entry.has_outboard,
            repairing: entry.repairing,
            copy: self.copy(arg, &path),
        };
        let work = Work {
            read: Some(read::Read {
                // With a time budget the order is the verification times'; a window in
                // physical order would also hand out files past the deadline.
                place: match (self.deadline, &meta) {
                    (None, Some(meta)) if self.spinning => Some(plan::place(&path, meta)),
                    _ => None,
                },
                path,
                request,
            }),
            context: item,
        };
        self.queue.push_back((entry.verified, work));
    }

    /// Where the copy of `path`, met below `arg`, lies (`--repair-from`).
    fn copy(&self, arg: &Target, path: &Path) -> Option<PathBuf> {
        match (&self.options.repair_from, arg.path()) {
            (Some(dir), Some(arg)) => repair::copy_path(dir, arg, path),
            _ => None,
        }
    }

    /// The read of the regular file `path`, met below `arg` and not examined, before its
    /// record is looked up ([`Item::Unlooked`]), where the store keeps records in an attribute
    /// of each file: the reader that opens the file reads the record from the open file,
    /// where a lookup here would walk the path once more (a sixth of a verify's main thread,
    /// as the `stat` was). The file is read with the layout and algorithm of the last record
    /// met (a tree is recorded with one), else those of new records. `None` where the plan
    /// needs the record before the read: a store that keeps leaf digests (which only the
    /// record says whether to compute), a layout that gives an empty file no value (which
    /// only the size says, [`has_no_value`]), or an argument that another overlaps (a file
    /// met twice must get the same verdict twice: the second lookup must not see the record
    /// the first one's verdict wrote).
    fn unlooked(&mut self, arg: &Target, path: &Path) -> Option<Work<Item>> {
        let shared = self.shared.borrow();
        let attr = shared.store.record_attribute()?;
        // The first file is looked up by path: its record says how the files planned before
        // the first result comes back are read (without it, those of a tree recorded
        // otherwise than new records would be read twice).
        if !std::mem::replace(&mut self.seeded, true) {
            return None;
        }
        let predicted = (shared.predicted).unwrap_or((self.options.layout, self.options.algorithm));
        if !self.walking_alone
            || shared.store.keeps_outboards()
            || has_no_value(predicted.0, 0).is_some()
        {
            return None;
        }
        let request = Request {
            side: Side {
                xattr: Some(attr),
                ..Side::default()
            },
            ..Request::new(predicted.0, predicted.1)
        };
        let read = read::Read {
            path: path.to_path_buf(),
            request,
            place: None,
        };
        let context = Item::Unlooked {
            path: path.to_path_buf(),
            predicted,
            copy: self.copy(arg, path),
        };
        Some(Work {
            read: Some(read),
            context,
        })
    }

    /// Examines the file `path` before it is read (`named`: as an argument): its metadata,
    /// or `None` where it is not to be read (gone, not a regular file, the store's own) and
    /// what it is has been said.
    fn examine(&mut self, path: &Path, named: bool) -> Option<fs::Metadata> {
        let path = path.to_path_buf();
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            // Gone, with its directory where that is a file now.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                if !named {
                    self.done(path, Status::Changed, FileError::Vanished);
                } else if !self.shared.borrow().store.has_records_below(&path) {
                    // Else its records are reported missing when the argument is done.
                    self.unreadable(path, InputError::Io(e));
                }
                return None;
            }
            Err(e) => {
                self.unexamined(path, InputError::Io(e));
                return None;
            }
        };
        if meta.is_dir() {
            self.unexamined(path, InputError::IsADirectory);
            return None;
        }
        if !meta.is_file() {
            self.unexamined(path, InputError::NotRegular);
            return None;
        }
        if self.shared.borrow().store.is_own(&path, &meta) {
            return None;
        }
        Some(meta)
    }

    /// Queues the records below `arg` that its walk did not meet.
    fn report_missing(&mut self, arg: &Target) {
        let Some(arg) = arg.path() else {
            return;
        };
        let unwalked = std::mem::take(&mut self.unwalked);
        let unseen = self.shared.borrow_mut().store.unseen_below(arg, &unwalked);
        // A directory named that holds nothing at all, while records lie below it, is far
        // more often a file system that is not mounted (a mount point is an empty directory)
        // than a tree whose every file was deleted: reported, and its records left alone,
        // rather than all `missing` and dropped by `--update` in a cron job.
        let empty_dir = !self.walked_any && fs::metadata(arg).is_ok_and(|m| m.is_dir());
        if empty_dir && !unseen.is_empty() && self.options.operation != Operation::Forget {
            let n = unseen.len();
            return self.unreadable(arg.to_path_buf(), FileError::EmptyWithRecords(n));
        }
        for (path, record) in unseen {
            self.pass(Item::Missing { path, record });
        }
    }
}

/// An empty file to which the layout it would be hashed with gives no value
/// ([`has_no_value`]), decided without reading it: a new one is counted and not recorded
/// ([`Postponed::NoValue`]); one recorded when it had content is `modified`, and `--update`
/// drops its record, as no value can refresh it; a record of the value it cannot have
/// (imported) is unusable.
fn valueless(options: &Options, path: PathBuf, before: Stamp, prior: Prior, why: NoRoot) -> Item {
    let update = matches!(options.operation, Operation::Audit { update: true, .. });
    let (status, error, action) = match &prior {
        Prior::None => {
            return Item::Postponed {
                path,
                size: before.len,
                why: Postponed::NoValue,
            };
        }
        Prior::Record(r) if r.stamp.len != before.len => {
            let action = if update {
                Action::Removed
            } else {
                Action::Kept
            };
            (Status::Modified, None, action)
        }
        Prior::Unusable(damage) => (Status::Unreadable, Some(damage.clone()), Action::Kept),
        Prior::Record(_) | Prior::Cshatag { .. } => {
            let why = format!("the record holds a value, but {why}");
            (Status::Unreadable, Some(why), Action::Kept)
        }
    };
    Item::Done(Box::new(Verdict {
        state: Some(before),
        error: error.map(FileError::Record),
        action,
        ..Verdict::unread(path, status, prior)
    }))
}

/// A file decided `status` without reading it, for `error`.
fn unread(path: PathBuf, status: Status, error: FileError) -> Item {
    Item::Done(Box::new(Verdict {
        error: Some(error),
        ..Verdict::unread(path, status, Prior::None)
    }))
}

/// Why `layout` gives a file of `len` bytes no value where that is because the file is
/// empty (BitTorrent v2, BEP 52): such a file has nothing to audit. A layout that cannot take
/// a file of some other size (S3, more than 10 000 parts) is another matter: the user can
/// choose another part size, and the read says so.
fn has_no_value(layout: Layout, len: u64) -> Option<NoRoot> {
    match layout.check_size(len) {
        Err(why @ NoRoot::EmptyFile(_)) => Some(why),
        _ => None,
    }
}

/// What the planner knew of a file it handed to the readers.
struct Planned {
    before: Option<Stamp>,
    migrate_to: Option<(Layout, Algorithm)>,
    has_outboard: bool,
    repairing: bool,
    copy: Option<PathBuf>,
}

/// Receives the readers' results as they come, classifies and acts on the store; reports in
/// walk order, in batches ([`BATCH_FILES`], [`BATCH_TIME`]), each once the store committed
/// the changes of every decision in it.
struct Sink<'a> {
    options: &'a Options,
    on: &'a mut dyn FnMut(Event) -> ControlFlow<()>,
    summary: Summary,
    shared: &'a RefCell<Shared>,
    /// Decisions whose turn has come, waiting for the store to commit them.
    held: Vec<Decided>,
    /// When the last batch was released.
    released: Instant,
}

/// A decision of the sink, waiting for its turn to be reported.
enum Decided {
    Verdict(Box<Verdict>),
    Forgotten {
        path: PathBuf,
        error: Option<InputError>,
    },
    Skipped {
        path: PathBuf,
        reason: SkipReason,
    },
    Postponed {
        path: PathBuf,
        size: u64,
        why: Postponed,
    },
    /// The end of a batch ([`Event::Committed`]).
    Committed,
    /// Nothing to report: a record that is not ours to forget, or work the caller stopped.
    Nothing,
}

impl read::Outcomes<Item> for Sink<'_> {
    type Decided = Decided;

    /// Decides, acts on the store at once and counts; the report waits for its turn.
    fn decide(&mut self, item: Item, result: Option<Result<FileDigest, InputError>>) -> Decided {
        // What the readers had in hand when the caller stopped is neither decided nor
        // recorded: the caller would not hear of it.
        if self.shared.borrow().stopped {
            return Decided::Nothing;
        }
        let verdict = match item {
            Item::Done(verdict) => {
                let mut verdict = *verdict;
                verdict.action_error = self.act(&verdict, None);
                verdict
            }
            Item::Skipped { path, reason } => return Decided::Skipped { path, reason },
            Item::Postponed { path, size, why } => {
                *match why {
                    Postponed::NotDue => &mut self.summary.not_due,
                    Postponed::Deferred => &mut self.summary.deferred,
                    Postponed::NoValue => &mut self.summary.no_value,
                } += 1;
                return Decided::Postponed { path, size, why };
            }
            Item::File {
                path,
                before,
                prior,
                migrate_to,
                has_outboard,
                repairing,
                copy,
            } => {
                let hashed = result.expect("files are read");
                let planned = Planned {
                    before,
                    migrate_to,
                    has_outboard,
                    repairing,
                    copy,
                };
                self.file(path, prior, planned, hashed)
            }
            Item::Unlooked {
                path,
                predicted,
                copy,
            } => {
                let hashed = result.expect("files are read");
                match self.unlooked(path, predicted, copy, hashed) {
                    Ok(verdict) => verdict,
                    Err(decided) => return decided,
                }
            }
            Item::Missing { path, record } => {
                if self.options.operation == Operation::Forget {
                    return self.forget(path);
                }
                let mut verdict = Verdict {
                    action: decide(Status::Missing, &Prior::None, self.options.operation),
                    ..Verdict::unread(path, Status::Missing, Prior::Record(record))
                };
                verdict.action_error = self.act(&verdict, None);
                verdict
            }
            Item::Forget { path, prior } => {
                // Only our records: cshatag's attributes are left alone.
                if !prior.is_ours() {
                    return Decided::Nothing;
                }
                return self.forget(path);
            }
        };
        self.summary.add(&verdict);
        Decided::Verdict(Box::new(verdict))
    }

    /// Holds the decision for the next batch, and releases the batch when it is full or
    /// old enough.
    fn report(&mut self, decided: Decided) {
        if self.shared.borrow().stops() {
            return;
        }
        self.held.push(decided);
        if self.held.len() >= BATCH_FILES || self.released.elapsed() >= BATCH_TIME {
            self.release();
        }
    }

    fn idle(&mut self) {
        if self.released.elapsed() >= BATCH_TIME {
            self.release();
        }
    }
}

impl Sink<'_> {
    /// Commits the store's changes, then tells the caller of the decisions held, and that
    /// they are recorded ([`Event::Committed`]); the caller may stop the audit. Nothing is
    /// told of decisions the store could not commit: the audit stops with its error.
    fn release(&mut self) {
        self.released = Instant::now();
        if self.shared.borrow().stops() {
            return;
        }
        let committed = self.shared.borrow_mut().store.commit();
        if let Err(e) = committed {
            self.shared.borrow_mut().fatal.get_or_insert(e);
            return;
        }
        for decided in std::mem::take(&mut self.held) {
            self.tell(&decided);
        }
        self.tell(&Decided::Committed);
    }

    /// Tells the caller, who may stop the audit.
    fn tell(&mut self, decided: &Decided) {
        if self.shared.borrow().stopped {
            return;
        }
        let event = match decided {
            Decided::Verdict(verdict) => Event::Verdict(verdict),
            Decided::Forgotten { path, error } => Event::Forgotten {
                path,
                error: error.as_ref(),
            },
            Decided::Skipped { path, reason } => Event::Skipped {
                path,
                reason: *reason,
            },
            Decided::Postponed { path, size, why } => Event::Postponed {
                path,
                size: *size,
                why: *why,
            },
            Decided::Committed => Event::Committed,
            Decided::Nothing => return,
        };
        if (self.on)(event).is_break() {
            self.shared.borrow_mut().stopped = true;
        }
    }

    /// The verdict on a file that was read.
    fn file(
        &mut self,
        path: PathBuf,
        prior: Prior,
        planned: Planned,
        hashed: Result<FileDigest, InputError>,
    ) -> Verdict {
        let Planned {
            before,
            migrate_to,
            has_outboard,
            repairing,
            copy,
        } = planned;
        // A file whose file system does not tell its size (procfs, sysfs) was read to its
        // end: its length is the bytes read, and only its mtime can tell that it changed.
        let streamed = match &hashed {
            Ok(h) if h.stamp.is_none() => Some(h.size),
            _ => None,
        };
        let measured = |stamp: Stamp| Stamp::new(streamed.unwrap_or(stamp.len), stamp.mtime);
        let before = before.map(measured);
        // The stamp after is the one the engine took when it opened the file, which held
        // until the last byte was read; of a stream, or a file that could not be read, one
        // taken now.
        let after = match &hashed {
            Ok(FileDigest {
                stamp: Some(stamp), ..
            }) => Ok(*stamp),
            _ => fs::metadata(&path).map(|m| measured(Stamp::of(&m))),
        };
        // What the file was when the audit looked: before the read, or as it was read.
        let state = before.or(after.as_ref().ok().copied());
        let (hashed, migrated, leaves) = match hashed {
            Ok(mut h) => (Ok((h.root, h.size)), h.side.digests.pop(), h.side.leaves),
            Err(e) => (Err(e), None, None),
        };
        let outboard = leaves.map(|leaves| Outboard::new(state.map_or(0, |s| s.len), leaves));
        let spec = prior
            .spec()
            .unwrap_or((self.options.layout, self.options.algorithm));
        let resolution = self.options.resolution;
        let (mut status, mut current, mut error) =
            judge((&prior, repairing), before, hashed, after, resolution, spec);
        let mut action = decide(status, &prior, self.options.operation);
        // A migration records the new algorithm's digest, from the same read, wherever a
        // record is written, and for a file that checks out.
        if let (Some((layout, algorithm)), Some(digest), Some(now)) =
            (migrate_to, migrated, current.as_mut())
        {
            if action == Action::Kept && status == Status::Ok {
                action = Action::Migrated;
            }
            if action != Action::Kept {
                *now = Record::new(layout, algorithm, now.stamp, digest);
            }
        }
        let located = match status {
            Status::Corrupt => {
                let len = state.map_or(0, |s| s.len);
                self.locate(&path, spec, len, outboard.as_ref())
            }
            _ => None,
        };
        let mut repair_error = None;
        if let (Some((recorded, ranges)), Some(copy), Prior::Record(record), Action::Kept) =
            (&located, &copy, &prior, action)
        {
            let damage = repair::Damage {
                record,
                recorded: recorded.as_ref(),
                ranges,
            };
            let store = &mut *self.shared.borrow_mut().store;
            let (dry_run, io) = (self.options.dry_run, &self.options.io);
            match repair::from_copy(store, &path, damage, copy, dry_run, io) {
                Ok(done) => {
                    action = Action::Repaired;
                    // The file checks out now: nothing is wrong any more, and a cron job must
                    // not mail an alarm. A dry run only says it would repair the file, which
                    // is still corrupt.
                    if done.written {
                        status = Status::Repaired;
                    }
                    // The cause of an interrupted repair's corruption is gone now.
                    error = None;
                }
                Err(e) => repair_error = Some(e),
            }
        }
        let mut verdict = Verdict {
            path,
            status,
            prior,
            state,
            current,
            error,
            damaged: located.map(|(_, ranges)| ranges),
            repair_error,
            action,
            action_error: None,
        };
        // The leaf digests go with a record written, or fill in where there were none.
        let new_outboard = match action {
            Action::Kept if has_outboard || status != Status::Ok => None,
            _ => outboard.as_ref(),
        };
        verdict.action_error = self.act(&verdict, new_outboard);
        verdict
    }

    /// The verdict on a file read before its record was looked up ([`Item::Unlooked`]), with
    /// `predicted`: its record is the one the reader read from the open file, else (the read
    /// failed, or the attribute could not be read) the one the store reads by path, which
    /// says why. A record of another layout or algorithm has the file read again with its own
    /// ([`Summary::reread`]), or decided unread where that layout gives it no value. Where it
    /// is not a verdict on a read: the decision taken instead, unread (nothing where the
    /// store's error stops the audit).
    fn unlooked(
        &mut self,
        path: PathBuf,
        predicted: (Layout, Algorithm),
        copy: Option<PathBuf>,
        mut hashed: Result<FileDigest, InputError>,
    ) -> Result<Verdict, Decided> {
        let attr = hashed.as_mut().ok().and_then(|h| h.side.xattr.take());
        let looked = {
            let store = &mut self.shared.borrow_mut().store;
            match attr {
                Some(attr) => store.lookup_read(&path, attr.as_ref().map(XattrValue::as_bytes)),
                None => store.lookup(&path),
            }
        };
        let entry = match looked {
            Ok(entry) => entry,
            Err(StoreError::Fatal(e)) => {
                self.shared.borrow_mut().fatal.get_or_insert(e);
                return Err(Decided::Nothing);
            }
            Err(StoreError::File(e)) => {
                let item = unread(path, Status::Unreadable, e.into());
                return Err(read::Outcomes::decide(self, item, None));
            }
        };
        let spec = match entry.prior.spec() {
            Some(spec) => {
                self.shared.borrow_mut().predicted = Some(spec);
                spec
            }
            None => (self.options.layout, self.options.algorithm),
        };
        if spec != predicted {
            if let Ok(FileDigest {
                stamp: Some(stamp), ..
            }) = &hashed
                && let Some(why) = has_no_value(spec.0, stamp.len)
            {
                let item = valueless(self.options, path, *stamp, entry.prior, why);
                return Err(read::Outcomes::decide(self, item, None));
            }
            self.summary.reread += 1;
            hashed = read::hash_file(&path, &Request::new(spec.0, spec.1), &self.options.io);
        }
        let planned = Planned {
            before: None,
            migrate_to: None,
            has_outboard: entry.has_outboard,
            repairing: entry.repairing,
            copy,
        };
        Ok(self.file(path, entry.prior, planned, hashed))
    }

    /// Where the corrupt file `path` of `len` bytes differs from its recorded leaf digests:
    /// from `current` when this read computed them, else from a second read of the file
    /// (corruption is rare; audits that find none pay nothing for it). A file of one leaf,
    /// which keeps none ([`outboard::kept`]), is damaged as a whole. `None` where the store
    /// has no leaf digests for it, or the file could not be read again.
    fn locate(
        &mut self,
        path: &Path,
        (layout, algorithm): (Layout, Algorithm),
        len: u64,
        current: Option<&Outboard>,
    ) -> Option<(Option<Outboard>, Vec<Range<u64>>)> {
        let mut shared = self.shared.borrow_mut();
        let recorded = match shared.store.outboard(path).ok()? {
            Some(recorded) => recorded,
            None if shared.store.keeps_outboards() && !outboard::kept(len) => {
                return Some((None, (len > 0).then_some(0..len).into_iter().collect()));
            }
            None => return None,
        };
        drop(shared);
        if !recorded.fits(len) {
            return None;
        }
        let leaves = match current.filter(|c| (c.leaf, c.kind) == (recorded.leaf, recorded.kind)) {
            Some(c) => c.leaves.clone(),
            None => {
                // The record's digest too, which the engine computes of any read.
                let request = Request {
                    side: Side {
                        digests: Vec::new(),
                        leaves: Some(recorded.side()),
                        xattr: None,
                    },
                    ..Request::new(layout, algorithm)
                };
                read::hash_file(path, &request, &self.options.io)
                    .ok()?
                    .side
                    .leaves?
            }
        };
        let ranges = recorded.damaged(&leaves, len);
        Some((Some(recorded), ranges))
    }

    fn forget(&mut self, path: PathBuf) -> Decided {
        let error = self.store(&path, Change::Remove);
        self.summary.note(Action::Forgotten, error.is_some());
        Decided::Forgotten { path, error }
    }

    /// Carries out `verdict.action` on the store (a file read whose record stays is noted
    /// as checked), with `outboard` where leaf digests are to be written; the error if the
    /// store refused.
    fn act(&mut self, verdict: &Verdict, outboard: Option<&Outboard>) -> Option<InputError> {
        let status = verdict.status;
        let change = match (verdict.action, &verdict.current) {
            (Action::Repaired, _) => Change::Checked {
                status: Status::Ok,
                outboard: None,
            },
            (Action::Kept, Some(_)) => Change::Checked { status, outboard },
            (Action::Kept, None) => return None,
            (
                Action::Recorded
                | Action::Updated
                | Action::Fixed
                | Action::Converted
                | Action::Migrated,
                current,
            ) => {
                let record = current.as_ref().expect("a record to write");
                Change::Set {
                    record,
                    status,
                    outboard,
                }
            }
            (Action::Removed | Action::Forgotten, _) => Change::Remove,
        };
        self.store(&verdict.path, change)
    }

    /// Carries out `change` on the entry of `path`, unless this is a dry run; the error if
    /// the store refused. An error of the whole store stops the audit after this file.
    fn store(&mut self, path: &Path, change: Change) -> Option<InputError> {
        if self.options.dry_run {
            return None;
        }
        let mut shared = self.shared.borrow_mut();
        match shared.store.set(path, change) {
            Ok(()) => None,
            Err(StoreError::File(e)) => Some(e),
            Err(StoreError::Fatal(e)) => {
                shared.fatal.get_or_insert(e);
                None
            }
        }
    }
}
