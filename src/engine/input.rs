//! One input from its opening to its result: the reader that takes it from the queue opens it
//! ([`Opening::open`]) and plans it into jobs ([`Unplanned::plan`]), and a [`Fold`] turns its
//! jobs' digests into its result, on that reader for a small input, on the coordinator for one
//! whose jobs every worker shares.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::side::{Out, SideDigests, SideFold, SidePlan};
use super::{Engine, FileDigest, Job, JobSource, MAX_KEPT_LEAVES, Request, SharedFile, Slice};
use crate::algorithm::Digest;
use crate::lanes::Kernel;
use crate::layout::{Combiner, JobKind, Layout, Root};
use crate::source::{
    FileSystems, Input, InputError, MAX_HELD_STREAM, ReadMode, Target, XattrValue, claim_stdin,
    hold_stream,
};

/// The shortest fixed leaf that is a job of its own when its algorithm has lanes: a 1 MiB
/// read holds fewer than four such leaves whole, too few for `JobHasher` to hash them in lanes
/// within the read, so they would each be one stream.
const LANE_JOB_MIN_LEAF: u64 = (Engine::DEFAULT_CHUNK_SIZE / 4) as u64 + 1;

/// A job's byte range and digest (or, for a job read with side outputs, digests).
pub(super) type JobDigest = (Range<u64>, Out);

/// A job of a slice ([`Engine::hash_jobs_in`]): its byte range and digest.
type SliceJob = (Range<u64>, Digest);

/// An input to open, with what to compute for it: task `input` of [`Engine::run`].
pub(super) struct Opening {
    pub(super) input: usize,
    pub(super) target: Target,
    /// For `-`: whether the coordinator claimed standard input for this task, as it takes
    /// the tasks in order (see [`Opening::new`]).
    pub(super) stdin: Option<bool>,
    pub(super) request: Request,
    pub(super) slice: Option<Slice>,
}

impl Opening {
    /// Task `input`'s opening. Standard input is claimed here, as the coordinator takes the
    /// tasks in order, and not where a worker opens it: workers open in any order, and the
    /// first `-` of `mtsum - -` must get the bytes, the second the empty rest.
    pub(super) fn new(
        input: usize,
        target: Target,
        request: Request,
        slice: Option<Slice>,
    ) -> Opening {
        let stdin = (target == Target::Stdin).then(claim_stdin);
        Opening {
            input,
            target,
            stdin,
            request,
            slice,
        }
    }

    /// Opens the input, to be read with `read_mode` if it is sized; `known` saves asking
    /// again what its file system is; `before_waiting` is called before opening waits (a
    /// FIFO without a writer).
    pub(super) fn open(
        self,
        read_mode: ReadMode,
        known: &mut FileSystems,
        before_waiting: &mut dyn FnMut(),
    ) -> Unplanned {
        let started = Instant::now();
        let opened = match self.stdin {
            Some(claimed) => Input::open_stdin(claimed, read_mode, known),
            None => Input::open_with_known(&self.target, read_mode, known, before_waiting),
        };
        Unplanned {
            input: self.input,
            request: self.request,
            slice: self.slice,
            started,
            opened,
            held: 0,
            streamed: false,
        }
    }
}

/// An input opened (or not) and not planned yet.
pub(super) struct Unplanned {
    pub(super) input: usize,
    request: Request,
    slice: Option<Slice>,
    started: Instant,
    opened: Result<Input, InputError>,
    /// The bytes of a stream held in memory to be hashed as a file ([`Unplanned::hold`]).
    held: u64,
    /// Whether the input is, or was before it was held, a stream.
    streamed: bool,
}

/// An input planned: its jobs, and the fold their digests go into.
pub(super) struct Planned {
    pub(super) jobs: Vec<Job>,
    pub(super) fold: Fold,
}

impl Unplanned {
    /// Whether the input is a stream that its layout can only hash once it knows the length:
    /// it must be held in memory first ([`Unplanned::hold`]).
    pub(super) fn must_be_held(&self) -> bool {
        matches!(self.opened, Ok(Input::Stream(_)))
            && self.needs_length().is_some()
            && self.slice.is_none()
    }

    /// The first of the request's layouts, its own then its side digests', that can only
    /// hash an input whose length it knows.
    fn needs_length(&self) -> Option<Layout> {
        let side = self.request.side.digests.iter().map(|&(layout, _)| layout);
        std::iter::once(self.request.layout)
            .chain(side)
            .find(|layout| layout.needs_length())
    }

    /// A layout that needs the length learns it by reading: a stream that ends soon enough
    /// is held in memory (see [`hold_stream`]) and hashed as a file of that length.
    pub(super) fn hold(mut self) -> Unplanned {
        let held = match &mut self.opened {
            Ok(Input::Stream(stream)) => hold_stream(&mut **stream, MAX_HELD_STREAM),
            _ => return self,
        };
        self.streamed = true;
        self.opened = match held {
            Ok(Some(file)) => {
                self.held = file.len();
                Ok(Input::Sized(file))
            }
            Ok(None) => {
                let layout = self.needs_length().unwrap_or(self.request.layout);
                Err(InputError::StreamNeedsLength(layout.name()))
            }
            Err(e) => Err(e),
        };
        self
    }

