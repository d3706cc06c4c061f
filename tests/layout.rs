//! Property tests of the layouts: the plan of jobs ([`Layout::jobs`]), the job hasher and the
//! combiner against the reference path, and the reference path against the definitions of
//! DESIGN.md §3 written out again here, as plainly as possible.
//!
//! Data is generated from a seed (a cheap pattern), so that proptest spends its time on the
//! interesting parameters: layout, algorithm, leaf size, length, chunking and order.

mod common;

use common::{
    SPECIAL_LEAVES, TARGET_JOB_BYTES, algorithm, config, layout, leaf_size, pattern, size_for,
    stream_layout,
};
use std::collections::HashSet;
use std::ops::Range;

use mtsum::layout::{JobKind, MTSUM_MAX_LEAF, TreeBuilder};
use mtsum::{Algorithm, Digest, Layout, LeafSize, reference};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A permutation of `0..len` drawn from `seed` (Fisher–Yates over splitmix64).
fn permutation(len: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    let random = pattern(8 * len, seed);
    for i in (1..len).rev() {
        let r = u64::from_le_bytes(random[8 * i..8 * i + 8].try_into().unwrap());
        order.swap(i, (r % (i as u64 + 1)) as usize);
    }
    order
}

/// Chunk lengths to feed a hasher with, used in a cycle.
fn chunking() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        Just(vec![1]),
        Just(vec![7]),
        Just(vec![64]),
        Just(vec![usize::MAX]),
        prop::collection::vec(1usize..=300, 1..12),
    ]
}

/// Feeds `data` to `update` in chunks whose lengths cycle through `chunks` (never all zero),
/// with an empty update at both ends for good measure.
fn feed(mut update: impl FnMut(&[u8]), data: &[u8], chunks: &[usize]) {
    update(&[]);
    let mut rest = data;
    for &len in chunks.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (now, later) = rest.split_at(len.clamp(1, rest.len()));
        update(now);
        rest = later;
    }
    update(&[]);
}

/// The digest of one job, hashed by the layout's job hasher in the given chunks.
fn hash_job(layout: Layout, alg: Algorithm, data: &[u8], chunks: &[usize]) -> Digest {
    let mut h = layout.job_hasher(alg);
    feed(|c| h.update(c), data, chunks);
    h.finalize()
}

fn slice(data: &[u8], r: &Range<u64>) -> Vec<u8> {
    data[r.start as usize..r.end as usize].to_vec()
}

/// The shape of a tree as [`Layout::walk`] builds it.
#[derive(Default, Debug)]
struct Shape {
    leaves: Vec<Range<u64>>,
    /// Every node, leaves included, children before parents.
    nodes: Vec<Range<u64>>,
    roots: usize,
}

impl TreeBuilder for Shape {
    type Node = Range<u64>;
    fn leaf(&mut self, index: usize, range: Range<u64>) -> Range<u64> {
        assert_eq!(
            index,
            self.leaves.len(),
            "leaves are numbered left to right"
        );
        self.leaves.push(range.clone());
        self.nodes.push(range.clone());
        range
    }
    fn inner(&mut self, range: Range<u64>, l: Range<u64>, r: Range<u64>, root: bool) -> Range<u64> {
        assert_eq!(l.start, range.start, "the left child starts its parent");
        assert_eq!(l.end, r.start, "the children are adjacent");
        assert_eq!(r.end, range.end, "the right child ends its parent");
        self.roots += root as usize;
        self.nodes.push(range.clone());
        range
    }
}

fn shape(layout: Layout, n: u64) -> Shape {
    let mut s = Shape::default();
    layout.walk(n, &mut s);
    s
}

/// How many leaves a layout has for `n` bytes, without walking the tree.
fn leaf_count(layout: Layout, n: u64) -> u64 {
    match layout.leaf_size() {
        Some(l) => n.div_ceil(l.get()),
        None => 2,
    }
}

// ---------------------------------------------------------------------------------------------
// The definitions of DESIGN.md §3, written out independently of src/layout.rs
// ---------------------------------------------------------------------------------------------

