//! The padded shape: the fixed-leaf tree ([`super::fixed`]) with its leaf count padded to a
//! power of two by leaves whose digests are all zero bytes, so that every level pairs up. It
//! is BitTorrent v2's merkle tree (BEP 52), where the root over a file's 16 KiB blocks is the
//! file's `pieces root`.
//!
//! The fixed shape's [`Stack`](super::fixed::Stack) does the work ([`Top::Padded`]): a
//! subtree of zero leaves is only needed as the right sibling of the last real subtree at
//! each level, where [`zero_subtree`] makes it.

use super::fixed::{Fixed, Top};
use crate::algorithm::{Algorithm, Digest};

/// The digest of a subtree of `slots` (a power of two) padding leaves: all zero bytes for one
/// leaf, else the node over two such subtrees of half the size.
pub(super) fn zero_subtree(shape: &Fixed, alg: Algorithm, slots: u64) -> Digest {
    debug_assert!(slots.is_power_of_two() && shape.top == Top::Padded);
    let mut digest = Digest::from_slice(&vec![0; alg.digest_len()]);
    let mut covered = 1;
    while covered < slots {
        digest = shape.node(alg, &digest, &digest);
        covered *= 2;
    }
    digest
}
