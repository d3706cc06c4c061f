//! The engine: hashes the jobs of many inputs on a pool of workers and folds each input's
//! job digests into its root, handing results back in input order.
//!
//! # Map
//!
//! | where | role |
//! |---|---|
//! | this file | what callers see ([`Request`], [`Task`], [`Engine`], [`FileDigest`]) and the words the parts speak to each other (`Job`, `Msg`, `LaneOp`, `Done`) |
//! | `coordinator.rs` | hands inputs out in batches to open, queues the jobs of large ones, holds streams whose layout needs their length, folds the digests of large inputs into roots, emits results in input order |
//! | `input.rs` | one input: opened (`Opening`), planned into jobs (`Unplanned`), its jobs' digests folded into its result (`Fold`) |
//! | `reader.rs` | the reader half of a worker: takes work from the shared queues, reads jobs ahead |
//! | `whole.rs` | a reader's batch of inputs: opens each, hashes the small ones whole itself (in a lane set of its own), hands the others back |
//! | `hasher.rs` | the hasher half of a worker: hashes chunks as one stream, or rounds of SIMD lanes |
//! | `side.rs` | side outputs ([`Side`]): more digests of the same read, its jobs cut where every layout's jobs nest; a job read alone on the cores shares each chunk's layouts among threads |
//! | `pace.rs` | reader options: a rate limit shared by every worker, an I/O priority |
//!
//! A call of [`Engine::run`] is: the coordinator hands tasks out in batches on one bounded
//! queue → a reader opens each input of a batch, hashes a small one itself and reports its
//! result (`Opened`), and reports a large one's jobs, which the coordinator queues for every
//! worker on another → a reader takes a job and sends chunks (`Msg`) → its hasher hashes them
//! and sends `Done` back → the coordinator folds them and calls the sink.
//!
//! # How it works
//!
//! Each worker is a pair of threads joined by a short pipeline of buffers: a *reader* that
//! takes the next job from the shared queue and reads its chunks ahead (positioned reads, so
//! workers never share a file offset; or `O_DIRECT` reads, or mapped windows: see
//! [`ReadMode`]), and a *hasher* that only hashes. Reading therefore never stalls hashing,
//! and memory is bounded by `threads × read_ahead × chunk_size` whatever the file or leaf
//! size: a 128 MiB leaf is hashed as a stream of chunks. (A reader alone reads larger chunks:
//! see [`Engine::SOLO_CHUNK_SIZE`].) Where the busy workers already fill the cores (two
//! threads each: `-p 2` on two cores), a reader hashes its job itself instead: the hasher
//! would have no core of its own, and each chunk handed over would cost a wake-up on the same
//! cores ([`Engine::with_cores`]).
//!
//! One queue serves all inputs: a huge file spreads its jobs over every worker, small files
//! are hashed side by side, and the root never depends on which worker hashed what, because
//! [`Combiner`](crate::layout::Combiner) folds by job index.
//!
//! Jobs that are one message each (the leaves of `mtsum`, whole files with `plain`) go into
//! SIMD lanes when others wait behind them ([`crate::lanes`]): the reader takes as many jobs
//! as its kernel has lanes and reads in rounds, one chunk of each, which its hasher runs
//! through one lane set, so that one core hashes 2 to 32 messages at once. Readers deal such
//! jobs among themselves so that lanes fill: a reader fills a unit of its kernel's lanes
//! before another begins and begins another only while no reader is idle; while one is, it
//! takes no more of a file's jobs than its share where sharing them is faster (`reader.rs`).
//!
//! Many small files are opened on the workers, not one by one on the coordinator, and each is
//! hashed by the reader that opened it, with no hand-off between threads: the one-message
//! jobs of small files go into a lane set of the reader's own, which it refills as each
//! message ends (`whole.rs`).

mod coordinator;
mod hasher;
mod input;
mod pace;
mod reader;
mod side;
mod whole;

use coordinator::{Channels, Coordinator};
use hasher::hash_jobs;
use input::{Opening, Planned, Unplanned};
use pace::Meter;
use reader::{Dealer, Reader};
use side::{Hashing, Out, SidePlan};

pub use pace::{IoPriority, RateLimiter};
pub use side::{Leaves, Side, SideDigests};

use std::io::Read;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};

use crate::algorithm::{Algorithm, Digest};
use crate::lanes::{self, Kernel};
use crate::layout::{JobKind, Layout, Root};
use crate::source::{
    Buffer, Chunk, Fallback, FileSystems, InputError, ReadMode, SizedFile, Stamp, Target,
};

/// The most jobs queued for the workers: each holds an open file.
const MAX_QUEUED_JOBS: usize = 256;