/// `node(offset, size, is_root)` of C++ mtsum (§3.1): the leaf ranges it visits.
fn spec_mtsum_leaves(offset: u64, size: u64, is_root: bool, out: &mut Vec<Range<u64>>) {
    if !is_root && size <= 134_217_728 {
        out.push(offset..offset + size);
        return;
    }
    let left = size / 2;
    spec_mtsum_leaves(offset, left, false, out);
    spec_mtsum_leaves(offset + left, size - left, false, out);
}

/// The Merkle Tree Hash of RFC 6962 §2.1 (`prefixed`) or of the "merkle" specification
/// (§3.3, no prefixes) over `leaves`: the left subtree takes the largest power of two of
/// leaves strictly less than their number.
fn spec_mth(alg: Algorithm, leaves: &[&[u8]], prefixed: bool) -> Digest {
    if leaves.len() == 1 {
        return if prefixed {
            alg.hash_parts(&[&[0], leaves[0]])
        } else {
            alg.hash(leaves[0])
        };
    }
    let mut k = 1;
    while 2 * k < leaves.len() {
        k *= 2;
    }
    let l = spec_mth(alg, &leaves[..k], prefixed);
    let r = spec_mth(alg, &leaves[k..], prefixed);
    if prefixed {
        alg.hash_parts(&[&[1], l.as_bytes(), r.as_bytes()])
    } else {
        alg.hash_parts(&[l.as_bytes(), r.as_bytes()])
    }
}

/// The root of the fixed-leaf layouts by §3.3/§3.4: `H("")` for empty input, otherwise the
/// tree hash of the `L`-byte segments (the last one shorter, never empty).
fn spec_fixed_root(alg: Algorithm, data: &[u8], leaf: u64, prefixed: bool) -> Digest {
    if data.is_empty() {
        return alg.hash(b"");
    }
    let segments: Vec<&[u8]> = data.chunks(leaf as usize).collect();
    spec_mth(alg, &segments, prefixed)
}

// ---------------------------------------------------------------------------------------------
// The definitions
// ---------------------------------------------------------------------------------------------

#[test]
fn root_of_empty_file_has_two_empty_leaves() {
    for alg in Algorithm::ALL {
        let empty_leaf = alg.hash(&[0]);
        let expected = alg.hash_parts(&[&[2], empty_leaf.as_bytes(), empty_leaf.as_bytes()]);
        assert_eq!(reference::root(Layout::Mtsum, alg, b""), expected, "{alg}");
        let s = shape(Layout::Mtsum, 0);
        assert_eq!(s.leaves, vec![0..0, 0..0]);
        assert_eq!(s.roots, 1);
    }
}

#[test]
fn root_of_one_byte_file_has_an_empty_left_leaf() {
    for alg in Algorithm::ALL {
        let left = alg.hash(&[0]);
        let right = alg.hash(&[0, b'x']);
        let expected = alg.hash_parts(&[&[2], left.as_bytes(), right.as_bytes()]);
        assert_eq!(reference::root(Layout::Mtsum, alg, b"x"), expected, "{alg}");
    }
}

#[test]
fn mtsum_root_of_a_small_file_is_two_halves_the_larger_on_the_right() {
    let data = pattern(1001, 7);
    for alg in Algorithm::ALL {
        let left = alg.hash_parts(&[&[0], &data[..500]]);
        let right = alg.hash_parts(&[&[0], &data[500..]]);
        let expected = alg.hash_parts(&[&[2], left.as_bytes(), right.as_bytes()]);
        assert_eq!(
            reference::root(Layout::Mtsum, alg, &data),
            expected,
            "{alg}"
        );
    }
}

#[test]
fn fixed_layouts_have_no_empty_trailing_leaf() {
    for leaf in SPECIAL_LEAVES {
        let l = LeafSize::new(leaf).unwrap();
        for layout in [Layout::Merkle(l), Layout::Rfc6962(l)] {
            for k in 1..=9 {
                let s = shape(layout, k * leaf);
                assert_eq!(s.leaves.len() as u64, k, "{layout} over {k} leaves");
                assert!(s.leaves.iter().all(|r| r.end - r.start == leaf));
                // One leaf exactly: the root is that leaf's digest, not a node over an empty leaf.
                let data = pattern(leaf as usize, k);
                let alg = Algorithm::Sha256;
                assert_eq!(
                    reference::root(layout, alg, &data),
                    layout.hash_leaf(alg, &data),
                    "{layout}"
                );
            }
        }
    }
}

