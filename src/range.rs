//! One file hashed in ranges, anywhere, and the ranges combined into the root of a local run:
//! the way to spread a single huge file over several machines (or processes, or tasks of a
//! cluster), with the same root bit for bit.
//!
//! - [`plan`]: at most `parts` byte ranges of about equal size, each a run of whole jobs of
//!   [`Layout::plan`] (so aligned to subtree boundaries);
//! - [`hash_range`]: the subtree digests of one range, as a [`Partial`], hashed by the
//!   [`Engine`] (workers, read-ahead, SIMD lanes) exactly as a whole file is;
//! - [`combine`]: the root from partials that cover the file exactly once, in any order.
//!
//! What a range can be depends on the layout: a plain digest of an algorithm that is not a
//! tree (SHA-256, MD5, xxh3, ...) is one stream that cannot be split, so its plan is always
//! the one range of the whole file; plain BLAKE3 splits into 4 MiB subtrees of its own tree;
//! `mtsum` into its leaves (at most 128 MiB); `merkle` and `rfc6962` into runs of about
//! 4 MiB of leaves.
//!
//! # The partial line
//!
//! A partial travels as one line of text ([`Partial::to_line`], [`Partial::from_line`]):
//!
//! ```text
//! MTSUM-PARTIAL/2 TAG SIZE START-END DIGESTS
//! ```
//!
//! `TAG` is the sum-file tag of layout and algorithm (`MTSUM-SHA256`, `RFC6962-SHA256-1M`,
//! `SHA256` for plain), `SIZE` the file's length in bytes when the range was hashed,
//! `START-END` the byte range (end exclusive), and `DIGESTS` the digests of the range's
//! [nodes] in order, as one run of lowercase hex (`-` when the range has no node: the
//! empty file of a fixed-leaf layout). The nodes follow from the other fields alone, so the
//! line names no positions:
//!
//! - `merkle`, `rfc6962`: the largest aligned complete subtrees the range holds (the fewest,
//!   left to right), so a range is a few digests, at most two per level of the tree;
//! - `mtsum`: one digest per leaf (a leaf is 64 to 128 MiB of a large file);
//! - `plain`: the one digest of the whole stream, or for BLAKE3 one chaining value per 4 MiB
//!   subtree.
//!
//! Version 1 of the line (one digest per job of any layout) is refused: its digests for the
//! fixed-leaf layouts are not the nodes of version 2.

use std::fmt;
use std::ops::Range;

use crate::engine::{Engine, Request};
use crate::layout::{JobKind, NoRoot, Root};
use crate::source::{InputError, Target};
use crate::sumfile;
use crate::{Algorithm, Digest, Layout};

/// The first word of a partial line, with the version of its format.
pub const MAGIC: &str = "MTSUM-PARTIAL/2";

/// What a file is hashed as, and how long it is: partials combine only when all of it agrees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    pub layout: Layout,
    pub algorithm: Algorithm,
    pub size: u64,
}

/// The most jobs a plan of ranges makes (about 32 bytes each, so 512 MiB): 64 TiB in the
/// finest jobs (4 MiB, of `merkle` and plain BLAKE3), 1 PiB and more of `mtsum`. A size is
/// a number anyone can write (`plan(2**63)`, a forged partial line), and its jobs are made
/// in memory: beyond this they are refused before they are made, instead of exhausting it.
pub const MAX_JOBS: u64 = 1 << 24;

impl Spec {
    /// The jobs of the file, in order: the independent byte ranges of [`Layout::plan`], if
    /// there are at most [`MAX_JOBS`].
    fn jobs(self) -> Result<Vec<(Range<u64>, JobKind)>, RangeError> {
        let jobs = self.layout.job_count(self.algorithm, self.size);
        if jobs > MAX_JOBS {
            return Err(RangeError::TooLarge { spec: self, jobs });
        }
        Ok(self.layout.plan(self.algorithm, self.size, false))
    }
}

impl fmt::Display for Spec {
    /// `RFC6962-SHA256-1M, 4096 bytes`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tag = sumfile::tag(self.layout, self.algorithm);
        write!(f, "{tag}, {} bytes", self.size)
    }
}

