//! Property tests of the engine against the reference path: whatever the layout, algorithm,
//! length, number of threads, chunk size or read-ahead, and whether the bytes come from a file
//! or a pipe, [`Engine`] must return exactly `reference::root` of the same bytes.
//!
//! Data is generated from a seed (a cheap pattern) and written to temporary files; streams are
//! FIFOs fed by a writer thread.

mod common;

use common::{
    TARGET_JOB_BYTES, algorithm, config, feed, job_bytes, layout, leaf_size, pattern, size_for,
    stream_layout, write_file,
};
use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::num::NonZeroUsize;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use mtsum::engine::{Engine, FileDigest, MAX_KEPT_LEAVES, Request, Sink, Task};
use mtsum::layout::{MTSUM_MAX_LEAF, TreeBuilder};
use mtsum::source::{InputError, MAX_HELD_STREAM, ReadMode, Target};
use mtsum::{Algorithm, Digest, Layout, LeafSize, reference};
use proptest::prelude::*;
use tempfile::TempDir;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The chunk sizes every property tries on purpose; random ones are mixed in.
const SPECIAL_CHUNKS: [usize; 4] = [1, 7, 64, 4096];

fn leaf(bytes: u64) -> LeafSize {
    LeafSize::new(bytes).unwrap()
}

/// The algorithms the multi-megabyte cases use: one slow, one SHA-NI, one very fast.
const BIG_ALGORITHMS: [Algorithm; 3] = [Algorithm::Sha256, Algorithm::Md5, Algorithm::Xxh3];

/// How the engine is set up: threads, chunk size, read-ahead.
#[derive(Clone, Copy, Debug)]
struct Setup {
    threads: usize,
    chunk: usize,
    read_ahead: usize,
}

impl Setup {
    fn engine(self) -> Engine {
        Engine::new(NonZeroUsize::new(self.threads).unwrap())
            .with_chunk_size(self.chunk)
            .with_read_ahead(self.read_ahead)
    }
}

fn setup() -> impl Strategy<Value = Setup> {
    let chunk = prop_oneof![
        2 => prop::sample::select(SPECIAL_CHUNKS.to_vec()),
        1 => 1usize..=20_000,
    ];
    (1usize..=4, chunk, 1usize..=8).prop_map(|(threads, chunk, read_ahead)| Setup {
        threads,
        chunk,
        read_ahead,
    })
}