#[test]
fn fixed_layouts_hash_empty_input_as_the_empty_string() {
    for alg in Algorithm::ALL {
        for layout in [
            Layout::Merkle(LeafSize::DEFAULT),
            Layout::Rfc6962(LeafSize::new(1).unwrap()),
        ] {
            assert_eq!(reference::root(layout, alg, b""), alg.hash(b""));
            assert!(layout.jobs(0, false).is_empty());
            assert!(layout.jobs(0, true).is_empty());
            assert_eq!(layout.job_hasher(alg).finalize(), alg.hash(b""));
            assert_eq!(
                *layout.combiner(alg).finish(0).unwrap().digest(),
                alg.hash(b"")
            );
        }
    }
}

#[test]
fn every_listed_layout_name_builds_that_layout_and_unknown_names_list_them() {
    for name in mtsum::layout::NAMES {
        assert_eq!(Layout::from_name(name, None).unwrap().name(), name);
    }
    assert_eq!(
        Layout::from_name("bogus", None).unwrap_err().to_string(),
        "unknown layout 'bogus' (known: mtsum, plain, merkle, rfc6962, s3, glacier, dropbox, btv2)"
    );
}

#[test]
fn merkle_reproduces_the_published_vector() {
    // DESIGN.md §3.3: 4 194 336 zero bytes (2^22 + 32), L = 64.
    let layout = Layout::Merkle(LeafSize::new(64).unwrap());
    let data = vec![0u8; (1 << 22) + 32];
    let expected = "e9683665a90bd70aabd7705cba57c2be2a4e913a0ca1a14d765497112c178120";
    let alg = Algorithm::Sha256;
    assert_eq!(reference::root(layout, alg, &data).to_hex(), expected);

    let jobs = layout.jobs(data.len() as u64, false);
    assert!(jobs.len() > 1, "the vector spans several jobs: {jobs:?}");
    let mut combiner = layout.combiner(alg);
    for (i, r) in jobs.iter().enumerate().rev() {
        combiner.add(
            i,
            r.clone(),
            hash_job(layout, alg, &slice(&data, r), &[4096]),
        );
    }
    assert_eq!(
        combiner
            .finish(data.len() as u64)
            .unwrap()
            .digest()
            .to_hex(),
        expected
    );
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn plain_is_the_ordinary_digest(alg in algorithm(), n in size_for(Layout::Plain, None, 5000), seed: u64) {
        let data = pattern(n as usize, seed);
        prop_assert_eq!(reference::root(Layout::Plain, alg, &data), alg.hash(&data));
    }

    #[test]
    fn reference_follows_the_merkle_and_rfc6962_definitions(
        (leaf, n) in leaf_size().prop_flat_map(|l| (Just(l), size_for(Layout::Merkle(l), None, 20_000))),
        alg in algorithm(),
        seed: u64,
    ) {
        let data = pattern(n as usize, seed);
        prop_assert_eq!(
            reference::root(Layout::Merkle(leaf), alg, &data),
            spec_fixed_root(alg, &data, leaf.get(), false)
        );
        prop_assert_eq!(
            reference::root(Layout::Rfc6962(leaf), alg, &data),
            spec_fixed_root(alg, &data, leaf.get(), true)
        );
    }

    #[test]
    fn mtsum_leaves_follow_the_halving_definition(
        n in prop_oneof![
            0u64..1000,
            prop::sample::select(vec![
                MTSUM_MAX_LEAF - 1, MTSUM_MAX_LEAF, MTSUM_MAX_LEAF + 1,
                2 * MTSUM_MAX_LEAF - 1, 2 * MTSUM_MAX_LEAF, 2 * MTSUM_MAX_LEAF + 1,
                2 * MTSUM_MAX_LEAF + 2, 4 * MTSUM_MAX_LEAF + 1, 4 * MTSUM_MAX_LEAF + 3,
            ]),
            0u64..(1 << 44),
        ],
    ) {
        let s = shape(Layout::Mtsum, n);
        let mut expected = Vec::new();
        spec_mtsum_leaves(0, n, true, &mut expected);
        prop_assert_eq!(&s.leaves, &expected);
        prop_assert!(s.leaves.len() >= 2, "the root always has two children");
        prop_assert!(s.leaves.iter().all(|r| r.end - r.start <= MTSUM_MAX_LEAF));
        prop_assert_eq!(s.roots, 1);
        prop_assert_eq!(s.nodes.last(), Some(&(0..n)));
    }
}

