//! The hasher half of a worker: hashes what its reader sends, one job as a stream or a round
//! of lane slots through one SIMD lane set, and reports each job's digest.

use std::collections::HashMap;

use crossbeam_channel::{Receiver, Sender};

use super::pace::Meter;
use super::side::{Hashing, Out};
use super::{Done, JobKey, LaneOp, Msg};
use crate::lanes::{Event, Kernel, Lane, Lanes};
use crate::source::{Buffer, Chunk, InputError};

/// Hashes one chunk into `hasher`, counts it ([`Meter::count`]: progress, rate limit), and
/// hands back its buffer with whether its bytes were really the file's (see
/// [`Chunk::finish`]).
pub(super) fn absorb(
    hasher: &mut Hashing,
    chunk: Chunk,
    meter: &Meter,
) -> (Buffer, Result<(), InputError>) {
    hasher.update_pieces(chunk.pieces());
    meter.count(chunk.len() as u64);
    chunk.finish()
}

/// The hasher half of a worker.
pub(super) fn hash_jobs(
    chunks: Receiver<Msg>,
    free: Sender<Vec<Buffer>>,
    done: Sender<Vec<Done>>,
    meter: Meter,
) {
    let out = Outlets {
        free: &free,
        done: &done,
        meter: &meter,
    };
    let mut hasher = None;
    // A chunk whose bytes turned out not to be the file's (a mapped page past its end).
    let mut spoiled = None;
    let mut lanes: Option<LaneHasher> = None;
    for msg in chunks {
        match msg {
            Msg::Begin(hashing) => hasher = Some(*hashing),
            Msg::Chunk(chunk) => {
                let h = hasher.as_mut().expect("Begin comes first");
                let (buf, ok) = absorb(h, chunk, out.meter);
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
    meter: &'a Meter,
}

/// A chunk in a lane, with the job it belongs to.
pub(super) struct Part {
    pub(super) key: JobKey,
    pub(super) chunk: Chunk,
}

impl AsRef<[u8]> for Part {
    fn as_ref(&self) -> &[u8] {
        // Lane reads are staggered, never spread: their bytes lie side by side.
        self.chunk
            .contiguous()
            .expect("a lane's chunk is read side by side")
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
            self.handle(event, out.meter);
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

    fn handle(&mut self, event: Event<JobKey, Part>, meter: &Meter) {
        match event {
            Event::Consumed(part) => {
                meter.count(part.chunk.len() as u64);
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
                    None => read.map(|len| (job.start..job.start + len, Out::One(digest))),
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
