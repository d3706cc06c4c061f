//! The storage systems' layouts (`s3`, `glacier`, `dropbox`, `btv2`) and the full-object
//! CRCs: against their published vectors, against an independent restatement in Python
//! (`tests/storage_oracle.py`: hashlib, zlib, crcmod, and libtorrent's own torrent creator
//! for BitTorrent v2) on files of every boundary size, and the engine against the reference
//! path on random sizes, thread counts and read sizes.

mod common;

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{config, pattern, tempdir, write_file};
use mtsum::engine::{Engine, Request};
use mtsum::layout::{Encoding, NoRoot, PartList, PartSize, Root};
use mtsum::source::{InputError, Target};
use mtsum::{Algorithm, Digest, Layout, LeafSize, reference};
use proptest::prelude::*;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

fn part(bytes: u64) -> PartSize {
    PartSize::new(bytes).unwrap()
}

/// The value the engine prints for `path`.
fn engine_value(
    layout: Layout,
    alg: Algorithm,
    path: &Path,
    threads: usize,
) -> Result<Root, InputError> {
    let engine = Engine::new(NonZeroUsize::new(threads).unwrap());
    let request = Request::new(layout, alg);
    engine
        .hash(&request, Target::Path(path.to_path_buf()))
        .map(|d| d.root)
}

/// A Python interpreter that can import `module`: `python3` on the path, or the system's
/// (where a version manager shadows it).
fn python_with(module: &str) -> Option<&'static str> {
    ["python3", "/usr/bin/python3"].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// What `tests/storage_oracle.py` says of each file.
fn oracle(python: &str, layout: &str, alg: Algorithm, part: u64, files: &[PathBuf]) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/storage_oracle.py");
    let out = Command::new(python)
        .arg(script)
        .args([layout, alg.name(), &part.to_string()])
        .args(files)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Files of the given sizes (seeded pattern bytes) in `dir`.
fn files(dir: &Path, sizes: &[u64]) -> Vec<PathBuf> {
    sizes
        .iter()
        .map(|&n| write_file(dir, format!("f{n}"), &pattern(n as usize, n)))
        .collect()
}