// ---------------------------------------------------------------------------------------------
// The plan of jobs
// ---------------------------------------------------------------------------------------------

/// A layout and a length, from tiny up to terabytes, with few enough leaves to walk the tree.
fn layout_and_any_length() -> impl Strategy<Value = (Layout, u64)> {
    layout().prop_flat_map(|layout| {
        let leaf = layout.leaf_size().map_or(1 << 30, LeafSize::get);
        let job = job_bytes(layout).unwrap_or(1 << 30);
        // About 2^17 leaves (a fast walk) or ten jobs, at most 2^41 bytes.
        let max = (leaf << 17).max(10 * job).min(1 << 41);
        let near_jobs = prop::sample::select(
            [1, 2, 3, 4, 5, 7, 8, 9]
                .into_iter()
                .flat_map(|k| [k * job - 1, k * job, k * job + 1])
                .filter(|&s| s <= max)
                .collect::<Vec<_>>(),
        );
        let n = prop_oneof![size_for(layout, None, max.min(1 << 20)), near_jobs, 0..=max];
        (Just(layout), n)
    })
}

/// The length of a full job of a fixed-leaf layout (see [`common::job_bytes`]).
fn job_bytes(layout: Layout) -> Option<u64> {
    Some(common::job_bytes(layout.leaf_size()?.get()))
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn jobs_tile_the_stream_contiguously((layout, n) in layout_and_any_length(), one_leaf: bool) {
        prop_assume!(!one_leaf || leaf_count(layout, n) <= 1 << 17);
        let jobs = layout.jobs(n, one_leaf);
        let mut at = 0;
        for r in &jobs {
            prop_assert_eq!(r.start, at, "jobs are contiguous: {:?}", jobs);
            prop_assert!(r.start <= r.end);
            at = r.end;
        }
        prop_assert_eq!(at, n, "jobs cover the whole stream");
        match layout {
            Layout::Plain => prop_assert_eq!(jobs, vec![0..n]),
            Layout::Mtsum => prop_assert!(jobs.len() >= 2),
            Layout::Merkle(_) | Layout::Rfc6962(_) => {
                prop_assert_eq!(jobs.is_empty(), n == 0);
                prop_assert!(jobs.iter().all(|r| r.start < r.end), "no empty job: {:?}", jobs);
            }
            other => prop_assert!(false, "tests/storage.rs covers {}", other),
        }
    }

    #[test]
    fn fixed_layout_jobs_start_on_leaf_boundaries_and_hold_a_power_of_two_leaves(
        (layout, n) in layout_and_any_length().prop_filter("fixed leaves", |(l, _)| l.leaf_size().is_some()),
    ) {
        let leaf = layout.leaf_size().unwrap().get();
        let jobs = layout.jobs(n, false);
        let full = job_bytes(layout).unwrap();
        for (i, r) in jobs.iter().enumerate() {
            prop_assert_eq!(r.start % leaf, 0, "job {:?} starts on a leaf boundary", r);
            prop_assert_eq!(r.start % full, 0, "job {:?} is aligned to its size", r);
            let len = r.end - r.start;
            if i + 1 < jobs.len() {
                prop_assert_eq!(len, full, "every job but the last is full: {:?}", r);
                prop_assert_eq!(len % leaf, 0);
                prop_assert!((len / leaf).is_power_of_two());
            } else {
                prop_assert!(len <= full);
            }
        }
        prop_assert!(full <= TARGET_JOB_BYTES.max(leaf));
        prop_assert!(full > TARGET_JOB_BYTES / 2 || full == leaf);
    }

    #[test]
    fn every_job_is_a_subtree_of_the_tree((layout, n) in layout_and_any_length()) {
        prop_assume!(leaf_count(layout, n) <= 1 << 17);
        let s = shape(layout, n);
        let nodes: HashSet<(u64, u64)> = s.nodes.iter().map(|r| (r.start, r.end)).collect();
        for r in layout.jobs(n, false) {
            prop_assert!(nodes.contains(&(r.start, r.end)), "job {:?} is no node of the tree", r);
        }
        if layout == Layout::Mtsum {
            prop_assert_eq!(layout.jobs(n, false), s.leaves);
        }
    }

    #[test]
    fn job_count_is_the_number_of_jobs_of_the_plan(
        (layout, n) in layout_and_any_length(),
        alg in algorithm(),
    ) {
        prop_assert_eq!(layout.job_count(alg, n), layout.plan(alg, n, false).len() as u64);
    }

    #[test]
    fn one_leaf_per_job_gives_exactly_the_leaves_of_walk((layout, n) in layout_and_any_length()) {
        prop_assume!(leaf_count(layout, n) <= 1 << 17);
        prop_assert_eq!(layout.jobs(n, true), shape(layout, n).leaves);
    }
}

