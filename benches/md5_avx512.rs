//! The AVX-512 MD5 kernel on one core: 16 and 32 lanes against the AVX2 lane set (16 lanes)
//! and one OpenSSL stream.
//!
//! `cargo bench --bench md5_avx512`. The first group hashes 64 KiB per message in every contender, so the figures
//! compare throughput per core directly; run `openssl speed -evp md5 -bytes 1048576` at the
//! same time for a reference, since on a shared machine only figures measured together mean
//! anything. The AVX-512 rows are the bare kernel; the AVX2 row goes through
//! `lanes::hash_many`, which adds the padding block and the lane set's scheduling (about 0.1 %
//! more blocks, and little time at this length). x86-64 only; on a CPU without AVX-512F it
//! prints a note and measures nothing.
//!
//! The second group lays the messages out in one large buffer, 4 KiB apart (a chunk's leaves)
//! or staggered by a cache line more per lane, to show what the set conflicts of L1 cost
//! (see `SPLIT_BLOCKS` in the kernel), with the AVX2 lane set on the same layouts for
//! comparison. On AMD Zen 4 the 32-lane rows of both groups run as two passes of 16 lanes, as
//! the kernel does there from 32 blocks on.

mod common;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::hint::black_box;

    use criterion::{Criterion, Throughput};
    use mtsum::Algorithm;
    use mtsum::lanes::{self, Kernel, bench_compress_md5_avx512};

    /// Bytes per message.
    const LEN: usize = 64 << 10;
    const BLOCKS: usize = LEN / 64;

    /// Whether the CPU runs the kernel.
    pub fn supported() -> bool {
        std::arch::is_x86_feature_detected!("avx512f")
    }

    /// The kernel with `N` lanes: `N * LEN` bytes per iteration.
    macro_rules! kernel {
        ($group:expr, $n:literal, $messages:expr) => {
            $group.throughput(Throughput::Bytes(($n * LEN) as u64));
            $group.bench_function(concat!("avx512-x", $n), |b| {
                let data: [&[u8]; $n] = std::array::from_fn(|i| $messages[i].as_slice());
                let mut states = [[0u32; 4]; $n];
                b.iter(|| bench_compress_md5_avx512(&mut states, black_box(&data), BLOCKS));
                black_box(states);
            });
        };
    }

    pub fn md5(c: &mut Criterion) {
        let messages = crate::common::messages(32, LEN);
        let mut group = c.benchmark_group("md5 64 KiB per lane");
        kernel!(group, 16, messages);
        kernel!(group, 32, messages);
        let avx2 = Kernel::available(Algorithm::Md5)
            .into_iter()
            .find(|k| k.name() == "md5-avx2-8x2");
        if let Some(kernel) = avx2 {
            let slices: Vec<&[u8]> = messages[..16].iter().map(Vec::as_slice).collect();
            group.throughput(Throughput::Bytes((16 * LEN) as u64));
            group.bench_function("avx2-8x2-lane-set", |b| {
                b.iter(|| lanes::hash_many(kernel, b"", black_box(&slices)))
            });
        }
        #[cfg(feature = "openssl")]
        {
            group.throughput(Throughput::Bytes(LEN as u64));
            group.bench_function("openssl-x1", |b| {
                let digest = openssl::hash::MessageDigest::md5();
                b.iter(|| openssl::hash::hash(digest, black_box(&messages[0])).unwrap());
            });
        }
        group.finish();
    }

    /// Bytes of the buffer the laid-out messages are cut from: more than L2, as the chunks a
    /// reader has just written are.
    const SPREAD: usize = 16 << 20;

    /// `N` messages of `len` bytes cut from one buffer of [`SPREAD`] bytes, group after group
    /// (one group per iteration, so the data comes from beyond L2): message `j` of a group
    /// `len + skew * j` bytes after message `j - 1`, the first one byte into the group, as
    /// the bodies of RFC 6962 leaves behind their prefix byte.
    macro_rules! laid_out {
        ($group:expr, $n:literal, $len:expr, $skew:expr, $name:expr) => {{
            let (len, skew) = ($len, $skew);
            let span = $n * len + skew * $n * $n + 4096;
            let buf = vec![0x5au8; SPREAD];
            let groups = SPREAD / span;
            let mut g = 0;
            $group.throughput(Throughput::Bytes(($n * len) as u64));
            $group.bench_function(format!("avx512-x{} {}", $n, $name), |b| {
                let mut states = [[0u32; 4]; $n];
                b.iter(|| {
                    g = (g + 1) % groups;
                    let data: [&[u8]; $n] = std::array::from_fn(|j| {
                        let at = g * span + 1 + j * (len + skew * j);
                        &buf[at..at + len]
                    });
                    bench_compress_md5_avx512(&mut states, black_box(&data), len / 64)
                });
                black_box(states);
            });
        }};
    }

    /// The AVX2 lane set (`md5-avx2-8x2`, 16 lanes) on messages laid out as [`laid_out!`]
    /// lays them, behind a prefix byte as RFC 6962 leaves are, through `lanes::hash_many`
    /// (the path of a chunk's leaves): what the set conflicts cost where there is no AVX-512.
    fn laid_out_avx2(
        group: &mut criterion::BenchmarkGroup<criterion::measurement::WallTime>,
        len: usize,
        skew: usize,
        name: &str,
    ) {
        const N: usize = 16;
        let Some(kernel) = Kernel::available(Algorithm::Md5)
            .into_iter()
            .find(|k| k.name() == "md5-avx2-8x2")
        else {
            return;
        };
        let span = N * len + skew * N * N + 4096;
        let buf = vec![0x5au8; SPREAD];
        let groups = SPREAD / span;
        let mut g = 0;
        group.throughput(Throughput::Bytes((N * len) as u64));
        group.bench_function(format!("avx2-x{N} {name}"), |b| {
            b.iter(|| {
                g = (g + 1) % groups;
                let data: Vec<&[u8]> = (0..N)
                    .map(|j| {
                        let at = g * span + 1 + j * (len + skew * j);
                        &buf[at..at + len]
                    })
                    .collect();
                lanes::hash_many(kernel, b"\0", black_box(&data))
            });
        });
    }

    /// Messages 4 KiB apart, as the leaves of a chunk and the lanes' read buffers are, so
    /// that every lane's row of a block falls in the same sets of L1, against the same
    /// messages a cache line or more apart from each other.
    pub fn md5_aliasing(c: &mut Criterion) {
        for len in [4 << 10, 64 << 10] {
            let mut group = c.benchmark_group(format!("md5 {} KiB per lane, laid out", len >> 10));
            laid_out!(group, 16, len, 0, "4 KiB apart");
            laid_out!(group, 32, len, 0, "4 KiB apart");
            laid_out!(group, 16, len, 64, "staggered");
            laid_out!(group, 32, len, 64, "staggered");
            laid_out_avx2(&mut group, len, 0, "4 KiB apart");
            laid_out_avx2(&mut group, len, 64, "staggered");
            group.finish();
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn main() {
    if !x86::supported() {
        eprintln!("skipped: this CPU lacks AVX-512F");
        return;
    }
    let mut c = criterion::Criterion::default().configure_from_args();
    x86::md5(&mut c);
    x86::md5_aliasing(&mut c);
    c.final_summary();
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    eprintln!("skipped: the AVX-512 kernel is x86-64 only");
}
