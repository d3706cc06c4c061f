//! Layouts: how a byte stream of length `n` is cut into leaves and how leaf digests combine
//! into one root.
//!
//! A layout is a pure function of `n` and its parameters, which is what lets the engine hash
//! leaves on any thread in any order: [`Layout::jobs`] says up front which byte ranges exist
//! ([`Layout::plan`] adds how each is hashed, and cuts plain BLAKE3 into subtrees of its own
//! tree), [`JobHasher`] hashes one range as a stream of chunks, and [`Combiner`] folds the job
//! digests in tree order. [`Layout::walk`] is the definition itself (a recursion over byte
//! ranges); the reference path, the DOT graph and the `mtsum` combiner are all built on it.

use std::fmt;
use std::num::NonZeroU64;
use std::ops::Range;
use std::str::FromStr;

use crate::algorithm::{self, Algorithm, Digest, Hasher};
use crate::lanes::{self, Kernel};

/// The largest leaf of the `mtsum` layout: 128 MiB, as in C++ mtsum 1.1.0.
pub const MTSUM_MAX_LEAF: u64 = 128 << 20;

/// Roughly how many bytes one job of a fixed-leaf layout covers: large enough that the
/// per-job overhead (a channel message, a few syscalls) vanishes, small enough that two
/// workers share a file of a few MiB.
/// It is also the length of the subtrees a plain stream of a tree algorithm is cut into, which
/// must be a power of two of BLAKE3's 1 KiB chunks.
const TARGET_JOB_BYTES: u64 = 4 << 20;
const _: () = assert!(TARGET_JOB_BYTES.is_power_of_two() && TARGET_JOB_BYTES >= 1024);

/// The fewest whole leaves in one chunk worth hashing in lanes: with fewer, most of MD5's
/// lanes idle and one stream of OpenSSL (about a sixth of the lanes' throughput) is as fast.
const MIN_LANE_LEAVES: u64 = 4;

/// The shortest leaf that SHA-1 and SHA-224/256 hash in lanes within a job (see
/// `Layout::lanes_pay`): 4 KiB leaves gained 13 % over one SHA-NI stream.
const MIN_SHA_NI_LANE_LEAF: u64 = 4096;

/// A validated leaf size for the fixed-leaf layouts: never zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LeafSize(NonZeroU64);

impl LeafSize {
    /// The default leaf size of `merkle` and `rfc6962`: 1 MiB.
    pub const DEFAULT: LeafSize = LeafSize(NonZeroU64::new(1 << 20).unwrap());

    /// A leaf size of `bytes`, or `None` for 0.
    pub fn new(bytes: u64) -> Option<LeafSize> {
        NonZeroU64::new(bytes).map(LeafSize)
    }

    /// The size in bytes.
    pub fn get(self) -> u64 {
        self.0.get()
    }
}

impl Default for LeafSize {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Display for LeafSize {
    /// The shortest exact spelling: `64`, `4K`, `1M`, `3G`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.get();
        for (shift, suffix) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
            if n.is_multiple_of(1 << shift) {
                return write!(f, "{}{suffix}", n >> shift);
            }
        }
        write!(f, "{n}")
    }
}

/// Why a leaf size could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeafSizeError {
    #[error(
        "invalid leaf size '{0}': expected a number with an optional suffix K, M, G or T (KiB, MiB, ...)"
    )]
    Syntax(String),
    #[error("invalid leaf size '{0}': must be at least 1 byte")]
    Zero(String),
    #[error("invalid leaf size '{0}': too large")]
    Overflow(String),
}

impl FromStr for LeafSize {
    type Err = LeafSizeError;

    /// Parses `64`, `4K`, `4k`, `1M`, `1MiB`, `2G`, `1T`; suffixes are binary (K = 1024),
    /// as in `dd` and `truncate`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, suffix) = t.split_at(digits);
        let num: u64 = num.parse().map_err(|_| LeafSizeError::Syntax(s.into()))?;
        let shift = match suffix.to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kib" => 10,
            "m" | "mib" => 20,
            "g" | "gib" => 30,
            "t" | "tib" => 40,
            _ => return Err(LeafSizeError::Syntax(s.into())),
        };
        let bytes = num
            .checked_mul(1 << shift)
            .ok_or_else(|| LeafSizeError::Overflow(s.into()))?;
        LeafSize::new(bytes).ok_or_else(|| LeafSizeError::Zero(s.into()))
    }
}

