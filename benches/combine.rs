//! Each layout's combine step, apart from reading:
//! - `merkle` and `rfc6962` with 64-byte leaves through `Layout::job_hasher`: 1M leaves of one
//!   64 MiB job, each leaf hashed and pushed onto the binary-counter stack of subtrees;
//! - `Layout::root_of_leaf_digests` folding 1M leaf digests already computed (nodes only);
//! - the `Combiner` of each layout taking the job digests of a 1 TiB file in a shuffled order,
//!   as workers finish them, and folding them into the root.
//!
//! `cargo bench --bench combine` (about a minute); `-- --quick` for a rough pass.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mtsum::{Algorithm, Digest, Layout, LeafSize};

const LEAVES: usize = 1 << 20;

fn leaf(bytes: u64) -> LeafSize {
    LeafSize::new(bytes).unwrap()
}

/// 1M leaves of 64 bytes in 1 MiB updates: leaf hashing plus the stack fold.
fn job_hasher_small_leaves(c: &mut Criterion) {
    let data: Vec<u8> = (0..1u32 << 20).map(|i| (i * 7 + (i >> 9)) as u8).collect();
    let mut group = c.benchmark_group("job_hasher 1M leaves of 64 B");
    group.throughput(Throughput::Elements(LEAVES as u64));
    group.sample_size(10);
    for alg in [Algorithm::Sha256, Algorithm::Blake3, Algorithm::Xxh3] {
        for layout in [Layout::Merkle(leaf(64)), Layout::Rfc6962(leaf(64))] {
            let id = BenchmarkId::new(layout.to_string(), alg);
            group.bench_function(id, |b| {
                b.iter(|| {
                    let mut h = layout.job_hasher(alg);
                    for _ in 0..LEAVES * 64 / data.len() {
                        h.update(black_box(&data));
                    }
                    h.finalize()
                });
            });
        }
    }
    group.finish();
}

/// 1M leaf digests folded into the root: the tree's nodes alone.
fn root_of_leaf_digests(c: &mut Criterion) {
    let mut group = c.benchmark_group("root of 1M leaf digests");
    group.throughput(Throughput::Elements(LEAVES as u64));
    group.sample_size(10);
    for alg in [Algorithm::Sha256, Algorithm::Md5, Algorithm::Blake3] {
        let leaves: Vec<Digest> = (0..LEAVES as u32)
            .map(|i| alg.hash(&i.to_le_bytes()))
            .collect();
        for layout in [Layout::Merkle(leaf(64)), Layout::Rfc6962(leaf(64))] {
            let id = BenchmarkId::new(layout.to_string(), alg);
            group.bench_function(id, |b| {
                b.iter(|| layout.root_of_leaf_digests(alg, black_box(&leaves)));
            });
        }
    }
    group.finish();
}

/// The job digests of a 1 TiB file, added in a scrambled order and folded.
fn combiner(c: &mut Criterion) {
    const TIB: u64 = 1 << 40;
    let alg = Algorithm::Sha256;
    let mut group = c.benchmark_group("Combiner, 1 TiB file, sha256");
    group.sample_size(10);
    for layout in [
        Layout::Mtsum,
        Layout::Rfc6962(LeafSize::DEFAULT),
        Layout::Merkle(leaf(4096)),
    ] {
        let jobs = layout.jobs(TIB, false);
        let digests: Vec<Digest> = (0..jobs.len() as u32)
            .map(|i| alg.hash(&i.to_le_bytes()))
            .collect();
        // Workers finish jobs roughly in order, a few out of place: swap neighbours.
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        for pair in order.chunks_mut(2) {
            pair.reverse();
        }
        group.throughput(Throughput::Elements(jobs.len() as u64));
        let id = BenchmarkId::from_parameter(format!("{layout} ({} jobs)", jobs.len()));
        group.bench_function(id, |b| {
            b.iter(|| {
                let mut combiner = layout.combiner(alg);
                for &i in &order {
                    combiner.add(i, jobs[i].clone(), digests[i]);
                }
                combiner.finish(TIB)
            });
        });
    }
    group.finish();
}

fn quick() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = quick();
    targets = job_hasher_small_leaves, root_of_leaf_digests, combiner
}
criterion_main!(benches);