/// Why a range cannot be hashed or partials cannot be combined: bad parameters, not I/O.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("the number of parts must be at least 1")]
    NoParts,
    #[error("{spec} is too large to plan: {jobs} jobs, at most {MAX_JOBS}")]
    TooLarge { spec: Spec, jobs: u64 },
    #[error(
        "bytes {start}-{end} are not a range of the plan of {spec}: a range starts and ends at 0, the size or a job boundary (see plan)"
    )]
    NotOnPlan { spec: Spec, start: u64, end: u64 },
    #[error("not a partial line: {0:?}")]
    Syntax(String),
    #[error("no partials to combine")]
    Empty,
    #[error("partials of different inputs: {0} and {1}")]
    Mixed(Spec, Spec),
    #[error(
        "the partial of bytes {start}-{end} holds {got} digests where the range has {want} nodes"
    )]
    Count {
        start: u64,
        end: u64,
        got: usize,
        want: usize,
    },
    #[error("partials overlap: bytes {0}-{1} and {2}-{3}")]
    Overlap(u64, u64, u64, u64),
    #[error("two partials of bytes {0}-{1} disagree")]
    Disagree(u64, u64),
    #[error("bytes {0}-{1} are missing (no partial covers them)")]
    Missing(u64, u64),
    /// The layout has no root for the file (an empty file with `btv2`).
    #[error("{0}")]
    NoRoot(#[from] NoRoot),
}

/// The digests of the nodes of one byte range of a file: what [`hash_range`] returns and
/// [`combine`] takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partial {
    pub spec: Spec,
    pub range: Range<u64>,
    /// One digest per node of [`nodes`]`(spec, range)`, in order.
    pub digests: Vec<Digest>,
}

impl Partial {
    /// The partial as one line of text, without a line end (see the module's documentation).
    pub fn to_line(&self) -> String {
        let tag = sumfile::tag(self.spec.layout, self.spec.algorithm);
        let digests = if self.digests.is_empty() {
            "-".to_string()
        } else {
            self.digests.iter().map(Digest::to_hex).collect()
        };
        let (size, Range { start, end }) = (self.spec.size, &self.range);
        format!("{MAGIC} {tag} {size} {start}-{end} {digests}")
    }

    /// Parses a line of [`Partial::to_line`] (surrounding white space allowed). Whether the
    /// digests fit the range is [`combine`]'s to check.
    pub fn from_line(line: &str) -> Result<Partial, RangeError> {
        let bad = || RangeError::Syntax(line.chars().take(120).collect());
        let words: Vec<&str> = line.split_ascii_whitespace().collect();
        let [MAGIC, tag, size, range, digests] = words[..] else {
            return Err(bad());
        };
        let (layout, algorithm) = sumfile::parse_tag(tag).ok_or_else(bad)?;
        let number = |s: &str| s.parse::<u64>().map_err(|_| bad());
        let (start, end) = range.split_once('-').ok_or_else(bad)?;
        let (start, end) = (number(start)?, number(end)?);
        let size = number(size)?;
        let hex_len = 2 * algorithm.digest_len();
        let digests = match digests {
            "-" => Vec::new(),
            _ if digests.len() % hex_len != 0 || !digests.is_ascii() => return Err(bad()),
            _ => (0..digests.len() / hex_len)
                .map(|i| Digest::from_hex(&digests[i * hex_len..(i + 1) * hex_len]))
                .collect::<Option<Vec<Digest>>>()
                .ok_or_else(bad)?,
        };
        Ok(Partial {
            spec: Spec {
                layout,
                algorithm,
                size,
            },
            range: start..end,
            digests,
        })
    }
}

/// The jobs of `jobs` (the plan of `spec`) that `range` holds, if it is a range of the plan:
/// its ends are 0, the size, or where a job starts, and it is empty only for an empty file.
///
/// A range holds the jobs that start inside it, and those at its end when that is the file's
/// end (only `mtsum` has empty jobs, the leaves `0..0` of files of 0 and 1 byte): the rule of
/// [`Engine::hash_jobs_in`] too.
fn jobs_of_range<'a>(
    spec: Spec,
    jobs: &'a [(Range<u64>, JobKind)],
    range: &Range<u64>,
) -> Result<&'a [(Range<u64>, JobKind)], RangeError> {
    let Range { start, end } = *range;
    let starts_a_job = |at: u64| jobs.binary_search_by_key(&at, |j| j.0.start).is_ok();
    let boundary = |at: u64| at == 0 || at == spec.size || starts_a_job(at);
    let empty_ok = start < end || spec.size == 0;
    if start > end || end > spec.size || !empty_ok || !boundary(start) || !boundary(end) {
        return Err(RangeError::NotOnPlan { spec, start, end });
    }
    let lo = jobs.partition_point(|j| j.0.start < start);
    let hi = if end == spec.size {
        jobs.len()
    } else {
        jobs.partition_point(|j| j.0.start < end)
    };
    Ok(&jobs[lo..hi])
}

