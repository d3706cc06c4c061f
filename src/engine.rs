//! The engine: hashes the jobs of many inputs on a pool of workers and folds each input's
//! job digests into its root, handing results back in input order.
//!
//! Each worker is a pair of threads joined by a short pipeline of buffers: a *reader* that
//! takes the next job from the shared queue and reads its chunks ahead (positioned reads, so
//! workers never share a file offset; or `O_DIRECT` reads, or mapped windows: see
//! [`ReadMode`]), and a *hasher* that only hashes. Reading therefore never stalls hashing,
//! and memory is bounded by `threads × read_ahead × chunk_size` whatever the file or leaf
//! size: a 128 MiB leaf is hashed as a stream of chunks.
//!
//! One queue serves all inputs: a huge file spreads its jobs over every worker, small files
//! are hashed side by side, and the root never depends on which worker hashed what, because
//! [`Combiner`] folds by job index.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Select, Sender, bounded, unbounded};

use crate::algorithm::{Algorithm, Digest};
use crate::layout::{Combiner, JobHasher, Layout};
use crate::source::{
    Buffer, Chunk, Fallback, Input, InputError, ReadMode, SizedFile, Target, read_stream_chunk,
};

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
    pub root: Digest,
    /// Bytes hashed.
    pub size: u64,
    /// The leaf digests in order, when [`Request::keep_leaves`] asked for them.
    pub leaves: Option<Vec<Digest>>,
    /// From opening the input to its root.
    pub elapsed: Duration,
    /// The engine's [`ReadMode`] that this input refused, and what it was read with instead
    /// (`O_DIRECT` on tmpfs, say), for a note under `--verbose`.
    pub fallback: Option<Fallback>,
}

/// A pool of workers; cheap to create, threads live only during a call.
#[derive(Clone, Debug)]
pub struct Engine {
    threads: NonZeroUsize,
    /// Bytes per read or mapped window; `None` for the default of the read mode.
    chunk_size: Option<usize>,
    read_ahead: usize,
    read_mode: ReadMode,
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
    /// Chunks each reader may have read ahead of its hasher.
    pub const DEFAULT_READ_AHEAD: usize = 4;

