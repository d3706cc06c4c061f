//! The audit's reads: each file read once, from start to end, by one of a few reader threads,
//! and every digest the audit needs of it computed from that one read (the record's own, the
//! new algorithm's of a migration, the leaf digests of its outboard tree).
//!
//! Audits read differently from `mtsum FILE`, which spreads one file over every core: a
//! file server's audit is many files on disks that are slower than one core's hash function,
//! where what matters is reading each file once, sequentially, in an order the disk likes, no
//! faster than the machine's other users allow ([`Io::rate_limit`]), and at idle I/O priority.
//! Files are read side by side by [`Io::readers`] threads and come back in the order they were
//! handed in.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Select, Sender, bounded, unbounded};

use crate::algorithm::{Algorithm, Digest};
use crate::layout::{Combiner, JobHasher, JobKind, Layout, NoRoot, Root};
use crate::source::{
    Buffer, Chunk, Input, InputError, MAX_HELD_STREAM, ReadMode, SizedFile, Target, hold_stream,
    read_stream_chunk,
};

use super::plan::{self, IoPriority, Place};

/// Bytes per read: large sequential reads, which is what a spinning disk wants too.
const CHUNK: usize = 2 << 20;

/// How the audit reads.
#[derive(Clone, Debug, Default)]
pub struct Io {
    /// Files read at once; `None`: one per available core.
    pub readers: Option<NonZeroUsize>,
    pub read_mode: ReadMode,
    /// At most this many bytes per second on average, over all readers.
    pub rate_limit: Option<u64>,
    /// Bytes read so far, for a progress display.
    pub progress: Option<Arc<AtomicU64>>,
    /// The I/O priority of the readers: idle unless told otherwise.
    pub priority: IoPriority,
}

impl PartialEq for Io {
    fn eq(&self, other: &Io) -> bool {
        self.readers == other.readers
            && self.read_mode == other.read_mode
            && self.rate_limit == other.rate_limit
            && self.priority == other.priority
            && self.progress.as_ref().map(Arc::as_ptr) == other.progress.as_ref().map(Arc::as_ptr)
    }
}

impl Eq for Io {}

impl Io {
    fn reader_count(&self) -> usize {
        self.readers
            .or_else(|| thread::available_parallelism().ok())
            .map_or(1, NonZeroUsize::get)
    }
}

/// Files on rotational disks handed to the readers at once, in physical order: enough for the
/// head to sweep, few enough that verdicts keep coming.
const WINDOW: usize = 1024;

/// What to compute from one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Want {
    /// Whole-file digests.
    pub digests: Vec<(Layout, Algorithm)>,
    /// The leaf digests of this fixed-leaf layout (an outboard tree).
    pub leaves: Option<(Layout, Algorithm)>,
}

/// What one read of a file gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hashed {
    /// One value per [`Want::digests`], in order, whole (S3's with its part count).
    pub digests: Vec<Root>,
    /// Bytes read.
    pub size: u64,
    /// The leaf digests, if [`Want::leaves`] asked for them (never of a streamed file).
    pub leaves: Option<Vec<Digest>>,
    /// Whether the file was read as a stream to its end, its file system not telling its
    /// size (procfs, sysfs: see [`Input::open_with`]): [`Hashed::size`] is then the bytes
    /// read, which `st_size` is not.
    pub streamed: bool,
}

/// The digest of a whole stream of known length in one layout, fed in order: the jobs of
/// [`Layout::plan`] hashed one after the other and folded by [`Combiner`], exactly as the
/// engine folds them when it hashes them in parallel.
struct Sequential {
    layout: Layout,
    alg: Algorithm,
    jobs: std::vec::IntoIter<(Range<u64>, JobKind)>,
    /// The job being fed, its index, and its bytes still to come.
    current: Option<(usize, Range<u64>, JobHasher, u64)>,
    next_index: usize,
    combiner: Combiner,
    /// Every job digest, kept when they are the leaves.
    kept: Option<Vec<Digest>>,
}

impl Sequential {
    /// The digest of `len` bytes, with the job digests kept if `keep_leaves`.
    fn new(layout: Layout, alg: Algorithm, len: u64, keep_leaves: bool) -> Sequential {
        let mut s = Sequential {
            layout,
            alg,
            jobs: layout.plan(alg, len, keep_leaves).into_iter(),
            current: None,
            next_index: 0,
            combiner: layout.combiner(alg),
            kept: keep_leaves.then(Vec::new),
        };
        s.advance();
        s
    }

