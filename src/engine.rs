//! The engine: hashes the jobs of many inputs on a pool of workers and folds each input's
//! job digests into its root, handing results back in input order.
//!
//! Each worker is a pair of threads joined by a short pipeline of buffers: a *reader* that
//! takes the next job from the shared queue and reads its chunks ahead (positioned reads, so
//! workers never share a file offset; or `O_DIRECT` reads, or mapped windows: see
//! [`ReadMode`]), and a *hasher* that only hashes. Reading therefore never stalls hashing,
//! and memory is bounded by `threads × read_ahead × chunk_size` whatever the file or leaf
//! size: a 128 MiB leaf is hashed as a stream of chunks. (A reader alone reads larger chunks:
//! see [`Engine::SOLO_CHUNK_SIZE`].)
//!
//! One queue serves all inputs: a huge file spreads its jobs over every worker, small files
//! are hashed side by side, and the root never depends on which worker hashed what, because
//! [`Combiner`] folds by job index.
//!
//! Jobs that are one message each (the leaves of `mtsum`, whole files with `plain`) go into
//! SIMD lanes when others wait behind them ([`crate::lanes`]): the reader takes as many jobs
//! as its kernel has lanes and reads in rounds, one chunk of each, which its hasher runs
//! through one lane set, so that one core hashes 2 to 32 messages at once.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Select, Sender, bounded, unbounded};

use crate::algorithm::{Algorithm, Digest};
use crate::lanes::{self, Event, Kernel, Lane, Lanes};
use crate::layout::{Combiner, JobHasher, JobKind, Layout, Root};
use crate::source::{
    Buffer, Chunk, Fallback, Input, InputError, ReadMode, SizedFile, Target, read_stream_chunk,
};

/// The shortest fixed leaf that is a job of its own when its algorithm has lanes: a 1 MiB
/// read holds fewer than four such leaves whole, too few for `JobHasher` to hash them in lanes
/// within the read, so they would each be one stream.
const LANE_JOB_MIN_LEAF: u64 = (Engine::DEFAULT_CHUNK_SIZE / 4) as u64 + 1;

/// The most jobs queued for the workers: each holds an open file.
const MAX_QUEUED_JOBS: usize = 256;

/// Bytes of buffers per worker for jobs in lanes: two rounds of one chunk per lane (so that
/// reading one round overlaps hashing the other). 8 MiB gives MD5's 16 lanes 256 KiB reads.
const LANE_BUFFER_BUDGET: usize = 8 << 20;

/// The most leaves a tree may have when its leaf digests are kept (for drawing it).
pub const MAX_KEPT_LEAVES: usize = 1 << 16;

/// What to compute for every input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub layout: Layout,
    pub algorithm: Algorithm,
    /// Also return every leaf digest (at most [`MAX_KEPT_LEAVES`]), to draw the tree.
    pub keep_leaves: bool,
}

impl Request {
    /// A request for the root only.
    pub fn new(layout: Layout, algorithm: Algorithm) -> Request {
        Request {
            layout,
            algorithm,
            keep_leaves: false,
        }
    }
}

/// The result of hashing one input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDigest {
    /// The layout's value for the input, printed as its storage system shows it.
    pub root: Root,
    /// Bytes hashed.
    pub size: u64,
    /// The leaf digests in order, when [`Request::keep_leaves`] asked for them.
    pub leaves: Option<Vec<Digest>>,
    /// From opening the input to its root.
    pub elapsed: Duration,
    /// The engine's [`ReadMode`] that this input refused, and what it was read with instead
    /// (`O_DIRECT` on tmpfs, say), for a note under `--verbose`.
    pub fallback: Option<Fallback>,
    /// For a task of [`Engine::hash_jobs_in`]: its jobs' ranges and digests, in order (the
    /// root is then not computed). Private, so that only that method makes such a result.
    jobs: Option<Vec<(Range<u64>, Digest)>>,
}

/// A pool of workers; cheap to create, threads live only during a call.
#[derive(Clone, Debug)]
pub struct Engine {
    threads: NonZeroUsize,
    /// Bytes per read or mapped window; `None` for the default of the read mode.
    chunk_size: Option<usize>,
    read_ahead: usize,
    read_mode: ReadMode,
    /// Whether jobs may be hashed several at once in SIMD lanes.
    multi_buffer: bool,
    /// Bytes hashed so far, for a progress display.
    progress: Option<Arc<AtomicU64>>,
}

impl Default for Engine {
    /// One worker per available core.
    fn default() -> Self {
        Engine::new(thread::available_parallelism().unwrap_or(NonZeroUsize::MIN))
    }
}

