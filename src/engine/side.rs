//! Side outputs: more digests of the bytes that one read of an input hashes ([`Side`]), so
//! that a caller who needs several (an audit: the record's digest, a migration's digest in
//! another layout, the leaf digests that locate damage; `-c --part-size auto`: a value under
//! every part size it may have been made with) reads the input once, on every worker, and
//! every digest is of the same bytes.
//!
//! Each layout cuts the input into jobs of its own ([`Layout::plan`]). The jobs that are read
//! are the finest cut that every layout's jobs nest in: a cut between two jobs of the
//! request's layout stays where every side output has a job boundary too. `plain` BLAKE3's
//! 4 MiB subtrees take 64 KiB leaves beside them, so a large file is still shared among every
//! worker; `plain` SHA-256 is one message, so a file with it and a side output is read by one
//! worker, as it would be anyway. A job read feeds each layout's jobs within it in order
//! ([`SideHasher`]), and the input's fold takes each layout's digests by their own index.
//!
//! Layouts whose jobs share no boundary (S3 parts of 16 MiB and of 17 MB, both guessed for
//! one ETag) make one job read of the whole file: its hasher then shares each chunk's layouts
//! among the cores the busy readers leave idle, one thread per share, so that the guesses of
//! `-c --part-size auto` still run on every core.
//!
//! BLAKE3 is itself a tree: where several of the layouts are its own subtrees (the pieces of
//! `plain` BLAKE3, an audit's outboard leaves, [`Leaves::Blake3Subtrees`]), only the finest
//! are hashed, and the others are joined from their chaining values ([`Spec::from`]): a
//! first record hashes its bytes once for both its digest and its leaves.

use std::ops::Range;
use std::sync::Arc;

use crate::algorithm::{Algorithm, Digest};
use crate::lanes::{Event, Kernel, Lane, Lanes};
use crate::layout::{self, Combiner, JobHasher, JobKind, Layout, LeafSize, NoRoot, Root};
use crate::source::{Pieces, XattrValue};

/// What else to compute from the bytes read for a [`Request`](super::Request).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Side {
    /// More digests of the input, each in another layout or algorithm: an audit's migration
    /// records one beside the one it verifies; the part sizes guessed for a value try one
    /// each ([`Layout::size_guesses`](crate::layout::Layout::size_guesses)). Each costs a
    /// pass of its algorithm over every byte and a hasher for each job read in flight, which
    /// the caller bounds: the guesses are at most
    /// [`PartSize::MAX_GUESSES`](crate::layout::PartSize::MAX_GUESSES).
    pub digests: Vec<(Layout, Algorithm)>,
    /// Leaf digests, in order (an audit's outboard, which says where a corrupt file
    /// differs). Never of a stream: the leaves of a length learnt by reading are of no use to
    /// whoever chose the leaf size from the length they expected.
    pub leaves: Option<Leaves>,
    /// An extended attribute to read from the file the read opens (`fgetxattr` on its
    /// descriptor): an audit's record kept beside the file, which would otherwise cost a
    /// lookup of the path of its own before the read. No hashing: the read goes as it would.
    pub xattr: Option<&'static str>,
}

/// The leaf digests that [`Side::leaves`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaves {
    /// Every leaf digest of a fixed-leaf layout with an algorithm.
    Layout(Layout, Algorithm),
    /// The chaining values of BLAKE3's own subtrees that start every so many bytes
    /// ([`layout::subtree_jobs`]; the size a power of two of at least 1 KiB, or the plan
    /// panics). The plain BLAKE3 digest of the input joins from them, and where the request or
    /// one of [`Side::digests`] asks for it, it is joined from them instead of hashed again.
    Blake3Subtrees(LeafSize),
}

impl Side {
    /// Whether no more digests are asked: the input is hashed as without side outputs (an
    /// attribute read, [`Side::xattr`], hashes nothing).
    pub fn hashes_nothing(&self) -> bool {
        self.digests.is_empty() && self.leaves.is_none()
    }
}

/// What [`Side`] asked, in [`FileDigest::side`](super::FileDigest::side).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SideDigests {
    /// The values of [`Side::digests`], in their order.
    pub digests: Vec<Root>,
    /// The digests of [`Side::leaves`]; `None` for a stream.
    pub leaves: Option<Vec<Digest>>,
    /// The attribute [`Side::xattr`] named, as the opened file had it: `Some(None)` where it
    /// has none. `None` where it was not read (a stream, a remote object, a value longer than
    /// [`XattrValue::CAPACITY`], an error such as a file system without extended
    /// attributes): a caller who needs it asks by path, and learns why.
    pub xattr: Option<Option<XattrValue>>,
}

