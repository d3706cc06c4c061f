//! The fixed-leaf shape: leaves of `L` bytes (the last one shorter, none empty), folded into a
//! binary tree whose every aligned power-of-two run of leaves is a complete subtree.
//!
//! `merkle`, `rfc6962` and Glacier's tree hash are this shape with different prefixes (and
//! Glacier with `L` = 1 MiB); BitTorrent v2 is this shape padded to a power of two of leaves
//! ([`Top::Padded`], see [`super::padded`]). Because every aligned run of `2^k` leaves is a
//! subtree, a job of such a run hashes to one node, and job digests fold in order on a
//! [`Stack`] like a binary counter, in memory logarithmic in the leaf count.

use std::cell::RefCell;
use std::ops::Range;

use super::{JobKind, MIN_LANE_LEAVES, TARGET_JOB_BYTES, TreeBuilder, padded, prev_power_of_two};
use crate::algorithm::{Algorithm, Digest, Hasher};
use crate::batch;
use crate::lanes::{self, Kernel};
use crate::source::Pieces;

/// Parameters of the fixed-leaf shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Fixed {
    /// Bytes per leaf.
    pub leaf: u64,
    /// Hashed before a leaf's bytes.
    pub leaf_prefix: &'static [u8],
    /// Hashed before the two children of an inner node.
    pub node_prefix: &'static [u8],
    pub top: Top,
}

/// How the complete subtrees left at the end of the leaves become the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Top {
    /// Folded from the right: the left subtree takes the largest power of two of leaves
    /// strictly less than their count (RFC 6962, `merkle`, Glacier); `H("")` for no leaf.
    Unbalanced,
    /// Padded with all-zero leaf digests to a power of two of leaves (BitTorrent v2); no root
    /// for no leaf.
    Padded,
}

impl Fixed {
    /// An inner node over two children.
    pub fn node(&self, alg: Algorithm, left: &Digest, right: &Digest) -> Digest {
        alg.hash_parts(&[self.node_prefix, left.as_bytes(), right.as_bytes()])
    }

    /// Replaces `level` (an even number of digests, in order) with the inner nodes over its
    /// pairs: several at once in the lanes of `lanes` when there are enough of them, all in
    /// one [`batch::hash_each_into`] where that pays, one after another otherwise. `pairs`
    /// is scratch space for the level's bytes side by side. The nodes take the place of
    /// their children rather than a vector of their own, which would grow, swapped with
    /// `level`, to the size of a chunk's leaves too.
    fn nodes(
        &self,
        alg: Algorithm,
        level: &mut Vec<Digest>,
        lanes: Option<Kernel>,
        pairs: &mut Vec<u8>,
    ) {
        debug_assert!(level.len().is_multiple_of(2), "nodes take pairs");
        let count = level.len() / 2;
        let lanes = lanes.filter(|_| count as u64 >= MIN_LANE_LEAVES);
        if !at_once(alg, lanes) {
            // Node `i` overwrites digest `i`, which pair `i / 2` has already read.
            for i in 0..count {
                level[i] = self.node(alg, &level[2 * i], &level[2 * i + 1]);
            }
            level.truncate(count);
            return;
        }
        pairs.clear();
        digest_bytes(level, alg.digest_len(), pairs);
        level.clear();
        hash_each_into(
            alg,
            lanes,
            self.node_prefix,
            pairs,
            2 * alg.digest_len(),
            2 * alg.digest_len(),
            level,
        );
    }

    /// The jobs of a stream of `n` bytes: aligned runs of a power-of-two number of leaves of
    /// about [`TARGET_JOB_BYTES`], or single leaves with `one_leaf_per_job`.
    pub fn plan(&self, n: u64, one_leaf_per_job: bool) -> Vec<(Range<u64>, JobKind)> {
        let job_len = self.job_len(one_leaf_per_job);
        (0..n.div_ceil(job_len))
            .map(|i| i * job_len..n.min((i + 1).saturating_mul(job_len)))
            .map(|r| (r, JobKind::Layout))
            .collect()
    }

    /// The number of jobs of [`Fixed::plan`] (runs of leaves), without making them.
    pub fn job_count(&self, n: u64) -> u64 {
        n.div_ceil(self.job_len(false))
    }

    /// The bytes of every job of [`Fixed::plan`] but the last.
    fn job_len(&self, one_leaf_per_job: bool) -> u64 {
        let leaves_per_job = if one_leaf_per_job {
            1
        } else {
            prev_power_of_two((TARGET_JOB_BYTES / self.leaf).max(1))
        };
        leaves_per_job.saturating_mul(self.leaf)
    }

