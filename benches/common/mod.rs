//! What several benchmarks share.

use std::time::Duration;

/// The calling thread's CPU time: what the benchmarks that compare kernels measure, so that
/// other processes on a shared machine do not count (they still slow the core down through its
/// caches, so compare figures of one run).
#[allow(dead_code, reason = "each benchmark uses what it needs of this module")]
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; the clock id is a constant of the platform.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// `count` different messages of `len` bytes (the low bytes of a multiplicative hash of the
/// position): what the kernel benchmarks hash, whose rates do not depend on the bytes.
#[allow(dead_code, reason = "each benchmark uses what it needs of this module")]
pub fn messages(count: usize, len: usize) -> Vec<Vec<u8>> {
    let bytes =
        (0..count * len).map(|i| ((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8);
    let bytes: Vec<u8> = bytes.collect();
    bytes.chunks(len).map(<[u8]>::to_vec).collect()
}
