//! Multi-buffer SHA-512 on one core: the AVX2 and AVX-512VL kernels on 4 and 8 messages at
//! once against one stream at a time (RustCrypto's compression, OpenSSL's SHA-512).
//!
//! `cargo bench --bench sha512_lanes`. Every contender hashes 64 KiB per message; throughput
//! counts the bytes of all messages, so the figures compare directly with
//! `openssl speed -evp sha512`. x86-64 only; a kernel the CPU cannot run is skipped.

mod common;

use common::messages;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Bytes per message.
const LEN: usize = 64 << 10;
/// SHA-512 blocks per message.
const BLOCKS: usize = LEN / 128;

#[cfg(target_arch = "x86_64")]
fn lanes<const N: usize>(c: &mut Criterion) {
    let avx2 = std::arch::is_x86_feature_detected!("avx2");
    let avx512 = std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl");
    if !avx2 {
        eprintln!("no AVX2 on this CPU: the AVX2 SHA-512 lanes kernel is not measured");
    }
    if !avx512 {
        eprintln!("no AVX-512F/VL on this CPU: the AVX-512 SHA-512 lanes kernel is not measured");
    }
    let owned = messages(N, LEN);
    let data: [&[u8]; N] = std::array::from_fn(|i| owned[i].as_slice());
    let mut states = [[0u64; 8]; N];
    let mut group = c.benchmark_group("sha512 64 KiB");
    group.throughput(Throughput::Bytes((N * LEN) as u64));
    if avx2 {
        group.bench_function(format!("avx2-{N}-lanes"), |b| {
            b.iter(|| mtsum::lanes::bench_compress_sha512(&mut states, black_box(&data), BLOCKS))
        });
    }
    if avx512 {
        group.bench_function(format!("avx512vl-{N}-lanes"), |b| {
            b.iter(|| {
                mtsum::lanes::bench_compress_sha512_avx512(&mut states, black_box(&data), BLOCKS)
            })
        });
    }
    group.finish();
    black_box(states);
}

fn one_stream(c: &mut Criterion) {
    let owned = messages(1, LEN);
    let message = owned[0].as_slice();
    let blocks: Vec<[u8; 128]> = message
        .chunks_exact(128)
        .map(|b| b.try_into().unwrap())
        .collect();
    let mut group = c.benchmark_group("sha512 64 KiB");
    group.throughput(Throughput::Bytes(LEN as u64));
    let mut state = [0u64; 8];
    group.bench_function("rustcrypto-compress512-one-stream", |b| {
        b.iter(|| sha2::block_api::compress512(&mut state, black_box(&blocks)))
    });
    black_box(state);
    #[cfg(feature = "openssl")]
    group.bench_function("openssl-one-stream", |b| {
        b.iter(|| {
            let mut h = openssl::sha::Sha512::new();
            h.update(black_box(message));
            h.finish()
        })
    });
    group.finish();
}

#[cfg(target_arch = "x86_64")]
criterion_group!(benches, lanes::<4>, lanes::<8>, one_stream);
#[cfg(not(target_arch = "x86_64"))]
criterion_group!(benches, one_stream);
criterion_main!(benches);