/// One layout's jobs of an input.
struct Spec {
    layout: Layout,
    alg: Algorithm,
    jobs: Vec<(Range<u64>, JobKind)>,
    /// The spec whose jobs' chaining values this one's digests are joined from, unhashed:
    /// both are subtrees of BLAKE3's own tree, that one's finer ([`SidePlan::join_plain`]).
    from: Option<usize>,
}

impl Spec {
    fn new(layout: Layout, alg: Algorithm, jobs: Vec<(Range<u64>, JobKind)>) -> Spec {
        Spec {
            layout,
            alg,
            jobs,
            from: None,
        }
    }

    /// Whether every job is a subtree of a tree algorithm's own tree, whose chaining value
    /// joins with its neighbours' into larger subtrees.
    fn is_subtrees(&self) -> bool {
        self.alg.is_tree()
            && !self.jobs.is_empty()
            && (self.jobs.iter()).all(|(_, kind)| matches!(kind, JobKind::Subtree { .. }))
    }

    /// Whether every job's digest joins from the chaining values of `finer`'s jobs: the plain
    /// digest of the same tree algorithm, each job made of whole jobs of `finer` (two or more
    /// for the digest of the whole input, which is no chaining value).
    fn joins_from(&self, finer: &Spec) -> bool {
        self.layout == Layout::Plain
            && self.alg == finer.alg
            && self.jobs.iter().all(|(r, kind)| {
                let within = finer.within(r);
                let least = if *kind == JobKind::Layout { 2 } else { 1 };
                within.len() >= least
                    && finer.jobs[within.start].0.start == r.start
                    && finer.jobs[within.end - 1].0.end == r.end
            })
    }

    /// The indices of the jobs that start in `r`.
    fn within(&self, r: &Range<u64>) -> Range<usize> {
        let starts = |at: u64| self.jobs.partition_point(|(j, _)| j.start < at);
        starts(r.start)..starts(r.end)
    }
}

/// The jobs of an input hashed with side outputs: those of each layout (the request's first,
/// then [`Side::digests`]' in order, then [`Side::leaves`]'), and the jobs read, each with
/// the range of every layout's jobs that lie in it.
pub(super) struct SidePlan {
    specs: Vec<Spec>,
    /// Where the side digests' specs are in `specs` (from 1 on), and the leaves'.
    digests_at: Range<usize>,
    leaves_at: Option<usize>,
    pub(super) reads: Vec<(Range<u64>, Vec<Range<usize>>)>,
    /// Each read is one job of one layout ([`SidePlan::of_file`]'s `rereadable`).
    separate: bool,
}

