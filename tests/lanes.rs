//! Multi-buffer MD5 (`mtsum::lanes`) against the one-stream path, `Algorithm::Md5.hash`: every
//! kernel this CPU runs (the portable one always, AVX2 where present), every lane, lengths
//! ending at every position of a block, random mixes of lengths, chunkings and call orders.

use mtsum::lanes::{self, Event, Kernel, LANES, Lane, Md5Lanes};
use mtsum::{Algorithm, Digest, Layout, LeafSize, reference};
use proptest::prelude::*;

/// RFC 1321, appendix A.5.
const RFC1321: [(&str, &str); 7] = [
    ("", "d41d8cd98f00b204e9800998ecf8427e"),
    ("a", "0cc175b9c0f1b6a831c399e269772661"),
    ("abc", "900150983cd24fb0d6963f7d28e17f72"),
    ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
    (
        "abcdefghijklmnopqrstuvwxyz",
        "c3fcd3d76192e4007dfb496cca67e13b",
    ),
    (
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        "d174ab98d277d9f5a5611c2c9f419d9f",
    ),
    (
        "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
        "57edf4a22be3c955ac49da2e2107b67a",
    ),
];

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

fn kernels() -> Vec<Kernel> {
    let kernels = Kernel::available();
    if kernels.len() == 1 {
        eprintln!("note: this CPU has no AVX2; only the portable kernel is tested");
    }
    kernels
}