/// A tree layout together with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// C++ mtsum 1.1.0: ranges halved until they are at most 128 MiB; prefix byte 0 for a
    /// leaf, 1 for an inner node, 2 for the root; the root always has two children.
    Mtsum,
    /// The ordinary digest of the whole stream, as `sha256sum` prints it.
    Plain,
    /// Fixed leaves, no prefixes, the left subtree takes the largest power of two of leaves
    /// strictly less than their count; `H("")` for empty input.
    Merkle(LeafSize),
    /// RFC 6962 (Certificate Transparency) Merkle Tree Hash over fixed leaves: leaf
    /// `H(0x00 || segment)`, node `H(0x01 || left || right)`, `H("")` for empty input.
    Rfc6962(LeafSize),
}

impl Layout {
    /// The layout's name as `-t` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Mtsum => "mtsum",
            Layout::Plain => "plain",
            Layout::Merkle(_) => "merkle",
            Layout::Rfc6962(_) => "rfc6962",
        }
    }

    /// Builds a layout from its `-t` name and an optional `-l` leaf size.
    pub fn from_name(name: &str, leaf: Option<LeafSize>) -> Result<Layout, LayoutError> {
        let layout = match name.to_ascii_lowercase().as_str() {
            "mtsum" => Layout::Mtsum,
            "plain" => Layout::Plain,
            "merkle" => Layout::Merkle(leaf.unwrap_or_default()),
            "rfc6962" => Layout::Rfc6962(leaf.unwrap_or_default()),
            _ => return Err(LayoutError::Unknown(name.into())),
        };
        if leaf.is_some() && layout.leaf_size().is_none() {
            return Err(LayoutError::NoLeafSize(layout.name()));
        }
        Ok(layout)
    }

    /// The fixed leaf size, for layouts that have one.
    pub fn leaf_size(self) -> Option<LeafSize> {
        match self {
            Layout::Merkle(l) | Layout::Rfc6962(l) => Some(l),
            Layout::Mtsum | Layout::Plain => None,
        }
    }

    /// Whether the tree can only be planned once the total length is known. Such layouts
    /// cannot hash a pipe without storing it first.
    pub fn needs_length(self) -> bool {
        matches!(self, Layout::Mtsum)
    }

    /// A hasher for one leaf, already fed with the leaf's prefix byte.
    pub fn leaf_hasher(self, alg: Algorithm) -> Hasher {
        // Leaves of a few KiB and more amortise a costlier but faster backend.
        let long = self.leaf_size().is_none_or(|l| l.get() >= 4096);
        let mut h = if long {
            alg.bulk_hasher()
        } else {
            alg.hasher()
        };
        h.update(self.leaf_prefix());
        h
    }

    /// The bytes hashed before a leaf's data.
    fn leaf_prefix(self) -> &'static [u8] {
        match self {
            Layout::Mtsum | Layout::Rfc6962(_) => &[0],
            Layout::Plain | Layout::Merkle(_) => &[],
        }
    }

    /// The bytes before the data of a job of `len` bytes (from [`Layout::jobs`]) if the
    /// job is a single message, digested as it is: a leaf of `mtsum`, a whole `plain` stream,
    /// a job of the fixed-leaf layouts no longer than one leaf. Such jobs can be hashed side
    /// by side in SIMD lanes.
    pub fn message_prefix(self, len: u64) -> Option<&'static [u8]> {
        match self.leaf_size() {
            Some(leaf) if len > leaf.get() => None,
            _ => Some(self.leaf_prefix()),
        }
    }

    /// The digest of a leaf holding `data`.
    pub fn hash_leaf(self, alg: Algorithm, data: &[u8]) -> Digest {
        let mut h = self.leaf_hasher(alg);
        h.update(data);
        h.finalize()
    }

    /// The digest of an inner node (or of the root, where the layout tells them apart).
    pub fn hash_node(self, alg: Algorithm, left: &Digest, right: &Digest, is_root: bool) -> Digest {
        let (l, r) = (left.as_bytes(), right.as_bytes());
        match self {
            Layout::Mtsum => alg.hash_parts(&[&[if is_root { 2 } else { 1 }], l, r]),
            Layout::Rfc6962(_) => alg.hash_parts(&[&[1], l, r]),
            Layout::Merkle(_) => alg.hash_parts(&[l, r]),
            Layout::Plain => unreachable!("the plain layout has no inner nodes"),
        }
    }

    /// The digest of empty input for layouts whose tree has no leaf then.
    fn empty_root(alg: Algorithm) -> Digest {
        alg.hash(b"")
    }

    /// Walks the tree of a stream of `n` bytes by its definition, bottom-up and left to right,
    /// calling `builder` for every node. Returns `None` only for the fixed-leaf layouts on
    /// empty input, whose tree has no node at all.
    pub fn walk<B: TreeBuilder>(self, n: u64, builder: &mut B) -> Option<B::Node> {
        let mut next_leaf = 0;
        match self {
            Layout::Plain => Some(builder.leaf(0, 0..n)),
            Layout::Mtsum => Some(walk_halving(0, n, true, &mut next_leaf, builder)),
            Layout::Merkle(leaf) | Layout::Rfc6962(leaf) => {
                let count = n.div_ceil(leaf.get());
                (count > 0).then(|| walk_fixed(0..count, leaf.get(), n, builder))
            }
        }
    }

    /// The root digest of a stream whose leaves have the given digests (in order).
    ///
    /// # Panics
    /// If `leaves` does not hold exactly one digest per leaf of [`Layout::walk`].
    pub fn root_from_leaves(self, alg: Algorithm, n: u64, leaves: &[Digest]) -> Digest {
        let mut fold = Fold {
            layout: self,
            alg,
            leaf: |i: usize, _: Range<u64>| leaves[i],
        };
        self.walk(n, &mut fold)
            .unwrap_or_else(|| Self::empty_root(alg))
    }

    /// The root of a fixed-leaf layout over leaves whose digests are given, whatever the
    /// leaves' lengths: the shape of `merkle` and `rfc6962` depends only on the leaf count.
    /// This is the tree-combining function of RFC 6962 itself (its leaves vary in length).
    ///
    /// # Panics
    /// For `mtsum` and `plain`, whose shape depends on byte lengths.
    pub fn root_of_leaf_digests(self, alg: Algorithm, leaves: &[Digest]) -> Digest {
        let leaf = self.leaf_size().expect("a fixed-leaf layout").get();
        self.root_from_leaves(alg, leaves.len() as u64 * leaf, leaves)
    }

    /// Cuts a stream of `n` bytes into jobs that can be hashed independently: the leaves of
    /// `mtsum`, the whole stream for `plain`, and aligned runs of a power-of-two number of
    /// leaves (complete subtrees) for the fixed-leaf layouts. With `one_leaf_per_job` every job
    /// is exactly one leaf, so that the job digests are the leaf digests (for drawing the tree).
    pub fn jobs(self, n: u64, one_leaf_per_job: bool) -> Vec<Range<u64>> {
        match self {
            Layout::Plain => std::iter::once(0..n).collect(),
            Layout::Mtsum => {
                let mut leaves = LeafRanges(Vec::new());
                self.walk(n, &mut leaves);
                leaves.0
            }
            Layout::Merkle(leaf) | Layout::Rfc6962(leaf) => {
                let leaves_per_job = if one_leaf_per_job {
                    1
                } else {
                    prev_power_of_two((TARGET_JOB_BYTES / leaf.get()).max(1))
                };
                let job_len = leaves_per_job.saturating_mul(leaf.get());
                (0..n.div_ceil(job_len))
                    .map(|i| i * job_len..n.min((i + 1).saturating_mul(job_len)))
                    .collect()
            }
        }
    }

    /// The jobs of a stream of `n` bytes as the engine hashes them, with how each is hashed:
    /// those of [`Layout::jobs`], except that a `plain` stream of a tree algorithm
    /// ([`Algorithm::is_tree`]) longer than one job is cut into whole subtrees of the
    /// algorithm's own tree, so that plain BLAKE3 keeps every worker busy as `b3sum` does;
    /// [`Combiner`] joins them into the plain digest.
    pub fn plan(
        self,
        alg: Algorithm,
        n: u64,
        one_leaf_per_job: bool,
    ) -> Vec<(Range<u64>, JobKind)> {
        let subtrees = self == Layout::Plain && alg.is_tree() && !one_leaf_per_job;
        if subtrees && n > TARGET_JOB_BYTES {
            return (0..n.div_ceil(TARGET_JOB_BYTES))
                .map(|i| i * TARGET_JOB_BYTES..n.min((i + 1) * TARGET_JOB_BYTES))
                .map(|r| (r.clone(), JobKind::Subtree { offset: r.start }))
                .collect();
        }
        self.jobs(n, one_leaf_per_job)
            .into_iter()
            .map(|r| (r, JobKind::Layout))
            .collect()
    }

    /// A hasher for a job of [`Layout::plan`] of the given kind.
    pub fn hasher_for(self, alg: Algorithm, kind: JobKind) -> JobHasher {
        let job = self.job_hasher(alg);
        match kind {
            JobKind::Layout => job,
            JobKind::Subtree { offset } => JobHasher {
                current: Hasher::subtree(alg, offset),
                ..job
            },
        }
    }

    /// A hasher for one job of [`Layout::jobs`], or for a whole stream of unknown length
    /// (where the layout allows it).
    ///
    /// With a fixed-leaf layout it hashes the leaves that a chunk holds whole several at once
    /// in SIMD lanes ([`crate::lanes`]) where the CPU has a multi-buffer kernel for `alg`,
    /// unless `MTSUM_FORCE_PORTABLE` is set ([`Kernel::multi_buffer`]).
    pub fn job_hasher(self, alg: Algorithm) -> JobHasher {
        // Every algorithm's kernel beats its one stream on whole leaves: short leaves hashed
        // one after another ran SHA-256 at one SHA-NI stream (half the two-stream kernel) and
        // SHA-512 at one OpenSSL stream (a third of the AVX-512 lanes); see
        // docs/performance.md, "Fixed leaves: where the time goes".
        let lanes = Kernel::multi_buffer(alg).filter(|_| self.lanes_pay(alg));
        self.job_hasher_with_lanes(alg, lanes)
    }

    /// Whether hashing this layout's whole leaves in lanes beats one leaf after another. A
    /// lane set's bookkeeping per message costs about as much as hashing a few hundred bytes,
    /// which SHA-1 and SHA-224/256 do cheaply in one SHA-NI stream: with two SHA-256 lanes,
    /// 64-byte leaves took 1.7 × the time of one stream and 2 KiB leaves broke even, while
    /// MD5 and SHA-512, which have no such instruction, gain at any leaf size.
    fn lanes_pay(self, alg: Algorithm) -> bool {
        let sha_ni = matches!(alg, Algorithm::Sha1 | Algorithm::Sha224 | Algorithm::Sha256);
        self.leaf_size()
            .is_some_and(|leaf| !sha_ni || leaf.get() >= MIN_SHA_NI_LANE_LEAF)
    }

    /// [`Layout::job_hasher`] with the multi-buffer kernel chosen by the caller: `None` hashes
    /// one leaf after another. Lanes apply only to the fixed-leaf layouts; the digest is the
    /// same either way.
    ///
    /// # Panics
    /// If `lanes` is a kernel of another algorithm than `alg`.
    pub fn job_hasher_with_lanes(self, alg: Algorithm, lanes: Option<Kernel>) -> JobHasher {
        if let Some(kernel) = lanes {
            assert_eq!(kernel.algorithm(), alg, "a kernel of another algorithm");
        }
        let fixed = self.leaf_size().is_some();
        JobHasher {
            layout: self,
            alg,
            current: self.leaf_hasher(alg),
            filled: 0,
            stack: MerkleStack::default(),
            lanes: lanes.filter(|_| fixed),
        }
    }

    /// A combiner for the job digests of one stream.
    pub fn combiner(self, alg: Algorithm) -> Combiner {
        Combiner {
            layout: self,
            alg,
            digests: Vec::new(),
            next: 0,
            stack: MerkleStack::default(),
        }
    }
}

