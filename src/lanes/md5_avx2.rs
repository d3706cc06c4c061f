//! MD5 in AVX2: eight messages per 256-bit register, one 32-bit word of each per lane.
//!
//! MD5 is a chain of 64 dependent steps per block, so one stream is bound by latency, not by
//! the ALUs. Eight lanes in a register give 8× the work per instruction; interleaving two
//! independent groups of eight (16 messages) gives the out-of-order core a second chain to
//! fill the latency of the first, as Intel's isa-l_crypto `md5_mb_x8x2_avx2` does. The caller
//! ([`super::Md5Lanes`]) supplies the same number of blocks for every lane; idle lanes point at
//! another lane's data and their result is thrown away.
//!
//! Written with `std::arch` intrinsics: within a `#[target_feature(enable = "avx2")]` function
//! the arithmetic intrinsics are safe to call, so the only `unsafe` left is reading memory
//! through pointers and entering the feature-gated code.

use std::arch::x86_64::*;

use super::{LANES, States};

/// Lanes per 256-bit register.
const WIDTH: usize = 8;

/// Runs `blocks` 64-byte blocks of every lane's data through its MD5 state, in groups of
/// eight lanes, two groups interleaved when `interleave` is set.
///
/// # Panics
/// If a lane has less than `blocks * 64` bytes of data.
///
/// # Safety
/// The CPU must support AVX2 (`is_x86_feature_detected!("avx2")`).
pub(super) unsafe fn compress(
    states: &mut States,
    data: &[&[u8]; LANES],
    blocks: usize,
    interleave: bool,
) {
    // The kernels below read `blocks * 64` bytes from every lane through raw pointers; this
    // check is what makes those reads sound.
    let len = blocks.checked_mul(64).expect("block count overflows");
    assert!(
        data.iter().all(|d| d.len() >= len),
        "every lane needs {blocks} blocks"
    );
    let ptrs: [*const u8; LANES] = std::array::from_fn(|i| data[i].as_ptr());
    // SAFETY: the caller guarantees AVX2; every pointer has `blocks * 64` readable bytes
    // (checked above) and `data` outlives the calls.
    unsafe {
        if interleave {
            compress_groups::<2>(states, &ptrs, 0, blocks);
        } else {
            compress_groups::<1>(states, &ptrs, 0, blocks);
            compress_groups::<1>(states, &ptrs, WIDTH, blocks);
        }
    }
}

/// `x` rotated left by the literal `s`: AVX2 has no vector rotate, so two shifts and an or.
macro_rules! rotl {
    ($x:expr, $s:literal) => {
        _mm256_or_si256(
            _mm256_slli_epi32::<$s>($x),
            _mm256_srli_epi32::<{ 32 - $s }>($x),
        )
    };
}

// The four round functions of RFC 1321, written so that the newest value (`x`, the `b` of
// the step) enters last: `(y ^ z)` and `!z` do not wait for it.
macro_rules! f {
    ($x:expr, $y:expr, $z:expr, $ones:expr) => {
        // (x & y) | (!x & z)
        _mm256_xor_si256($z, _mm256_and_si256($x, _mm256_xor_si256($y, $z)))
    };
}
macro_rules! g {
    ($x:expr, $y:expr, $z:expr, $ones:expr) => {
        // (x & z) | (y & !z); the two halves never overlap, so or is add (one step shorter).
        _mm256_add_epi32(_mm256_and_si256($x, $z), _mm256_andnot_si256($z, $y))
    };
}
macro_rules! h {
    ($x:expr, $y:expr, $z:expr, $ones:expr) => {
        _mm256_xor_si256($x, _mm256_xor_si256($y, $z))
    };
}
macro_rules! i {
    ($x:expr, $y:expr, $z:expr, $ones:expr) => {
        // y ^ (x | !z)
        _mm256_xor_si256($y, _mm256_or_si256($x, _mm256_xor_si256($z, $ones)))
    };
}