    /// The leaf slots a job of `len` bytes fills: its leaves, rounded up to a power of two
    /// when the tree is padded (a job's subtree is padded as the whole tree is).
    pub fn slots(&self, len: u64) -> u64 {
        let leaves = len.div_ceil(self.leaf);
        match self.top {
            Top::Unbalanced => leaves,
            Top::Padded => leaves.next_power_of_two(),
        }
    }

    /// A job hasher for runs of whole leaves, hashing them in the lanes of `lanes` when a
    /// chunk holds enough of them.
    pub fn job_hasher(self, alg: Algorithm, lanes: Option<Kernel>) -> LeafRun {
        LeafRun {
            shape: self,
            alg,
            current: leaf_hasher(alg, self.leaf, self.leaf_prefix),
            filled: 0,
            stack: Stack::default(),
            lanes,
        }
    }

    /// The recursion of [`super::Layout::walk`] over the leaf numbers `leaves` (never empty)
    /// of an unpadded tree of `n` bytes.
    pub fn walk<B: TreeBuilder>(&self, leaves: Range<u64>, n: u64, b: &mut B) -> B::Node {
        let leaf = self.leaf;
        let bytes = leaves.start * leaf..n.min(leaves.end * leaf);
        let count = leaves.end - leaves.start;
        if count == 1 {
            return b.leaf(leaves.start as usize, bytes);
        }
        let split = leaves.start + prev_power_of_two(count - 1);
        let l = self.walk(leaves.start..split, n, b);
        let r = self.walk(split..leaves.end, n, b);
        b.inner(bytes, l, r, leaves.start == 0 && leaves.end * leaf >= n)
    }
}

/// Whether many messages of one length are hashed at once rather than one after another: in
/// the lanes of `lanes` where there are enough of them, through [`batch`] where that pays.
fn at_once(alg: Algorithm, lanes: Option<Kernel>) -> bool {
    lanes.is_some() || batch::pays(alg)
}

/// The digests of `prefix ‖ m` for every message `m` of `len` bytes in `data`, message `i`
/// at `data[i * stride ..]` (see [`lanes::hash_each_into`]), appended to `out`, at once
/// ([`at_once`]): in the lanes of `lanes`, or through [`batch`].
fn hash_each_into(
    alg: Algorithm,
    lanes: Option<Kernel>,
    prefix: &[u8],
    data: &[u8],
    len: usize,
    stride: usize,
    out: &mut Vec<Digest>,
) {
    match lanes {
        Some(kernel) => lanes::hash_each_into(kernel, prefix, data, len, stride, out),
        None if stride == len => batch::hash_each_into(alg, prefix, data, len, out),
        // Spread reads are asked for only where a lane kernel hashes the leaves, and the
        // batch backends read messages side by side: one message per call is correct, and
        // not a path that needs to be fast.
        None => {
            for i in 0..data.len().div_ceil(stride) {
                let start = i * stride;
                batch::hash_each_into(alg, prefix, &data[start..start + len], len, out);
            }
        }
    }
}

/// Appends the bytes of `digests`, each of `len` bytes, side by side to `out`. Digest by
/// digest, not byte by byte through `flat_map` (that collect took a tenth of the time of
/// SHA-256 rfc6962 1K leaves), and in copies of a length known when compiled where it is a
/// common digest length: of the run-time length, each was a call of `memcpy`, one per leaf.
fn digest_bytes(digests: &[Digest], len: usize, out: &mut Vec<u8>) {
    fn fixed<const N: usize>(digests: &[Digest], out: &mut Vec<u8>) {
        for digest in digests {
            let bytes: &[u8; N] = digest.as_bytes().try_into().expect("N bytes");
            out.extend_from_slice(bytes);
        }
    }
    out.reserve(digests.len() * len);
    match len {
        8 => fixed::<8>(digests, out),
        16 => fixed::<16>(digests, out),
        20 => fixed::<20>(digests, out),
        32 => fixed::<32>(digests, out),
        64 => fixed::<64>(digests, out),
        _ => {
            for digest in digests {
                out.extend_from_slice(digest.as_bytes());
            }
        }
    }
}

/// A hasher for one leaf of `leaf` bytes, already fed with `prefix`. Leaves of a few KiB and
/// more amortise a costlier but faster backend.
pub(super) fn leaf_hasher(alg: Algorithm, leaf: u64, prefix: &'static [u8]) -> Hasher {
    let h = if leaf >= 4096 {
        alg.bulk_hasher()
    } else {
        alg.hasher()
    };
    h.prefixed(prefix)
}

/// The vectors that hashing a chunk's whole leaves and the levels of nodes over them fills,
/// kept from chunk to chunk and job to job (one set per thread, see [`SCRATCH`]): a chunk of
/// thousands of small leaves needs vectors of hundreds of KiB, which the allocator maps fresh
/// and the kernel zeroes page by page each time (page faults and `clear_page` took 3–5 % of
/// SHA-256 with 1 KiB leaves, more with 64-byte ones).
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// A run of subtrees: the leaves of a chunk, then each level of nodes over them.
    level: Vec<Digest>,
    /// The bytes of `level`'s digests side by side, the messages of its nodes.
    pairs: Vec<u8>,
}

