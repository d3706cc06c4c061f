//! Helpers shared by the integration tests. Each test binary includes this module with
//! `mod common;` and uses only part of it, hence the `dead_code` allowance.

#![allow(dead_code)]

use mtsum::{Algorithm, Layout, LeafSize};
use proptest::prelude::*;
use proptest::test_runner::Config;

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