    /// The digest of a stream of unknown length, for a layout that takes one: like the
    /// engine, one job of [`JobKind::Layout`] from the first byte to the last, whose end is
    /// known at [`Sequential::finish`].
    fn stream(layout: Layout, alg: Algorithm) -> Sequential {
        debug_assert!(!layout.needs_length());
        Sequential {
            layout,
            alg,
            jobs: Vec::new().into_iter(),
            current: Some((0, 0..u64::MAX, layout.job_hasher(alg), u64::MAX)),
            next_index: 1,
            combiner: layout.combiner(alg),
            kept: None,
        }
    }

    /// Finishes the jobs that need no more bytes and starts the next one that does.
    fn advance(&mut self) {
        loop {
            if let Some((_, _, _, 0)) = &self.current {
                let (index, range, hasher, _) = self.current.take().expect("a job");
                let digest = hasher.finalize();
                if let Some(kept) = &mut self.kept {
                    kept.push(digest);
                }
                self.combiner.add(index, range, digest);
            }
            if self.current.is_some() {
                return;
            }
            let Some((range, kind)) = self.jobs.next() else {
                return;
            };
            let hasher = self.layout.hasher_for(self.alg, kind);
            let left = range.end - range.start;
            self.current = Some((self.next_index, range, hasher, left));
            self.next_index += 1;
        }
    }

    fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let Some((_, _, hasher, left)) = &mut self.current else {
                return;
            };
            let take = (*left).min(data.len() as u64) as usize;
            hasher.update(&data[..take]);
            *left -= take as u64;
            data = &data[take..];
            self.advance();
        }
    }

    /// The root (an error for a stream the layout has no root for, such as an
    /// empty file in BitTorrent v2), and the leaves if they were kept.
    fn finish(mut self, len: u64) -> Result<(Root, Option<Vec<Digest>>), NoRoot> {
        // A stream's one job ends where the stream did.
        if let Some((index, range, hasher, _)) = self.current.take() {
            debug_assert_eq!(range.end, u64::MAX, "every byte of a known length was fed");
            self.combiner
                .add(index, range.start..len, hasher.finalize());
        }
        let root = self.combiner.finish(len)?;
        Ok((root, self.kept))
    }
}

/// Shares the average rate of all readers: after each read, the reader waits until the bytes
/// read so far, that read's included, are no more than `rate` per second since the first one.
/// (Waiting only for the bytes before a read would let the last read of an audit through
/// unpaid: a file of one chunk would be read at once whatever the rate.)
#[derive(Debug)]
pub struct RateLimiter {
    rate: u64,
    state: Mutex<Option<(Instant, u64)>>,
}

impl RateLimiter {
    pub fn new(bytes_per_second: u64) -> RateLimiter {
        RateLimiter {
            rate: bytes_per_second.max(1),
            state: Mutex::new(None),
        }
    }

    /// Counts `bytes` just read, and waits until they are due.
    pub fn take(&self, bytes: u64) {
        let wait = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let (start, used) = state.get_or_insert((Instant::now(), 0));
            *used += bytes;
            let due = Duration::from_secs_f64(*used as f64 / self.rate as f64);
            (*start + due).saturating_duration_since(Instant::now())
        };
        if !wait.is_zero() {
            thread::sleep(wait);
        }
    }
}

/// Chunks shorter than this feed several sinks one after the other on the reader's thread:
/// a thread per sink costs tens of microseconds to start, as much as hashing 64 KiB, and the
/// first record of a tree of small files (a record's digest and its leaves from each file)
/// started one for every file.
const SIDE_BY_SIDE_MIN: usize = 256 << 10;