/// The most leaves a tree may have when its leaf digests are kept (for drawing it).
pub const MAX_KEPT_LEAVES: usize = 1 << 16;

/// What to compute for every input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub layout: Layout,
    pub algorithm: Algorithm,
    /// Also return every leaf digest (at most [`MAX_KEPT_LEAVES`]), to draw the tree.
    pub keep_leaves: bool,
    /// More digests of the same read ([`FileDigest::side`]); not for [`Engine::hash_jobs_in`].
    pub side: Side,
}

impl Request {
    /// A request for the root only.
    pub fn new(layout: Layout, algorithm: Algorithm) -> Request {
        Request {
            layout,
            algorithm,
            keep_leaves: false,
            side: Side::default(),
        }
    }
}

/// Where [`Engine::run_to`] hands the outcome of each task, in the order of the tasks. Any
/// closure `FnMut(context, outcome)` is one.
///
/// A sink that gathers what it writes (a buffered sum list) writes it out in
/// [`Sink::idle`]: results then never wait unwritten while a later input blocks (a FIFO
/// nobody writes to yet) and a run killed meanwhile has still printed them, while a run of
/// many small files, where results keep coming, still writes them in large pieces.
pub trait Sink<T> {
    /// Takes the outcome of the next task: `None` for a task that only passes its context
    /// through.
    fn take(&mut self, context: T, outcome: Option<Result<FileDigest, InputError>>);

    /// Called when no result is ready and the engine is about to wait for one (or to read a
    /// stream into memory, or to ask a task source that paused for its next task,
    /// [`Task::pause`]), and again every 200 ms while it waits. Does nothing by default.
    fn idle(&mut self) {}
}