impl fmt::Display for Layout {
    /// The name, with the leaf size where the layout has one: `mtsum`, `rfc6962-1M`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.leaf_size() {
            Some(leaf) => write!(f, "{}-{leaf}", self.name()),
            None => f.write_str(self.name()),
        }
    }
}

/// Why a layout could not be built from the command line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("unknown layout '{0}' (known: mtsum, plain, merkle, rfc6962)")]
    Unknown(String),
    #[error("the {0} layout has no leaf size; -l/--leaf-size applies to merkle and rfc6962")]
    NoLeafSize(&'static str),
}

/// Receives the nodes of a tree from [`Layout::walk`], children before parents.
pub trait TreeBuilder {
    /// Whatever the builder makes of a node: a digest, a graph node id, nothing.
    type Node;
    /// Leaf number `index`, covering `range` of the stream.
    fn leaf(&mut self, index: usize, range: Range<u64>) -> Self::Node;
    /// An inner node over `range` with two children; `is_root` for the top one.
    fn inner(
        &mut self,
        range: Range<u64>,
        left: Self::Node,
        right: Self::Node,
        is_root: bool,
    ) -> Self::Node;
}

/// `node(offset, size)` of C++ mtsum: halve the range; a child of at most 128 MiB is a
/// leaf, except that the root is always split.
fn walk_halving<B: TreeBuilder>(
    offset: u64,
    size: u64,
    is_root: bool,
    next_leaf: &mut usize,
    b: &mut B,
) -> B::Node {
    if !is_root && size <= MTSUM_MAX_LEAF {
        let index = *next_leaf;
        *next_leaf += 1;
        return b.leaf(index, offset..offset + size);
    }
    let left = size / 2;
    let l = walk_halving(offset, left, false, next_leaf, b);
    let r = walk_halving(offset + left, size - left, false, next_leaf, b);
    b.inner(offset..offset + size, l, r, is_root)
}

