//! Amazon S3 Glacier's tree hash (`x-amz-sha256-tree-hash`): SHA-256 of each 1 MiB chunk
//! (the last one shorter), then the digests hashed in pairs level by level, an unpaired last
//! digest carried up unchanged; SHA-256 of nothing for empty input.
//!
//! Pairing level by level and carrying the odd one up builds the same tree as `merkle`'s
//! rule, "the left subtree takes the largest power of two of leaves strictly less than their
//! count": at every level the pairs are formed from the left, so the leftmost power of two of
//! leaves closes into one subtree first, and whatever is carried up joins it only at the level
//! where the rest has become one node too. Glacier is therefore exactly `merkle` with 1 MiB
//! leaves and SHA-256 (`tests/storage.rs` checks both against a level-by-level restatement).

use super::fixed::{Fixed, Top};

/// The shape: `merkle`'s, with 1 MiB leaves.
pub(super) const SHAPE: Fixed = Fixed {
    leaf: 1 << 20,
    leaf_prefix: &[],
    node_prefix: &[],
    top: Top::Unbalanced,
};
