//! Side outputs of the engine ([`Side`]): more digests of the bytes of one read (an audit's
//! migration digest and outboard leaves) must be exactly the reference's of the same bytes,
//! whatever the layouts, lengths, threads and chunk sizes, and the request's own digest must
//! not change for them. BLAKE3 subtree leaves joined into the plain BLAKE3 digest (one hash
//! for both) must be `blake3::hash` and the crate's own chaining values at every boundary, and
//! locate a flipped byte. Also: outcomes as they are done ([`Engine::run_as_done_to`]), and the
//! stamp a result carries.

use std::fs;
use std::io::Write;
use std::num::NonZeroUsize;
use std::path::Path;

use blake3::hazmat::HasherExt;
use mtsum::engine::{Engine, FileDigest, Leaves, Request, Side, Task};
use mtsum::layout::PartSize;
use mtsum::source::{InputError, Stamp, Target};
use mtsum::{Algorithm, Layout, LeafSize, reference};
use proptest::prelude::*;

fn leaf(bytes: u64) -> LeafSize {
    LeafSize::new(bytes).unwrap()
}

fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

fn engines() -> Vec<Engine> {
    let n = |t| NonZeroUsize::new(t).unwrap();
    vec![
        Engine::new(n(1)),
        Engine::new(n(2)).with_chunk_size(4096),
        Engine::new(n(3)).with_chunk_size(7 << 10),
        // Two cores whatever the machine has: a job read alone shares its layouts among
        // two threads.
        Engine::new(n(2)).with_multi_buffer(false).with_cores(n(2)),
    ]
}

/// Every leaf digest of `layout` over `data`, by the definition.
fn reference_leaves(layout: Layout, alg: Algorithm, data: &[u8]) -> Vec<mtsum::Digest> {
    let leaf = layout.leaf_size().unwrap().get() as usize;
    data.chunks(leaf)
        .map(|part| layout.hash_leaf(alg, part))
        .collect()
}

/// The chaining values of BLAKE3's subtrees of `size` bytes over `data`, by the crate itself.
fn blake3_subtrees(size: u64, data: &[u8]) -> Vec<mtsum::Digest> {
    (data.chunks(size as usize).enumerate())
        .map(|(i, part)| {
            let cv = blake3::Hasher::new()
                .set_input_offset(i as u64 * size)
                .update(part)
                .finalize_non_root();
            mtsum::Digest::from_slice(&cv)
        })
        .collect()
}

/// What [`Side::leaves`] gives over `data`, by the definitions.
fn expected_leaves(leaves: Leaves, data: &[u8]) -> Vec<mtsum::Digest> {
    match leaves {
        Leaves::Layout(layout, alg) => reference_leaves(layout, alg, data),
        Leaves::Blake3Subtrees(size) => blake3_subtrees(size.get(), data),
    }
}

/// Checks every digest of one read of `path` (holding `data`) against the reference.
fn check(engine: &Engine, path: &Path, data: &[u8], request: Request) {
    let what = format!("{} bytes, {request:?}", data.len());
    let got = engine
        .hash(&request, Target::File(path.to_path_buf()))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let (layout, alg) = (request.layout, request.algorithm);
    assert_eq!(
        got.root,
        reference::checksum(layout, alg, data).unwrap(),
        "{what}"
    );
    assert_eq!(got.size, data.len() as u64, "{what}");
    let side = &request.side;
    let digests: Vec<_> = (side.digests.iter())
        .map(|&(layout, alg)| reference::checksum(layout, alg, data).unwrap())
        .collect();
    assert_eq!(got.side.digests, digests, "{what}");
    let leaves = side.leaves.map(|leaves| expected_leaves(leaves, data));
    assert_eq!(got.side.leaves, leaves, "{what}");
    if request.keep_leaves {
        assert_eq!(
            got.leaves,
            Some(reference_leaves(layout, alg, data)),
            "{what}"
        );
    }
    let meta = fs::metadata(path).unwrap();
    assert_eq!(got.stamp, Some(Stamp::of(&meta)), "{what}");
}