/// The byte ranges of the nodes whose digests stand for `range` in a [`Partial`], in order:
/// for `merkle` and `rfc6962` the largest aligned complete subtrees of the tree that tile the
/// range (each a node of the whole file's tree), for the other layouts the jobs of
/// [`Layout::plan`] in the range.
pub fn nodes(spec: Spec, range: Range<u64>) -> Result<Vec<Range<u64>>, RangeError> {
    node_ranges(spec, &spec.jobs()?, &range)
}

/// [`nodes`] with the plan made once.
fn node_ranges(
    spec: Spec,
    jobs: &[(Range<u64>, JobKind)],
    range: &Range<u64>,
) -> Result<Vec<Range<u64>>, RangeError> {
    let mine = jobs_of_range(spec, jobs, range)?
        .iter()
        .map(|(r, _)| (r.clone(), r.clone()));
    Ok(fold_subtrees(spec, mine, |l, r| l.start..r.end)
        .into_iter()
        .map(|(r, _)| r)
        .collect())
}

/// Folds consecutive jobs (their byte ranges and a value each, in order) into the largest
/// aligned complete subtrees they make, joining two values with `join`; for the layouts
/// without fixed leaves, returns the jobs as they are. Jobs are those of [`Layout::plan`], or
/// finer ones inside one such job: the shape of the result depends on which.
///
/// In the tree of `merkle` and `rfc6962` every run of 2^k leaves that starts at a multiple of
/// 2^k and lies within the file is a node (the left subtree takes the largest power of two
/// of leaves), so two neighbours of 2^k leaves each whose left one is so aligned join into
/// their parent. Jobs are such runs, or the file's last, shorter one (a node of the tree's
/// right edge, which joins nothing here).
fn fold_subtrees<T>(
    spec: Spec,
    jobs: impl IntoIterator<Item = (Range<u64>, T)>,
    mut join: impl FnMut(T, T) -> T,
) -> Vec<(Range<u64>, T)> {
    // Only the unpadded binary trees of fixed leaves (merkle, rfc6962, glacier) fold here: the
    // flat layouts' parts have no binary parent, and BitTorrent v2's padding is the
    // combiner's to add.
    let leaf = spec.layout.leaf_size().map(|l| l.get());
    let Some(leaf) = leaf.filter(|_| spec.layout.is_binary_tree()) else {
        return jobs.into_iter().collect();
    };
    let leaves = |r: &Range<u64>| (r.end - r.start).div_ceil(leaf);
    let mut stack: Vec<(Range<u64>, T)> = Vec::new();
    for job in jobs {
        stack.push(job);
        while let [.., (l, _), (r, _)] = &stack[..] {
            let count = leaves(l);
            let aligned = (l.start / leaf).is_multiple_of(2 * count);
            if !(count.is_power_of_two() && count == leaves(r) && aligned) {
                break;
            }
            let (r, right) = stack.pop().expect("two entries");
            let (l, left) = stack.pop().expect("two entries");
            stack.push((l.start..r.end, join(left, right)));
        }
    }
    stack
}

/// At most `parts` byte ranges that cover a file of `spec.size` bytes in order, each a run of
/// whole jobs, of about equal size (as near as the jobs allow: a plain SHA-256 is one job, so
/// one range). An empty file is the one range `0..0`.
pub fn plan(spec: Spec, parts: usize) -> Result<Vec<Range<u64>>, RangeError> {
    if parts == 0 {
        return Err(RangeError::NoParts);
    }
    let mut cuts: Vec<u64> = spec
        .jobs()?
        .into_iter()
        .map(|(r, _)| r.start)
        .filter(|&s| s > 0 && s < spec.size)
        .collect();
    cuts.dedup();
    if cuts.len() >= parts {
        // The job start nearest to each k/parts of the file (the earlier one of two as near).
        let mut chosen: Vec<u64> = Vec::with_capacity(parts - 1);
        for k in 1..parts as u128 {
            let target = (spec.size as u128 * k / parts as u128) as u64;
            let i = cuts.partition_point(|&c| c < target);
            let before = i.checked_sub(1).map(|j| cuts[j]);
            let nearest = match (before, cuts.get(i)) {
                (Some(b), Some(&a)) if a - target < target - b => a,
                (Some(b), _) => b,
                (None, a) => *a.expect("cuts is not empty"),
            };
            if chosen.last().is_none_or(|&last| nearest > last) {
                chosen.push(nearest);
            }
        }
        cuts = chosen;
    }
    let ends: Vec<u64> = std::iter::once(0)
        .chain(cuts)
        .chain(std::iter::once(spec.size))
        .collect();
    Ok(ends.windows(2).map(|w| w[0]..w[1]).collect())
}

