//! Helpers shared by the integration tests. Each test binary includes this module with
//! `mod common;` and uses only part of it, hence the `dead_code` allowance.

#![allow(dead_code)]

pub mod audit;
pub mod check;
pub mod cli;
pub mod http_server;
pub mod run;

use std::ffi::OsString;
use std::io::{ErrorKind, Write};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use mtsum::lanes::Kernel;
use mtsum::source::Pieces;
use mtsum::{Algorithm, Digest, Layout, LeafSize};
use proptest::prelude::*;
use proptest::test_runner::Config;
use tempfile::TempDir;

/// The binary under test.
pub const MTSUM: &str = env!("CARGO_BIN_EXE_mtsum");

// ---------------------------------------------------------------------------------------------
// Generated data and proptest strategies
// ---------------------------------------------------------------------------------------------

/// Proptest settings: `cases` cases, no regression files (the tests are seeded, and this crate
/// keeps no `proptest-regressions` directory).
pub fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// `len` pseudo-random bytes from `seed` (splitmix64): cheap, and different at every offset.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    let mut state = seed;
    while out.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The leaf sizes every property tries on purpose; random ones are mixed in.
pub const SPECIAL_LEAVES: [u64; 8] = [1, 2, 3, 63, 64, 65, 100, 4096];

/// The job size the engine aims at for fixed-leaf layouts (`TARGET_JOB_BYTES` in layout.rs).
pub const TARGET_JOB_BYTES: u64 = 4 << 20;

/// A leaf size: one of [`SPECIAL_LEAVES`] or anything up to 5000.
pub fn leaf_size() -> impl Strategy<Value = LeafSize> {
    prop_oneof![
        2 => prop::sample::select(SPECIAL_LEAVES.to_vec()),
        1 => 1u64..=5000,
    ]
    .prop_map(|l| LeafSize::new(l).unwrap())
}

/// Any layout, fixed-leaf ones with a [`leaf_size`].
pub fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![
        Just(Layout::Mtsum),
        Just(Layout::Plain),
        leaf_size().prop_map(Layout::Merkle),
        leaf_size().prop_map(Layout::Rfc6962),
    ]
}

/// Layouts that can hash a stream whose length is unknown.
pub fn stream_layout() -> impl Strategy<Value = Layout> {
    layout().prop_filter("needs the length", |l| !l.needs_length())
}

pub fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop::sample::select(Algorithm::ALL.to_vec())
}

/// Lengths next to every boundary of a layout, a hash function or (given `chunk`) the
/// engine's reads, up to `max`: 0 and 1, the 64- and 128-byte blocks (and where the length
/// padding spills into another block), blake3's 1 KiB chunks, `k·chunk`, and for fixed leaves
/// `L`: `k·L` and `2^k·L`; each ± 1.
pub fn interesting_sizes(layout: Layout, chunk: Option<usize>, max: u64) -> Vec<u64> {
    let mut marks = vec![0, 1, 55, 56, 64, 111, 112, 128, 192, 256, 1024, 2048];
    if let Some(chunk) = chunk {
        marks.extend((1..=4).map(|k| k * chunk as u64));
    }
    if let Some(leaf) = layout.leaf_size().map(LeafSize::get) {
        marks.extend((1..=9).map(|k| k * leaf));
        marks.extend((0..40).map(|k| leaf << k).take_while(|&x| x <= max + 1));
    }
    let mut sizes: Vec<u64> = marks
        .into_iter()
        .flat_map(|m| [m.saturating_sub(1), m, m + 1])
        .filter(|&s| s <= max)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// A length for `layout` (read in `chunk`s, if given): mostly next to a boundary, sometimes
/// anywhere up to `max`.
pub fn size_for(layout: Layout, chunk: Option<usize>, max: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => prop::sample::select(interesting_sizes(layout, chunk, max)),
        1 => 0..=max,
    ]
}

/// The length of a full job of a fixed-leaf layout: the largest power of two of leaves that
/// fits in 4 MiB (at least one leaf).
pub fn job_bytes(leaf: u64) -> u64 {
    let mut leaves = 1;
    while 2 * leaves * leaf <= TARGET_JOB_BYTES {
        leaves *= 2;
    }
    leaves * leaf
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

/// Writes `data` to `dir/name`, making the directories on the way (`d/x`); its path.
pub fn write_file(dir: &Path, name: impl AsRef<Path>, data: &[u8]) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, data).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    path
}

// ---------------------------------------------------------------------------------------------
// Running programs
// ---------------------------------------------------------------------------------------------

/// Says on stderr that `test` was skipped, and why.
pub fn skip(test: &str, reason: &str) {
    eprintln!("SKIPPED {test}: {reason}");
}

