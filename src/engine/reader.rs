//! The reader half of a worker: takes jobs from the shared queue and reads them ahead of its
//! hasher, one job as a stream of chunks, or many one-message jobs in rounds for SIMD lanes.

use std::io::Read;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crossbeam_channel::{Receiver, Select, Sender};

use super::hasher::absorb;
use super::pace::Meter;
use super::side::Out;
use super::{Done, Job, JobSource, LaneOp, Msg, Opened, Opening, SharedFile, is_set};
use crate::lanes::Kernel;
use crate::source::{Buffer, FileSystems, InputError, ReadMode, read_stream_chunk};

/// Bytes of buffers per worker for jobs in lanes: two rounds of one chunk per lane (so that
/// reading one round overlaps hashing the other). 8 MiB gives MD5's 16 lanes 256 KiB reads.
const LANE_BUFFER_BUDGET: usize = 8 << 20;

/// The reader half of a worker.
pub(super) struct Reader {
    pub(super) jobs: Receiver<Job>,
    /// Batches of inputs to open.
    pub(super) opens: Receiver<Vec<Opening>>,
    pub(super) chunk_size: usize,
    /// Bytes per read of a file when this reader is the only one busy.
    pub(super) solo_chunk_size: usize,
    /// Readers with a job in hand, this one included while it has one.
    pub(super) busy: Arc<AtomicUsize>,
    /// Shared by the readers: who takes jobs for lanes, and who waits for work.
    pub(super) dealer: Arc<Dealer>,
    /// How the files this reader opens are read.
    pub(super) read_mode: ReadMode,
    /// The file systems of the files this reader opened.
    pub(super) file_systems: FileSystems,
    /// Whether jobs that are one message each may be hashed in SIMD lanes.
    pub(super) multi_buffer: bool,
    /// Buffers back from the hasher, in batches.
    pub(super) free: Receiver<Vec<Buffer>>,
    /// Buffers to read into, reused last in, first out: a worker allocates only as many
    /// buffers as it keeps in flight (a few one at a time, two rounds of its lanes).
    pub(super) spare: Vec<Buffer>,
    /// Buffers of the worker, in `spare` or away.
    pub(super) buffers: usize,
    pub(super) out: Sender<Msg>,
    pub(super) done: Sender<Vec<Done>>,
    /// Reports on the inputs this reader opened.
    pub(super) opened: Sender<Vec<Opened>>,
    /// Counts the bytes hashed here: progress, rate limit.
    pub(super) meter: Meter,
    /// The engine's cancel flag: set, every job still read fails with `Interrupted`.
    pub(super) cancel: Option<Arc<AtomicBool>>,
}