impl<T, F> Sink<T> for F
where
    F: FnMut(T, Option<Result<FileDigest, InputError>>),
{
    fn take(&mut self, context: T, outcome: Option<Result<FileDigest, InputError>>) {
        self(context, outcome)
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
    /// What [`Request::side`] asked, from the same read.
    pub side: SideDigests,
    /// The size and modification time of a file when it was opened, which still held once
    /// its last byte was read (else the input failed with [`InputError::Changed`]): a caller
    /// that stamped the file before (an audit) compares with this, with no `stat` of its own
    /// after. `None` for a stream, whose size is the bytes read.
    pub stamp: Option<Stamp>,
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
    /// Counts the bytes hashed: progress, rate limit.
    meter: Meter,
    /// The I/O priority of the reader threads.
    priority: IoPriority,
    /// Set from outside to stop the calls under way ([`Engine::with_cancel`]).
    cancel: Option<Arc<AtomicBool>>,
    /// The cores the workers share ([`Engine::with_cores`]).
    cores: NonZeroUsize,
}

impl Default for Engine {
    /// One worker per available core.
    fn default() -> Self {
        Engine::new(thread::available_parallelism().unwrap_or(NonZeroUsize::MIN))
    }
}

impl Engine {
    /// Bytes per read. Measured on a cached 4 GiB file (2-core EPYC, see
    /// `docs/performance-choices.md`): 1 MiB reads with 4 in flight beat 64–512 KiB, by up to
    /// 9 % for `plain`, where the copy out of the page cache runs beside the hasher.
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
            meter: Meter::default(),
            priority: IoPriority::Unchanged,
            cancel: None,
            cores: thread::available_parallelism().unwrap_or(NonZeroUsize::MIN),
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
        self.meter.progress = Some(counter);
        self
    }

    /// Hashes no more than `bytes_per_second` on average over every worker (`--limit-rate`):
    /// a worker waits after each chunk until its bytes are due, and its reader, at most its
    /// read-ahead ahead, with it. The digest does not depend on it.
    pub fn with_rate_limit(mut self, bytes_per_second: u64) -> Engine {
        self.meter.limiter = Some(Arc::new(RateLimiter::new(bytes_per_second)));
        self
    }

    /// Reads at I/O priority `priority` (`--io-priority`): each reader thread sets it for
    /// itself (I/O priorities belong to threads). Unchanged by default.
    pub fn with_io_priority(mut self, priority: IoPriority) -> Engine {
        self.priority = priority;
        self
    }

    /// Stops this engine's calls once `flag` is set, from any thread (the caller's other
    /// thread, a Ctrl-C handler): each reader gives its job up before its next read, the
    /// job's input fails with [`InputError::Interrupted`] (a stream is closed, so its writer
    /// sees a broken pipe), and [`Engine::run`] takes no more tasks. A read under way is not
    /// interrupted (one that waits on a silent pipe waits on). The engine never clears the
    /// flag: while it is set, calls end at once.
    pub fn with_cancel(mut self, flag: Arc<AtomicBool>) -> Engine {
        self.cancel = Some(flag);
        self
    }

    /// Plans for `cores` cores rather than the number this process may run on: whether a
    /// reader hands its chunks to a hasher thread or hashes them itself, and whether a file's
    /// leaves stay in one reader's lanes, depend on whether each busy worker (a reader and
    /// its hasher) finds two cores. The digest does not depend on it.
    pub fn with_cores(mut self, cores: NonZeroUsize) -> Engine {
        self.cores = cores;
        self
    }

    fn cancelled(&self) -> bool {
        is_set(self.cancel.as_deref())
    }

    /// The number of workers.
    pub fn threads(&self) -> NonZeroUsize {
        self.threads
    }

    /// Hashes one input.
    pub fn hash(&self, request: &Request, target: Target) -> Result<FileDigest, InputError> {
        let mut out = None;
        self.hash_all(request, [target], |_, result| out = Some(result));
        // Not taken: cancelled before it started.
        out.unwrap_or(Err(InputError::Interrupted))
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
        let task = Task(Step::Run {
            input: Some((target, request.clone())),
            slice: Some(Slice { size, bytes }),
            context: (),
        });
        // Not reported: cancelled before it started.
        let mut out = Some(Err(InputError::Interrupted));
        self.run([task], |(), result| out = result);
        let digest = out.expect("a task of a slice hashes")?;
        Ok(digest.jobs.expect("a task of a slice keeps its jobs"))
    }

    /// Hashes every target and calls `sink` once per target, in the order of `targets`,
    /// as soon as that target and all before it are done. A failing input is reported to
    /// `sink` and the others go on. Once cancelled, only the targets taken before are
    /// reported (see [`Engine::run`]).
    pub fn hash_all<I, F>(&self, request: &Request, targets: I, mut sink: F)
    where
        I: IntoIterator<Item = Target>,
        F: FnMut(Target, Result<FileDigest, InputError>),
    {
        let tasks = targets
            .into_iter()
            .map(|t| Task::hash(t.clone(), request.clone(), t));
        self.run(tasks, |target, result| {
            sink(target, result.expect("every task hashes"))
        });
    }

    /// Runs `tasks` and calls `sink` once per task, in the order of `tasks`, with the task's
    /// context and its result (`None` for a task that only passes its context through).
    /// Each task may ask for its own layout and algorithm, as the lines of a sum file do.
    ///
    /// Once the cancel flag is set ([`Engine::with_cancel`]), no more tasks are taken from
    /// `tasks` and those left are not reported: reporting them would mean draining an
    /// iterator that may walk a whole tree. Every task taken is still reported, those not
    /// finished with [`InputError::Interrupted`].
    pub fn run<T, I, F>(&self, tasks: I, sink: F)
    where
        I: IntoIterator<Item = Task<T>>,
        F: FnMut(T, Option<Result<FileDigest, InputError>>),
    {
        self.run_to(tasks, sink)
    }

    /// [`Engine::run`] with a [`Sink`] that may also want to know when the engine waits, to
    /// write out the results it gathered.
    pub fn run_to<T, I, S>(&self, tasks: I, sink: S)
    where
        I: IntoIterator<Item = Task<T>>,
        S: Sink<T>,
    {
        self.run_with(tasks, sink, Order::Tasks)
    }

    /// [`Engine::run_to`], but `sink` takes each outcome as soon as it is known, not in the
    /// order of the tasks: for a caller that acts on each result at once and orders what it
    /// tells itself (an audit writes a file's record as soon as it is read, so that a file
    /// read behind a long one, or in the order of a disk rather than of the walk, is
    /// recorded when a `kill -9` comes). [`Task::pause`] still waits for every task before
    /// it.
    pub fn run_as_done_to<T, I, S>(&self, tasks: I, sink: S)
    where
        I: IntoIterator<Item = Task<T>>,
        S: Sink<T>,
    {
        self.run_with(tasks, sink, Order::Done)
    }

    fn run_with<T, I, S>(&self, tasks: I, mut sink: S, order: Order)
    where
        I: IntoIterator<Item = Task<T>>,
        S: Sink<T>,
    {
        thread::scope(|scope| {
            // Room for every lane of every worker twice over: a reader filling its lanes
            // with small files finds them opened and waiting.
            let queue = (self.threads.get() * 2 * lanes::MAX_LANES).min(MAX_QUEUED_JOBS);
            let (job_tx, job_rx) = bounded::<Job>(queue);
            // Two batches of inputs to open per worker: one that it opens, the next that
            // keeps its lanes full meanwhile.
            let (open_tx, open_rx) = bounded::<Vec<Opening>>(2 * self.threads.get());
            let (done_tx, done_rx) = unbounded::<Vec<Done>>();
            let (opened_tx, opened_rx) = unbounded::<Vec<Opened>>();
            // Fewer workers than asked for (the system refused more threads) still hash
            // correctly; none at all fails every input instead of panicking.
            let mut started = 0;
            let mut refusal = None;
            let busy = Arc::new(AtomicUsize::new(0));
            let died = Arc::new(AtomicBool::new(false));
            let dealer = Arc::new(Dealer::new(self.cores, self.threads));
            for _ in 0..self.threads.get() {
                let queues = (&job_rx, &open_rx, &done_tx, &opened_tx);
                match self.spawn_worker(scope, queues, &busy, &died, &dealer) {
                    Ok(()) => started += 1,
                    Err(e) => {
                        refusal = Some(e);
                        break;
                    }
                }
            }
            drop((job_rx, open_rx, done_tx, opened_tx));
            if let (0, Some(e)) = (started, refusal) {
                for task in tasks {
                    let error =
                        || std::io::Error::new(e.kind(), format!("cannot start a worker: {e}"));
                    match task.0 {
                        Step::Run { input, context, .. } => {
                            sink.take(context, input.map(|_| Err(error().into())))
                        }
                        Step::Pause => sink.idle(),
                    }
                }
                return;
            }

            let channels = Channels {
                jobs: job_tx,
                opens: open_tx,
                done: &done_rx,
                opened: &opened_rx,
                died: &died,
                cancelled: &|| self.cancelled(),
            };
            Coordinator::new(self.multi_buffer, order, sink).run(tasks, channels);
        });
    }
}

