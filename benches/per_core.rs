//! The per-core rate of every multi-buffer kernel this CPU runs (on a CPU with AVX-512, the
//! AVX2 ones too), against the one-stream backend of `Algorithm::hash`, on messages already
//! in memory: what a core can hash when reading costs nothing. The whole program's rate
//! (`mtsum -p 1`, reading included) is compared with it in `docs/performance.md`
//! ("Per core, AVX-512 and AVX2").
//!
//! `cargo bench --bench per_core`; `-- md5` for one algorithm. Times are the thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`), not wall-clock time, so that other processes on a shared
//! machine do not count; they still slow the core down through its caches, so compare figures
//! of one run.

mod common;

use common::messages;

use std::hint::black_box;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mtsum::Algorithm;
use mtsum::lanes::{self, Kernel};

/// The algorithms with multi-buffer kernels.
const ALGORITHMS: [Algorithm; 4] = [
    Algorithm::Md5,
    Algorithm::Sha1,
    Algorithm::Sha256,
    Algorithm::Sha512,
];

fn per_core(c: &mut Criterion<ThreadCpuTime>) {
    // 32 messages fill every kernel's lanes (MD5 in AVX-512 has 32), several times over for
    // the others; 64 KiB is the leaf size of the per-core targets, 4 KiB the smallest.
    for (count, len, label) in [(32, 64 << 10, "32 x 64 KiB"), (256, 4 << 10, "256 x 4 KiB")] {
        let owned = messages(count, len);
        let slices: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        for alg in ALGORITHMS {
            let mut group = c.benchmark_group(format!("{alg} {label}"));
            group.throughput(Throughput::BytesDecimal((count * len) as u64));
            for kernel in Kernel::available(alg) {
                group.bench_function(BenchmarkId::new("lanes", kernel), |b| {
                    b.iter(|| lanes::hash_many(kernel, b"", black_box(&slices)))
                });
            }
            group.bench_function("one-stream", |b| {
                b.iter(|| {
                    for m in &slices {
                        black_box(alg.hash(m));
                    }
                })
            });
            group.finish();
        }
    }
}

/// The leaves of `-t rfc6962` (a `0x00` prefix) of 1, 4 and 64 KiB, 4 MiB of them in one
/// buffer laid out as the engine reads a chunk (leaves of whole pages a cache line apart, as
/// `RangeReader::spread` places them; smaller ones side by side): what a leaf costs beyond its
/// bytes (the prefix's block, the padding's, each group's calls into the kernel) with nothing
/// read. The 64 KiB leaves are the reference: their per-leaf cost is spread over 1 024 blocks,
/// and their 64 fill every kernel's lanes (larger leaves would leave MD5's 32 lanes idle
/// here). `-- leaves` for this group only.
fn leaf_sizes(c: &mut Criterion<ThreadCpuTime>) {
    const DATA: usize = 4 << 20;
    // Room for the leaves of 4 KiB a line apart: 64 bytes more for every 4 KiB.
    let data = messages(1, DATA + DATA / 64).remove(0);
    for alg in ALGORITHMS {
        let mut group = c.benchmark_group(format!("{alg} rfc6962 leaves"));
        group.throughput(Throughput::BytesDecimal(DATA as u64));
        // The kernel the program runs: under `MTSUM_SIMD=avx2`, the AVX2 one.
        if let Some(kernel) = Kernel::multi_buffer(alg) {
            for len in [1 << 10, 4 << 10, 64 << 10] {
                let id = BenchmarkId::new(kernel.name(), format!("{} KiB", len >> 10));
                let count = DATA / len;
                let stride = if len.is_multiple_of(4 << 10) {
                    len + 64
                } else {
                    len
                };
                let data = &data[..(count - 1) * stride + len];
                let mut out = Vec::with_capacity(count);
                group.bench_function(id, |b| {
                    b.iter(|| {
                        out.clear();
                        lanes::hash_each_into(kernel, &[0], black_box(data), len, stride, &mut out);
                    })
                });
            }
        }
        group.finish();
    }
}

/// Criterion's measurement of the calling thread's CPU time, in nanoseconds.
struct ThreadCpuTime;

fn thread_cpu_ns() -> u64 {
    u64::try_from(common::thread_cpu().as_nanos()).expect("CPU time fits 64 bits of ns")
}

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns() - start
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuTimeFormatter
    }
}

/// Shows times in µs of CPU time, throughputs in GB/s (decimal, as `openssl speed`).
struct CpuTimeFormatter;

impl ValueFormatter for CpuTimeFormatter {
    fn scale_values(&self, _typical_ns: f64, values: &mut [f64]) -> &'static str {
        values.iter_mut().for_each(|v| *v /= 1e3);
        "µs cpu"
    }

    fn scale_throughputs(
        &self,
        _typical_ns: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let bytes = match *throughput {
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) => n as f64,
            Throughput::ElementsAndBytes { bytes, .. } => bytes as f64,
            Throughput::Elements(n) | Throughput::Bits(n) => n as f64,
        };
        values.iter_mut().for_each(|ns| *ns = bytes / *ns);
        "GB/s cpu"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = per_core, leaf_sizes
}
criterion_main!(benches);