#[test]
fn side_digests_and_leaves_of_one_read_are_the_references() {
    let dir = tempfile::tempdir().unwrap();
    let outboard = Leaves::Layout(Layout::Rfc6962(leaf(64 << 10)), Algorithm::Blake3);
    // Finer than plain BLAKE3's 4 MiB pieces, which then join from them, and coarser.
    let (subtrees, coarse) = (
        Leaves::Blake3Subtrees(leaf(64 << 10)),
        Leaves::Blake3Subtrees(leaf(8 << 20)),
    );
    let mains = [
        (Layout::Plain, Algorithm::Blake3),
        (Layout::Plain, Algorithm::Sha256),
        (Layout::Plain, Algorithm::Crc32c),
        (Layout::Mtsum, Algorithm::Sha256),
        (Layout::Merkle(leaf(4096)), Algorithm::Md5),
        (Layout::Rfc6962(leaf(1 << 20)), Algorithm::Blake3),
        (Layout::Glacier, Algorithm::Sha256),
        (Layout::S3(PartSize::new(5 << 20).unwrap()), Algorithm::Md5),
    ];
    let sides = [
        Side {
            digests: Vec::new(),
            leaves: Some(outboard),
            xattr: None,
        },
        Side {
            digests: vec![(Layout::Plain, Algorithm::Sha256)],
            leaves: None,
            xattr: None,
        },
        Side {
            digests: vec![(Layout::Mtsum, Algorithm::Blake3)],
            leaves: Some(outboard),
            xattr: None,
        },
        Side {
            digests: vec![
                (Layout::Glacier, Algorithm::Sha256),
                (Layout::Plain, Algorithm::Xxh3),
                (Layout::Merkle(leaf(4096)), Algorithm::Sha1),
            ],
            leaves: None,
            xattr: None,
        },
        Side {
            digests: Vec::new(),
            leaves: Some(subtrees),
            xattr: None,
        },
        Side {
            digests: vec![(Layout::Plain, Algorithm::Blake3)],
            leaves: Some(coarse),
            xattr: None,
        },
    ];
    // Around a leaf, a read, BLAKE3's 4 MiB subtrees (shared among workers), a part.
    let lens = [0, 1, 4095, 65_537, (1 << 20) + 3, (9 << 20) + 5];
    let engines = engines();
    for (n, len) in lens.into_iter().enumerate() {
        let bytes = data(len);
        let path = dir.path().join(n.to_string());
        fs::write(&path, &bytes).unwrap();
        for (i, &(layout, alg)) in mains.iter().enumerate() {
            for (j, side) in sides.iter().enumerate() {
                let request = Request {
                    side: side.clone(),
                    // The tree's own leaves beside the side outputs, now and then.
                    keep_leaves: matches!(layout, Layout::Merkle(_) | Layout::Rfc6962(_))
                        && len > 0
                        && (i + j) % 2 == 0,
                    ..Request::new(layout, alg)
                };
                if layout.check_size(len as u64).is_err() {
                    continue;
                }
                check(
                    &engines[(n + i + j) % engines.len()],
                    &path,
                    &bytes,
                    request,
                );
            }
        }
    }
}

