//! A reader's batch of inputs to open: it opens each, hands the jobs of a large one (or a
//! stream) back to the coordinator to be shared among every worker, and hashes a small one
//! whole itself.
//!
//! Opening on the workers spreads the `open` and `fstat` of many small files over every core
//! instead of one coordinator thread, and hashing a small file where it was opened costs it no
//! hand-off between threads at all: the reader and its hasher, and the coordinator, wake once
//! per batch, not once per file. The one-message jobs of small files go into a lane set of the
//! reader's own ([`ReaderLanes`]), a job manager in the manner of `lanes::hash_many`: a lane
//! whose message ends takes the next job at once, from this batch or the next one in the
//! queue, so that messages of any mix of lengths keep every lane busy. A reader gives the
//! unopened half of its batch back when another reader waits for work and none is queued.
//!
//! The price: a worker's hasher thread idles while its reader hashes small files, so with
//! fewer workers than cores (`-p 1` on two) small files take one core where reader and hasher
//! could take two; with a worker per core (the default) every core is busy, and the CPU time
//! is a quarter to a third lower (see `docs/performance-choices.md`, "Many files").

use std::collections::{HashSet, VecDeque};
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use super::hasher::Part;
use super::input::{Concluded, Fold, JobDigest, Opening, Planned, Unplanned};
use super::reader::{Reader, lane_chunk_size};
use super::side::Out;
use super::{Engine, Job, JobKey, JobSource, Opened, SharedFile};
use crate::lanes::{Event, Kernel, Lane, Lanes};
use crate::source::{InputError, RangeReader};

/// Inputs of at most this many bytes are hashed whole by the reader that opened them; the
/// jobs of larger ones are shared among every worker.
pub(super) const SMALL_INPUT: u64 = Engine::DEFAULT_CHUNK_SIZE as u64;

/// Reports on inputs per message to the coordinator.
const REPORT_BATCH: usize = 64;

/// The longest a report waits for its batch: results of small files read slowly (a rate
/// limit, a slow disk) reach the caller as they come, not 64 at a time; an audit records
/// them, and a `kill -9` then loses only what was read in the last moments.
const REPORT_WAIT: Duration = Duration::from_millis(100);

impl Reader {
    /// Opens the inputs of `batch`, and of the next batches of the queue while its lanes
    /// hash, and hashes the small ones; `None` when the pipeline shut down.
    pub(super) fn open_inputs(&mut self, batch: Vec<Opening>) -> Option<()> {
        let mut whole = Whole::new(self.opened.clone(), self.multi_buffer);
        let mut batch = VecDeque::from(batch);
        loop {
            whole.unreported.extend(batch.iter().map(|o| o.input));
            while let Some(opening) = batch.pop_front() {
                // Another reader waits for work and none is queued: it gets half of the rest.
                if batch.len() > 1 && self.opens.is_empty() && self.dealer.someone_idle() {
                    let half = batch.split_off(batch.len() / 2);
                    whole.report(Opened::Returned(half.into()))?;
                }
                let input = opening.input;
                let mut known = std::mem::take(&mut self.file_systems);
                let opened =
                    opening.open(self.read_mode, &mut known, &mut || self.hand_on(&mut whole));
                self.file_systems = known;
                match route(opened, self.multi_buffer) {
                    Route::Here(planned) => self.hash_whole(&mut whole, input, planned)?,
                    Route::Report(report) => whole.report(report)?,
                }
            }
            // The next batch keeps the lanes full, unless a job of a large input waits: the
            // input begun is done first.
            if !whole.lanes_busy() || !self.jobs.is_empty() {
                break;
            }
            match self.opens.try_recv() {
                Ok(more) => batch = more.into(),
                Err(_) => break,
            }
        }
        while whole.lanes_busy() {
            self.lane_event(&mut whole)?;
        }
        whole.send()
    }

