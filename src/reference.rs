//! The reference path: every layout computed by its written definition over bytes in memory,
//! one plain hash of the algorithm, no threads, no chunking.
//!
//! It is the oracle that every fast path (the parallel engine, the sources, the job hashers,
//! the SIMD lanes) is tested against on random input, so it shares nothing with them, after
//! BLAKE3's `reference_impl`: no planner, no [`Layout::walk`](crate::Layout::walk), no
//! combiner, no layout hasher, only [`Algorithm::hash_parts`] and a transcription of each
//! definition, a recursion over the bytes or the leaves of a few lines. A mistake in the tree
//! shape of `src/layout.rs` then shows as a difference instead of passing on both sides.
//!
//! Each layout is one function below, called from the `match` in [`checksum`] (and [`root`]);
//! a new layout gets its own next to them, written from its definition alone. The storage
//! systems' functions (S3, Glacier, Dropbox, BitTorrent v2) follow their published
//! definitions (DESIGN §3.5); Glacier's is Amazon's level-by-level pairing, not the
//! `merkle` recursion its layout shares, so that the two formulations check each other.

use crate::algorithm::{Algorithm, Digest};
use crate::layout::{Layout, NoRoot, Root};

/// The root digest of `data` under `layout` and `alg`, by definition: the digest of
/// [`checksum`], without S3's part count or an encoding.
///
/// # Panics
/// Where [`checksum`] has no root (an empty file with `btv2`, more than 10 000 parts with
/// `s3`).
pub fn root(layout: Layout, alg: Algorithm, data: &[u8]) -> Digest {
    match layout {
        Layout::Mtsum => mtsum(alg, data),
        Layout::Plain => plain(alg, data),
        Layout::Merkle(leaf) => merkle(alg, leaf.get(), data),
        Layout::Rfc6962(leaf) => rfc6962(alg, leaf.get(), data),
        Layout::S3(_) | Layout::S3Parts(_) | Layout::Glacier | Layout::Dropbox | Layout::Btv2 => {
            *checksum(layout, alg, data).expect("a root").digest()
        }
    }
}

/// The value of `data` under `layout` and `alg` as the layout's system shows it (S3's part
/// count, hex or base64), or why it has none.
pub fn checksum(layout: Layout, alg: Algorithm, data: &[u8]) -> Result<Root, NoRoot> {
    // S3's limit on the number of parts is a rule of the service, not of the digest.
    layout.check_size(data.len() as u64)?;
    let root = match layout {
        Layout::S3(part) => s3(alg, std::iter::repeat(part.get()), data),
        // Past the listed parts, the rest is one part.
        Layout::S3Parts(parts) => s3(alg, parts.sizes().chain([u64::MAX]), data),
        Layout::Glacier => Root::new(glacier(alg, data)),
        Layout::Dropbox => Root::new(dropbox(alg, data)),
        Layout::Btv2 => Root::new(btv2(alg, data).ok_or(NoRoot::EmptyFile("btv2"))?),
        Layout::Mtsum | Layout::Plain | Layout::Merkle(_) | Layout::Rfc6962(_) => {
            Root::new(root(layout, alg, data))
        }
    };
    Ok(root.with_encoding(layout.encoding(alg)))
}

/// The largest leaf of `mtsum`, 128 MiB, written out again rather than borrowed from the
/// layout module: the oracle checks that constant too.
const MTSUM_MAX_LEAF: usize = 134_217_728;

/// `mtsum` (C++ mtsum 1.1.0): `node(offset, size, is_root)` halves the range, `left = size /
/// 2`; a child of at most 128 MiB is the leaf `H(0x00 || bytes)`, a larger one an inner node
/// `H(0x01 || left || right)` built the same way; the root, `H(0x02 || left || right)`, always
/// has two children, even over 0 or 1 byte.
fn mtsum(alg: Algorithm, data: &[u8]) -> Digest {
    fn node(alg: Algorithm, bytes: &[u8], is_root: bool) -> Digest {
        if !is_root && bytes.len() <= MTSUM_MAX_LEAF {
            return alg.hash_parts(&[&[0x00], bytes]);
        }
        let (left, right) = bytes.split_at(bytes.len() / 2);
        let prefix = if is_root { 0x02 } else { 0x01 };
        let (l, r) = (node(alg, left, false), node(alg, right, false));
        alg.hash_parts(&[&[prefix], l.as_bytes(), r.as_bytes()])
    }
    node(alg, data, true)
}