impl Engine {
    /// Bytes per read. Measured on a cached 4 GiB file (2-core EPYC, see
    /// `docs/performance.md`): 1 MiB reads with 4 in flight beat 64–512 KiB, by up to 9 %
    /// for `plain`, where the copy out of the page cache runs beside the hasher.
    pub const DEFAULT_CHUNK_SIZE: usize = 1 << 20;
    /// Bytes per mapped window with [`ReadMode::Mmap`]. On the same file, `-p 2` tree
    /// sha256: 4 MiB windows spend 0.05 s of system time per 4 GiB mapping, populating and
    /// unmapping, where 1 MiB windows spend 0.27 s (four times the `mmap`/`munmap` calls and
    /// TLB shootdowns), and the whole run 2.54 s of CPU against 2.86 s.
    pub const DEFAULT_MAP_WINDOW: usize = 4 << 20;
    /// Bytes per read with [`ReadMode::Direct`] and [`ReadMode::DontCache`], where no kernel
    /// read-ahead gathers small reads into large requests. Cold 4 GiB file on the virtual disk, `-t plain -a xxh3`,
    /// six interleaved rounds: 4 MiB reads reach 1.13 × `dd iflag=direct bs=16M`, 1 MiB reads
    /// 0.95 × (and `dd bs=1M` 0.83 ×).
    pub const DEFAULT_UNCACHED_CHUNK: usize = 4 << 20;
    /// Bytes per read of a file when no other reader is busy (one big file with `plain`,
    /// `-p 1`): half as many hand-offs between reader and hasher, whose cache misses at the
    /// start of each chunk show in the hasher's own time. Measured on a cached 4 GiB file
    /// (2-core EPYC, pairs of runs in turn, 2 MiB against 1 MiB reads): `-t plain` xxh3 and
    /// xxh128 8–12 % faster (the copy out of the page cache limits them), sha1 4 % (its
    /// hasher's user time 3 % lower), blake3 `-p 1` 3 %, md5 and sha256 the same; with two
    /// readers busy (`-p 2` tree) 2 MiB reads were 7 % slower for xxh3.
    pub const SOLO_CHUNK_SIZE: usize = 2 << 20;
    /// Chunks each reader may have read ahead of its hasher.
    pub const DEFAULT_READ_AHEAD: usize = 4;

    /// An engine with `threads` workers.
    pub fn new(threads: NonZeroUsize) -> Engine {
        Engine {
            threads,
            chunk_size: None,
            read_ahead: Self::DEFAULT_READ_AHEAD,
            read_mode: ReadMode::Pread,
            multi_buffer: true,
            progress: None,
        }
    }

    /// Reads in chunks of `bytes` (at least 1), or maps windows of that many bytes rounded up
    /// to pages. The digest does not depend on it.
    pub fn with_chunk_size(mut self, bytes: usize) -> Engine {
        self.chunk_size = Some(bytes.max(1));
        self
    }

    /// Bytes per read, or per mapped window.
    fn chunk_size(&self) -> usize {
        self.chunk_size.unwrap_or(match self.read_mode {
            ReadMode::Mmap => Self::DEFAULT_MAP_WINDOW,
            ReadMode::Direct | ReadMode::DontCache => Self::DEFAULT_UNCACHED_CHUNK,
            ReadMode::Pread => Self::DEFAULT_CHUNK_SIZE,
        })
    }

    /// Bytes per read for a reader alone: see [`Engine::SOLO_CHUNK_SIZE`]; a chunk size set
    /// by the caller holds for every read.
    fn solo_chunk_size(&self) -> usize {
        match (self.chunk_size, self.read_mode) {
            (None, ReadMode::Pread) => Self::SOLO_CHUNK_SIZE,
            _ => self.chunk_size(),
        }
    }

    /// Keeps up to `chunks` chunks (at least 1) read ahead per worker.
    pub fn with_read_ahead(mut self, chunks: usize) -> Engine {
        self.read_ahead = chunks.max(1);
        self
    }

    /// Reads files and block devices with `mode` (streams are read as streams whatever the
    /// mode). The digest does not depend on it; a file that refuses the mode is read another
    /// way and says so in [`FileDigest::fallback`].
    pub fn with_read_mode(mut self, mode: ReadMode) -> Engine {
        self.read_mode = mode;
        self
    }

    /// Whether to hash jobs that are one message each (the leaves of `mtsum`, whole files
    /// with `plain`) several at once in SIMD lanes, where the algorithm has a multi-buffer
    /// kernel on this CPU (see [`crate::lanes`]); on by default. The digest does not depend
    /// on it.
    pub fn with_multi_buffer(mut self, on: bool) -> Engine {
        self.multi_buffer = on;
        self
    }