impl SidePlan {
    /// The plan of a file of `len` bytes hashed as `(layout, alg)` (its leaves one job each
    /// if `keep_leaves`) and as `side` asks.
    ///
    /// Where the layouts share no cut, so that one read would take the whole file, while
    /// each of them cuts it into several jobs of one message each (the part sizes guessed for
    /// an ETag: 16 MiB and 17 MB), too few for one lane set to take them all in that read
    /// ([`MIN_LANED`]), a `rereadable` file (a local one, not a remote object) is read once
    /// per layout instead: each job of each layout a read of its own, in the order of their
    /// offsets, so that every worker takes some and the lanes hash up to 32 parts at once.
    /// Measured on a 1 GiB file in 16 MiB parts (2 guesses, AVX-512 MD5, `docs/performance.md`)
    /// one read fed both guesses' MD5s one block at a time and took 4 times as long; the jobs
    /// of one offset follow each other, so that the bytes come from the page cache after the
    /// first read of them.
    pub(super) fn of_file(
        (layout, alg): (Layout, Algorithm),
        keep_leaves: bool,
        side: &Side,
        len: u64,
        rereadable: bool,
    ) -> SidePlan {
        let mut specs = vec![Spec::new(layout, alg, layout.plan(alg, len, keep_leaves))];
        let mut at = |spec: Option<Spec>| {
            spec.map(|spec| {
                specs.push(spec);
                specs.len() - 1
            })
        };
        for &(layout, alg) in &side.digests {
            at(Some(Spec::new(layout, alg, layout.plan(alg, len, false))));
        }
        let digests_at = 1..1 + side.digests.len();
        let leaves_at = at(side.leaves.map(|leaves| match leaves {
            Leaves::Layout(layout, alg) => Spec::new(layout, alg, layout.plan(alg, len, true)),
            Leaves::Blake3Subtrees(size) => Spec::new(
                Layout::Plain,
                Algorithm::Blake3,
                layout::subtree_jobs(len, size),
            ),
        }));
        SidePlan::join_plain(&mut specs);
        // A cut between jobs read is a boundary of every layout's jobs.
        let mut cuts: Vec<u64> = boundaries(&specs[0].jobs);
        for spec in &specs[1..] {
            let theirs = boundaries(&spec.jobs);
            cuts.retain(|c| theirs.binary_search(c).is_ok());
        }
        let mut starts = vec![0];
        starts.extend(cuts);
        let reads = starts
            .iter()
            .enumerate()
            .map(|(k, &start)| {
                let end = starts.get(k + 1).copied().unwrap_or(len);
                let last = k + 1 == starts.len();
                let holds = |r: &Range<u64>| r.start >= start && (r.start < end || last);
                let ranges = specs
                    .iter()
                    .map(|spec| {
                        let first = spec.jobs.partition_point(|(r, _)| r.start < start);
                        let count = spec.jobs[first..]
                            .iter()
                            .take_while(|(r, _)| holds(r))
                            .count();
                        first..first + count
                    })
                    .collect();
                (start..end, ranges)
            })
            .collect::<Vec<_>>();
        // Only jobs that are one message each (S3's parts), which lanes take side by side;
        // not with leaves, an audit's, whose I/O is planned as one read.
        let messages = |spec: &Spec| {
            spec.jobs.len() > 1
                && (spec.jobs.iter())
                    .all(|(r, _)| spec.layout.message_prefix(r.end - r.start).is_some())
        };
        let separate =
            rereadable && reads.len() == 1 && side.leaves.is_none() && specs.iter().all(messages);
        let mut plan = SidePlan {
            specs,
            digests_at,
            leaves_at,
            reads,
            separate: false,
        };
        // Unless one lane set takes them all: then one read hashes them as fast.
        let in_lanes = plan.laned(0).map_or(0, |(_, specs)| specs.len());
        if separate && in_lanes < plan.specs.len() {
            plan.reads = separate_reads(&plan.specs);
            plan.separate = true;
        }
        plan
    }

    /// For a plan whose reads are each one job of one layout: that layout's index among the
    /// specs, and the job's index among its jobs.
    fn single(&self, read: usize) -> Option<(usize, usize)> {
        let ranges = &self.reads[read].1;
        let s = ranges.iter().position(|r| !r.is_empty());
        s.filter(|_| self.separate).map(|s| (s, ranges[s].start))
    }

    /// The layout, algorithm and kind of the one job that read `read` is, where each read
    /// is one job of one layout: it is then hashed as any job of that layout, in lanes too.
    pub(super) fn separate_job(&self, read: usize) -> Option<(Layout, Algorithm, JobKind)> {
        self.single(read).map(|(s, j)| {
            let spec = &self.specs[s];
            (spec.layout, spec.alg, spec.jobs[j].1)
        })
    }

    /// Takes in the digest of read `read`, one job of one layout, over `range`: the
    /// request's own layout's to `main`, a side output's to `side`.
    pub(super) fn add_one(
        &self,
        read: usize,
        range: Range<u64>,
        digest: Digest,
        side: &mut SideFold,
        mut main: impl FnMut(usize, Range<u64>, Digest),
    ) {
        let (s, j) = self.single(read).expect("a read of one layout's job");
        if s == 0 {
            main(j, range, digest);
        } else if self.digests_at.contains(&s) {
            side.digests[s - self.digests_at.start].add(j, range, digest);
        } else if let (Some(_), Some(leaves)) = (self.leaves_at, &mut side.leaves) {
            leaves[j] = Some(digest);
        }
    }

    /// Marks the specs whose digests are joined from the finest subtrees of BLAKE3's tree
    /// among them, which alone are hashed.
    fn join_plain(specs: &mut [Spec]) {
        let finest = (0..specs.len())
            .filter(|&i| specs[i].is_subtrees())
            .max_by_key(|&i| (specs[i].jobs.len(), std::cmp::Reverse(i)));
        let Some(finest) = finest else {
            return;
        };
        for i in 0..specs.len() {
            if i != finest && specs[i].joins_from(&specs[finest]) {
                specs[i].from = Some(finest);
            }
        }
    }