/// Feeds `bytes` to every sink: several digests of one read (a record's and its leaves, a
/// migration's) of a large chunk are hashed side by side on as many cores, so that one
/// reader on a spinning disk still keeps the cores busy. A thread per sink and chunk costs
/// some microseconds against the milliseconds of hashing a chunk; where the system refuses a
/// thread, the sink is fed here instead.
fn update_all(sinks: &mut [Sequential], bytes: &[u8]) {
    let Some((first, rest)) = sinks.split_first_mut() else {
        return;
    };
    if rest.is_empty() || bytes.len() < SIDE_BY_SIDE_MIN {
        return sinks.iter_mut().for_each(|sink| sink.update(bytes));
    }
    let others: Vec<Mutex<&mut Sequential>> = rest.iter_mut().map(Mutex::new).collect();
    let lock = |m: &Mutex<&mut Sequential>| {
        let mut sink = m.lock().unwrap_or_else(|e| e.into_inner());
        sink.update(bytes);
    };
    thread::scope(|scope| {
        let mut refused = Vec::new();
        for other in &others {
            if thread::Builder::new()
                .name("mtsum-hash".into())
                .spawn_scoped(scope, move || lock(other))
                .is_err()
            {
                refused.push(other);
            }
        }
        first.update(bytes);
        for other in refused {
            lock(other);
        }
    });
}

/// Reads the regular file `path` once and computes what `want` asks.
pub fn hash_file(
    path: &std::path::Path,
    want: &Want,
    io: &Io,
    limiter: Option<&RateLimiter>,
) -> Result<Hashed, InputError> {
    // Audited files are regular files: one replaced by a FIFO is refused, not waited for.
    let target = Target::File(path.to_path_buf());
    match Input::open_with(&target, io.read_mode)? {
        Input::Sized(file) => match hash_sized(&file, want, io, limiter) {
            // A file system that misreports the size: the file is read again, to its end.
            Err(InputError::SizeMisreported { .. }) => {
                hash_stream(file.to_stream()?, want, io, limiter)
            }
            other => other,
        },
        Input::Stream(reader) => hash_stream(reader, want, io, limiter),
    }
}

/// Reads `file` from its first byte to its `len`th and computes what `want` asks.
fn hash_sized(
    file: &SizedFile,
    want: &Want,
    io: &Io,
    limiter: Option<&RateLimiter>,
) -> Result<Hashed, InputError> {
    let len = file.len();
    // The whole-file digests first, the leaves last.
    let mut sinks: Vec<Sequential> = want
        .digests
        .iter()
        .map(|&(layout, alg)| Sequential::new(layout, alg, len, false))
        .chain(
            want.leaves
                .map(|(layout, alg)| Sequential::new(layout, alg, len, true)),
        )
        .collect();
    let mut reader = file.range_reader(0..len, CHUNK);
    feed(&mut sinks, io, limiter, |buffer| {
        if reader.is_done() {
            return Ok(None);
        }
        reader.next_chunk(buffer).map(Some).map_err(|(_, e)| e)
    })?;
    file.check_unchanged()?;
    let leaves = match want.leaves {
        Some(_) => sinks.pop().expect("the leaves").finish(len)?.1,
        None => None,
    };
    Ok(Hashed {
        digests: roots(sinks, len)?,
        size: len,
        leaves,
        streamed: false,
    })
}

/// Reads a file whose file system does not tell its size to its end, as `mtsum FILE` does,
/// and computes the digests `want` asks, but no leaf digests (an outboard's leaf size follows
/// a length known before reading, and a corruption map of a /proc file is of no use). Where a
/// layout needs the length, the file is held in memory, as the engine holds it.
fn hash_stream(
    mut reader: Box<dyn std::io::Read + Send>,
    want: &Want,
    io: &Io,
    limiter: Option<&RateLimiter>,
) -> Result<Hashed, InputError> {
    if let Some(&(layout, _)) = want.digests.iter().find(|(l, _)| l.needs_length()) {
        let held = hold_stream(&mut *reader, MAX_HELD_STREAM)?
            .ok_or(InputError::StreamNeedsLength(layout.name()))?;
        let digests_only = Want {
            digests: want.digests.clone(),
            leaves: None,
        };
        let hashed = hash_sized(&held, &digests_only, io, limiter)?;
        return Ok(Hashed {
            streamed: true,
            ..hashed
        });
    }
    let mut sinks: Vec<Sequential> = want
        .digests
        .iter()
        .map(|&(layout, alg)| Sequential::stream(layout, alg))
        .collect();
    let size = feed(&mut sinks, io, limiter, |buffer| {
        let chunk = read_stream_chunk(&mut *reader, buffer, CHUNK).map_err(|(_, e)| e)?;
        Ok((!chunk.is_empty()).then_some(chunk))
    })?;
    Ok(Hashed {
        digests: roots(sinks, size)?,
        size,
        leaves: None,
        streamed: true,
    })
}