/// The recursion of the fixed-leaf layouts over the leaf numbers `leaves` (never empty).
fn walk_fixed<B: TreeBuilder>(leaves: Range<u64>, leaf: u64, n: u64, b: &mut B) -> B::Node {
    let bytes = leaves.start * leaf..n.min(leaves.end * leaf);
    let count = leaves.end - leaves.start;
    if count == 1 {
        return b.leaf(leaves.start as usize, bytes);
    }
    let split = leaves.start + prev_power_of_two(count - 1);
    let l = walk_fixed(leaves.start..split, leaf, n, b);
    let r = walk_fixed(split..leaves.end, leaf, n, b);
    b.inner(bytes, l, r, leaves.start == 0 && leaves.end * leaf >= n)
}

/// The largest power of two that is at most `x` (`x` > 0).
fn prev_power_of_two(x: u64) -> u64 {
    1 << (63 - x.leading_zeros())
}

/// The root (`is_root`) or chaining value of consecutive subtrees of a tree algorithm, all
/// of one power-of-two length but the last: BLAKE3's shape, where the left side takes the
/// largest power of two of them strictly less than their count.
fn join_subtree_digests(alg: Algorithm, subtrees: &[Digest], is_root: bool) -> Digest {
    match subtrees {
        [one] => *one,
        _ => {
            let (left, right) =
                subtrees.split_at(prev_power_of_two(subtrees.len() as u64 - 1) as usize);
            let (l, r) = (
                join_subtree_digests(alg, left, false),
                join_subtree_digests(alg, right, false),
            );
            algorithm::join_subtrees(alg, &l, &r, is_root)
        }
    }
}

