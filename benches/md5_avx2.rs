//! The AVX2 MD5 kernel alone with one or two groups of eight lanes interleaved
//! (`md5-avx2-8x1`, `md5-avx2-8x2`), on the same messages laid out as a chunk's leaves are
//! and staggered: what the vector ALUs of this core give, and what the L1 set conflicts of
//! messages 4 KiB apart take from it ("MD5 in AVX2: how many groups of eight" in
//! `docs/performance-choices.md`, where three and four groups were measured too).
//!
//! `cargo bench --bench md5_avx2` measures every width, passes interleaved, and prints the
//! median rate of each in GB/s of the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`, so that
//! other processes on a shared machine do not count). `-- LANES` runs only the kernel of
//! `LANES` lanes for a few seconds, to be counted with `perf stat -e cycles,instructions`.
//!
//! The messages are 96 (a multiple of 8, 16, 24 and 32 lanes) of 64 KiB and of 4 KiB, cut
//! from one buffer a cache line apart from one another (message `j` starts `j * (len + 64)`
//! bytes in), so that the rows of a block do not all fall in the same sets of L1, and 4 KiB
//! messages next to each other, as `-l 4K` hashes a chunk's leaves. Every width hashes all
//! of them on each pass. `-- LANES KIB GAP` sets the length and the bytes between messages.
//! x86-64 only; on a CPU without AVX2 it prints a note.

mod common;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::hint::black_box;

    use mtsum::lanes::bench_compress_md5_avx2;

    use super::common::thread_cpu;

    /// Messages per pass: a multiple of every width.
    const COUNT: usize = 96;
    /// Passes per width, alternating between the widths.
    const PASSES: usize = 15;

    /// A buffer of pseudo-random bytes holding [`COUNT`] messages of `len` bytes, a cache line
    /// apart.
    struct Messages {
        buf: Vec<u8>,
        len: usize,
        /// Bytes between one message's end and the next one's start.
        gap: usize,
    }

    impl Messages {
        fn new(len: usize, gap: usize) -> Messages {
            let size = COUNT * (len + gap);
            let buf = (0..size as u64)
                .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8)
                .collect();
            Messages { buf, len, gap }
        }

        fn get(&self, j: usize) -> &[u8] {
            let at = j * (self.len + self.gap);
            &self.buf[at..at + self.len]
        }

        /// Every message through the kernel of `N` lanes, `N` at a time.
        fn pass<const N: usize>(&self) {
            let mut states = [[0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476]; N];
            for first in (0..COUNT).step_by(N) {
                let data: [&[u8]; N] = std::array::from_fn(|i| self.get(first + i));
                bench_compress_md5_avx2(&mut states, black_box(&data), self.len / 64);
            }
            black_box(states);
        }

        fn pass_of(&self, lanes: usize) {
            match lanes {
                8 => self.pass::<8>(),
                16 => self.pass::<16>(),
                _ => panic!("no kernel of {lanes} lanes"),
            }
        }
    }

    const WIDTHS: [usize; 2] = [8, 16];

    /// The median rate of every width, passes interleaved.
    pub fn all() {
        for (len, gap) in [(64 << 10, 64), (4 << 10, 64), (4 << 10, 0)] {
            let messages = Messages::new(len, gap);
            // Enough repeats per pass for a few tens of milliseconds.
            let repeats = (256 << 20) / (COUNT * len);
            let mut times = [const { Vec::new() }; WIDTHS.len()];
            for _ in 0..PASSES {
                for (w, &lanes) in WIDTHS.iter().enumerate() {
                    let start = thread_cpu();
                    for _ in 0..repeats {
                        messages.pass_of(lanes);
                    }
                    times[w].push(thread_cpu() - start);
                }
            }
            let bytes = (repeats * COUNT * len) as f64;
            for (w, &lanes) in WIDTHS.iter().enumerate() {
                times[w].sort();
                let median = times[w][PASSES / 2].as_secs_f64();
                let best = times[w][0].as_secs_f64();
                println!(
                    "md5-avx2-8x{} {:>2} KiB, {:>2} B apart: {:.2} GB/s cpu (median of {PASSES}), best {:.2}",
                    lanes / 8,
                    len >> 10,
                    gap,
                    bytes / median / 1e9,
                    bytes / best / 1e9,
                );
            }
        }
    }

    /// The kernel of `lanes` lanes alone on 8 GiB, `len` bytes a message.
    pub fn one(lanes: usize, len: usize, gap: usize) {
        let messages = Messages::new(len, gap);
        let repeats = (8 << 30) / (COUNT * len);
        let start = thread_cpu();
        for _ in 0..repeats {
            messages.pass_of(lanes);
        }
        let time = (thread_cpu() - start).as_secs_f64();
        let bytes = (repeats * COUNT * len) as f64;
        println!(
            "md5-avx2-8x{} {} KiB: {:.2} GB/s cpu",
            lanes / 8,
            len >> 10,
            bytes / time / 1e9
        );
    }
}

#[cfg(target_arch = "x86_64")]
fn main() {
    if !std::arch::is_x86_feature_detected!("avx2") {
        eprintln!("skipped: this CPU lacks AVX2");
        return;
    }
    // Criterion's flags (`--bench`) are ignored; a number is the lane count of one kernel,
    // a second one the message length in KiB.
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    match numbers[..] {
        [] => x86::all(),
        [lanes] => x86::one(lanes, 64 << 10, 64),
        [lanes, kib] => x86::one(lanes, kib << 10, 64),
        [lanes, kib, gap, ..] => x86::one(lanes, kib << 10, gap),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    eprintln!("skipped: the AVX2 kernel is x86-64 only");
}
