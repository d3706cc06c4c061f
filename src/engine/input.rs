//! One input from its opening to its result: the reader that takes it from the queue opens it
//! and plans it into jobs ([`Opening::open`]), and a [`Fold`] turns its jobs' digests into its
//! result, on that reader for a small input, on the coordinator for one whose jobs every
//! worker shares.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::{Engine, FileDigest, Job, JobSource, MAX_KEPT_LEAVES, Request, SharedFile, Slice};
use crate::algorithm::Digest;
use crate::lanes::Kernel;
use crate::layout::{Combiner, JobKind, Root};
use crate::source::{FileSystems, Input, InputError, ReadMode, Target};

/// The shortest fixed leaf that is a job of its own when its algorithm has lanes: a 1 MiB
/// read holds fewer than four such leaves whole, too few for `JobHasher` to hash them in lanes
/// within the read, so they would each be one stream.
const LANE_JOB_MIN_LEAF: u64 = (Engine::DEFAULT_CHUNK_SIZE / 4) as u64 + 1;

/// A job's byte range and digest.
pub(super) type JobDigest = (Range<u64>, Digest);

/// An input to open, with what to compute for it: task `input` of [`Engine::run`].
pub(super) struct Opening {
    pub(super) input: usize,
    pub(super) target: Target,
    pub(super) request: Request,
    pub(super) slice: Option<Slice>,
}

/// An opened input: its jobs, and the fold their digests go into.
pub(super) struct Planned {
    pub(super) jobs: Vec<Job>,
    pub(super) fold: Fold,
}

impl Opening {
    /// Opens the input (to be read with `read_mode` if it is sized; `known` saves asking
    /// again what its file system is) and plans it into jobs, taking leaves as jobs of their
    /// own where workers hash them in lanes (`multi_buffer`); an input that cannot be hashed
    /// as asked is an error.
    pub(super) fn open(
        self,
        read_mode: ReadMode,
        multi_buffer: bool,
        known: &mut FileSystems,
    ) -> Result<Planned, InputError> {
        let started = Instant::now();
        let Opening {
            input,
            target,
            request,
            slice,
        } = self;
        let (layout, alg) = (request.layout, request.algorithm);
        let job = |index: usize, start: u64, kind, source| Job {
            input,
            index,
            start,
            layout,
            alg,
            kind,
            source,
        };
        let (file, jobs) = match Input::open_with_known(&target, read_mode, known)? {
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
                vec![job(0, 0, JobKind::Layout, JobSource::Stream(reader))],
            ),
            Input::Sized(file) => {
                layout.check_size(file.len())?;
                // Leaves too long for `JobHasher`'s lanes within one read are jobs of their
                // own where the algorithm has lanes: then the workers' lanes take them.
                let lanes_take_leaves = multi_buffer
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
                    return Err(InputError::TooManyLeaves {
                        leaves: plan.len(),
                        max: MAX_KEPT_LEAVES,
                    });
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
        let jobs: Vec<Job> = jobs;
        let fold = Fold {
            file,
            combiner: layout.combiner(alg),
            remaining: jobs.len(),
            size: 0,
            leaves: (request.keep_leaves && slice.is_none()).then(|| vec![None; jobs.len()]),
            jobs: slice.map(|_| vec![None; jobs.len()]),
            error: None,
            started,
        };
        Ok(Planned { jobs, fold })
    }
}

/// Folds the digests of an input's jobs, in any order, into its result.
pub(super) struct Fold {
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
            Ok((range, digest)) if self.error.is_none() => {
                self.size = self.size.max(range.end);
                if let Some(leaves) = &mut self.leaves {
                    leaves[index] = Some(digest);
                }
                match &mut self.jobs {
                    Some(jobs) => jobs[index] = Some((range, digest)),
                    None => self.combiner.add(index, range, digest),
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

    /// The input's result once every job is in: its root, unless a job failed or the file
    /// changed meanwhile.
    pub(super) fn finish(self) -> Result<FileDigest, InputError> {
        debug_assert!(self.is_complete());
        if let Some(e) = self.error {
            return Err(e);
        }
        if let Some(f) = &self.file {
            f.file.check_unchanged()?;
        }
        Ok(FileDigest {
            // A slice has no root of its own; its caller reads `jobs`.
            root: match self.jobs {
                Some(_) => Root::new(Digest::from_slice(&[])),
                None => self.combiner.finish(self.size)?,
            },
            size: self.size,
            leaves: self.leaves.map(|l| l.into_iter().flatten().collect()),
            elapsed: self.started.elapsed(),
            fallback: self.file.as_ref().and_then(|f| f.file.fallback().cloned()),
            jobs: self.jobs.map(|j| j.into_iter().flatten().collect()),
        })
    }
}