    /// Plans the input into jobs, taking leaves as jobs of their own where workers hash them
    /// in lanes (`multi_buffer`); an input that cannot be hashed as asked is an error.
    pub(super) fn plan(self, multi_buffer: bool) -> Result<Planned, InputError> {
        let Unplanned {
            input,
            request,
            slice,
            started,
            opened,
            held,
            mut streamed,
        } = self;
        let (layout, alg) = (request.layout, request.algorithm);
        let opened = opened?;
        streamed |= matches!(opened, Input::Stream(_));
        // Side outputs, but not of a slice: its caller wants job digests of one layout.
        let side = match (request.side.hashes_nothing() || slice.is_some(), &opened) {
            (true, _) => None,
            (false, Input::Stream(_)) => Some(SidePlan::of_stream((layout, alg), &request.side)),
            (false, Input::Sized(file)) => {
                for (l, _) in &request.side.digests {
                    l.check_size(file.len())?;
                }
                let spec = (layout, alg);
                Some(SidePlan::of_file(
                    spec,
                    request.keep_leaves,
                    &request.side,
                    file.len(),
                    file.remote_version().is_none(),
                ))
            }
        }
        .map(Arc::new);
        let job = |index: usize, later, start: u64, kind, source| Job {
            input,
            index,
            later,
            start,
            layout,
            alg,
            kind,
            source,
            side: side.clone(),
        };
        let mut xattr = None;
        let (file, jobs) = match opened {
            Input::Stream(_) if layout.needs_length() => {
                return Err(InputError::StreamNeedsLength(layout.name()));
            }
            Input::Stream(_) if request.keep_leaves && layout.leaf_size().is_some() => {
                return Err(InputError::GraphOfStream);
            }
            Input::Stream(_) if slice.is_some() => return Err(InputError::RangeOfStream),
            Input::Sized(file) if slice.as_ref().is_some_and(|s| s.size != file.len()) => {
                return Err(InputError::Changed);
            }
            Input::Stream(reader) => (
                None,
                vec![job(0, 0, 0, JobKind::Layout, JobSource::Stream(reader))],
            ),
            Input::Sized(file) => {
                layout.check_size(file.len())?;
                // Read where the file is open, by the reader that opened it: an error leaves
                // it unread, for the caller to ask by path.
                xattr = (request.side.xattr).and_then(|name| file.xattr(name).ok());
                // Leaves too long for `JobHasher`'s lanes within one read are jobs of their
                // own where the algorithm has lanes: then the workers' lanes take them.
                let lanes_take_leaves = multi_buffer
                    && layout
                        .leaf_size()
                        .is_some_and(|l| l.get() >= LANE_JOB_MIN_LEAF)
                    && Kernel::multi_buffer(alg).is_some();
                // With side outputs, the jobs read, where every layout's jobs nest.
                let plan = match side.as_deref() {
                    Some(side) => (side.reads.iter())
                        .map(|(r, _)| (r.clone(), JobKind::Layout))
                        .collect(),
                    None => layout.plan(alg, file.len(), request.keep_leaves || lanes_take_leaves),
                };
                let mut plan: Vec<(Range<u64>, JobKind)> = plan;
                if let Some(slice) = &slice {
                    plan.retain(|(r, _)| slice.holds(r.start));
                }
                let leaves = side.as_ref().map_or(plan.len(), |side| side.main_jobs());
                if request.keep_leaves && leaves > MAX_KEPT_LEAVES {
                    return Err(InputError::TooManyLeaves {
                        leaves,
                        max: MAX_KEPT_LEAVES,
                    });
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
                        let mut job = job(i, count - i - 1, r.start, kind, source);
                        // A read that is one job of one layout is hashed as that layout's.
                        if let Some(one) = side.as_deref().and_then(|p| p.separate_job(i)) {
                            (job.layout, job.alg, job.kind) = one;
                            job.side = None;
                        }
                        job
                    })
                    .collect();
                (Some(shared), jobs)
            }
        };
        let jobs: Vec<Job> = jobs;
        let main_jobs = side.as_ref().map_or(jobs.len(), |plan| plan.main_jobs());
        let leaves = (request.keep_leaves && slice.is_none()).then(|| vec![None; main_jobs]);
        let fold = Fold {
            request,
            file,
            combiner: layout.combiner(alg),
            remaining: jobs.len(),
            size: 0,
            leaves,
            jobs: slice.map(|_| vec![None; jobs.len()]),
            side: side.map(|plan| (plan.side_fold(), plan)),
            xattr,
            error: None,
            started,
            held,
            streamed,
        };
        Ok(Planned { jobs, fold })
    }
}