/// Collects the leaf ranges of a walk.
struct LeafRanges(Vec<Range<u64>>);

impl TreeBuilder for LeafRanges {
    type Node = ();
    fn leaf(&mut self, _: usize, range: Range<u64>) {
        self.0.push(range);
    }
    fn inner(&mut self, _: Range<u64>, _: (), _: (), _: bool) {}
}

/// Computes digests bottom-up, taking leaf digests from `leaf`.
pub struct Fold<F> {
    pub layout: Layout,
    pub alg: Algorithm,
    pub leaf: F,
}

impl<F: FnMut(usize, Range<u64>) -> Digest> TreeBuilder for Fold<F> {
    type Node = Digest;
    fn leaf(&mut self, index: usize, range: Range<u64>) -> Digest {
        (self.leaf)(index, range)
    }
    fn inner(&mut self, _: Range<u64>, l: Digest, r: Digest, is_root: bool) -> Digest {
        self.layout.hash_node(self.alg, &l, &r, is_root)
    }
}

/// The in-order fold of the fixed-leaf layouts, kept as a stack of complete subtrees like a
/// binary counter: pushing a subtree merges it with the one below while both cover the same
/// number of leaves. Folding what remains from the right gives the RFC 6962 shape (the left
/// subtree takes the largest power of two of leaves), in memory logarithmic in the leaf count.
#[derive(Clone, Debug, Default)]
struct MerkleStack {
    /// (leaves covered, digest); leaf counts strictly decrease from bottom to top.
    entries: Vec<(u64, Digest)>,
}