/// Hashes `blocks` blocks of lanes `first .. first + 8 * G`, the `G` groups interleaved step
/// by step.
///
/// # Safety
/// Every pointer in `ptrs[first..first + 8 * G]` must have `blocks * 64` readable bytes.
#[target_feature(enable = "avx2")]
unsafe fn compress_groups<const G: usize>(
    states: &mut States,
    ptrs: &[*const u8; LANES],
    first: usize,
    blocks: usize,
) {
    assert!(first + WIDTH * G <= LANES);
    let load_state = |states: &States, word: usize, g: usize| {
        let lanes = &states.0[word][first + WIDTH * g..first + WIDTH * (g + 1)];
        // SAFETY: `lanes` holds exactly 8 `u32`s; unaligned load.
        unsafe { _mm256_loadu_si256(lanes.as_ptr().cast()) }
    };
    let mut a: [__m256i; G] = std::array::from_fn(|g| load_state(states, 0, g));
    let mut b: [__m256i; G] = std::array::from_fn(|g| load_state(states, 1, g));
    let mut c: [__m256i; G] = std::array::from_fn(|g| load_state(states, 2, g));
    let mut d: [__m256i; G] = std::array::from_fn(|g| load_state(states, 3, g));
    let ones = _mm256_set1_epi32(-1);

    for block in 0..blocks {
        // The 16 message words of every lane, transposed: `w[g][j]` holds word `j` of the
        // eight lanes of group `g`.
        let mut w = [[_mm256_setzero_si256(); 16]; G];
        for (g, w) in w.iter_mut().enumerate() {
            let lanes = &ptrs[first + WIDTH * g..first + WIDTH * (g + 1)];
            let rows = |half: usize| -> [__m256i; WIDTH] {
                std::array::from_fn(|j| {
                    // SAFETY: `block < blocks` and the lane has `blocks * 64` bytes, so the
                    // 32 bytes at `block * 64 + half * 32` are readable; unaligned load.
                    unsafe { _mm256_loadu_si256(lanes[j].add(block * 64 + half * 32).cast()) }
                })
            };
            w[..WIDTH].copy_from_slice(&transpose(rows(0)));
            w[WIDTH..].copy_from_slice(&transpose(rows(1)));
        }
        let (a0, b0, c0, d0) = (a, b, c, d);

        // One MD5 step in every group: a = b + rotl(a + f(b, c, d) + w[k] + K, s).
        macro_rules! step {
            ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $k:literal, $K:literal, $s:literal) => {
                for g in 0..G {
                    let t = _mm256_add_epi32(
                        _mm256_add_epi32($a[g], w[g][$k]),
                        _mm256_set1_epi32(u32::cast_signed($K)),
                    );
                    let t = _mm256_add_epi32(t, $f!($b[g], $c[g], $d[g], ones));
                    $a[g] = _mm256_add_epi32($b[g], rotl!(t, $s));
                }
            };
        }

        // Round 1.
        step!(f, a, b, c, d, 0, 0xd76aa478, 7);
        step!(f, d, a, b, c, 1, 0xe8c7b756, 12);
        step!(f, c, d, a, b, 2, 0x242070db, 17);
        step!(f, b, c, d, a, 3, 0xc1bdceee, 22);
        step!(f, a, b, c, d, 4, 0xf57c0faf, 7);
        step!(f, d, a, b, c, 5, 0x4787c62a, 12);
        step!(f, c, d, a, b, 6, 0xa8304613, 17);
        step!(f, b, c, d, a, 7, 0xfd469501, 22);
        step!(f, a, b, c, d, 8, 0x698098d8, 7);
        step!(f, d, a, b, c, 9, 0x8b44f7af, 12);
        step!(f, c, d, a, b, 10, 0xffff5bb1, 17);
        step!(f, b, c, d, a, 11, 0x895cd7be, 22);
        step!(f, a, b, c, d, 12, 0x6b901122, 7);
        step!(f, d, a, b, c, 13, 0xfd987193, 12);
        step!(f, c, d, a, b, 14, 0xa679438e, 17);
        step!(f, b, c, d, a, 15, 0x49b40821, 22);
        // Round 2.
        step!(g, a, b, c, d, 1, 0xf61e2562, 5);
        step!(g, d, a, b, c, 6, 0xc040b340, 9);
        step!(g, c, d, a, b, 11, 0x265e5a51, 14);
        step!(g, b, c, d, a, 0, 0xe9b6c7aa, 20);
        step!(g, a, b, c, d, 5, 0xd62f105d, 5);
        step!(g, d, a, b, c, 10, 0x02441453, 9);
        step!(g, c, d, a, b, 15, 0xd8a1e681, 14);
        step!(g, b, c, d, a, 4, 0xe7d3fbc8, 20);
        step!(g, a, b, c, d, 9, 0x21e1cde6, 5);
        step!(g, d, a, b, c, 14, 0xc33707d6, 9);
        step!(g, c, d, a, b, 3, 0xf4d50d87, 14);
        step!(g, b, c, d, a, 8, 0x455a14ed, 20);
        step!(g, a, b, c, d, 13, 0xa9e3e905, 5);
        step!(g, d, a, b, c, 2, 0xfcefa3f8, 9);
        step!(g, c, d, a, b, 7, 0x676f02d9, 14);
        step!(g, b, c, d, a, 12, 0x8d2a4c8a, 20);
        // Round 3.
        step!(h, a, b, c, d, 5, 0xfffa3942, 4);
        step!(h, d, a, b, c, 8, 0x8771f681, 11);
        step!(h, c, d, a, b, 11, 0x6d9d6122, 16);
        step!(h, b, c, d, a, 14, 0xfde5380c, 23);
        step!(h, a, b, c, d, 1, 0xa4beea44, 4);
        step!(h, d, a, b, c, 4, 0x4bdecfa9, 11);
        step!(h, c, d, a, b, 7, 0xf6bb4b60, 16);
        step!(h, b, c, d, a, 10, 0xbebfbc70, 23);
        step!(h, a, b, c, d, 13, 0x289b7ec6, 4);
        step!(h, d, a, b, c, 0, 0xeaa127fa, 11);
        step!(h, c, d, a, b, 3, 0xd4ef3085, 16);
        step!(h, b, c, d, a, 6, 0x04881d05, 23);
        step!(h, a, b, c, d, 9, 0xd9d4d039, 4);
        step!(h, d, a, b, c, 12, 0xe6db99e5, 11);
        step!(h, c, d, a, b, 15, 0x1fa27cf8, 16);
        step!(h, b, c, d, a, 2, 0xc4ac5665, 23);
        // Round 4.
        step!(i, a, b, c, d, 0, 0xf4292244, 6);
        step!(i, d, a, b, c, 7, 0x432aff97, 10);
        step!(i, c, d, a, b, 14, 0xab9423a7, 15);
        step!(i, b, c, d, a, 5, 0xfc93a039, 21);
        step!(i, a, b, c, d, 12, 0x655b59c3, 6);
        step!(i, d, a, b, c, 3, 0x8f0ccc92, 10);
        step!(i, c, d, a, b, 10, 0xffeff47d, 15);
        step!(i, b, c, d, a, 1, 0x85845dd1, 21);
        step!(i, a, b, c, d, 8, 0x6fa87e4f, 6);
        step!(i, d, a, b, c, 15, 0xfe2ce6e0, 10);
        step!(i, c, d, a, b, 6, 0xa3014314, 15);
        step!(i, b, c, d, a, 13, 0x4e0811a1, 21);
        step!(i, a, b, c, d, 4, 0xf7537e82, 6);
        step!(i, d, a, b, c, 11, 0xbd3af235, 10);
        step!(i, c, d, a, b, 2, 0x2ad7d2bb, 15);
        step!(i, b, c, d, a, 9, 0xeb86d391, 21);

        for g in 0..G {
            a[g] = _mm256_add_epi32(a[g], a0[g]);
            b[g] = _mm256_add_epi32(b[g], b0[g]);
            c[g] = _mm256_add_epi32(c[g], c0[g]);
            d[g] = _mm256_add_epi32(d[g], d0[g]);
        }
    }

    for (word, v) in [a, b, c, d].iter().enumerate() {
        for (g, v) in v.iter().enumerate() {
            let lanes = &mut states.0[word][first + WIDTH * g..first + WIDTH * (g + 1)];
            // SAFETY: `lanes` holds exactly 8 `u32`s; unaligned store.
            unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), *v) };
        }
    }
}