#[test]
fn job_count_of_the_storage_layouts_is_the_number_of_jobs_of_the_plan() {
    for name in mtsum::layout::NAMES {
        let layout = Layout::from_name(name, None).unwrap();
        for n in [0, 1, 4 << 20, (4 << 20) + 1, 5 << 30, (1 << 36) + 3] {
            let count = layout.job_count(layout.default_algorithm(), n);
            let plan = layout.plan(layout.default_algorithm(), n, false);
            assert_eq!(count, plan.len() as u64, "{name}, {n} bytes");
        }
    }
}

#[test]
fn job_count_of_an_mtsum_stream_of_any_size_is_its_leaf_count() {
    // 2^63 bytes: 2^36 leaves of 128 MiB, counted without walking them.
    assert_eq!(Layout::Mtsum.job_count(Algorithm::Sha256, 1 << 63), 1 << 36);
    assert_eq!(
        Layout::Mtsum.job_count(Algorithm::Sha256, u64::MAX),
        1 << 37
    );
}

// ---------------------------------------------------------------------------------------------
// Job hasher and combiner against the reference
// ---------------------------------------------------------------------------------------------

/// A layout, an algorithm and a small length next to one of the layout's boundaries.
fn small_case(max: u64) -> impl Strategy<Value = (Layout, Algorithm, u64)> {
    (layout(), algorithm()).prop_flat_map(move |(l, a)| (Just(l), Just(a), size_for(l, None, max)))
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn job_hasher_is_independent_of_chunking(
        (layout, alg, n) in small_case(20_000),
        a in chunking(),
        b in chunking(),
        seed: u64,
    ) {
        let data = pattern(n as usize, seed);
        let whole = hash_job(layout, alg, &data, &[usize::MAX]);
        prop_assert_eq!(hash_job(layout, alg, &data, &a), whole);
        prop_assert_eq!(hash_job(layout, alg, &data, &b), whole);
    }

    #[test]
    fn a_stream_through_one_job_hasher_gives_the_root(
        layout in stream_layout(),
        alg in algorithm(),
        chunks in chunking(),
        n_seed in (0u64..20_000, any::<u64>()),
    ) {
        // Plain, merkle and rfc6962 hash a pipe as one job of unknown length.
        let (n, seed) = n_seed;
        let data = pattern(n as usize, seed);
        prop_assert_eq!(hash_job(layout, alg, &data, &chunks), reference::root(layout, alg, &data));
    }

    #[test]
    fn job_digest_is_the_root_of_its_subtree(
        (layout, alg, n) in small_case(20_000),
        one_leaf: bool,
        chunks in chunking(),
        seed: u64,
    ) {
        let data = pattern(n as usize, seed);
        for r in layout.jobs(n, one_leaf) {
            let bytes = slice(&data, &r);
            let expected = match layout {
                // A job of mtsum is a leaf, with its prefix byte.
                Layout::Mtsum => layout.hash_leaf(alg, &bytes),
                // A job of a fixed-leaf layout is a complete subtree (or the last, partial
                // one), shaped like the tree of its own bytes.
                _ => reference::root(layout, alg, &bytes),
            };
            prop_assert_eq!(hash_job(layout, alg, &bytes, &chunks), expected, "job {:?}", r);
        }
    }

    #[test]
    fn combiner_accepts_jobs_in_any_order(
        (layout, alg, n) in small_case(20_000),
        one_leaf: bool,
        chunks in chunking(),
        seed: u64,
        order_seed: u64,
    ) {
        let data = pattern(n as usize, seed);
        let jobs = layout.jobs(n, one_leaf);
        let digests: Vec<Digest> =
            jobs.iter().map(|r| hash_job(layout, alg, &slice(&data, r), &chunks)).collect();
        let mut combiner = layout.combiner(alg);
        for i in permutation(jobs.len(), order_seed) {
            combiner.add(i, jobs[i].clone(), digests[i]);
        }
        prop_assert_eq!(*combiner.finish(n).unwrap().digest(), reference::root(layout, alg, &data));
    }

    #[test]
    fn root_from_leaves_of_walk_is_the_reference_root((layout, alg, n) in small_case(20_000), seed: u64) {
        let data = pattern(n as usize, seed);
        let leaves: Vec<Digest> = shape(layout, n)
            .leaves
            .iter()
            .map(|r| layout.hash_leaf(alg, &slice(&data, r)))
            .collect();
        let root = reference::root(layout, alg, &data);
        prop_assert_eq!(layout.root_from_leaves(alg, n, &leaves), root);
        if layout.leaf_size().is_some() {
            prop_assert_eq!(layout.root_of_leaf_digests(alg, &leaves), root);
        }
    }
}