/// Writes `bytes` into what a child reads (its standard input, a pipe or a FIFO), for tests
/// in which the child may stop reading early: one that refuses its input, or fails before
/// it reads it, closes its end, and the write then fails with EPIPE (Rust ignores SIGPIPE, so
/// the test process lives on) as soon as the child is gone, whenever that happens to race
/// ahead of the write. That is not what such a test checks: its assertions are on what the
/// child printed and its exit status, which say whether stopping early was right. Any other
/// write error still fails the test. Pass `&mut` to keep the pipe open, the pipe to close it.
pub fn feed(mut reader: impl Write, bytes: &[u8]) {
    if let Err(e) = reader.write_all(bytes)
        && e.kind() != ErrorKind::BrokenPipe
    {
        panic!("writing to the child's input: {e}");
    }
}

/// Whether this process runs as root (then permissions do not stop it).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

pub fn tempdir() -> TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// Polls `cond` every millisecond for up to ten seconds.
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

/// The command before a program's that runs it as an unprivileged user (empty when this
/// process is not root, whom permissions do not stop), or why there is none: `setpriv` to user
/// and group 65534 without supplementary groups, else `runuser -u nobody`, the first that can
/// run mtsum; asked once per test binary.
pub fn unprivileged() -> Result<&'static [&'static str], String> {
    static PREFIX: OnceLock<Result<&'static [&'static str], String>> = OnceLock::new();
    PREFIX.get_or_init(find_unprivileged).clone()
}

