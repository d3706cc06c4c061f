//! Multi-buffer hashing (`mtsum::lanes`) against the one-stream path, `Algorithm::hash`: md5,
//! sha1, sha224, sha256, sha384 and sha512, every kernel this CPU runs (the portable ones
//! always, SIMD ones where present), every lane; the published vectors, lengths ending at every
//! position of a block, prefixes, random mixes of lengths, chunkings and call orders, and the
//! roots of the fixed-leaf layouts with lanes on and off, and of the `mtsum` command under every
//! kernel cap (`MTSUM_SIMD`).

mod common;

use common::{HashVector, hash_vectors, job_in_chunks, line_gap};
use mtsum::lanes::{self, Event, Kernel, Lane, Lanes};
use mtsum::{Algorithm, Digest, Layout, LeafSize, reference};
use proptest::prelude::*;

/// The algorithms that lane sets hash: the Merkle–Damgård ones.
const ALGORITHMS: [Algorithm; 6] = [
    Algorithm::Md5,
    Algorithm::Sha1,
    Algorithm::Sha224,
    Algorithm::Sha256,
    Algorithm::Sha384,
    Algorithm::Sha512,
];

/// Bytes per block of `alg`.
fn block(alg: Algorithm) -> usize {
    match alg {
        Algorithm::Sha384 | Algorithm::Sha512 => 128,
        _ => 64,
    }
}

/// Bytes that differ from message to message and from position to position.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Every kernel of `alg` this CPU runs, portable first.
fn kernels(alg: Algorithm) -> Vec<Kernel> {
    let kernels = Kernel::available(alg);
    if kernels.len() == 1 {
        eprintln!("note: no SIMD kernel of {alg} on this CPU; only the portable one is tested");
    }
    kernels
}

/// Every kernel of every algorithm.
fn all_kernels() -> Vec<Kernel> {
    ALGORITHMS.into_iter().flat_map(kernels).collect()
}

/// Every digest `poll` hands back, by tag, checking that each pushed chunk comes back once.
fn drain<B: AsRef<[u8]>>(set: &mut Lanes<usize, B>, count: usize, pushed: usize) -> Vec<Digest> {
    let mut digests = vec![None; count];
    let mut consumed = 0;
    while let Some(event) = set.poll() {
        match event {
            Event::Finished(i, d) => {
                assert!(
                    digests[i].replace(d).is_none(),
                    "message {i} finished twice"
                );
            }
            Event::Consumed(_) => consumed += 1,
        }
    }
    assert_eq!(consumed, pushed, "every chunk is handed back once");
    assert_eq!(set.busy_lanes(), 0);
    digests
        .into_iter()
        .map(|d| d.expect("every message finished"))
        .collect()
}

#[test]
fn kernels_exist_for_the_merkle_damgard_algorithms_with_their_lane_counts() {
    for (alg, lanes) in [
        (Algorithm::Md5, 32),
        (Algorithm::Sha1, 8),
        (Algorithm::Sha224, 16),
        (Algorithm::Sha256, 16),
        (Algorithm::Sha384, 16),
        (Algorithm::Sha512, 16),
    ] {
        let portable = Kernel::portable(alg).expect("a portable kernel");
        assert_eq!(portable.algorithm(), alg);
        assert_eq!(portable.name(), format!("{alg}-portable"));
        assert_eq!(portable.lanes(), lanes);
        assert_eq!(Kernel::available(alg)[0], portable, "portable first");
        for kernel in Kernel::available(alg) {
            assert_eq!(kernel.algorithm(), alg, "{kernel}");
            assert!(kernel.name().starts_with(alg.name()), "{kernel}");
            assert_eq!(kernel.to_string(), kernel.name());
            assert_eq!(Lanes::<usize>::with_kernel(kernel).kernel(), kernel);
        }
        if let Some(chosen) = Kernel::multi_buffer(alg) {
            assert_ne!(
                chosen, portable,
                "the portable kernel is no faster than one stream"
            );
            assert!(Kernel::available(alg).contains(&chosen), "{chosen}");
            // The portable kernel has the lanes of the widest kernel any CPU may choose, and
            // every choice a whole fraction of them (SHA-NI's 4 SHA-1 lanes where AVX2 has 8).
            assert!(lanes.is_multiple_of(chosen.lanes()), "{chosen}");
        }
    }
    for alg in [Algorithm::Blake3, Algorithm::Xxh3, Algorithm::Xxh128] {
        assert_eq!(Kernel::portable(alg), None, "{alg}");
        assert_eq!(Kernel::multi_buffer(alg), None, "{alg}");
        assert!(Kernel::available(alg).is_empty(), "{alg}");
    }
}

