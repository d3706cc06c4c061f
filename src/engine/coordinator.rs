//! The coordinator: opens each input and plans it into jobs, folds the digests of finished
//! jobs into roots, and hands results out in input order.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crossbeam_channel::{Receiver, Select, Sender};

use super::{
    Done, Engine, FileDigest, Job, JobSource, MAX_KEPT_LEAVES, Request, SharedFile, Slice, Task,
};
use crate::algorithm::Digest;
use crate::lanes::Kernel;
use crate::layout::{Combiner, JobKind, Root};
use crate::source::{Input, InputError, MAX_HELD_STREAM, ReadMode, hold_stream};

/// The shortest fixed leaf that is a job of its own when its algorithm has lanes: a 1 MiB
/// read holds fewer than four such leaves whole, too few for `JobHasher` to hash them in lanes
/// within the read, so they would each be one stream.
const LANE_JOB_MIN_LEAF: u64 = (Engine::DEFAULT_CHUNK_SIZE / 4) as u64 + 1;

/// Queues `job`, handling finished jobs while the queue is full so that workers never wait
/// for the coordinator.
fn send_job<T, F>(
    jobs: &Sender<Job>,
    job: Job,
    done: &Receiver<Vec<Done>>,
    c: &mut Coordinator<T, F>,
) where
    F: FnMut(T, Option<Result<FileDigest, InputError>>),
{
    loop {
        let mut select = Select::new();
        let send = select.send(jobs);
        select.recv(done);
        let op = select.select();
        if op.index() == send {
            op.send(jobs, job).expect("workers outlive the coordinator");
            return;
        }
        let finished = op.recv(done).expect("workers outlive the coordinator");
        for done in finished {
            c.on_done(done);
        }
    }
}

/// Queues `planned`, then the jobs of inputs read again that finished jobs gave meanwhile
/// (see [`Coordinator::conclude`]).
pub(super) fn send_jobs<T, F>(
    jobs: &Sender<Job>,
    planned: Vec<Job>,
    done: &Receiver<Vec<Done>>,
    c: &mut Coordinator<T, F>,
) where
    F: FnMut(T, Option<Result<FileDigest, InputError>>),
{
    let mut queue = planned;
    loop {
        for job in queue {
            send_job(jobs, job, done, c);
        }
        queue = std::mem::take(&mut c.again);
        if queue.is_empty() {
            return;
        }
    }
}

/// Handles finished jobs, queueing the jobs of inputs read again, until `enough` says so or a
/// worker died (and with it a job that will never be done).
pub(super) fn wait_until<T, F>(
    jobs: &Sender<Job>,
    done: &Receiver<Vec<Done>>,
    c: &mut Coordinator<T, F>,
    died: &AtomicBool,
    enough: impl Fn(&Coordinator<T, F>) -> bool,
) where
    F: FnMut(T, Option<Result<FileDigest, InputError>>),
{
    while !enough(c) && !died.load(Ordering::Relaxed) {
        let Ok(finished) = done.recv() else { return };
        for d in finished {
            c.on_done(d);
        }
        send_jobs(jobs, Vec::new(), done, c);
    }
}

/// One input whose jobs are under way.
struct Pending<T> {
    context: T,
    request: Request,
    file: Option<Arc<SharedFile>>,
    combiner: Combiner,
    remaining: usize,
    /// Bytes hashed so far (a stream's length is known only at its end).
    size: u64,
    leaves: Option<Vec<Option<Digest>>>,
    /// A task of a slice: every job's range and digest, in place of the combiner's fold.
    jobs: Option<Vec<Option<JobDigest>>>,
    error: Option<InputError>,
    started: Instant,
    /// The bytes of a stream held in memory to be hashed as a file (see [`hold_stream`]).
    held: u64,
}

type Outcome = Option<Result<FileDigest, InputError>>;

/// A job's byte range and digest.
type JobDigest = (Range<u64>, Digest);

/// Plans inputs into jobs, folds finished jobs, and hands results out in input order.
pub(super) struct Coordinator<T, F> {
    read_mode: ReadMode,
    /// Whether the workers hash one-message jobs in lanes.
    multi_buffer: bool,
    pending: HashMap<usize, Pending<T>>,
    /// Finished tasks waiting for an earlier one.
    ready: BTreeMap<usize, (T, Outcome)>,
    next_out: usize,
    sink: F,
    /// The bytes of streams held in memory by pending inputs.
    held: u64,
    /// The jobs of inputs read again, to be queued.
    again: Vec<Job>,
}

