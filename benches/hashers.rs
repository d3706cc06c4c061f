//! Each algorithm's hasher on one core: the backend the engine uses for long messages
//! (`Algorithm::bulk_hasher`, 1 MiB updates, as the engine feeds it), and the cost of one tree
//! node (`Algorithm::hash_parts` over a prefix byte and two digests).
//!
//! The `backend` group puts the candidates side by side on the same 1 MiB updates: the
//! RustCrypto crates and the system libcrypto (`openssl` crate), which `Algorithm` chooses
//! between (`ring` and `aws-lc-rs` were measured once, see `docs/performance-choices.md`).
//!
//! `cargo bench --bench hashers` (about a minute); `-- --quick` for a rough pass; `-- sha256`
//! for one algorithm. Compare the figures with `openssl speed -evp ALG -bytes 1048576` run at
//! the same time: the machines are shared, only ratios measured together mean anything.

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use mtsum::Algorithm;

const MIB: usize = 1 << 20;

fn bytes(len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

/// 1 MiB updates of a long message, with the backend that hashes leaves and plain digests.
fn long_messages(c: &mut Criterion) {
    let data = bytes(MIB);
    let mut group = c.benchmark_group("update 1 MiB");
    group.throughput(Throughput::Bytes(MIB as u64));
    for alg in Algorithm::ALL {
        group.bench_function(BenchmarkId::from_parameter(alg), |b| {
            let mut hasher = alg.bulk_hasher();
            b.iter(|| hasher.update(black_box(&data)));
        });
    }
    group.finish();
}

/// Every candidate backend of an algorithm on 1 MiB updates: what `Algorithm`'s choice of
/// backend rests on.
fn backends(c: &mut Criterion) {
    use sha2::Digest as _;
    let data = bytes(MIB);
    let mut group = c.benchmark_group("backend 1 MiB");
    group.throughput(Throughput::Bytes(MIB as u64));
    let mut md5 = md5::Md5::new();
    update_bench(&mut group, "md5/rustcrypto", &data, |d| md5.update(d));
    let mut sha1 = sha1::Sha1::new();
    update_bench(&mut group, "sha1/rustcrypto", &data, |d| sha1.update(d));
    let mut sha256 = sha2::Sha256::new();
    update_bench(&mut group, "sha256/rustcrypto", &data, |d| sha256.update(d));
    let mut sha512 = sha2::Sha512::new();
    update_bench(&mut group, "sha512/rustcrypto", &data, |d| sha512.update(d));
    #[cfg(feature = "openssl")]
    {
        use openssl::hash::{Hasher, MessageDigest};
        for (name, md) in [
            ("md5/openssl-evp", MessageDigest::md5()),
            ("sha1/openssl-evp", MessageDigest::sha1()),
            ("sha256/openssl-evp", MessageDigest::sha256()),
            ("sha512/openssl-evp", MessageDigest::sha512()),
        ] {
            let mut h = Hasher::new(md).expect("libcrypto has the digest");
            update_bench(&mut group, name, &data, |d| h.update(d).expect("update"));
        }
        let mut h = openssl::sha::Sha512::new();
        update_bench(&mut group, "sha512/openssl-low-level", &data, |d| {
            h.update(d)
        });
    }
    group.finish();
}

fn update_bench(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    data: &[u8],
    mut update: impl FnMut(&[u8]),
) {
    group.bench_function(name, |b| b.iter(|| update(black_box(data))));
}

/// One inner node: what every layout's combine step pays per node.
fn tree_nodes(c: &mut Criterion) {
    let mut group = c.benchmark_group("node");
    group.throughput(Throughput::Elements(1));
    for alg in Algorithm::ALL {
        let child = alg.hash(b"leaf");
        group.bench_function(BenchmarkId::from_parameter(alg), |b| {
            b.iter(|| alg.hash_parts(&[&[1], black_box(child.as_bytes()), child.as_bytes()]));
        });
    }
    group.finish();
}

fn quick() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = quick();
    targets = long_messages, backends, tree_nodes
}
criterion_main!(benches);