impl Engine {
    /// Starts one worker: a reader thread and a hasher thread joined by `read_ahead` buffers.
    fn spawn_worker<'scope>(
        &self,
        scope: &'scope thread::Scope<'scope, '_>,
        (jobs, opens, done, opened): Queues,
        busy: &Arc<AtomicUsize>,
        died: &Arc<AtomicBool>,
        dealer: &Arc<Dealer>,
    ) -> std::io::Result<()> {
        let (chunk_tx, chunk_rx) = bounded::<Msg>(self.read_ahead);
        // Enough buffers for two rounds of the widest lane set; they allocate (fallibly) when
        // first read into, and the reader reuses the most recent first, so a worker that reads
        // one job at a time, maps windows, or only meets small files never holds them all.
        let buffers = self.read_ahead.max(2 * lanes::MAX_LANES);
        let (free_tx, free_rx) = bounded::<Vec<Buffer>>(buffers);
        let reader = Reader {
            jobs: jobs.clone(),
            opens: opens.clone(),
            chunk_size: self.chunk_size(),
            solo_chunk_size: self.solo_chunk_size(),
            busy: busy.clone(),
            dealer: dealer.clone(),
            read_mode: self.read_mode,
            file_systems: FileSystems::default(),
            multi_buffer: self.multi_buffer,
            free: free_rx,
            spare: (0..buffers).map(|_| Buffer::new()).collect(),
            buffers,
            out: chunk_tx,
            done: done.clone(),
            opened: opened.clone(),
            meter: self.meter.clone(),
            cancel: self.cancel.clone(),
        };
        let (done, meter) = (done.clone(), self.meter.clone());
        let priority = self.priority;
        let (hasher_alive, reader_alive) = (Alive::new(died, &done), Alive::new(died, &done));
        // The hasher first: a reader without a hasher would take a job and lose it.
        thread::Builder::new()
            .name("mtsum-hasher".into())
            .spawn_scoped(scope, move || {
                let _alive = hasher_alive;
                hash_jobs(chunk_rx, free_tx, done, meter)
            })?;
        // Counted idle before it runs, so that a reader already busy leaves it jobs.
        dealer.enlist();
        thread::Builder::new()
            .name("mtsum-reader".into())
            .spawn_scoped(scope, move || {
                let _alive = reader_alive;
                priority.apply_to_this_thread();
                reader.run()
            })
            .inspect_err(|_| dealer.discharge())?;
        Ok(())
    }
}

/// A worker's ends of the queues: jobs and batches of inputs to open in, digests of jobs and
/// reports on inputs out.
type Queues<'a> = (
    &'a Receiver<Job>,
    &'a Receiver<Vec<Opening>>,
    &'a Sender<Vec<Done>>,
    &'a Sender<Vec<Opened>>,
);

/// Whether a cancel flag ([`Engine::with_cancel`]) is given and set.
fn is_set(cancel: Option<&AtomicBool>) -> bool {
    cancel.is_some_and(|c| c.load(Ordering::Relaxed))
}

