//! Every source gives the reference digest: `pread`, `O_DIRECT`, `RWF_DONTCACHE`, `mmap` and
//! standard input, at every thread count and chunk size, on sizes chosen to hit the edges of
//! each source: 0 and 1 byte, around the `O_DIRECT` alignment (512, 4096), around the chunk
//! size, unaligned tails, and jobs that start between two blocks (the two halves of an odd
//! `mtsum` file, odd leaf sizes of `merkle` and `rfc6962`).
//!
//! Files live under Cargo's target directory, which is on a disk file system, because `/tmp`
//! may be tmpfs; where `O_DIRECT` is refused anyway, the tests say so and check the fallback.

mod common;

use common::{MTSUM, algorithm, config, pattern, write_file};
use std::fs::{self, File};
use std::num::NonZeroUsize;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use mtsum::engine::{Engine, FileDigest, Request};
use mtsum::source::{Input, InputError, ReadMode, Target};
use mtsum::{Algorithm, Digest, Layout, LeafSize, reference};
use proptest::prelude::*;
use tempfile::TempDir;

const MODES: [ReadMode; 4] = [
    ReadMode::Pread,
    ReadMode::Direct,
    ReadMode::DontCache,
    ReadMode::Mmap,
];

/// A temporary directory on the disk that holds Cargo's target directory.
fn disk_dir() -> TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn hash(engine: &Engine, request: &Request, path: &Path) -> Result<FileDigest, InputError> {
    engine.hash(request, Target::Path(path.to_path_buf()))
}

