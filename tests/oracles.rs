//! Correctness oracles: published test vectors, digests printed by the reference C++ mtsum,
//! and the output of the system's checksum tools. Every fast path (the engine on files, the
//! job hashers fed in arbitrary chunks) is checked against them, not only against our own
//! reference path.
//!
//! The vectors live in `tests/vectors/` (see its README for where each file comes from).
//! Random inputs use a seed printed on stderr; set `MTSUM_ORACLE_SEED` to replay one.
//!
//! The test over files of 128 MiB to 1 GiB is ignored by default:
//! `cargo test --release --test oracles -- --include-ignored` runs it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::{HASH_VECTOR_FILES, all_hash_vectors, parse_hash_vectors, unhex};
use mtsum::engine::{Engine, Request};
use mtsum::source::Target;
use mtsum::{Algorithm, Digest, Layout, LeafSize, reference};

// ---------------------------------------------------------------------------------------------
// Vectors
// ---------------------------------------------------------------------------------------------

const MTSUM_REFERENCE: &str = include_str!("vectors/mtsum-reference.tsv");
const RFC6962_CT: &str = include_str!("vectors/rfc6962-ct.tsv");

/// One row of `mtsum-reference.tsv`.
#[derive(Clone, Debug)]
struct MtsumRow {
    pattern: Pattern,
    size: u64,
    alg: Algorithm,
    root: Digest,
}

/// How the bytes of a reference file are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Pattern {
    /// Every byte 0x00.
    Zero,
    /// Byte `i` is `i % 251`.
    Mod251,
}

impl Pattern {
    /// Fills `buf` with the bytes at `offset..offset + buf.len()` of the pattern.
    fn fill(self, offset: u64, buf: &mut [u8]) {
        match self {
            Pattern::Zero => buf.fill(0),
            Pattern::Mod251 => {
                let mut b = (offset % 251) as u8;
                for x in buf {
                    *x = b;
                    b = if b == 250 { 0 } else { b + 1 };
                }
            }
        }
    }

    fn bytes(self, size: u64) -> Vec<u8> {
        let mut v = vec![0; size as usize];
        self.fill(0, &mut v);
        v
    }
}

fn mtsum_reference_rows() -> Vec<MtsumRow> {
    let rows: Vec<MtsumRow> = MTSUM_REFERENCE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let f: Vec<&str> = line.trim_end().split('\t').collect();
            assert_eq!(f.len(), 4, "mtsum-reference.tsv: {line:?}");
            let pattern = match f[0] {
                "zero" => Pattern::Zero,
                "mod251" => Pattern::Mod251,
                other => panic!("mtsum-reference.tsv: unknown pattern {other:?}"),
            };
            let alg: Algorithm = f[2].parse().expect("known algorithm");
            let root = Digest::from_hex(f[3]).expect("hex root");
            assert_eq!(root.as_bytes().len(), alg.digest_len(), "{line:?}");
            MtsumRow {
                pattern,
                size: f[1].parse().expect("size"),
                alg,
                root,
            }
        })
        .collect();
    assert_eq!(rows.len(), 140, "mtsum-reference.tsv rows");
    rows
}

/// Reference files up to this size are checked in the default test run.
const SMALL_REFERENCE_LIMIT: u64 = 2 << 20;

/// The algorithms C++ mtsum 1.1.0 offers.
const MTSUM_ALGS: [Algorithm; 5] = [
    Algorithm::Md5,
    Algorithm::Sha1,
    Algorithm::Sha256,
    Algorithm::Sha384,
    Algorithm::Sha512,
];

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn threads(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).expect("at least one thread")
}

/// The roots of `paths` (in order) as the engine computes them in one `hash_all` call.
fn engine_roots(engine: &Engine, layout: Layout, alg: Algorithm, paths: &[PathBuf]) -> Vec<Digest> {
    let mut roots = Vec::with_capacity(paths.len());
    let targets = paths.iter().map(|p| Target::Path(p.clone()));
    engine.hash_all(&Request::new(layout, alg), targets, |target, result| {
        let want = Target::Path(paths[roots.len()].clone());
        assert_eq!(target, want, "hash_all reports in input order");
        let digest = result.unwrap_or_else(|e| panic!("{}: {e}", target.display_name()));
        roots.push(*digest.root.digest());
    });
    assert_eq!(roots.len(), paths.len(), "one result per target");
    roots
}