/// Folds the digests of an input's jobs, in any order, into its result.
pub(super) struct Fold {
    request: Request,
    file: Option<Arc<SharedFile>>,
    combiner: Combiner,
    remaining: usize,
    /// Bytes hashed so far (a stream's length is known only at its end).
    size: u64,
    leaves: Option<Vec<Option<Digest>>>,
    /// A task of a slice: every job's range and digest, in place of the combiner's fold.
    jobs: Option<Vec<Option<SliceJob>>>,
    /// With side outputs: their fold, and the plan that says which digests a job read gave.
    side: Option<(SideFold, Arc<SidePlan>)>,
    /// [`Side::xattr`](super::Side::xattr)'s attribute, read when the file was opened.
    xattr: Option<Option<XattrValue>>,
    error: Option<InputError>,
    started: Instant,
    /// The bytes of a stream held in memory (see [`Unplanned::hold`]).
    pub(super) held: u64,
    /// Whether the input was a stream: it has no stamp, and no leaves of a side output.
    streamed: bool,
}

/// What an input's fold gives once every job is in. Made once per input and taken apart at
/// once: a box for the larger variant would cost an allocation per file for nothing.
#[allow(clippy::large_enum_variant)]
pub(super) enum Concluded {
    /// The input's root, or why not.
    Result(Result<FileDigest, InputError>),
    /// A file that held other bytes than its size said (a file system that misreports it),
    /// opened again as a stream, to be read to its end.
    Again(Unplanned),
}

impl Fold {
    /// The length of the file, or `None` for a stream.
    pub(super) fn file_len(&self) -> Option<u64> {
        self.file.as_ref().map(|f| f.file.len())
    }

    /// Takes in the result of job `index`. A failed job fails the input and tells the
    /// readers to skip the rest of it.
    pub(super) fn add(&mut self, index: usize, result: Result<JobDigest, InputError>) {
        match result {
            Err(e) => {
                if let Some(f) = &self.file {
                    f.failed.store(true, Ordering::Relaxed);
                }
                self.error.get_or_insert(e);
            }
            Ok((range, out)) if self.error.is_none() => {
                self.size = self.size.max(range.end);
                let (leaves, combiner) = (&mut self.leaves, &mut self.combiner);
                let mut main = |index: usize, range: Range<u64>, digest: Digest| {
                    if let Some(leaves) = leaves {
                        leaves[index] = Some(digest);
                    }
                    combiner.add(index, range, digest);
                };
                match (out, &mut self.side, &mut self.jobs) {
                    (Out::Side(digests), Some((fold, plan)), _) => {
                        plan.add(index, range.end, &digests, fold, main)
                    }
                    (Out::One(digest), Some((fold, plan)), _) => {
                        plan.add_one(index, range, digest, fold, main)
                    }
                    (Out::One(digest), _, Some(jobs)) => jobs[index] = Some((range, digest)),
                    (Out::One(digest), _, None) => main(index, range, digest),
                    (Out::Side(_), None, _) => unreachable!("side outputs are planned"),
                }
            }
            Ok(_) => {}
        }
        self.remaining -= 1;
    }

    /// Whether every job's result is in.
    pub(super) fn is_complete(&self) -> bool {
        self.remaining == 0
    }

    /// The result of input `input` once every job is in: its root, unless a job failed or
    /// the file changed meanwhile, or the file opened again as a stream.
    pub(super) fn conclude(self, input: usize) -> Concluded {
        debug_assert!(self.is_complete());
        let Fold {
            request,
            file,
            combiner,
            size,
            leaves,
            jobs,
            side,
            xattr,
            error,
            started,
            streamed,
            ..
        } = self;
        let of_slice = jobs.is_some();
        let unchanged = || match &file {
            Some(f) => f.file.check_unchanged(),
            None => Ok(()),
        };
        let result = match error {
            Some(e) => Err(e),
            None => unchanged().and_then(|()| {
                Ok(FileDigest {
                    // A slice has no root of its own; its caller reads `jobs`.
                    root: match jobs {
                        Some(_) => Root::new(Digest::from_slice(&[])),
                        None => combiner.finish(size)?,
                    },
                    size,
                    leaves: leaves.map(|l| l.into_iter().flatten().collect()),
                    elapsed: started.elapsed(),
                    fallback: file.as_ref().and_then(|f| f.file.fallback().cloned()),
                    side: SideDigests {
                        xattr,
                        ..match side {
                            Some((fold, _)) => fold.finish(size, streamed)?,
                            None => Default::default(),
                        }
                    },
                    stamp: file.as_ref().filter(|_| !streamed).map(|f| f.file.stamp()),
                    jobs: jobs.map(|j| j.into_iter().flatten().collect()),
                })
            }),
        };
        match (&result, &file, of_slice) {
            (Err(InputError::SizeMisreported { .. }), Some(f), false) => {
                Concluded::Again(Unplanned {
                    input,
                    request,
                    slice: None,
                    started,
                    opened: f.file.to_stream().map(Input::Stream),
                    held: 0,
                    streamed: true,
                })
            }
            _ => Concluded::Result(result),
        }
    }
}
