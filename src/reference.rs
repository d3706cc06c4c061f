//! The reference path: every layout computed by its definition over bytes in memory, one
//! scalar hasher, no threads, no chunking.
//!
//! It is deliberately the simplest code that can be right, so that every fast path (the
//! parallel engine, the sources, the job hashers) can be tested against it on random input.

use crate::algorithm::{Algorithm, Digest};
use crate::layout::{Fold, Layout};

/// The root digest of `data` under `layout` and `alg`, by definition.
pub fn root(layout: Layout, alg: Algorithm, data: &[u8]) -> Digest {
    let mut fold = Fold {
        layout,
        alg,
        leaf: |_, range: std::ops::Range<u64>| {
            layout.hash_leaf(alg, &data[range.start as usize..range.end as usize])
        },
    };
    layout
        .walk(data.len() as u64, &mut fold)
        .unwrap_or_else(|| alg.hash(b""))
}