/// What a command printed on stdout, trimmed.
fn printed(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn engine(threads: usize, chunk: usize, mode: ReadMode) -> Engine {
    Engine::new(NonZeroUsize::new(threads).unwrap())
        .with_chunk_size(chunk)
        .with_read_mode(mode)
}

/// Hashes `path` in every mode and checks each root against `expected`; a mode the file
/// system refuses must say what it fell back to.
fn assert_every_mode(
    path: &Path,
    request: &Request,
    threads: usize,
    chunk: usize,
    expected: Digest,
) {
    for mode in MODES {
        let d = hash(&engine(threads, chunk, mode), request, path)
            .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        assert_eq!(
            d.root, expected,
            "{mode:?}, -p {threads}, chunk {chunk}, {} bytes, {}",
            d.size, request.layout
        );
        if let Some(f) = &d.fallback {
            assert_eq!(f.wanted, mode);
            assert_ne!(f.used, mode);
        }
    }
}

/// Sizes at the edges of the sources, with random ones mixed in.
fn size() -> impl Strategy<Value = usize> {
    let edges: Vec<usize> = [0, 1, 2, 511, 512, 513, 4095, 4096, 4097, 8191, 8192, 8193]
        .into_iter()
        .chain([65535, 65536, 65537, 1 << 20, (1 << 20) + 1, (1 << 20) - 1])
        .chain([(3 << 20) + 4097, 3 * 4096 + 1000])
        .collect();
    prop_oneof![
        2 => prop::sample::select(edges),
        1 => 0usize..20_000,
        1 => 0usize..(3 << 20),
    ]
}

/// Chunk sizes: smaller and larger than a block, not multiples of it, and the default.
fn chunk() -> impl Strategy<Value = usize> {
    prop::sample::select(vec![1, 7, 512, 4096, 5000, 65536, 100_000, 1 << 20])
}

fn leaf() -> impl Strategy<Value = LeafSize> {
    prop_oneof![
        prop::sample::select(vec![1u64, 64, 511, 4096, 4097, 1 << 20]),
        1u64..=70_000,
    ]
    .prop_map(|n| LeafSize::new(n).unwrap())
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![
        Just(Layout::Mtsum),
        Just(Layout::Plain),
        leaf().prop_map(Layout::Merkle),
        leaf().prop_map(Layout::Rfc6962),
    ]
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn every_source_and_thread_count_gives_the_reference_digest(
        len in size(),
        seed in any::<u64>(),
        layout in layout(),
        alg in algorithm(),
        threads in 1usize..=3,
        chunk in chunk(),
    ) {
        // Chunks of a few bytes cost a system call each: keep their files small.
        let len = if chunk < 512 { len % 20_000 } else { len };
        let dir = disk_dir();
        let data = pattern(len, seed);
        let path = write_file(dir.path(), "f", &data);
        let expected = reference::root(layout, alg, &data);
        assert_every_mode(&path, &Request::new(layout, alg), threads, chunk, expected);
    }
}

proptest! {
    #![proptest_config(config(12))]

    /// The command line: `--direct` and `--mmap` on a file, and on standard input: a file (from
    /// its start, and from an offset, as after something read up to it), read as the flag says
    /// (but `O_DIRECT`, which its shared open file refuses), and a pipe, a stream whatever the
    /// flag says.
    #[test]
    fn the_command_line_sources_and_stdin_give_the_reference_digest(
        len in size(),
        seed in any::<u64>(),
        alg in algorithm(),
        p in 1usize..=3,
    ) {
        let dir = disk_dir();
        let data = pattern(len, seed);
        let path = write_file(dir.path(), "f", &data);
        for layout in [Layout::Plain, Layout::Rfc6962(LeafSize::new(4096).unwrap()), Layout::Mtsum] {
            // A CRC has no tree: the command line refuses it (tests/storage.rs).
            if layout.check_algorithm(alg).is_err() {
                continue;
            }
            let expected = reference::root(layout, alg, &data).to_hex();
            let mut args = vec![
                "-p".to_string(), p.to_string(), "-a".into(), alg.name().into(),
                "-t".into(), layout.name().into(), "--no-names".into(),
            ];
            if let Some(l) = layout.leaf_size() {
                args.extend(["-l".to_string(), l.to_string()]);
            }
            for flag in [None, Some("--direct"), Some("--mmap")] {
                let mut cmd_args = args.clone();
                cmd_args.extend(flag.map(String::from));
                let out = Command::new(MTSUM).args(&cmd_args).arg(&path).output().unwrap();
                prop_assert_eq!(printed(&out), expected.clone(), "{:?}", flag);
                // Standard input redirected from the file, then fed through a pipe.
                let out = Command::new(MTSUM).args(&cmd_args)
                    .stdin(File::open(&path).unwrap()).output().unwrap();
                prop_assert_eq!(printed(&out), expected.clone());
                let offset = len / 3;
                let mut stdin = File::open(&path).unwrap();
                std::io::Seek::seek(&mut stdin, std::io::SeekFrom::Start(offset as u64)).unwrap();
                let out = Command::new(MTSUM).args(&cmd_args).stdin(stdin).output().unwrap();
                let rest = reference::root(layout, alg, &data[offset..]).to_hex();
                prop_assert_eq!(printed(&out), rest, "{:?} from {}", flag, offset);
                let mut child = Command::new(MTSUM).args(&cmd_args)
                    .stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
                let mut stdin = child.stdin.take().unwrap();
                let feed = data.clone();
                let writer = thread::spawn(move || common::feed(&mut stdin, &feed));
                let out = child.wait_with_output().unwrap();
                writer.join().unwrap();
                prop_assert_eq!(printed(&out), expected.clone());
            }
        }
    }
}

/// The edges one by one, with the default 1 MiB chunks and with 4 KiB chunks (so that the
/// edges of chunks and of blocks coincide).
#[test]
fn sizes_at_the_alignment_and_chunk_edges_give_the_reference_digest() {
    let dir = disk_dir();
    let mb = 1usize << 20;
    let sizes = [
        0,
        1,
        511,
        512,
        513,
        4095,
        4096,
        4097,
        mb - 1,
        mb,
        mb + 1,
        2 * mb + 4095,
    ];
    for (i, len) in sizes.into_iter().enumerate() {
        let data = pattern(len, i as u64);
        let path = write_file(dir.path(), format!("f{i}"), &data);
        for layout in [
            Layout::Mtsum,
            Layout::Plain,
            Layout::Rfc6962(LeafSize::new(4097).unwrap()),
        ] {
            let request = Request::new(layout, Algorithm::Sha256);
            let expected = reference::root(layout, Algorithm::Sha256, &data);
            for (threads, chunk) in [(1, mb), (2, mb), (3, 4096)] {
                assert_every_mode(&path, &request, threads, chunk, expected);
            }
        }
    }
}

#[test]
fn direct_reads_say_why_when_the_file_system_refuses_them() {
    let dir = disk_dir();
    let path = write_file(dir.path(), "f", &pattern(10_000, 1));
    let request = Request::new(Layout::Plain, Algorithm::Sha256);
    let d = hash(&engine(1, 1 << 20, ReadMode::Direct), &request, &path).unwrap();
    match &d.fallback {
        None => eprintln!("O_DIRECT used in {}", dir.path().display()),
        Some(f) => {
            eprintln!("O_DIRECT refused in {}: {f}", dir.path().display());
            assert!(f.to_string().starts_with("O_DIRECT unavailable ("), "{f}");
        }
    }
    // ramfs never takes O_DIRECT; it is only there when this runs as root with ramfs at hand.
    let ramfs = dir.path().join("ramfs");
    fs::create_dir(&ramfs).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "ramfs", "ramfs"])
        .arg(&ramfs)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped the ramfs case: cannot mount ramfs here");
        return;
    }
    let path = write_file(&ramfs, "f", &pattern(10_000, 1));
    let d = hash(&engine(1, 1 << 20, ReadMode::Direct), &request, &path);
    let out = common::run::run_cmd(
        assert_cmd::Command::new(MTSUM)
            .args(["--direct", "--verbose", "--no-names"])
            .arg(&path),
    );
    let _ = Command::new("umount").arg(&ramfs).status();
    let d = d.unwrap();
    let f = d.fallback.expect("ramfs refuses O_DIRECT");
    assert_eq!((f.wanted, f.used), (ReadMode::Direct, ReadMode::Pread));
    assert_eq!(
        f.to_string(),
        "O_DIRECT unavailable (Invalid argument); read through the page cache instead"
    );
    let stderr = out.stderr();
    assert!(
        stderr.contains(&format!("{}: O_DIRECT unavailable", path.display())),
        "{stderr}"
    );
    assert_eq!(
        out.stdout().trim(),
        reference::root(Layout::Mtsum, Algorithm::Sha256, &pattern(10_000, 1)).to_hex()
    );
}