fn find_unprivileged() -> Result<&'static [&'static str], String> {
    if !is_root() {
        return Ok(&[]);
    }
    const WRAPPERS: [&[&str]; 2] = [
        &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ],
        &["runuser", "-u", "nobody", "--"],
    ];
    let mut why = Vec::new();
    for wrapper in WRAPPERS {
        let probe = StdCommand::new(wrapper[0])
            .args(&wrapper[1..])
            .args([MTSUM, "--version"])
            .output();
        match probe {
            Ok(o) if o.status.success() => return Ok(wrapper),
            Ok(o) => why.push(format!(
                "{}: {}",
                wrapper[0],
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => why.push(format!("{}: {e}", wrapper[0])),
        }
    }
    Err(format!(
        "cannot run {MTSUM} as a non-root user ({})",
        why.join("; ")
    ))
}

/// A command that runs mtsum as an unprivileged user, or why there is none.
pub fn mtsum_unprivileged() -> Result<StdCommand, String> {
    let mut cmd = match unprivileged()?.split_first() {
        None => return Ok(StdCommand::new(MTSUM)),
        Some((wrapper, args)) => {
            let mut cmd = StdCommand::new(wrapper);
            cmd.args(args);
            cmd
        }
    };
    cmd.arg(MTSUM);
    Ok(cmd)
}

/// Whether `program --version` runs and succeeds.
pub fn have(program: &str) -> bool {
    StdCommand::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

pub fn os(bytes: &[u8]) -> OsString {
    OsString::from_vec(bytes.to_vec())
}

pub fn strs(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

// ---------------------------------------------------------------------------------------------
// Published test vectors
// ---------------------------------------------------------------------------------------------

/// The NIST CAVP byte-oriented response files and the RFC 1321 suite, with the number of
/// vectors each holds (so that a parser that silently reads nothing cannot pass).
pub const HASH_VECTOR_FILES: [(Algorithm, &str, &str, usize); 11] = [
    (
        Algorithm::Md5,
        "rfc-1321.txt",
        include_str!("../vectors/nist-cavp/rfc-1321.txt"),
        7,
    ),
    (
        Algorithm::Sha1,
        "SHA1ShortMsg.rsp",
        include_str!("../vectors/nist-cavp/SHA1ShortMsg.rsp"),
        65,
    ),
    (
        Algorithm::Sha1,
        "SHA1LongMsg.rsp",
        include_str!("../vectors/nist-cavp/SHA1LongMsg.rsp"),
        64,
    ),
    (
        Algorithm::Sha224,
        "SHA224ShortMsg.rsp",
        include_str!("../vectors/nist-cavp/SHA224ShortMsg.rsp"),
        65,
    ),
    (
        Algorithm::Sha224,
        "SHA224LongMsg.rsp",
        include_str!("../vectors/nist-cavp/SHA224LongMsg.rsp"),
        64,
    ),
    (
        Algorithm::Sha256,
        "SHA256ShortMsg.rsp",
        include_str!("../vectors/nist-cavp/SHA256ShortMsg.rsp"),
        65,
    ),
    (
        Algorithm::Sha256,
        "SHA256LongMsg.rsp",
        include_str!("../vectors/nist-cavp/SHA256LongMsg.rsp"),
        64,
    ),
    (
        Algorithm::Sha384,
        "SHA384ShortMsg.rsp",
        include_str!("../vectors/nist-cavp/SHA384ShortMsg.rsp"),
        129,
    ),
    (
        Algorithm::Sha384,
        "SHA384LongMsg.rsp",
        include_str!("../vectors/nist-cavp/SHA384LongMsg.rsp"),
        128,
    ),
    (
        Algorithm::Sha512,
        "SHA512ShortMsg.rsp",
        include_str!("../vectors/nist-cavp/SHA512ShortMsg.rsp"),
        129,
    ),
    (
        Algorithm::Sha512,
        "SHA512LongMsg.rsp",
        include_str!("../vectors/nist-cavp/SHA512LongMsg.rsp"),
        128,
    ),
];

/// One message and its published digest.
pub struct HashVector {
    /// `file:Len=…`, for assertion messages.
    pub name: String,
    pub alg: Algorithm,
    pub msg: Vec<u8>,
    pub md: Digest,
}

/// Parses a CAVP response file (`Len = bits`, `Msg = hex`, `MD = hex`; `[L = …]` headers and
/// `#` comments ignored). A `Len = 0` entry carries the placeholder `Msg = 00`.
pub fn parse_hash_vectors(alg: Algorithm, file: &str, text: &str) -> Vec<HashVector> {
    let mut out = Vec::new();
    let (mut len, mut msg) = (None::<usize>, None::<Vec<u8>>);
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with('[') {
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("{file}: unexpected line {line:?}"));
        let value = value.trim();
        match key.trim() {
            "Len" => len = Some(value.parse().expect("Len is a number")),
            "Msg" => msg = Some(unhex(value)),
            "MD" => {
                let bits = len.take().expect("Len before MD");
                let mut bytes = msg.take().expect("Msg before MD");
                assert!(bits.is_multiple_of(8), "{file}: byte-oriented vectors only");
                if bits == 0 {
                    bytes.clear();
                }
                assert_eq!(bytes.len() * 8, bits, "{file}: Len = {bits}");
                let md = Digest::from_hex(value).expect("MD is hex");
                assert_eq!(
                    md.as_bytes().len(),
                    alg.digest_len(),
                    "{file}: Len = {bits}"
                );
                out.push(HashVector {
                    name: format!("{file}:Len={bits}"),
                    alg,
                    msg: bytes,
                    md,
                });
            }
            other => panic!("{file}: unexpected key {other:?}"),
        }
    }
    out
}

/// Every vector of every file, after checking each file's count.
pub fn all_hash_vectors() -> Vec<HashVector> {
    let mut all = Vec::new();
    for (alg, file, text, count) in HASH_VECTOR_FILES {
        let vectors = parse_hash_vectors(alg, file, text);
        assert_eq!(vectors.len(), count, "{file}: vectors parsed");
        all.extend(vectors);
    }
    all
}

/// The vectors of `alg`'s files.
pub fn hash_vectors(alg: Algorithm) -> Vec<HashVector> {
    all_hash_vectors()
        .into_iter()
        .filter(|v| v.alg == alg)
        .collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd-length hex");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// The digest of one job of `layout` hashed in chunks of the given sizes, in turn: side by
/// side, or, with `spread` = `(piece, gap)`, each chunk laid out as a spread read lays it, in
/// pieces of `piece` bytes `gap` bytes apart, with other bytes in the gaps. `lanes` as
/// [`Layout::job_hasher_with_lanes`] takes it.
pub fn job_in_chunks(
    layout: Layout,
    alg: Algorithm,
    lanes: Option<Kernel>,
    data: &[u8],
    chunks: &[usize],
    spread: Option<(usize, usize)>,
) -> Digest {
    let mut h = layout.job_hasher_with_lanes(alg, lanes);
    let mut rest = data;
    for &size in chunks.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at(size.clamp(1, rest.len()));
        match spread {
            None => h.update(chunk),
            Some((piece, gap)) => {
                let stride = piece + gap;
                let count = chunk.len().div_ceil(piece);
                let mut span =
                    vec![0xa5; (count - 1) * stride + (chunk.len() - (count - 1) * piece)];
                for (i, p) in chunk.chunks(piece).enumerate() {
                    span[i * stride..i * stride + p.len()].copy_from_slice(p);
                }
                h.update_pieces(Pieces::spread(&span, chunk.len(), piece, stride).unwrap());
            }
        }
        rest = tail;
    }
    h.finalize()
}

/// The gap a spread read leaves between pieces of `piece` bytes: to the next line, and a line.
pub fn line_gap(piece: usize) -> usize {
    piece.next_multiple_of(64) + 64 - piece
}