impl<T, F> Coordinator<T, F>
where
    F: FnMut(T, Outcome),
{
    pub(super) fn new(read_mode: ReadMode, multi_buffer: bool, sink: F) -> Coordinator<T, F> {
        Coordinator {
            read_mode,
            multi_buffer,
            pending: HashMap::new(),
            ready: BTreeMap::new(),
            next_out: 0,
            sink,
            held: 0,
            again: Vec::new(),
        }
    }

    /// Whether every input planned so far is done.
    pub(super) fn is_idle(&self) -> bool {
        self.pending.is_empty() && self.again.is_empty()
    }

    /// Whether the streams held in memory reach [`MAX_HELD_STREAM`]: then no input is
    /// opened until they are hashed, so that at most twice that is held at once.
    pub(super) fn holds_enough(&self) -> bool {
        self.held >= MAX_HELD_STREAM
    }

    /// Opens the input of task `index` and returns its jobs; a task that fails to open,
    /// has no job or no input is finished at once.
    pub(super) fn plan(&mut self, index: usize, task: Task<T>) -> Vec<Job> {
        let started = Instant::now();
        let Some((target, request)) = task.input else {
            self.emit(index, task.context, None);
            return Vec::new();
        };
        let opened = Input::open_with(&target, self.read_mode);
        self.plan_input(index, (task.context, request, task.slice), opened, started)
    }

    /// Returns the jobs of the input of task `index`, opened as `opened`.
    fn plan_input(
        &mut self,
        index: usize,
        (context, request, slice): (T, Request, Option<Slice>),
        opened: Result<Input, InputError>,
        started: Instant,
    ) -> Vec<Job> {
        let (layout, alg) = (request.layout, request.algorithm);
        let job = |index_in_input: usize, later, start: u64, kind, source| Job {
            input: index,
            index: index_in_input,
            later,
            start,
            layout,
            alg,
            kind,
            source,
        };
        let mut held = 0;
        let opened = match opened {
            // A layout that needs the length learns it by reading: a stream that ends soon
            // enough is held in memory and hashed as a file of that length.
            Ok(Input::Stream(mut stream)) if layout.needs_length() && slice.is_none() => {
                match hold_stream(&mut *stream, MAX_HELD_STREAM) {
                    Ok(Some(file)) => {
                        held = file.len();
                        Ok(Input::Sized(file))
                    }
                    Ok(None) => Err(InputError::StreamNeedsLength(layout.name())),
                    Err(e) => Err(e),
                }
            }
            other => other,
        };
        let (file, jobs) = match opened {
            Err(e) => return self.fail_now(index, context, e),
            Ok(Input::Stream(_)) if layout.needs_length() => {
                return self.fail_now(index, context, InputError::StreamNeedsLength(layout.name()));
            }
            Ok(Input::Stream(_)) if request.keep_leaves && layout.leaf_size().is_some() => {
                return self.fail_now(index, context, InputError::GraphOfStream);
            }
            Ok(Input::Stream(_)) if slice.is_some() => {
                return self.fail_now(index, context, InputError::RangeOfStream);
            }
            Ok(Input::Sized(file)) if slice.as_ref().is_some_and(|s| s.size != file.len()) => {
                return self.fail_now(index, context, InputError::Changed);
            }
            Ok(Input::Stream(reader)) => (
                None,
                vec![job(0, 0, 0, JobKind::Layout, JobSource::Stream(reader))],
            ),
            Ok(Input::Sized(file)) if layout.check_size(file.len()).is_err() => {
                let e = layout.check_size(file.len()).expect_err("checked");
                return self.fail_now(index, context, e.into());
            }
            Ok(Input::Sized(file)) => {
                // Leaves too long for `JobHasher`'s lanes within one read are jobs of their
                // own where the algorithm has lanes: then the workers' lanes take them.
                let lanes_take_leaves = self.multi_buffer
                    && layout
                        .leaf_size()
                        .is_some_and(|l| l.get() >= LANE_JOB_MIN_LEAF)
                    && Kernel::multi_buffer(alg).is_some();
                let mut plan =
                    layout.plan(alg, file.len(), request.keep_leaves || lanes_take_leaves);
                if let Some(slice) = &slice {
                    plan.retain(|(r, _)| slice.holds(r.start));
                }
                if request.keep_leaves && plan.len() > MAX_KEPT_LEAVES {
                    let e = InputError::TooManyLeaves {
                        leaves: plan.len(),
                        max: MAX_KEPT_LEAVES,
                    };
                    return self.fail_now(index, context, e);
                }
                let shared = Arc::new(SharedFile {
                    file,
                    failed: AtomicBool::new(false),
                });
                let count = plan.len();
                let jobs = plan
                    .into_iter()
                    .enumerate()
                    .map(|(i, (r, kind))| {
                        let source = JobSource::At(shared.clone(), r.end - r.start);
                        job(i, count - i - 1, r.start, kind, source)
                    })
                    .collect();
                (Some(shared), jobs)
            }
        };
        let pending = Pending {
            context,
            request,
            file,
            combiner: layout.combiner(alg),
            remaining: jobs.len(),
            size: 0,
            leaves: (request.keep_leaves && slice.is_none()).then(|| vec![None; jobs.len()]),
            jobs: slice.map(|_| vec![None; jobs.len()]),
            error: None,
            started,
            held,
        };
        self.held += held;
        if jobs.is_empty() {
            self.conclude(index, pending);
        } else {
            self.pending.insert(index, pending);
        }
        jobs
    }

    fn fail_now(&mut self, index: usize, context: T, error: InputError) -> Vec<Job> {
        self.emit(index, context, Some(Err(error)));
        Vec::new()
    }

    pub(super) fn on_done(&mut self, done: Done) {
        let p = self
            .pending
            .get_mut(&done.input)
            .expect("a job belongs to a pending input");
        match done.result {
            Err(e) => {
                if let Some(f) = &p.file {
                    f.failed.store(true, Ordering::Relaxed);
                }
                p.error.get_or_insert(e);
            }
            Ok((range, digest)) if p.error.is_none() => {
                p.size = p.size.max(range.end);
                if let Some(leaves) = &mut p.leaves {
                    leaves[done.index] = Some(digest);
                }
                match &mut p.jobs {
                    Some(jobs) => jobs[done.index] = Some((range, digest)),
                    None => p.combiner.add(done.index, range, digest),
                }
            }
            Ok(_) => {}
        }
        p.remaining -= 1;
        if p.remaining == 0 {
            let p = self.pending.remove(&done.input).expect("present");
            self.conclude(done.input, p);
        }
    }

    /// Emits the result of an input whose jobs are all done: its root, unless a job failed
    /// or the file changed meanwhile. A file that held other bytes than its size said (a file
    /// system that misreports it) is planned again as a stream read to its end, the jobs in
    /// `again`.
    fn conclude(&mut self, index: usize, p: Pending<T>) {
        self.held -= p.held;
        let of_slice = p.jobs.is_some();
        let unchanged = || match &p.file {
            Some(f) => f.file.check_unchanged(),
            None => Ok(()),
        };
        let result = match p.error {
            Some(e) => Err(e),
            None => unchanged().and_then(|()| {
                Ok(FileDigest {
                    // A slice has no root of its own; its caller reads `jobs`.
                    root: match p.jobs {
                        Some(_) => Root::new(Digest::from_slice(&[])),
                        None => p.combiner.finish(p.size)?,
                    },
                    size: p.size,
                    leaves: p.leaves.map(|l| l.into_iter().flatten().collect()),
                    elapsed: p.started.elapsed(),
                    fallback: p.file.as_ref().and_then(|f| f.file.fallback().cloned()),
                    jobs: p.jobs.map(|j| j.into_iter().flatten().collect()),
                })
            }),
        };
        if let (Err(InputError::SizeMisreported { .. }), Some(f), false) =
            (&result, &p.file, of_slice)
        {
            let stream = f.file.to_stream().map(Input::Stream);
            let jobs = self.plan_input(index, (p.context, p.request, None), stream, p.started);
            self.again.extend(jobs);
            return;
        }
        self.emit(index, p.context, Some(result));
    }

    fn emit(&mut self, index: usize, context: T, outcome: Outcome) {
        self.ready.insert(index, (context, outcome));
        while let Some((context, outcome)) = self.ready.remove(&self.next_out) {
            (self.sink)(context, outcome);
            self.next_out += 1;
        }
    }

    /// Reports every input still under way as failed: every job reports back unless a worker
    /// died, and its input is still reported.
    pub(super) fn report_lost(&mut self) {
        for (index, p) in std::mem::take(&mut self.pending) {
            let lost = std::io::Error::other("a worker thread stopped unexpectedly");
            self.emit(index, p.context, Some(Err(lost.into())));
        }
    }
}