/// The part sizes `-c --part-size auto` tries for a value: 16 side digests (S3's sizes, which
/// share no boundary), each the digest its layout gives alone, at sizes around part
/// boundaries and one drawn at random; in one read (in a lane set, with a whole-file digest
/// beside them too), and two of them, read once per size from a local file where each cuts
/// it into several parts.
#[test]
fn each_of_many_side_digests_is_the_digest_of_its_layout_alone() {
    const MIB: u64 = 1 << 20;
    let s3 = |bytes: u64| (Layout::S3(PartSize::new(bytes).unwrap()), Algorithm::Md5);
    let parts: Vec<(Layout, Algorithm)> = [5 * MIB, 8 * MIB, 15 * MIB, 16 * MIB]
        .into_iter()
        .chain([6_000_000, 7_000_000, 9_000_000, 5 * MIB + 1, 11 * MIB])
        .chain((12..18).map(|m| m * 1_000_000 + 7))
        .map(s3)
        .collect();
    let mut with_whole = parts.clone();
    with_whole.push((Layout::Plain, Algorithm::Md5));
    let main = s3(10 * MIB);
    // A "random" size up to 20 MiB (a fixed seed), beside 0, 1, part boundaries and 18 MiB,
    // where every size cuts the file into two parts or more.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    let lens = [0, 1, 5 * MIB + 1, 15 * MIB, 18 * MIB, seed % (20 * MIB)];
    let dir = tempfile::tempdir().unwrap();
    let engines = engines();
    for (n, len) in lens.into_iter().enumerate() {
        let bytes = data(len as usize);
        let path = dir.path().join(n.to_string());
        fs::write(&path, &bytes).unwrap();
        let engine = &engines[n % engines.len()];
        let alone = |(layout, alg): (Layout, Algorithm)| {
            let request = Request::new(layout, alg);
            let target = Target::File(path.clone());
            engine.hash(&request, target).unwrap().root
        };
        for digests in [&parts[..], &with_whole, &parts[..2]] {
            let request = Request {
                side: Side {
                    digests: digests.to_vec(),
                    leaves: None,
                    xattr: None,
                },
                ..Request::new(main.0, main.1)
            };
            let got = engine
                .hash(&request, Target::File(path.clone()))
                .unwrap_or_else(|e| panic!("{len}: {e}"));
            assert_eq!(got.root, alone(main), "{len} bytes");
            let each: Vec<_> = digests.iter().map(|&spec| alone(spec)).collect();
            assert_eq!(
                got.side.digests,
                each,
                "{len} bytes, {} digests",
                each.len()
            );
            assert_eq!(got.size, len);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// One hash for both: the plain BLAKE3 digest joined from BLAKE3 subtree leaves (or the
    /// leaves joined from its 4 MiB pieces, where they are coarser) at 0, 1, a chunk ± 1, a
    /// leaf ± 1, powers of two of leaves ± 1 and a random length; and a flipped byte changes
    /// its leaf's chaining value and no other.
    #[test]
    fn plain_blake3_joined_from_subtree_leaves_is_blake3_and_the_leaves_locate_a_flipped_byte(
        shift in prop::sample::select(vec![10u32, 12, 16, 20, 23]),
        pick in 0usize..14,
        random in 0usize..(10 << 20),
        flip in any::<usize>(),
        e in 0usize..4,
    ) {
        let size = 1usize << shift;
        let lens = [0, 1, 1023, 1024, 1025, size - 1, size, size + 1, 2 * size - 1,
            2 * size + 1, 4 * size - 1, 4 * size + 1, 8 * size + 1, random];
        let len = lens[pick].min(20 << 20);
        let mut bytes = data(len);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, &bytes).unwrap();
        let leaves = Leaves::Blake3Subtrees(leaf(size as u64));
        let request = Request {
            side: Side { digests: Vec::new(), leaves: Some(leaves), xattr: None },
            ..Request::new(Layout::Plain, Algorithm::Blake3)
        };
        let engine = &engines()[e];
        let got = engine.hash(&request, Target::File(path.clone())).unwrap();
        let blake3 = blake3::hash(&bytes);
        prop_assert_eq!(got.root.digest().as_bytes(), blake3.as_bytes());
        let recorded = got.side.leaves.unwrap();
        prop_assert_eq!(&recorded, &blake3_subtrees(size as u64, &bytes));
        if len > 0 {
            let at = flip % len;
            bytes[at] ^= 0x20;
            fs::write(&path, &bytes).unwrap();
            let now = engine.hash(&request, Target::File(path)).unwrap().side.leaves.unwrap();
            let differ: Vec<usize> = (0..now.len()).filter(|&i| now[i] != recorded[i]).collect();
            prop_assert_eq!(differ, vec![at / size]);
        }
    }
}

#[test]
fn a_side_digest_of_a_stream_is_the_references_and_it_has_no_leaves_or_stamp() {
    let bytes = data(300_000);
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let writer = {
        let (fifo, bytes) = (fifo.clone(), bytes.clone());
        std::thread::spawn(move || fs::File::create(fifo).unwrap().write_all(&bytes))
    };
    let side = Side {
        // One that takes a stream, and one that needs the length: the stream is held.
        digests: vec![(Layout::Mtsum, Algorithm::Sha256)],
        leaves: Some(Leaves::Layout(
            Layout::Rfc6962(leaf(4096)),
            Algorithm::Blake3,
        )),
        xattr: None,
    };
    let request = Request {
        side,
        ..Request::new(Layout::Plain, Algorithm::Blake3)
    };
    let got = Engine::default()
        .hash(&request, Target::Path(fifo))
        .unwrap();
    writer.join().unwrap().unwrap();
    assert_eq!(
        got.root,
        reference::checksum(Layout::Plain, Algorithm::Blake3, &bytes).unwrap()
    );
    let mtsum = reference::checksum(Layout::Mtsum, Algorithm::Sha256, &bytes).unwrap();
    assert_eq!(got.side.digests, [mtsum]);
    assert_eq!(
        (got.side.leaves, got.stamp, got.size),
        (None, None, bytes.len() as u64)
    );
}

#[test]
fn a_side_digest_with_no_value_for_the_file_fails_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    fs::write(&empty, b"").unwrap();
    let request = Request {
        side: Side {
            digests: vec![(Layout::Btv2, Algorithm::Sha256)],
            leaves: None,
            xattr: None,
        },
        ..Request::new(Layout::Plain, Algorithm::Blake3)
    };
    let e = Engine::default()
        .hash(&request, Target::File(empty))
        .unwrap_err();
    assert!(matches!(e, InputError::NoRoot(_)), "{e}");
}