    /// The digests of spec `s`'s jobs in job read `read`, joined from `finer`, the digests of
    /// its [`Spec::from`]'s jobs in that read: as many as are whole (all, unless the input
    /// ended early).
    fn joined(&self, s: usize, read: usize, finer: &[Digest]) -> Vec<Digest> {
        let (spec, from) = (&self.specs[s], self.specs[s].from.expect("a joined spec"));
        let first = self.reads[read].1[from].start;
        let mut digests = Vec::new();
        for (r, kind) in &spec.jobs[self.reads[read].1[s].clone()] {
            let within = self.specs[from].within(r);
            let Some(subtrees) = finer.get(within.start - first..within.end - first) else {
                break;
            };
            let is_root = *kind == JobKind::Layout;
            digests.push(layout::join_subtrees(spec.alg, subtrees, is_root));
        }
        digests
    }

    /// The plan of a stream, read as one job: each layout that takes a stream hashes it as
    /// one job of unknown length; no leaves.
    pub(super) fn of_stream((layout, alg): (Layout, Algorithm), side: &Side) -> SidePlan {
        let whole = |(layout, alg): (Layout, Algorithm)| {
            Spec::new(layout, alg, vec![(0..u64::MAX, JobKind::Layout)])
        };
        let mut specs = vec![whole((layout, alg))];
        specs.extend(side.digests.iter().map(|&spec| whole(spec)));
        let reads = vec![(0..u64::MAX, specs.iter().map(|_| 0..1).collect())];
        SidePlan {
            specs,
            digests_at: 1..1 + side.digests.len(),
            leaves_at: None,
            reads,
            separate: false,
        }
    }

    /// The number of jobs of the request's own layout.
    pub(super) fn main_jobs(&self) -> usize {
        self.specs[0].jobs.len()
    }

    /// A fold for each layout but the request's own, whose fold is the input's.
    pub(super) fn side_fold(&self) -> SideFold {
        SideFold {
            digests: (self.specs[self.digests_at.clone()].iter())
                .map(|spec| spec.layout.combiner(spec.alg))
                .collect(),
            leaves: self.leaves_at.map(|i| vec![None; self.specs[i].jobs.len()]),
        }
    }

    /// Calls `f` with the index, range and digest of every job of layout `spec` in job read
    /// `read`, which ended at `end`, given `digests`, theirs in order. A stream's one job
    /// ends where the stream did.
    fn each(
        &self,
        spec: usize,
        read: usize,
        end: u64,
        digests: &[Digest],
        mut f: impl FnMut(usize, Range<u64>, Digest),
    ) {
        let indices = self.reads[read].1[spec].clone();
        for (i, d) in indices.zip(digests) {
            let r = &self.specs[spec].jobs[i].0;
            f(i, r.start..r.end.min(end), *d);
        }
    }

    /// Takes in what job read `read` gave, `end` its end: the request's own layout's job
    /// digests go to `main`, the side outputs' to `side`.
    pub(super) fn add(
        &self,
        read: usize,
        end: u64,
        per_spec: &[Vec<Digest>],
        side: &mut SideFold,
        mut main: impl FnMut(usize, Range<u64>, Digest),
    ) {
        self.each(0, read, end, &per_spec[0], &mut main);
        for (at, combiner) in self.digests_at.clone().zip(&mut side.digests) {
            self.each(at, read, end, &per_spec[at], |i, r, d| {
                combiner.add(i, r, d)
            });
        }
        if let (Some(at), Some(leaves)) = (self.leaves_at, &mut side.leaves) {
            self.each(at, read, end, &per_spec[at], |i, _, d| leaves[i] = Some(d));
        }
    }