/// Hashes `range` of the file `target` on `engine`. `spec.size` must be the file's length: a
/// plan made for another length is a file that changed ([`InputError::Changed`]), and so is
/// a size or modification time that moves while it is read.
pub fn hash_range(
    engine: &Engine,
    target: Target,
    spec: Spec,
    range: Range<u64>,
) -> Result<Result<Partial, InputError>, RangeError> {
    let plan = spec.jobs()?;
    let mine = jobs_of_range(spec, &plan, &range)?;
    let request = Request::new(spec.layout, spec.algorithm);
    let hashed = match engine.hash_jobs_in(&request, target, spec.size, range.clone()) {
        Ok(hashed) => hashed,
        Err(e) => return Ok(Err(e)),
    };
    let (layout, alg) = (spec.layout, spec.algorithm);
    let join = |l: Digest, r: Digest| layout.hash_node(alg, &l, &r, false);
    // The engine's jobs may be finer than the plan's (single leaves, for its lanes): each
    // job of the plan is the subtree of the finer ones it holds, folded as `JobHasher`
    // folds its leaves, so that the nodes depend on the plan alone.
    let mut hashed = hashed.into_iter().peekable();
    let jobs: Vec<(Range<u64>, Digest)> = mine
        .iter()
        .map(|(job, _)| {
            let mut inside = Vec::new();
            while let Some(next) = hashed.next_if(|(r, _)| r.start < job.end || job.is_empty()) {
                inside.push(next);
                if job.is_empty() {
                    break;
                }
            }
            let folded = fold_subtrees(spec, inside, join)
                .into_iter()
                .map(|(_, d)| d);
            let digest = folded.rev().reduce(|right, left| join(left, right));
            (
                job.clone(),
                digest.expect("the engine hashed every job of the range"),
            )
        })
        .collect();
    let nodes = fold_subtrees(spec, jobs, join);
    Ok(Ok(Partial {
        spec,
        range,
        digests: nodes.into_iter().map(|(_, d)| d).collect(),
    }))
}

/// The root from partials that cover the file once, in any order, folded by the layout's
/// [`Combiner`](crate::layout::Combiner). Partials that are the same range twice with the
/// same digests (a range hashed again after a failure) count once.
pub fn combine(partials: impl IntoIterator<Item = Partial>) -> Result<Root, RangeError> {
    let mut partials: Vec<Partial> = partials.into_iter().collect();
    let spec = partials.first().ok_or(RangeError::Empty)?.spec;
    if let Some(other) = partials.iter().find(|p| p.spec != spec) {
        return Err(RangeError::Mixed(spec, other.spec));
    }
    partials.sort_by_key(|p| (p.range.start, p.range.end));
    let jobs = spec.jobs()?;
    let mut combiner = spec.layout.combiner(spec.algorithm);
    let mut index = 0;
    let mut last: Option<&Partial> = None;
    let mut covered = 0;
    for p in &partials {
        let Range { start, end } = p.range;
        let nodes = node_ranges(spec, &jobs, &p.range)?;
        if p.digests.len() != nodes.len() {
            let (got, want) = (p.digests.len(), nodes.len());
            return Err(RangeError::Count {
                start,
                end,
                got,
                want,
            });
        }
        if let Some(prev) = last {
            if prev.range == p.range {
                if prev.digests != p.digests {
                    return Err(RangeError::Disagree(start, end));
                }
                continue;
            }
            if start < covered {
                let Range { start: s, end: e } = prev.range;
                return Err(RangeError::Overlap(s, e, start, end));
            }
        }
        if start > covered {
            return Err(RangeError::Missing(covered, start));
        }
        for (node, digest) in nodes.into_iter().zip(&p.digests) {
            combiner.add(index, node, *digest);
            index += 1;
        }
        covered = end;
        last = Some(p);
    }
    if covered < spec.size {
        return Err(RangeError::Missing(covered, spec.size));
    }
    Ok(combiner.finish(spec.size)?)
}
