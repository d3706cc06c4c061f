//! The coordinator: hands the inputs out to the readers in batches to open, queues the jobs
//! of those too large for one reader, holds in memory the streams whose layout needs their
//! length, folds the digests of shared inputs into roots, and hands results out in input
//! order.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, Select, Sender};

use super::input::{Concluded, Fold, Opening, Planned, Unplanned};
use super::{Done, FileDigest, Job, Opened, Order, Sink, Step, Task};
use crate::source::{InputError, MAX_HELD_STREAM};

/// Inputs per batch handed to a reader to open: one hand-off from the coordinator per batch
/// rather than per file, and one report back. A reader hashes the small ones of a batch
/// itself, and gives the unopened half of it back when another reader waits for work (see
/// `whole.rs`), so that a batch never leaves one reader busy while the others are idle.
/// 20 000 files of 1 byte, `-p 2`: 64 inputs a batch cost 142 ms of CPU and 950 context
/// switches, 16 a batch 150 ms and 3 900.
const OPEN_BATCH: usize = 64;

/// How long the coordinator waits for the workers before it tells the sink that it is idle
/// ([`Sink::idle`]): a result waits no longer than this to be written out, while the gaps
/// between the batches of a run of many small files (mostly shorter) do not each cost a
/// write. 20 000 files of a few bytes, stdout in a file, counted under strace (which slows
/// the run): 154 writes; 246 when the sink is told whenever nothing is ready at once; 25
/// when results waited for a full buffer or a second, and for a FIFO's writer too.
const IDLE_AFTER: Duration = Duration::from_millis(10);

/// How often the sink is told again that the engine still waits (one long file): a sink
/// that commits what it gathered by time (an audit's batches of records) then keeps its
/// promise however long the wait.
const IDLE_EVERY: Duration = Duration::from_millis(200);

type Outcome = Option<Result<FileDigest, InputError>>;

/// Whether the coordinator takes more tasks from the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Intake {
    Open,
    /// The source paused ([`Task::pause`]): no more tasks until the first `before` are
    /// reported.
    Paused {
        before: usize,
    },
    /// The tasks ran out, or the caller cancelled.
    Ended,
}

/// An input handed out and not yet finished.
struct Pending<T> {
    context: T,
    /// Once its jobs are shared by every worker: their fold.
    fold: Option<Fold>,
}

/// Where the coordinator sends work, and hears back from.
pub(super) struct Channels<'a> {
    /// Jobs of inputs shared by every worker.
    pub(super) jobs: Sender<Job>,
    /// Batches of inputs to open.
    pub(super) opens: Sender<Vec<Opening>>,
    pub(super) done: &'a Receiver<Vec<Done>>,
    pub(super) opened: &'a Receiver<Vec<Opened>>,
    /// Set when a worker died: a job it held will never be done.
    pub(super) died: &'a AtomicBool,
    /// Set when the caller cancels: no more tasks are taken.
    pub(super) cancelled: &'a dyn Fn() -> bool,
}

/// Hands inputs out, folds the jobs of shared inputs, and hands results out in input order.
pub(super) struct Coordinator<T, F> {
    multi_buffer: bool,
    /// Whether the sink takes outcomes in the order of the tasks or as they come.
    order: Order,
    pending: HashMap<usize, Pending<T>>,
    /// Streams to hold in memory before they can be planned.
    to_hold: VecDeque<Unplanned>,
    /// The bytes of streams held in memory by pending inputs.
    held: u64,
    /// Jobs of shared inputs, to queue.
    outbox: VecDeque<Job>,
    /// Finished tasks waiting for an earlier one.
    ready: BTreeMap<usize, (T, Outcome)>,
    /// In the order of the tasks, the next to report; else how many are reported.
    next_out: usize,
    /// Tasks taken so far: the index of the next.
    taken: usize,
    intake: Intake,
    sink: F,
}

