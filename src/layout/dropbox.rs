//! Dropbox's `content_hash` (the files API's metadata field): SHA-256 of the concatenated
//! SHA-256 digests of the file's 4 MiB blocks, the last one shorter; SHA-256 of nothing for an
//! empty file, which has no block. Even a file of one block is hashed twice.

use super::flat::{Cut, Flat};

/// The shape: flat, 4 MiB parts, the outer hash always taken, no part count.
pub(super) const SHAPE: Flat = Flat {
    cut: Cut::Every(4 << 20),
    single_part_is_plain: false,
    count_suffix: false,
};