/// The engines every file oracle goes through: one and two workers with the default chunk
/// size, and two workers with a small odd chunk size so that reads straddle every boundary.
fn engines() -> Vec<(String, Engine)> {
    vec![
        ("-p 1".into(), Engine::new(threads(1))),
        ("-p 2".into(), Engine::new(threads(2))),
        (
            "-p 2, 1000-byte chunks".into(),
            Engine::new(threads(2)).with_chunk_size(1000),
        ),
    ]
}

fn write_file(path: &Path, data: &[u8]) {
    std::fs::write(path, data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// A small deterministic generator (SplitMix64): reproducible from a printed seed.
struct Rng(u64);

impl Rng {
    /// A generator seeded from `MTSUM_ORACLE_SEED`, or from the clock; the seed is printed.
    fn for_test(test: &str) -> Rng {
        let seed = std::env::var("MTSUM_ORACLE_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .expect("clock after 1970");
                now.as_nanos() as u64
            });
        eprintln!("{test}: MTSUM_ORACLE_SEED={seed}");
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), up to a negligible bias.
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len + 8);
        while v.len() < len {
            v.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        v.truncate(len);
        v
    }

    /// A chunk length for feeding a hasher: mostly tiny or around a block, sometimes large,
    /// sometimes empty.
    fn chunk_len(&mut self) -> usize {
        (match self.below(8) {
            0 => 0,
            1..=3 => 1 + self.below(8),
            4..=6 => 1 + self.below(300),
            _ => 1 + self.below(100_000),
        }) as usize
    }
}

/// `layout`'s job hasher fed with `data` in random chunks: for `plain` this is the whole
/// stream's digest.
fn job_hasher_in_random_chunks(
    layout: Layout,
    alg: Algorithm,
    data: &[u8],
    rng: &mut Rng,
) -> Digest {
    let mut h = layout.job_hasher(alg);
    let mut rest = data;
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(rng.chunk_len().min(rest.len()));
        h.update(chunk);
        rest = tail;
    }
    h.finalize()
}

// ---------------------------------------------------------------------------------------------
// NIST CAVP and RFC 1321
// ---------------------------------------------------------------------------------------------

#[test]
fn every_cavp_and_rfc1321_vector_is_reproduced_by_algorithm_hash() {
    for v in all_hash_vectors() {
        assert_eq!(v.alg.hash(&v.msg), v.md, "{}", v.name);
    }
}

#[test]
fn every_cavp_and_rfc1321_vector_is_the_plain_layout_root_by_the_reference_path() {
    for v in all_hash_vectors() {
        assert_eq!(
            reference::root(Layout::Plain, v.alg, &v.msg),
            v.md,
            "{}",
            v.name
        );
    }
}

#[test]
fn every_cavp_and_rfc1321_vector_survives_the_plain_job_hasher_fed_in_random_chunks() {
    let mut rng = Rng::for_test("plain job hasher on CAVP");
    for v in all_hash_vectors() {
        for round in 0..4 {
            let got = job_hasher_in_random_chunks(Layout::Plain, v.alg, &v.msg, &mut rng);
            assert_eq!(got, v.md, "{} (round {round})", v.name);
        }
    }
}