    /// Hashes every job of the small input `input`: one-message jobs in the reader's lanes,
    /// others here and now as one stream each. Jobs that all go to lanes start together, so
    /// that one read gives each its first chunk (see [`RangeReader::next_chunks`]).
    fn hash_whole(&mut self, whole: &mut Whole, input: usize, planned: Planned) -> Option<()> {
        let Planned { jobs, fold } = planned;
        if fold.is_complete() {
            return whole.conclude(input, fold);
        }
        whole.folds.push((input, fold));
        let kernels: Vec<_> = jobs.iter().map(|job| self.lane_kernel(job)).collect();
        if let Some(Some(kernel)) = kernels.first()
            && kernels.iter().all(|k| k == &Some(*kernel))
            && jobs.len() <= kernel.lanes()
        {
            return self.start_in_lanes(whole, *kernel, jobs);
        }
        for (job, kernel) in jobs.into_iter().zip(kernels) {
            match kernel {
                Some(kernel) => self.start_in_lanes(whole, kernel, vec![job])?,
                None => {
                    let JobSource::At(shared, len) = &job.source else {
                        unreachable!("a small input is a file")
                    };
                    let result = self.hash_here(&job, shared, *len)?;
                    whole.job_done(job.input, job.index, result)?;
                }
            }
        }
        Some(())
    }

    /// Starts `jobs` (at most as many as `kernel` has lanes) in the reader's lanes for
    /// `kernel`, hashing until enough lanes are free, and gives them their first chunks.
    fn start_in_lanes(&mut self, whole: &mut Whole, kernel: Kernel, jobs: Vec<Job>) -> Option<()> {
        // One lane set at a time (inputs of other algorithms are rare: a sum file's lines),
        // so that the lanes never hold more buffers than one set has lanes.
        if whole
            .lanes
            .as_ref()
            .is_some_and(|l| l.set.kernel() != kernel)
        {
            while whole.lanes_busy() {
                self.lane_event(whole)?;
            }
            whole.lanes = None;
        }
        if whole.lanes.is_none() {
            let chunk = lane_chunk_size(kernel, self.chunk_size);
            whole.lanes = Some(ReaderLanes::new(kernel, chunk));
        }
        let free = |l: &ReaderLanes| kernel.lanes() - l.set.busy_lanes();
        while whole.lanes.as_ref().is_some_and(|l| free(l) < jobs.len()) {
            self.lane_event(whole)?;
        }
        let lanes = whole.lanes.as_mut().expect("the lane set");
        let first = lanes.jobs.len();
        for job in jobs {
            let JobSource::At(shared, len) = job.source else {
                unreachable!("lane jobs are ranges of files")
            };
            let prefix = job.layout.message_prefix(len).expect("a one-message job");
            let key = (job.input, job.index);
            let Ok(lane) = lanes.set.start_with_prefix(key, prefix) else {
                unreachable!("a lane is free")
            };
            lanes.jobs.push(LaneJob {
                key,
                lane,
                shared,
                start: job.start,
                pos: job.start,
                end: job.start + len,
                closed: false,
                error: None,
            });
        }
        self.feed(lanes, first..lanes.jobs.len())
    }

    /// Gives the jobs `at` of the lanes their next chunks, read together where they follow
    /// one another in a file, or ends a job's message once it has every byte (or a read
    /// failed). `None` when the pipeline shut down.
    fn feed(&mut self, lanes: &mut ReaderLanes, at: Range<usize>) -> Option<()> {
        let unread = |job: &LaneJob| {
            job.pos < job.end && job.error.is_none() && !job.shared.failed.load(Ordering::Relaxed)
        };
        let mut reading = Vec::with_capacity(at.len());
        for i in at.clone() {
            let job = &mut lanes.jobs[i];
            if unread(job)
                && let Err(e) = self.check_cancel()
            {
                job.error = Some(e);
            }
            if unread(job) {
                reading.push((i, Arc::clone(&job.shared)));
            }
        }
        let mut readers: Vec<_> = reading
            .iter()
            .map(|(i, shared)| {
                let job = &lanes.jobs[*i];
                let reader = shared.file.range_reader(job.pos..job.end, lanes.chunk);
                reader.staggered()
            })
            .collect();
        let buffers = (0..readers.len())
            .map(|_| self.next_buffer())
            .collect::<Option<Vec<_>>>()?;
        let chunks = RangeReader::next_chunks(&mut readers, buffers);
        for ((result, reader), (i, _)) in chunks.into_iter().zip(&readers).zip(&reading) {
            let job = &mut lanes.jobs[*i];
            match result {
                Ok(chunk) => {
                    job.pos = reader.position();
                    lanes.set.push(
                        job.lane,
                        Part {
                            key: job.key,
                            chunk,
                        },
                    );
                }
                Err((buf, e)) => {
                    self.spare.push(buf);
                    job.error = Some(e);
                }
            }
        }
        // The next chunk is read when this one is hashed: one chunk per lane in memory.
        for job in &mut lanes.jobs[at] {
            if !unread(job) {
                job.closed = true;
                lanes.set.finish(job.lane);
            }
        }
        Some(())
    }

