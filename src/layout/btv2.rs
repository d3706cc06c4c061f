//! BitTorrent v2's `pieces root` (BEP 52): the root of a SHA-256 merkle tree over the file's
//! 16 KiB blocks (the last one shorter, not padded), whose leaf count is padded to a power of
//! two with digests of 32 zero bytes; a file of one block has that block's digest as root.
//! An empty file has no pieces root, which [`super::Layout::check_size`] reports rather than
//! inventing a value.

use super::fixed::{Fixed, Top};

/// The shape: fixed 16 KiB leaves without prefixes, padded.
pub(super) const SHAPE: Fixed = Fixed {
    leaf: 16 << 10,
    leaf_prefix: &[],
    node_prefix: &[],
    top: Top::Padded,
};