    /// A hasher for job read `read`, sharing each chunk's layouts among up to `width`
    /// threads ([`SideHasher::update`]).
    ///
    /// With `multi_buffer`, the layouts whose jobs in the read are one message each in an
    /// algorithm with SIMD lanes (the part sizes guessed for an ETag: MD5 parts) share a lane
    /// set, where there are enough of them to fill a few lanes and fewer than it has.
    pub(super) fn hasher(
        self: &Arc<SidePlan>,
        read: usize,
        width: usize,
        multi_buffer: bool,
    ) -> SideHasher {
        let laned = self.laned(read).filter(|_| multi_buffer);
        let in_lanes = |s: usize| laned.as_ref().is_some_and(|(_, specs)| specs.contains(&s));
        let mut sinks: Vec<Sink> = (0..self.specs.len())
            .filter(|&s| !in_lanes(s))
            .map(|s| Sink {
                spec: s,
                // A joined spec's sink starts nothing: it is fed no bytes.
                next: match self.specs[s].from {
                    Some(_) => self.reads[read].1[s].end,
                    None => self.reads[read].1[s].start,
                },
                current: None,
                digests: Vec::new(),
            })
            .collect();
        for sink in &mut sinks {
            sink.advance(self, read);
        }
        let lanes = laned.map(|(kernel, specs)| {
            let mut lanes = Laned {
                set: Lanes::with_kernel(kernel),
                sinks: (specs.iter())
                    .map(|&s| {
                        let jobs = self.reads[read].1[s].clone();
                        LaneSink {
                            spec: s,
                            first: jobs.start,
                            next: jobs.start,
                            current: None,
                            digests: vec![None; jobs.len()],
                        }
                    })
                    .collect(),
            };
            for i in 0..lanes.sinks.len() {
                lanes.start_next(self, read, i);
            }
            Box::new(lanes)
        });
        SideHasher {
            plan: Arc::clone(self),
            read,
            sinks,
            lanes,
            width,
        }
    }

    /// The kernel and layouts of job read `read` that a lane set takes: those whose jobs in
    /// it are one message each, in the algorithm of the first of them, if it has a
    /// multi-buffer kernel; at least [`MIN_LANED`], fewer than the kernel's lanes (a message
    /// each, and one more ended and not yet hashed). Not of a stream, whose one job ends
    /// wherever it ends.
    fn laned(&self, read: usize) -> Option<(Kernel, Vec<usize>)> {
        if self.reads[read].0.end == u64::MAX {
            return None;
        }
        // Not a joined spec, whose digests are not hashed.
        let messages = |s: &usize| {
            let spec = &self.specs[*s];
            let jobs = &spec.jobs[self.reads[read].1[*s].clone()];
            spec.from.is_none()
                && (jobs.iter()).all(|(r, _)| spec.layout.message_prefix(r.end - r.start).is_some())
        };
        let specs: Vec<usize> = (0..self.specs.len()).filter(messages).collect();
        let alg = self.specs[*specs.first()?].alg;
        let kernel = Kernel::multi_buffer(alg)?;
        let specs: Vec<usize> = (specs.into_iter())
            .filter(|&s| self.specs[s].alg == alg)
            .collect();
        (specs.len() >= MIN_LANED && specs.len() < kernel.lanes()).then_some((kernel, specs))
    }
}

/// Every job of every layout a read of its own, by offset (then by layout): the jobs that
/// read the same bytes follow each other.
fn separate_reads(specs: &[Spec]) -> Vec<(Range<u64>, Vec<Range<usize>>)> {
    let mut all: Vec<(u64, usize, usize)> = (specs.iter().enumerate())
        .flat_map(|(s, spec)| {
            let starts = spec.jobs.iter().map(|(r, _)| r.start);
            starts.enumerate().map(move |(j, start)| (start, s, j))
        })
        .collect();
    all.sort_unstable();
    all.into_iter()
        .map(|(_, s, j)| {
            let mut ranges = vec![0..0; specs.len()];
            ranges[s] = j..j + 1;
            (specs[s].jobs[j].0.clone(), ranges)
        })
        .collect()
}

/// The starts of every job but the first.
fn boundaries(jobs: &[(Range<u64>, JobKind)]) -> Vec<u64> {
    jobs.iter()
        .map(|(r, _)| r.start)
        .filter(|&s| s > 0)
        .collect()
}

/// The side outputs of an input being folded.
pub(super) struct SideFold {
    digests: Vec<Combiner>,
    leaves: Option<Vec<Option<Digest>>>,
}

impl SideFold {
    /// What the side outputs give for an input of `size` bytes; `stream`: no leaves.
    pub(super) fn finish(self, size: u64, stream: bool) -> Result<SideDigests, NoRoot> {
        Ok(SideDigests {
            digests: (self.digests.into_iter())
                .map(|c| c.finish(size))
                .collect::<Result<_, _>>()?,
            leaves: self
                .leaves
                .filter(|_| !stream)
                .map(|l| l.into_iter().flatten().collect()),
            xattr: None,
        })
    }
}

