//! The halving shape of C++ mtsum 1.1.0 (the `mtsum` layout): the stream is halved until the
//! pieces are at most 128 MiB; prefix byte 0 before a leaf, 1 before an inner node's children,
//! 2 before the root's; the root always has two children, even over 0 or 1 byte.
//!
//! Its leaves are between 64 and 128 MiB (bar small files), so every leaf is a job of its own
//! and the job digests are few: the combiner keeps them all and folds them along
//! [`walk`] at the end.

use std::ops::Range;

use super::{JobKind, TreeBuilder};
use crate::algorithm::{Algorithm, Digest};

/// The largest leaf of the `mtsum` layout: 128 MiB, as in C++ mtsum 1.1.0.
pub const MAX_LEAF: u64 = 128 << 20;

/// The byte hashed before a leaf's data.
pub(super) const LEAF_PREFIX: &[u8] = &[0];

/// An inner node, or the root with `is_root`.
pub(super) fn node(alg: Algorithm, left: &Digest, right: &Digest, is_root: bool) -> Digest {
    let prefix = if is_root { 2 } else { 1 };
    alg.hash_parts(&[&[prefix], left.as_bytes(), right.as_bytes()])
}

/// The jobs of a stream of `n` bytes: its leaves.
pub(super) fn plan(n: u64) -> Vec<(Range<u64>, JobKind)> {
    let mut leaves = LeafRanges(Vec::new());
    walk(0, n, true, &mut 0, &mut leaves);
    leaves.0.into_iter().map(|r| (r, JobKind::Layout)).collect()
}

/// The number of leaves of a stream of `n` bytes, without walking them: the nodes of one
/// depth of the walk have two sizes at most (`n >> depth` and one more), so each depth is
/// counted at once, whatever the size (a walk of 2^63 bytes would visit 2^36 leaves).
pub(super) fn leaf_count(n: u64) -> u64 {
    // (size, how many nodes of that size) at the current depth, below the root.
    let mut level = vec![(n / 2, 1u64), (n - n / 2, 1)];
    let mut leaves = 0;
    while !level.is_empty() {
        let mut next: Vec<(u64, u64)> = Vec::new();
        for (size, count) in level {
            if size <= MAX_LEAF {
                leaves += count;
                continue;
            }
            for child in [size / 2, size - size / 2] {
                match next.iter_mut().find(|(s, _)| *s == child) {
                    Some((_, c)) => *c += count,
                    None => next.push((child, count)),
                }
            }
        }
        level = next;
    }
    leaves
}

/// `node(offset, size)` of C++ mtsum: halve the range; a child of at most 128 MiB is a
/// leaf, except that the root is always split.
pub(super) fn walk<B: TreeBuilder>(
    offset: u64,
    size: u64,
    is_root: bool,
    next_leaf: &mut usize,
    b: &mut B,
) -> B::Node {
    if !is_root && size <= MAX_LEAF {
        let index = *next_leaf;
        *next_leaf += 1;
        return b.leaf(index, offset..offset + size);
    }
    let left = size / 2;
    let l = walk(offset, left, false, next_leaf, b);
    let r = walk(offset + left, size - left, false, next_leaf, b);
    b.inner(offset..offset + size, l, r, is_root)
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