#[test]
fn as_done_the_sink_takes_every_outcome_once_with_its_context() {
    let dir = tempfile::tempdir().unwrap();
    let mut tasks = Vec::new();
    for i in 0..200usize {
        if i % 9 == 4 {
            tasks.push(Task::pass(i));
            continue;
        }
        let path = dir.path().join(i.to_string());
        // One large file early, which small ones after it finish before.
        let len = if i == 1 { 6 << 20 } else { i * 100 };
        fs::write(&path, data(len)).unwrap();
        let request = Request::new(Layout::Plain, Algorithm::Sha256);
        tasks.push(Task::hash(Target::File(path), request, i));
    }
    let mut seen = Vec::new();
    let engine = Engine::new(NonZeroUsize::new(2).unwrap());
    engine.run_as_done_to(
        tasks,
        |i: usize, outcome: Option<Result<FileDigest, InputError>>| {
            let size = outcome.map(|r| r.unwrap().size);
            let len = if i == 1 { 6 << 20 } else { i as u64 * 100 };
            assert_eq!(size, (i % 9 != 4).then_some(len), "{i}");
            seen.push(i);
        },
    );
    seen.sort_unstable();
    assert_eq!(seen, (0..200).collect::<Vec<_>>());
}

#[test]
fn an_extended_attribute_is_read_from_the_file_the_read_opens_and_changes_no_digest() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = data(300_000);
    let path = dir.path().join("f");
    fs::write(&path, &bytes).unwrap();
    if xattr::set(&path, "user.kept", b"a record").is_err() {
        return eprintln!("SKIPPED: no user extended attributes here");
    }
    let long = dir.path().join("long");
    fs::write(&long, &bytes).unwrap();
    xattr::set(&long, "user.kept", &[7; 200]).unwrap();
    let read = |path: &Path, name| {
        let request = Request {
            side: Side {
                xattr: Some(name),
                ..Side::default()
            },
            ..Request::new(Layout::Plain, Algorithm::Blake3)
        };
        let got = Engine::default()
            .hash(&request, Target::File(path.to_path_buf()))
            .unwrap();
        assert_eq!(
            got.root,
            reference::root(Layout::Plain, Algorithm::Blake3, &bytes)
        );
        got.side.xattr.map(|v| v.map(|v| v.as_bytes().to_vec()))
    };
    assert_eq!(read(&path, "user.kept"), Some(Some(b"a record".to_vec())));
    // A file without it says so; a value too long to hold is left for a read by path.
    assert_eq!(read(&path, "user.other"), Some(None));
    assert_eq!(read(&long, "user.kept"), None);
}