/// Feeds the chunks `next` reads (`None`: the end) to every sink, no faster than `limiter`
/// allows, and counts them in [`Io::progress`]; the bytes fed.
fn feed(
    sinks: &mut [Sequential],
    io: &Io,
    limiter: Option<&RateLimiter>,
    mut next: impl FnMut(Buffer) -> Result<Option<Chunk>, InputError>,
) -> Result<u64, InputError> {
    let mut buffer = Buffer::new();
    let mut fed = 0;
    while let Some(chunk) = next(buffer)? {
        let len = chunk.len() as u64;
        for piece in chunk.pieces().iter() {
            update_all(sinks, piece);
        }
        if let Some(progress) = &io.progress {
            progress.fetch_add(len, Ordering::Relaxed);
        }
        // After hashing: the time spent on it is part of what the chunk waits.
        if let Some(limiter) = limiter {
            limiter.take(len);
        }
        fed += len;
        let (back, ok) = chunk.finish();
        ok?;
        buffer = back;
    }
    Ok(fed)
}

/// The roots of the whole-file digests of a stream of `len` bytes.
fn roots(sinks: Vec<Sequential>, len: u64) -> Result<Vec<Root>, NoRoot> {
    sinks
        .into_iter()
        .map(|s| s.finish(len).map(|(root, _)| root))
        .collect()
}

/// A file to read.
pub struct Read {
    pub path: PathBuf,
    pub want: Want,
    /// Where it lies, if that decides the order of reading (a rotational disk).
    pub place: Option<Place>,
}

/// One unit of work: a file to read, or a context that only has to come out in its place.
pub struct Work<T> {
    pub read: Option<Read>,
    pub context: T,
}

/// What [`in_order`] does with each piece of work: decides it as soon as its read is done
/// (or at once, for work that reads nothing), then reports the decisions in the order of the
/// work. Deciding is where an audit writes its records, so a file's record never waits for
/// files read after it in the order of the work (on a rotational disk, files are read in
/// physical order): a `kill -9` loses nothing decided.
pub trait Outcomes<T> {
    /// A decision, waiting for its turn to be reported.
    type Decided;
    /// What the read of the work with `context` gave (`None`: it reads nothing).
    fn decide(&mut self, context: T, result: Option<Result<Hashed, InputError>>) -> Self::Decided;
    /// Called once per piece of work, in the order of the work.
    fn report(&mut self, decided: Self::Decided);
    /// Called after each decision and every [`IDLE_TICK`] or so while the readers are busy,
    /// also when nothing is reported (a large file, a rotational disk's window read out of
    /// the order of the work): what was decided until then need not wait for a report.
    fn idle(&mut self) {}
}

/// How often [`Outcomes::idle`] is called while nothing else happens.
pub const IDLE_TICK: Duration = Duration::from_millis(200);

/// A piece of work before and after its decision.
enum Slot<T, D> {
    Reading(T),
    Decided(D),
}

/// Decides results as they come and reports them in the order of the work, each as soon as
/// all before it are.
struct Reorder<'a, T, O: Outcomes<T>> {
    waiting: BTreeMap<usize, Slot<T, O::Decided>>,
    next: usize,
    outcomes: &'a mut O,
}

impl<T, O: Outcomes<T>> Reorder<'_, T, O> {
    /// Work `index` with `context`, whose file is being read.
    fn reading(&mut self, index: usize, context: T) {
        self.waiting.insert(index, Slot::Reading(context));
    }

    /// Work `index` that reads nothing.
    fn ready(&mut self, index: usize, context: T) {
        let decided = self.outcomes.decide(context, None);
        self.waiting.insert(index, Slot::Decided(decided));
        self.flush();
    }

    fn done(&mut self, index: usize, result: Result<Hashed, InputError>) {
        if let Some(Slot::Reading(context)) = self.waiting.remove(&index) {
            let decided = self.outcomes.decide(context, Some(result));
            self.waiting.insert(index, Slot::Decided(decided));
        }
        self.flush();
        // Decided out of the order of the work, it may have nothing to report for long.
        self.outcomes.idle();
    }

    fn flush(&mut self) {
        while let Some(Slot::Decided(_)) = self.waiting.get(&self.next) {
            let Some(Slot::Decided(decided)) = self.waiting.remove(&self.next) else {
                unreachable!("just seen")
            };
            self.outcomes.report(decided);
            self.next += 1;
        }
    }
}

