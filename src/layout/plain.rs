//! The whole-stream shape (`plain`): the ordinary digest of all the bytes, as `sha256sum`
//! prints it. Not a tree, but not always one job either: where the algorithm's digest of a
//! long message can be put together from pieces hashed apart, a file is cut into pieces so
//! that every worker hashes one:
//!
//! - BLAKE3 is itself a Merkle tree of 1 KiB chunks: a piece is a subtree of it, and pieces
//!   join as its parents ([`algorithm::join_subtrees`]), as `b3sum` does;
//! - a CRC is linear: the CRC of two pieces follows from theirs and the length of the second
//!   ([`algorithm::combine_crcs`]), which is how the full-object CRCs of S3 and GCS are
//!   computed on every core.

use std::ops::Range;

use super::{JobKind, TARGET_JOB_BYTES, prev_power_of_two};
use crate::algorithm::{self, Algorithm, Digest};

/// The jobs of a stream of `n` bytes: the whole stream, or pieces of [`TARGET_JOB_BYTES`]
/// where the algorithm joins pieces (a power of two of BLAKE3's 1 KiB chunks, so that each is
/// a subtree of its tree) and `whole` does not ask for one job.
pub(super) fn plan(alg: Algorithm, n: u64, whole: bool) -> Vec<(Range<u64>, JobKind)> {
    if !in_pieces(alg, n, whole) {
        return vec![(0..n, JobKind::Layout)];
    }
    pieces(n, TARGET_JOB_BYTES)
        .map(|r| {
            let kind = match alg.is_tree() {
                true => JobKind::Subtree { offset: r.start },
                false => JobKind::Layout,
            };
            (r, kind)
        })
        .collect()
}

/// The pieces of `size` bytes of a stream of `n` bytes (the last one shorter); none if `n`
/// is 0.
fn pieces(n: u64, size: u64) -> impl Iterator<Item = Range<u64>> {
    (0..n.div_ceil(size)).map(move |i| i * size..n.min((i + 1) * size))
}

/// A stream of `n` bytes cut into the subtrees of a tree algorithm's own tree that start
/// every `size` bytes, each a job whose digest is its chaining value: `size` must be a power
/// of two of BLAKE3's 1 KiB chunks. None for an empty stream.
pub(super) fn subtrees(n: u64, size: u64) -> Vec<(Range<u64>, JobKind)> {
    assert!(
        size.is_power_of_two() && size >= 1024,
        "not a BLAKE3 subtree"
    );
    pieces(n, size)
        .map(|r| {
            let offset = r.start;
            (r, JobKind::Subtree { offset })
        })
        .collect()
}

/// Whether [`plan`] cuts a stream of `n` bytes into pieces.
fn in_pieces(alg: Algorithm, n: u64, whole: bool) -> bool {
    (alg.is_tree() || alg.is_crc()) && !whole && n > TARGET_JOB_BYTES
}

/// The number of jobs of [`plan`] (not asking for one job), without making them.
pub(super) fn job_count(alg: Algorithm, n: u64) -> u64 {
    match in_pieces(alg, n, false) {
        true => n.div_ceil(TARGET_JOB_BYTES),
        false => 1,
    }
}

/// The digest of the whole stream from the digests of its pieces, in order, with the ranges
/// they cover: BLAKE3 subtrees. (The combiner folds CRCs as they come instead, with
/// [`algorithm::combine_crcs`].)
pub(super) fn join(alg: Algorithm, pieces: &[(Range<u64>, Digest)]) -> Digest {
    match pieces {
        [] => alg.hash(b""),
        [(_, one)] => *one,
        _ => {
            let digests: Vec<Digest> = pieces.iter().map(|(_, d)| *d).collect();
            join_subtrees(alg, &digests, true)
        }
    }
}

/// The root (`is_root`) or chaining value of consecutive subtrees of a tree algorithm, all
/// of one power-of-two length but the last: BLAKE3's shape, where the left side takes the
/// largest power of two of them strictly less than their count.
pub(super) fn join_subtrees(alg: Algorithm, subtrees: &[Digest], is_root: bool) -> Digest {
    match subtrees {
        [one] => *one,
        _ => {
            let (left, right) =
                subtrees.split_at(prev_power_of_two(subtrees.len() as u64 - 1) as usize);
            let (l, r) = (
                join_subtrees(alg, left, false),
                join_subtrees(alg, right, false),
            );
            algorithm::join_subtrees(alg, &l, &r, is_root)
        }
    }
}