    /// Adds every byte hashed to `counter` as it is hashed, so that another thread can show
    /// progress without the engine knowing how it is shown.
    pub fn with_progress(mut self, counter: Arc<AtomicU64>) -> Engine {
        self.progress = Some(counter);
        self
    }

    /// The number of workers.
    pub fn threads(&self) -> NonZeroUsize {
        self.threads
    }

    /// Hashes one input.
    pub fn hash(&self, request: &Request, target: Target) -> Result<FileDigest, InputError> {
        let mut out = None;
        self.hash_all(request, [target], |_, result| out = Some(result));
        out.expect("hash_all reports every target")
    }

    /// Hashes only the jobs of `request`'s plan of the file `target` that start in `bytes`
    /// (and those at its end when that is the file's end: the empty leaves of a tiny `mtsum`
    /// file), and returns each job's byte range and digest in order, not a root: the part of
    /// a file one machine hashes when many share it ([`crate::range`]). The jobs are hashed
    /// as [`Engine::hash`] hashes them (workers, read-ahead, lanes), so that the job ranges
    /// may be finer than [`Layout::plan`]'s (one leaf each where lanes take leaves).
    ///
    /// `size` is the length the range was planned for: a file of another length fails with
    /// [`InputError::Changed`], a stream with [`InputError::RangeOfStream`].
    pub fn hash_jobs_in(
        &self,
        request: &Request,
        target: Target,
        size: u64,
        bytes: Range<u64>,
    ) -> Result<Vec<(Range<u64>, Digest)>, InputError> {
        let task = Task {
            input: Some((target, *request)),
            slice: Some(Slice { size, bytes }),
            context: (),
        };
        let mut out = None;
        self.run([task], |(), result| out = result);
        let digest = out.expect("run reports every task")?;
        Ok(digest.jobs.expect("a task of a slice keeps its jobs"))
    }

    /// Hashes every target and calls `sink` once per target, in the order of `targets`,
    /// as soon as that target and all before it are done. A failing input is reported to
    /// `sink` and the others go on.
    pub fn hash_all<I, F>(&self, request: &Request, targets: I, mut sink: F)
    where
        I: IntoIterator<Item = Target>,
        F: FnMut(Target, Result<FileDigest, InputError>),
    {
        let tasks = targets
            .into_iter()
            .map(|t| Task::hash(t.clone(), *request, t));
        self.run(tasks, |target, result| {
            sink(target, result.expect("every task hashes"))
        });
    }

    /// Runs `tasks` and calls `sink` once per task, in the order of `tasks`, with the task's
    /// context and its result (`None` for a task that only passes its context through).
    /// Each task may ask for its own layout and algorithm, as the lines of a sum file do.
    pub fn run<T, I, F>(&self, tasks: I, sink: F)
    where
        I: IntoIterator<Item = Task<T>>,
        F: FnMut(T, Option<Result<FileDigest, InputError>>),
    {
        thread::scope(|scope| {
            // Room for every lane of every worker twice over: a reader filling its lanes
            // with small files finds them opened and waiting.
            let queue = (self.threads.get() * 2 * lanes::MAX_LANES).min(MAX_QUEUED_JOBS);
            let (job_tx, job_rx) = bounded::<Job>(queue);
            let (done_tx, done_rx) = unbounded::<Vec<Done>>();
            // Fewer workers than asked for (the system refused more threads) still hash
            // correctly; none at all fails every input instead of panicking.
            let mut started = 0;
            let mut refusal = None;
            let busy = Arc::new(AtomicUsize::new(0));
            for _ in 0..self.threads.get() {
                match self.spawn_worker(scope, &job_rx, &done_tx, &busy) {
                    Ok(()) => started += 1,
                    Err(e) => {
                        refusal = Some(e);
                        break;
                    }
                }
            }
            drop((job_rx, done_tx));
            if let (0, Some(e)) = (started, refusal) {
                let mut sink = sink;
                for task in tasks {
                    let error =
                        || std::io::Error::new(e.kind(), format!("cannot start a worker: {e}"));
                    sink(task.context, task.input.map(|_| Err(error().into())));
                }
                return;
            }

            let mut coordinator = Coordinator {
                read_mode: self.read_mode,
                multi_buffer: self.multi_buffer,
                pending: HashMap::new(),
                ready: BTreeMap::new(),
                next_out: 0,
                sink,
            };
            for (index, task) in tasks.into_iter().enumerate() {
                for job in coordinator.plan(index, task) {
                    send_job(&job_tx, job, &done_rx, &mut coordinator);
                }
            }
            drop(job_tx);
            for done in done_rx.iter().flatten() {
                coordinator.on_done(done);
            }
            // Every job reports back unless a worker died; its input is still reported.
            for (index, p) in std::mem::take(&mut coordinator.pending) {
                let lost = std::io::Error::other("a worker thread stopped unexpectedly");
                coordinator.emit(index, p.context, Some(Err(lost.into())));
            }
        });
    }
}