/// `plain`: the ordinary digest of the whole stream, what `sha256sum` and `b3sum` print.
fn plain(alg: Algorithm, data: &[u8]) -> Digest {
    alg.hash(data)
}

/// `merkle` (the "Merkle root algorithms in various languages" specification): the tree hash
/// of the `leaf`-byte segments with no prefixes, leaf `H(segment)`, node `H(left || right)`;
/// `H("")` for empty input.
fn merkle(alg: Algorithm, leaf: u64, data: &[u8]) -> Digest {
    tree_hash(alg, &segments(data, leaf), &[], &[])
}

/// `rfc6962`: the Merkle Tree Hash of RFC 6962 over the `leaf`-byte segments, leaf
/// `H(0x00 || segment)`, node `H(0x01 || left || right)`; `H("")` for empty input.
fn rfc6962(alg: Algorithm, leaf: u64, data: &[u8]) -> Digest {
    tree_hash(alg, &segments(data, leaf), &[0x00], &[0x01])
}

/// `data` cut into segments of `leaf` bytes, the last one shorter: never an empty segment,
/// so no segment at all for empty data.
fn segments(data: &[u8], leaf: u64) -> Vec<&[u8]> {
    // A leaf larger than memory holds all of `data`.
    data.chunks(usize::try_from(leaf).unwrap_or(usize::MAX))
        .collect()
}

/// The Merkle Tree Hash of RFC 6962, section 2.1, over the list `leaves`, with the bytes that
/// go before a leaf and before a node's children:
/// `MTH({}) = H("")`, `MTH({d}) = H(leaf_prefix || d)`, and for `n > 1` leaves
/// `MTH(D[n]) = H(node_prefix || MTH(D[0:k]) || MTH(D[k:n]))` where `k` is the largest power
/// of two strictly less than `n`.
fn tree_hash(alg: Algorithm, leaves: &[&[u8]], leaf_prefix: &[u8], node_prefix: &[u8]) -> Digest {
    match leaves {
        [] => alg.hash(b""),
        [leaf] => alg.hash_parts(&[leaf_prefix, leaf]),
        _ => {
            let mut k = 1;
            while k * 2 < leaves.len() {
                k *= 2;
            }
            let (left, right) = leaves.split_at(k);
            let l = tree_hash(alg, left, leaf_prefix, node_prefix);
            let r = tree_hash(alg, right, leaf_prefix, node_prefix);
            alg.hash_parts(&[node_prefix, l.as_bytes(), r.as_bytes()])
        }
    }
}

/// S3's multipart ETag (`alg` MD5) or composite checksum as the AWS CLI makes it, over parts
/// of the sizes `parts` in turn: an object shorter than the first part is a single upload,
/// whose value is its plain digest; otherwise (one part or more: the CLI's threshold is
/// inclusive) the digest of the concatenated raw digests of its parts, followed by `-N`; a
/// value of one part keeps the part's digest beside it, as the engine's does.
fn s3(alg: Algorithm, parts: impl Iterator<Item = u64>, data: &[u8]) -> Root {
    let mut sizes = parts.peekable();
    if sizes
        .peek()
        .is_some_and(|&first| (data.len() as u64) < first)
    {
        return Root::new(alg.hash(data));
    }
    let mut rest = data;
    let mut digests: Vec<Digest> = Vec::new();
    while !rest.is_empty() {
        let size = sizes.next().expect("parts to the end of the data");
        let (part, after) =
            rest.split_at(rest.len().min(usize::try_from(size).unwrap_or(usize::MAX)));
        digests.push(alg.hash(part));
        rest = after;
    }
    let concatenated: Vec<u8> = digests.iter().flat_map(|d| d.as_bytes().to_vec()).collect();
    let root = Root::new(alg.hash(&concatenated)).with_parts(digests.len() as u64);
    match digests[..] {
        // A single upload of the same bytes shows the part's own digest, which `-c` accepts.
        [one] => root.with_single_part(one),
        _ => root,
    }
}

