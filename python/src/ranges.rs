//! One file hashed in ranges, anywhere, and the ranges combined into the root of a local run.
//!
//! This is built only on the library's public API — [`Layout::plan`] (the jobs of a file,
//! independent byte ranges), [`Layout::hasher_for`] and [`Combiner`] — and knows nothing of
//! Python, so that it can move into the library as it is once the library has a range API of
//! its own (issue 12, part 1); the binding then only re-exports it.
//!
//! - [`plan`]: at most `parts` byte ranges of about equal size, each a run of whole jobs;
//! - [`hash_range`]: the digests of the jobs of one range, as a [`Partial`];
//! - [`combine`]: the root from partials that cover the file exactly once.
//!
//! A partial travels as one line of text ([`Partial::to_line`]):
//!
//! ```text
//! MTSUM-PARTIAL/1 TAG SIZE START-END DIGESTS
//! ```
//!
//! `TAG` is the sum-file tag of layout and algorithm (`MTSUM-SHA256`, `RFC6962-SHA256-1M`,
//! `SHA256` for plain), `SIZE` the file's length in bytes when the range was hashed, `START-END`
//! the byte range (end exclusive), `DIGESTS` the job digests of the range in order as one run
//! of lowercase hex (`-` when the range has no job: the empty file of a fixed-leaf layout).
//! A job is at most a leaf of `mtsum` (128 MiB) or a subtree of 4 MiB of the others, so a
//! range of 256 MiB is a line of at most 64 digests.

use std::fmt;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use mtsum::engine::Engine;
use mtsum::layout::{JobKind, NoRoot, Root};
use mtsum::source::{Buffer, InputError, SizedFile};
use mtsum::sumfile;
use mtsum::{Algorithm, Digest, Layout};

/// The first word of a partial line, with the version of its format.
const MAGIC: &str = "MTSUM-PARTIAL/1";

/// What a file is hashed as, and how long it is: partials combine only when all of it agrees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    pub layout: Layout,
    pub algorithm: Algorithm,
    pub size: u64,
}

impl Spec {
    /// The jobs of the file, in order: the independent byte ranges of [`Layout::plan`].
    fn jobs(self) -> Vec<(Range<u64>, JobKind)> {
        self.layout.plan(self.algorithm, self.size, false)
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
        "the partial of bytes {start}-{end} holds {got} digests where the range has {want} jobs"
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
    #[error("{0}")]
    NoRoot(#[from] NoRoot),
    #[error("bytes {0}-{1} are missing (no partial covers them)")]
    Missing(u64, u64),
}

/// The digests of the jobs of one byte range of a file: what [`hash_range`] returns and
/// [`combine`] takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partial {
    pub spec: Spec,
    pub range: Range<u64>,
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

    /// Parses a line of [`Partial::to_line`] (surrounding white space allowed).
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

/// The jobs `lo..hi` that the byte range `start..end` holds, if it is a range of the plan: its
/// ends are 0, the size, or where a job starts, and it is empty only for an empty file.
///
/// Jobs are in order of their start; only `mtsum` has empty jobs (the leaves `0..0` of files of
/// 0 and 1 byte), and they start at 0, so a range owns exactly the jobs that start inside it
/// (and at its end, when that is the end of the file).
fn jobs_of_range(
    spec: Spec,
    jobs: &[(Range<u64>, JobKind)],
    range: &Range<u64>,
) -> Result<Range<usize>, RangeError> {
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
    Ok(lo..hi)
}

/// At most `parts` byte ranges that cover a file of `spec.size` bytes in order, each a run of
/// whole jobs, of about equal size (as near as the jobs allow: a plain SHA-256 is one job, so
/// one range). An empty file is the one range `0..0`.
pub fn plan(spec: Spec, parts: usize) -> Result<Vec<Range<u64>>, RangeError> {
    if parts == 0 {
        return Err(RangeError::NoParts);
    }
    let mut cuts: Vec<u64> = spec
        .jobs()
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
    let ends = std::iter::once(0)
        .chain(cuts)
        .chain(std::iter::once(spec.size));
    let ends: Vec<u64> = ends.collect();
    Ok(ends.windows(2).map(|w| w[0]..w[1]).collect())
}

/// Hashes the jobs of `range` of `file` (opened by [`mtsum::source::Input::open`]) on up to
/// `threads` threads. `spec.size` must be the file's length: a plan made for another length
/// is a file that changed, and so is a size or modification time that moves while it is read.
pub fn hash_range(
    file: &SizedFile,
    spec: Spec,
    range: Range<u64>,
    threads: usize,
) -> Result<Result<Partial, InputError>, RangeError> {
    if file.len() != spec.size {
        return Ok(Err(InputError::Changed));
    }
    let jobs = spec.jobs();
    let mine = &jobs[jobs_of_range(spec, &jobs, &range)?];
    Ok(hash_jobs(file, spec, mine, threads).map(|digests| Partial {
        spec,
        range,
        digests,
    }))
}

/// The digest of every job of `jobs`, read from `file` by up to `threads` threads (each takes
/// the next job, so a few long jobs and many short ones balance), then the file checked
/// unchanged.
fn hash_jobs(
    file: &SizedFile,
    spec: Spec,
    jobs: &[(Range<u64>, JobKind)],
    threads: usize,
) -> Result<Vec<Digest>, InputError> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Option<Result<Digest, InputError>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let work = || {
        let mut buffer = Buffer::new();
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some((range, kind)) = jobs.get(i) else {
                return;
            };
            let (digest, back) = hash_job(file, spec, range.clone(), *kind, buffer);
            buffer = back;
            failed.fetch_or(digest.is_err(), Ordering::Relaxed);
            results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(digest);
        }
    };
    let threads = threads.clamp(1, jobs.len().max(1));
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        work();
    });
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    // The first error in job order, so that the same failure always reads the same.
    let digests = results
        .into_iter()
        .map(|r| r.unwrap_or(Err(InputError::Changed)))
        .collect::<Result<Vec<Digest>, InputError>>();
    let digests = digests?;
    file.check_unchanged()?;
    Ok(digests)
}

