//! The padded shape: the fixed-leaf tree ([`super::fixed`]) with its leaf count padded to a
//! power of two by leaves whose digests are all zero bytes, so that every level pairs up. It
//! is BitTorrent v2's merkle tree (BEP 52), where the root over a file's 16 KiB blocks is the
//! file's `pieces root`.
//!
//! The fixed shape's [`Stack`](super::fixed::Stack) does the work
//! ([`Top::Padded`](super::fixed::Top::Padded)): a subtree of zero leaves is only needed as
//! the right sibling of the last real subtree at each level, where [`zero_subtree`] makes it.

use crate::algorithm::{Algorithm, Digest};

/// The digest of a subtree of `slots` (a power of two) padding leaves: all zero bytes for one
/// leaf, else the `node` over two such subtrees of half the size. The shape's node function
/// is passed in, so that this file needs nothing of the fixed shape that calls it.
pub(super) fn zero_subtree(
    alg: Algorithm,
    slots: u64,
    node: impl Fn(&Digest, &Digest) -> Digest,
) -> Digest {
    debug_assert!(slots.is_power_of_two());
    let mut digest = Digest::from_slice(&vec![0; alg.digest_len()]);
    let mut covered = 1;
    while covered < slots {
        digest = node(&digest, &digest);
        covered *= 2;
    }
    digest
}
