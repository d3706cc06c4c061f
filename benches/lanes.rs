//! Multi-buffer hashing on one core: lane sets against one stream at a time, for MD5 (every
//! kernel this CPU has), on long, short and one-block messages. `benches/per_core.rs` measures
//! every algorithm's kernels.
//!
//! `cargo bench --bench lanes`; `-- "md5 16 x 1 MiB"` for the headline group only. Every group hashes
//! the same bytes with every contender, so the ratios hold even on a loaded machine; the
//! figures and the machine are in `docs/performance.md` ("Multi-buffer kernels").

mod common;

use common::messages;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use md5::Digest as _;
use mtsum::Algorithm;
use mtsum::lanes::{self, Event, Kernel, Lanes};

/// The lane set fed as a stream: every message in `chunk`-byte pushes, round-robin, as the
/// engine would feed leaves read in pieces.
fn hash_streamed(kernel: Kernel, messages: &[&[u8]], chunk: usize) -> usize {
    let mut set: Lanes<usize, &[u8]> = Lanes::with_kernel(kernel);
    let handles: Vec<_> = (0..messages.len().min(kernel.lanes()))
        .map(|i| set.start(i).unwrap())
        .collect();
    let mut finished = 0;
    let mut at = 0;
    while at < messages[0].len() {
        for (&lane, m) in handles.iter().zip(messages) {
            set.push(lane, &m[at..m.len().min(at + chunk)]);
        }
        at += chunk;
        while let Some(event) = set.poll() {
            if let Event::Finished(..) = event {
                finished += 1;
            }
        }
    }
    for &lane in &handles {
        set.finish(lane);
    }
    while let Some(event) = set.poll() {
        if let Event::Finished(..) = event {
            finished += 1;
        }
    }
    finished
}

fn compare(c: &mut Criterion, name: &str, count: usize, len: usize) {
    let owned = messages(count, len);
    let slices: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Bytes((count * len) as u64));
    if len >= 1 << 20 {
        group.sample_size(20);
    }
    for kernel in Kernel::available(Algorithm::Md5) {
        group.bench_function(BenchmarkId::new("lanes", kernel), |b| {
            b.iter(|| lanes::hash_many(kernel, b"", black_box(&slices)))
        });
    }
    if len >= 1 << 16 {
        let kernel = Kernel::multi_buffer(Algorithm::Md5)
            .or(Kernel::portable(Algorithm::Md5))
            .expect("MD5 has a kernel");
        group.bench_function(BenchmarkId::new("lanes-64KiB-pushes", kernel), |b| {
            b.iter(|| hash_streamed(kernel, black_box(&slices), 64 << 10))
        });
    }
    group.bench_function("rustcrypto-one-stream", |b| {
        b.iter(|| {
            for m in &slices {
                black_box(md5::Md5::digest(m));
            }
        })
    });
    #[cfg(feature = "openssl")]
    group.bench_function("openssl-one-stream", |b| {
        b.iter(|| {
            for m in &slices {
                black_box(openssl::hash::hash(openssl::hash::MessageDigest::md5(), m).unwrap());
            }
        })
    });
    group.finish();
}

fn md5_lanes(c: &mut Criterion) {
    // Leaves of the `merkle`/`rfc6962` default size, and the headline of the design notes.
    compare(c, "md5 16 x 1 MiB", 16, 1 << 20);
    // Small fixed leaves.
    compare(c, "md5 256 x 4 KiB", 256, 4 << 10);
    // Messages of a block or two, such as tree nodes.
    compare(c, "md5 1024 x 64 B", 1024, 64);
}

criterion_group!(benches, md5_lanes);
criterion_main!(benches);