/// Transposes an 8×8 matrix of 32-bit words: row `j` in, column `j` out. Three rounds of
/// shuffles (32-bit, 64-bit, 128-bit interleaves), 24 instructions.
#[target_feature(enable = "avx2")]
fn transpose(r: [__m256i; WIDTH]) -> [__m256i; WIDTH] {
    // t0 = r0[0] r1[0] r0[1] r1[1] | r0[4] r1[4] r0[5] r1[5], and so on.
    let t0 = _mm256_unpacklo_epi32(r[0], r[1]);
    let t1 = _mm256_unpackhi_epi32(r[0], r[1]);
    let t2 = _mm256_unpacklo_epi32(r[2], r[3]);
    let t3 = _mm256_unpackhi_epi32(r[2], r[3]);
    let t4 = _mm256_unpacklo_epi32(r[4], r[5]);
    let t5 = _mm256_unpackhi_epi32(r[4], r[5]);
    let t6 = _mm256_unpacklo_epi32(r[6], r[7]);
    let t7 = _mm256_unpackhi_epi32(r[6], r[7]);
    // u0 = r0[0] r1[0] r2[0] r3[0] | r0[4] r1[4] r2[4] r3[4], and so on.
    let u0 = _mm256_unpacklo_epi64(t0, t2);
    let u1 = _mm256_unpackhi_epi64(t0, t2);
    let u2 = _mm256_unpacklo_epi64(t1, t3);
    let u3 = _mm256_unpackhi_epi64(t1, t3);
    let u4 = _mm256_unpacklo_epi64(t4, t6);
    let u5 = _mm256_unpackhi_epi64(t4, t6);
    let u6 = _mm256_unpacklo_epi64(t5, t7);
    let u7 = _mm256_unpackhi_epi64(t5, t7);
    [
        _mm256_permute2x128_si256::<0x20>(u0, u4),
        _mm256_permute2x128_si256::<0x20>(u1, u5),
        _mm256_permute2x128_si256::<0x20>(u2, u6),
        _mm256_permute2x128_si256::<0x20>(u3, u7),
        _mm256_permute2x128_si256::<0x31>(u0, u4),
        _mm256_permute2x128_si256::<0x31>(u1, u5),
        _mm256_permute2x128_si256::<0x31>(u2, u6),
        _mm256_permute2x128_si256::<0x31>(u3, u7),
    ]
}