    /// Finishes the inputs in the lanes and sends every report held, before the reader waits
    /// for an input (a FIFO without a writer), so that the results finished before it are
    /// printed meanwhile, not when the wait ends.
    fn hand_on(&mut self, whole: &mut Whole) {
        while whole.lanes_busy() {
            if self.lane_event(whole).is_none() {
                return;
            }
        }
        let _ = whole.send();
    }

    /// Hashes in the reader's lanes until a chunk is done with (its job gets the next one) or
    /// a message ends (its input's fold gets the digest). `None` when the pipeline shut down.
    fn lane_event(&mut self, whole: &mut Whole) -> Option<()> {
        let lanes = whole.lanes.as_mut().expect("the lane set");
        // Every busy lane has its next chunk or is finished, so no lane waits for bytes.
        match lanes.set.poll() {
            Some(Event::Consumed(part)) => {
                self.meter.count(part.chunk.len() as u64);
                let (buf, ok) = part.chunk.finish();
                self.spare.push(buf);
                let at = lanes.position(part.key);
                let job = &mut lanes.jobs[at];
                if let Err(e) = ok {
                    job.error.get_or_insert(e);
                }
                if job.closed {
                    return Some(());
                }
                self.feed(lanes, at..at + 1)
            }
            Some(Event::Finished(key, digest)) => {
                let at = lanes.position(key);
                let job = lanes.jobs.swap_remove(at);
                let result = match job.error {
                    Some(e) => Err(e),
                    None => Ok((job.start..job.pos, Out::One(digest))),
                };
                whole.job_done(key.0, key.1, result)
            }
            None => unreachable!("a busy lane has bytes or is finished"),
        }
    }
}

/// What a reader holds of the inputs it opened: those being hashed, and the reports not yet
/// sent.
struct Whole {
    lanes: Option<ReaderLanes>,
    /// The small inputs being hashed (a few: as many as the lanes hold), by input.
    folds: Vec<(usize, Fold)>,
    reports: Vec<Opened>,
    /// When the oldest report of `reports` was queued.
    since: Option<Instant>,
    /// The inputs taken whose report is not sent yet: a reader that stops early reports them
    /// lost, so that the coordinator never waits for them.
    unreported: HashSet<usize>,
    out: Sender<Vec<Opened>>,
    /// Whether the workers hash one-message jobs in lanes, for planning.
    multi_buffer: bool,
}

impl Whole {
    fn new(out: Sender<Vec<Opened>>, multi_buffer: bool) -> Whole {
        Whole {
            lanes: None,
            folds: Vec::new(),
            reports: Vec::new(),
            since: None,
            unreported: HashSet::new(),
            out,
            multi_buffer,
        }
    }

    fn lanes_busy(&self) -> bool {
        self.lanes.as_ref().is_some_and(|l| !l.jobs.is_empty())
    }

    /// Takes in the result of job `index` of the small input `input`, and reports the input
    /// once every job is in. `None` when the coordinator is gone.
    fn job_done(
        &mut self,
        input: usize,
        index: usize,
        result: Result<JobDigest, InputError>,
    ) -> Option<()> {
        let at = self
            .folds
            .iter()
            .position(|(i, _)| *i == input)
            .expect("a small input being hashed");
        let fold = &mut self.folds[at].1;
        fold.add(index, result);
        if !fold.is_complete() {
            return Some(());
        }
        let (_, fold) = self.folds.swap_remove(at);
        self.conclude(input, fold)
    }

