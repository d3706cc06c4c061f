//! Many equal leaves at once ([`mtsum::batch`]) against one leaf at a time: the fast path of
//! BLAKE3, XXH3 and XXH128 must give `Algorithm::hash_parts` of every message, at every
//! block and chunk boundary, with and without the layouts' prefix byte, for any number of
//! messages; and the whole program must give the reference root with small leaves.

mod common;

use common::{MTSUM, config, job_in_chunks, line_gap, pattern, tempdir};
use mtsum::{Algorithm, Layout, LeafSize, batch, reference};
use proptest::prelude::*;

/// The algorithms [`batch::hash_each`] has a fast path for.
const FAST: [Algorithm; 3] = [Algorithm::Blake3, Algorithm::Xxh3, Algorithm::Xxh128];

/// Message lengths at BLAKE3's 64-byte blocks and 1 KiB chunks, ± 1 (with a prefix byte,
/// one less reaches the boundary).
const BOUNDARIES: [usize; 14] = [
    1, 2, 63, 64, 65, 127, 1023, 1024, 1025, 2047, 2048, 2049, 3072, 4096,
];

/// Message counts: none, fewer and more than the chunks of a message, and past the 16
/// lanes of AVX-512.
const COUNTS: [usize; 8] = [0, 1, 2, 3, 4, 5, 8, 17];

/// The prefixes of `merkle` (none) and `rfc6962` (a byte).
const PREFIXES: [&[u8]; 2] = [&[], &[0]];

/// A job of leaves laid out apart, as a spread read lays them out (the engine asks for such reads
/// only where a lane kernel hashes the leaves, which these algorithms have not), hashes one
/// leaf per batch call: the reference root still, around leaf and chunk boundaries.
#[test]
fn leaves_laid_out_apart_give_the_reference_root() {
    for alg in FAST {
        for leaf in [100usize, 1024, 4096] {
            let size = LeafSize::new(leaf as u64).unwrap();
            for layout in [Layout::Merkle(size), Layout::Rfc6962(size)] {
                let chunk = 8 * leaf;
                for n in [0, 1, leaf - 1, leaf + 1, chunk, 3 * chunk + leaf / 2] {
                    let data = pattern(n, (leaf + n) as u64);
                    let got = job_in_chunks(
                        layout,
                        alg,
                        None,
                        &data,
                        &[chunk],
                        Some((leaf, line_gap(leaf))),
                    );
                    assert_eq!(
                        got,
                        reference::root(layout, alg, &data),
                        "{alg} {layout} {n}"
                    );
                }
            }
        }
    }
}

/// `batch::hash_each` against one `hash_parts` per message (and, for BLAKE3, the crate's own
/// one-shot hash).
fn check(alg: Algorithm, prefix: &[u8], len: usize, count: usize, seed: u64) {
    let data = pattern(len * count, seed);
    let got = batch::hash_each(alg, prefix, &data, len);
    let want: Vec<_> = data
        .chunks_exact(len)
        .map(|m| alg.hash_parts(&[prefix, m]))
        .collect();
    assert_eq!(got, want, "{alg} prefix {prefix:?} {count} × {len}");
    if alg == Algorithm::Blake3 {
        for (digest, m) in got.iter().zip(data.chunks_exact(len)) {
            let whole = [prefix, m].concat();
            assert_eq!(digest.as_bytes(), blake3::hash(&whole).as_bytes());
        }
    }
}

#[test]
fn many_messages_at_once_equal_one_at_a_time_at_every_boundary() {
    for alg in FAST {
        for prefix in PREFIXES {
            for len in BOUNDARIES {
                for count in COUNTS {
                    check(alg, prefix, len, count, len as u64 ^ count as u64);
                }
            }
        }
    }
}

#[test]
fn inner_nodes_at_once_equal_one_at_a_time() {
    // A node is two digests behind the node prefix: 65 bytes of BLAKE3 with `rfc6962`'s.
    for alg in FAST {
        for prefix in PREFIXES {
            for count in COUNTS {
                check(alg, prefix, 2 * alg.digest_len(), count, count as u64);
            }
        }
    }
}

#[test]
fn a_prefix_of_a_block_or_more_is_hashed_too() {
    for alg in FAST {
        for len in [1, 64, 1025] {
            check(alg, &[7; 64], len, 3, 1);
            check(alg, &[7; 100], len, 3, 2);
        }
    }
}

#[test]
fn more_than_a_mebibyte_of_messages_equals_one_at_a_time() {
    // BLAKE3 works through about 1 MiB at a time; an odd length leaves a short last round.
    for alg in FAST {
        for prefix in PREFIXES {
            check(alg, prefix, 1025, 1100, 7);
        }
    }
}

