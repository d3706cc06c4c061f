//! Multi-stream SHA-NI kernels on one core: N messages interleaved against one stream at a time.
//!
//! `cargo bench --bench sha_ni`; `-- sha256` or `-- sha1` for one algorithm. Every contender
//! hashes 64 KiB per stream, so the figures compare throughput per core directly; run
//! `openssl speed -evp sha256 -bytes 1048576` (and `-evp sha1`) at the same time for a
//! reference, since on a shared machine only figures measured together mean anything. x86-64
//! only; on a CPU without SHA-NI it prints a note and measures nothing.

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::hint::black_box;

    use criterion::{Criterion, Throughput};
    use mtsum::lanes::{bench_compress_sha1, bench_compress_sha256};

    /// Bytes per stream.
    const LEN: usize = 64 << 10;
    const BLOCKS: usize = LEN / 64;

    /// Whether the CPU runs the kernels.
    pub fn supported() -> bool {
        std::arch::is_x86_feature_detected!("sha")
            && std::arch::is_x86_feature_detected!("ssse3")
            && std::arch::is_x86_feature_detected!("sse4.1")
    }

    /// Four different streams of `LEN` bytes.
    fn streams() -> Vec<Vec<u8>> {
        (0..4u32)
            .map(|i| {
                (0..LEN as u32)
                    .map(|j| (j.wrapping_mul(2_654_435_761).wrapping_add(i) >> 13) as u8)
                    .collect()
            })
            .collect()
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
            $group.throughput(Throughput::Bytes(($n * LEN) as u64));
            $group.bench_function(concat!("ni-x", $n), |b| {
                let data: [&[u8]; $n] = std::array::from_fn(|i| $streams[i].as_slice());
                let mut states = [[0u32; $words]; $n];
                b.iter(|| $f(&mut states, black_box(&data), BLOCKS));
                black_box(states);
            });
        };
    }

    pub fn sha256(c: &mut Criterion) {
        let streams = streams();
        let mut group = c.benchmark_group("sha256 64 KiB per stream");
        kernel!(group, bench_compress_sha256, 8, 1, streams);
        kernel!(group, bench_compress_sha256, 8, 2, streams);
        kernel!(group, bench_compress_sha256, 8, 3, streams);
        kernel!(group, bench_compress_sha256, 8, 4, streams);
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
        let streams = streams();
        let mut group = c.benchmark_group("sha1 64 KiB per stream");
        kernel!(group, bench_compress_sha1, 5, 1, streams);
        kernel!(group, bench_compress_sha1, 5, 2, streams);
        kernel!(group, bench_compress_sha1, 5, 3, streams);
        kernel!(group, bench_compress_sha1, 5, 4, streams);
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
        eprintln!("skipped: this CPU lacks SHA-NI, SSSE3 or SSE4.1");
        return;
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
