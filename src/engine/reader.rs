//! The reader half of a worker: takes jobs from the shared queue and reads them ahead of its
//! hasher, one job as a stream of chunks, or many one-message jobs in rounds for SIMD lanes.

use std::io::Read;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_channel::{Receiver, Sender};

use super::hasher::absorb;
use super::{Done, Job, JobSource, LaneOp, Msg, SharedFile};
use crate::algorithm::Digest;
use crate::lanes::Kernel;
use crate::layout::JobHasher;
use crate::source::{Buffer, InputError, read_stream_chunk};

/// Bytes of buffers per worker for jobs in lanes: two rounds of one chunk per lane (so that
/// reading one round overlaps hashing the other). 8 MiB gives MD5's 16 lanes 256 KiB reads.
const LANE_BUFFER_BUDGET: usize = 8 << 20;

/// The reader half of a worker.
pub(super) struct Reader {
    pub(super) jobs: Receiver<Job>,
    pub(super) chunk_size: usize,
    /// Bytes per read of a file when this reader is the only one busy.
    pub(super) solo_chunk_size: usize,
    /// Readers with a job in hand, this one included while it has one.
    pub(super) busy: Arc<AtomicUsize>,
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
    pub(super) progress: Option<Arc<AtomicU64>>,
}

impl Reader {
    /// Takes jobs until the coordinator has no more; returns early when the pipeline shut
    /// down (the hasher or the coordinator is gone).
    pub(super) fn run(mut self) -> Option<()> {
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