thread_local! {
    /// Each thread's [`Scratch`]: a job hasher lives for one job of a few MiB, often a
    /// single chunk, so vectors kept in it would be allocated afresh for nearly every chunk.
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// Complete subtrees in order, kept like a binary counter: pushing one merges it with the one
/// below while both cover the same number of leaf slots.
#[derive(Clone, Debug, Default)]
pub(super) struct Stack {
    /// (leaf slots covered, digest); counts strictly decrease from bottom to top.
    entries: Vec<(u64, Digest)>,
}

impl Stack {
    /// Pushes the subtree of the next `slots` leaf slots.
    pub fn push(&mut self, shape: &Fixed, alg: Algorithm, slots: u64, digest: Digest) {
        self.entries.push((slots, digest));
        while let [.., (lc, l), (rc, r)] = self.entries[..] {
            if lc != rc {
                break;
            }
            self.entries.truncate(self.entries.len() - 2);
            self.entries.push((lc + rc, shape.node(alg, &l, &r)));
        }
    }

    /// Pushes the subtrees `scratch.level` of `slots` leaf slots each, in order, as many
    /// calls of [`Stack::push`] would, but level by level: the nodes of a level that the run
    /// completes are independent messages, hashed several at once by `lanes` (the 256
    /// leaves of a 1 MiB chunk of 4 KiB leaves make levels of 128, 64, … 1 nodes). Every
    /// subtree on the stack covers at least `slots` slots, as it does when all pushes are
    /// of the same size. Leaves `scratch.level` empty.
    pub fn push_many(
        &mut self,
        shape: &Fixed,
        alg: Algorithm,
        mut slots: u64,
        scratch: &mut Scratch,
        lanes: Option<Kernel>,
    ) {
        debug_assert!(self.entries.iter().all(|&(s, _)| s >= slots));
        let Scratch { level, pairs } = scratch;
        // A subtree left without a partner at each level, smallest first: the last of
        // the run at that level, so it goes on the stack above the larger ones.
        let mut unpaired = Vec::new();
        while !level.is_empty() {
            // The stack's top subtree is the left partner of the level's first.
            if let Some(&(top, left)) = self.entries.last()
                && top == slots
            {
                self.entries.pop();
                level.insert(0, left);
            }
            if !level.len().is_multiple_of(2) {
                unpaired.push((slots, level.pop().expect("an odd level is not empty")));
            }
            shape.nodes(alg, level, lanes, pairs);
            slots *= 2;
        }
        self.entries.extend(unpaired.into_iter().rev());
    }

    /// The root over everything pushed; `None` if nothing was.
    pub fn finish(mut self, shape: &Fixed, alg: Algorithm) -> Option<Digest> {
        match shape.top {
            Top::Unbalanced => self
                .entries
                .into_iter()
                .rev()
                .map(|(_, d)| d)
                .reduce(|right, left| shape.node(alg, &left, &right)),
            Top::Padded => {
                // Raise the smallest subtree with padding until it pairs with the one below.
                while let Some((slots, digest)) = self.entries.pop() {
                    if self.entries.is_empty() {
                        return Some(digest);
                    }
                    let pad = padded::zero_subtree(alg, slots, |l, r| shape.node(alg, l, r));
                    self.push(shape, alg, 2 * slots, shape.node(alg, &digest, &pad));
                }
                None
            }
        }
    }
}

/// Hashes a run of whole leaves (one job, or a whole stream) fed as chunks of any size.
#[derive(Clone)]
pub(super) struct LeafRun {
    shape: Fixed,
    alg: Algorithm,
    /// The leaf being hashed.
    current: Hasher,
    /// Bytes in `current`.
    filled: u64,
    /// Finished leaves.
    stack: Stack,
    /// The kernel that hashes whole leaves several at once, and the inner nodes over them.
    lanes: Option<Kernel>,
}

impl LeafRun {
    pub fn update(&mut self, mut data: &[u8]) {
        let leaf = self.shape.leaf;
        while !data.is_empty() {
            self.finish_full_leaf();
            if self.filled == 0 {
                // `whole * leaf` is at most `data.len()`, so the leaf size fits in a `usize`.
                let whole = (data.len() as u64 / leaf) as usize;
                let done = self.hash_whole_leaves(data, whole, leaf as usize);
                data = &data[(done as u64 * leaf) as usize..];
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

    /// [`LeafRun::update`] with the bytes of `pieces`, in order. Pieces of exactly a leaf,
    /// on a leaf boundary, are hashed where they lie, however far apart (a spread read's);
    /// any others piece by piece.
    pub fn update_pieces(&mut self, pieces: Pieces<'_>) {
        self.finish_full_leaf();
        let mut done = 0;
        if self.filled == 0 && pieces.piece_len() as u64 == self.shape.leaf {
            done = self.hash_whole_leaves(pieces.span(), pieces.whole(), pieces.stride());
        }
        for piece in pieces.iter().skip(done) {
            self.update(piece);
        }
    }

    /// Starts the next leaf if the current one is full. A leaf is finished only once bytes
    /// come after it, so that the run's last leaf is finished by [`LeafRun::finalize`].
    fn finish_full_leaf(&mut self) {
        if self.filled == self.shape.leaf {
            self.finish_leaf();
        }
    }

    /// Hashes the `whole` leaves that `data` holds, leaf `i` at `data[i * stride ..]`, in
    /// lanes, if there are enough of them to fill the lanes better than one stream does, or
    /// in one [`batch::hash_each`] where that pays; returns how many it hashed (all or none).
    fn hash_whole_leaves(&mut self, data: &[u8], whole: usize, stride: usize) -> usize {
        let lanes = self.lanes.filter(|_| whole as u64 >= MIN_LANE_LEAVES);
        if whole == 0 || !at_once(self.alg, lanes) {
            return 0;
        }
        let (prefix, len) = (self.shape.leaf_prefix, self.shape.leaf as usize);
        let leaves = &data[..(whole - 1) * stride + len];
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.level.clear();
            hash_each_into(
                self.alg,
                lanes,
                prefix,
                leaves,
                len,
                stride,
                &mut scratch.level,
            );
            self.stack
                .push_many(&self.shape, self.alg, 1, scratch, self.lanes);
        });
        whole
    }

    fn finish_leaf(&mut self) {
        let next = leaf_hasher(self.alg, self.shape.leaf, self.shape.leaf_prefix);
        let leaf = std::mem::replace(&mut self.current, next);
        self.stack.push(&self.shape, self.alg, 1, leaf.finalize());
        self.filled = 0;
    }

    /// The root of the leaves fed (padded where the shape is); `H("")` if nothing was fed,
    /// which only the empty stream's root uses.
    pub fn finalize(mut self) -> Digest {
        if self.filled > 0 {
            self.finish_leaf();
        }
        let alg = self.alg;
        self.stack
            .finish(&self.shape, alg)
            .unwrap_or_else(|| alg.hash(b""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6962's shape, and BitTorrent v2's padded one, whose inner nodes have no prefix.
    const SHAPES: [Fixed; 2] = [
        Fixed {
            leaf: 1,
            leaf_prefix: &[0],
            node_prefix: &[1],
            top: Top::Unbalanced,
        },
        Fixed {
            leaf: 1,
            leaf_prefix: &[],
            node_prefix: &[],
            top: Top::Padded,
        },
    ];

    /// Pushing a run of subtrees at once, its levels' nodes hashed in lanes, leaves the stack
    /// that pushing them one by one leaves: on stacks of every shape up to 7 subtrees, for
    /// levels of 1, 2, `lanes − 1`, `lanes` and `lanes + 1` nodes (twice as many subtrees,
    /// and one more) of every kernel, and with no kernel.
    #[test]
    fn a_run_pushed_at_once_leaves_the_stack_of_one_push_after_another() {
        let algorithms = [
            Algorithm::Md5,
            Algorithm::Sha1,
            Algorithm::Sha256,
            Algorithm::Sha512,
        ];
        for shape in SHAPES {
            for alg in algorithms {
                let kernels =
                    std::iter::once(None).chain(Kernel::available(alg).into_iter().map(Some));
                for lanes in kernels {
                    let width = lanes.map_or(1, Kernel::lanes);
                    let mut counts = vec![1, 2, 3, 4, 5];
                    for nodes in [width.saturating_sub(1), width, width + 1, 2 * width + 1] {
                        counts.extend([2 * nodes, 2 * nodes + 1]);
                    }
                    let digest = |i: usize| alg.hash(&i.to_le_bytes());
                    for below in 0..8 {
                        for &count in &counts {
                            let mut one_by_one = Stack::default();
                            let mut at_once = Stack::default();
                            for i in 0..below {
                                one_by_one.push(&shape, alg, 1, digest(i));
                                at_once.push(&shape, alg, 1, digest(i));
                            }
                            let mut scratch = Scratch::default();
                            scratch.level.extend((below..below + count).map(digest));
                            for &d in &scratch.level {
                                one_by_one.push(&shape, alg, 1, d);
                            }
                            at_once.push_many(&shape, alg, 1, &mut scratch, lanes);
                            assert_eq!(
                                at_once.entries, one_by_one.entries,
                                "{alg} {lanes:?} {below} then {count}"
                            );
                        }
                    }
                }
            }
        }
    }
}