/// Pages of `path` in the page cache.
fn cached_pages(path: &Path) -> usize {
    let (resident, _) = mtsum::audit::plan::resident_pages(path, u64::MAX).unwrap();
    resident as usize
}

/// Writes the file out and drops it from the page cache.
fn evict(path: &Path) {
    let file = File::open(path).unwrap();
    file.sync_all().unwrap();
    // SAFETY: an advice on our open descriptor.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

#[test]
fn direct_and_dontcache_reads_leave_the_page_cache_clean() {
    let dir = disk_dir();
    let data = pattern(8 << 20, 9);
    let path = write_file(dir.path(), "f", &data);
    let request = Request::new(Layout::Mtsum, Algorithm::Xxh3);
    let expected = reference::root(Layout::Mtsum, Algorithm::Xxh3, &data);
    evict(&path);
    if cached_pages(&path) != 0 {
        eprintln!("skipped: this file system keeps the file cached (tmpfs?)");
        return;
    }
    for mode in [ReadMode::Direct, ReadMode::DontCache, ReadMode::Pread] {
        evict(&path);
        let d = hash(&engine(2, 1 << 20, mode), &request, &path).unwrap();
        assert_eq!(d.root, expected);
        let cached = cached_pages(&path);
        match (mode, &d.fallback) {
            (_, Some(f)) => eprintln!("{mode:?} not tested: {f}"),
            (ReadMode::Pread, None) => assert!(cached > 0, "pread reads through the cache"),
            // RWF_DONTCACHE drops the pages once read; a page or two may still be on the way.
            (_, None) => assert!(cached <= 2, "{mode:?} left {cached} pages cached"),
        }
    }
}

/// A file truncated while it is hashed from memory maps: the process survives (no SIGBUS
/// death) and the input is reported as changed, never with a digest. Once as one stream
/// (`plain`), once as two leaves side by side in SIMD lanes (`mtsum` with MD5).
#[test]
fn a_file_truncated_while_mapped_is_reported_as_changed() {
    for (layout, alg) in [
        (Layout::Plain, Algorithm::Sha512),
        (Layout::Mtsum, Algorithm::Md5),
    ] {
        truncate_while_hashed(layout, alg, ReadMode::Mmap, 1 << 20);
    }
}

/// Plain BLAKE3 is hashed as 4 MiB subtrees: those read after the file was cut get no bytes,
/// and their hashers (which have no digest of nothing) must not panic before the engine
/// reports the change. Small reads keep one worker busy long enough to cut the file mid-way.
#[test]
fn a_plain_blake3_file_truncated_while_read_in_subtrees_is_reported_as_changed() {
    truncate_while_hashed(Layout::Plain, Algorithm::Blake3, ReadMode::Pread, 4096);
}

fn truncate_while_hashed(layout: Layout, alg: Algorithm, mode: ReadMode, chunk: usize) {
    let dir = disk_dir();
    let len = 192usize << 20;
    let data = pattern(len, 5);
    let path = write_file(dir.path(), "f", &data);
    let mut changed = 0;
    for round in 0..3 {
        fs::write(&path, &data).unwrap();
        let hashed = Arc::new(AtomicU64::new(0));
        // One worker takes a few hundred ms for 192 MiB: time to truncate mid-way.
        let engine = engine(1, chunk, mode).with_progress(hashed.clone());
        let request = Request::new(layout, alg);
        let target = path.clone();
        let run = thread::spawn(move || hash(&engine, &request, &target));
        let started = Instant::now();
        while hashed.load(Ordering::Relaxed) < 8 << 20
            && started.elapsed() < Duration::from_secs(20)
        {
            thread::yield_now();
        }
        // Truncated to nothing: every window in flight loses its pages.
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        match run.join().expect("the hashing thread survives") {
            Err(InputError::Changed) => changed += 1,
            Ok(d) => {
                // Hashed to the end before the truncation landed: then it is the whole file.
                assert_eq!(d.root, reference::root(layout, alg, &data));
                eprintln!("{layout} {alg} round {round}: hashed before the truncation");
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert!(changed > 0, "{layout} {alg}: no round saw the truncation");
}

/// The same through the command line: exit status 1 and `changed while being read`.
#[test]
fn the_command_line_reports_a_file_truncated_under_mmap() {
    let dir = disk_dir();
    let data = pattern(192 << 20, 6);
    let path = write_file(dir.path(), "f", &data);
    let child = Command::new(MTSUM)
        .args(["--mmap", "-p", "1", "-a", "sha512", "-t", "plain"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    thread::sleep(Duration::from_millis(60));
    File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(1) => assert!(stderr.ends_with(": changed while being read\n"), "{stderr}"),
        // Hashed whole before the truncation, or opened after it (an empty file).
        Some(0) => {
            let printed = String::from_utf8_lossy(&out.stdout);
            let digest = printed.split_whitespace().next().unwrap_or_default();
            let (whole, empty) = (&data[..], &data[..0]);
            let possible = [whole, empty]
                .map(|d| reference::root(Layout::Plain, Algorithm::Sha512, d).to_hex());
            assert!(possible.iter().any(|p| p == digest), "{printed}");
            eprintln!("the truncation missed");
        }
        other => panic!("killed or failed: {other:?} {stderr}"),
    }
}

#[test]
fn a_file_target_replaced_by_a_fifo_is_refused_without_waiting_for_a_writer() {
    // What `-r` and the audit open: a path the walk found as a regular file. A FIFO in its
    // place would block `open` until some process wrote to it; here none ever does.
    let dir = disk_dir();
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo {}", fifo.display());
    let (tx, rx) = std::sync::mpsc::channel();
    let target = Target::File(fifo.clone());
    thread::spawn(move || tx.send(Input::open(&target).map(|_| ())));
    // Generous: a refusal takes microseconds, a hang never ends.
    let opened = rx.recv_timeout(Duration::from_secs(60));
    if opened.is_err() {
        // Lets the blocked open return, so that the thread ends.
        let _ = File::options().write(true).open(&fifo);
    }
    assert!(
        matches!(opened, Ok(Err(InputError::NotRegular))),
        "{opened:?}"
    );
    assert_eq!(InputError::NotRegular.to_string(), "not a regular file");
}

#[test]
fn a_file_target_that_is_a_regular_file_hashes_as_a_path_does() {
    let dir = disk_dir();
    let data = pattern(100_000, 7);
    let path = write_file(dir.path(), "data", &data);
    let request = Request::new(Layout::Plain, Algorithm::Sha256);
    let engine = engine(2, 4096, ReadMode::Pread);
    let as_file = engine.hash(&request, Target::File(path.clone())).unwrap();
    let as_path = hash(&engine, &request, &path).unwrap();
    assert_eq!(as_file.root, as_path.root);
    assert_eq!(
        as_file.root,
        reference::root(Layout::Plain, Algorithm::Sha256, &data)
    );
}