#[test]
fn every_cavp_and_rfc1321_vector_is_the_plain_root_the_engine_computes_for_it_as_a_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (alg, file, text, _) in HASH_VECTOR_FILES {
        let vectors = parse_hash_vectors(alg, file, text);
        let paths: Vec<PathBuf> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let path = dir.path().join(format!("{file}.{i}"));
                write_file(&path, &v.msg);
                path
            })
            .collect();
        for (name, engine) in engines() {
            let roots = engine_roots(&engine, Layout::Plain, alg, &paths);
            for (v, root) in vectors.iter().zip(roots) {
                assert_eq!(root, v.md, "{} ({name})", v.name);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// C++ mtsum 1.1.0
// ---------------------------------------------------------------------------------------------

#[test]
fn mtsum_layout_matches_the_cpp_reference_on_files_up_to_one_mib() {
    let rows: Vec<MtsumRow> = mtsum_reference_rows()
        .into_iter()
        .filter(|r| r.size <= SMALL_REFERENCE_LIMIT)
        .collect();
    assert_eq!(rows.len(), 70, "small reference rows");

    // In memory, by the definition.
    for r in &rows {
        let data = r.pattern.bytes(r.size);
        let got = reference::root(Layout::Mtsum, r.alg, &data);
        assert_eq!(
            got, r.root,
            "reference::root {:?} {} {}",
            r.pattern, r.size, r.alg
        );
    }

    // On files, through the engine: every file of one algorithm in one `hash_all` call.
    let dir = tempfile::tempdir().expect("temp dir");
    for alg in MTSUM_ALGS {
        let mine: Vec<&MtsumRow> = rows.iter().filter(|r| r.alg == alg).collect();
        assert_eq!(mine.len(), 14, "{alg}: small reference rows");
        let paths: Vec<PathBuf> = mine
            .iter()
            .map(|r| {
                let path = dir.path().join(format!("{:?}-{}", r.pattern, r.size));
                if !path.exists() {
                    write_file(&path, &r.pattern.bytes(r.size));
                }
                path
            })
            .collect();
        for (name, engine) in engines() {
            let roots = engine_roots(&engine, Layout::Mtsum, alg, &paths);
            for (r, root) in mine.iter().zip(roots) {
                assert_eq!(
                    root, r.root,
                    "engine {name}: {:?} {} {alg}",
                    r.pattern, r.size
                );
            }
        }
    }
}

/// Writes the pattern's first `size` bytes to `path` in chunks (never the whole file in
/// memory). All-zero files are made sparse: reading a hole yields real zero bytes.
fn write_pattern_file(path: &Path, pattern: Pattern, size: u64) {
    let file = File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if pattern == Pattern::Zero {
        file.set_len(size).expect("set_len");
        return;
    }
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut buf = vec![0u8; 8 << 20];
    let mut offset = 0;
    while offset < size {
        let n = (size - offset).min(buf.len() as u64) as usize;
        pattern.fill(offset, &mut buf[..n]);
        out.write_all(&buf[..n]).expect("write");
        offset += n as u64;
    }
    out.into_inner().expect("flush").sync_data().expect("sync");
}

#[test]
#[ignore = "large: run with --release -- --include-ignored"]
fn mtsum_layout_matches_the_cpp_reference_on_files_of_128_mib_to_1_gib() {
    let rows: Vec<MtsumRow> = mtsum_reference_rows()
        .into_iter()
        .filter(|r| r.size > SMALL_REFERENCE_LIMIT)
        .collect();
    assert_eq!(rows.len(), 70, "large reference rows");
    let mut files: Vec<(Pattern, u64)> = rows.iter().map(|r| (r.pattern, r.size)).collect();
    files.sort();
    files.dedup();

    let dir = tempfile::tempdir().expect("temp dir");
    let engine = Engine::new(threads(2));
    for (pattern, size) in files {
        let started = std::time::Instant::now();
        let path = dir.path().join(format!("{pattern:?}-{size}"));
        write_pattern_file(&path, pattern, size);
        let mine: Vec<&MtsumRow> = rows
            .iter()
            .filter(|r| r.pattern == pattern && r.size == size)
            .collect();
        assert_eq!(
            mine.len(),
            MTSUM_ALGS.len(),
            "{pattern:?} {size}: one row per algorithm"
        );
        for r in mine {
            let got = engine_roots(&engine, Layout::Mtsum, r.alg, std::slice::from_ref(&path));
            assert_eq!(got[0], r.root, "engine -p 2: {pattern:?} {size} {}", r.alg);
        }
        std::fs::remove_file(&path).expect("remove");
        eprintln!(
            "{pattern:?} {size}: 5 algorithms in {:.1?}",
            started.elapsed()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// merkle seed vector
// ---------------------------------------------------------------------------------------------

#[test]
fn merkle_layout_reproduces_the_published_vector_of_4194336_zero_bytes_with_64_byte_leaves() {
    const EXPECTED: &str = "e9683665a90bd70aabd7705cba57c2be2a4e913a0ca1a14d765497112c178120";
    let layout = Layout::Merkle(LeafSize::new(64).expect("nonzero"));
    let alg = Algorithm::Sha256;
    let data = vec![0u8; (1 << 22) + 32];

    assert_eq!(
        reference::root(layout, alg, &data).to_hex(),
        EXPECTED,
        "reference"
    );

    let mut rng = Rng::for_test("merkle seed vector");
    let streamed = job_hasher_in_random_chunks(layout, alg, &data, &mut rng);
    assert_eq!(
        streamed.to_hex(),
        EXPECTED,
        "job hasher over the whole stream"
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("zeros");
    write_file(&path, &data);
    for (name, engine) in engines() {
        let roots = engine_roots(&engine, layout, alg, std::slice::from_ref(&path));
        assert_eq!(roots[0].to_hex(), EXPECTED, "engine {name}");
    }
}

// ---------------------------------------------------------------------------------------------
// RFC 6962
// ---------------------------------------------------------------------------------------------

/// The Certificate Transparency test leaves.
const CT_LEAVES: [&str; 8] = [
    "",
    "00",
    "10",
    "2021",
    "3031",
    "40414243",
    "5051525354555657",
    "606162636465666768696a6b6c6d6e6f",
];

#[test]
fn rfc6962_roots_of_the_first_n_certificate_transparency_leaves_match_the_test_vectors() {
    let expected: Vec<(usize, Digest)> = RFC6962_CT
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (n, root) = l.trim_end().split_once('\t').expect("N<TAB>root");
            (n.parse().expect("N"), Digest::from_hex(root).expect("hex"))
        })
        .collect();
    assert_eq!(
        expected.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        (0..=8).collect::<Vec<_>>(),
        "rfc6962-ct.tsv holds N = 0..8"
    );

    let alg = Algorithm::Sha256;
    // The leaf size plays no part in combining given leaf digests.
    for layout in [
        Layout::Rfc6962(LeafSize::DEFAULT),
        Layout::Rfc6962(LeafSize::new(1).expect("nonzero")),
    ] {
        let leaves: Vec<Digest> = CT_LEAVES
            .iter()
            .map(|hex| layout.hash_leaf(alg, &unhex(hex)))
            .collect();
        for (n, root) in &expected {
            let got = layout.root_of_leaf_digests(alg, &leaves[..*n]);
            assert_eq!(got, *root, "{layout}: first {n} leaves");
        }
    }
    assert_eq!(
        expected[0].1,
        alg.hash(b""),
        "the empty tree is SHA-256 of nothing"
    );
}

// ---------------------------------------------------------------------------------------------
// System tools on random files
// ---------------------------------------------------------------------------------------------

/// Random files of the sizes around the block boundaries of every algorithm, and a few of
/// random sizes up to 3 MiB.
fn random_files(dir: &Path, rng: &mut Rng) -> Vec<(PathBuf, Vec<u8>)> {
    let mut sizes = vec![
        0, 1, 55, 56, 63, 64, 65, 111, 112, 127, 128, 129, 1024, 1025,
    ];
    sizes.extend((0..4).map(|_| rng.below(3 << 20) as usize));
    // Past one and three 4 MiB jobs: plain BLAKE3 is hashed as subtrees of that length.
    sizes.extend([(4 << 20) + 1, (12 << 20) + 1025]);
    sizes.push(rng.below(5000) as usize);
    sizes
        .into_iter()
        .enumerate()
        .map(|(i, size)| {
            let data = rng.bytes(size);
            let path = dir.join(format!("f{i:02}-{size}"));
            write_file(&path, &data);
            (path, data)
        })
        .collect()
}

/// The digests `program args… files…` prints, one per file in order; `None` (with the reason
/// on stderr) when the program is not installed.
///
/// Accepts GNU lines (`HEX  name`, with a leading `\` when the name was escaped), BSD tags
/// (`ALG (name) = HEX`, which `xxhsum -H3` prints in 0.8.1) and xxhsum's prefixed GNU form
/// (`XXH3_HEX  name`, in later versions).
fn tool_digests(program: &str, args: &[&str], files: &[PathBuf]) -> Option<Vec<String>> {
    let output = match Command::new(program).args(args).args(files).output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipped: `{program}` is not installed");
            return None;
        }
        Err(e) => panic!("{program}: {e}"),
    };
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("utf-8 output");
    let digests: Vec<String> = stdout.lines().map(parse_digest_line).collect();
    assert_eq!(digests.len(), files.len(), "{program} {args:?}:\n{stdout}");
    Some(digests)
}

fn parse_digest_line(line: &str) -> String {
    let line = line.trim();
    let hex = match line.rsplit_once(" = ") {
        Some((head, hex)) if head.ends_with(')') && head.contains(" (") => hex,
        _ => {
            let first = line.split_whitespace().next().unwrap_or("");
            let first = first.strip_prefix('\\').unwrap_or(first);
            first.rsplit_once('_').map_or(first, |(_, hex)| hex)
        }
    };
    assert!(
        !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "no digest in {line:?}"
    );
    hex.to_ascii_lowercase()
}

/// Checks the plain layout (reference path, and the engine with two workers) against what
/// `program args` prints for random files.
fn plain_layout_matches_tool(alg: Algorithm, program: &str, args: &[&str]) {
    let mut rng = Rng::for_test(&format!("{program} {args:?}"));
    let dir = tempfile::tempdir().expect("temp dir");
    let files = random_files(dir.path(), &mut rng);
    let paths: Vec<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();
    let Some(expected) = tool_digests(program, args, &paths) else {
        return;
    };
    for ((path, data), want) in files.iter().zip(&expected) {
        assert_eq!(want.len(), 2 * alg.digest_len(), "{program}: {want}");
        let got = reference::root(Layout::Plain, alg, data).to_hex();
        assert_eq!(
            &got,
            want,
            "{alg} reference vs {program}: {}",
            path.display()
        );
    }
    let engine = Engine::new(threads(2)).with_chunk_size(1 + rng.below(300_000) as usize);
    let roots = engine_roots(&engine, Layout::Plain, alg, &paths);
    for ((path, want), root) in paths.iter().zip(&expected).zip(roots) {
        assert_eq!(
            &root.to_hex(),
            want,
            "{alg} engine vs {program}: {}",
            path.display()
        );
    }
}

#[test]
fn plain_md5_is_what_md5sum_prints() {
    plain_layout_matches_tool(Algorithm::Md5, "md5sum", &[]);
}

#[test]
fn plain_sha1_is_what_sha1sum_prints() {
    plain_layout_matches_tool(Algorithm::Sha1, "sha1sum", &[]);
}

#[test]
fn plain_sha224_is_what_sha224sum_prints() {
    plain_layout_matches_tool(Algorithm::Sha224, "sha224sum", &[]);
}

#[test]
fn plain_sha256_is_what_sha256sum_prints() {
    plain_layout_matches_tool(Algorithm::Sha256, "sha256sum", &[]);
}

#[test]
fn plain_sha384_is_what_sha384sum_prints() {
    plain_layout_matches_tool(Algorithm::Sha384, "sha384sum", &[]);
}

#[test]
fn plain_sha512_is_what_sha512sum_prints() {
    plain_layout_matches_tool(Algorithm::Sha512, "sha512sum", &[]);
}

#[test]
fn plain_blake3_is_what_b3sum_prints() {
    plain_layout_matches_tool(Algorithm::Blake3, "b3sum", &[]);
}

#[test]
fn plain_xxh3_is_what_xxhsum_h3_prints() {
    plain_layout_matches_tool(Algorithm::Xxh3, "xxhsum", &["-H3"]);
}

#[test]
fn plain_xxh128_is_what_xxhsum_h128_prints() {
    plain_layout_matches_tool(Algorithm::Xxh128, "xxhsum", &["-H128"]);
}

#[test]
fn xxhsum_prints_for_abc_the_digests_the_algorithm_unit_test_expects() {
    // The literals of `xxh_digests_are_printed_big_endian_like_xxhsum` in src/algorithm.rs.
    const XXH3_ABC: &str = "78af5f94892f3950";
    const XXH128_ABC: &str = "06b05ab6733a618578af5f94892f3950";
    assert_eq!(Algorithm::Xxh3.hash(b"abc").to_hex(), XXH3_ABC);
    assert_eq!(Algorithm::Xxh128.hash(b"abc").to_hex(), XXH128_ABC);

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("abc");
    write_file(&path, b"abc");
    let files = std::slice::from_ref(&path);
    let Some(h3) = tool_digests("xxhsum", &["-H3"], files) else {
        return;
    };
    assert_eq!(h3[0], XXH3_ABC, "xxhsum -H3 abc");
    let h128 = tool_digests("xxhsum", &["-H128"], files).expect("xxhsum is installed");
    assert_eq!(h128[0], XXH128_ABC, "xxhsum -H128 abc");
}

#[test]
fn tool_output_is_parsed_in_every_format_the_checksum_tools_print() {
    let hex = "78af5f94892f3950";
    for line in [
        format!("{hex}  some_file"),
        format!("\\{hex}  dir/with\\nnewline"),
        format!("XXH3 (some_file) = {hex}"),
        format!("XXH3_{hex}  some_file"),
        format!("{}  -", hex.to_uppercase()),
        hex.to_string(),
    ] {
        assert_eq!(parse_digest_line(&line), hex, "{line:?}");
    }
}