/// Held by a worker thread: if it panics, the job it held will never be done, so it says so
/// and wakes the coordinator, which must not wait for that job.
struct Alive {
    died: Arc<AtomicBool>,
    done: Sender<Vec<Done>>,
}

impl Alive {
    fn new(died: &Arc<AtomicBool>, done: &Sender<Vec<Done>>) -> Alive {
        Alive {
            died: died.clone(),
            done: done.clone(),
        }
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        if thread::panicking() {
            self.died.store(true, Ordering::Relaxed);
            let _ = self.done.send(Vec::new());
        }
    }
}

/// One unit of work for [`Engine::run`]: an input to hash with its request, or a note that
/// only needs to come out in order (an error met while walking a directory, say), and the
/// caller's context, handed back with the result; or a pause of the task source
/// ([`Task::pause`]).
pub struct Task<T>(Step<T>);

/// What a [`Task`] asks of the engine. Every task but a rare pause runs an input: a box for
/// its request would cost an allocation per file for nothing.
#[allow(clippy::large_enum_variant)]
enum Step<T> {
    /// Hash `input` (nothing when `None`) and hand `context` back with the outcome.
    Run {
        input: Option<(Target, Request)>,
        /// Only the jobs in a byte range ([`Engine::hash_jobs_in`]).
        slice: Option<Slice>,
        context: T,
    },
    /// See [`Task::pause`].
    Pause,
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
        Task(Step::Run {
            input: Some((target, request)),
            slice: None,
            context,
        })
    }

    /// Hash nothing; hand `context` back in its place in the order.
    pub fn pass(context: T) -> Task<T> {
        Task(Step::Run {
            input: None,
            slice: None,
            context,
        })
    }

    /// Report nothing, but take the next task only once every task before this one is
    /// reported and the sink was told it is idle ([`Sink::idle`]): for a task source whose
    /// next task may be long in coming (a line of a sum file still to be written to a pipe),
    /// so that the results before it are written out meanwhile, not held until it comes.
    /// The engine takes tasks ahead of the workers, so without it a source that waits holds
    /// up the results of the tasks it gave before.
    ///
    /// Workers that finish meanwhile get nothing new to do: a source should pause only when
    /// it is about to wait (a pipe with nothing to read yet), not before every read.
    pub fn pause() -> Task<T> {
        Task(Step::Pause)
    }
}

/// From a reader to the coordinator: what became of an input it opened.
enum Opened {
    /// Too large for one reader (or a stream): its jobs, for the coordinator to queue for
    /// every worker and fold.
    Shared { input: usize, planned: Planned },
    /// A stream that its layout can hash only once held in memory, which the coordinator
    /// does, keeping the memory held bounded.
    Hold(Unplanned),
    /// Hashed whole by the reader, or failed to open.
    Hashed {
        input: usize,
        result: Result<FileDigest, InputError>,
    },
    /// The reader stopped before it was done with the input (its hasher died).
    Lost { input: usize },
    /// Inputs of a batch given back unopened, for a reader that waits for work.
    Returned(Vec<Opening>),
}

/// A range of one input to hash into one digest.
struct Job {
    input: usize,
    index: usize,
    /// How many jobs of the same input the coordinator queues right after this one: a
    /// reader that starts lanes waits for them to fill its lanes.
    later: usize,
    start: u64,
    layout: Layout,
    alg: Algorithm,
    /// How the job is hashed as one stream ([`Layout::plan`]); lanes hash it from its layout
    /// and algorithm instead.
    kind: JobKind,
    source: JobSource,
    /// For an input with side outputs: its plan, in which this job is read `index`; never
    /// in lanes.
    side: Option<Arc<SidePlan>>,
}

impl Job {
    /// A hasher for the job; one of side outputs may share a chunk's layouts among `width`
    /// threads, and (`multi_buffer`) hash some in SIMD lanes.
    fn hashing(&self, width: usize, multi_buffer: bool) -> Hashing {
        match &self.side {
            Some(plan) => Hashing::Side(Box::new(plan.hasher(self.index, width, multi_buffer))),
            None => Hashing::One(self.layout.hasher_for(self.alg, self.kind)),
        }
    }
}

/// The order in which the sink takes the outcomes ([`Engine::run_as_done_to`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    Tasks,
    Done,
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
    /// The chunks that follow, up to `End`, are one job, hashed so.
    Begin(Box<Hashing>),
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
    result: Result<(Range<u64>, Out), InputError>,
}

/// A job by its input and its index in the input.
type JobKey = (usize, usize);