impl<T, F> Coordinator<T, F>
where
    F: Sink<T>,
{
    pub(super) fn new(multi_buffer: bool, order: Order, sink: F) -> Coordinator<T, F> {
        Coordinator {
            multi_buffer,
            order,
            pending: HashMap::new(),
            to_hold: VecDeque::new(),
            held: 0,
            outbox: VecDeque::new(),
            ready: BTreeMap::new(),
            next_out: 0,
            taken: 0,
            intake: Intake::Open,
            sink,
        }
    }

    /// Runs `tasks` on the workers until every task taken is reported. The queues are closed
    /// once nothing more can come to them (an input read again adds jobs), so that the
    /// workers end.
    pub(super) fn run(mut self, tasks: impl IntoIterator<Item = Task<T>>, c: Channels) {
        let mut tasks = tasks.into_iter();
        // Batches to hand out: new ones, and those that readers gave back first.
        let mut batches = VecDeque::new();
        loop {
            // Memory held by streams stays bounded: the next one waits for them.
            while !self.holds_enough()
                && let Some(stream) = self.to_hold.pop_front()
            {
                // Reading it may take long (a slow pipe).
                self.sink.idle();
                let input = stream.input;
                self.admit(input, stream.hold().plan(self.multi_buffer));
            }
            if batches.is_empty() && self.intake == Intake::Open {
                if (c.cancelled)() {
                    self.intake = Intake::Ended;
                } else {
                    let next = self.next_batch(&mut tasks);
                    if !next.is_empty() {
                        batches.push_back(next);
                    }
                }
            }
            let died = c.died.load(Ordering::Relaxed);
            if let Intake::Paused { before } = self.intake
                && (self.next_out >= before || died)
            {
                // Everything before the pause is reported (nothing is under way then), and
                // written out before the source waits. A dead worker's input is never
                // reported: the pause ends then.
                self.sink.idle();
                self.intake = Intake::Open;
                continue;
            }
            let idle = self.outbox.is_empty() && batches.is_empty();
            let ended = self.intake == Intake::Ended;
            if idle && ended && (self.pending.is_empty() || died) {
                break;
            }
            // Workers never wait for the coordinator: while the queues are full, it takes in
            // what they report.
            let mut select = Select::new();
            let send_job = (!self.outbox.is_empty()).then(|| select.send(&c.jobs));
            let send_batch = (!batches.is_empty()).then(|| select.send(&c.opens));
            let from_hashers = select.recv(c.done);
            let from_readers = select.recv(c.opened);
            let op = match select.select_timeout(IDLE_AFTER) {
                Ok(op) => op,
                Err(_) => loop {
                    self.sink.idle();
                    if let Ok(op) = select.select_timeout(IDLE_EVERY) {
                        break op;
                    }
                },
            };
            let index = Some(op.index());
            if index == send_job {
                let job = self.outbox.pop_front().expect("a job to send");
                op.send(&c.jobs, job)
                    .unwrap_or_else(|_| panic!("workers outlive the coordinator"));
            } else if index == send_batch {
                let openings = batches.pop_front().expect("a batch to send");
                op.send(&c.opens, openings)
                    .unwrap_or_else(|_| panic!("workers outlive the coordinator"));
            } else if index == Some(from_hashers) {
                // Empty when a worker died, to wake the coordinator.
                for done in op.recv(c.done).expect("workers outlive the coordinator") {
                    self.on_done(done);
                }
            } else {
                debug_assert_eq!(index, Some(from_readers));
                for report in op.recv(c.opened).expect("workers outlive the coordinator") {
                    match report {
                        Opened::Returned(openings) => batches.push_front(openings),
                        report => self.on_opened(report),
                    }
                }
            }
        }
        drop((c.jobs, c.opens));
        // Only when a worker died can anything be left under way.
        for report in c.opened.iter().flatten() {
            self.on_opened(report);
        }
        for done in c.done.iter().flatten() {
            self.on_done(done);
        }
        self.report_lost();
    }

    /// Whether the streams held in memory reach [`MAX_HELD_STREAM`]: then no other stream is
    /// held until they are hashed, so that at most twice that is held at once.
    fn holds_enough(&self) -> bool {
        self.held >= MAX_HELD_STREAM
    }

    /// The next inputs to open, up to [`OPEN_BATCH`]; tasks without an input on the way are
    /// finished at once. Fewer than a batch when the tasks ran out (the intake ends) or the
    /// source paused (the intake pauses).
    fn next_batch(&mut self, tasks: &mut impl Iterator<Item = Task<T>>) -> Vec<Opening> {
        let mut batch = Vec::new();
        while batch.len() < OPEN_BATCH {
            let step = match tasks.next() {
                Some(Task(step)) => step,
                None => {
                    self.intake = Intake::Ended;
                    break;
                }
            };
            let Step::Run {
                input,
                slice,
                context,
            } = step
            else {
                let before = self.taken;
                self.intake = Intake::Paused { before };
                break;
            };
            let index = self.taken;
            self.taken += 1;
            let Some((target, request)) = input else {
                self.emit(index, context, None);
                continue;
            };
            let pending = Pending {
                context,
                fold: None,
            };
            self.pending.insert(index, pending);
            batch.push(Opening::new(index, target, request, slice));
        }
        batch
    }

    /// Takes in a reader's report on an input it opened.
    fn on_opened(&mut self, report: Opened) {
        match report {
            Opened::Shared { input, planned } => self.admit(input, Ok(planned)),
            Opened::Hold(stream) => self.to_hold.push_back(stream),
            Opened::Hashed { input, result } => self.finish(input, Some(result)),
            Opened::Lost { input } => self.finish(input, Some(Err(lost()))),
            // Left unopened when nothing more is handed out: lost with their reader.
            Opened::Returned(openings) => {
                for opening in openings {
                    self.finish(opening.input, Some(Err(lost())));
                }
            }
        }
    }

    /// Queues the jobs of `input`, planned as `planned`, for every worker.
    fn admit(&mut self, input: usize, planned: Result<Planned, InputError>) {
        let Planned { jobs, fold } = match planned {
            Ok(planned) => planned,
            Err(e) => return self.finish(input, Some(Err(e))),
        };
        self.held += fold.held;
        if jobs.is_empty() {
            return self.conclude(input, fold);
        }
        let p = self.pending.get_mut(&input).expect("an input handed out");
        p.fold = Some(fold);
        self.outbox.extend(jobs);
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
            self.conclude(done.input, fold);
        }
    }

    /// Emits the result of a shared input whose jobs are all done, or plans it again as a
    /// stream (a file that held other bytes than its size said).
    fn conclude(&mut self, input: usize, fold: Fold) {
        self.held -= fold.held;
        match fold.conclude(input) {
            Concluded::Result(result) => self.finish(input, Some(result)),
            Concluded::Again(stream) if stream.must_be_held() => self.to_hold.push_back(stream),
            Concluded::Again(stream) => self.admit(input, stream.plan(self.multi_buffer)),
        }
    }

    /// Emits the outcome of a pending input.
    fn finish(&mut self, index: usize, outcome: Outcome) {
        let p = self.pending.remove(&index).expect("a pending input");
        self.emit(index, p.context, outcome);
    }

    fn emit(&mut self, index: usize, context: T, outcome: Outcome) {
        // As they come, a count stands for the order: a pause waits for as many as came
        // before it, which are those before it, as none after it is taken meanwhile.
        if index != self.next_out && self.order == Order::Tasks {
            self.ready.insert(index, (context, outcome));
            return;
        }
        // Most results come in order: straight to the sink.
        self.sink.take(context, outcome);
        self.next_out += 1;
        while let Some((context, outcome)) = self.ready.remove(&self.next_out) {
            self.sink.take(context, outcome);
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
