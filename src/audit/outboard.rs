//! Outboard trees: the leaf digests of a file kept beside its record (database store only),
//! so that an audit that finds the file corrupt can say *where* (which byte ranges), and a
//! repair can fetch just those ranges from a copy and check each before writing it.
//!
//! The tree is RFC 6962 over fixed leaves (leaf digest `BLAKE3(0x00 || segment)`), whatever
//! the record's own algorithm: BLAKE3 is the fastest of the cryptographic ones here and a
//! migration of the record leaves the outboard valid. The leaf size grows with the file so
//! that the outboard stays small ([`leaf_size`]): 64 KiB leaves (32 bytes per 64 KiB, 0.05 %)
//! up to 64 GiB, then twice as large for every doubling of the file, so that no file has more
//! than 2²⁰ leaves (32 MiB of digests): 1 MiB leaves at 1 TiB, 4 MiB leaves at 4 TiB.
//!
//! A file of one leaf keeps no outboard ([`kept`]): its record already says whether that leaf
//! is damaged, and a repair checks the copy against the record.

use std::ops::Range;

use crate::algorithm::{Algorithm, Digest};
use crate::layout::{Layout, LeafSize};

/// The hash of outboard leaves.
pub const ALGORITHM: Algorithm = Algorithm::Blake3;
/// The smallest leaf: 32-byte digests are then 0.05 % of the file.
pub const MIN_LEAF: u64 = 64 << 10;
/// The most leaves a file's outboard has.
pub const MAX_LEAVES: u64 = 1 << 20;

/// The leaf size of the outboard of a file of `len` bytes: a power of two, at least
/// [`MIN_LEAF`], and large enough that the file has at most [`MAX_LEAVES`] leaves.
pub fn leaf_size(len: u64) -> LeafSize {
    let needed = len.div_ceil(MAX_LEAVES).next_power_of_two();
    LeafSize::new(needed.max(MIN_LEAF)).expect("not zero")
}

/// Whether a file of `len` bytes keeps an outboard: one of more than one leaf. Of a single
/// leaf, the leaf digest would only say what the record says (the whole file is damaged or
/// not), and computing it beside the record's digest hashed small files twice.
pub fn kept(len: u64) -> bool {
    len > leaf_size(len).get()
}

/// The layout whose leaves are the outboard of a file of `len` bytes.
pub fn layout(len: u64) -> Layout {
    Layout::Rfc6962(leaf_size(len))
}

/// A file's leaf digests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outboard {
    pub leaf: LeafSize,
    /// One per leaf, in order.
    pub leaves: Vec<Digest>,
}

impl Outboard {
    /// The layout whose leaves these are.
    pub fn layout(&self) -> Layout {
        Layout::Rfc6962(self.leaf)
    }

    /// The digests concatenated, as the database keeps them.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.leaves
            .iter()
            .flat_map(|d| d.as_bytes().to_vec())
            .collect()
    }

    /// Reads what [`Outboard::to_bytes`] wrote; `None` if the length is not a whole number
    /// of digests.
    pub fn from_bytes(leaf: LeafSize, bytes: &[u8]) -> Option<Outboard> {
        let n = ALGORITHM.digest_len();
        bytes.len().is_multiple_of(n).then(|| Outboard {
            leaf,
            leaves: bytes.chunks(n).map(Digest::from_slice).collect(),
        })
    }

    /// Whether this is the outboard of a file of `len` bytes: one digest per leaf.
    pub fn fits(&self, len: u64) -> bool {
        self.leaves.len() as u64 == len.div_ceil(self.leaf.get())
    }

    /// The byte range of leaf `index` in a file of `len` bytes.
    pub fn range(&self, index: usize, len: u64) -> Range<u64> {
        let start = index as u64 * self.leaf.get();
        start..len.min(start + self.leaf.get())
    }

    /// The byte ranges (end exclusive, adjacent leaves merged) where `current`, the leaf
    /// digests of the file as it is now, differ from these; a file of `len` bytes.
    pub fn damaged(&self, current: &[Digest], len: u64) -> Vec<Range<u64>> {
        let mut ranges: Vec<Range<u64>> = Vec::new();
        for (i, (want, got)) in self.leaves.iter().zip(current).enumerate() {
            if want == got {
                continue;
            }
            let r = self.range(i, len);
            match ranges.last_mut() {
                Some(last) if last.end == r.start => last.end = r.end,
                _ => ranges.push(r),
            }
        }
        ranges
    }

    /// The leaves (indices) that `ranges` cover.
    pub fn leaves_of(&self, ranges: &[Range<u64>]) -> Vec<usize> {
        let leaf = self.leaf.get();
        ranges
            .iter()
            .flat_map(|r| (r.start / leaf) as usize..r.end.div_ceil(leaf) as usize)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_stay_small_and_at_most_4_mib_up_to_4_tib() {
        assert_eq!(leaf_size(0).get(), MIN_LEAF);
        assert_eq!(leaf_size(64 << 30).get(), MIN_LEAF);
        assert_eq!(leaf_size((64 << 30) + 1).get(), 128 << 10);
        assert_eq!(leaf_size(1 << 40).get(), 1 << 20);
        assert_eq!(leaf_size(4 << 40).get(), 4 << 20);
        for len in [1u64, 1 << 20, 5 << 30, 3 << 40, 100 << 40] {
            let leaf = leaf_size(len).get();
            assert!(len.div_ceil(leaf) <= MAX_LEAVES, "{len}");
            let outboard = len.div_ceil(leaf) * ALGORITHM.digest_len() as u64;
            assert!(outboard * 1000 <= len.max(MIN_LEAF), "{len}: at most 0.1 %");
        }
    }

    #[test]
    fn damaged_leaves_become_merged_byte_ranges() {
        let leaf = LeafSize::new(10).unwrap();
        let d = |b: u8| ALGORITHM.hash(&[b]);
        let recorded = Outboard {
            leaf,
            leaves: (0..5).map(d).collect(),
        };
        let mut now = recorded.leaves.clone();
        assert!(recorded.damaged(&now, 45).is_empty());
        now[1] = d(99);
        now[2] = d(99);
        now[4] = d(99);
        assert_eq!(recorded.damaged(&now, 45), [10..30, 40..45]);
        assert_eq!(recorded.leaves_of(&[10..30, 40..45]), [1, 2, 4]);
        assert_eq!(
            Outboard::from_bytes(leaf, &recorded.to_bytes()),
            Some(recorded.clone())
        );
        assert!(recorded.fits(45) && !recorded.fits(51));
    }
}