/// A file for a reader: its index in the work, its path, what to compute.
type Job = (usize, PathBuf, Want);

/// Hands `job` to the readers, deciding the results that come back while they are all busy:
/// a window of files in physical order may take long to hand out, and its results must not
/// wait for that.
fn hand_out<T, O: Outcomes<T>>(
    job: Job,
    jobs: &Sender<Job>,
    done: &Receiver<(usize, Result<Hashed, InputError>)>,
    out: &mut Reorder<'_, T, O>,
) {
    let mut select = Select::new();
    let send = select.send(jobs);
    select.recv(done);
    loop {
        let Ok(operation) = select.select_timeout(IDLE_TICK) else {
            out.outcomes.idle();
            continue;
        };
        if operation.index() == send {
            return operation.send(jobs, job).expect("readers run");
        }
        let (index, result) = operation.recv(done).expect("readers run");
        out.done(index, result);
    }
}

/// Runs `work` on [`Io::readers`] threads, decides each item with `outcomes` as soon as its
/// read is done (`None` for items that read nothing), and reports the decisions in the order
/// of `work`.
pub fn in_order<T, I, O>(io: &Io, work: I, outcomes: &mut O)
where
    I: IntoIterator<Item = Work<T>>,
    O: Outcomes<T>,
{
    let readers = io.reader_count();
    let limiter = io.rate_limit.map(RateLimiter::new);
    thread::scope(|scope| {
        let (job_tx, job_rx) = bounded::<Job>(readers);
        let (done_tx, done_rx) = unbounded::<(usize, Result<Hashed, InputError>)>();
        let mut started = 0;
        for _ in 0..readers {
            let (jobs, done, limiter) = (job_rx.clone(), done_tx.clone(), limiter.as_ref());
            let reader = thread::Builder::new().name("mtsum-audit".into());
            let spawned = reader.spawn_scoped(scope, move || {
                io.priority.apply_to_this_thread();
                for (index, path, want) in jobs {
                    let result = hash_file(&path, &want, io, limiter);
                    if done.send((index, result)).is_err() {
                        return;
                    }
                }
            });
            // Fewer readers than asked (the system refused a thread) still read everything.
            match spawned {
                Ok(_) => started += 1,
                Err(_) => break,
            }
        }
        drop((job_rx, done_tx));
        if started == 0 {
            // No reader at all: every file fails, in order, instead of a panic.
            for item in work {
                let error =
                    || InputError::Io(std::io::Error::other("cannot start a reader thread"));
                let decided = outcomes.decide(item.context, item.read.map(|_| Err(error())));
                outcomes.report(decided);
            }
            return;
        }
        // Contexts stay on this thread: only paths travel.
        let mut out = Reorder {
            waiting: BTreeMap::new(),
            next: 0,
            outcomes,
        };
        // Files on rotational disks wait in a window and go out in physical order.
        let mut window: Vec<(usize, Read)> = Vec::new();
        let send_window = |window: &mut Vec<(usize, Read)>, out: &mut Reorder<'_, T, O>| {
            let places: Vec<Place> = window
                .iter()
                .map(|(_, r)| r.place.expect("placed"))
                .collect();
            let mut taken: Vec<Option<(usize, Read)>> = window.drain(..).map(Some).collect();
            for i in plan::read_order(&places) {
                let (index, read) = taken[i].take().expect("each once");
                hand_out((index, read.path, read.want), &job_tx, &done_rx, out);
            }
        };
        for (index, item) in work.into_iter().enumerate() {
            match item.read {
                None => out.ready(index, item.context),
                Some(read) => {
                    out.reading(index, item.context);
                    if read.place.is_some_and(|p| p.rotational) {
                        window.push((index, read));
                        if window.len() == WINDOW {
                            send_window(&mut window, &mut out);
                        }
                    } else {
                        hand_out((index, read.path, read.want), &job_tx, &done_rx, &mut out);
                    }
                }
            }
            for (index, result) in done_rx.try_iter() {
                out.done(index, result);
            }
        }
        send_window(&mut window, &mut out);
        drop(job_tx);
        loop {
            match done_rx.recv_timeout(IDLE_TICK) {
                Ok((index, result)) => out.done(index, result),
                Err(RecvTimeoutError::Timeout) => out.outcomes.idle(),
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::LeafSize;
    use crate::reference;

    #[test]
    fn one_read_gives_every_layout_the_reference_digest_and_the_leaves() {
        let dir = tempfile::tempdir().unwrap();
        let leaf = LeafSize::new(4096).unwrap();
        for len in [0usize, 1, 4095, 4096, 4097, 3 * CHUNK + 5, (4 << 20) + 1] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
            let path = dir.path().join(format!("f{len}"));
            std::fs::write(&path, &data).unwrap();
            let specs = vec![
                (Layout::Plain, Algorithm::Blake3),
                (Layout::Plain, Algorithm::Sha256),
                (Layout::Mtsum, Algorithm::Md5),
                (Layout::Merkle(leaf), Algorithm::Sha1),
                (Layout::Glacier, Algorithm::Sha256),
                (Layout::Dropbox, Algorithm::Sha256),
                (
                    Layout::S3(crate::layout::PartSize::new(5 << 20).unwrap()),
                    Algorithm::Md5,
                ),
                (Layout::Plain, Algorithm::Crc32c),
            ];
            let want = Want {
                digests: specs.clone(),
                leaves: Some((Layout::Rfc6962(leaf), Algorithm::Sha256)),
            };
            let hashed = hash_file(&path, &want, &Io::default(), None).unwrap();
            assert_eq!(hashed.size, len as u64);
            for (i, (layout, alg)) in specs.into_iter().enumerate() {
                assert_eq!(
                    hashed.digests[i],
                    reference::checksum(layout, alg, &data).unwrap(),
                    "{len} {layout} {alg}"
                );
            }
            let leaves = hashed.leaves.unwrap();
            assert_eq!(leaves.len(), len.div_ceil(4096));
            for (i, d) in leaves.iter().enumerate() {
                let part = &data[i * 4096..len.min((i + 1) * 4096)];
                assert_eq!(*d, Layout::Rfc6962(leaf).hash_leaf(Algorithm::Sha256, part));
            }
        }
    }

    #[test]
    fn a_stream_gives_every_layout_that_takes_one_the_reference_digest() {
        let leaf = LeafSize::new(4096).unwrap();
        let specs = [
            (Layout::Plain, Algorithm::Blake3),
            (Layout::Plain, Algorithm::Sha256),
            (Layout::Plain, Algorithm::Crc32c),
            (Layout::Merkle(leaf), Algorithm::Sha1),
            (Layout::Rfc6962(leaf), Algorithm::Sha256),
            (Layout::Glacier, Algorithm::Sha256),
            (Layout::Dropbox, Algorithm::Sha256),
            (Layout::Btv2, Algorithm::Sha256),
            (
                Layout::S3(crate::layout::PartSize::new(5 << 20).unwrap()),
                Algorithm::Md5,
            ),
        ];
        for len in [0usize, 1, 4095, 4096, 4097, 3 * CHUNK + 5, (5 << 20) + 1] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
            // BitTorrent v2 has no root for no bytes.
            let specs: Vec<_> = specs
                .into_iter()
                .filter(|&(layout, _)| len > 0 || layout != Layout::Btv2)
                .collect();
            let want = Want {
                digests: specs.clone(),
                leaves: Some((Layout::Rfc6962(leaf), Algorithm::Blake3)),
            };
            let stream = Box::new(std::io::Cursor::new(data.clone()));
            let hashed = hash_stream(stream, &want, &Io::default(), None).unwrap();
            assert_eq!((hashed.size, hashed.streamed), (len as u64, true));
            assert_eq!(hashed.leaves, None, "no outboard of a stream");
            for (i, (layout, alg)) in specs.into_iter().enumerate() {
                assert_eq!(
                    hashed.digests[i],
                    reference::checksum(layout, alg, &data).unwrap(),
                    "{len} {layout} {alg}"
                );
            }
        }
    }

    #[test]
    fn a_stream_with_a_layout_that_needs_the_length_is_held_up_to_the_bound() {
        let want = Want {
            digests: vec![
                (Layout::Plain, Algorithm::Sha256),
                (Layout::Mtsum, Algorithm::Sha256),
            ],
            leaves: Some((
                Layout::Rfc6962(LeafSize::new(4096).unwrap()),
                Algorithm::Blake3,
            )),
        };
        for len in [0, 1, 5000, MAX_HELD_STREAM as usize] {
            let data: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
            let stream = Box::new(std::io::Cursor::new(data.clone()));
            let hashed = hash_stream(stream, &want, &Io::default(), None).unwrap();
            assert_eq!((hashed.size, hashed.streamed), (len as u64, true));
            assert_eq!(hashed.leaves, None, "no outboard of a stream");
            for (i, &(layout, alg)) in want.digests.iter().enumerate() {
                assert_eq!(
                    hashed.digests[i],
                    reference::checksum(layout, alg, &data).unwrap(),
                    "{len}"
                );
            }
        }
        let longer = std::io::Read::take(std::io::repeat(0), MAX_HELD_STREAM + 1);
        let e = hash_stream(Box::new(longer), &want, &Io::default(), None).unwrap_err();
        assert!(matches!(e, InputError::StreamNeedsLength("mtsum")), "{e}");
    }

    #[test]
    fn results_come_back_in_the_order_of_the_work() {
        let dir = tempfile::tempdir().unwrap();
        let mut work = Vec::new();
        for i in 0..50usize {
            let path = dir.path().join(i.to_string());
            std::fs::write(&path, vec![i as u8; (50 - i) * 1000]).unwrap();
            let want = Want {
                digests: vec![(Layout::Plain, Algorithm::Sha256)],
                leaves: None,
            };
            let read = (i % 7 != 3).then_some(Read {
                path,
                want,
                place: None,
            });
            work.push(Work { read, context: i });
        }
        let io = Io {
            readers: NonZeroUsize::new(4),
            ..Io::default()
        };
        let mut seen = Recorded::default();
        in_order(&io, work, &mut seen);
        for &(i, size) in &seen.decided {
            assert_eq!(size.is_none(), i % 7 == 3);
            if let Some(size) = size {
                assert_eq!(size, ((50 - i) * 1000) as u64);
            }
        }
        assert_eq!(seen.reported, (0..50).collect::<Vec<_>>());
    }

    /// The decisions in the order they were made, with the sizes read, and the reports.
    #[derive(Default)]
    struct Recorded {
        decided: Vec<(usize, Option<u64>)>,
        reported: Vec<usize>,
    }

    impl Outcomes<usize> for Recorded {
        type Decided = usize;
        fn decide(&mut self, i: usize, result: Option<Result<Hashed, InputError>>) -> usize {
            self.decided.push((i, result.map(|r| r.unwrap().size)));
            i
        }
        fn report(&mut self, i: usize) {
            self.reported.push(i);
        }
    }

    #[test]
    fn files_read_in_physical_order_are_decided_as_they_are_read_and_reported_in_order() {
        // One reader, and the walk's first file lies last on the disk: each file is decided
        // as soon as it is read (a record written, were this an audit), in physical order,
        // not held until the first one in walk order is read.
        let dir = tempfile::tempdir().unwrap();
        let n = 20usize;
        let work = (0..n).map(|i| {
            let path = dir.path().join(i.to_string());
            std::fs::write(&path, vec![i as u8; 1000 + i]).unwrap();
            let place = Place {
                dev: 1,
                rotational: true,
                physical: Some((n - i) as u64 * 4096),
                ino: 1,
            };
            let want = Want {
                digests: vec![(Layout::Plain, Algorithm::Blake3)],
                leaves: None,
            };
            let read = Some(Read {
                path,
                want,
                place: Some(place),
            });
            Work { read, context: i }
        });
        let io = Io {
            readers: NonZeroUsize::new(1),
            ..Io::default()
        };
        let mut seen = Recorded::default();
        in_order(&io, work.collect::<Vec<_>>(), &mut seen);
        let decided: Vec<usize> = seen.decided.iter().map(|&(i, _)| i).collect();
        assert_eq!(decided, (0..n).rev().collect::<Vec<_>>());
        for &(i, size) in &seen.decided {
            assert_eq!(size, Some((1000 + i) as u64));
        }
        assert_eq!(seen.reported, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn the_rate_limiter_holds_the_average_including_the_last_read() {
        let limiter = RateLimiter::new(1000);
        let start = Instant::now();
        limiter.take(100); // read: paid for until 0.1 s
        limiter.take(100); // until 0.2 s
        limiter.take(100); // until 0.3 s
        assert!(start.elapsed() >= Duration::from_millis(300));
    }
}