/// Hashes `vectors` with `kernel` so that over the rounds every vector is in every lane, next
/// to different vectors each time: round `r` puts the `k`-th vector of each batch of
/// `lanes` in lane `(k + r) % lanes`, and lanes without a vector get a message of their own.
fn check_vectors_in_every_lane(kernel: Kernel, vectors: &[HashVector]) {
    let lanes = kernel.lanes();
    let filler = bytes(99, 3 * block(kernel.algorithm()) + 5);
    for rotation in 0..lanes {
        for batch in vectors.chunks(lanes) {
            let mut set: Lanes<usize, &[u8]> = Lanes::with_kernel(kernel);
            let mut pushed = 0;
            for lane in 0..lanes {
                let k = (lane + lanes - rotation) % lanes;
                let msg = batch.get(k).map_or(&filler[..], |v| &v.msg[..]);
                let handle = set.start(lane).unwrap();
                assert_eq!(handle.index(), lane, "the first free lane is taken");
                if !msg.is_empty() {
                    set.push(handle, msg);
                    pushed += 1;
                }
                set.finish(handle);
            }
            assert!(!set.has_free_lane());
            assert_eq!(set.busy_lanes(), lanes);
            let digests = drain(&mut set, lanes, pushed);
            for (lane, digest) in digests.iter().enumerate() {
                let k = (lane + lanes - rotation) % lanes;
                match batch.get(k) {
                    Some(v) => assert_eq!(*digest, v.md, "{kernel} lane {lane}: {}", v.name),
                    None => assert_eq!(*digest, kernel.algorithm().hash(&filler)),
                }
            }
        }
    }
}

#[test]
fn every_lane_reproduces_the_rfc1321_suite_and_the_nist_cavp_vectors() {
    for alg in ALGORITHMS {
        // RFC 1321 for MD5; SHAxShortMsg and SHAxLongMsg for the others.
        let vectors = hash_vectors(alg);
        assert!(vectors.len() >= 7, "{alg}: vectors parsed");
        for kernel in kernels(alg) {
            check_vectors_in_every_lane(kernel, &vectors);
        }
    }
}

#[test]
fn lengths_ending_at_every_position_of_a_block_match_one_stream() {
    for alg in ALGORITHMS {
        let b = block(alg);
        let lengths: Vec<usize> = (0..=2 * b).chain([1000, 4095, 4096, 4097]).collect();
        let messages: Vec<Vec<u8>> = lengths.iter().map(|&n| bytes(n as u64, n)).collect();
        let slices: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
        for kernel in kernels(alg) {
            let digests = lanes::hash_many(kernel, b"", &slices);
            for (m, d) in messages.iter().zip(&digests) {
                assert_eq!(*d, alg.hash(m), "{kernel} length {}", m.len());
            }
            // Reversed, long messages start first and short ones refill the lanes as they end.
            let reversed: Vec<&[u8]> = slices.iter().rev().copied().collect();
            let mut digests_rev = lanes::hash_many(kernel, b"", &reversed);
            digests_rev.reverse();
            assert_eq!(digests_rev, digests, "{kernel}");
        }
    }
}