#[test]
fn long_messages_equal_one_at_a_time() {
    // Many chunks per message, and a tree of chunks with an odd chunk at several levels.
    for alg in FAST {
        for prefix in PREFIXES {
            for len in [(1 << 16) - 1, 1 << 16, 5 * 1024 * 1024 + 3] {
                check(alg, prefix, len, 2, len as u64);
            }
        }
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn messages_of_any_length_at_once_equal_one_at_a_time(
        alg in prop::sample::select(FAST.to_vec()),
        prefix in prop::sample::select(PREFIXES.to_vec()),
        len in 1usize..=3 * 1024 + 1,
        count in prop::sample::select(COUNTS.to_vec()),
        seed: u64,
    ) {
        check(alg, prefix, len, count, seed);
    }
}

/// `merkle` or `rfc6962` with leaves of up to 5000 bytes, often at a block or chunk boundary.
fn small_leaf_layout() -> impl Strategy<Value = Layout> {
    let leaf = prop_oneof![
        2 => prop::sample::select(BOUNDARIES.to_vec()),
        1 => 1usize..=5000,
    ];
    (leaf, any::<bool>()).prop_map(|(leaf, rfc)| {
        let leaf = LeafSize::new(leaf as u64).expect("a leaf is never empty");
        if rfc {
            Layout::Rfc6962(leaf)
        } else {
            Layout::Merkle(leaf)
        }
    })
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn small_leaves_fed_in_any_pieces_give_the_reference_root(
        alg in prop::sample::select(FAST.to_vec()),
        layout in small_leaf_layout(),
        n in 0usize..60_000,
        piece in prop_oneof![Just(usize::MAX), 1usize..70_000],
        seed: u64,
    ) {
        // Pieces of whole leaves and parts of one: the fast path and the one-leaf hasher.
        let data = pattern(n, seed);
        let mut h = layout.job_hasher(alg);
        for chunk in data.chunks(piece) {
            h.update(chunk);
        }
        prop_assert_eq!(h.finalize(), reference::root(layout, alg, &data));
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// The whole leaves of a chunk are hashed into vectors that every job hasher of a thread
    /// shares: two hashers fed in turns must still each give the root of their own stream,
    /// for the lane kernels (MD5, SHA-256) as for the fast paths here.
    #[test]
    fn job_hashers_fed_in_turns_on_one_thread_give_their_own_roots(
        alg in prop::sample::select(vec![
            Algorithm::Blake3, Algorithm::Xxh3, Algorithm::Md5, Algorithm::Sha256,
        ]),
        layout in small_leaf_layout(),
        n in 0usize..60_000,
        piece in 1usize..70_000,
        seed: u64,
    ) {
        let (a, b) = (pattern(n, seed), pattern(n / 2 + 1, seed ^ 1));
        let (mut ha, mut hb) = (layout.job_hasher(alg), layout.job_hasher(alg));
        let (mut pa, mut pb) = (a.chunks(piece), b.chunks(piece));
        loop {
            let (ca, cb) = (pa.next(), pb.next());
            if ca.is_none() && cb.is_none() {
                break;
            }
            ca.into_iter().for_each(|c| ha.update(c));
            cb.into_iter().for_each(|c| hb.update(c));
        }
        prop_assert_eq!(ha.finalize(), reference::root(layout, alg, &a));
        prop_assert_eq!(hb.finalize(), reference::root(layout, alg, &b));
    }
}

/// The digest `cmd`, an `mtsum` run on one file, prints first; the run must succeed.
fn printed_root(cmd: &mut std::process::Command) -> String {
    let out = common::run::Run::from_output(cmd.output().expect("mtsum runs"));
    assert_eq!(out.code, Some(0), "{cmd:?}: {}", out.stderr());
    out.stdout()
        .split_whitespace()
        .next()
        .expect("a digest")
        .to_owned()
}

#[test]
fn mtsum_with_small_leaves_gives_the_reference_root() {
    // Several reads of the engine's, and a short last leaf.
    let data = pattern((3 << 20) + 5, 15);
    let dir = tempdir();
    let file = dir.path().join("data");
    std::fs::write(&file, &data).expect("the test file is written");
    for alg in FAST {
        for (t, layout) in [
            ("merkle", Layout::Merkle as fn(LeafSize) -> Layout),
            ("rfc6962", Layout::Rfc6962),
        ] {
            for (l, leaf) in [("1K", 1024), ("4K", 4096), ("100", 100)] {
                let mut cmd = std::process::Command::new(MTSUM);
                cmd.args(["-a", alg.name(), "-t", t, "-l", l]).arg(&file);
                let hex = printed_root(&mut cmd);
                let want = reference::root(layout(LeafSize::new(leaf).unwrap()), alg, &data);
                assert_eq!(hex, want.to_hex(), "{alg} {t} -l {l}");
            }
        }
    }
}

#[test]
fn mtsum_gives_the_same_blake3_root_under_the_avx2_and_portable_caps() {
    // On a CPU with AVX-512 the caps run the AVX2 and portable copies of the fast path.
    use mtsum::lanes::{FORCE_PORTABLE_VAR, SIMD_VAR};
    let data = pattern((2 << 20) + 3, 16);
    let dir = tempdir();
    let file = dir.path().join("data");
    std::fs::write(&file, &data).expect("the test file is written");
    let root = |cap: Option<(&str, &str)>| {
        let mut cmd = std::process::Command::new(MTSUM);
        cmd.args(["-a", "blake3", "-t", "rfc6962", "-l", "1K"])
            .arg(&file)
            .env_remove(SIMD_VAR)
            .env_remove(FORCE_PORTABLE_VAR);
        if let Some((var, value)) = cap {
            cmd.env(var, value);
        }
        printed_root(&mut cmd)
    };
    let leaf = LeafSize::new(1024).expect("a leaf is never empty");
    let want = reference::root(Layout::Rfc6962(leaf), Algorithm::Blake3, &data).to_hex();
    assert_eq!(root(None), want);
    for cap in [(SIMD_VAR, "avx2"), (FORCE_PORTABLE_VAR, "1")] {
        assert_eq!(root(Some(cap)), want, "{cap:?}");
    }
}
