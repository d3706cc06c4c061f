//! MD5 in AVX2: eight messages per 256-bit register, one 32-bit word of each per lane.
//!
//! MD5 is a chain of 64 dependent steps per block, so one stream is bound by latency, not by
//! the ALUs. Eight lanes in a register give 8× the work per instruction; interleaving two
//! independent groups of eight (16 messages) gives the out-of-order core a second chain to
//! fill the latency of the first, as Intel's isa-l_crypto `md5_mb_x8x2_avx2` does. The caller
//! (the job manager) supplies the same number of blocks for every lane; idle lanes point at
//! another lane's data and their result is thrown away.
//!
//! Written with `std::arch` intrinsics: within a `#[target_feature(enable = "avx2")]` function
//! the arithmetic intrinsics are safe to call, so the only `unsafe` left is reading memory
//! through pointers and entering the feature-gated code.

use std::arch::x86_64::*;

use super::simd::checked_pointers;

super::simd::bench_entry!(bench_compress_md5_avx2, [u32; 4]);

/// Whether the CPU runs the kernel.
pub(super) fn supported() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// Lanes per 256-bit register.
const WIDTH: usize = 8;

/// Runs `blocks` 64-byte blocks of every lane's data through its MD5 state (A, B, C, D), for
/// `N` = 8 lanes (one group) or 16 (two groups of eight interleaved).
///
/// # Panics
/// If a lane has less than `blocks * 64` bytes of data. Other `N` do not compile.
///
/// # Safety
/// The CPU must support AVX2 (`is_x86_feature_detected!("avx2")`).
pub(super) unsafe fn compress<const N: usize>(
    states: &mut [[u32; 4]; N],
    data: &[&[u8]; N],
    blocks: usize,
) {
    const { assert!(N == WIDTH || N == 2 * WIDTH, "8 or 16 lanes") };
    let ptrs = checked_pointers(data, blocks, 64);
    // SAFETY: the caller guarantees AVX2; every pointer has `blocks * 64` readable bytes
    // (checked by `checked_pointers`) and `data` outlives the calls.
    unsafe {
        if N == WIDTH {
            compress_groups::<1>(states, &ptrs, blocks);
        } else {
            compress_groups::<2>(states, &ptrs, blocks);
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

/// Hashes `blocks` blocks of the `8 * G` lanes, the `G` groups interleaved step by step.
///
/// # Safety
/// Every pointer in `ptrs` must have `blocks * 64` readable bytes.
#[target_feature(enable = "avx2")]
unsafe fn compress_groups<const G: usize>(
    states: &mut [[u32; 4]],
    ptrs: &[*const u8],
    blocks: usize,
) {
    assert!(states.len() == WIDTH * G && ptrs.len() == WIDTH * G);
    let start: [[__m256i; 4]; G] = std::array::from_fn(|g| load_states(states, WIDTH * g));
    let mut a: [__m256i; G] = std::array::from_fn(|g| start[g][0]);
    let mut b: [__m256i; G] = std::array::from_fn(|g| start[g][1]);
    let mut c: [__m256i; G] = std::array::from_fn(|g| start[g][2]);
    let mut d: [__m256i; G] = std::array::from_fn(|g| start[g][3]);
    let ones = _mm256_set1_epi32(-1);

    for block in 0..blocks {
        // The 16 message words of every lane, transposed: `w[g][j]` holds word `j` of the
        // eight lanes of group `g`.
        let mut w = [[_mm256_setzero_si256(); 16]; G];
        for (g, w) in w.iter_mut().enumerate() {
            let lanes = &ptrs[WIDTH * g..WIDTH * (g + 1)];
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

    for g in 0..G {
        store_states(states, WIDTH * g, [a[g], b[g], c[g], d[g]]);
    }
}

/// The states of lanes `first .. first + 8` as four registers, one per word (the A words of
/// the eight lanes, then B, C, D): a 4×8 transposition. Each state is loaded on its own (16
/// bytes), as it was stored: a wider load over two recent narrower stores would stall.
#[target_feature(enable = "avx2")]
fn load_states(states: &[[u32; 4]], first: usize) -> [__m256i; 4] {
    let lanes = &states[first..first + WIDTH];
    // SAFETY: a state is 16 bytes; unaligned load.
    let load = |lane: usize| unsafe { _mm_loadu_si128(lanes[lane].as_ptr().cast()) };
    // Lanes (0, 4), (1, 5), (2, 6), (3, 7).
    let v: [__m256i; 4] = std::array::from_fn(|k| {
        _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(load(k)), load(k + 4))
    });
    // u0 = a0 a1 b0 b1 | a4 a5 b4 b5, u1 = c0 c1 d0 d1 | c4 c5 d4 d5; u2, u3 for lanes 2, 3, 6, 7.
    let u0 = _mm256_unpacklo_epi32(v[0], v[1]);
    let u1 = _mm256_unpackhi_epi32(v[0], v[1]);
    let u2 = _mm256_unpacklo_epi32(v[2], v[3]);
    let u3 = _mm256_unpackhi_epi32(v[2], v[3]);
    [
        _mm256_unpacklo_epi64(u0, u2),
        _mm256_unpackhi_epi64(u0, u2),
        _mm256_unpacklo_epi64(u1, u3),
        _mm256_unpackhi_epi64(u1, u3),
    ]
}

/// Stores four registers of words (A, B, C, D of eight lanes) as the states of lanes
/// `first .. first + 8`: the inverse of [`load_states`].
#[target_feature(enable = "avx2")]
fn store_states(states: &mut [[u32; 4]], first: usize, [a, b, c, d]: [__m256i; 4]) {
    // u0 = a0 b0 a1 b1 | a4 b4 a5 b5, u1 = a2 b2 a3 b3 | a6 b6 a7 b7; u2, u3 for C and D.
    let u0 = _mm256_unpacklo_epi32(a, b);
    let u1 = _mm256_unpackhi_epi32(a, b);
    let u2 = _mm256_unpacklo_epi32(c, d);
    let u3 = _mm256_unpackhi_epi32(c, d);
    // Lanes (0, 4), (1, 5), (2, 6), (3, 7).
    let v = [
        _mm256_unpacklo_epi64(u0, u2),
        _mm256_unpackhi_epi64(u0, u2),
        _mm256_unpacklo_epi64(u1, u3),
        _mm256_unpackhi_epi64(u1, u3),
    ];
    let lanes = &mut states[first..first + WIDTH];
    // SAFETY: a state is 16 bytes; unaligned store.
    let mut store =
        |lane: usize, x: __m128i| unsafe { _mm_storeu_si128(lanes[lane].as_mut_ptr().cast(), x) };
    for (k, v) in v.into_iter().enumerate() {
        store(k, _mm256_castsi256_si128(v));
        store(k + 4, _mm256_extracti128_si256::<1>(v));
    }
}

/// Transposes an 8×8 matrix of 32-bit words: row `j` in, column `j` out (its own inverse).
/// Three rounds of shuffles (32-bit, 64-bit, 128-bit interleaves), 24 instructions. The
/// SHA-1 and SHA-256 kernels of eight lanes load their blocks and states with it too.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn transpose(r: [__m256i; WIDTH]) -> [__m256i; WIDTH] {
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