/// One job read in chunks of the engine's size into `buffer`; the buffer comes back for the
/// next job.
fn hash_job(
    file: &SizedFile,
    spec: Spec,
    range: Range<u64>,
    kind: JobKind,
    mut buffer: Buffer,
) -> (Result<Digest, InputError>, Buffer) {
    let mut hasher = spec.layout.hasher_for(spec.algorithm, kind);
    let mut reader = file.range_reader(range, Engine::DEFAULT_CHUNK_SIZE);
    while !reader.is_done() {
        let chunk = match reader.next_chunk(buffer) {
            Ok(chunk) => chunk,
            Err((back, e)) => return (Err(e), back),
        };
        hasher.update(chunk.bytes());
        let (back, ok) = chunk.finish();
        buffer = back;
        if let Err(e) = ok {
            return (Err(e), buffer);
        }
    }
    (Ok(hasher.finalize()), buffer)
}

/// The digest of `data` in memory by the same jobs and combiner as a file's ranges.
pub fn hash_bytes(layout: Layout, algorithm: Algorithm, data: &[u8]) -> Result<Root, NoRoot> {
    let spec = Spec {
        layout,
        algorithm,
        size: data.len() as u64,
    };
    let jobs = spec.jobs();
    let digests = jobs.iter().map(|(range, kind)| {
        let mut hasher = layout.hasher_for(algorithm, *kind);
        hasher.update(&data[range.start as usize..range.end as usize]);
        hasher.finalize()
    });
    fold(spec, &jobs, digests.collect())
}

/// The root from partials that cover the file once, in any order. Partials that are the same
/// line twice (a range hashed again after a failure) count once.
pub fn combine(partials: impl IntoIterator<Item = Partial>) -> Result<Root, RangeError> {
    let mut partials: Vec<Partial> = partials.into_iter().collect();
    let spec = partials.first().ok_or(RangeError::Empty)?.spec;
    if let Some(other) = partials.iter().find(|p| p.spec != spec) {
        return Err(RangeError::Mixed(spec, other.spec));
    }
    let jobs = spec.jobs();
    for p in &partials {
        let want = jobs_of_range(spec, &jobs, &p.range)?.len();
        if p.digests.len() != want {
            let Range { start, end } = p.range;
            let got = p.digests.len();
            return Err(RangeError::Count {
                start,
                end,
                got,
                want,
            });
        }
    }
    partials.sort_by_key(|p| (p.range.start, p.range.end));
    let mut digests = Vec::with_capacity(jobs.len());
    let mut last: Option<&Partial> = None;
    let mut covered = 0;
    for p in &partials {
        let Range { start, end } = p.range;
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
        digests.extend_from_slice(&p.digests);
        covered = end;
        last = Some(p);
    }
    if covered < spec.size {
        return Err(RangeError::Missing(covered, spec.size));
    }
    Ok(fold(spec, &jobs, digests)?)
}

/// The root from the digest of every job, in order; an error where the layout has none (an
/// empty file with `btv2`, more than 10 000 parts with `s3`).
fn fold(spec: Spec, jobs: &[(Range<u64>, JobKind)], digests: Vec<Digest>) -> Result<Root, NoRoot> {
    let mut combiner = spec.layout.combiner(spec.algorithm);
    for (index, ((range, _), digest)) in jobs.iter().zip(digests).enumerate() {
        combiner.add(index, range.clone(), digest);
    }
    combiner.finish(spec.size)
}
