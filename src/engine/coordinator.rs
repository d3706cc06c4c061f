//! The coordinator: hands the inputs out to the readers in batches to open, queues the jobs
//! of those too large for one reader, folds their digests into roots, and hands results out
//! in input order.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crossbeam_channel::{Receiver, Select, Sender};

use super::input::{Fold, Opening};
use super::{Done, FileDigest, Opened, Task, Work};
use crate::source::InputError;

/// Inputs per batch handed to a reader to open. A reader hashes the small ones of a batch
/// itself, so a batch is also the most work one reader may be left with while the others
/// have none (16 inputs of at most [`super::whole::SMALL_INPUT`] each), and one hand-off
/// from the coordinator per batch rather than per file.
const OPEN_BATCH: usize = 16;

type Outcome = Option<Result<FileDigest, InputError>>;

/// An input handed out and not yet finished.
struct Pending<T> {
    context: T,
    /// Once its reader handed its jobs back to be shared by every worker: their fold.
    fold: Option<Fold>,
}

/// Hands inputs out, folds the jobs of shared inputs, and hands results out in input order.
pub(super) struct Coordinator<T, F> {
    pending: HashMap<usize, Pending<T>>,
    /// Inputs handed out to be opened that their reader has not reported on yet.
    opening: usize,
    /// Finished tasks waiting for an earlier one.
    ready: BTreeMap<usize, (T, Outcome)>,
    next_out: usize,
    sink: F,
}

impl<T, F> Coordinator<T, F>
where
    F: FnMut(T, Outcome),
{
    pub(super) fn new(sink: F) -> Coordinator<T, F> {
        Coordinator {
            pending: HashMap::new(),
            opening: 0,
            ready: BTreeMap::new(),
            next_out: 0,
            sink,
        }
    }

    /// Runs `tasks` on the workers that take work from `work`, until every task is reported.
    /// The queue is closed once nothing more can come to it, so that the workers end.
    pub(super) fn run(
        mut self,
        tasks: impl IntoIterator<Item = Task<T>>,
        work: Sender<Work>,
        done: &Receiver<Vec<Done>>,
        opened: &Receiver<Vec<Opened>>,
    ) {
        let mut tasks = tasks.into_iter().enumerate();
        // Jobs of shared inputs first, then the next batch.
        let mut outbox = VecDeque::new();
        let mut exhausted = false;
        loop {
            if outbox.is_empty() && !exhausted {
                let batch = self.next_batch(&mut tasks);
                exhausted = batch.len() < OPEN_BATCH;
                if !batch.is_empty() {
                    outbox.push_back(Work::Open(batch));
                }
            }
            if outbox.is_empty() && self.opening == 0 && exhausted {
                break;
            }
            // Workers never wait for the coordinator: while the queue is full, it takes in
            // what they report.
            let mut select = Select::new();
            let send = (!outbox.is_empty()).then(|| select.send(&work));
            let from_hashers = select.recv(done);
            let from_readers = select.recv(opened);
            let op = select.select();
            let index = op.index();
            if Some(index) == send {
                let item = outbox.pop_front().expect("work to send");
                op.send(&work, item)
                    .unwrap_or_else(|_| panic!("workers outlive the coordinator"));
            } else if index == from_hashers {
                let finished = op.recv(done).expect("workers outlive the coordinator");
                for done in finished {
                    self.on_done(done);
                }
            } else {
                debug_assert_eq!(index, from_readers);
                let reports = op.recv(opened).expect("workers outlive the coordinator");
                for report in reports {
                    self.on_opened(report, &mut outbox);
                }
            }
        }
        drop(work);
        for done in done.iter().flatten() {
            self.on_done(done);
        }
        self.report_lost();
    }

    /// The next inputs to open, up to [`OPEN_BATCH`]; tasks without an input on the way are
    /// finished at once. Fewer than a batch when the tasks ran out.
    fn next_batch(&mut self, tasks: &mut impl Iterator<Item = (usize, Task<T>)>) -> Vec<Opening> {
        let mut batch = Vec::new();
        while batch.len() < OPEN_BATCH {
            let Some((index, task)) = tasks.next() else {
                break;
            };
            let Some((target, request)) = task.input else {
                self.emit(index, task.context, None);
                continue;
            };
            let pending = Pending {
                context: task.context,
                fold: None,
            };
            self.pending.insert(index, pending);
            self.opening += 1;
            batch.push(Opening {
                input: index,
                target,
                request,
                slice: task.slice,
            });
        }
        batch
    }

    /// Takes in a reader's report on an input it opened.
    fn on_opened(&mut self, report: Opened, outbox: &mut VecDeque<Work>) {
        self.opening -= 1;
        match report {
            Opened::Shared { input, planned } => {
                if planned.jobs.is_empty() {
                    return self.finish(input, Some(planned.fold.finish()));
                }
                let p = self.pending.get_mut(&input).expect("an input handed out");
                p.fold = Some(planned.fold);
                outbox.extend(planned.jobs.into_iter().map(Work::Job));
            }
            Opened::Hashed { input, result } => self.finish(input, Some(result)),
            Opened::Lost { input } => self.finish(input, Some(Err(lost()))),
        }
    }

    fn on_done(&mut self, done: Done) {
        let p = self
            .pending
            .get_mut(&done.input)
            .expect("a job belongs to a pending input");
        let fold = p.fold.as_mut().expect("a job of a shared input");
        fold.add(done.index, done.result);
        if fold.is_complete() {
            let fold = p.fold.take().expect("present");
            self.finish(done.input, Some(fold.finish()));
        }
    }

    /// Emits the outcome of a pending input.
    fn finish(&mut self, index: usize, outcome: Outcome) {
        let p = self.pending.remove(&index).expect("a pending input");
        self.emit(index, p.context, outcome);
    }

    fn emit(&mut self, index: usize, context: T, outcome: Outcome) {
        if index != self.next_out {
            self.ready.insert(index, (context, outcome));
            return;
        }
        // Most results come in order: straight to the sink.
        (self.sink)(context, outcome);
        self.next_out += 1;
        while let Some((context, outcome)) = self.ready.remove(&self.next_out) {
            (self.sink)(context, outcome);
            self.next_out += 1;
        }
    }

    /// Reports every input still under way as failed: every job reports back unless a worker
    /// died, and its input is still reported.
    fn report_lost(&mut self) {
        let mut lost_inputs: Vec<usize> = self.pending.keys().copied().collect();
        lost_inputs.sort_unstable();
        for index in lost_inputs {
            self.finish(index, Some(Err(lost())));
        }
    }
}

/// The error of an input whose worker died under it.
fn lost() -> InputError {
    std::io::Error::other("a worker thread stopped unexpectedly").into()
}