impl Engine {
    /// Starts one worker: a reader thread and a hasher thread joined by `read_ahead` buffers.
    fn spawn_worker<'scope>(
        &self,
        scope: &'scope thread::Scope<'scope, '_>,
        jobs: &Receiver<Job>,
        done: &Sender<Vec<Done>>,
        busy: &Arc<AtomicUsize>,
    ) -> std::io::Result<()> {
        let (chunk_tx, chunk_rx) = bounded::<Msg>(self.read_ahead);
        // Enough buffers for two rounds of the widest lane set; they allocate (fallibly) when
        // first read into, and the reader reuses the most recent first, so a worker that reads
        // one job at a time, maps windows, or only meets small files never holds them all.
        let buffers = self.read_ahead.max(2 * lanes::MAX_LANES);
        let (free_tx, free_rx) = bounded::<Vec<Buffer>>(buffers);
        let reader = Reader {
            jobs: jobs.clone(),
            chunk_size: self.chunk_size(),
            solo_chunk_size: self.solo_chunk_size(),
            busy: busy.clone(),
            multi_buffer: self.multi_buffer,
            free: free_rx,
            spare: (0..buffers).map(|_| Buffer::new()).collect(),
            buffers,
            out: chunk_tx,
            done: done.clone(),
            progress: self.progress.clone(),
        };
        let (done, progress) = (done.clone(), self.progress.clone());
        // The hasher first: a reader without a hasher would take a job and lose it.
        thread::Builder::new()
            .name("mtsum-hasher".into())
            .spawn_scoped(scope, move || hash_jobs(chunk_rx, free_tx, done, progress))?;
        thread::Builder::new()
            .name("mtsum-reader".into())
            .spawn_scoped(scope, move || reader.run())?;
        Ok(())
    }
}

/// One unit of work for [`Engine::run`]: an input to hash with its request, or a note that
/// only needs to come out in order (an error met while walking a directory, say), and the
/// caller's context, handed back with the result.
pub struct Task<T> {
    input: Option<(Target, Request)>,
    /// Only the jobs in a byte range ([`Engine::hash_jobs_in`]).
    slice: Option<Slice>,
    context: T,
}

/// The jobs of a file to hash when only a range of it is asked for.
struct Slice {
    /// The file's length the range was planned for.
    size: u64,
    bytes: Range<u64>,
}

impl Slice {
    /// Whether the job that starts at `start` belongs to the range.
    fn holds(&self, start: u64) -> bool {
        let Range { start: from, end } = self.bytes;
        start >= from && (start < end || end == self.size)
    }
}

impl<T> Task<T> {
    /// Hash `target` as `request` says.
    pub fn hash(target: Target, request: Request, context: T) -> Task<T> {
        Task {
            input: Some((target, request)),
            slice: None,
            context,
        }
    }

    /// Hash nothing; hand `context` back in its place in the order.
    pub fn pass(context: T) -> Task<T> {
        Task {
            input: None,
            slice: None,
            context,
        }
    }
}

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

/// A range of one input to hash into one digest.
struct Job {
    input: usize,
    index: usize,
    start: u64,
    layout: Layout,
    alg: Algorithm,
    /// How the job is hashed as one stream ([`Layout::plan`]); lanes hash it from its layout
    /// and algorithm instead.
    kind: JobKind,
    source: JobSource,
}

enum JobSource {
    /// `len` bytes at `start` of a file shared by the input's jobs.
    At(Arc<SharedFile>, u64),
    /// A whole stream.
    Stream(Box<dyn Read + Send>),
}

struct SharedFile {
    file: SizedFile,
    /// Set when one job failed, so that the readers skip the rest of the input.
    failed: AtomicBool,
}

/// From a reader to its hasher.
enum Msg {
    /// The chunks that follow, up to `End`, are one job.
    Begin(Layout, Algorithm, JobKind),
    Chunk(Chunk),
    End {
        input: usize,
        index: usize,
        start: u64,
        /// Bytes read.
        result: Result<u64, InputError>,
    },
    /// Lane mode: one round of a reader's lane slots, for a lane set of `kernel`.
    Round(Kernel, Vec<LaneOp>),
}

