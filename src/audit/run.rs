//! The run: walks the arguments, looks up each file's record, hands the files to the engine,
//! and turns each result into a verdict, in walk order.
//!
//! The stamp (size and mtime) of a file is taken before it is handed to the engine and again
//! after its digest is known; [`judge`](super::verdict::judge) compares them. Records below an
//! argument that its walk did not meet are reported `missing` once the argument is done.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::engine::{Engine, FileDigest, Request, Task};
use crate::source::{InputError, Stamp, Target};
use crate::walk::{SkipReason, Walk, Walked, walk};

use super::report::{Event, Summary};
use super::store::{Change, Prior, Record, RecordStore, StoreError};
use super::verdict::{Action, FileError, Status, Verdict, decide, judge};
use super::{AuditError, Operation, Options};

/// State shared by the planner and the sink, which the engine calls in turn on one thread.
struct Shared {
    store: Box<dyn RecordStore>,
    /// The first error that stops the audit.
    fatal: Option<AuditError>,
}

/// Audits `targets` with `store` (see [`super::audit`]).
pub(super) fn run(
    engine: &Engine,
    targets: &[Target],
    options: &Options,
    store: Box<dyn RecordStore>,
    on: &mut dyn FnMut(Event),
) -> Result<Summary, AuditError> {
    let shared = RefCell::new(Shared { store, fatal: None });
    let mut planner = Planner {
        options,
        args: targets.iter(),
        current: None,
        queue: VecDeque::new(),
        shared: &shared,
    };
    let mut sink = Sink {
        options,
        on,
        summary: Summary::default(),
        shared: &shared,
    };
    engine.run(&mut planner, |item, result| sink.on(item, result));
    let mut summary = sink.summary;
    let mut shared = shared.into_inner();
    if let Some(e) = shared.fatal {
        return Err(e);
    }
    summary.store_written = shared.store.finish()?;
    Ok(summary)
}

/// What travels through the engine with each file.
enum Item {
    /// A regular file hashed with its prior's layout and algorithm (or the defaults).
    File {
        path: PathBuf,
        before: Stamp,
        prior: Prior,
    },
    /// Decided without hashing.
    Done(Verdict),
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
}

/// Turns the arguments into tasks, one argument's walk at a time, looking up each file's
/// record on the way.
struct Planner<'a> {
    options: &'a Options,
    args: std::slice::Iter<'a, Target>,
    /// The argument being walked, and its walk.
    current: Option<(Target, Walk<std::iter::Once<Target>>)>,
    queue: VecDeque<Task<Item>>,
    shared: &'a RefCell<Shared>,
}

impl Iterator for Planner<'_> {
    type Item = Task<Item>;

    fn next(&mut self) -> Option<Task<Item>> {
        loop {
            if self.shared.borrow().fatal.is_some() {
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
    fn done(&mut self, path: PathBuf, status: Status, error: FileError) {
        self.queue.push_back(Task::pass(Item::Done(Verdict {
            path,
            status,
            prior: Prior::None,
            state: None,
            current: None,
            error: Some(error),
            action: Action::Kept,
            action_error: None,
        })));
    }

    fn unreadable(&mut self, path: PathBuf, error: impl Into<FileError>) {
        self.done(path, Status::Unreadable, error.into());
    }

    fn plan(&mut self, arg: &Target, walked: Walked) {
        let path = match walked {
            Walked::Input(Target::Path(path)) => path,
            Walked::Input(Target::Stdin) => return self.unreadable("-".into(), FileError::Stdin),
            Walked::Skipped { path, reason } => {
                let item = Item::Skipped { path, reason };
                return self.queue.push_back(Task::pass(item));
            }
            Walked::Error { path, error } => return self.unreadable(path, error),
        };
        let named = matches!(arg, Target::Path(a) if *a == path);
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if !named {
                    return self.done(path, Status::Changed, FileError::Vanished);
                }
                if self.shared.borrow().store.has_records_below(&path) {
                    // Its records are reported missing when the argument is done.
                    return;
                }
                return self.unreadable(path, InputError::Io(e));
            }
            Err(e) => return self.unreadable(path, InputError::Io(e)),
        };
        if meta.is_dir() {
            return self.unreadable(path, InputError::IsADirectory);
        }
        if !meta.is_file() {
            return self.unreadable(path, FileError::NotRegular);
        }
        let mut shared = self.shared.borrow_mut();
        if shared.store.is_own(&path, &meta) {
            return;
        }
        let prior = match shared.store.lookup(&path) {
            Ok(entry) => entry.prior,
            Err(StoreError::Fatal(e)) => {
                shared.fatal.get_or_insert(e);
                return;
            }
            Err(StoreError::File(e)) => {
                drop(shared);
                return self.unreadable(path, e);
            }
        };
        drop(shared);
        if self.options.operation == Operation::Forget {
            let item = Item::Forget { path, prior };
            return self.queue.push_back(Task::pass(item));
        }
        let (layout, algorithm) = prior
            .spec()
            .unwrap_or((self.options.layout, self.options.algorithm));
        let request = Request::new(layout, algorithm);
        let target = Target::Path(path.clone());
        let before = Stamp::of(&meta);
        let item = Item::File {
            path,
            before,
            prior,
        };
        self.queue.push_back(Task::hash(target, request, item));
    }

    /// Queues the records below `arg` that its walk did not meet.
    fn report_missing(&mut self, arg: &Target) {
        let Target::Path(arg) = arg else {
            return;
        };
        let unseen = self.shared.borrow_mut().store.unseen_below(arg);
        for (path, record) in unseen {
            let item = Item::Missing { path, record };
            self.queue.push_back(Task::pass(item));
        }
    }
}

/// Receives the engine's results in order, classifies, acts on the store and reports.
struct Sink<'a> {
    options: &'a Options,
    on: &'a mut dyn FnMut(Event),
    summary: Summary,
    shared: &'a RefCell<Shared>,
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
                before,
                prior,
            } => {
                let hashed = result.expect("files are hashed").map(|d| (d.root, d.size));
                let after = fs::metadata(&path).map(|m| Stamp::of(&m));
                let spec = prior
                    .spec()
                    .unwrap_or((self.options.layout, self.options.algorithm));
                let resolution = self.options.resolution;
                let (status, current, error) =
                    judge(&prior, before, hashed, after, resolution, spec);
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
                verdict.action_error = self.act(&verdict);
                verdict
            }
            Item::Missing { path, record } => {
                if self.options.operation == Operation::Forget {
                    return self.forget(&path);
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
                verdict.action_error = self.act(&verdict);
                verdict
            }
            Item::Forget { path, prior } => {
                // Only our records: cshatag's attributes are left alone.
                if prior.is_ours() {
                    self.forget(&path);
                }
                return;
            }
        };
        self.summary.add(&verdict);
        (self.on)(Event::Verdict(&verdict));
    }

    fn forget(&mut self, path: &Path) {
        let error = self.store(path, Change::Remove);
        self.summary.note(Action::Forgotten, error.is_some());
        let error = error.as_ref();
        (self.on)(Event::Forgotten { path, error });
    }

    /// Carries out `verdict.action` on the store (a file read whose record stays is noted
    /// as checked); the error if the store refused.
    fn act(&mut self, verdict: &Verdict) -> Option<InputError> {
        let status = verdict.status;
        let change = match (verdict.action, &verdict.current) {
            (Action::Kept, Some(_)) => Change::Checked { status },
            (Action::Kept, None) => return None,
            (Action::Recorded | Action::Updated | Action::Fixed | Action::Converted, current) => {
                let record = current.as_ref().expect("a record to write");
                Change::Set { record, status }
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