#[test]
fn messages_cut_from_one_buffer_any_stride_apart_hash_as_one_at_a_time_and_append_to_the_output() {
    for alg in ALGORITHMS {
        let b = block(alg);
        for kernel in kernels(alg) {
            for len in [1, b - 2, b - 1, b, b + 1, 2 * b + 5] {
                for count in [
                    0,
                    1,
                    kernel.lanes() - 1,
                    kernel.lanes(),
                    2 * kernel.lanes() + 1,
                ] {
                    // Side by side, a byte apart, and a line further apart than their
                    // length as a spread read lays leaves out.
                    for stride in [len, len + 1, len.next_multiple_of(64) + 64] {
                        let span = match count {
                            0 => 0,
                            c => (c - 1) * stride + len,
                        };
                        let data = bytes((len * 31 + count) as u64, span);
                        let earlier = alg.hash(b"earlier");
                        let mut out = vec![earlier];
                        lanes::hash_each_into(kernel, &[0], &data, len, stride, &mut out);
                        let mut want = vec![earlier];
                        want.extend(
                            (0..count).map(|i| {
                                alg.hash_parts(&[&[0], &data[i * stride..i * stride + len]])
                            }),
                        );
                        assert_eq!(out, want, "{kernel} {count} × {len}, {stride} apart");
                    }
                }
            }
        }
    }
}

#[test]
fn a_prefix_is_hashed_before_the_message() {
    for alg in ALGORITHMS {
        let b = block(alg);
        let messages: Vec<Vec<u8>> = (0..=b + 2).map(|n| bytes(n as u64 + 7, n)).collect();
        let slices: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
        let longest = vec![9; b - 1];
        for kernel in kernels(alg) {
            for prefix in [&[0u8][..], &[1, 2, 3], &longest] {
                let digests = lanes::hash_many(kernel, prefix, &slices);
                for (m, d) in messages.iter().zip(digests) {
                    assert_eq!(
                        d,
                        alg.hash_parts(&[prefix, m]),
                        "{kernel} prefix {} length {}",
                        prefix.len(),
                        m.len()
                    );
                }
            }
        }
    }
}

/// Messages of one length skip the job manager: at every length that pads to two blocks or
/// less (a tree's inner nodes), with and without a prefix, and in groups that fill the
/// lanes, leave them half full or spill into another group, each digest is one stream's.
#[test]
fn many_short_messages_of_one_length_match_one_stream() {
    for alg in ALGORITHMS {
        let b = block(alg);
        for kernel in kernels(alg) {
            let lanes = kernel.lanes();
            for prefix in [&[][..], &[1u8]] {
                for len in 0..=2 * b - prefix.len() {
                    let count = [1, 2, lanes / 2 + 1, lanes, lanes + 1, 2 * lanes + 3][len % 6];
                    let messages: Vec<Vec<u8>> = (0..count)
                        .map(|i| bytes((len * 100 + i) as u64, len))
                        .collect();
                    let slices: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
                    let digests = lanes::hash_many(kernel, prefix, &slices);
                    for (m, d) in messages.iter().zip(digests) {
                        assert_eq!(d, alg.hash_parts(&[prefix, m]), "{kernel} {count} × {len}");
                    }
                }
            }
        }
    }
}

#[test]
#[should_panic(expected = "a prefix is shorter than a block")]
fn a_prefix_of_a_whole_block_panics() {
    let kernel = Kernel::portable(Algorithm::Sha512).unwrap();
    lanes::hash_many(kernel, &[0; 128], &[b"abc"]);
}

#[test]
fn one_message_alone_in_the_set_is_hashed() {
    for kernel in all_kernels() {
        for len in [0, 1, 63, 64, 65, 127, 128, 129, 100_000] {
            let m = bytes(3, len);
            assert_eq!(
                lanes::hash_many(kernel, b"", &[&m]),
                [kernel.algorithm().hash(&m)],
                "{kernel} {len}"
            );
        }
    }
}