/// What happens to a reader's lane slot in a round.
enum LaneOp {
    /// Job `key`, one message starting with `prefix`, is fed from slot `slot` from now on.
    Open {
        slot: usize,
        key: JobKey,
        start: u64,
        prefix: &'static [u8],
    },
    /// The next bytes of the job in slot `slot`.
    Part { slot: usize, chunk: Chunk },
    /// The job in slot `slot` is read: how many bytes, or why not.
    Close {
        slot: usize,
        result: Result<u64, InputError>,
    },
}

/// From a hasher to the coordinator.
struct Done {
    input: usize,
    index: usize,
    result: Result<(Range<u64>, Digest), InputError>,
}

/// The reader half of a worker.
struct Reader {
    jobs: Receiver<Job>,
    chunk_size: usize,
    /// Bytes per read of a file when this reader is the only one busy.
    solo_chunk_size: usize,
    /// Readers with a job in hand, this one included while it has one.
    busy: Arc<AtomicUsize>,
    /// Whether jobs that are one message each may be hashed in SIMD lanes.
    multi_buffer: bool,
    /// Buffers back from the hasher, in batches.
    free: Receiver<Vec<Buffer>>,
    /// Buffers to read into, reused last in, first out: a worker allocates only as many
    /// buffers as it keeps in flight (a few one at a time, two rounds of its lanes).
    spare: Vec<Buffer>,
    /// Buffers of the worker, in `spare` or away.
    buffers: usize,
    out: Sender<Msg>,
    done: Sender<Vec<Done>>,
    progress: Option<Arc<AtomicU64>>,
}