/// Glacier's tree hash (`alg` SHA-256), as Amazon's documentation computes it: the digests
/// of 1 MiB chunks, then level by level the digest of each pair, an unpaired last digest
/// carried up unchanged, until one remains; the digest of nothing for empty input.
fn glacier(alg: Algorithm, data: &[u8]) -> Digest {
    let mut level: Vec<Digest> = data.chunks(1 << 20).map(|c| alg.hash(c)).collect();
    if level.is_empty() {
        return alg.hash(b"");
    }
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|pair| match pair {
                [l, r] => alg.hash_parts(&[l.as_bytes(), r.as_bytes()]),
                [carried] => *carried,
                _ => unreachable!("chunks of two"),
            })
            .collect();
    }
    level[0]
}

/// Dropbox's `content_hash` (`alg` SHA-256): the digest of the concatenated digests of the
/// 4 MiB blocks, the digest of nothing for an empty file.
fn dropbox(alg: Algorithm, data: &[u8]) -> Digest {
    let blocks: Vec<u8> = data
        .chunks(4 << 20)
        .flat_map(|b| alg.hash(b).as_bytes().to_vec())
        .collect();
    alg.hash(&blocks)
}

/// BitTorrent v2's pieces root (BEP 52, `alg` SHA-256): the digests of the 16 KiB blocks,
/// their count padded to a power of two with all-zero digests, pairs hashed level by level up
/// to one; `None` for an empty file, which has no pieces root.
fn btv2(alg: Algorithm, data: &[u8]) -> Option<Digest> {
    let mut level: Vec<Digest> = data.chunks(16 << 10).map(|b| alg.hash(b)).collect();
    if level.is_empty() {
        return None;
    }
    let zero = Digest::from_slice(&vec![0; alg.digest_len()]);
    level.resize(level.len().next_power_of_two(), zero);
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|pair| alg.hash_parts(&[pair[0].as_bytes(), pair[1].as_bytes()]))
            .collect();
    }
    Some(level[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::LeafSize;

    /// Byte `i` is `i % 251`: the `mod251` pattern of the C++ tool's vectors.
    fn mod251(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn mtsum_matches_the_cpp_tool_on_small_files() {
        // Rows of tests/vectors/mtsum-reference.tsv, printed by C++ mtsum 1.1.0. A 0-byte file
        // has two empty leaves, a 1-byte file an empty left one.
        for (len, alg, expected) in [
            (
                0,
                Algorithm::Sha256,
                "08275fa3607b9fbefda10a3972b9f05f7c1bc392d1d68f5fd9d58ac9ff384cba",
            ),
            (
                1,
                Algorithm::Sha256,
                "2b3ebdff3c96d68d3dae25067215e47edea6f49440b187d3d0c24a692984a6aa",
            ),
            (
                3,
                Algorithm::Sha256,
                "51d0471ab457d2ece664e7e58cb3851e97e2df03525e324c5308c9b4c8816f27",
            ),
            (
                1000,
                Algorithm::Sha256,
                "65ea7a25f201660ce090130a27381ad04fb40dccd1ff79518e7cef2b87c88faf",
            ),
            (0, Algorithm::Md5, "408627f724466df88b449f506a127d80"),
        ] {
            assert_eq!(mtsum(alg, &mod251(len)).to_hex(), expected, "{alg} {len}");
        }
    }

    #[test]
    #[ignore = "large: run with --release -- --include-ignored"]
    fn mtsum_matches_the_cpp_tool_where_leaves_reach_128_mib() {
        // Rows of the same file: 128 MiB + 1 byte is a root over two leaves of 64 MiB; 256 MiB
        // + 1 byte a root over a leaf of 128 MiB and an inner node of 128 MiB + 1.
        let data = vec![0; (256 << 20) + 1];
        for (len, expected) in [
            (
                (128 << 20) + 1,
                "1b4de4116b874b87fa643edb85f45a2fe7ccf7b8277a32ec874f85b8916003e3",
            ),
            (
                (256 << 20) + 1,
                "ad6e3f712ff7a68da05664fb315dfd9ad6f56f080bb9352c1ef48a8865138924",
            ),
        ] {
            let got = mtsum(Algorithm::Sha256, &data[..len]);
            assert_eq!(got.to_hex(), expected, "{len} zero bytes");
        }
    }

    #[test]
    fn mtsum_root_is_the_prefixed_halves() {
        // By hand: 5 bytes split 2 | 3, both leaves, under a root.
        let alg = Algorithm::Sha256;
        let left = alg.hash(&[0, 1, 2]);
        let right = alg.hash(&[0, 3, 4, 5]);
        let expected = alg.hash_parts(&[&[2], left.as_bytes(), right.as_bytes()]);
        assert_eq!(root(Layout::Mtsum, alg, &[1, 2, 3, 4, 5]), expected);
    }

    #[test]
    fn rfc6962_reproduces_the_certificate_transparency_roots() {
        // The Certificate Transparency test leaves; the roots of the first N of them.
        let leaves: [&[u8]; 8] = [
            b"",
            &[0x00],
            &[0x10],
            &[0x20, 0x21],
            &[0x30, 0x31],
            &[0x40, 0x41, 0x42, 0x43],
            &[0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57],
            &[
                0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d,
                0x6e, 0x6f,
            ],
        ];
        let rows = include_str!("../tests/vectors/rfc6962-ct.tsv")
            .lines()
            .filter(|l| !l.starts_with('#'));
        let mut seen = 0;
        for row in rows {
            let (n, expected) = row.split_once('\t').expect("N<tab>root");
            let n: usize = n.parse().expect("N");
            let got = tree_hash(Algorithm::Sha256, &leaves[..n], &[0], &[1]);
            assert_eq!(got.to_hex(), expected, "the first {n} leaves");
            seen += 1;
        }
        assert_eq!(seen, 9, "N = 0..8");
    }

    #[test]
    fn rfc6962_cuts_the_input_into_fixed_leaves() {
        // Three leaves of 2 bytes and a last one of 1: the left subtree takes two leaves,
        // the right one the other two.
        let alg = Algorithm::Sha256;
        let leaf = |d: &[u8]| alg.hash_parts(&[&[0], d]);
        let node = |l: Digest, r: Digest| alg.hash_parts(&[&[1], l.as_bytes(), r.as_bytes()]);
        let expected = node(
            node(leaf(b"ab"), leaf(b"cd")),
            node(leaf(b"ef"), leaf(b"g")),
        );
        let layout = Layout::Rfc6962(LeafSize::new(2).unwrap());
        assert_eq!(root(layout, alg, b"abcdefg"), expected);
        assert_eq!(root(layout, alg, b""), alg.hash(b""));
    }

    #[test]
    fn merkle_reproduces_the_published_vector() {
        // The specification's vector: 4 194 336 zero bytes (2^22 + 32), 64-byte leaves.
        let data = vec![0; (1 << 22) + 32];
        let layout = Layout::Merkle(LeafSize::new(64).unwrap());
        assert_eq!(
            root(layout, Algorithm::Sha256, &data).to_hex(),
            "e9683665a90bd70aabd7705cba57c2be2a4e913a0ca1a14d765497112c178120"
        );
    }

    #[test]
    fn merkle_has_no_prefixes_and_no_empty_leaf() {
        let alg = Algorithm::Md5;
        let layout = Layout::Merkle(LeafSize::new(3).unwrap());
        let (l, r) = (alg.hash(b"abc"), alg.hash(b"def"));
        let expected = alg.hash_parts(&[l.as_bytes(), r.as_bytes()]);
        assert_eq!(root(layout, alg, b"abcdef"), expected);
        assert_eq!(root(layout, alg, b"abc"), l, "one leaf is the root");
        assert_eq!(root(layout, alg, b""), alg.hash(b""));
    }

    #[test]
    fn plain_is_the_ordinary_digest() {
        assert_eq!(
            root(Layout::Plain, Algorithm::Sha256, b"abc").to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