#[test]
fn a_message_split_into_chunks_of_any_size_gives_the_same_digest() {
    let m = bytes(11, 300);
    for kernel in all_kernels() {
        let expected = kernel.algorithm().hash(&m);
        let lanes = kernel.lanes();
        // One chunk size per lane, `lanes` sizes at a time, pushed round-robin.
        for first in (1..=m.len()).step_by(lanes) {
            let sizes: Vec<usize> = (first..first + lanes).map(|s| s.min(m.len())).collect();
            let mut set: Lanes<usize, Vec<u8>> = Lanes::with_kernel(kernel);
            let handles: Vec<Lane> = (0..lanes).map(|i| set.start(i).unwrap()).collect();
            let mut pushed = 0;
            for part in 0..m.len() {
                for (lane, &size) in handles.iter().zip(&sizes) {
                    if let Some(chunk) = m.chunks(size).nth(part) {
                        set.push(*lane, chunk.to_vec());
                        pushed += 1;
                    }
                }
            }
            for &lane in &handles {
                set.finish(lane);
            }
            for (lane, d) in drain(&mut set, lanes, pushed).into_iter().enumerate() {
                assert_eq!(d, expected, "{kernel} chunks of {}", sizes[lane]);
            }
        }
    }
}

#[test]
fn poll_waits_for_a_lane_short_of_a_block_and_flush_does_not() {
    for kernel in all_kernels() {
        let long = bytes(1, 4096);
        let mut set: Lanes<usize, &[u8]> = Lanes::with_kernel(kernel);
        let a = set.start(0).unwrap();
        let b = set.start(1).unwrap();
        set.push(a, &long);
        set.push(b, &long[..10]);
        // `b` has 10 bytes and may get more: hashing `a` alone would waste the other lanes.
        assert_eq!(set.poll(), Some(Event::Consumed(&long[..10])));
        assert_eq!(set.poll(), None, "{kernel}");
        // `flush` hashes `a` regardless; `b` keeps its 10 bytes.
        assert_eq!(set.flush(), Some(Event::Consumed(&long[..])));
        assert_eq!(set.flush(), None);
        set.push(b, &long[10..]);
        set.finish(a);
        set.finish(b);
        let digests = drain(&mut set, 2, 1);
        assert_eq!(digests, [kernel.algorithm().hash(&long); 2], "{kernel}");
    }
}

#[test]
fn a_full_set_refuses_a_message_and_a_finished_lane_takes_the_next() {
    for alg in ALGORITHMS {
        let kernel = Kernel::portable(alg).unwrap();
        let mut set: Lanes<usize, &[u8]> = Lanes::with_kernel(kernel);
        let lanes: Vec<Lane> = (0..kernel.lanes()).map(|i| set.start(i).unwrap()).collect();
        let last = kernel.lanes() - 1;
        assert_eq!(set.start(99), Err(99));
        assert!(!set.has_free_lane());
        set.finish(lanes[last]);
        assert_eq!(set.poll(), None, "the other lanes wait for bytes");
        assert_eq!(set.flush(), Some(Event::Finished(last, alg.hash(b""))));
        assert!(set.has_free_lane());
        let next = set.start(99).unwrap();
        assert_eq!(next.index(), last);
        assert_ne!(next, lanes[last], "a new message is a new handle");
    }
}

#[test]
#[should_panic(expected = "does not hold an unfinished message")]
fn a_stale_lane_handle_panics() {
    let mut set: Lanes<usize, &[u8]> =
        Lanes::with_kernel(Kernel::portable(Algorithm::Md5).unwrap());
    let old = set.start(0).unwrap();
    set.finish(old);
    while set.poll().is_some() {}
    let _new = set.start(1).unwrap();
    set.push(old, b"not for the new message");
}

#[test]
#[should_panic(expected = "does not hold an unfinished message")]
fn pushing_after_finish_panics() {
    let mut set: Lanes<usize, &[u8]> =
        Lanes::with_kernel(Kernel::portable(Algorithm::Sha256).unwrap());
    let lane = set.start(0).unwrap();
    set.finish(lane);
    set.push(lane, b"late");
}

/// Lengths around the block and padding boundaries of both block sizes, and some long ones.
fn length() -> impl Strategy<Value = usize> {
    prop_oneof![
        prop::sample::select(vec![0usize, 1, 55, 56, 63, 64, 111, 112, 127, 128]),
        0usize..300,
        1000usize..20_000,
    ]
}