impl MerkleStack {
    fn push(&mut self, layout: Layout, alg: Algorithm, leaves: u64, digest: Digest) {
        self.entries.push((leaves, digest));
        while let [.., (lc, l), (rc, r)] = self.entries[..] {
            if lc != rc {
                break;
            }
            self.entries.truncate(self.entries.len() - 2);
            self.entries
                .push((lc + rc, layout.hash_node(alg, &l, &r, false)));
        }
    }

    fn finish(self, layout: Layout, alg: Algorithm) -> Option<Digest> {
        self.entries
            .into_iter()
            .rev()
            .map(|(_, d)| d)
            .reduce(|right, left| layout.hash_node(alg, &left, &right, false))
    }
}

/// How the hasher of a job of [`Layout::plan`] starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    /// A job of [`Layout::jobs`], or a whole stream: [`Layout::job_hasher`].
    Layout,
    /// The subtree of a tree algorithm's own tree that starts at byte `offset`, whose digest
    /// is a chaining value for [`Combiner`] to join.
    Subtree { offset: u64 },
}

/// Hashes one job (or a whole stream) fed as chunks of any size.
#[derive(Clone)]
pub struct JobHasher {
    layout: Layout,
    alg: Algorithm,
    /// The leaf being hashed.
    current: Hasher,
    /// Bytes in `current`.
    filled: u64,
    /// Finished leaves of a fixed-leaf layout.
    stack: MerkleStack,
    /// The kernel that hashes whole leaves several at once (fixed-leaf layouts).
    lanes: Option<Kernel>,
}

impl JobHasher {
    /// Absorbs the next bytes of the job.
    pub fn update(&mut self, mut data: &[u8]) {
        let Some(leaf) = self.layout.leaf_size().map(LeafSize::get) else {
            self.current.update(data);
            return;
        };
        while !data.is_empty() {
            if self.filled == leaf {
                self.finish_leaf();
            }
            if self.filled == 0 {
                data = self.hash_whole_leaves(leaf, data);
                if data.is_empty() {
                    break;
                }
            }
            let take = (leaf - self.filled).min(data.len() as u64) as usize;
            self.current.update(&data[..take]);
            self.filled += take as u64;
            data = &data[take..];
        }
    }