/// Creates a FIFO at `dir/name`.
fn make_fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let c_path = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c_path` is a NUL-terminated path that outlives the call.
    let rc = unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
    path
}

/// Writes `data` into the FIFO at `path` in pieces of `piece` bytes from a thread; a reader
/// that refuses the stream hangs up early (see [`feed`]).
fn feed_fifo(path: PathBuf, data: Vec<u8>, piece: usize) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut fifo = OpenOptions::new().write(true).open(&path).unwrap();
        for part in data.chunks(piece.max(1)) {
            feed(&mut fifo, part);
        }
    })
}

/// Files `f0`, `f1`, ... in `dir` of the given sizes, each of its own pattern, with their bytes.
fn write_patterns(dir: &Path, sizes: &[usize]) -> Vec<(PathBuf, Vec<u8>)> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let data = pattern(n, i as u64);
            (write_file(dir, format!("f{i}"), &data), data)
        })
        .collect()
}

fn hash(setup: Setup, request: &Request, path: &Path) -> Result<FileDigest, InputError> {
    setup
        .engine()
        .hash(request, Target::Path(path.to_path_buf()))
}

/// Hashes `data` from a temporary file with `setup` and checks the root (and the size)
/// against the reference.
fn check_file(layout: Layout, alg: Algorithm, setup: Setup, data: &[u8]) {
    let dir = TempDir::new().unwrap();
    let path = write_file(dir.path(), "data", data);
    let got = hash(setup, &Request::new(layout, alg), &path)
        .unwrap_or_else(|e| panic!("{layout} {alg} {setup:?} n={}: {e}", data.len()));
    assert_eq!(
        got.root,
        reference::root(layout, alg, data),
        "{layout} {alg} {setup:?} n={}",
        data.len()
    );
    assert_eq!(got.size, data.len() as u64);
    assert_eq!(got.leaves, None);
}

/// The leaf ranges of a tree, as [`Layout::walk`] visits them.
struct LeafRanges(Vec<std::ops::Range<u64>>);

impl TreeBuilder for LeafRanges {
    type Node = ();
    fn leaf(&mut self, _: usize, range: std::ops::Range<u64>) {
        self.0.push(range);
    }
    fn inner(&mut self, _: std::ops::Range<u64>, _: (), _: (), _: bool) {}
}

/// Every leaf digest of the tree of `data`, by definition.
fn reference_leaves(layout: Layout, alg: Algorithm, data: &[u8]) -> Vec<Digest> {
    let mut ranges = LeafRanges(Vec::new());
    layout.walk(data.len() as u64, &mut ranges);
    ranges
        .0
        .into_iter()
        .map(|r| layout.hash_leaf(alg, &data[r.start as usize..r.end as usize]))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(192))]

    #[test]
    fn engine_digest_equals_reference_root(
        (layout, alg, setup, n) in (layout(), algorithm(), setup()).prop_flat_map(|(l, a, s)| {
            (Just(l), Just(a), Just(s), size_for(l, Some(s.chunk), 1 << 16))
        }),
        seed: u64,
    ) {
        check_file(layout, alg, setup, &pattern(n as usize, seed));
    }
}

#[test]
fn empty_and_one_byte_files_hash_like_the_reference_with_every_layout_and_algorithm() {
    let setup = Setup {
        threads: 2,
        chunk: 1,
        read_ahead: 1,
    };
    for layout in [
        Layout::Mtsum,
        Layout::Plain,
        Layout::Merkle(leaf(1)),
        Layout::Rfc6962(leaf(1)),
        Layout::Merkle(LeafSize::DEFAULT),
        Layout::Rfc6962(LeafSize::DEFAULT),
    ] {
        for alg in Algorithm::ALL {
            check_file(layout, alg, setup, b"");
            check_file(layout, alg, setup, b"\x00");
            check_file(layout, alg, setup, b"\xff");
        }
    }
}

#[test]
fn root_of_empty_file_has_two_empty_leaves() {
    let dir = TempDir::new().unwrap();
    let path = write_file(dir.path(), "empty", b"");
    for alg in Algorithm::ALL {
        let request = Request {
            keep_leaves: true,
            ..Request::new(Layout::Mtsum, alg)
        };
        let got = Engine::default()
            .hash(&request, Target::Path(path.clone()))
            .unwrap();
        let empty_leaf = alg.hash(&[0]);
        assert_eq!(got.leaves, Some(vec![empty_leaf, empty_leaf]));
        let root = alg.hash_parts(&[&[2], empty_leaf.as_bytes(), empty_leaf.as_bytes()]);
        assert_eq!(got.root, root, "{alg}");
    }
}

proptest! {
    // Several jobs per file (2–4 MiB each), hashed with 1 to 4 workers: fewer cases.
    #![proptest_config(config(16))]

    #[test]
    fn digest_does_not_depend_on_thread_count_chunk_size_or_read_ahead(
        layout in prop_oneof![
            Just(Layout::Mtsum),
            Just(Layout::Plain),
            (63u64..=100_000).prop_map(|l| Layout::Merkle(leaf(l))),
            (63u64..=100_000).prop_map(|l| Layout::Rfc6962(leaf(l))),
            (1u64..=6 << 20).prop_map(|l| Layout::Rfc6962(leaf(l.max(63)))),
        ],
        alg in prop::sample::select(BIG_ALGORITHMS.to_vec()),
        n in 0u64..=12 << 20,
        chunks in prop::collection::vec(prop_oneof![Just(4096usize), 4096usize..=1 << 20], 4),
        read_ahead in prop::collection::vec(1usize..=8, 4),
        seed: u64,
    ) {
        let data = pattern(n as usize, seed);
        let expected = reference::root(layout, alg, &data);
        let dir = TempDir::new().unwrap();
        let path = write_file(dir.path(), "data", &data);
        for threads in 1..=4 {
            let setup = Setup { threads, chunk: chunks[threads - 1], read_ahead: read_ahead[threads - 1] };
            let got = hash(setup, &Request::new(layout, alg), &path).unwrap();
            prop_assert_eq!(got.root, expected, "{} {} {:?} n={}", layout, alg, setup, n);
        }
    }
}

#[test]
fn engine_matches_reference_around_chunk_and_job_boundaries() {
    let chunk = Engine::DEFAULT_CHUNK_SIZE as u64;
    let job = TARGET_JOB_BYTES;
    // Lengths around the engine's default chunk and the 4 MiB job, for every layout.
    let mut cases: Vec<(Layout, u64)> = Vec::new();
    for layout in [
        Layout::Mtsum,
        Layout::Plain,
        Layout::Merkle(leaf(4096)),
        Layout::Rfc6962(leaf(64)),
        Layout::Rfc6962(LeafSize::DEFAULT),
    ] {
        for n in [chunk - 1, chunk, chunk + 1, job - 1, job, job + 1] {
            cases.push((layout, n));
        }
    }
    // Around one, two and three full jobs of fixed-leaf layouts whose jobs are not 4 MiB.
    for l in [65, 100, 4095, 4097, (1 << 20) + 1, (3 << 20) + 1, 5 << 20] {
        let full = job_bytes(l);
        for (i, n) in [full - 1, full, full + 1, 2 * full + 1, 3 * full - 1]
            .into_iter()
            .enumerate()
        {
            let layout = if i % 2 == 0 {
                Layout::Rfc6962(leaf(l))
            } else {
                Layout::Merkle(leaf(l))
            };
            cases.push((layout, n));
        }
    }
    // Tiny leaves: millions of them, so a single case each, across the first job boundary.
    cases.push((Layout::Rfc6962(leaf(1)), job_bytes(1) + 1));
    cases.push((Layout::Merkle(leaf(3)), job_bytes(3) + 1));

    let data = pattern(3 * (5 << 20) + 1, 42);
    let setups = [
        (1, Engine::DEFAULT_CHUNK_SIZE, Engine::DEFAULT_READ_AHEAD),
        (2, 4096, 1),
        (3, (1 << 20) + 1, 2),
        (4, Engine::DEFAULT_CHUNK_SIZE - 1, 8),
        (2, 65_537, 3),
    ];
    let dir = TempDir::new().unwrap();
    for (i, (layout, n)) in cases.into_iter().enumerate() {
        let alg = BIG_ALGORITHMS[i % BIG_ALGORITHMS.len()];
        let (threads, chunk, read_ahead) = setups[i % setups.len()];
        let setup = Setup {
            threads,
            chunk,
            read_ahead,
        };
        let bytes = &data[..n as usize];
        let path = write_file(dir.path(), format!("f{i}"), bytes);
        let got = hash(setup, &Request::new(layout, alg), &path).unwrap();
        assert_eq!(
            got.root,
            reference::root(layout, alg, bytes),
            "{layout} {alg} {setup:?} n={n}"
        );
        assert_eq!(got.size, n);
        fs::remove_file(path).unwrap();
    }
}

/// Jobs of fixed leaves of whole pages (4 KiB) whose algorithm has lanes are read spread when
/// the chunk is whole leaves (each leaf a cache line further apart than its length, see
/// `RangeReader::spread`): in both buffered read modes, with one or two workers, around chunk,
/// job and file ends (a file of one chunk is hashed by the reader itself), the root is the
/// reference's and the progress counter counts the file's bytes, not the gaps. (Other leaves,
/// read side by side, hash so too.)
#[test]
fn leaves_read_a_line_apart_hash_like_the_reference() {
    let data = pattern(job_bytes(4096) as usize * 2 + 70_000, 11);
    let dir = TempDir::new().unwrap();
    let algorithms = [
        Algorithm::Md5,
        Algorithm::Sha1,
        Algorithm::Sha256,
        Algorithm::Sha512,
    ];
    let mut case = 0;
    for (l, per_chunk) in [
        (1024u64, 64),
        (4096, 2),
        (4096, 256),
        (4100, 7),
        (8192, 3),
        (65_536, 4),
        (1 << 20, 2),
    ] {
        let chunk = l as usize * per_chunk;
        let job = job_bytes(l) as usize;
        for n in [
            chunk - 1,
            chunk,
            chunk + 1,
            3 * chunk - 1,
            job,
            job + l as usize / 2,
            2 * job + 1,
        ] {
            let n = n.min(data.len());
            case += 1;
            let alg = algorithms[case % algorithms.len()];
            let layout = match case % 2 {
                0 => Layout::Rfc6962(leaf(l)),
                _ => Layout::Merkle(leaf(l)),
            };
            let bytes = &data[..n];
            let path = write_file(dir.path(), format!("f{case}"), bytes);
            let want = reference::root(layout, alg, bytes);
            for (threads, mode) in [(1, ReadMode::Pread), (2, ReadMode::DontCache)] {
                let progress = Arc::new(AtomicU64::new(0));
                let engine = Engine::new(NonZeroUsize::new(threads).unwrap())
                    .with_chunk_size(chunk)
                    .with_read_mode(mode)
                    .with_progress(progress.clone());
                let target = Target::Path(path.clone());
                let got = engine.hash(&Request::new(layout, alg), target).unwrap();
                let what = format!("{layout} {alg} {mode:?} chunk {chunk} n={n}");
                assert_eq!(got.root, want, "{what}");
                assert_eq!(progress.load(Ordering::Relaxed), n as u64, "{what}");
            }
            fs::remove_file(path).unwrap();
        }
    }
}

#[test]
fn engine_defaults_match_reference_around_their_read_sizes() {
    // No chunk size given: a reader alone reads chunks of SOLO_CHUNK_SIZE, readers side by side
    // DEFAULT_CHUNK_SIZE, and plain BLAKE3 is cut into 4 MiB subtrees.
    let (chunk, solo) = (Engine::DEFAULT_CHUNK_SIZE, Engine::SOLO_CHUNK_SIZE);
    let sizes = [solo - 1, solo + 1, 2 * solo + chunk + 1, (12 << 20) + 1025];
    let data = pattern(sizes[3], 7);
    let dir = TempDir::new().unwrap();
    for threads in [1, 2] {
        let engine = Engine::new(NonZeroUsize::new(threads).unwrap());
        for (i, &n) in sizes.iter().enumerate() {
            let bytes = &data[..n];
            let path = write_file(dir.path(), format!("f{threads}-{i}"), bytes);
            for alg in [Algorithm::Xxh3, Algorithm::Sha1, Algorithm::Blake3] {
                for layout in [Layout::Plain, Layout::Mtsum] {
                    let target = Target::Path(path.clone());
                    let got = engine.hash(&Request::new(layout, alg), target).unwrap();
                    let want = reference::root(layout, alg, bytes);
                    assert_eq!(got.root, want, "{layout} {alg} -p {threads} n={n}");
                }
            }
        }
    }
}

#[test]
fn readers_hash_their_jobs_themselves_or_hand_them_over_with_the_same_roots() {
    // On one core every busy worker lacks a core for its hasher, so each reader hashes its
    // jobs itself; on 64 no worker does, so every job's chunks go to a hasher thread. Files of
    // several jobs (4 MiB of 4 KiB leaves each) and chunks of a part of a job, a leaf or less.
    let sizes = [(9 << 20) + 1025, (4 << 20) + 4096, 1 << 20];
    let data = pattern(sizes[0], 11);
    let dir = TempDir::new().unwrap();
    let layouts = [Layout::Rfc6962(leaf(4096)), Layout::Plain, Layout::Mtsum];
    for (i, &n) in sizes.iter().enumerate() {
        let bytes = &data[..n];
        let path = write_file(dir.path(), format!("f{i}"), bytes);
        for (threads, cores, chunk) in [
            (1, 1, 64 << 10),
            (2, 1, 3000),
            (3, 64, 64 << 10),
            (2, 64, 4096),
        ] {
            let engine = Engine::new(NonZeroUsize::new(threads).unwrap())
                .with_cores(NonZeroUsize::new(cores).unwrap())
                .with_chunk_size(chunk);
            for alg in [Algorithm::Sha256, Algorithm::Blake3] {
                for layout in layouts {
                    let target = Target::Path(path.clone());
                    let got = engine.hash(&Request::new(layout, alg), target).unwrap();
                    let want = reference::root(layout, alg, bytes);
                    let what = format!("{layout} {alg} -p {threads} on {cores} cores, n={n}");
                    assert_eq!(got.root, want, "{what}");
                }
            }
        }
    }
}

#[test]
fn chunk_size_and_read_ahead_of_zero_mean_one() {
    let data = pattern(3000, 5);
    let dir = TempDir::new().unwrap();
    let path = write_file(dir.path(), "data", &data);
    for layout in [Layout::Mtsum, Layout::Plain, Layout::Rfc6962(leaf(64))] {
        let got = Engine::new(NonZeroUsize::new(2).unwrap())
            .with_chunk_size(0)
            .with_read_ahead(0)
            .hash(
                &Request::new(layout, Algorithm::Md5),
                Target::Path(path.clone()),
            )
            .unwrap();
        assert_eq!(got.root, reference::root(layout, Algorithm::Md5, &data));
    }
}

#[test]
fn merkle_reproduces_the_published_vector_through_the_engine() {
    // DESIGN.md §3.3: 4 194 336 zero bytes (2^22 + 32), L = 64.
    let dir = TempDir::new().unwrap();
    let path = write_file(dir.path(), "zeros", &vec![0u8; (1 << 22) + 32]);
    let request = Request::new(Layout::Merkle(leaf(64)), Algorithm::Sha256);
    for threads in 1..=3 {
        let setup = Setup {
            threads,
            chunk: 1000 * threads,
            read_ahead: threads,
        };
        assert_eq!(
            hash(setup, &request, &path).unwrap().root.to_string(),
            "e9683665a90bd70aabd7705cba57c2be2a4e913a0ca1a14d765497112c178120"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Kept leaves (for drawing the tree)
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn kept_leaves_are_the_leaf_digests_of_the_tree(
        (layout, alg, setup, n) in (layout(), algorithm(), setup()).prop_flat_map(|(l, a, s)| {
            (Just(l), Just(a), Just(s), size_for(l, Some(s.chunk), 1 << 14))
        }),
        seed: u64,
    ) {
        let data = pattern(n as usize, seed);
        let dir = TempDir::new().unwrap();
        let path = write_file(dir.path(), "data", &data);
        let request = Request { keep_leaves: true, ..Request::new(layout, alg) };
        let got = hash(setup, &request, &path).unwrap();
        prop_assert_eq!(got.root, reference::root(layout, alg, &data));
        prop_assert_eq!(got.leaves, Some(reference_leaves(layout, alg, &data)));
    }
}

/// BUG at 4f2b610 (src/engine.rs, `Coordinator::plan`, the `jobs.is_empty()` branch, line 442):
/// an input that has no job at all (an empty file under merkle or rfc6962) was concluded with
/// `leaves: None` whatever `Request::keep_leaves` said, so `mtsum -g -t merkle EMPTY` printed a
/// checksum line instead of a graph. Expected: `Some(vec![])`, the (zero) leaves of its tree.
#[test]
fn kept_leaves_of_an_empty_file_of_a_fixed_leaf_layout_are_an_empty_list() {
    let dir = TempDir::new().unwrap();
    let path = write_file(dir.path(), "empty", b"");
    for layout in [Layout::Merkle(leaf(64)), Layout::Rfc6962(LeafSize::DEFAULT)] {
        let request = Request {
            keep_leaves: true,
            ..Request::new(layout, Algorithm::Sha256)
        };
        let got = Engine::default()
            .hash(&request, Target::Path(path.clone()))
            .unwrap();
        assert_eq!(got.root, Algorithm::Sha256.hash(b""), "{layout}");
        assert_eq!(got.leaves, Some(Vec::new()), "{layout}");
    }
}

#[test]
fn keep_leaves_refuses_more_than_max_kept_leaves() {
    let dir = TempDir::new().unwrap();
    let max = MAX_KEPT_LEAVES as u64;
    let layout = Layout::Rfc6962(leaf(1));
    let request = Request {
        keep_leaves: true,
        ..Request::new(layout, Algorithm::Xxh3)
    };
    let setup = Setup {
        threads: 2,
        chunk: 4096,
        read_ahead: 4,
    };
    let data = pattern(MAX_KEPT_LEAVES + 1, 3);

    let at_max = write_file(dir.path(), "max", &data[..MAX_KEPT_LEAVES]);
    let got = hash(setup, &request, &at_max).unwrap();
    assert_eq!(got.leaves.map(|l| l.len() as u64), Some(max));

    let over = write_file(dir.path(), "over", &data);
    match hash(setup, &request, &over) {
        Err(InputError::TooManyLeaves { leaves, max: m }) => {
            assert_eq!((leaves as u64, m as u64), (max + 1, max));
        }
        other => panic!("expected TooManyLeaves, got {other:?}"),
    }
    // Without keep_leaves the same file hashes fine.
    check_file(layout, Algorithm::Xxh3, setup, &data);
}

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn a_stream_hashes_like_a_file_of_the_same_bytes(
        (layout, alg, setup, n) in (stream_layout(), algorithm(), setup()).prop_flat_map(|(l, a, s)| {
            (Just(l), Just(a), Just(s), size_for(l, Some(s.chunk), 200_000))
        }),
        piece in prop_oneof![Just(1usize), 1usize..=70_000],
        seed: u64,
    ) {
        // A 1-byte writer with a 1-byte reader is a million context switches: cap the writes.
        let piece = if n > 20_000 { piece.max(512) } else { piece };
        let data = pattern(n as usize, seed);
        let dir = TempDir::new().unwrap();
        let fifo = make_fifo(dir.path(), "pipe");
        let writer = feed_fifo(fifo.clone(), data.clone(), piece);
        let got = hash(setup, &Request::new(layout, alg), &fifo);
        writer.join().unwrap();
        let got = got.unwrap();
        prop_assert_eq!(got.root, reference::root(layout, alg, &data), "{} {} {:?} n={}", layout, alg, setup, n);
        prop_assert_eq!(got.size, n);
    }
}

#[test]
fn standard_input_hashes_like_a_file_of_the_same_bytes() {
    // Standard input of this test process becomes the read end of a pipe for the duration
    // of the test (no other test here reads standard input), then is put back.
    let data = pattern(300_001, 9);
    let mut fds = [0; 2];
    // SAFETY: plain descriptor calls on descriptors this test owns; fd 0 is saved and restored.
    let saved = unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        let saved = libc::dup(0);
        assert!(saved >= 0);
        assert_eq!(libc::dup2(fds[0], 0), 0);
        libc::close(fds[0]);
        saved
    };
    let writer = {
        use std::os::fd::FromRawFd;
        // SAFETY: `fds[1]` is the write end of the pipe, owned by this `File` from now on.
        let mut pipe = unsafe { fs::File::from_raw_fd(fds[1]) };
        let data = data.clone();
        thread::spawn(move || {
            for part in data.chunks(7777) {
                pipe.write_all(part).unwrap();
            }
        })
    };
    let layout = Layout::Rfc6962(leaf(100));
    let alg = Algorithm::Sha256;
    let setup = Setup {
        threads: 2,
        chunk: 4096,
        read_ahead: 3,
    };
    let got = setup
        .engine()
        .hash(&Request::new(layout, alg), Target::Stdin);
    writer.join().unwrap();
    // SAFETY: `saved` is the original standard input, duplicated above.
    unsafe {
        assert_eq!(libc::dup2(saved, 0), 0);
        libc::close(saved);
    }
    let got = got.unwrap();
    assert_eq!(got.root, reference::root(layout, alg, &data));
    assert_eq!(got.size, data.len() as u64);
}

#[test]
fn mtsum_layout_on_a_stream_learns_the_length_by_reading_up_to_the_bound() {
    let request = Request::new(Layout::Mtsum, Algorithm::Sha256);
    let held = MAX_HELD_STREAM as usize;
    for len in [0, 1, 100_000, held] {
        let dir = TempDir::new().unwrap();
        let fifo = make_fifo(dir.path(), "pipe");
        let data = pattern(len, 1);
        let writer = feed_fifo(fifo.clone(), data.clone(), 1 << 16);
        let got = Engine::default()
            .hash(&request, Target::Path(fifo))
            .unwrap();
        writer.join().unwrap();
        assert_eq!(
            got.root,
            reference::root(Layout::Mtsum, Algorithm::Sha256, &data)
        );
        assert_eq!(got.size, len as u64);
    }
    // One byte more than can be held: refused, saying why.
    let dir = TempDir::new().unwrap();
    let fifo = make_fifo(dir.path(), "pipe");
    let writer = feed_fifo(fifo.clone(), vec![0; held + 1], 1 << 16);
    let got = Engine::default().hash(&request, Target::Path(fifo));
    writer.join().unwrap();
    assert!(
        matches!(got, Err(InputError::StreamNeedsLength("mtsum"))),
        "{got:?}"
    );
}

#[test]
fn streams_held_for_the_mtsum_layout_beyond_the_bound_wait_for_each_other_and_all_hash() {
    // Two of these reach the bound: the third is opened once they are hashed.
    let len = (MAX_HELD_STREAM / 2 + 1) as usize;
    let dir = TempDir::new().unwrap();
    let (mut targets, mut writers, mut contents) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..3 {
        let fifo = make_fifo(dir.path(), &format!("pipe{i}"));
        let data = pattern(len, i);
        writers.push(feed_fifo(fifo.clone(), data.clone(), 1 << 16));
        targets.push(Target::Path(fifo));
        contents.push(data);
    }
    let request = Request::new(Layout::Mtsum, Algorithm::Sha256);
    let mut results = Vec::new();
    Engine::default().hash_all(&request, targets, |_, r| results.push(r));
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(results.len(), 3);
    for (got, data) in results.into_iter().zip(&contents) {
        let got = got.unwrap();
        assert_eq!(
            got.root,
            reference::root(Layout::Mtsum, Algorithm::Sha256, data)
        );
    }
}

#[test]
fn a_graph_of_a_stream_of_a_fixed_leaf_layout_is_refused() {
    for layout in [Layout::Merkle(leaf(64)), Layout::Rfc6962(leaf(64))] {
        let dir = TempDir::new().unwrap();
        let fifo = make_fifo(dir.path(), "pipe");
        let writer = feed_fifo(fifo.clone(), pattern(1000, 1), 100);
        let request = Request {
            keep_leaves: true,
            ..Request::new(layout, Algorithm::Sha256)
        };
        let got = Engine::default().hash(&request, Target::Path(fifo));
        writer.join().unwrap();
        assert!(matches!(got, Err(InputError::GraphOfStream)), "{got:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Many targets
// ---------------------------------------------------------------------------------------------

/// One target of `hash_all`.
#[derive(Clone, Debug)]
enum Kind {
    /// A regular file of this many bytes.
    File(u64),
    Empty,
    Missing,
    Directory,
    /// A FIFO fed with this many bytes.
    Fifo(u64),
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        6 => prop_oneof![0u64..300, 0u64..=3 << 20].prop_map(Kind::File),
        2 => Just(Kind::Empty),
        2 => Just(Kind::Missing),
        1 => Just(Kind::Directory),
        1 => (0u64..100_000).prop_map(Kind::Fifo),
    ]
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn hash_all_reports_every_target_in_input_order_and_isolates_errors(
        layout in prop_oneof![
            Just(Layout::Mtsum),
            Just(Layout::Plain),
            leaf_size().prop_map(|l| Layout::Merkle(leaf(l.get().max(64)))),
            leaf_size().prop_map(|l| Layout::Rfc6962(leaf(l.get().max(64)))),
        ],
        alg in prop::sample::select(BIG_ALGORITHMS.to_vec()),
        setup in setup().prop_map(|s| Setup { chunk: s.chunk.max(512), ..s }),
        kinds in prop::collection::vec(kind(), 1..24),
        seed: u64,
    ) {
        let dir = TempDir::new().unwrap();
        let mut targets = Vec::new();
        let mut contents = Vec::new();
        let mut writers = Vec::new();
        for (i, kind) in kinds.iter().enumerate() {
            let name = format!("t{i}");
            let (path, data) = match *kind {
                Kind::File(n) => {
                    let data = pattern(n as usize, seed ^ i as u64);
                    (write_file(dir.path(), &name, &data), Some(data))
                }
                Kind::Empty => (write_file(dir.path(), &name, b""), Some(Vec::new())),
                Kind::Missing => (dir.path().join(name), None),
                Kind::Directory => {
                    let path = dir.path().join(name);
                    fs::create_dir(&path).unwrap();
                    (path, None)
                }
                Kind::Fifo(n) => {
                    let data = pattern(n as usize, seed ^ i as u64);
                    let path = make_fifo(dir.path(), &name);
                    writers.push(feed_fifo(path.clone(), data.clone(), 10_000));
                    (path, Some(data))
                }
            };
            targets.push(Target::Path(path));
            contents.push(data);
        }

        let mut results = Vec::new();
        setup.engine().hash_all(&Request::new(layout, alg), targets.clone(), |t, r| {
            results.push((t, r));
        });
        for w in writers {
            w.join().unwrap();
        }

        prop_assert_eq!(results.len(), targets.len(), "one result per target");
        for (i, ((target, result), kind)) in results.iter().zip(&kinds).enumerate() {
            prop_assert_eq!(target, &targets[i], "results come back in input order");
            match (kind, result) {
                (Kind::Missing, Err(InputError::Io(e))) => {
                    prop_assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
                }
                (Kind::Directory, Err(InputError::IsADirectory)) => {}
                (Kind::File(_) | Kind::Empty | Kind::Fifo(_), Ok(got)) => {
                    let data = contents[i].as_ref().unwrap();
                    prop_assert_eq!(got.root, reference::root(layout, alg, data), "target {}: {:?}", i, kind);
                    prop_assert_eq!(got.size, data.len() as u64);
                }
                (kind, result) => {
                    prop_assert!(false, "target {}: {:?} gave {:?}", i, kind, result);
                }
            }
        }
    }
}

/// One task of `Engine::run`: a file to hash with its own request, or a note to pass through.
#[derive(Clone, Debug)]
enum Step {
    Hash(Request, u64),
    Pass,
}

fn step() -> impl Strategy<Value = Step> {
    let hash = (layout(), algorithm(), any::<bool>()).prop_flat_map(|(layout, alg, keep)| {
        // Tiny leaves only on small files: millions of leaves are slow to hash one by one.
        let max = if layout.leaf_size().is_some_and(|l| l.get() < 64) {
            3000
        } else {
            5 << 20
        };
        let n = prop_oneof![3 => 0u64..3000, 1 => 0u64..=max];
        let request = Request {
            keep_leaves: keep,
            ..Request::new(layout, alg)
        };
        (Just(request), n).prop_map(|(r, n)| Step::Hash(r, n))
    });
    prop_oneof![4 => hash, 1 => Just(Step::Pass)]
}

proptest! {
    #![proptest_config(config(32))]

    #[test]
    fn run_hashes_every_task_with_its_own_request_and_passes_notes_through_in_order(
        steps in prop::collection::vec(step(), 1..16),
        setup in setup().prop_map(|s| Setup { chunk: s.chunk.max(512), ..s }),
        seed: u64,
    ) {
        let dir = TempDir::new().unwrap();
        let mut contents = Vec::new();
        let tasks: Vec<Task<usize>> = steps
            .iter()
            .enumerate()
            .map(|(i, step)| match step {
                Step::Hash(request, n) => {
                    let data = pattern(*n as usize, seed ^ i as u64);
                    let path = write_file(dir.path(), format!("t{i}"), &data);
                    contents.push(data);
                    Task::hash(Target::Path(path), request.clone(), i)
                }
                Step::Pass => {
                    contents.push(Vec::new());
                    Task::pass(i)
                }
            })
            .collect();

        let mut results = Vec::new();
        setup.engine().run(tasks, |i, outcome| results.push((i, outcome)));

        prop_assert_eq!(results.len(), steps.len(), "one result per task");
        for (at, (i, outcome)) in results.into_iter().enumerate() {
            prop_assert_eq!(i, at, "results come back in task order");
            let data = &contents[i];
            match (&steps[i], outcome) {
                (Step::Pass, None) => {}
                (Step::Hash(r, _), Some(Err(InputError::TooManyLeaves { leaves, max })))
                    if r.keep_leaves && max == MAX_KEPT_LEAVES =>
                {
                    prop_assert_eq!(leaves, r.layout.jobs(data.len() as u64, true).len());
                    prop_assert!(leaves > max);
                }
                (Step::Hash(r, _), Some(Ok(got))) => {
                    prop_assert_eq!(
                        got.root,
                        reference::root(r.layout, r.algorithm, data),
                        "task {}: {:?}", i, r
                    );
                    prop_assert_eq!(got.size, data.len() as u64);
                    let leaves = r.keep_leaves.then(|| reference_leaves(r.layout, r.algorithm, data));
                    prop_assert_eq!(got.leaves, leaves, "task {}: {:?}", i, r);
                }
                (step, outcome) => prop_assert!(false, "task {}: {:?} gave {:?}", i, step, outcome),
            }
        }
    }
}

#[test]
fn hash_all_of_no_target_reports_nothing() {
    let mut calls = 0;
    Engine::default().hash_all(
        &Request::new(Layout::Mtsum, Algorithm::Sha256),
        std::iter::empty(),
        |_, _| calls += 1,
    );
    assert_eq!(calls, 0);
}

/// A sink that writes what it is told into a log shared with the task source.
struct Recorder<'a>(&'a RefCell<Vec<String>>);

impl Sink<usize> for Recorder<'_> {
    fn take(&mut self, task: usize, outcome: Option<Result<FileDigest, InputError>>) {
        assert!(matches!(outcome, Some(Ok(_))), "task {task}: {outcome:?}");
        self.0.borrow_mut().push(format!("report {task}"));
    }

    fn idle(&mut self) {
        self.0.borrow_mut().push("idle".into());
    }
}

#[test]
fn a_pause_reports_every_earlier_task_and_idles_the_sink_before_the_next_is_taken() {
    let dir = TempDir::new().unwrap();
    let data = |i| write_file(dir.path(), format!("f{i}"), &pattern(1000, i as u64));
    let paths: Vec<PathBuf> = (0..3).map(data).collect();
    let request = Request::new(Layout::Plain, Algorithm::Sha256);
    let log = RefCell::new(Vec::new());
    // A source that would wait after its first two tasks, as a sum file read from a pipe.
    let tasks = [Some(0), Some(1), None, Some(2)].into_iter().map(|step| {
        let Some(i) = step else {
            log.borrow_mut().push("pause".to_string());
            return Task::pause();
        };
        log.borrow_mut().push(format!("take {i}"));
        Task::hash(Target::Path(paths[i].clone()), request.clone(), i)
    });
    Engine::new(NonZeroUsize::new(2).unwrap()).run_to(tasks, Recorder(&log));
    let log = log.into_inner();
    let at = |entry: &str| log.iter().position(|e| e == entry).expect(entry);
    let (pause, next) = (at("pause"), at("take 2"));
    let between = &log[pause..next];
    for entry in ["report 0", "report 1"] {
        assert!(between.contains(&entry.to_string()), "{log:?}");
    }
    assert_eq!(log[next - 1], "idle", "{log:?}");
    let reports: Vec<&String> = log.iter().filter(|e| e.starts_with("report")).collect();
    assert_eq!(reports, ["report 0", "report 1", "report 2"], "{log:?}");
}

// ---------------------------------------------------------------------------------------------
// Cancel
// ---------------------------------------------------------------------------------------------

/// Far longer than any call here takes, even on a loaded machine: only a call that ignores the
/// cancel reaches it. A watchdog that fails the test instead of hanging it, not a timing claim.
const WATCHDOG: Duration = Duration::from_secs(120);

/// Runs `work` on a thread of its own and returns its result, or fails the test if it has
/// not ended within [`WATCHDOG`].
fn within_watchdog<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = thread::spawn(move || {
        let out = work();
        let _ = tx.send(());
        out
    });
    if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(WATCHDOG) {
        panic!("{what} did not end within {WATCHDOG:?}");
    }
    worker
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

#[test]
fn a_cancel_from_another_thread_stops_the_hash_of_a_stream_that_never_ends() {
    let dir = TempDir::new().unwrap();
    let fifo = make_fifo(dir.path(), "pipe");
    let cancel = Arc::new(AtomicBool::new(false));
    // The writer sets the flag once its first block is in the pipe (the hash is under way),
    // then writes until the reader hangs up: only a cancel ends the stream.
    let writer = {
        let (fifo, cancel) = (fifo.clone(), cancel.clone());
        thread::spawn(move || -> std::io::Error {
            let mut pipe = OpenOptions::new().write(true).open(&fifo).unwrap();
            let block = pattern(1 << 16, 1);
            if let Err(e) = pipe.write_all(&block) {
                return e;
            }
            cancel.store(true, Ordering::Relaxed);
            loop {
                if let Err(e) = pipe.write_all(&block) {
                    return e;
                }
            }
        })
    };
    let engine = Engine::new(NonZeroUsize::new(2).unwrap()).with_cancel(cancel);
    let request = Request::new(Layout::Plain, Algorithm::Sha256);
    let got = within_watchdog("the cancelled hash", move || {
        engine.hash(&request, Target::Path(fifo))
    });
    assert!(matches!(got, Err(InputError::Interrupted)), "{got:?}");
    assert_eq!(InputError::Interrupted.to_string(), "interrupted");
    // The reader closed the stream when it gave up.
    let error = within_watchdog("the writer", move || writer.join().unwrap());
    assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
}

#[test]
fn a_cancel_before_run_takes_no_task_and_reports_none() {
    let dir = TempDir::new().unwrap();
    let path = write_file(dir.path(), "data", &pattern(1000, 2));
    let engine = Engine::default().with_cancel(Arc::new(AtomicBool::new(true)));
    let request = Request::new(Layout::Mtsum, Algorithm::Sha256);
    let taken = Cell::new(0);
    let tasks = (0..10).map(|i| {
        taken.set(taken.get() + 1);
        Task::hash(Target::Path(path.clone()), request.clone(), i)
    });
    let mut reported = Vec::new();
    engine.run(tasks, |i, _| reported.push(i));
    assert_eq!((taken.get(), reported), (0, vec![]));
    // The calls for one input say why they have no result.
    let got = engine.hash(&request, Target::Path(path.clone()));
    assert!(matches!(got, Err(InputError::Interrupted)), "{got:?}");
    let got = engine.hash_jobs_in(&request, Target::Path(path.clone()), 1000, 0..1000);
    assert!(matches!(got, Err(InputError::Interrupted)), "{got:?}");
    // Without the flag, the same engine hashes.
    let got = Engine::default()
        .hash(&request, Target::Path(path))
        .unwrap();
    assert_eq!(
        got.root,
        reference::root(Layout::Mtsum, Algorithm::Sha256, &pattern(1000, 2))
    );
}

/// Hashes files of `sizes` with `engine`, cancelled from another thread as soon as the first
/// bytes are hashed, and checks that the inputs reported are the first ones in order, each
/// with its true digest or `Interrupted`: never the digest of the part read before the cancel.
fn check_cancel_midway(engine: Engine, layout: Layout, alg: Algorithm, sizes: &[usize]) {
    let dir = TempDir::new().unwrap();
    let files = write_patterns(dir.path(), sizes);
    let (cancel, progress, ended) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let engine = engine
        .with_cancel(cancel.clone())
        .with_progress(progress.clone());
    let canceller = {
        let ended = ended.clone();
        thread::spawn(move || {
            while progress.load(Ordering::Relaxed) == 0 && !ended.load(Ordering::Relaxed) {
                thread::yield_now();
            }
            cancel.store(true, Ordering::Relaxed);
        })
    };
    let targets: Vec<Target> = files.iter().map(|(p, _)| Target::Path(p.clone())).collect();
    let request = Request::new(layout, alg);
    let got = within_watchdog("the cancelled hash", move || {
        let mut got = Vec::new();
        engine.hash_all(&request, targets, |t, r| got.push((t, r)));
        got
    });
    ended.store(true, Ordering::Relaxed);
    canceller.join().unwrap();
    let what = format!("{layout} {alg}, {} files", sizes.len());
    assert!(got.len() <= files.len(), "{what}");
    for ((target, result), (path, data)) in got.iter().zip(&files) {
        assert_eq!(target, &Target::Path(path.clone()), "{what}");
        match result {
            Ok(d) => {
                assert_eq!(d.root, reference::root(layout, alg, data), "{what}");
                assert_eq!(d.size, data.len() as u64, "{what}");
            }
            Err(InputError::Interrupted) => {}
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

#[test]
fn a_cancel_midway_never_gives_the_digest_of_a_part() {
    let two = NonZeroUsize::new(2).unwrap();
    // One file as a stream of 64-byte reads.
    let engine = Engine::new(two).with_chunk_size(64);
    check_cancel_midway(engine, Layout::Plain, Algorithm::Sha256, &[1 << 20]);
    // Leaves of one message each, read in rounds for lanes where the algorithm has them.
    let engine = Engine::new(two).with_chunk_size(4096);
    check_cancel_midway(engine, Layout::Mtsum, Algorithm::Md5, &[2 << 20, 2 << 20]);
    // Small files, each hashed by the reader that takes it.
    let engine = Engine::new(two);
    check_cancel_midway(engine, Layout::Plain, Algorithm::Sha256, &[4096; 300]);
}

// ---------------------------------------------------------------------------------------------
// The mtsum layout around its 128 MiB leaves
// ---------------------------------------------------------------------------------------------

/// Hashes prefixes of one pattern file, truncating it from the largest size down, with the
/// `mtsum` layout and each algorithm, and checks the root against the reference (and the
/// kept leaves too, for the largest size and the first algorithm).
fn check_mtsum_prefixes(sizes: &[u64], algorithms: &[Algorithm], seed: u64) {
    let mut sizes = sizes.to_vec();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let data = pattern(sizes[0] as usize, seed);
    let dir = TempDir::new().unwrap();
    let path = write_file(dir.path(), "big", &data);
    let file = OpenOptions::new().write(true).open(&path).unwrap();
    let setups = [
        Setup {
            threads: 2,
            chunk: Engine::DEFAULT_CHUNK_SIZE,
            read_ahead: Engine::DEFAULT_READ_AHEAD,
        },
        Setup {
            threads: 3,
            chunk: (1 << 20) + 1,
            read_ahead: 2,
        },
    ];
    for (i, &n) in sizes.iter().enumerate() {
        file.set_len(n).unwrap();
        let bytes = &data[..n as usize];
        for (j, &alg) in algorithms.iter().enumerate() {
            let setup = setups[(i + j) % setups.len()];
            let request = Request {
                keep_leaves: true,
                ..Request::new(Layout::Mtsum, alg)
            };
            let got = hash(setup, &request, &path).unwrap();
            let expected = reference::root(Layout::Mtsum, alg, bytes);
            assert_eq!(got.root, expected, "n={n} {alg} {setup:?}");
            assert_eq!(got.size, n);
            let leaves = got.leaves.unwrap();
            assert_eq!(Layout::Mtsum.root_from_leaves(alg, n, &leaves), expected);
            if i == 0 && j == 0 {
                assert_eq!(leaves, reference_leaves(Layout::Mtsum, alg, bytes), "n={n}");
            }
        }
    }
}

#[test]
fn mtsum_around_128_mib_matches_reference() {
    let m = MTSUM_MAX_LEAF;
    assert_eq!(m, 134_217_728);
    check_mtsum_prefixes(
        &[m - 1, m, m + 1, 2 * m, 2 * m + 1],
        &[Algorithm::Sha256, Algorithm::Md5],
        128,
    );
}

proptest! {
    #![proptest_config(config(3))]

    #[test]
    #[ignore = "large: run with --release -- --include-ignored"]
    fn mtsum_between_128_and_600_mib_matches_reference(
        sizes in prop::collection::vec(134_217_728u64..=600 << 20, 3),
        seed: u64,
    ) {
        check_mtsum_prefixes(&sizes, &[Algorithm::Sha256, Algorithm::Md5], seed);
    }
}

// ---------------------------------------------------------------------------------------------
// Several jobs at once in SIMD lanes
// ---------------------------------------------------------------------------------------------

/// Sizes that end a message at every interesting place: empty, one byte, around a 64- and a
/// 128-byte block (with and without a leaf's prefix byte), around the lanes' 256 KiB reads,
/// and anything up to a few of those reads.
fn lane_message_size() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => prop::sample::select(vec![0u64, 1, 55, 56, 63, 64, 65, 111, 112, 127, 128, 129]),
        2 => (0u64..=3).prop_flat_map(|k| {
            let read = 256 << 10;
            (k * read).saturating_sub(2)..=k * read + 2
        }),
        3 => 0u64..5_000,
        2 => 0u64..1_200_000,
    ]
}

proptest! {
    #![proptest_config(config(32))]

    /// Jobs that are one message each (whole files with `plain`, the leaves of `mtsum`, a
    /// job of one leaf of the fixed-leaf layouts) are hashed several at once in SIMD lanes
    /// when many are queued: a round reads a chunk of every job in a lane, and lanes refill
    /// as jobs end. Whatever the sizes, the thread count, the chunk size and the read mode,
    /// every digest is the reference's, with lanes and without.
    #[test]
    fn jobs_hashed_side_by_side_in_lanes_give_the_reference_digests(
        sizes in prop::collection::vec(lane_message_size(), 1..40),
        layout in prop_oneof![
            Just(Layout::Plain),
            Just(Layout::Mtsum),
            Just(Layout::Rfc6962(leaf(1 << 20))),
        ],
        alg in prop::sample::select(Algorithm::ALL.to_vec()),
        threads in 1usize..=3,
        chunk in prop_oneof![Just(1 << 20), Just(100_000usize), 1usize..=5_000],
        mode in prop::sample::select(vec![ReadMode::Pread, ReadMode::Mmap, ReadMode::Direct]),
        multi_buffer: bool,
        seed: u64,
    ) {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let files: Vec<(PathBuf, Vec<u8>)> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let data = pattern(n as usize, seed ^ i as u64);
                (write_file(dir.path(), format!("f{i}"), &data), data)
            })
            .collect();
        let engine = Engine::new(NonZeroUsize::new(threads).unwrap())
            .with_chunk_size(chunk)
            .with_read_mode(mode)
            .with_multi_buffer(multi_buffer);
        let targets = files.iter().map(|(p, _)| Target::Path(p.clone()));
        let mut got = Vec::new();
        engine.hash_all(&Request::new(layout, alg), targets, |_, r| got.push(r.unwrap().root));
        let expected: Vec<Digest> =
            files.iter().map(|(_, data)| reference::root(layout, alg, data)).collect();
        prop_assert_eq!(got, expected);
    }
}

/// A file of few leaves that are lane jobs (leaves of 512 KiB, each a job of its own) is
/// dealt to as few readers as fill their lanes: one reader's half kernel for up to 16 MD5
/// jobs, 4 SHA-512 ones, the full kernel above, and a lone job as one stream. Around each
/// kernel's widths, and on one to three workers, the root is the reference's.
#[test]
fn a_file_of_few_lane_jobs_hashes_like_the_reference_on_any_worker_count() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let layout = Layout::Rfc6962(leaf(512 << 10));
    for leaves in [1u64, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33] {
        // The last leaf a few bytes short, so that one lane ends before the others.
        let data = pattern((leaves * (512 << 10) - 3) as usize, leaves);
        let path = write_file(dir.path(), "data", &data);
        for alg in [
            Algorithm::Md5,
            Algorithm::Sha1,
            Algorithm::Sha256,
            Algorithm::Sha512,
        ] {
            let expected = reference::root(layout, alg, &data);
            for threads in 1..=3 {
                let engine = Engine::new(NonZeroUsize::new(threads).unwrap());
                let got = engine
                    .hash(&Request::new(layout, alg), Target::Path(path.clone()))
                    .unwrap();
                assert_eq!(got.root, expected, "{alg} {leaves} leaves -p {threads}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Many small files, each hashed whole by the reader that opened it
// ---------------------------------------------------------------------------------------------

/// Many small files go to the readers in batches, and a reader keeps its own lanes full
/// across files and batches, a lane taking the next job as soon as its message ends: far more
/// files than any kernel has lanes, of lengths that end in every lane at different times
/// (empty files, block boundaries, jobs longer than one read of md5's 32 lanes), with a few
/// files too large for one reader among them, give the reference digest of every file, in
/// order, with every thread count and with lanes and without.
#[test]
fn many_small_files_hashed_by_the_readers_that_opened_them_give_the_reference_digests() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut state = 15u64;
    let mut sizes: Vec<usize> = (0..300)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            match (state >> 33) % 10 {
                0 => 0,
                1 => [1, 55, 56, 63, 64, 65, 127, 128, 129][(state >> 40) as usize % 9],
                2 => (128 << 10) + (state >> 50) as usize % 3,
                3 => 300_000 + (state >> 45) as usize % 100_000,
                _ => (state >> 40) as usize % 70_000,
            }
        })
        .collect();
    sizes[7] = (1 << 20) + 1;
    sizes[150] = 3 << 20;
    let files = write_patterns(dir.path(), &sizes);
    let layouts = [Layout::Mtsum, Layout::Plain, Layout::Rfc6962(leaf(1 << 20))];
    for alg in [
        Algorithm::Md5,
        Algorithm::Sha1,
        Algorithm::Sha256,
        Algorithm::Sha512,
        Algorithm::Blake3,
    ] {
        for layout in layouts {
            let expected: Vec<Digest> = files
                .iter()
                .map(|(_, data)| reference::root(layout, alg, data))
                .collect();
            for (threads, multi_buffer) in [(1, true), (2, true), (3, true), (2, false)] {
                let engine = Engine::new(NonZeroUsize::new(threads).unwrap())
                    .with_multi_buffer(multi_buffer);
                let targets = files.iter().map(|(p, _)| Target::Path(p.clone()));
                let mut got = Vec::new();
                engine.hash_all(&Request::new(layout, alg), targets, |t, r| {
                    got.push((t, r.unwrap().root))
                });
                let names: Vec<Target> =
                    files.iter().map(|(p, _)| Target::Path(p.clone())).collect();
                let (order, roots): (Vec<Target>, Vec<_>) = got.into_iter().unzip();
                assert_eq!(order, names, "{alg} {layout} -p {threads}: in input order");
                assert_eq!(
                    roots, expected,
                    "{alg} {layout} -p {threads} lanes {multi_buffer}"
                );
            }
        }
    }
}