    /// Reports the result of the small input `input`, whose jobs are all in; or, for a file
    /// that held other bytes than its size said, hands it to the coordinator opened again as
    /// a stream (which is never small).
    fn conclude(&mut self, input: usize, fold: Fold) -> Option<()> {
        let report = match fold.conclude(input) {
            Concluded::Result(result) => Opened::Hashed { input, result },
            Concluded::Again(stream) => match route(stream, self.multi_buffer) {
                Route::Here(planned) => Opened::Shared { input, planned },
                Route::Report(report) => report,
            },
        };
        self.report(report)
    }

    /// Queues a report, sending the queue when it is a batch. An input for the coordinator
    /// to share or hold goes at once, so that the other workers start on it.
    fn report(&mut self, report: Opened) -> Option<()> {
        let now = !matches!(report, Opened::Hashed { .. });
        self.reports.push(report);
        let since = *self.since.get_or_insert_with(Instant::now);
        if now || self.reports.len() >= REPORT_BATCH || since.elapsed() >= REPORT_WAIT {
            return self.send();
        }
        Some(())
    }

    /// Sends the reports queued; `None` when the coordinator is gone.
    fn send(&mut self) -> Option<()> {
        if self.reports.is_empty() {
            return Some(());
        }
        for report in &self.reports {
            report.for_each_input(|input| self.unreported.remove(&input));
        }
        self.since = None;
        self.out.send(std::mem::take(&mut self.reports)).ok()
    }
}

impl Drop for Whole {
    /// A reader that stops early (its hasher died, or it panicked) still reports every input
    /// it took: what it has, and the others as lost.
    fn drop(&mut self) {
        let mut reports = std::mem::take(&mut self.reports);
        for report in &reports {
            report.for_each_input(|input| self.unreported.remove(&input));
        }
        reports.extend(self.unreported.drain().map(|input| Opened::Lost { input }));
        if !reports.is_empty() {
            let _ = self.out.send(reports);
        }
    }
}

impl Opened {
    /// Calls `f` with every input reported on.
    fn for_each_input(&self, mut f: impl FnMut(usize) -> bool) {
        match self {
            Opened::Shared { input, .. }
            | Opened::Hashed { input, .. }
            | Opened::Lost { input } => _ = f(*input),
            Opened::Hold(stream) => _ = f(stream.input),
            Opened::Returned(openings) => openings.iter().for_each(|o| _ = f(o.input)),
        }
    }
}

/// What a reader does with an input it opened.
enum Route {
    /// Hash it here: a small file.
    Here(Planned),
    /// Tell the coordinator: the jobs of a large input or a stream, to share among every
    /// worker; a stream to hold in memory first; or why the input cannot be hashed.
    Report(Opened),
}

fn route(opened: Unplanned, multi_buffer: bool) -> Route {
    let input = opened.input;
    if opened.must_be_held() {
        return Route::Report(Opened::Hold(opened));
    }
    match opened.plan(multi_buffer) {
        Ok(planned) if planned.fold.file_len().is_some_and(|n| n <= SMALL_INPUT) => {
            Route::Here(planned)
        }
        Ok(planned) => Route::Report(Opened::Shared { input, planned }),
        Err(e) => Route::Report(Opened::Hashed {
            input,
            result: Err(e),
        }),
    }
}

/// The reader's own lane set, for the one-message jobs of small inputs.
struct ReaderLanes {
    set: Lanes<JobKey, Part>,
    /// Bytes per read, as for the hasher's lanes.
    chunk: usize,
    /// The jobs in the lanes, in no order (a look through a few costs less than hashing a
    /// key). A job leaves when its digest comes, which may be after its lane took the next.
    jobs: Vec<LaneJob>,
}

impl ReaderLanes {
    fn new(kernel: Kernel, chunk: usize) -> ReaderLanes {
        ReaderLanes {
            set: Lanes::with_kernel(kernel),
            chunk,
            jobs: Vec::with_capacity(kernel.lanes()),
        }
    }

    /// Where job `key` is in `jobs`.
    fn position(&self, key: JobKey) -> usize {
        self.jobs
            .iter()
            .position(|j| j.key == key)
            .expect("a job in a lane")
    }
}

/// A job in one of the reader's lanes.
struct LaneJob {
    key: JobKey,
    lane: Lane,
    shared: Arc<SharedFile>,
    start: u64,
    /// The next byte to read.
    pos: u64,
    end: u64,
    /// Every chunk is pushed: the lane's message is finished.
    closed: bool,
    error: Option<InputError>,
}