/// One layout's jobs in a job read: the next to start, the one being fed (its hasher and
/// the bytes it still takes), the digests of those done.
struct Sink {
    /// The layout's index among the plan's.
    spec: usize,
    next: usize,
    current: Option<(JobHasher, u64)>,
    digests: Vec<Digest>,
}

impl Sink {
    /// Finishes this sink's jobs that need no more bytes and starts its next one that does,
    /// in job read `read` of `plan`.
    fn advance(&mut self, plan: &SidePlan, read: usize) {
        let s = self.spec;
        let end = plan.reads[read].1[s].end;
        loop {
            if let Some((_, 0)) = &self.current {
                let (hasher, _) = self.current.take().expect("a job");
                self.digests.push(hasher.finalize());
            }
            if self.current.is_some() || self.next == end {
                return;
            }
            let spec = &plan.specs[s];
            let (range, kind) = &spec.jobs[self.next];
            self.current = Some((
                spec.layout.hasher_for(spec.alg, *kind),
                range.end - range.start,
            ));
            self.next += 1;
        }
    }

    /// Feeds `data`, the next bytes of the job read, to this sink's jobs.
    fn update(&mut self, plan: &SidePlan, read: usize, mut data: &[u8]) {
        while !data.is_empty() {
            let Some((hasher, left)) = &mut self.current else {
                break;
            };
            let take = (*left).min(data.len() as u64) as usize;
            hasher.update(&data[..take]);
            *left -= take as u64;
            data = &data[take..];
            self.advance(plan, read);
        }
    }
}

/// The fewest layouts that a lane set takes: two or three messages in a kernel of 16 lanes
/// run no faster than one after another.
const MIN_LANED: usize = 4;

/// A chunk's bytes, shared by the lanes that hash them.
struct Shared(Arc<[u8]>, Range<usize>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        &self.0[self.1.clone()]
    }
}

/// A layout's jobs in a job read whose messages go into a lane set ([`Laned`]).
struct LaneSink {
    spec: usize,
    /// The index of the read's first job of the layout, and of the next to start.
    first: usize,
    next: usize,
    /// The job being fed: in a lane, or on this thread where no lane was free; the bytes it
    /// still takes.
    current: Option<(Current, u64)>,
    /// The digests of the read's jobs, as they come (a lane may end a message after the
    /// next one's).
    digests: Vec<Option<Digest>>,
}

enum Current {
    Lane(Lane),
    /// Rare (no lane was free): boxed, as `Hashing::Side`'s hasher is.
    Here(Box<JobHasher>),
}

/// The layouts of a job read whose jobs are one message each, hashed side by side in one
/// lane set: the part sizes guessed for an ETag, which one read feeds the same bytes.
struct Laned {
    set: Lanes<(usize, usize), Shared>,
    sinks: Vec<LaneSink>,
}

impl Laned {
    /// Starts sink `i`'s next job, if it has one, and ends those that take no bytes.
    fn start_next(&mut self, plan: &SidePlan, read: usize, i: usize) {
        loop {
            let sink = &mut self.sinks[i];
            if sink.current.is_some() || sink.next == plan.reads[read].1[sink.spec].end {
                return;
            }
            let spec = &plan.specs[sink.spec];
            let (range, kind) = &spec.jobs[sink.next];
            let len = range.end - range.start;
            let prefix = spec.layout.message_prefix(len).expect("a message");
            let tag = (i, sink.next);
            sink.next += 1;
            let current = match self.free_lane(tag, prefix) {
                Some(lane) => Current::Lane(lane),
                None => Current::Here(Box::new(spec.layout.hasher_for(spec.alg, *kind))),
            };
            self.sinks[i].current = Some((current, len));
            if len == 0 {
                self.end(i);
            }
        }
    }

    /// A lane for a message `tag` that begins with `prefix`: a free one, or one that a
    /// message already ended leaves once hashed; `None` if none does.
    fn free_lane(&mut self, tag: (usize, usize), prefix: &[u8]) -> Option<Lane> {
        loop {
            if let Ok(lane) = self.set.start_with_prefix(tag, prefix) {
                return Some(lane);
            }
            match self.set.flush()? {
                Event::Finished(tag, digest) => self.record(tag, digest),
                Event::Consumed(_) => {}
            }
        }
    }