impl Reader {
    /// Takes jobs until the coordinator has no more; returns early when the pipeline shut
    /// down (the hasher or the coordinator is gone).
    fn run(mut self) -> Option<()> {
        let mut next = None;
        loop {
            let job = match next.take() {
                Some(job) => job,
                None => self.jobs.recv().ok()?,
            };
            self.busy.fetch_add(1, Ordering::Relaxed);
            // Lanes pay only with company: a job alone (one big file for `plain`) goes to
            // the fastest single stream instead of one lane of many.
            match self.lane_kernel(&job).filter(|_| !self.jobs.is_empty()) {
                Some(kernel) => next = self.read_lanes(kernel, job)?,
                None => self.read_job(job)?,
            }
            self.busy.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The next free buffer, the most recently returned first; `None` when the hasher is gone.
    fn next_buffer(&mut self) -> Option<Buffer> {
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
    fn lane_kernel(&self, job: &Job) -> Option<Kernel> {
        let JobSource::At(_, len) = &job.source else {
            return None;
        };
        job.layout.message_prefix(*len)?;
        Kernel::multi_buffer(job.alg).filter(|_| self.multi_buffer)
    }

    /// Reads one job alone: chunks to the hasher, or, for a job of at most one chunk (a
    /// small file, an empty leaf), hashed right here, where handing it over would cost more
    /// in wake-ups than the hashing itself.
    fn read_job(&mut self, job: Job) -> Option<()> {
        if let JobSource::At(shared, len) = &job.source
            && *len <= self.chunk_size as u64
        {
            let range = job.start..job.start + len;
            let hasher = job.layout.hasher_for(job.alg, job.kind);
            let result = self.hash_small(shared, range, hasher)?;
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
        self.out
            .send(Msg::Begin(job.layout, job.alg, job.kind))
            .ok()?;
        let result = match job.source {
            JobSource::At(shared, len) => {
                let range = job.start..job.start + len;
                let chunk = self.file_chunk_size();
                self.read_range(&shared, range, chunk)?
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

    /// Reads `range` into `hasher`: the job's range and digest, or why not; `None` when the
    /// pipeline shut down.
    fn hash_small(
        &mut self,
        shared: &SharedFile,
        range: Range<u64>,
        mut hasher: JobHasher,
    ) -> Option<Result<(Range<u64>, Digest), InputError>> {
        let start = range.start;
        let mut reader = shared.file.range_reader(range, self.chunk_size);
        while !reader.is_done() && !shared.failed.load(Ordering::Relaxed) {
            let (buf, ok) = match reader.next_chunk(self.next_buffer()?) {
                Ok(chunk) => absorb(&mut hasher, chunk, self.progress.as_deref()),
                Err((buf, e)) => (buf, Err(e)),
            };
            self.spare.push(buf);
            if let Err(e) = ok {
                return Some(Err(e));
            }
        }
        Some(Ok((start..reader.position(), hasher.finalize())))
    }

    /// Bytes per read of a job of a file hashed as one stream.
    fn file_chunk_size(&self) -> usize {
        if self.busy.load(Ordering::Relaxed) == 1 {
            self.solo_chunk_size
        } else {
            self.chunk_size
        }
    }

    /// Reads `range` of a file as chunks of `chunk` bytes to the hasher: the bytes read, or
    /// why not; `None` when the pipeline shut down.
    fn read_range(
        &mut self,
        shared: &SharedFile,
        range: Range<u64>,
        chunk: usize,
    ) -> Option<Result<u64, InputError>> {
        let start = range.start;
        let mut reader = shared.file.range_reader(range, chunk);
        while !reader.is_done() && !shared.failed.load(Ordering::Relaxed) {
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
            match read_stream_chunk(&mut *reader, self.next_buffer()?, self.chunk_size) {
                Ok(chunk) if chunk.bytes().is_empty() => {
                    self.spare.push(chunk.finish().0);
                    return Some(Ok(done));
                }
                Ok(chunk) => {
                    done += chunk.bytes().len() as u64;
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
    /// slots that emptied with the next jobs of the queue. Returns when every slot is empty
    /// and the queue has no job for these lanes, with the job taken that is for other ones;
    /// `None` when the pipeline shut down.
    fn read_lanes(&mut self, kernel: Kernel, first: Job) -> Option<Option<Job>> {
        let chunk = lane_chunk_size(kernel, self.chunk_size);
        let mut slots: Vec<Option<LaneRead>> = (0..kernel.lanes()).map(|_| None).collect();
        let mut waiting = Some(first);
        let mut other = None;
        loop {
            let mut round = Vec::new();
            // Fill free slots, but with only as many jobs longer than a round per round as
            // keep the lanes full (one a round when a job lasts as many rounds as there are
            // lanes), so that a file's big leaves spread over every worker rather than the
            // first. One a round whatever their length left 1 MiB leaves, two rounds each
            // for SHA-512, in 2 or 3 of the 8 lanes: the kernel ran 3 times as long.
            let mut took_long = 0;
            while let Some(slot) = slots.iter().position(Option::is_none) {
                if other.is_some() {
                    break;
                }
                let Some(job) = waiting.take().or_else(|| self.jobs.try_recv().ok()) else {
                    break;
                };
                if self.lane_kernel(&job) != Some(kernel) {
                    other = Some(job);
                    break;
                }
                let JobSource::At(shared, len) = job.source else {
                    unreachable!("lane jobs are ranges of files")
                };
                let rounds = len.div_ceil(chunk as u64);
                let long = rounds > 1;
                if long && took_long * rounds >= kernel.lanes() as u64 {
                    waiting = Some(Job {
                        source: JobSource::At(shared, len),
                        ..job
                    });
                    break;
                }
                took_long += u64::from(long);
                let prefix = job.layout.message_prefix(len).expect("a one-message job");
                let key = (job.input, job.index);
                round.push(LaneOp::Open {
                    slot,
                    key,
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
            if slots.iter().all(Option::is_none) {
                // A job is held back only while another fills a slot, so `waiting` is empty.
                return Some(other.or(waiting));
            }
            for (slot, entry) in slots.iter_mut().enumerate() {
                let Some(read) = entry else { continue };
                if let Some(result) = self.read_lane(slot, read, kernel, &mut round)? {
                    round.push(LaneOp::Close { slot, result });
                    *entry = None;
                }
            }
            // One message per round: the hasher wakes once for all the lanes' chunks.
            self.out.send(Msg::Round(kernel, round)).ok()?;
        }
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
            let chunk = lane_chunk_size(kernel, self.chunk_size);
            let mut reader = read.shared.file.range_reader(read.pos..read.end, chunk);
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

/// A job in one of a reader's lane slots.
struct LaneRead {
    shared: Arc<SharedFile>,
    start: u64,
    /// The next byte to read.
    pos: u64,
    end: u64,
}

/// Bytes per read for jobs in lanes: two rounds of every lane in flight stay within
/// [`LANE_BUFFER_BUDGET`], and never more than the engine's chunk size.
fn lane_chunk_size(kernel: Kernel, chunk_size: usize) -> usize {
    (LANE_BUFFER_BUDGET / (2 * kernel.lanes())).min(chunk_size)
}

/// Hashes one chunk into `hasher`, counts it for the progress display, and hands back its
/// buffer with whether its bytes were really the file's (see [`Chunk::finish`]).
fn absorb(
    hasher: &mut JobHasher,
    chunk: Chunk,
    progress: Option<&AtomicU64>,
) -> (Buffer, Result<(), InputError>) {
    hasher.update(chunk.bytes());
    if let Some(p) = progress {
        p.fetch_add(chunk.bytes().len() as u64, Ordering::Relaxed);
    }
    chunk.finish()
}

/// The hasher half of a worker.
fn hash_jobs(
    chunks: Receiver<Msg>,
    free: Sender<Vec<Buffer>>,
    done: Sender<Vec<Done>>,
    progress: Option<Arc<AtomicU64>>,
) {
    let out = Outlets {
        free: &free,
        done: &done,
        progress: progress.as_deref(),
    };
    let mut hasher = None;
    // A chunk whose bytes turned out not to be the file's (a mapped page past its end).
    let mut spoiled = None;
    let mut lanes: Option<LaneHasher> = None;
    for msg in chunks {
        match msg {
            Msg::Begin(layout, alg, kind) => hasher = Some(layout.hasher_for(alg, kind)),
            Msg::Chunk(chunk) => {
                let h = hasher.as_mut().expect("Begin comes first");
                let (buf, ok) = absorb(h, chunk, out.progress);
                let _ = free.send(vec![buf]);
                if let Err(e) = ok {
                    spoiled.get_or_insert(e);
                }
            }
            Msg::End {
                input,
                index,
                start,
                result,
            } => {
                let h = hasher.take().expect("Begin comes first");
                let result = match spoiled.take() {
                    Some(e) => Err(e),
                    None => result.map(|len| (start..start + len, h.finalize())),
                };
                if done
                    .send(vec![Done {
                        input,
                        index,
                        result,
                    }])
                    .is_err()
                {
                    return;
                }
            }
            Msg::Round(kernel, ops) => {
                let set = match &mut lanes {
                    Some(set) if set.set.kernel() == kernel => set,
                    _ => lanes.insert(LaneHasher::new(kernel)),
                };
                if set.round(ops, &out).is_none() {
                    return;
                }
            }
        }
    }
}

/// Where a hasher's results go.
struct Outlets<'a> {
    free: &'a Sender<Vec<Buffer>>,
    done: &'a Sender<Vec<Done>>,
    progress: Option<&'a AtomicU64>,
}

/// A job by its input and its index in the input.
type JobKey = (usize, usize);

/// A chunk in a lane, with the job it belongs to.
struct Part {
    key: JobKey,
    chunk: Chunk,
}

impl AsRef<[u8]> for Part {
    fn as_ref(&self) -> &[u8] {
        self.chunk.bytes()
    }
}

/// The hasher's side of lane mode: a lane set fed by the reader's slots.
struct LaneHasher {
    set: Lanes<JobKey, Part>,
    /// The lane and job that each reader slot feeds.
    slots: Vec<Option<(Lane, JobKey)>>,
    jobs: HashMap<JobKey, LaneJob>,
    /// Results and emptied buffers of the round, handed back together at its end.
    finished: Vec<Done>,
    emptied: Vec<Buffer>,
}

/// A job in a lane.
struct LaneJob {
    start: u64,
    /// What the reader said at the end: bytes read, or why not.
    read: Option<Result<u64, InputError>>,
    /// A chunk whose bytes turned out not to be the file's.
    spoiled: Option<InputError>,
}

impl LaneHasher {
    fn new(kernel: Kernel) -> LaneHasher {
        LaneHasher {
            set: Lanes::with_kernel(kernel),
            slots: (0..kernel.lanes()).map(|_| None).collect(),
            jobs: HashMap::new(),
            finished: Vec::new(),
            emptied: Vec::new(),
        }
    }

    /// Takes in a round of the reader and hashes every whole block it brought; `None` when
    /// the pipeline shut down.
    fn round(&mut self, ops: Vec<LaneOp>, out: &Outlets) -> Option<()> {
        for op in ops {
            match op {
                LaneOp::Open {
                    slot,
                    key,
                    start,
                    prefix,
                } => self.open(slot, key, start, prefix),
                LaneOp::Part { slot, chunk } => {
                    let (lane, key) = self.slots[slot].expect("an open slot");
                    self.set.push(lane, Part { key, chunk });
                }
                LaneOp::Close { slot, result } => {
                    let (lane, key) = self.slots[slot].take().expect("an open slot");
                    self.jobs.get_mut(&key).expect("an open job").read = Some(result);
                    self.set.finish(lane);
                }
            }
        }
        // Flush rather than poll: a lane whose chunk was longer (the first chunk of a job
        // that starts between two pages is shorter, with O_DIRECT or maps) goes on alone
        // rather than keeping its chunk. So every buffer goes back to the reader each round,
        // which is what lets the reader, with two rounds of buffers, never wait for one the
        // hasher holds; and every job the reader closed is finished, its lane free.
        while let Some(event) = self.set.flush() {
            self.handle(event, out.progress);
        }
        if !self.emptied.is_empty() {
            let _ = out.free.send(std::mem::take(&mut self.emptied));
        }
        if !self.finished.is_empty() {
            out.done.send(std::mem::take(&mut self.finished)).ok()?;
        }
        Some(())
    }

    /// Starts job `key` in a lane for reader slot `slot`.
    fn open(&mut self, slot: usize, key: JobKey, start: u64, prefix: &[u8]) {
        let Ok(lane) = self.set.start_with_prefix(key, prefix) else {
            unreachable!("a slot opens after the round that finished its last job")
        };
        self.slots[slot] = Some((lane, key));
        let job = LaneJob {
            start,
            read: None,
            spoiled: None,
        };
        self.jobs.insert(key, job);
    }

    fn handle(&mut self, event: Event<JobKey, Part>, progress: Option<&AtomicU64>) {
        match event {
            Event::Consumed(part) => {
                if let Some(p) = progress {
                    p.fetch_add(part.chunk.bytes().len() as u64, Ordering::Relaxed);
                }
                let (buf, ok) = part.chunk.finish();
                self.emptied.push(buf);
                if let Err(e) = ok {
                    let job = self.jobs.get_mut(&part.key).expect("a job in a lane");
                    job.spoiled.get_or_insert(e);
                }
            }
            Event::Finished(key, digest) => {
                let job = self.jobs.remove(&key).expect("a job in a lane");
                let read = job.read.expect("a job ends before its digest");
                let result = match job.spoiled {
                    Some(e) => Err(e),
                    None => read.map(|len| (job.start..job.start + len, digest)),
                };
                let (input, index) = key;
                self.finished.push(Done {
                    input,
                    index,
                    result,
                });
            }
        }
    }
}

/// One input whose jobs are under way.
struct Pending<T> {
    context: T,
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
}

type Outcome = Option<Result<FileDigest, InputError>>;

/// A job's byte range and digest.
type JobDigest = (Range<u64>, Digest);

/// Plans inputs into jobs, folds finished jobs, and hands results out in input order.
struct Coordinator<T, F> {
    read_mode: ReadMode,
    /// Whether the workers hash one-message jobs in lanes.
    multi_buffer: bool,
    pending: HashMap<usize, Pending<T>>,
    /// Finished tasks waiting for an earlier one.
    ready: BTreeMap<usize, (T, Outcome)>,
    next_out: usize,
    sink: F,
}

impl<T, F> Coordinator<T, F>
where
    F: FnMut(T, Outcome),
{
    /// Opens the input of task `index` and returns its jobs; a task that fails to open,
    /// has no job or no input is finished at once.
    fn plan(&mut self, index: usize, task: Task<T>) -> Vec<Job> {
        let started = Instant::now();
        let Some((target, request)) = task.input else {
            self.emit(index, task.context, None);
            return Vec::new();
        };
        let (context, slice) = (task.context, task.slice);
        let (layout, alg) = (request.layout, request.algorithm);
        let job = |index_in_input: usize, start: u64, kind, source| Job {
            input: index,
            index: index_in_input,
            start,
            layout,
            alg,
            kind,
            source,
        };
        let (file, jobs) = match Input::open_with(&target, self.read_mode) {
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
                vec![job(0, 0, JobKind::Layout, JobSource::Stream(reader))],
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
                let jobs = plan
                    .into_iter()
                    .enumerate()
                    .map(|(i, (r, kind))| {
                        let source = JobSource::At(shared.clone(), r.end - r.start);
                        job(i, r.start, kind, source)
                    })
                    .collect();
                (Some(shared), jobs)
            }
        };
        let pending = Pending {
            context,
            file,
            combiner: layout.combiner(alg),
            remaining: jobs.len(),
            size: 0,
            leaves: (request.keep_leaves && slice.is_none()).then(|| vec![None; jobs.len()]),
            jobs: slice.map(|_| vec![None; jobs.len()]),
            error: None,
            started,
        };
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

    fn on_done(&mut self, done: Done) {
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
    /// or the file changed meanwhile.
    fn conclude(&mut self, index: usize, p: Pending<T>) {
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
        self.emit(index, p.context, Some(result));
    }

    fn emit(&mut self, index: usize, context: T, outcome: Outcome) {
        self.ready.insert(index, (context, outcome));
        while let Some((context, outcome)) = self.ready.remove(&self.next_out) {
            (self.sink)(context, outcome);
            self.next_out += 1;
        }
    }
}