/// A caller driven by `seed`: starts messages behind `prefix` while lanes are free, pushes
/// their chunks in a random order across lanes, finishes them, and polls or flushes in
/// between.
fn hash_randomly(
    kernel: Kernel,
    prefix: &[u8],
    messages: &[Vec<u8>],
    max_chunk: usize,
    seed: u64,
) -> Vec<Digest> {
    let mut rng = seed | 1;
    let mut next_random = |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let mut set: Lanes<usize, Vec<u8>> = Lanes::with_kernel(kernel);
    let mut digests = vec![None; messages.len()];
    // (lane, message, bytes pushed)
    let mut open: Vec<(Lane, usize, usize)> = Vec::new();
    let mut next = 0;
    let (mut pushed, mut consumed) = (0, 0);
    let mut handle =
        |event: Option<Event<usize, Vec<u8>>>, digests: &mut Vec<Option<Digest>>| match event {
            Some(Event::Finished(i, d)) => assert!(digests[i].replace(d).is_none()),
            Some(Event::Consumed(chunk)) => consumed += chunk.len(),
            None => {}
        };
    while digests.iter().any(Option::is_none) {
        match next_random(4) {
            0 if next < messages.len() => {
                if let Ok(lane) = set.start_with_prefix(next, prefix) {
                    open.push((lane, next, 0));
                    next += 1;
                }
            }
            1 if !open.is_empty() => {
                let k = next_random(open.len());
                let (lane, i, done) = &mut open[k];
                let rest = messages[*i].len() - *done;
                if rest == 0 {
                    set.finish(*lane);
                    open.swap_remove(k);
                } else {
                    let n = 1 + next_random(rest.min(max_chunk));
                    set.push(*lane, messages[*i][*done..*done + n].to_vec());
                    *done += n;
                    pushed += n;
                }
            }
            2 => handle(set.poll(), &mut digests),
            3 => handle(set.flush(), &mut digests),
            _ => {}
        }
    }
    handle(set.flush(), &mut digests);
    assert_eq!(set.flush(), None);
    assert_eq!(consumed, pushed, "every pushed byte comes back");
    digests.into_iter().map(Option::unwrap).collect()
}

/// The kernel caps the CLI test runs with, as environment variables: none, then every one
/// that narrows the choice (on a CPU with AVX-512, `avx2` runs the AVX2 kernels).
const CAPS: [Option<(&str, &str)>; 5] = [
    None,
    Some((lanes::SIMD_VAR, "avx2")),
    Some((lanes::SIMD_VAR, "avx2-nosha")),
    Some((lanes::SIMD_VAR, "portable")),
    Some((lanes::FORCE_PORTABLE_VAR, "1")),
];

/// `mtsum ARGS` with only the environment variable `cap` of [`CAPS`] set: its stdout and stderr.
fn mtsum_capped(args: &[&str], cap: Option<(&str, &str)>) -> (Option<i32>, String, String) {
    let mut cmd = assert_cmd::Command::new(common::MTSUM);
    cmd.args(args)
        .env_remove(lanes::FORCE_PORTABLE_VAR)
        .env_remove(lanes::SIMD_VAR);
    if let Some((var, value)) = cap {
        cmd.env(var, value);
    }
    let out = common::run::run_cmd(&mut cmd);
    (out.code, out.stdout().to_string(), out.stderr().to_string())
}

