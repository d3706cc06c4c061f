//! Multi-stream SHA-NI kernels on one core: N messages interleaved against one stream at a time;
//! and the AVX2 kernels of eight lanes, which CPUs without SHA-NI run instead.
//!
//! `cargo bench --bench sha_ni`; `-- sha256` or `-- sha1` for one algorithm. Every contender
//! hashes 64 KiB per stream, so the figures compare throughput per core directly; run
//! `openssl speed -evp sha256 -bytes 1048576` (and `-evp sha1`) at the same time for a
//! reference, since on a shared machine only figures measured together mean anything. x86-64
//! only; a kernel the CPU lacks (SHA-NI, AVX2) is left out with a note.

mod common;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::hint::black_box;

    use criterion::{Criterion, Throughput};
    use mtsum::lanes::{
        bench_compress_sha1, bench_compress_sha1_avx2, bench_compress_sha256,
        bench_compress_sha256_avx2,
    };

    /// Bytes per stream.
    const LEN: usize = 64 << 10;
    const BLOCKS: usize = LEN / 64;

    /// Whether the CPU runs the SHA-NI kernels.
    pub fn supported() -> bool {
        std::arch::is_x86_feature_detected!("sha")
            && std::arch::is_x86_feature_detected!("ssse3")
            && std::arch::is_x86_feature_detected!("sse4.1")
    }

    /// Whether the CPU runs the AVX2 kernels.
    pub fn avx2() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
    }

    /// `data` as the blocks RustCrypto's compression functions take.
    fn blocks(data: &[u8]) -> Vec<[u8; 64]> {
        data.chunks_exact(64)
            .map(|b| b.try_into().expect("64 bytes"))
            .collect()
    }

    /// The kernel with `N` streams: `N * LEN` bytes per iteration.
    macro_rules! kernel {
        ($group:expr, $f:ident, $words:literal, $n:literal, $streams:expr) => {
            kernel!($group, $f, $words, $n, $streams, concat!("ni-x", $n))
        };
        ($group:expr, $f:ident, $words:literal, $n:literal, $streams:expr, $name:expr) => {
            $group.throughput(Throughput::Bytes(($n * LEN) as u64));
            $group.bench_function($name, |b| {
                let data: [&[u8]; $n] = std::array::from_fn(|i| $streams[i].as_slice());
                let mut states = [[0u32; $words]; $n];
                b.iter(|| $f(&mut states, black_box(&data), BLOCKS));
                black_box(states);
            });
        };
    }

    pub fn sha256(c: &mut Criterion) {
        let streams = crate::common::messages(8, LEN);
        let mut group = c.benchmark_group("sha256 64 KiB per stream");
        if supported() {
            kernel!(group, bench_compress_sha256, 8, 1, streams);
            kernel!(group, bench_compress_sha256, 8, 2, streams);
            kernel!(group, bench_compress_sha256, 8, 3, streams);
            kernel!(group, bench_compress_sha256, 8, 4, streams);
        }
        if avx2() {
            kernel!(group, bench_compress_sha256_avx2, 8, 8, streams, "avx2-x8");
        }
        group.throughput(Throughput::Bytes(LEN as u64));
        group.bench_function("sha2-crate-x1", |b| {
            let blocks = blocks(&streams[0]);
            let mut state = [0u32; 8];
            b.iter(|| sha2::block_api::compress256(&mut state, black_box(&blocks)));
            black_box(state);
        });
        #[cfg(feature = "openssl")]
        group.bench_function("openssl-x1", |b| {
            let digest = openssl::hash::MessageDigest::sha256();
            b.iter(|| openssl::hash::hash(digest, black_box(&streams[0])).unwrap());
        });
        group.finish();
    }

    pub fn sha1(c: &mut Criterion) {
        let streams = crate::common::messages(8, LEN);
        let mut group = c.benchmark_group("sha1 64 KiB per stream");
        if supported() {
            kernel!(group, bench_compress_sha1, 5, 1, streams);
            kernel!(group, bench_compress_sha1, 5, 2, streams);
            kernel!(group, bench_compress_sha1, 5, 3, streams);
            kernel!(group, bench_compress_sha1, 5, 4, streams);
        }
        if avx2() {
            kernel!(group, bench_compress_sha1_avx2, 5, 8, streams, "avx2-x8");
        }
        group.throughput(Throughput::Bytes(LEN as u64));
        group.bench_function("sha1-crate-x1", |b| {
            let blocks = blocks(&streams[0]);
            let mut state = [0u32; 5];
            b.iter(|| sha1::block_api::compress(&mut state, black_box(&blocks)));
            black_box(state);
        });
        #[cfg(feature = "openssl")]
        group.bench_function("openssl-x1", |b| {
            let digest = openssl::hash::MessageDigest::sha1();
            b.iter(|| openssl::hash::hash(digest, black_box(&streams[0])).unwrap());
        });
        group.finish();
    }
}

#[cfg(target_arch = "x86_64")]
fn main() {
    if !x86::supported() {
        eprintln!("this CPU lacks SHA-NI, SSSE3 or SSE4.1: the SHA-NI kernels are not measured");
    }
    if !x86::avx2() {
        eprintln!("this CPU lacks AVX2: the AVX2 kernels are not measured");
    }
    let mut c = criterion::Criterion::default().configure_from_args();
    x86::sha256(&mut c);
    x86::sha1(&mut c);
    c.final_summary();
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    eprintln!("skipped: the SHA-NI kernels are x86-64 only");
}
