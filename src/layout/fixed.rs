//! The fixed-leaf shape: leaves of `L` bytes (the last one shorter, none empty), folded into a
//! binary tree whose every aligned power-of-two run of leaves is a complete subtree.
//!
//! `merkle`, `rfc6962` and Glacier's tree hash are this shape with different prefixes (and
//! Glacier with `L` = 1 MiB); BitTorrent v2 is this shape padded to a power of two of leaves
//! ([`Top::Padded`], see [`super::padded`]). Because every aligned run of `2^k` leaves is a
//! subtree, a job of such a run hashes to one node, and job digests fold in order on a
//! [`Stack`] like a binary counter, in memory logarithmic in the leaf count.

use std::ops::Range;

use super::{JobKind, MIN_LANE_LEAVES, TARGET_JOB_BYTES, TreeBuilder, padded, prev_power_of_two};
use crate::algorithm::{Algorithm, Digest, Hasher};
use crate::lanes::{self, Kernel};

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

    /// The jobs of a stream of `n` bytes: aligned runs of a power-of-two number of leaves of
    /// about [`TARGET_JOB_BYTES`], or single leaves with `one_leaf_per_job`.
    pub fn plan(&self, n: u64, one_leaf_per_job: bool) -> Vec<(Range<u64>, JobKind)> {
        let leaves_per_job = if one_leaf_per_job {
            1
        } else {
            prev_power_of_two((TARGET_JOB_BYTES / self.leaf).max(1))
        };
        let job_len = leaves_per_job.saturating_mul(self.leaf);
        (0..n.div_ceil(job_len))
            .map(|i| i * job_len..n.min((i + 1).saturating_mul(job_len)))
            .map(|r| (r, JobKind::Layout))
            .collect()
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

/// A hasher for one leaf of `leaf` bytes, already fed with `prefix`. Leaves of a few KiB and
/// more amortise a costlier but faster backend.
pub(super) fn leaf_hasher(alg: Algorithm, leaf: u64, prefix: &[u8]) -> Hasher {
    let mut h = if leaf >= 4096 {
        alg.bulk_hasher()
    } else {
        alg.hasher()
    };
    h.update(prefix);
    h
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
                    let pad = padded::zero_subtree(shape, alg, slots);
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
    /// The kernel that hashes whole leaves several at once.
    lanes: Option<Kernel>,
}

impl LeafRun {
    pub fn update(&mut self, mut data: &[u8]) {
        let leaf = self.shape.leaf;
        while !data.is_empty() {
            if self.filled == leaf {
                self.finish_leaf();
            }
            if self.filled == 0 {
                data = self.hash_whole_leaves(data);
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
    fn hash_whole_leaves<'a>(&mut self, data: &'a [u8]) -> &'a [u8] {
        let leaf = self.shape.leaf;
        let whole = data.len() as u64 / leaf;
        let Some(kernel) = self.lanes.filter(|_| whole >= MIN_LANE_LEAVES) else {
            return data;
        };
        // `whole * leaf` is at most `data.len()`, so the leaf size fits in a `usize`.
        let (leaves, rest) = data.split_at((whole * leaf) as usize);
        let leaves: Vec<&[u8]> = leaves.chunks(leaf as usize).collect();
        for digest in lanes::hash_many(kernel, self.shape.leaf_prefix, &leaves) {
            self.stack.push(&self.shape, self.alg, 1, digest);
        }
        rest
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