#[test]
fn mtsum_prints_the_same_roots_under_every_kernel_cap() {
    let dir = tempfile::tempdir().unwrap();
    // Several files, so that even `plain` and `mtsum` hash messages side by side in lanes,
    // one of them of many leaves for the fixed-leaf layouts.
    let files: Vec<(String, Vec<u8>)> = [300 * 1024 + 17, 5000, 129, 0]
        .into_iter()
        .enumerate()
        .map(|(i, len)| {
            let path = dir.path().join(format!("f{i}"));
            let data = bytes(17 + i as u64, len);
            std::fs::write(&path, &data).unwrap();
            (path.to_str().unwrap().to_owned(), data)
        })
        .collect();
    for alg in ALGORITHMS {
        for (layout, leaf) in [
            ("merkle", Some("4K")),
            ("rfc6962", Some("1K")),
            ("mtsum", None),
            ("plain", None),
        ] {
            let parsed = Layout::from_name(layout, leaf.map(|l| l.parse().unwrap())).unwrap();
            let mut args = vec!["-a", alg.name(), "-t", layout];
            args.extend(leaf.iter().flat_map(|l| ["-l", l]));
            args.extend(files.iter().map(|(path, _)| path.as_str()));
            let (code, native, stderr) = mtsum_capped(&args, None);
            assert_eq!(code, Some(0), "{stderr}");
            let lines: Vec<&str> = native.lines().collect();
            assert_eq!(lines.len(), files.len(), "{native}");
            for (line, (_, data)) in lines.iter().zip(&files) {
                let root = reference::root(parsed, alg, data).to_hex();
                assert!(line.starts_with(&root), "{alg} {parsed}: {line}");
            }
            for cap in &CAPS[1..] {
                let (code, capped, stderr) = mtsum_capped(&args, *cap);
                assert_eq!(code, Some(0), "{stderr}");
                assert_eq!(capped, native, "{alg} {parsed} under {cap:?}");
            }
        }
    }
}

#[test]
fn mtsum_names_no_kernel_under_the_portable_cap_and_refuses_an_unknown_one() {
    for cap in [
        (lanes::SIMD_VAR, "portable"),
        (lanes::FORCE_PORTABLE_VAR, "1"),
    ] {
        let (code, _, stderr) =
            mtsum_capped(&["--verbose", "-a", "md5", "-t", "plain", "-"], Some(cap));
        assert_eq!(code, Some(0), "{stderr}");
        assert!(stderr.contains("Multi-buffer kernel: none\n"), "{stderr}");
    }
    let (code, stdout, stderr) = mtsum_capped(&["-a", "md5", "-"], Some((lanes::SIMD_VAR, "sse9")));
    assert_eq!((code, stdout.as_str()), (Some(2), ""));
    assert!(
        stderr.starts_with("mtsum: MTSUM_SIMD: unknown instruction sets 'sse9'")
            && stderr.lines().count() == 1,
        "{stderr}"
    );
}

