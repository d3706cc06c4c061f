//! Outboard trees: the leaf digests of a file kept beside its record (database store only),
//! so that an audit that finds the file corrupt can say *where* (which byte ranges), and a
//! repair can fetch just those ranges from a copy and check each before writing it.
//!
//! The leaves are BLAKE3's own subtrees ([`Kind::Blake3Subtrees`]): each leaf digest is the
//! chaining value of the subtree of BLAKE3's tree at the leaf's offset, whatever the record's
//! own algorithm. The plain BLAKE3 digest (the audit's default record) joins from them, so one
//! hash of the bytes gives both the record and its outboard; BLAKE3 is also the fastest of the
//! cryptographic hashes here, and a migration of the record leaves the outboard valid.
//! Outboards of earlier builds ([`Kind::Rfc6962`]: RFC 6962 leaves, `BLAKE3(0x00 || leaf)`)
//! are still read, and locate damage as well; they give way to the new kind when a record is
//! written again.
//!
//! The leaf size grows with the file so that the outboard stays small ([`leaf_size`]): 64 KiB
//! leaves (32 bytes per 64 KiB, 0.05 %) up to 64 GiB, then twice as large for every doubling of
//! the file, so that no file has more than 2²⁰ leaves (32 MiB of digests): 1 MiB leaves at
//! 1 TiB, 4 MiB leaves at 4 TiB. Every leaf size is a power of two of BLAKE3's 1 KiB chunks,
//! and leaves start at multiples of it: each is a subtree of BLAKE3's tree.
//!
//! A file of one leaf keeps no outboard ([`kept`]): its record already says whether that leaf
//! is damaged, and a repair checks the copy against the record.

use std::ops::Range;

use crate::algorithm::{Algorithm, Digest, Hasher};
use crate::engine::Leaves;
use crate::layout::{Layout, LeafSize};

/// The hash of outboard leaves.
pub const ALGORITHM: Algorithm = Algorithm::Blake3;
/// The first byte of the stored outboard of [`Kind::Blake3Subtrees`], before its digests. An
/// outboard of [`Kind::Rfc6962`] is its digests alone, a whole number of 32-byte digests:
/// with this byte in front the length never is, so the kinds never meet, and an earlier build
/// takes the new kind for no outboard at all (it locates no damage with it, rather than the
/// wrong leaves).
const BLAKE3_SUBTREES_TAG: u8 = 1;
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

/// What the engine computes, beside a record's digest, for the outboard of a file of `len`
/// bytes ([`Outboard::new`]).
pub fn side(len: u64) -> Leaves {
    Leaves::Blake3Subtrees(leaf_size(len))
}

/// What a leaf digest is of a leaf's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The chaining value of the subtree of BLAKE3's tree at the leaf's offset: what mtsum
    /// records.
    Blake3Subtrees,
    /// The leaf digest of RFC 6962 with BLAKE3, `BLAKE3(0x00 || leaf)`: what earlier builds
    /// recorded.
    Rfc6962,
}

/// A file's leaf digests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outboard {
    pub leaf: LeafSize,
    pub kind: Kind,
    /// One per leaf, in order.
    pub leaves: Vec<Digest>,
}

impl Outboard {
    /// The outboard of a file of `len` bytes whose [`side`] leaf digests are `leaves`.
    pub fn new(len: u64, leaves: Vec<Digest>) -> Outboard {
        Outboard {
            leaf: leaf_size(len),
            kind: Kind::Blake3Subtrees,
            leaves,
        }
    }

    /// What the engine computes, beside a record's digest, for leaf digests to compare with
    /// these.
    pub fn side(&self) -> Leaves {
        match self.kind {
            Kind::Blake3Subtrees => Leaves::Blake3Subtrees(self.leaf),
            Kind::Rfc6962 => Leaves::Layout(Layout::Rfc6962(self.leaf), ALGORITHM),
        }
    }

    /// The digest of leaf `index` if it holds `bytes`.
    pub fn leaf_digest(&self, index: usize, bytes: &[u8]) -> Digest {
        match self.kind {
            Kind::Blake3Subtrees => {
                let mut h = Hasher::subtree(ALGORITHM, index as u64 * self.leaf.get());
                h.update(bytes);
                h.finalize()
            }
            Kind::Rfc6962 => Layout::Rfc6962(self.leaf).hash_leaf(ALGORITHM, bytes),
        }
    }

    /// The outboard as the database keeps it: the digests concatenated, after a tag byte for
    /// the kind that earlier builds did not write (`BLAKE3_SUBTREES_TAG`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let tag = match self.kind {
            Kind::Blake3Subtrees => &[BLAKE3_SUBTREES_TAG][..],
            Kind::Rfc6962 => &[],
        };
        let digests = self.leaves.iter().flat_map(|d| d.as_bytes().to_vec());
        tag.iter().copied().chain(digests).collect()
    }

    /// Reads what [`Outboard::to_bytes`] wrote (or an earlier build); `None` if it is not a whole
    /// number of digests after a known tag.
    pub fn from_bytes(leaf: LeafSize, bytes: &[u8]) -> Option<Outboard> {
        let n = ALGORITHM.digest_len();
        let (kind, digests) = match bytes.len() % n {
            0 => (Kind::Rfc6962, bytes),
            1 if bytes[0] == BLAKE3_SUBTREES_TAG => (Kind::Blake3Subtrees, &bytes[1..]),
            _ => return None,
        };
        Some(Outboard {
            leaf,
            kind,
            leaves: digests.chunks(n).map(Digest::from_slice).collect(),
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
            kind: Kind::Blake3Subtrees,
            leaves: (0..5).map(d).collect(),
        };
        let mut now = recorded.leaves.clone();
        assert!(recorded.damaged(&now, 45).is_empty());
        now[1] = d(99);
        now[2] = d(99);
        now[4] = d(99);
        assert_eq!(recorded.damaged(&now, 45), [10..30, 40..45]);
        assert_eq!(recorded.leaves_of(&[10..30, 40..45]), [1, 2, 4]);
        assert!(recorded.fits(45) && !recorded.fits(51));
    }

    #[test]
    fn both_kinds_read_back_as_written_and_an_unknown_tag_is_no_outboard() {
        let leaf = LeafSize::new(MIN_LEAF).unwrap();
        let leaves: Vec<Digest> = (0..3u8).map(|b| ALGORITHM.hash(&[b])).collect();
        for kind in [Kind::Blake3Subtrees, Kind::Rfc6962] {
            let outboard = Outboard {
                leaf,
                kind,
                leaves: leaves.clone(),
            };
            let bytes = outboard.to_bytes();
            assert_eq!(
                Outboard::from_bytes(leaf, &bytes),
                Some(outboard),
                "{kind:?}"
            );
        }
        // What earlier builds wrote: the digests alone.
        let digests: Vec<u8> = leaves.iter().flat_map(|d| d.as_bytes().to_vec()).collect();
        let old = Outboard::from_bytes(leaf, &digests).unwrap();
        assert_eq!(old.kind, Kind::Rfc6962);
        let mut unknown = vec![7];
        unknown.extend(&digests);
        assert_eq!(Outboard::from_bytes(leaf, &unknown), None);
        assert_eq!(Outboard::from_bytes(leaf, &[1, 2]), None);
    }
}