    /// An engine with `threads` workers.
    pub fn new(threads: NonZeroUsize) -> Engine {
        Engine {
            threads,
            chunk_size: None,
            read_ahead: Self::DEFAULT_READ_AHEAD,
            read_mode: ReadMode::Pread,
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
            let (job_tx, job_rx) = bounded::<Job>(self.threads.get());
            let (done_tx, done_rx) = unbounded::<Done>();
            // Fewer workers than asked for (the system refused more threads) still hash
            // correctly; none at all fails every input instead of panicking.
            let mut started = 0;
            let mut refusal = None;
            for _ in 0..self.threads.get() {
                match self.spawn_worker(scope, &job_rx, &done_tx) {
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
            for done in done_rx {
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
        done: &Sender<Done>,
    ) -> std::io::Result<()> {
        let (chunk_tx, chunk_rx) = bounded::<Msg>(self.read_ahead);
        let (free_tx, free_rx) = bounded::<Buffer>(self.read_ahead);
        for _ in 0..self.read_ahead {
            // Buffers allocate (fallibly) when first read into: a worker that maps windows,
            // or only meets small files, never holds its full share of memory.
            free_tx.send(Buffer::new()).expect("room for every buffer");
        }
        let (jobs, recycle, done) = (jobs.clone(), free_tx.clone(), done.clone());
        let (progress, chunk_size) = (self.progress.clone(), self.chunk_size());
        let (reader_done, reader_progress) = (done.clone(), progress.clone());
        // The hasher first: a reader without a hasher would take a job and lose it.
        thread::Builder::new()
            .name("mtsum-hasher".into())
            .spawn_scoped(scope, move || hash_jobs(chunk_rx, free_tx, done, progress))?;
        thread::Builder::new()
            .name("mtsum-reader".into())
            .spawn_scoped(scope, move || {
                read_jobs(
                    jobs,
                    chunk_size,
                    free_rx,
                    recycle,
                    chunk_tx,
                    reader_done,
                    reader_progress,
                )
            })?;
        Ok(())
    }
}

/// One unit of work for [`Engine::run`]: an input to hash with its request, or a note that
/// only needs to come out in order (an error met while walking a directory, say), and the
/// caller's context, handed back with the result.
pub struct Task<T> {
    input: Option<(Target, Request)>,
    context: T,
}

impl<T> Task<T> {
    /// Hash `target` as `request` says.
    pub fn hash(target: Target, request: Request, context: T) -> Task<T> {
        Task {
            input: Some((target, request)),
            context,
        }
    }

    /// Hash nothing; hand `context` back in its place in the order.
    pub fn pass(context: T) -> Task<T> {
        Task {
            input: None,
            context,
        }
    }
}

/// Queues `job`, handling finished jobs while the queue is full so that workers never wait
/// for the coordinator.
fn send_job<T, F>(jobs: &Sender<Job>, job: Job, done: &Receiver<Done>, c: &mut Coordinator<T, F>)
where
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
        c.on_done(finished);
    }
}

/// A range of one input to hash into one digest.
struct Job {
    input: usize,
    index: usize,
    start: u64,
    layout: Layout,
    alg: Algorithm,
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
    Begin(Layout, Algorithm),
    Chunk(Chunk),
    End {
        input: usize,
        index: usize,
        start: u64,
        /// Bytes read.
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
fn read_jobs(
    jobs: Receiver<Job>,
    chunk_size: usize,
    free: Receiver<Buffer>,
    recycle: Sender<Buffer>,
    out: Sender<Msg>,
    done: Sender<Done>,
    progress: Option<Arc<AtomicU64>>,
) {
    let mut next_buffer = || free.recv().ok();
    for job in jobs {
        // A job of at most one chunk (a small file, an empty leaf) is hashed right here:
        // handing it to the hasher would cost more in wake-ups than the hashing itself.
        if let JobSource::At(shared, len) = &job.source {
            if *len <= chunk_size as u64 {
                let range = job.start..job.start + len;
                let reader = shared.file.range_reader(range, chunk_size);
                let hasher = job.layout.job_hasher(job.alg);
                let small = Small {
                    shared,
                    next_buffer: &mut next_buffer,
                    recycle: &recycle,
                    progress: progress.as_deref(),
                };
                let Some(result) = small.hash(reader, hasher) else {
                    return;
                };
                let (input, index) = (job.input, job.index);
                if done
                    .send(Done {
                        input,
                        index,
                        result,
                    })
                    .is_err()
                {
                    return;
                }
                continue;
            }
        }
        if out.send(Msg::Begin(job.layout, job.alg)).is_err() {
            return;
        }
        let result = match job.source {
            JobSource::At(shared, len) => {
                let range = job.start..job.start + len;
                read_range(&shared, range, chunk_size, &mut next_buffer, &recycle, &out)
            }
            JobSource::Stream(reader) => {
                read_stream(reader, chunk_size, &mut next_buffer, &recycle, &out)
            }
        };
        let Some(result) = result else { return };
        let end = Msg::End {
            input: job.input,
            index: job.index,
            start: job.start,
            result,
        };
        if out.send(end).is_err() {
            return;
        }
    }
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

/// What a reader needs to hash a small job by itself.
struct Small<'a, F> {
    shared: &'a SharedFile,
    next_buffer: &'a mut F,
    recycle: &'a Sender<Buffer>,
    progress: Option<&'a AtomicU64>,
}

impl<F: FnMut() -> Option<Buffer>> Small<'_, F> {
    /// Reads what `reader` covers into `hasher`; the job's range and digest, or why not;
    /// `None` when the pipeline shut down.
    fn hash(
        self,
        mut reader: crate::source::RangeReader<'_>,
        mut hasher: JobHasher,
    ) -> Option<Result<(Range<u64>, Digest), InputError>> {
        let start = reader.position();
        while !reader.is_done() && !self.shared.failed.load(Ordering::Relaxed) {
            let (buf, ok) = match reader.next_chunk((self.next_buffer)()?) {
                Ok(chunk) => absorb(&mut hasher, chunk, self.progress),
                Err((buf, e)) => (buf, Err(e)),
            };
            let _ = self.recycle.send(buf);
            if let Err(e) = ok {
                return Some(Err(e));
            }
        }
        Some(Ok((start..reader.position(), hasher.finalize())))
    }
}

/// Reads `range` of a file as chunks; `None` when the pipeline shut down.
fn read_range(
    shared: &SharedFile,
    range: Range<u64>,
    chunk_size: usize,
    next_buffer: &mut impl FnMut() -> Option<Buffer>,
    recycle: &Sender<Buffer>,
    out: &Sender<Msg>,
) -> Option<Result<u64, InputError>> {
    let start = range.start;
    let mut reader = shared.file.range_reader(range, chunk_size);
    while !reader.is_done() && !shared.failed.load(Ordering::Relaxed) {
        match reader.next_chunk(next_buffer()?) {
            Ok(chunk) => out.send(Msg::Chunk(chunk)).ok()?,
            Err((buf, e)) => {
                let _ = recycle.send(buf);
                return Some(Err(e));
            }
        }
    }
    Some(Ok(reader.position() - start))
}

/// Reads a stream to its end as chunks; `None` when the pipeline shut down.
fn read_stream(
    mut reader: Box<dyn Read + Send>,
    chunk_size: usize,
    next_buffer: &mut impl FnMut() -> Option<Buffer>,
    recycle: &Sender<Buffer>,
    out: &Sender<Msg>,
) -> Option<Result<u64, InputError>> {
    let mut done = 0;
    loop {
        match read_stream_chunk(&mut *reader, next_buffer()?, chunk_size) {
            Ok(chunk) if chunk.bytes().is_empty() => {
                let _ = recycle.send(chunk.finish().0);
                return Some(Ok(done));
            }
            Ok(chunk) => {
                done += chunk.bytes().len() as u64;
                out.send(Msg::Chunk(chunk)).ok()?;
            }
            Err((buf, e)) => {
                let _ = recycle.send(buf);
                return Some(Err(e));
            }
        }
    }
}

/// The hasher half of a worker.
fn hash_jobs(
    chunks: Receiver<Msg>,
    free: Sender<Buffer>,
    done: Sender<Done>,
    progress: Option<Arc<AtomicU64>>,
) {
    let mut hasher = None;
    // A chunk whose bytes turned out not to be the file's (a mapped page past its end).
    let mut spoiled = None;
    for msg in chunks {
        match msg {
            Msg::Begin(layout, alg) => hasher = Some(layout.job_hasher(alg)),
            Msg::Chunk(chunk) => {
                let h = hasher.as_mut().expect("Begin comes first");
                let (buf, ok) = absorb(h, chunk, progress.as_deref());
                let _ = free.send(buf);
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
                    .send(Done {
                        input,
                        index,
                        result,
                    })
                    .is_err()
                {
                    return;
                }
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
    error: Option<InputError>,
    started: Instant,
}

type Outcome = Option<Result<FileDigest, InputError>>;

/// Plans inputs into jobs, folds finished jobs, and hands results out in input order.
struct Coordinator<T, F> {
    read_mode: ReadMode,
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
        let context = task.context;
        let (layout, alg) = (request.layout, request.algorithm);
        let job = |index_in_input: usize, start: u64, source: JobSource| Job {
            input: index,
            index: index_in_input,
            start,
            layout,
            alg,
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
            Ok(Input::Stream(reader)) => (None, vec![job(0, 0, JobSource::Stream(reader))]),
            Ok(Input::Sized(file)) => {
                let ranges = layout.jobs(file.len(), request.keep_leaves);
                if request.keep_leaves && ranges.len() > MAX_KEPT_LEAVES {
                    let e = InputError::TooManyLeaves {
                        leaves: ranges.len(),
                        max: MAX_KEPT_LEAVES,
                    };
                    return self.fail_now(index, context, e);
                }
                let shared = Arc::new(SharedFile {
                    file,
                    failed: AtomicBool::new(false),
                });
                let jobs = ranges
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| job(i, r.start, JobSource::At(shared.clone(), r.end - r.start)))
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
            leaves: request.keep_leaves.then(|| vec![None; jobs.len()]),
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
                p.combiner.add(done.index, range, digest);
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
            None => unchanged().map(|()| FileDigest {
                root: p.combiner.finish(p.size),
                size: p.size,
                leaves: p.leaves.map(|l| l.into_iter().flatten().collect()),
                elapsed: p.started.elapsed(),
                fallback: p.file.as_ref().and_then(|f| f.file.fallback().cloned()),
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