#[test]
fn leaves_laid_out_apart_give_the_roots_of_leaves_side_by_side_around_every_boundary() {
    for alg in ALGORITHMS {
        for leaf in [64usize, 100, 1000, 1024, 4096] {
            let size = LeafSize::new(leaf as u64).unwrap();
            for per_chunk in [1, 4, 17, 40] {
                let chunk = per_chunk * leaf;
                let layout = match per_chunk % 2 {
                    0 => Layout::Rfc6962(size),
                    _ => Layout::Merkle(size),
                };
                for n in [
                    0,
                    1,
                    leaf - 1,
                    leaf,
                    leaf + 1,
                    chunk - 1,
                    chunk,
                    chunk + 1,
                    3 * chunk + leaf / 2,
                ] {
                    let data = bytes((leaf * n) as u64, n);
                    let expected = reference::root(layout, alg, &data);
                    for lanes in lane_choices(alg) {
                        for gap in [line_gap(leaf), 1] {
                            assert_eq!(
                                job_in_chunks(
                                    layout,
                                    alg,
                                    lanes,
                                    &data,
                                    &[chunk],
                                    Some((leaf, gap))
                                ),
                                expected,
                                "{alg} {layout} {lanes:?} {n} bytes in chunks of {chunk}, gap {gap}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// How many inner nodes a level has, against a kernel's lanes.
#[derive(Clone, Copy, Debug)]
enum Width {
    One,
    Two,
    LessThanLanes,
    Lanes,
    MoreThanLanes,
}

/// `None` (one leaf after another) and every kernel of `alg`.
fn lane_choices(alg: Algorithm) -> Vec<Option<Kernel>> {
    std::iter::once(None)
        .chain(Kernel::available(alg).into_iter().map(Some))
        .collect()
}

#[test]
fn job_hasher_gives_the_same_roots_with_lanes_on_and_off() {
    let data = bytes(5, (1 << 20) + 123);
    for alg in ALGORITHMS {
        for layout in [
            Layout::Merkle(LeafSize::new(4096).unwrap()),
            Layout::Rfc6962(LeafSize::new(4096).unwrap()),
            Layout::Rfc6962(LeafSize::new(100).unwrap()),
            // Lanes leave the other layouts alone.
            Layout::Plain,
        ] {
            let expected = reference::root(layout, alg, &data);
            for lanes in lane_choices(alg) {
                for chunk in [data.len(), 65_536, 10_000] {
                    assert_eq!(
                        job_in_chunks(layout, alg, lanes, &data, &[chunk], None),
                        expected,
                        "{alg} {layout} {lanes:?} chunks of {chunk}"
                    );
                }
            }
        }
    }
}

#[test]
#[should_panic(expected = "a kernel of another algorithm")]
fn a_job_hasher_refuses_a_kernel_of_another_algorithm() {
    let layout = Layout::Merkle(LeafSize::new(64).unwrap());
    layout.job_hasher_with_lanes(Algorithm::Sha256, Kernel::portable(Algorithm::Sha224));
}

/// The lengths around every block boundary where runs of one length change shape: no whole
/// block, the padding in one block or two (55, 56; 111, 112; 119, 120 with a one-byte prefix),
/// a byte either side of one and two blocks, of a 1 KiB leaf, and a 4 KiB one.
const RUN_LENGTHS: [usize; 18] = [
    0, 1, 55, 56, 63, 64, 65, 111, 112, 119, 120, 127, 128, 129, 1023, 1024, 1025, 4096,
];

proptest! {
    #![proptest_config(common::config(256))]

    /// A run of messages of one length (a fixed layout's leaves, a level of inner nodes) goes
    /// straight through the kernel a set of lanes at a time: for every kernel this CPU runs
    /// (the AVX2 ones too where it has AVX-512), from none to two full sets and one more
    /// (the last partly idle), with RFC 6962's one-byte prefix or none, each digest is one
    /// stream's.
    #[test]
    fn runs_of_one_length_match_one_stream_in_every_kernel(
        alg in prop::sample::select(ALGORITHMS.to_vec()),
        len in prop_oneof![prop::sample::select(RUN_LENGTHS.to_vec()), 0usize..5000],
        count in any::<prop::sample::Index>(),
        prefix in prop::sample::select(vec![&b""[..], b"\x00"]),
        seed: u64,
    ) {
        for kernel in Kernel::available(alg) {
            let count = count.index(2 * kernel.lanes() + 2);
            let messages: Vec<Vec<u8>> =
                (0..count).map(|i| bytes(seed ^ i as u64, len)).collect();
            let slices: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
            let expected: Vec<Digest> =
                slices.iter().map(|m| alg.hash_parts(&[prefix, m])).collect();
            prop_assert_eq!(
                lanes::hash_many(kernel, prefix, &slices),
                expected,
                "{} {} × {} bytes, prefix {:?}", kernel, count, len, prefix
            );
        }
    }

    #[test]
    fn fixed_leaf_roots_do_not_depend_on_lanes(
        alg in prop::sample::select(ALGORITHMS.to_vec()),
        leaf in prop::sample::select(vec![1u64, 7, 63, 64, 65, 100, 127, 128, 129, 1000, 4096]),
        rfc6962: bool,
        n in 0usize..50_000,
        chunks in prop::collection::vec(1usize..70_000, 1..5),
        piece_len in 1usize..5000,
        gap in 0usize..200,
        seed: u64,
    ) {
        let size = LeafSize::new(leaf).unwrap();
        let layout = if rfc6962 { Layout::Rfc6962(size) } else { Layout::Merkle(size) };
        let data = bytes(seed, n);
        let expected = reference::root(layout, alg, &data);
        // Chunks of whole leaves too, which spread reads deliver.
        let leaf = leaf as usize;
        let whole: Vec<usize> = chunks.iter().map(|&c| c.next_multiple_of(leaf)).collect();
        for lanes in lane_choices(alg) {
            prop_assert_eq!(job_in_chunks(layout, alg, lanes, &data, &chunks, None), expected, "{:?}", lanes);
            // The pieces of a spread read, and pieces off the leaves (on chunks not of
            // whole leaves, or of another length), which go piece by piece.
            for (chunks, piece) in [(&whole, leaf), (&chunks, leaf), (&whole, piece_len)] {
                for gap in [line_gap(piece), gap] {
                    prop_assert_eq!(
                        job_in_chunks(layout, alg, lanes, &data, chunks, Some((piece, gap))),
                        expected,
                        "{:?} chunks {:?} pieces of {} {} apart", lanes, chunks, piece, gap
                    );
                }
            }
        }
    }

    /// A chunk of `2 × nodes` whole leaves completes a level of `nodes` inner nodes (more
    /// above it, and one more where it pairs with a subtree of the leaves before), which the
    /// job hasher hashes in lanes: around every kernel's width, the root is the reference's.
    #[test]
    fn inner_nodes_hashed_in_lanes_give_the_reference_root_at_every_level_width(
        alg in prop::sample::select(ALGORITHMS.to_vec()),
        choice in any::<prop::sample::Index>(),
        width in prop::sample::select(vec![Width::One, Width::Two, Width::LessThanLanes, Width::Lanes, Width::MoreThanLanes]),
        leaves_before in 0u64..6,
        leaf in prop::sample::select(vec![1u64, 33, 64, 100, 1000]),
        rfc6962: bool,
        tail in 0u64..200,
        seed: u64,
    ) {
        let kernels = Kernel::available(alg);
        let kernel = kernels[choice.index(kernels.len())];
        let nodes = match width {
            Width::One => 1,
            Width::Two => 2,
            Width::LessThanLanes => kernel.lanes() as u64 - 1,
            Width::Lanes => kernel.lanes() as u64,
            Width::MoreThanLanes => kernel.lanes() as u64 + 1,
        };
        let size = LeafSize::new(leaf).unwrap();
        let layout = if rfc6962 { Layout::Rfc6962(size) } else { Layout::Merkle(size) };
        let (before, run) = (leaves_before * leaf, 2 * nodes * leaf);
        let data = bytes(seed, (before + run + tail) as usize);
        let chunks = [before as usize, run as usize, tail as usize];
        let chunks: Vec<usize> = chunks.into_iter().filter(|&c| c > 0).collect();
        prop_assert_eq!(
            job_in_chunks(layout, alg, Some(kernel), &data, &chunks, None),
            reference::root(layout, alg, &data),
            "{} {} nodes after {} leaves", kernel, nodes, leaves_before
        );
    }

    #[test]
    fn lane_sets_match_one_stream_for_random_lengths_and_chunkings(
        alg in prop::sample::select(ALGORITHMS.to_vec()),
        lengths in prop::collection::vec(length(), 1..40),
        max_chunk in prop::sample::select(vec![7usize, 64, 100, 128, 1000, 1 << 16]),
        prefix_len in prop::sample::select(vec![0usize, 1, 63]),
        seed in any::<u64>(),
    ) {
        let messages: Vec<Vec<u8>> = lengths
            .iter()
            .enumerate()
            .map(|(i, &n)| bytes(seed ^ i as u64, n))
            .collect();
        let prefix = &bytes(!seed, prefix_len);
        let expected: Vec<Digest> =
            messages.iter().map(|m| alg.hash(&[prefix, m.as_slice()].concat())).collect();
        for kernel in Kernel::available(alg) {
            let randomly = hash_randomly(kernel, prefix, &messages, max_chunk, seed);
            prop_assert_eq!(&randomly, &expected, "{}", kernel);
            let slices: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
            prop_assert_eq!(&lanes::hash_many(kernel, prefix, &slices), &expected, "{}", kernel);
        }
    }
}