impl Reader {
    /// Takes work until the coordinator has no more; returns early when the pipeline shut
    /// down (the hasher or the coordinator is gone).
    pub(super) fn run(mut self) -> Option<()> {
        let dealer = Arc::clone(&self.dealer);
        let mut next = None;
        loop {
            // The turn first, then the queue: a reader that starts lanes takes its hand while
            // the others wait, rather than each taking one job of a file in turn. A reader is
            // idle from its start (the engine counts it) until it has a job. One that has a
            // job already does not wait for the turn: its holder may be waiting for the next.
            let (turn, work) = match next.take() {
                // A job carried over from other lanes has lost its file's next jobs to other
                // readers meanwhile: waiting for them (`Job::later`) could wait forever.
                Some(job) => (dealer.try_turn(), Work::Job(Job { later: 0, ..job })),
                None => {
                    let turn = dealer.turn();
                    let work = self.next_work();
                    dealer.idle.fetch_sub(1, Ordering::Relaxed);
                    (Some(turn), work?)
                }
            };
            self.busy.fetch_add(1, Ordering::Relaxed);
            match work {
                Work::Open(batch) => {
                    drop(turn);
                    self.open_inputs(batch)?;
                }
                Work::Job(job) => match self.lane_kernel(&job).filter(|_| self.has_company(&job)) {
                    Some(kernel) => next = self.read_lanes(kernel, job, turn)?,
                    None => {
                        drop(turn);
                        self.read_job(job)?
                    }
                },
            }
            self.busy.fetch_sub(1, Ordering::Relaxed);
            if next.is_none() {
                dealer.idle.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The next work: a job of an input under way before a batch of inputs to open, so that
    /// a file begun is done first. `None` once the coordinator closed both queues and they
    /// are empty.
    fn next_work(&self) -> Option<Work> {
        if let Ok(job) = self.jobs.try_recv() {
            return Some(Work::Job(job));
        }
        let mut select = Select::new();
        let jobs = select.recv(&self.jobs);
        select.recv(&self.opens);
        let op = select.select();
        // The coordinator closes both at once: once one is closed and empty, only what is
        // left in the other comes.
        if op.index() == jobs {
            match op.recv(&self.jobs) {
                Ok(job) => Some(Work::Job(job)),
                Err(_) => self.opens.recv().ok().map(Work::Open),
            }
        } else {
            match op.recv(&self.opens) {
                Ok(batch) => Some(Work::Open(batch)),
                Err(_) => self.jobs.recv().ok().map(Work::Job),
            }
        }
    }

    /// `Interrupted` once the engine is cancelled, checked before every read. (Skipping the
    /// job quietly, as `failed` does, would hand its input a digest of a part.)
    pub(super) fn check_cancel(&self) -> Result<(), InputError> {
        if is_set(self.cancel.as_deref()) {
            return Err(InputError::Interrupted);
        }
        Ok(())
    }

    /// Whether `job` has company for lanes: more jobs queued, or still to come from its file,
    /// than readers waiting for work. Lanes pay only with company, and a reader per job
    /// hashes faster still: a job alone (one big file with `plain`, the second of two leaves
    /// when another reader is idle) goes to the fastest single stream instead of one lane of
    /// many, which for MD5 is 0.54 GB/s against 0.75 (see `docs/performance.md`).
    fn has_company(&self, job: &Job) -> bool {
        let company = self.jobs.len().max(job.later);
        company > self.dealer.idle()
    }

    /// The next free buffer, the most recently returned first; `None` when the hasher is gone.
    pub(super) fn next_buffer(&mut self) -> Option<Buffer> {
        self.next_buffer_within(self.buffers)
    }

    /// The next free buffer once fewer than `limit` are away (in chunks in flight or in the
    /// hasher's lanes): lanes keep two rounds away, whatever the depth of the channel, so
    /// that their memory stays within [`LANE_BUFFER_BUDGET`].
    fn next_buffer_within(&mut self, limit: usize) -> Option<Buffer> {
        self.spare.extend(self.free.try_iter().flatten());
        while self.spare.is_empty() || self.buffers - self.spare.len() >= limit {
            self.spare.extend(self.free.recv().ok()?);
        }
        self.spare.pop()
    }

    /// The multi-buffer kernel for `job`, if it is one message of a sized file and its
    /// algorithm has such a kernel on this CPU.
    pub(super) fn lane_kernel(&self, job: &Job) -> Option<Kernel> {
        let JobSource::At(_, len) = &job.source else {
            return None;
        };
        if job.side.is_some() {
            return None;
        }
        job.layout.message_prefix(*len)?;
        Kernel::multi_buffer(job.alg).filter(|_| self.multi_buffer)
    }

    /// Reads one job alone: chunks to the hasher, or hashed right here, where handing it over
    /// would cost more in wake-ups than it gains. That is a job of at most one chunk (a
    /// small file, an empty leaf), and any job while the busy workers already fill the
    /// cores: the hasher's thread has no core of its own then, and the hand-over of every
    /// chunk only adds wake-ups and copies that leave the cache on the same cores (`-p 2`
    /// on 2 cores, fixed leaves of 1 and 4 KiB, 2 GiB: 4–7 % faster and 3–5 % less CPU for
    /// MD5, SHA-256, SHA-512 and BLAKE3).
    fn read_job(&mut self, job: Job) -> Option<()> {
        if let JobSource::At(shared, len) = &job.source
            && (*len <= self.chunk_size as u64
                || !self.dealer.workers_fit(self.busy.load(Ordering::Relaxed)))
        {
            let result = self.hash_here(&job, shared, *len)?;
            let (input, index) = (job.input, job.index);
            return self
                .done
                .send(vec![Done {
                    input,
                    index,
                    result,
                }])
                .ok();
        }
        let hashing = job.hashing(self.hashing_width(), self.multi_buffer);
        self.out.send(Msg::Begin(Box::new(hashing))).ok()?;
        let chunk = self.file_chunk_size();
        let spread = spread_for(&job, chunk);
        let result = match job.source {
            JobSource::At(shared, len) => {
                let range = job.start..job.start + len;
                self.read_range(&shared, range, chunk, spread)?
            }
            JobSource::Stream(reader) => self.read_stream(reader)?,
        };
        let end = Msg::End {
            input: job.input,
            index: job.index,
            start: job.start,
            result,
        };
        self.out.send(end).ok()
    }

    /// Reads `job`, the `len` bytes of `shared`'s file from its start, into a hasher of its
    /// own, here and now rather than through this worker's hasher thread (see
    /// [`Reader::read_job`]), its leaves laid out for the lanes where that pays
    /// ([`spread_for`]): the job's range and digest, or why not; `None` when the pipeline
    /// shut down.
    pub(super) fn hash_here(
        &mut self,
        job: &Job,
        shared: &SharedFile,
        len: u64,
    ) -> Option<Result<(Range<u64>, Out), InputError>> {
        let mut hasher = job.hashing(self.hashing_width(), self.multi_buffer);
        let (start, chunk) = (job.start, self.chunk_size);
        let mut reader = shared.file.range_reader(start..start + len, chunk);
        if let Some(piece) = spread_for(job, chunk) {
            reader = reader.spread(piece);
        }
        while !reader.is_done() && !shared.failed.load(Ordering::Relaxed) {
            if let Err(e) = self.check_cancel() {
                return Some(Err(e));
            }
            let (buf, ok) = match reader.next_chunk(self.next_buffer()?) {
                Ok(chunk) => absorb(&mut hasher, chunk, &self.meter),
                Err((buf, e)) => (buf, Err(e)),
            };
            self.spare.push(buf);
            if let Err(e) = ok {
                return Some(Err(e));
            }
        }
        Some(Ok((start..reader.position(), hasher.finalize())))
    }

    /// The threads a job's hasher may share its layouts among (a job with side outputs):
    /// the engine's threads, up to its cores, shared among the busy readers' jobs.
    fn hashing_width(&self) -> usize {
        let busy = self.busy.load(Ordering::Relaxed).max(1);
        (self.dealer.cores.min(self.dealer.threads) / busy).max(1)
    }

    /// Bytes per read of a job of a file hashed as one stream.
    fn file_chunk_size(&self) -> usize {
        if self.busy.load(Ordering::Relaxed) == 1 {
            self.solo_chunk_size
        } else {
            self.chunk_size
        }
    }

    /// Reads `range` of a file as chunks of `chunk` bytes to the hasher, laid out in pieces
    /// of `spread` bytes if given ([`crate::source::RangeReader::spread`]): the bytes read, or
    /// why not; `None` when the pipeline shut down.
    fn read_range(
        &mut self,
        shared: &SharedFile,
        range: Range<u64>,
        chunk: usize,
        spread: Option<NonZeroUsize>,
    ) -> Option<Result<u64, InputError>> {
        let start = range.start;
        let mut reader = shared.file.range_reader(range, chunk);
        if let Some(piece) = spread {
            reader = reader.spread(piece);
        }
        while !reader.is_done() && !shared.failed.load(Ordering::Relaxed) {
            if let Err(e) = self.check_cancel() {
                return Some(Err(e));
            }
            match reader.next_chunk(self.next_buffer()?) {
                Ok(chunk) => self.out.send(Msg::Chunk(chunk)).ok()?,
                Err((buf, e)) => {
                    self.spare.push(buf);
                    return Some(Err(e));
                }
            }
        }
        Some(Ok(reader.position() - start))
    }

    /// Reads a stream to its end as chunks to the hasher; `None` when the pipeline shut down.
    fn read_stream(&mut self, mut reader: Box<dyn Read + Send>) -> Option<Result<u64, InputError>> {
        let mut done = 0;
        loop {
            if let Err(e) = self.check_cancel() {
                return Some(Err(e));
            }
            match read_stream_chunk(&mut *reader, self.next_buffer()?, self.chunk_size) {
                Ok(chunk) if chunk.is_empty() => {
                    self.spare.push(chunk.finish().0);
                    return Some(Ok(done));
                }
                Ok(chunk) => {
                    done += chunk.len() as u64;
                    self.out.send(Msg::Chunk(chunk)).ok()?;
                }
                Err((buf, e)) => {
                    self.spare.push(buf);
                    return Some(Err(e));
                }
            }
        }
    }

    /// Reads jobs for `kernel`'s lanes, starting with `first`: each round reads one chunk of
    /// every job in a slot, so that all lanes have bytes to hash at once, and refills the
    /// slots that emptied with the next jobs of the queue (see [`Reader::take_jobs`]), in the
    /// dealer's turn: the first hand in `turn` if the reader has it. Returns when every slot
    /// is empty and the queue has no job for these lanes, with the job taken that is for other
    /// ones; `None` when the pipeline shut down.
    fn read_lanes(
        &mut self,
        kernel: Kernel,
        first: Job,
        turn: Option<MutexGuard<'_, ()>>,
    ) -> Option<Option<Job>> {
        let dealer = Arc::clone(&self.dealer);
        let mut slots: Vec<Option<LaneRead>> = (0..kernel.lanes()).map(|_| None).collect();
        let mut round = Vec::new();
        let mut other = None;
        // The jobs of `first`'s file are shared with the readers waiting for work where that
        // is faster: this reader takes no more than its share while they wait. But where the
        // busy workers already fill the cores, a kernel whose whole round costs less CPU per
        // lane than its narrower kernel's keeps the jobs and fills every lane: a second
        // reader would add its copy and a slower kernel on the same cores
        // (`MTSUM_SIMD=avx2 mtsum -p 2 -a md5`, 2 GiB, 2 cores, medians of 11 runs in turn:
        // 0.405 → 0.330 s, 783 → 614 ms of CPU; 4 GiB, whose 32 leaves fill both readers'
        // lanes, level).
        let keep =
            kernel.keeps_lanes() && !dealer.workers_fit(self.busy.load(Ordering::Relaxed) + 1);
        let hand = match first.later {
            0 => slots.len(),
            _ if keep => slots.len(),
            later => kernel.share((later + 1).min(slots.len()), dealer.idle() + 1),
        };
        let unit = if keep {
            slots.len()
        } else {
            kernel.min_lanes()
        };
        match turn {
            Some(_turn) => {
                other = self.take_jobs(kernel, &mut slots, &mut round, Some(first), (unit, hand))
            }
            None => open_lane(&mut slots, 0, first, &mut round),
        }
        loop {
            // Refill only in the turn, and never wait for it: the reader that holds it may be
            // taking a hand that these lanes should leave alone.
            if other.is_none()
                && let Some(_turn) = dealer.try_turn()
            {
                other = self.take_jobs(kernel, &mut slots, &mut round, None, (unit, hand));
            }
            if slots.iter().all(Option::is_none) {
                return Some(other);
            }
            for (slot, entry) in slots.iter_mut().enumerate() {
                let Some(read) = entry else { continue };
                if let Some(result) = self.read_lane(slot, read, kernel, &mut round)? {
                    round.push(LaneOp::Close { slot, result });
                    *entry = None;
                }
            }
            // One message per round: the hasher wakes once for all the lanes' chunks.
            let ops = std::mem::take(&mut round);
            self.out.send(Msg::Round(kernel, ops)).ok()?;
        }
    }

    /// Opens jobs in the free lane slots, in the dealer's turn: `first`, if given, then jobs
    /// of the queue, while they are for `kernel`. Lanes fill in units of `unit` lanes
    /// ([`Kernel::min_lanes`]: 16 for MD5's 32 AVX-512 lanes, 8 for SHA-256's and SHA-512's
    /// 16; every lane where the kernel keeps them, see [`Reader::read_lanes`]), with `hand`
    /// the most to take while others wait: a unit begun is filled, but a new one is begun only while no other reader
    /// waits for work, so that the 16 leaves of a 2 GiB `mtsum` file fill one reader's 16
    /// MD5 lanes rather than half of two readers' each, which cost twice the CPU, while the
    /// 32 of a 4 GiB file still spread 16 and 16. While others wait, no more than `hand`
    /// are taken, the share of a file's jobs that [`Kernel::share`] deals this reader: the 8
    /// SHA-256 leaves of a 1 GiB file go 4 and 4, which pairs of SHA-NI streams hash in half
    /// the time of 8 on one reader. The first hand waits for the jobs of
    /// `first`'s file that the coordinator queues right after it ([`Job::later`]): taking
    /// only those already queued split a file between readers that woke at the same time.
    /// Returns a job taken that is for other lanes.
    fn take_jobs(
        &mut self,
        kernel: Kernel,
        slots: &mut [Option<LaneRead>],
        round: &mut Vec<LaneOp>,
        first: Option<Job>,
        (unit, hand): (usize, usize),
    ) -> Option<Job> {
        let awaited_input = first.as_ref().map(|job| job.input);
        let mut awaited = first
            .as_ref()
            .map_or(0, |job| job.later.min(unit.min(hand) - 1));
        let mut next = first;
        while let Some(slot) = slots.iter().position(Option::is_none) {
            if next.is_none() {
                let held = slots.iter().flatten().count();
                if held > 0 && (held.is_multiple_of(unit) || held >= hand) && self.dealer.idle() > 0
                {
                    return None;
                }
                next = if awaited > 0 {
                    awaited -= 1;
                    self.jobs.recv().ok()
                } else {
                    self.jobs.try_recv().ok()
                };
            }
            let job = next.take()?;
            if self.lane_kernel(&job) != Some(kernel) {
                return Some(job);
            }
            if Some(job.input) != awaited_input {
                // Not the file's next job: the coordinator queues another input now.
                awaited = 0;
            }
            open_lane(slots, slot, job, round);
        }
        None
    }

    /// Reads the next chunk of the job in lane slot `slot` into `round`. Returns how the
    /// job ended, if it did: all read (or given up because another job of the input failed),
    /// or why not; `None` when the pipeline shut down.
    fn read_lane(
        &mut self,
        slot: usize,
        read: &mut LaneRead,
        kernel: Kernel,
        round: &mut Vec<LaneOp>,
    ) -> Option<Option<Result<u64, InputError>>> {
        if read.pos < read.end && !read.shared.failed.load(Ordering::Relaxed) {
            if let Err(e) = self.check_cancel() {
                return Some(Some(Err(e)));
            }
            let chunk = lane_chunk_size(kernel, self.chunk_size);
            let mut reader = read
                .shared
                .file
                .range_reader(read.pos..read.end, chunk)
                .staggered();
            let buffer = self.next_buffer_within(2 * kernel.lanes())?;
            match reader.next_chunk(buffer) {
                Ok(part) => {
                    read.pos = reader.position();
                    round.push(LaneOp::Part { slot, chunk: part });
                }
                Err((buf, e)) => {
                    self.spare.push(buf);
                    return Some(Some(Err(e)));
                }
            }
        }
        let ended = read.pos >= read.end || read.shared.failed.load(Ordering::Relaxed);
        Some(ended.then(|| Ok(read.pos - read.start)))
    }
}

/// Opens `job`, one message of a file, in the free lane slot `slot`.
fn open_lane(slots: &mut [Option<LaneRead>], slot: usize, job: Job, round: &mut Vec<LaneOp>) {
    let JobSource::At(shared, len) = job.source else {
        unreachable!("lane jobs are ranges of files")
    };
    let prefix = job.layout.message_prefix(len).expect("a one-message job");
    round.push(LaneOp::Open {
        slot,
        key: (job.input, job.index),
        start: job.start,
        prefix,
    });
    slots[slot] = Some(LaneRead {
        shared,
        pos: job.start,
        start: job.start,
        end: job.start + len,
    });
}

/// What the readers of one run share to deal jobs for lanes among themselves.
pub(super) struct Dealer {
    /// Held by the reader that takes jobs for lanes, and by one waiting for a job.
    turn: Mutex<()>,
    /// Readers waiting for a job: the others leave jobs to them rather than begin more lanes.
    idle: AtomicUsize,
    /// The cores the readers and hashers run on ([`crate::Engine::with_cores`]).
    cores: usize,
    /// The workers asked for ([`crate::engine::Engine::new`]).
    threads: usize,
}

impl Dealer {
    /// A dealer for `threads` readers on `cores` cores.
    pub(super) fn new(cores: NonZeroUsize, threads: NonZeroUsize) -> Dealer {
        Dealer {
            turn: Mutex::default(),
            idle: AtomicUsize::default(),
            cores: cores.get(),
            threads: threads.get(),
        }
    }

    /// Whether `busy` busy workers (a reader and its hasher each) find cores of their own.
    fn workers_fit(&self, busy: usize) -> bool {
        2 * busy <= self.cores
    }

    /// Counts a reader about to start, idle until it takes its first job.
    pub(super) fn enlist(&self) {
        self.idle.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether a reader waits for work.
    pub(super) fn someone_idle(&self) -> bool {
        self.idle() > 0
    }

    /// How many readers wait for work.
    fn idle(&self) -> usize {
        self.idle.load(Ordering::Relaxed)
    }

    /// Uncounts a reader that did not start after all.
    pub(super) fn discharge(&self) {
        self.idle.fetch_sub(1, Ordering::Relaxed);
    }

    fn turn(&self) -> MutexGuard<'_, ()> {
        // The mutex guards no data, so a reader that panicked holding it leaves nothing
        // half-done.
        self.turn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn try_turn(&self) -> Option<MutexGuard<'_, ()>> {
        match self.turn.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

/// What a reader takes from the queues.
enum Work {
    Job(Job),
    /// Inputs to open ([`Reader::open_inputs`]).
    Open(Vec<Opening>),
}

/// A job in one of a reader's lane slots.
struct LaneRead {
    shared: Arc<SharedFile>,
    start: u64,
    /// The next byte to read.
    pos: u64,
    end: u64,
}

/// Leaves are read spread only if they are whole pages: then the kernel copies each page of
/// the file into one iovec. Smaller leaves split every page into several, which cost the
/// reader more than the lanes gained: `-p 2 -a md5 -t rfc6962`, 2 GiB, medians of 5,
/// hasher/reader CPU ms, 1 KiB leaves 400/278 → 406/376, 2 KiB 332/280 → 304/314, 4 KiB
/// 351/272 → 305/278 (see `docs/performance-choices.md`, "Chunks of leaves read a line apart").
const SPREAD_LEAF_UNIT: usize = 4 << 10;

/// The pieces to spread the chunks of `chunk` bytes of `job` in
/// ([`crate::source::RangeReader::spread`]), if its hasher hashes whole leaves side by side
/// in lanes ([`Layout::lane_leaf`]): its leaves, if they are whole pages
/// ([`SPREAD_LEAF_UNIT`]) and divide the chunk, so that every chunk of the job (which starts
/// on a leaf) starts on a leaf too.
///
/// [`Layout::lane_leaf`]: crate::layout::Layout::lane_leaf
fn spread_for(job: &Job, chunk: usize) -> Option<NonZeroUsize> {
    if job.side.is_some() {
        return None;
    }
    let leaf = job.layout.lane_leaf(job.alg, job.kind)?.get();
    let leaf = usize::try_from(leaf).ok()?;
    (leaf.is_multiple_of(SPREAD_LEAF_UNIT) && chunk.is_multiple_of(leaf))
        .then_some(leaf)
        .and_then(NonZeroUsize::new)
}

/// Bytes per read for jobs in lanes: two rounds of every lane in flight stay within
/// [`LANE_BUFFER_BUDGET`], and never more than the engine's chunk size.
pub(super) fn lane_chunk_size(kernel: Kernel, chunk_size: usize) -> usize {
    (LANE_BUFFER_BUDGET / (2 * kernel.lanes())).min(chunk_size)
}
