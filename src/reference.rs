//! The reference path: every layout computed by its definition over bytes in memory, one
//! scalar hasher, no threads, no chunking.
//!
//! It is deliberately the simplest code that can be right, so that every fast path (the
//! parallel engine, the sources, the job hashers) can be tested against it on random input.
//! The storage systems' layouts are each a function of their own below, written from their
//! published definitions (DESIGN §3.5) without the layout module's shapes.

use crate::algorithm::{Algorithm, Digest};
use crate::layout::{Fold, Layout, NoRoot, Root};

/// The root digest of `data` under `layout` and `alg`, by definition: the digest of
/// [`checksum`], without its part count or encoding.
///
/// # Panics
/// Where [`checksum`] has no root (an empty file with `btv2`, more than 10 000 parts with
/// `s3`).
pub fn root(layout: Layout, alg: Algorithm, data: &[u8]) -> Digest {
    match layout {
        Layout::S3(_) | Layout::Glacier | Layout::Dropbox | Layout::Btv2 => {
            *checksum(layout, alg, data).expect("a root").digest()
        }
        Layout::Mtsum | Layout::Plain | Layout::Merkle(_) | Layout::Rfc6962(_) => {
            let mut fold = Fold {
                layout,
                alg,
                leaf: |_, range: std::ops::Range<u64>| {
                    layout.hash_leaf(alg, &data[range.start as usize..range.end as usize])
                },
            };
            layout
                .walk(data.len() as u64, &mut fold)
                .unwrap_or_else(|| alg.hash(b""))
        }
    }
}

/// The value of `data` under `layout` and `alg` as the layout's system shows it (part count,
/// encoding), or why it has none.
pub fn checksum(layout: Layout, alg: Algorithm, data: &[u8]) -> Result<Root, NoRoot> {
    // S3's limit on the number of parts is a rule of the service, not of the digest.
    layout.check_size(data.len() as u64)?;
    let root = match layout {
        Layout::S3(part) => s3(alg, part.get(), data),
        Layout::Glacier => Root::new(glacier(alg, data)),
        Layout::Dropbox => Root::new(dropbox(alg, data)),
        Layout::Btv2 => Root::new(btv2(alg, data).ok_or(NoRoot::EmptyFile("btv2"))?),
        Layout::Mtsum | Layout::Plain | Layout::Merkle(_) | Layout::Rfc6962(_) => {
            Root::new(root(layout, alg, data))
        }
    };
    Ok(root.with_encoding(layout.encoding(alg)))
}

/// S3's multipart ETag (`alg` MD5) or composite checksum: an object of at most one part is a
/// single upload, whose value is its plain digest; otherwise the digest of the concatenated
/// raw digests of its `part`-byte parts, followed by `-N`.
fn s3(alg: Algorithm, part: u64, data: &[u8]) -> Root {
    if data.len() as u64 <= part {
        return Root::new(alg.hash(data));
    }
    let digests: Vec<Digest> = data.chunks(part as usize).map(|p| alg.hash(p)).collect();
    let concatenated: Vec<u8> = digests.iter().flat_map(|d| d.as_bytes().to_vec()).collect();
    Root::new(alg.hash(&concatenated)).with_parts(digests.len() as u64)
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