/// Every digest `poll` hands back, by tag, checking that each pushed chunk comes back once.
fn drain<B: AsRef<[u8]>>(set: &mut Md5Lanes<usize, B>, count: usize, pushed: usize) -> Vec<Digest> {
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
fn every_lane_reproduces_the_rfc1321_suite_beside_other_messages() {
    for kernel in kernels() {
        // Rotating the suite over the lanes puts every vector in every lane, next to different
        // vectors each time.
        for rotation in 0..RFC1321.len() {
            let mut set: Md5Lanes<usize, &[u8]> = Md5Lanes::with_kernel(kernel);
            let mut pushed = 0;
            for lane in 0..LANES {
                let (msg, _) = RFC1321[(lane + rotation) % RFC1321.len()];
                let handle = set.start(lane).unwrap();
                assert_eq!(handle.index(), lane, "the first free lane is taken");
                if !msg.is_empty() {
                    set.push(handle, msg.as_bytes());
                    pushed += 1;
                }
                set.finish(handle);
            }
            assert!(!set.has_free_lane());
            for (lane, digest) in drain(&mut set, LANES, pushed).into_iter().enumerate() {
                let (msg, md) = RFC1321[(lane + rotation) % RFC1321.len()];
                assert_eq!(digest.to_hex(), md, "{kernel} lane {lane}: {msg:?}");
            }
        }
    }
}

#[test]
fn lengths_ending_at_every_position_of_a_block_match_one_stream() {
    let lengths: Vec<usize> = (0..=200).chain([1000, 4095, 4096, 4097]).collect();
    let messages: Vec<Vec<u8>> = lengths.iter().map(|&n| bytes(n as u64, n)).collect();
    let slices: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
    for kernel in kernels() {
        let digests = lanes::hash_many(kernel, b"", &slices);
        for (m, d) in messages.iter().zip(&digests) {
            assert_eq!(*d, Algorithm::Md5.hash(m), "{kernel} length {}", m.len());
        }
        // Reversed, long messages start first and short ones refill the lanes as they end.
        let reversed: Vec<&[u8]> = slices.iter().rev().copied().collect();
        let mut digests_rev = lanes::hash_many(kernel, b"", &reversed);
        digests_rev.reverse();
        assert_eq!(digests_rev, digests, "{kernel}");
    }
}

#[test]
fn a_prefix_is_hashed_before_the_message() {
    let messages: Vec<Vec<u8>> = (0..=130).map(|n| bytes(n as u64 + 7, n)).collect();
    let slices: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
    for kernel in kernels() {
        for prefix in [&[0u8][..], &[1, 2, 3], &[9; 63]] {
            let digests = lanes::hash_many(kernel, prefix, &slices);
            for (m, d) in messages.iter().zip(digests) {
                assert_eq!(
                    d,
                    Algorithm::Md5.hash_parts(&[prefix, m]),
                    "{kernel} prefix {} length {}",
                    prefix.len(),
                    m.len()
                );
            }
        }
    }
}

#[test]
fn one_message_alone_in_the_set_is_hashed() {
    for kernel in kernels() {
        for len in [0, 1, 63, 64, 65, 100_000] {
            let m = bytes(3, len);
            assert_eq!(
                lanes::hash_many(kernel, b"", &[&m]),
                [Algorithm::Md5.hash(&m)],
                "{kernel} {len}"
            );
        }
    }
}

#[test]
fn a_message_split_into_chunks_of_any_size_gives_the_same_digest() {
    let m = bytes(11, 300);
    let expected = Algorithm::Md5.hash(&m);
    for kernel in kernels() {
        // Sixteen chunk sizes at a time, one per lane, pushed round-robin.
        for first in (1..=m.len()).step_by(LANES) {
            let sizes: Vec<usize> = (first..first + LANES).map(|s| s.min(m.len())).collect();
            let mut set: Md5Lanes<usize, Vec<u8>> = Md5Lanes::with_kernel(kernel);
            let handles: Vec<Lane> = (0..LANES).map(|i| set.start(i).unwrap()).collect();
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
            for (lane, d) in drain(&mut set, LANES, pushed).into_iter().enumerate() {
                assert_eq!(d, expected, "{kernel} chunks of {}", sizes[lane]);
            }
        }
    }
}

#[test]
fn poll_waits_for_a_lane_short_of_a_block_and_flush_does_not() {
    for kernel in kernels() {
        let long = bytes(1, 4096);
        let mut set: Md5Lanes<usize, &[u8]> = Md5Lanes::with_kernel(kernel);
        let a = set.start(0).unwrap();
        let b = set.start(1).unwrap();
        set.push(a, &long);
        set.push(b, &long[..10]);
        // `b` has 10 bytes and may get more: hashing `a` alone would waste 15 lanes.
        assert_eq!(set.poll(), Some(Event::Consumed(&long[..10])));
        assert_eq!(set.poll(), None, "{kernel}");
        // `flush` hashes `a` regardless; `b` keeps its 10 bytes.
        assert_eq!(set.flush(), Some(Event::Consumed(&long[..])));
        assert_eq!(set.flush(), None);
        set.push(b, &long[10..]);
        set.finish(a);
        set.finish(b);
        let digests = drain(&mut set, 2, 1);
        assert_eq!(digests, [Algorithm::Md5.hash(&long); 2], "{kernel}");
    }
}

#[test]
fn a_full_set_refuses_a_message_and_a_finished_lane_takes_the_next() {
    let mut set: Md5Lanes<usize, &[u8]> = Md5Lanes::with_kernel(Kernel::portable());
    let lanes: Vec<Lane> = (0..LANES).map(|i| set.start(i).unwrap()).collect();
    assert_eq!(set.start(99), Err(99));
    set.finish(lanes[5]);
    assert_eq!(set.poll(), None, "the other fifteen lanes wait for bytes");
    assert_eq!(
        set.flush(),
        Some(Event::Finished(5, Algorithm::Md5.hash(b"")))
    );
    let next = set.start(99).unwrap();
    assert_eq!(next.index(), 5);
    assert_ne!(next, lanes[5], "a new message is a new handle");
}

#[test]
#[should_panic(expected = "does not hold an unfinished message")]
fn a_stale_lane_handle_panics() {
    let mut set: Md5Lanes<usize, &[u8]> = Md5Lanes::with_kernel(Kernel::portable());
    let old = set.start(0).unwrap();
    set.finish(old);
    while set.poll().is_some() {}
    let _new = set.start(1).unwrap();
    set.push(old, b"not for the new message");
}

#[test]
#[should_panic(expected = "does not hold an unfinished message")]
fn pushing_after_finish_panics() {
    let mut set: Md5Lanes<usize, &[u8]> = Md5Lanes::with_kernel(Kernel::portable());
    let lane = set.start(0).unwrap();
    set.finish(lane);
    set.push(lane, b"late");
}

/// Lengths around the block and padding boundaries, and some long ones.
fn length() -> impl Strategy<Value = usize> {
    prop_oneof![
        prop::sample::select(vec![0usize, 1, 55, 56, 63, 64, 111, 112, 127, 128]),
        0usize..300,
        1000usize..20_000,
    ]
}

/// A caller driven by `seed`: starts messages while lanes are free, pushes their chunks in a
/// random order across lanes, finishes them, and polls or flushes in between.
fn hash_randomly(kernel: Kernel, messages: &[Vec<u8>], max_chunk: usize, seed: u64) -> Vec<Digest> {
    let mut rng = seed | 1;
    let mut next_random = |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let mut set: Md5Lanes<usize, Vec<u8>> = Md5Lanes::with_kernel(kernel);
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
                if let Ok(lane) = set.start(next) {
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

#[test]
fn mtsum_prints_the_same_md5_roots_with_the_portable_kernel_forced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    let data = bytes(17, 300 * 1024 + 17);
    std::fs::write(&path, &data).unwrap();
    let mtsum = |layout: &str, leaf: Option<&str>, force: bool| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mtsum"));
        cmd.args(["-a", "md5", "-t", layout]);
        if let Some(leaf) = leaf {
            cmd.args(["-l", leaf]);
        }
        cmd.arg(&path).env_remove(lanes::FORCE_PORTABLE_VAR);
        if force {
            cmd.env(lanes::FORCE_PORTABLE_VAR, "1");
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    for (layout, leaf) in [
        ("merkle", Some("4K")),
        ("rfc6962", Some("1K")),
        ("rfc6962", Some("64")),
        ("mtsum", None),
        ("plain", None),
    ] {
        let parsed = Layout::from_name(layout, leaf.map(|l| l.parse().unwrap())).unwrap();
        let root = reference::root(parsed, Algorithm::Md5, &data).to_hex();
        let native = mtsum(layout, leaf, false);
        assert!(native.starts_with(&root), "{parsed}: {native}");
        assert_eq!(mtsum(layout, leaf, true), native, "{parsed}");
    }
}

/// The digest of one job of `layout` hashed in chunks of the given sizes, in turn.
fn job_in_chunks(layout: Layout, lanes: Option<Kernel>, data: &[u8], chunks: &[usize]) -> Digest {
    let mut h = layout.job_hasher_with_lanes(Algorithm::Md5, lanes);
    let mut rest = data;
    for &size in chunks.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at(size.clamp(1, rest.len()));
        h.update(chunk);
        rest = tail;
    }
    h.finalize()
}

/// `None` (one leaf after another) and every kernel.
fn lane_choices() -> Vec<Option<Kernel>> {
    std::iter::once(None)
        .chain(Kernel::available().into_iter().map(Some))
        .collect()
}

#[test]
fn job_hasher_gives_the_same_roots_with_md5_lanes_on_and_off() {
    let data = bytes(5, (1 << 20) + 123);
    for layout in [
        Layout::Merkle(LeafSize::new(4096).unwrap()),
        Layout::Rfc6962(LeafSize::new(4096).unwrap()),
        Layout::Rfc6962(LeafSize::new(100).unwrap()),
        // Lanes leave the other layouts alone.
        Layout::Plain,
    ] {
        let expected = reference::root(layout, Algorithm::Md5, &data);
        for lanes in lane_choices() {
            for chunk in [data.len(), 1 << 20, 65_536, 10_000] {
                assert_eq!(
                    job_in_chunks(layout, lanes, &data, &[chunk]),
                    expected,
                    "{layout} {lanes:?} chunks of {chunk}"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn fixed_leaf_roots_do_not_depend_on_md5_lanes(
        leaf in prop::sample::select(vec![1u64, 7, 63, 64, 65, 100, 1000, 4096]),
        rfc6962: bool,
        n in 0usize..50_000,
        chunks in prop::collection::vec(1usize..70_000, 1..5),
        seed: u64,
    ) {
        let leaf = LeafSize::new(leaf).unwrap();
        let layout = if rfc6962 { Layout::Rfc6962(leaf) } else { Layout::Merkle(leaf) };
        let data = bytes(seed, n);
        let expected = reference::root(layout, Algorithm::Md5, &data);
        for lanes in lane_choices() {
            prop_assert_eq!(job_in_chunks(layout, lanes, &data, &chunks), expected, "{:?}", lanes);
        }
    }

    #[test]
    fn lane_sets_match_one_stream_for_random_lengths_and_chunkings(
        lengths in prop::collection::vec(length(), 1..40),
        max_chunk in prop::sample::select(vec![7usize, 64, 100, 1000, 1 << 16]),
        seed in any::<u64>(),
    ) {
        let messages: Vec<Vec<u8>> = lengths
            .iter()
            .enumerate()
            .map(|(i, &n)| bytes(seed ^ i as u64, n))
            .collect();
        let expected: Vec<Digest> = messages.iter().map(|m| Algorithm::Md5.hash(m)).collect();
        for kernel in Kernel::available() {
            prop_assert_eq!(&hash_randomly(kernel, &messages, max_chunk, seed), &expected, "{}", kernel);
            let slices: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
            prop_assert_eq!(&lanes::hash_many(kernel, b"", &slices), &expected, "{}", kernel);
        }
    }
}