    fn record(&mut self, (i, job): (usize, usize), digest: Digest) {
        let sink = &mut self.sinks[i];
        sink.digests[job - sink.first] = Some(digest);
    }

    /// Ends sink `i`'s current job, whose bytes are all in.
    fn end(&mut self, i: usize) {
        let sink = &mut self.sinks[i];
        let tag = (i, sink.next - 1);
        match sink.current.take() {
            Some((Current::Lane(lane), _)) => self.set.finish(lane),
            Some((Current::Here(hasher), _)) => self.record(tag, hasher.finalize()),
            None => {}
        }
    }

    /// Feeds `data`, the next bytes of the job read, to every sink's jobs, and hashes the
    /// lanes as far as they have bytes.
    fn update(&mut self, plan: &SidePlan, read: usize, data: &[u8]) {
        let chunk: Arc<[u8]> = Arc::from(data);
        for i in 0..self.sinks.len() {
            let mut at = 0;
            while at < data.len() {
                let Some((current, left)) = &mut self.sinks[i].current else {
                    break;
                };
                let take = (*left).min((data.len() - at) as u64) as usize;
                match current {
                    Current::Lane(lane) => {
                        self.set.push(*lane, Shared(chunk.clone(), at..at + take))
                    }
                    Current::Here(hasher) => hasher.update(&data[at..at + take]),
                }
                *left -= take as u64;
                at += take;
                if *left == 0 {
                    self.end(i);
                    self.start_next(plan, read, i);
                }
            }
        }
        self.hash(false);
    }

    /// Hashes what the lanes hold: as long as every busy lane has bytes, or (`all`) to the
    /// end of every message ended and every chunk pushed.
    fn hash(&mut self, all: bool) {
        loop {
            let event = match all {
                true => self.set.flush(),
                false => self.set.poll(),
            };
            match event {
                Some(Event::Finished(tag, digest)) => self.record(tag, digest),
                Some(Event::Consumed(_)) => {}
                None => return,
            }
        }
    }

    /// Every sink's digests, by layout.
    fn finish(mut self) -> Vec<(usize, Vec<Digest>)> {
        for i in 0..self.sinks.len() {
            self.end(i);
        }
        self.hash(true);
        (self.sinks.into_iter())
            .map(|sink| (sink.spec, sink.digests.into_iter().flatten().collect()))
            .collect()
    }
}

/// The least bytes of a chunk whose layouts are shared among threads: a thread started per
/// chunk costs some tens of microseconds, a MiB of MD5 about 1.5 ms.
const SHARED_CHUNK: usize = 256 << 10;

/// Hashes one job read into the digests of every layout's jobs in it, fed in order.
pub(super) struct SideHasher {
    plan: Arc<SidePlan>,
    read: usize,
    sinks: Vec<Sink>,
    /// The layouts hashed in a lane set, on this thread.
    lanes: Option<Box<Laned>>,
    /// Threads a chunk's layouts may be shared among: more than one where a job read is
    /// alone on cores that would idle (a file whose layouts share no job boundary is one
    /// job read: the part sizes guessed for an ETag, 16 MiB and 17 MB, are).
    width: usize,
}

impl SideHasher {
    /// Feeds `data` to every layout: on this thread, or, for a large chunk and more than one
    /// layout where the width allows, on as many threads, each taking a share of the layouts.
    /// A thread that cannot be started leaves its share to this one.
    fn update(&mut self, data: &[u8]) {
        let (plan, read) = (&*self.plan, self.read);
        if let Some(lanes) = &mut self.lanes {
            lanes.update(plan, read, data);
        }
        // Joined specs are fed nothing: no thread for them.
        let hashed = (self.sinks.iter())
            .filter(|sink| plan.specs[sink.spec].from.is_none())
            .count();
        let threads = self.width.min(hashed);
        if threads <= 1 || data.len() < SHARED_CHUNK {
            for sink in &mut self.sinks {
                sink.update(plan, read, data);
            }
            return;
        }
        let per = self.sinks.len().div_ceil(threads);
        let feed = move |group: &mut [Sink]| {
            for sink in group {
                sink.update(plan, read, data);
            }
        };
        let failed: Vec<usize> = std::thread::scope(|scope| {
            let mut groups = self.sinks.chunks_mut(per).enumerate();
            let (_, here) = groups.next().expect("a share");
            let failed = groups
                .filter_map(|(g, group)| {
                    let thread = std::thread::Builder::new();
                    let started = thread.spawn_scoped(scope, move || feed(group));
                    started.err().map(|_| g)
                })
                .collect();
            feed(here);
            failed
        });
        for g in failed {
            let first = g * per;
            let end = (first + per).min(self.sinks.len());
            feed(&mut self.sinks[first..end]);
        }
    }