    /// Hashes the whole leaves at the start of `data` in lanes, if there are enough of them
    /// to fill the lanes better than one stream does; returns the rest of `data`.
    fn hash_whole_leaves<'a>(&mut self, leaf: u64, data: &'a [u8]) -> &'a [u8] {
        let whole = data.len() as u64 / leaf;
        let Some(kernel) = self.lanes.filter(|_| whole >= MIN_LANE_LEAVES) else {
            return data;
        };
        // `whole * leaf` is at most `data.len()`, so the leaf size fits in a `usize`.
        let (leaves, rest) = data.split_at((whole * leaf) as usize);
        let leaves: Vec<&[u8]> = leaves.chunks(leaf as usize).collect();
        let prefix = self.layout.leaf_prefix();
        for digest in lanes::hash_many(kernel, prefix, &leaves) {
            self.stack.push(self.layout, self.alg, 1, digest);
        }
        rest
    }

    fn finish_leaf(&mut self) {
        let leaf = std::mem::replace(&mut self.current, self.layout.leaf_hasher(self.alg));
        self.stack.push(self.layout, self.alg, 1, leaf.finalize());
        self.filled = 0;
    }

    /// The job's digest: the leaf for `plain` and `mtsum`, the subtree root for the
    /// fixed-leaf layouts (`H("")` if nothing was fed, the empty stream's root).
    pub fn finalize(mut self) -> Digest {
        if self.layout.leaf_size().is_none() {
            return self.current.finalize();
        }
        if self.filled > 0 {
            self.finish_leaf();
        }
        self.stack
            .finish(self.layout, self.alg)
            .unwrap_or_else(|| Layout::empty_root(self.alg))
    }
}

/// Folds job digests, which may arrive in any order, into the root.
pub struct Combiner {
    layout: Layout,
    alg: Algorithm,
    /// `mtsum` and `plain`: every job digest by index (few: one per 64–128 MiB of input).
    /// Fixed-leaf layouts: the digests (with their leaf counts) that arrived ahead of `next`.
    digests: Vec<Option<(u64, Digest)>>,
    /// Fixed-leaf layouts: the index of the next job to push onto `stack`.
    next: usize,
    stack: MerkleStack,
}

impl Combiner {
    /// Records the digest of the job `index` of [`Layout::jobs`], which covers `range`.
    pub fn add(&mut self, index: usize, range: Range<u64>, digest: Digest) {
        if index >= self.digests.len() {
            self.digests.resize(index + 1, None);
        }
        let Some(leaf) = self.layout.leaf_size() else {
            self.digests[index] = Some((1, digest));
            return;
        };
        // Jobs start on leaf boundaries, so a job covers ceil(len / leaf) leaves.
        let leaves = (range.end - range.start).div_ceil(leaf.get());
        self.digests[index] = Some((leaves, digest));
        while let Some(Some((leaves, d))) = self.digests.get_mut(self.next).map(Option::take) {
            self.stack.push(self.layout, self.alg, leaves, d);
            self.next += 1;
        }
    }

    /// The root digest of the stream of `n` bytes whose jobs were added.
    ///
    /// # Panics
    /// If a job of the plan was never added: a bug in the caller, not bad input.
    pub fn finish(self, n: u64) -> Digest {
        match self.layout {
            Layout::Plain | Layout::Mtsum => {
                let leaves: Vec<Digest> = self
                    .digests
                    .iter()
                    .map(|d| d.expect("every job was hashed").1)
                    .collect();
                match (self.layout, &leaves[..]) {
                    (Layout::Plain, [_, _, ..]) => join_subtree_digests(self.alg, &leaves, true),
                    _ => self.layout.root_from_leaves(self.alg, n, &leaves),
                }
            }
            Layout::Merkle(_) | Layout::Rfc6962(_) => {
                assert!(
                    self.digests[self.next..].iter().all(Option::is_none),
                    "every job was hashed"
                );
                self.stack
                    .finish(self.layout, self.alg)
                    .unwrap_or_else(|| Layout::empty_root(self.alg))
            }
        }
    }
}