/// Every file's value by the engine (one and three workers) equals the oracle's.
fn assert_matches_oracle(python: &str, name: &str, layout: Layout, alg: Algorithm, sizes: &[u64]) {
    let dir = tempdir();
    let paths = files(dir.path(), sizes);
    let part = layout.leaf_size().map_or(0, LeafSize::get);
    let expected = oracle(python, name, alg, part, &paths);
    for ((path, n), expected) in paths.iter().zip(sizes).zip(expected) {
        for threads in [1, 3] {
            let got = match engine_value(layout, alg, path, threads) {
                Ok(root) => root.to_string(),
                Err(InputError::NoRoot(_)) => "none".into(),
                Err(e) => panic!("{layout} {alg} {n} bytes: {e}"),
            };
            assert_eq!(got, expected, "{layout} {alg}, {n} bytes, -p {threads}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Published vectors
// ---------------------------------------------------------------------------------------------

#[test]
fn glacier_reproduces_amazons_published_tree_hash() {
    // Amazon Glacier's documentation: the tree hash of 7 680 000 zero bytes (8 chunks of 1 MiB,
    // the last one short).
    const EXPECTED: &str = "7a43777ddc7a0326d36b15bc482e6c7736e1c2e9d80a647e8c301646f6a4785c";
    let data = vec![0u8; 7_680_000];
    let alg = Algorithm::Sha256;
    assert_eq!(
        reference::root(Layout::Glacier, alg, &data).to_hex(),
        EXPECTED
    );
    let dir = tempdir();
    let path = write_file(dir.path(), "zeros", &data);
    for threads in [1, 2] {
        let root = engine_value(Layout::Glacier, alg, &path, threads).unwrap();
        assert_eq!(root.to_string(), EXPECTED);
    }
    let mut stream = Layout::Glacier.job_hasher(alg);
    data.chunks(100_000).for_each(|c| stream.update(c));
    assert_eq!(stream.finalize().to_hex(), EXPECTED);
}

#[test]
fn s3_etag_reproduces_cloudflares_example() {
    // Cloudflare R2's documentation of multipart ETags: two parts whose MD5s are these give
    // the ETag below.
    let layout = Layout::S3(PartSize::DEFAULT);
    let p = PartSize::DEFAULT.get();
    let mut combiner = layout.combiner(Algorithm::Md5);
    let digest = |hex| Digest::from_hex(hex).unwrap();
    combiner.add(1, p..p + 5, digest("8165449fc15bbf43d3b674595cbcc406"));
    combiner.add(0, 0..p, digest("bce6bf66aeb76c7040fdd5f4eccb78e6"));
    let etag = combiner.finish(p + 5).unwrap();
    assert_eq!(etag.to_string(), "f77dc0eecdebcd774a2a22cb393ad2ff-2");
    assert_eq!(etag.parts(), Some(2));
}

#[test]
fn parts_of_different_sizes_are_cut_where_the_list_says_and_the_rest_is_one_more() {
    // The same bytes cut 5, 7, 5 MiB and 1 byte: the ETag over those four parts, which no
    // part size gives.
    let data = pattern((17 * MIB + 1) as usize, 3);
    let list = PartList::new(&[5 * MIB, 7 * MIB, 5 * MIB, 1]).unwrap();
    let etag = |cuts: &[u64], data: &[u8]| {
        let mut at = 0;
        let mut digests = Vec::new();
        for &size in cuts {
            let end = (at + size as usize).min(data.len());
            digests.extend_from_slice(Algorithm::Md5.hash(&data[at..end]).as_bytes());
            at = end;
        }
        format!("{}-{}", Algorithm::Md5.hash(&digests).to_hex(), cuts.len())
    };
    let root = reference::checksum(Layout::S3Parts(list), Algorithm::Md5, &data).unwrap();
    assert_eq!(
        root.to_string(),
        etag(&[5 * MIB, 7 * MIB, 5 * MIB, 1], &data)
    );
    for part in [5 * MIB, 7 * MIB] {
        let uniform = reference::checksum(
            Layout::S3(PartSize::new(part).unwrap()),
            Algorithm::Md5,
            &data,
        );
        assert_ne!(uniform.unwrap(), root);
    }
    // A longer file: the bytes past the list are one part more; a shorter one ends early.
    let longer = pattern((20 * MIB) as usize, 3);
    let root = reference::checksum(Layout::S3Parts(list), Algorithm::Md5, &longer).unwrap();
    assert_eq!(
        root.to_string(),
        etag(&[5 * MIB, 7 * MIB, 5 * MIB, 1, 3 * MIB - 1], &longer)
    );
    let shorter = &data[..(6 * MIB) as usize];
    let root = reference::checksum(Layout::S3Parts(list), Algorithm::Md5, shorter).unwrap();
    assert_eq!(root.to_string(), etag(&[5 * MIB, MIB], shorter));
}

#[test]
fn crcs_print_in_hex_and_as_s3_headers_show_them() {
    // S3's documentation: the CRC32 of "hello" is 0x3610a686, sent as `NhCmhg==`.
    let root = reference::checksum(Layout::Plain, Algorithm::Crc32, b"hello").unwrap();
    assert_eq!(root.to_string(), "3610a686");
    assert_eq!(root.with_encoding(Encoding::Base64).to_string(), "NhCmhg==");
    // The catalogue's check values, through the layout.
    for (alg, check) in [
        (Algorithm::Crc32c, "e3069283"),
        (Algorithm::Crc64Nvme, "ae8b14860a799888"),
    ] {
        let root = reference::checksum(Layout::Plain, alg, b"123456789").unwrap();
        assert_eq!(root.to_string(), check);
    }
}

#[test]
fn a_full_object_crc_is_hashed_in_pieces_on_every_worker() {
    // 9 MiB: three 4 MiB pieces, whose CRCs combine into the CRC of the whole.
    let n = 9 * MIB;
    for alg in [Algorithm::Crc32, Algorithm::Crc32c, Algorithm::Crc64Nvme] {
        let plan = Layout::Plain.plan(alg, n, false);
        assert_eq!(plan.len(), 3, "{alg}");
        let data = pattern(n as usize, 9);
        let mut combiner = Layout::Plain.combiner(alg);
        for (i, (r, kind)) in plan.into_iter().enumerate().rev() {
            let mut h = Layout::Plain.hasher_for(alg, kind);
            h.update(&data[r.start as usize..r.end as usize]);
            combiner.add(i, r, h.finalize());
        }
        assert_eq!(combiner.finish(n).unwrap(), alg.hash(&data));
    }
}

#[test]
fn a_file_shorter_than_one_part_has_its_plain_digest_without_a_count() {
    let p = part(5 * MIB);
    for alg in [Algorithm::Md5, Algorithm::Sha256, Algorithm::Crc32c] {
        for n in [0, 1, 5 * MIB - 1] {
            let data = pattern(n as usize, 7);
            let root = reference::checksum(Layout::S3(p), alg, &data).unwrap();
            assert_eq!(root.digest(), &alg.hash(&data), "{alg} {n}");
            assert_eq!(root.parts(), None);
        }
    }
    let one_more = pattern(5 * MIB as usize + 1, 7);
    let root = reference::checksum(Layout::S3(p), Algorithm::Md5, &one_more).unwrap();
    assert_eq!(root.parts(), Some(2));
}

#[test]
fn a_file_of_exactly_one_part_is_a_multipart_upload_of_one_part_as_the_aws_cli_makes_it() {
    // The AWS CLI (s3transfer) uploads in parts when the size is at least its threshold, which
    // is the part size: H(H(part))-1, for the ETag and the composite checksums alike.
    let p = part(5 * MIB);
    for alg in [Algorithm::Md5, Algorithm::Sha256, Algorithm::Crc32c] {
        let data = pattern(5 * MIB as usize, 7);
        let root = reference::checksum(Layout::S3(p), alg, &data).unwrap();
        assert_eq!(
            root.digest(),
            &alg.hash(alg.hash(&data).as_bytes()),
            "{alg}"
        );
        assert_eq!(root.parts(), Some(1), "{alg}");
        let dir = tempdir();
        let path = write_file(dir.path(), "f", &data);
        for threads in [1, 3] {
            assert_eq!(
                engine_value(Layout::S3(p), alg, &path, threads).unwrap(),
                root
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// What has no value
// ---------------------------------------------------------------------------------------------

#[test]
fn an_empty_file_has_no_btv2_pieces_root() {
    let dir = tempdir();
    let path = write_file(dir.path(), "empty", b"");
    let e = engine_value(Layout::Btv2, Algorithm::Sha256, &path, 2).unwrap_err();
    assert_eq!(
        e.to_string(),
        "an empty file has no btv2 pieces root (BEP 52)"
    );
    assert_eq!(
        reference::checksum(Layout::Btv2, Algorithm::Sha256, b""),
        Err(NoRoot::EmptyFile("btv2"))
    );
    // Nor has an empty stream.
    let combiner = Layout::Btv2.combiner(Algorithm::Sha256);
    assert!(combiner.finish(0).is_err());
}

#[test]
fn more_than_ten_thousand_parts_are_refused_before_hashing() {
    let min = part(PartSize::MIN);
    let layout = Layout::S3(min);
    assert!(layout.check_size(10_000 * PartSize::MIN).is_ok());
    // A sparse file of 10 001 minimal parts: refused at once, not after 52 GB of MD5.
    let dir = tempdir();
    let path = dir.path().join("sparse");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(10_000 * PartSize::MIN + 1).unwrap();
    let e = engine_value(layout, Algorithm::Md5, &path, 2).unwrap_err();
    assert!(
        matches!(
            e,
            InputError::NoRoot(NoRoot::TooManyParts { parts: 10_001, .. })
        ),
        "{e}"
    );
}

#[test]
fn a_crc_has_no_meaning_in_a_tree_and_glacier_is_sha256_only() {
    let leaf = LeafSize::DEFAULT;
    for layout in [
        Layout::Mtsum,
        Layout::Merkle(leaf),
        Layout::Rfc6962(leaf),
        Layout::Glacier,
        Layout::Dropbox,
        Layout::Btv2,
    ] {
        for alg in [Algorithm::Crc32, Algorithm::Crc32c, Algorithm::Crc64Nvme] {
            assert!(layout.check_algorithm(alg).is_err(), "{layout} {alg}");
        }
    }
    for alg in [Algorithm::Crc32, Algorithm::Crc32c, Algorithm::Crc64Nvme] {
        assert!(Layout::Plain.check_algorithm(alg).is_ok());
    }
    let s3 = Layout::S3(PartSize::DEFAULT);
    let e = s3.check_algorithm(Algorithm::Crc64Nvme).unwrap_err();
    assert!(e.to_string().contains("-t plain -a crc64nvme"), "{e}");
    assert!(s3.check_algorithm(Algorithm::Blake3).is_err());
    assert!(Layout::Glacier.check_algorithm(Algorithm::Md5).is_err());
}

// ---------------------------------------------------------------------------------------------
// The Python restatement, at every boundary
// ---------------------------------------------------------------------------------------------

#[test]
fn s3_matches_the_python_restatement_at_every_boundary() {
    let python = python_with("hashlib").expect("python3");
    let p = 5 * MIB;
    let sizes = [0, 1, p - 1, p, p + 1, 2 * p, 3 * p + 7];
    for alg in [
        Algorithm::Md5,
        Algorithm::Sha1,
        Algorithm::Sha256,
        Algorithm::Crc32,
        Algorithm::Crc32c,
    ] {
        assert_matches_oracle(python, "s3", Layout::S3(part(p)), alg, &sizes);
    }
    let default = PartSize::DEFAULT.get();
    let sizes = [default, default + 1];
    assert_matches_oracle(
        python,
        "s3",
        Layout::S3(PartSize::DEFAULT),
        Algorithm::Md5,
        &sizes,
    );
}

#[test]
fn glacier_matches_the_level_by_level_restatement_and_is_merkle_with_1_mib_leaves() {
    let python = python_with("hashlib").expect("python3");
    // Leaf counts 1, 2, 3, 4 (one job), 5, 7 and 9: every way of carrying an odd digest up.
    let sizes = [
        0,
        1,
        MIB - 1,
        MIB,
        MIB + 1,
        3 * MIB + 5,
        4 * MIB + 1,
        7 * MIB,
        9 * MIB - 3,
    ];
    assert_matches_oracle(
        python,
        "glacier",
        Layout::Glacier,
        Algorithm::Sha256,
        &sizes,
    );
    let merkle = Layout::Merkle(LeafSize::new(MIB).unwrap());
    for n in sizes {
        let data = pattern(n as usize, n);
        assert_eq!(
            reference::root(Layout::Glacier, Algorithm::Sha256, &data),
            reference::root(merkle, Algorithm::Sha256, &data),
            "{n} bytes"
        );
    }
}

#[test]
fn dropbox_matches_the_python_restatement_at_every_boundary() {
    let python = python_with("hashlib").expect("python3");
    let b = 4 * MIB;
    let sizes = [0, 1, b - 1, b, b + 1, 3 * b + 5];
    assert_matches_oracle(
        python,
        "dropbox",
        Layout::Dropbox,
        Algorithm::Sha256,
        &sizes,
    );
}

/// 16 KiB ± 1, non-power-of-two block counts, one job of 256 blocks and one more.
const BTV2_SIZES: [u64; 10] = [
    1,
    16 * KIB - 1,
    16 * KIB,
    16 * KIB + 1,
    48 * KIB,
    80 * KIB + 7,
    256 * 16 * KIB,
    257 * 16 * KIB + 1,
    600 * 16 * KIB + 3,
    0,
];

#[test]
fn btv2_matches_the_python_restatement_at_every_boundary() {
    let python = python_with("hashlib").expect("python3");
    assert_matches_oracle(python, "btv2", Layout::Btv2, Algorithm::Sha256, &BTV2_SIZES);
}

#[test]
fn btv2_pieces_root_is_the_one_libtorrent_puts_in_a_v2_torrent() {
    let Some(python) = python_with("libtorrent") else {
        common::skip(
            "btv2_pieces_root_is_the_one_libtorrent_puts_in_a_v2_torrent",
            "the libtorrent Python bindings are not installed (python3-libtorrent)",
        );
        return;
    };
    assert_matches_oracle(
        python,
        "btv2-libtorrent",
        Layout::Btv2,
        Algorithm::Sha256,
        &BTV2_SIZES,
    );
}

#[test]
fn full_object_crcs_match_zlib_and_crcmod_across_pieces() {
    let python = python_with("zlib").expect("python3");
    let j = 4 * MIB;
    let sizes = [0, 1, j - 1, j, j + 1, 2 * j + 3];
    for alg in [Algorithm::Crc32, Algorithm::Crc32c, Algorithm::Crc64Nvme] {
        assert_matches_oracle(python, "plain", Layout::Plain, alg, &sizes);
    }
}

// ---------------------------------------------------------------------------------------------
// Engine and job hashers against the reference path
// ---------------------------------------------------------------------------------------------

/// A storage layout with an algorithm it is defined with, and a size near its boundaries.
fn storage_case() -> impl Strategy<Value = (Layout, Algorithm, u64)> {
    let s3 = (
        prop::sample::select(vec![5 * MIB, 5 * MIB + 3, 6 * MIB]),
        prop::sample::select(vec![
            Algorithm::Md5,
            Algorithm::Sha1,
            Algorithm::Sha256,
            Algorithm::Crc32,
            Algorithm::Crc32c,
        ]),
    )
        .prop_flat_map(|(p, alg)| {
            let sizes = vec![0, 1, p - 1, p, p + 1, 2 * p, 2 * p + 1, 3 * p - 1];
            (
                Just(Layout::S3(part(p))),
                Just(alg),
                prop_oneof![prop::sample::select(sizes), 0..3 * p],
            )
        });
    // Parts of different sizes, as a client of its own uploads them (each part is a job of
    // its own, however long): sizes around every part's end and past the last.
    let listed = (
        prop::sample::select(vec![
            vec![5 * MIB, 7 * MIB, 5 * MIB, 1],
            vec![6 * MIB, 5 * MIB + 3, 5 * MIB],
        ]),
        prop::sample::select(vec![Algorithm::Md5, Algorithm::Sha256, Algorithm::Crc32c]),
    )
        .prop_flat_map(|(sizes, alg)| {
            let ends: Vec<u64> = sizes
                .iter()
                .scan(0, |end, size| {
                    *end += size;
                    Some(*end)
                })
                .flat_map(|end| [end - 1, end, end + 1])
                .chain([0, 1])
                .collect();
            let total = ends[ends.len() - 2];
            (
                Just(Layout::S3Parts(PartList::new(&sizes).unwrap())),
                Just(alg),
                prop_oneof![prop::sample::select(ends), 0..total + 3 * MIB],
            )
        });
    let sha256 = |layout: Layout, unit: u64| {
        let sizes: Vec<u64> = [1, 2, 3, 4, 5, 7, 256, 257, 300]
            .into_iter()
            .flat_map(|k| [k * unit - 1, k * unit, k * unit + 1])
            .filter(|&n| n <= 5 * MIB)
            .collect();
        (
            Just(layout),
            Just(Algorithm::Sha256),
            prop_oneof![prop::sample::select(sizes), 1..=5 * MIB],
        )
    };
    let crc = (
        prop::sample::select(vec![
            Algorithm::Crc32,
            Algorithm::Crc32c,
            Algorithm::Crc64Nvme,
        ]),
        prop_oneof![
            prop::sample::select(vec![0, 1, 4 * MIB, 4 * MIB + 1, 8 * MIB + 5]),
            0..9 * MIB
        ],
    )
        .prop_map(|(alg, n)| (Layout::Plain, alg, n));
    prop_oneof![
        s3,
        listed,
        sha256(Layout::Glacier, MIB),
        sha256(Layout::Dropbox, 4 * MIB),
        sha256(Layout::Btv2, 16 * KIB),
        crc,
    ]
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn the_engine_computes_the_reference_value(
        (layout, alg, n) in storage_case(),
        threads in 1usize..=4,
        chunk in prop::sample::select(vec![4096usize, 65_536, 1 << 20, 3 << 20]),
        seed: u64,
    ) {
        let data = pattern(n as usize, seed);
        let expected = reference::checksum(layout, alg, &data);
        let dir = tempdir();
        let path = write_file(dir.path(), "f", &data);
        let engine = Engine::new(NonZeroUsize::new(threads).unwrap()).with_chunk_size(chunk);
        let got = engine.hash(&Request::new(layout, alg), Target::Path(path)).map(|d| d.root);
        match (got, expected) {
            (Ok(got), Ok(expected)) => {
                prop_assert_eq!(got.to_string(), expected.to_string());
            }
            (Err(InputError::NoRoot(got)), Err(expected)) => prop_assert_eq!(got, expected),
            (got, expected) => prop_assert!(false, "{:?} against {:?}", got, expected),
        }
    }

    #[test]
    fn a_stream_through_one_job_hasher_and_jobs_in_any_order_give_the_reference_value(
        (layout, alg, n) in storage_case(),
        piece in 1usize..=3 << 20,
        seed: u64,
    ) {
        let data = pattern(n as usize, seed);
        let Ok(expected) = reference::checksum(layout, alg, &data) else {
            return Ok(());
        };
        // A stream of unknown length: one job hasher, one job.
        let mut h = layout.job_hasher(alg);
        data.chunks(piece).for_each(|c| h.update(c));
        let mut combiner = layout.combiner(alg);
        combiner.add(0, 0..n, h.finalize());
        prop_assert_eq!(combiner.finish(n).unwrap().to_string(), expected.to_string());
        // The jobs of a file, added last first; as many as counted without making them.
        let jobs = layout.plan(alg, n, false);
        prop_assert_eq!(layout.job_count(alg, n), jobs.len() as u64);
        let mut combiner = layout.combiner(alg);
        for (i, (r, kind)) in jobs.iter().enumerate().rev() {
            let mut h = layout.hasher_for(alg, *kind);
            h.update(&data[r.start as usize..r.end as usize]);
            combiner.add(i, r.clone(), h.finalize());
        }
        prop_assert_eq!(combiner.finish(n).unwrap(), expected);
    }
}

// ---------------------------------------------------------------------------------------------
// The command line
// ---------------------------------------------------------------------------------------------

/// Runs mtsum in `dir`: exit code (-1 when killed, by [`common::run::TIMEOUT`] say), stdout,
/// stderr.
fn mtsum(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let r = common::run::run(dir, args);
    let code = r.code.unwrap_or(-1);
    (code, r.stdout().to_string(), r.stderr().to_string())
}

#[test]
fn every_storage_layout_writes_tags_and_checks_them_back() {
    let dir = tempdir();
    let p = dir.path();
    write_file(p, "big", &pattern(11 * MIB as usize + 5, 1));
    write_file(p, "small", b"hello");
    for args in [
        &["-t", "s3"][..],
        &["-t", "s3", "--part-size", "5M", "-a", "crc32c"],
        &["-t", "s3", "--part-size", "6M", "-a", "sha256"],
        &["-t", "s3", "-a", "sha1"],
        &["-t", "s3", "--part-size", "6M,5242883"],
        &["-t", "s3", "--part-size", "5Mx2,1", "-a", "crc32"],
        &["-t", "glacier"],
        &["-t", "dropbox"],
        &["-t", "btv2"],
        &["-t", "plain", "-a", "crc64nvme"],
    ] {
        let (code, sums, err) = mtsum(p, &[args, &["--tag", "big", "small"]].concat());
        assert_eq!(code, 0, "{args:?}: {err}");
        write_file(p, "sums", sums.as_bytes());
        let (code, out, err) = mtsum(p, &["-c", "sums"]);
        assert_eq!(
            (code, out.as_str()),
            (0, "big: OK\nsmall: OK\n"),
            "{args:?} {sums}: {err}"
        );
    }
}

#[test]
fn parts_of_different_sizes_are_named_one_by_one_and_only_where_a_line_keeps_them() {
    let dir = tempdir();
    let p = dir.path();
    let data = pattern(17 * MIB as usize + 1, 2);
    write_file(p, "f", &data);
    let list = PartList::new(&[5 * MIB, 7 * MIB, 5 * MIB, 1]).unwrap();
    let etag = reference::checksum(Layout::S3Parts(list), Algorithm::Md5, &data).unwrap();
    let (code, out, err) = mtsum(p, &["-t", "s3", "--part-size", "5M,7M,5M,1", "--tag", "f"]);
    assert_eq!(
        (code, out),
        (0, format!("S3-MD5-5M,7M,5M,1 (f) = {etag}\n")),
        "{err}"
    );
    // Not S3's parts, or where the list cannot be kept: usage errors.
    for args in [
        &["-t", "s3", "--part-size", "4M,1", "f"][..],
        &["-t", "s3", "--part-size", "5Mx0,1", "f"],
        &["-t", "merkle", "--part-size", "5M,1", "f"],
        &["--audit", "-t", "s3", "--part-size", "5M,1", "f"],
        &["--every-part", "f"],
    ] {
        let (code, out, err) = mtsum(p, args);
        assert_eq!(
            (code, out.as_str(), err.lines().count()),
            (2, "", 1),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn etags_and_composite_checksums_print_as_s3_shows_them() {
    let dir = tempdir();
    let p = dir.path();
    let data = pattern(11 * MIB as usize + 5, 1);
    write_file(p, "big", &data);
    let (code, out, _) = mtsum(p, &["-t", "s3", "big"]);
    let etag = reference::checksum(Layout::S3(PartSize::DEFAULT), Algorithm::Md5, &data).unwrap();
    assert_eq!((code, out), (0, format!("{etag}  big\n")));
    assert!(etag.to_string().ends_with("-2"));
    let (_, out, _) = mtsum(p, &["-t", "s3", "-a", "crc32", "big"]);
    let (value, count) = out.split_once("  ").unwrap().0.split_once('-').unwrap();
    assert_eq!((value.len(), count), (8, "2"), "base64 of 4 bytes: {out}");
    let (_, json, _) = mtsum(p, &["-t", "s3", "--json", "big"]);
    assert!(json.contains(&format!("\"digest\":\"{etag}\"")), "{json}");
    assert!(json.contains("\"layout\":\"s3\""), "{json}");
}

#[test]
fn base64_prints_any_digest_as_headers_show_it_and_check_reads_it() {
    let dir = tempdir();
    let p = dir.path();
    write_file(p, "hello", b"hello");
    let (code, out, _) = mtsum(p, &["-t", "plain", "-a", "crc32", "--base64", "hello"]);
    assert_eq!((code, out.as_str()), (0, "NhCmhg==  hello\n"));
    let (_, out, _) = mtsum(p, &["-t", "plain", "-a", "md5", "--base64", "hello"]);
    // `Content-MD5` of "hello", as GCS and Azure show it.
    assert_eq!(out, "XUFAKrxLKna5cZ2REBfFkg==  hello\n");
    write_file(p, "sums", out.as_bytes());
    let (code, out, err) = mtsum(p, &["-c", "-t", "plain", "sums"]);
    assert_eq!((code, out.as_str()), (0, "hello: OK\n"), "{err}");
}

#[test]
fn part_size_auto_finds_the_size_of_the_upload_and_says_which() {
    let dir = tempdir();
    let p = dir.path();
    write_file(p, "big", &pattern(40 * MIB as usize + 3, 2));
    write_file(p, "small", b"hello");
    let (_, sums, _) = mtsum(p, &["-t", "s3", "--part-size", "16M", "big", "small"]);
    write_file(p, "sums", sums.as_bytes());
    // With the default 8 MiB the multipart value differs.
    let (code, out, _) = mtsum(p, &["-c", "-t", "s3", "sums"]);
    assert_eq!((code, out.as_str()), (1, "big: FAILED\nsmall: OK\n"));
    let (code, out, err) = mtsum(p, &["-c", "-t", "s3", "--part-size", "auto", "sums"]);
    assert_eq!(code, 0, "{err}");
    // A value of one part is the same whatever the part size: none is named.
    assert_eq!(out, "big: OK (--part-size 16M)\nsmall: OK (one part)\n");
    // A value no size gives fails like any other, and says how many sizes were tried: 11,
    // 12 and 13 MiB and MB give 4 parts of 40 MiB.
    let wrong = sums.replacen("-3", "-4", 1);
    write_file(p, "sums", wrong.as_bytes());
    let (code, out, _) = mtsum(p, &["-c", "-t", "s3", "--part-size", "auto", "sums"]);
    assert_eq!(
        (code, out.lines().next()),
        (1, Some("big: FAILED (6 part sizes tried)"))
    );
}

#[test]
fn part_size_auto_tries_every_whole_mib_and_mb_that_gives_the_count() {
    let dir = tempdir();
    let p = dir.path();
    write_file(p, "f", &pattern(10 * MIB as usize, 4));
    for size in ["9M", "7000000", "6M"] {
        let (_, sums, _) = mtsum(p, &["-t", "s3", "--part-size", size, "f"]);
        write_file(p, "sums", sums.as_bytes());
        let (code, out, err) = mtsum(p, &["-c", "-t", "s3", "--part-size", "auto", "sums"]);
        assert_eq!(code, 0, "{size}: {out}{err}");
        assert_eq!(out, format!("f: OK (--part-size {size})\n"));
    }
}

#[test]
fn errors_suggest_only_what_works_and_name_what_was_wrong() {
    let dir = tempdir();
    let p = dir.path();
    write_file(p, "f", b"x");
    // S3 has no composite CRC64NVME: only -t plain is offered.
    let (code, _, err) = mtsum(p, &["-t", "rfc6962", "-a", "crc64nvme", "f"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("use -t plain (the full-object CRC)\n"),
        "{err}"
    );
    assert!(!err.contains("-t s3"), "{err}");
    let (_, _, err) = mtsum(p, &["-t", "rfc6962", "-a", "crc32c", "f"]);
    assert!(err.contains("or -t s3 (S3's composite checksum)"), "{err}");
    for (size, needle) in [
        ("0", "invalid part size '0': S3 parts are at least 5 MiB"),
        ("1X", "invalid part size '1X': expected a number"),
    ] {
        let (code, _, err) = mtsum(p, &["-t", "s3", "--part-size", size, "f"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(needle) && !err.contains("leaf size"), "{err}");
    }
    // Untagged composite CRCs are checked only with -a: the messages say so.
    let (_, sums, _) = mtsum(p, &["-t", "s3", "-a", "crc32c", "f"]);
    write_file(p, "sums", sums.as_bytes());
    let (code, _, err) = mtsum(p, &["-c", "-t", "s3", "sums"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "mtsum: sums: no properly formatted checksum lines found (untagged CRC lines need -a: crc32 or crc32c)\n"
    );
    let (_, _, err) = mtsum(p, &["-c", "-t", "s3", "--warn", "sums"]);
    let first = err.lines().next().unwrap();
    assert_eq!(
        first,
        "mtsum: sums: 1: improperly formatted S3-MD5-8M checksum line (a crc32 or crc32c value needs -a)"
    );
    let (code, out, _) = mtsum(p, &["-c", "-t", "s3", "-a", "crc32c", "sums"]);
    assert_eq!((code, out.as_str()), (0, "f: OK\n"));
}

#[test]
fn part_size_auto_fails_an_empty_file_listed_with_a_value_of_several_parts() {
    // No part size gives an empty object two parts: the line fails at once.
    let dir = tempdir();
    let p = dir.path();
    write_file(p, "empty0", b"");
    let etag = "d41d8cd98f00b204e9800998ecf8427e";
    for parts in ["2", "3", "10000"] {
        write_file(p, "sums", format!("{etag}-{parts}  empty0\n").as_bytes());
        let (code, out, err) = mtsum(p, &["-c", "-t", "s3", "--part-size", "auto", "sums"]);
        assert_eq!(
            (code, out.as_str()),
            (1, "empty0: FAILED\n"),
            "{parts} parts: {err}"
        );
    }
}

#[test]
fn meaningless_combinations_are_usage_errors_of_one_line() {
    let dir = tempdir();
    let p = dir.path();
    write_file(p, "f", b"x");
    for (args, needle) in [
        (&["-t", "merkle", "-a", "crc32c"][..], "is a CRC"),
        (&["-t", "mtsum", "-a", "crc64nvme"], "is a CRC"),
        (&["-t", "btv2", "-a", "crc32"], "is a CRC"),
        (&["-t", "glacier", "-a", "md5"], "sha256 only"),
        (&["-t", "s3", "-a", "crc64nvme"], "-t plain -a crc64nvme"),
        (&["-t", "s3", "-a", "blake3"], "s3 layout is defined with"),
        (&["-t", "s3", "--part-size", "4M"], "at least 5 MiB"),
        (&["-t", "s3", "--part-size", "6G"], "at most 5 GiB"),
        (&["-t", "s3", "--part-size", "auto"], "applies to -c only"),
        (
            &["-t", "merkle", "--part-size", "8M"],
            "applies to -t s3 only",
        ),
        (&["-t", "s3", "-l", "8M"], "part size"),
        (&["-t", "glacier", "-l", "2M"], "has no leaf size"),
        (&["-t", "dropbox", "-g"], "not one"),
    ] {
        let (code, out, err) = mtsum(p, &[args, &["f"]].concat());
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("mtsum: ") && err.contains(needle),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn inputs_without_a_value_fail_alone() {
    let dir = tempdir();
    let p = dir.path();
    write_file(p, "empty", b"");
    write_file(p, "a", b"a");
    let (code, out, err) = mtsum(p, &["-t", "btv2", "empty", "a"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "mtsum: empty: an empty file has no btv2 pieces root (BEP 52)\n"
    );
    let a = reference::root(Layout::Btv2, Algorithm::Sha256, b"a");
    assert_eq!(out, format!("{a}  a\n"));
    // 10 001 parts of 5 MiB: a sparse file, refused before it is read.
    let file = std::fs::File::create(p.join("sparse")).unwrap();
    file.set_len(10_000 * PartSize::MIN + 1).unwrap();
    let (code, out, err) = mtsum(p, &["-t", "s3", "--part-size", "5M", "sparse", "a"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("mtsum: sparse: 10001 parts of 5M, more than S3's 10000"),
        "{err}"
    );
    assert_eq!(out.lines().count(), 1, "a is hashed: {out}");
}

#[test]
fn check_lines_whose_value_has_the_wrong_length_are_improper() {
    let dir = tempdir();
    let p = dir.path();
    write_file(p, "a", b"a");
    let etag = reference::checksum(Layout::S3(PartSize::DEFAULT), Algorithm::Md5, b"a").unwrap();
    let short = &etag.to_string()[2..];
    write_file(p, "sums", format!("S3-MD5-8M (a) = {short}\n").as_bytes());
    let (code, out, err) = mtsum(p, &["-c", "sums"]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "mtsum: sums: no properly formatted checksum lines found\n"
    );
}

#[test]
fn recursion_hashes_every_file_below_with_a_storage_layout() {
    let dir = tempdir();
    let p = dir.path();
    std::fs::create_dir(p.join("d")).unwrap();
    write_file(&p.join("d"), "x", b"x");
    write_file(&p.join("d"), "y", &pattern(5 * MIB as usize, 3));
    let (code, out, _) = mtsum(p, &["-r", "-t", "dropbox", "d"]);
    assert_eq!(code, 0);
    let x = reference::root(Layout::Dropbox, Algorithm::Sha256, b"x");
    assert_eq!(out.lines().next(), Some(format!("{x}  d/x").as_str()));
    assert_eq!(out.lines().count(), 2);
}

#[test]
fn a_stream_on_standard_input_has_the_value_of_the_file() {
    let dir = tempdir();
    let p = dir.path();
    let data = pattern(9 * MIB as usize + 7, 4);
    let path = write_file(p, "f", &data);
    for args in [
        &["-t", "s3"][..],
        &["-t", "s3", "-a", "crc32", "--part-size", "5M"],
        &["-t", "dropbox"],
        &["-t", "btv2"],
        &["-t", "glacier"],
    ] {
        let (_, file, _) = mtsum(p, &[args, &["--no-names", "f"]].concat());
        let out = Command::new(common::MTSUM)
            .args(args)
            .arg("--no-names")
            .stdin(std::fs::File::open(&path).unwrap())
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), file, "{args:?}");
    }
}

#[test]
fn a_file_of_one_part_prints_the_aws_clis_etag_and_checks_against_a_single_upload_too() {
    // The AWS CLI uploads a file of exactly its 8 MiB threshold as a multipart upload of one
    // part: ETag md5(md5(data))-1, which -t s3 prints; a single upload of the same bytes (any
    // other client's) has md5(data), which -c accepts as well.
    let dir = tempdir();
    let p = dir.path();
    let data = pattern(PartSize::DEFAULT.get() as usize, 5);
    write_file(p, "f", &data);
    let md5 = Algorithm::Md5;
    let one_part = format!("{}-1", md5.hash(md5.hash(&data).as_bytes()));
    let single = md5.hash(&data).to_hex();
    let (code, out, err) = mtsum(p, &["-t", "s3", "f"]);
    assert_eq!((code, out), (0, format!("{one_part}  f\n")), "{err}");
    for value in [&one_part, &single] {
        write_file(p, "sums", format!("{value}  f\n").as_bytes());
        let (code, out, err) = mtsum(p, &["-c", "-t", "s3", "sums"]);
        assert_eq!((code, out.as_str()), (0, "f: OK\n"), "{value}: {err}");
        // Any part size of at least the file's gives it: auto names none.
        let (code, out, err) = mtsum(p, &["-c", "-t", "s3", "--part-size", "auto", "sums"]);
        assert_eq!(
            (code, out.as_str()),
            (0, "f: OK (one part)\n"),
            "{value}: {err}"
        );
    }
    // Not for another count, nor for a layout without parts.
    let two_parts = one_part.replace("-1", "-2");
    write_file(p, "sums", format!("{two_parts}  f\n").as_bytes());
    let (code, _, _) = mtsum(p, &["-c", "-t", "s3", "sums"]);
    assert_eq!(code, 1);
    let root = reference::checksum(Layout::S3(PartSize::DEFAULT), md5, &data).unwrap();
    let plain = reference::checksum(Layout::Plain, md5, &data).unwrap();
    let expected = Root::parse(&one_part, 16).unwrap();
    assert!(Layout::S3(PartSize::DEFAULT).matches(md5, &root, &expected));
    let expected = Root::parse(&single, 16).unwrap();
    assert!(Layout::S3(PartSize::DEFAULT).matches(md5, &root, &expected));
    assert!(!Layout::Plain.matches(md5, &plain, &Root::parse(&one_part, 16).unwrap()));
}