proptest! {
    // Several full jobs of 2–4 MiB: fewer cases, fast algorithms.
    #![proptest_config(config(24))]

    #[test]
    fn combiner_accepts_multi_megabyte_jobs_in_any_order(
        layout in prop_oneof![
            prop::sample::select(vec![63u64, 64, 65, 100, 4096]),
            64u64..=100_000,
            1u64..=6 << 20,
        ]
        .prop_flat_map(|l| {
            // Leaves of at least 63 bytes: a few hundred thousand leaves per case at most.
            let l = LeafSize::new(l.max(63)).unwrap();
            prop_oneof![Just(Layout::Merkle(l)), Just(Layout::Rfc6962(l))]
        }),
        alg in prop::sample::select(vec![Algorithm::Xxh3, Algorithm::Blake3, Algorithm::Sha256]),
        jobs_and_rest in (1u64..=4, 0u64..3),
        seed: u64,
        order_seed: u64,
    ) {
        // 1–4 full jobs, then: nothing, one byte, or one leaf and one byte more.
        let full = job_bytes(layout).unwrap();
        let leaf = layout.leaf_size().unwrap().get();
        let (k, rest) = jobs_and_rest;
        let n = k * full + [0, 1, leaf + 1][rest as usize];
        let data = pattern(n as usize, seed);
        let jobs = layout.jobs(n, false);
        prop_assert_eq!(jobs.len() as u64, n.div_ceil(full));
        let mut combiner = layout.combiner(alg);
        for i in permutation(jobs.len(), order_seed) {
            let r = jobs[i].clone();
            combiner.add(i, r.clone(), hash_job(layout, alg, &slice(&data, &r), &[65_537]));
        }
        prop_assert_eq!(*combiner.finish(n).unwrap().digest(), reference::root(layout, alg, &data));
    }

    #[test]
    fn plain_blake3_cut_into_subtree_jobs_is_the_ordinary_digest(
        jobs in 0u64..=5,
        rest in prop::sample::select(vec![0u64, 1, 1023, 1024, 1025, 65_536, (4 << 20) - 1]),
        one_leaf: bool,
        chunks in chunking(),
        seed: u64,
        order_seed: u64,
    ) {
        let (layout, alg) = (Layout::Plain, Algorithm::Blake3);
        let n = jobs * (4 << 20) + rest;
        let data = pattern(n as usize, seed);
        let plan = layout.plan(alg, n, one_leaf);
        // The jobs tile the stream; all but the last are one power of two of 1 KiB chunks
        // long, so that each is a whole subtree of BLAKE3's tree; drawing the tree (one leaf
        // per job) keeps the one leaf of `plain`.
        let ranges: Vec<Range<u64>> = plan.iter().map(|(r, _)| r.clone()).collect();
        prop_assert_eq!(ranges.first().map_or(0, |r| r.start), 0);
        prop_assert_eq!(ranges.last().map_or(0, |r| r.end), n);
        prop_assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
        let len = ranges[0].end - ranges[0].start;
        prop_assert!(ranges[..ranges.len() - 1].iter().all(|r| r.end - r.start == len));
        prop_assert!(ranges.len() == 1 || (len.is_power_of_two() && len >= 1024));
        prop_assert_eq!(ranges.len() > 1, !one_leaf && n > 4 << 20);

        let digests: Vec<Digest> = plan
            .into_iter()
            .map(|(r, kind)| {
                let mut h = layout.hasher_for(alg, kind);
                feed(|c| h.update(c), &slice(&data, &r), &chunks);
                h.finalize()
            })
            .collect();
        let mut combiner = layout.combiner(alg);
        for i in permutation(ranges.len(), order_seed) {
            combiner.add(i, ranges[i].clone(), digests[i]);
        }
        let root = *combiner.finish(n).unwrap().digest();
        let ordinary = blake3::hash(&data);
        prop_assert_eq!(root.as_bytes(), ordinary.as_bytes());
        prop_assert_eq!(root, reference::root(layout, alg, &data));
    }

    #[test]
    fn plan_is_the_layout_jobs_except_for_plain_blake3_and_crcs(
        (layout, n) in layout_and_any_length(),
        alg in algorithm(),
        one_leaf: bool,
    ) {
        let plan = layout.plan(alg, n, one_leaf);
        if layout != Layout::Plain || !(alg == Algorithm::Blake3 || alg.is_crc()) {
            let ranges: Vec<Range<u64>> = plan.iter().map(|(r, _)| r.clone()).collect();
            prop_assert_eq!(ranges, layout.jobs(n, one_leaf));
            prop_assert!(plan.iter().all(|(_, kind)| *kind == JobKind::Layout));
        }
    }

    #[test]
    fn combiner_folds_thousands_of_jobs_like_the_tree(
        layout in (64u64 << 10..=6 << 20).prop_flat_map(|l| {
            let l = LeafSize::new(l).unwrap();
            prop_oneof![Just(Layout::Merkle(l)), Just(Layout::Rfc6962(l))]
        }),
        jobs in 1u64..3000,
        tail in 0u64..(4 << 20),
        order_seed: u64,
    ) {
        // No data: the leaf digests are made up, each job's digest is the tree over its
        // leaves (whose shape depends only on their number), and the combiner must fold the
        // jobs into the tree over all leaves.
        let alg = Algorithm::Xxh3;
        let leaf = layout.leaf_size().unwrap().get();
        let n = (jobs - 1) * job_bytes(layout).unwrap() + 1 + tail % job_bytes(layout).unwrap();
        let leaves: Vec<Digest> =
            (0..n.div_ceil(leaf)).map(|i| alg.hash(&i.to_le_bytes())).collect();
        let plan = layout.jobs(n, false);
        prop_assert_eq!(plan.len() as u64, jobs);
        let mut combiner = layout.combiner(alg);
        for i in permutation(plan.len(), order_seed) {
            let r = &plan[i];
            let own = &leaves[(r.start / leaf) as usize..r.end.div_ceil(leaf) as usize];
            combiner.add(i, r.clone(), layout.root_of_leaf_digests(alg, own));
        }
        prop_assert_eq!(*combiner.finish(n).unwrap().digest(), layout.root_from_leaves(alg, n, &leaves));
    }
}