    pub(super) fn update_pieces(&mut self, pieces: Pieces<'_>) {
        pieces.iter().for_each(|piece| self.update(piece));
    }

    /// The digests of every layout's jobs in the job read, in order: a stream's one job ends
    /// here, wherever it ended.
    pub(super) fn finalize(self) -> Box<[Vec<Digest>]> {
        let mut out = vec![Vec::new(); self.plan.specs.len()];
        for mut sink in self.sinks {
            if let Some((hasher, _)) = sink.current.take() {
                sink.digests.push(hasher.finalize());
            }
            out[sink.spec] = sink.digests;
        }
        for (spec, digests) in self.lanes.map(|l| l.finish()).unwrap_or_default() {
            out[spec] = digests;
        }
        for (s, spec) in self.plan.specs.iter().enumerate() {
            if let Some(from) = spec.from {
                out[s] = self.plan.joined(s, self.read, &out[from]);
            }
        }
        out.into_boxed_slice()
    }
}

/// How a job is hashed: as one job of its layout, or as a job read with side outputs. It lives
/// where a job is hashed (boxed only to cross to a hasher thread): boxing the common variant
/// would cost an allocation per small file.
#[allow(clippy::large_enum_variant)]
pub(super) enum Hashing {
    One(JobHasher),
    Side(Box<SideHasher>),
}

/// What hashing a job gives.
pub(super) enum Out {
    One(Digest),
    /// Every layout's job digests in a job read ([`SideHasher::finalize`]).
    Side(Box<[Vec<Digest>]>),
}

impl Hashing {
    pub(super) fn update_pieces(&mut self, pieces: Pieces<'_>) {
        match self {
            Hashing::One(h) => h.update_pieces(pieces),
            Hashing::Side(h) => h.update_pieces(pieces),
        }
    }

    pub(super) fn finalize(self) -> Out {
        match self {
            Hashing::One(h) => Out::One(h.finalize()),
            Hashing::Side(h) => Out::Side(h.finalize()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which spec each spec of the plan is joined from.
    fn joined(main: (Layout, Algorithm), side: Side, len: u64) -> Vec<Option<usize>> {
        let plan = SidePlan::of_file(main, false, &side, len, true);
        plan.specs.iter().map(|s| s.from).collect()
    }

    #[test]
    fn plain_blake3_and_its_subtree_leaves_are_hashed_once_the_coarser_joined_from_the_finer() {
        let size = |bytes| LeafSize::new(bytes).unwrap();
        let plain = (Layout::Plain, Algorithm::Blake3);
        let leaves = |bytes| Side {
            digests: Vec::new(),
            leaves: Some(Leaves::Blake3Subtrees(size(bytes))),
            xattr: None,
        };
        // Two leaves or more: the digest joins from them, in 4 MiB pieces or whole.
        assert_eq!(joined(plain, leaves(64 << 10), 9 << 20), [Some(1), None]);
        assert_eq!(
            joined(plain, leaves(64 << 10), (64 << 10) + 1),
            [Some(1), None]
        );
        // Leaves coarser than the pieces join from them.
        assert_eq!(joined(plain, leaves(8 << 20), 9 << 20), [None, Some(0)]);
        // One leaf's chaining value is not the digest of the file: both are hashed.
        assert_eq!(joined(plain, leaves(64 << 10), 64 << 10), [None, None]);
        // Another algorithm, or a tree of another shape, is hashed beside the leaves.
        let sha256 = (Layout::Plain, Algorithm::Sha256);
        assert_eq!(joined(sha256, leaves(64 << 10), 9 << 20), [None, None]);
        let rfc6962 = (Layout::Rfc6962(size(64 << 10)), Algorithm::Blake3);
        assert_eq!(joined(rfc6962, leaves(64 << 10), 9 << 20), [None, None]);
        // A migration to plain BLAKE3 joins from the leaves too.
        let migration = Side {
            digests: vec![plain],
            ..leaves(64 << 10)
        };
        assert_eq!(joined(sha256, migration, 9 << 20), [None, Some(2), None]);
    }
}
