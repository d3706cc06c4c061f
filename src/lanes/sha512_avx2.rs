//! SHA-512 in AVX2: four messages per 256-bit register, one 64-bit word of each per lane.
//!
//! One SHA-512 stream is a chain of 80 dependent rounds per block, and most x86 cores have no
//! SHA-512 instruction (SHA-NI covers SHA-1 and SHA-256 only), so a core hashes one stream at
//! a fraction of its ALU width. The leaves of a Merkle tree are independent messages: four of
//! them side by side in a 256-bit register do 4× the work per instruction. Two such groups can
//! be interleaved step by step (eight messages), as Intel's isa-l_crypto `sha512_mb` kernels
//! do, to give the out-of-order core a second chain to work on while the first waits; on AMD
//! Zen 4 that gains nothing (under 1 %), as one group already keeps the vector ALUs busy.
//!
//! AVX2 has no 64-bit rotate, so each rotation is two shifts and an or: 22 of a round's 35
//! instructions are Σ0 and Σ1. The instruction count, not latency, is what bounds the kernel:
//! see [`compress_groups`]. AVX-512VL has the rotate and a three-input logic instruction;
//! `sha512_avx512` is this kernel with those, and takes from here everything but the round
//! functions: the entry checks, the constants, the loads and transpositions, and the order of
//! rounds and schedule ([`rounds!`]).
//!
//! Written with `std::arch` intrinsics: within a `#[target_feature(enable = "avx2")]` function
//! the arithmetic intrinsics are safe to call, so the only `unsafe` left is reading memory
//! through pointers and entering the feature-gated code.

use std::arch::x86_64::*;

use super::simd::{checked_pointers, xor_shifts};

/// Lanes (messages) per 256-bit register.
pub(super) const WIDTH: usize = 4;

/// Bytes per SHA-512 block.
pub(super) const BLOCK: usize = 128;

/// Whether this CPU runs [`compress`]: AVX2, as the SHA-256 kernel needs.
pub(super) use super::sha256_avx2::supported;

/// Runs `blocks` 128-byte blocks of `data[i]` through `states[i]`, SHA-512's (or SHA-384's:
/// the same compression) state in the order a..h, for `N` = 4 messages (one group) or 8 (two
/// groups of four interleaved).
///
/// # Panics
/// If a message has less than `blocks * 128` bytes of data. Other `N` do not compile.
///
/// # Safety
/// The CPU must support AVX2 ([`supported`]).
pub(super) unsafe fn compress<const N: usize>(
    states: &mut [[u64; 8]; N],
    data: &[&[u8]; N],
    blocks: usize,
) {
    // SAFETY: the caller guarantees AVX2, which the functions need.
    unsafe {
        by_groups(
            states,
            data,
            blocks,
            [compress_groups::<1>, compress_groups::<2>],
        )
    }
}

/// The `compress_groups` of a kernel for one group of four messages and for two.
pub(super) type Groups = [unsafe fn(&mut [[u64; 8]], &[*const u8], usize); 2];

/// Runs `groups[0]` over 4 messages or `groups[1]` over 8, once checked that every message
/// has `blocks` blocks: the entry of every kernel of four 64-bit lanes per register.
///
/// # Panics
/// If a message is shorter. `N` other than 4 or 8 does not compile.
///
/// # Safety
/// The CPU must run the functions of `groups`.
pub(super) unsafe fn by_groups<const N: usize>(
    states: &mut [[u64; 8]; N],
    data: &[&[u8]; N],
    blocks: usize,
    groups: Groups,
) {
    let ptrs = message_pointers(data, blocks);
    // SAFETY: the caller guarantees the CPU; every pointer has `blocks * 128` readable bytes
    // (checked by `message_pointers`) and `data` outlives the call; there are `4 * G`
    // messages for `groups[G - 1]`.
    unsafe { groups[N / WIDTH - 1](states, &ptrs, blocks) }
}

/// Whether this CPU runs [`compress_clmul`]: AVX2 and VPCLMULQDQ (the carry-less multiply
/// on 256-bit registers: AMD Zen 3 on, Intel Ice Lake and Alder Lake on).
pub(super) fn supported_clmul() -> bool {
    supported() && is_x86_feature_detected!("vpclmulqdq")
}

/// [`compress`] with Σ0 and Σ1 as carry-less products ([`clmul_sigma`]).
///
/// # Panics
/// As [`compress`].
///
/// # Safety
/// The CPU must support AVX2 and VPCLMULQDQ ([`supported_clmul`]).
pub(super) unsafe fn compress_clmul<const N: usize>(
    states: &mut [[u64; 8]; N],
    data: &[&[u8]; N],
    blocks: usize,
) {
    let groups: Groups = [compress_groups_clmul::<1>, compress_groups_clmul::<2>];
    // SAFETY: the caller guarantees AVX2 and VPCLMULQDQ, which the functions need.
    unsafe { by_groups(states, data, blocks, groups) }
}

/// The start of every message, once checked that each has `blocks` blocks: what makes the
/// kernels' reads through the pointers sound.
///
/// # Panics
/// If a message is shorter. `N` other than 4 or 8 does not compile.
pub(super) fn message_pointers<const N: usize>(data: &[&[u8]; N], blocks: usize) -> [*const u8; N] {
    const { assert!(N == WIDTH || N == 2 * WIDTH, "4 or 8 messages") };
    checked_pointers(data, blocks, BLOCK)
}

super::simd::bench_entry!(bench_compress_sha512, [u64; 8]);

/// SHA-512's round constants (FIPS 180-4, 4.2.3).
pub(super) const K: [u64; 80] = [
    0x428a2f98d728ae22,
    0x7137449123ef65cd,
    0xb5c0fbcfec4d3b2f,
    0xe9b5dba58189dbbc,
    0x3956c25bf348b538,
    0x59f111f1b605d019,
    0x923f82a4af194f9b,
    0xab1c5ed5da6d8118,
    0xd807aa98a3030242,
    0x12835b0145706fbe,
    0x243185be4ee4b28c,
    0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f,
    0x80deb1fe3b1696b1,
    0x9bdc06a725c71235,
    0xc19bf174cf692694,
    0xe49b69c19ef14ad2,
    0xefbe4786384f25e3,
    0x0fc19dc68b8cd5b5,
    0x240ca1cc77ac9c65,
    0x2de92c6f592b0275,
    0x4a7484aa6ea6e483,
    0x5cb0a9dcbd41fbd4,
    0x76f988da831153b5,
    0x983e5152ee66dfab,
    0xa831c66d2db43210,
    0xb00327c898fb213f,
    0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2,
    0xd5a79147930aa725,
    0x06ca6351e003826f,
    0x142929670a0e6e70,
    0x27b70a8546d22ffc,
    0x2e1b21385c26c926,
    0x4d2c6dfc5ac42aed,
    0x53380d139d95b3df,
    0x650a73548baf63de,
    0x766a0abb3c77b2a8,
    0x81c2c92e47edaee6,
    0x92722c851482353b,
    0xa2bfe8a14cf10364,
    0xa81a664bbc423001,
    0xc24b8b70d0f89791,
    0xc76c51a30654be30,
    0xd192e819d6ef5218,
    0xd69906245565a910,
    0xf40e35855771202a,
    0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8,
    0x1e376c085141ab53,
    0x2748774cdf8eeb99,
    0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63,
    0x4ed8aa4ae3418acb,
    0x5b9cca4f7763e373,
    0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc,
    0x78a5636f43172f60,
    0x84c87814a1f0ab72,
    0x8cc702081a6439ec,
    0x90befffa23631e28,
    0xa4506cebde82bde9,
    0xbef9a3f7b2c67915,
    0xc67178f2e372532b,
    0xca273eceea26619c,
    0xd186b8c721c0c207,
    0xeada7dd6cde0eb1e,
    0xf57d4f7fee6ed178,
    0x06f067aa72176fba,
    0x0a637dc5a2c898a6,
    0x113f9804bef90dae,
    0x1b710b35131c471b,
    0x28db77f523047d84,
    0x32caab7b40c72493,
    0x3c9ebe0a15c9bebc,
    0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6,
    0x597f299cfc657e2a,
    0x5fcb6fab3ad6faec,
    0x6c44198c4a475817,
];

/// Σ0 (FIPS 180-4, 4.1.3): rotr 28 ^ rotr 34 ^ rotr 39.
#[inline]
#[target_feature(enable = "avx2")]
fn big_sigma0(x: __m256i) -> __m256i {
    xor_shifts!(x; r 28, l 36, r 34, l 30, r 39, l 25)
}

/// Σ1: rotr 14 ^ rotr 18 ^ rotr 41.
#[inline]
#[target_feature(enable = "avx2")]
fn big_sigma1(x: __m256i) -> __m256i {
    xor_shifts!(x; r 14, l 50, r 18, l 46, r 41, l 23)
}

/// σ0: rotr 1 ^ rotr 8 ^ shr 7. The rotation by a whole byte is one byte shuffle instead of
/// two shifts (shuffles and shifts share ports on most cores, but it is one instruction, not
/// three).
#[inline]
#[target_feature(enable = "avx2")]
fn small_sigma0(x: __m256i) -> __m256i {
    // Byte `i` of a word takes byte `i + 1` (little-endian): a rotation right by 8 bits.
    let rotr8 = _mm256_set_epi64x(
        0x080f_0e0d_0c0b_0a09,
        0x0007_0605_0403_0201,
        0x080f_0e0d_0c0b_0a09,
        0x0007_0605_0403_0201,
    );
    _mm256_xor_si256(
        xor_shifts!(x; r 1, l 63, r 7),
        _mm256_shuffle_epi8(x, rotr8),
    )
}

/// σ1: rotr 19 ^ rotr 61 ^ shr 6.
#[inline]
#[target_feature(enable = "avx2")]
fn small_sigma1(x: __m256i) -> __m256i {
    xor_shifts!(x; r 19, l 45, r 61, l 3, r 6)
}

/// The left shifts of Σ0's rotations (rotr 28, 34, 39 = rotl 36, 30, 25), as the bits of a
/// carry-less multiplier ([`clmul_sigma`]).
const CLMUL_SIGMA0: i64 = (1 << 36) | (1 << 30) | (1 << 25);
/// The left shifts of Σ1's rotations (rotr 14, 18, 41 = rotl 50, 46, 23).
const CLMUL_SIGMA1: i64 = (1 << 50) | (1 << 46) | (1 << 23);

/// The xor of the rotations left of every 64-bit word by the bits set in `C`, in 5
/// instructions instead of 11: the carry-less product `x ⊗ C` is 128 bits, whose low half is
/// the xor of the left shifts `x << i` and whose high half that of the bits they push out,
/// `x >> (64 - i)`; the xor of the two halves is the xor of the rotations. One
/// `vpclmulqdq` multiplies one word of each 128-bit half, so two take the even and the odd
/// words, and two unpacks bring each product's halves to its word.
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
fn clmul_sigma<const C: i64>(x: __m256i) -> __m256i {
    let c = _mm256_set1_epi64x(C);
    let even = _mm256_clmulepi64_epi128::<0x00>(x, c);
    let odd = _mm256_clmulepi64_epi128::<0x01>(x, c);
    _mm256_xor_si256(
        _mm256_unpacklo_epi64(even, odd),
        _mm256_unpackhi_epi64(even, odd),
    )
}

/// Σ0 as a carry-less product.
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
fn clmul_big_sigma0(x: __m256i) -> __m256i {
    clmul_sigma::<CLMUL_SIGMA0>(x)
}

/// Σ1 as a carry-less product.
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
fn clmul_big_sigma1(x: __m256i) -> __m256i {
    clmul_sigma::<CLMUL_SIGMA1>(x)
}

/// Transposes a 4×4 matrix of 64-bit words: row `j` in, column `j` out (its own inverse).
/// Two rounds of shuffles (64-bit, then 128-bit interleaves), 8 instructions.
#[inline]
#[target_feature(enable = "avx2")]
fn transpose(r: [__m256i; WIDTH]) -> [__m256i; WIDTH] {
    // t0 = r0[0] r1[0] | r0[2] r1[2], t1 = r0[1] r1[1] | r0[3] r1[3], and so on.
    let t0 = _mm256_unpacklo_epi64(r[0], r[1]);
    let t1 = _mm256_unpackhi_epi64(r[0], r[1]);
    let t2 = _mm256_unpacklo_epi64(r[2], r[3]);
    let t3 = _mm256_unpackhi_epi64(r[2], r[3]);
    [
        _mm256_permute2x128_si256::<0x20>(t0, t2),
        _mm256_permute2x128_si256::<0x20>(t1, t3),
        _mm256_permute2x128_si256::<0x31>(t0, t2),
        _mm256_permute2x128_si256::<0x31>(t1, t3),
    ]
}

/// The states of `4 * G` messages (a..h each), transposed for the kernels: `s[w][g]` holds word
/// `w` of the four messages of group `g`, one message per lane.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn load_states<const G: usize>(states: &[[u64; 8]]) -> [[__m256i; G]; 8] {
    assert_eq!(states.len(), WIDTH * G);
    let mut s = [[_mm256_setzero_si256(); G]; 8];
    for g in 0..G {
        for half in 0..2 {
            let rows = std::array::from_fn(|lane| {
                let words = &states[WIDTH * g + lane][4 * half..4 * half + 4];
                // SAFETY: `words` holds exactly 4 `u64`s; unaligned load.
                unsafe { _mm256_loadu_si256(words.as_ptr().cast()) }
            });
            for (w, v) in transpose(rows).into_iter().enumerate() {
                s[4 * half + w][g] = v;
            }
        }
    }
    s
}

/// The inverse of [`load_states`]: `s` back into the states of the `4 * G` messages.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn store_states<const G: usize>(s: [[__m256i; G]; 8], states: &mut [[u64; 8]]) {
    assert_eq!(states.len(), WIDTH * G);
    for g in 0..G {
        for half in 0..2 {
            let rows = transpose(std::array::from_fn(|w| s[4 * half + w][g]));
            for (lane, v) in rows.into_iter().enumerate() {
                let words = &mut states[WIDTH * g + lane][4 * half..4 * half + 4];
                // SAFETY: `words` holds exactly 4 `u64`s; unaligned store.
                unsafe { _mm256_storeu_si256(words.as_mut_ptr().cast(), v) };
            }
        }
    }
}

/// The 16 message words of the block at byte `offset` of four messages, transposed (word `t`
/// of every message in `w[t]`) and in host order.
///
/// Four 32-byte loads per message and a 4×4 transpose per quarter block; the compiler merges
/// the byte swap into the transpose's first shuffles. (A `vpgatherqq` per word instead
/// measured 5 % slower on Zen 4.)
///
/// # Safety
/// The four pointers in `lanes` must have `offset + 128` readable bytes.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn load_block(lanes: &[*const u8], offset: usize) -> [__m256i; 16] {
    assert_eq!(lanes.len(), WIDTH);
    // Reverses the bytes of every 64-bit word: SHA-512's words are big-endian.
    let bswap = _mm256_set_epi64x(
        0x0809_0a0b_0c0d_0e0f,
        0x0001_0203_0405_0607,
        0x0809_0a0b_0c0d_0e0f,
        0x0001_0203_0405_0607,
    );
    let mut w = [_mm256_setzero_si256(); 16];
    for quarter in 0..4 {
        let rows = std::array::from_fn(|lane| {
            // SAFETY: the caller guarantees `offset + 128` readable bytes, of which these
            // are 32; unaligned load.
            let v = unsafe { _mm256_loadu_si256(lanes[lane].add(offset + quarter * 32).cast()) };
            _mm256_shuffle_epi8(v, bswap)
        });
        w[4 * quarter..4 * quarter + 4].copy_from_slice(&transpose(rows));
    }
    w
}

/// One block's 80 rounds over the transposed states `$s` (`[[__m256i; G]; 8]`, as from
/// [`load_states`]), message words `$w` (`[[__m256i; 16]; G]`, the block's 16 words of every
/// group loaded), ending with the addition of the states from before the block. `$round!(a, b, c,
/// d, e, f, g, h, t)` is the kernel's round `t` in every group, updating `d` and `h`; the
/// names rotate instead of the values moving. The schedule calls the `small_sigma0` and
/// `small_sigma1` of the module the macro expands in, or with `$add, $sigma0, $sigma1` those
/// given, and the addition given (for 512-bit registers).
///
/// The schedule is a window of 16 words: word `t + 16` takes the place of word `t` once round
/// `t` has used it. An array of all 80 words had to be zeroed on every call (5 KiB for two
/// groups), which a call of one or two blocks (a leaf's first and last, a tree's inner node)
/// paid as much as for a block's rounds.
///
/// Schedule word `t + 16` is computed along with round `t` rather than all before the
/// rounds: the rounds are mostly adds and logic, the schedule mostly shifts (which fewer
/// ports execute), and mixed they keep the ports busier. Measured on AMD Zen 4: 18 % (8
/// messages) to 28 % (4) faster than the schedule first. Eight rounds per iteration bring the
/// names back to where they started; loops rather than 80 unrolled rounds keep the code within
/// the micro-op cache.
macro_rules! rounds {
    // Schedule word `t + 16` of every group.
    (@schedule $w:ident, $t:expr, $add:ident, $sigma0:ident, $sigma1:ident) => {
        for words in $w.iter_mut() {
            let t = $t + 16;
            words[t % 16] = $add(
                $add($sigma1(words[(t - 2) % 16]), words[(t - 7) % 16]),
                $add($sigma0(words[(t - 15) % 16]), words[t % 16]),
            );
        }
    };
    ($round:ident, $s:ident, $w:ident) => {
        rounds!($round, $s, $w, _mm256_add_epi64, small_sigma0, small_sigma1)
    };
    ($round:ident, $s:ident, $w:ident, $add:ident, $sigma0:ident, $sigma1:ident) => {
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = $s;
        for t in (0..64).step_by(8) {
            $round!(a, b, c, d, e, f, g, h, t);
            rounds!(@schedule $w, t, $add, $sigma0, $sigma1);
            $round!(h, a, b, c, d, e, f, g, t + 1);
            rounds!(@schedule $w, t + 1, $add, $sigma0, $sigma1);
            $round!(g, h, a, b, c, d, e, f, t + 2);
            rounds!(@schedule $w, t + 2, $add, $sigma0, $sigma1);
            $round!(f, g, h, a, b, c, d, e, t + 3);
            rounds!(@schedule $w, t + 3, $add, $sigma0, $sigma1);
            $round!(e, f, g, h, a, b, c, d, t + 4);
            rounds!(@schedule $w, t + 4, $add, $sigma0, $sigma1);
            $round!(d, e, f, g, h, a, b, c, t + 5);
            rounds!(@schedule $w, t + 5, $add, $sigma0, $sigma1);
            $round!(c, d, e, f, g, h, a, b, t + 6);
            rounds!(@schedule $w, t + 6, $add, $sigma0, $sigma1);
            $round!(b, c, d, e, f, g, h, a, t + 7);
            rounds!(@schedule $w, t + 7, $add, $sigma0, $sigma1);
        }
        for t in (64..80).step_by(8) {
            $round!(a, b, c, d, e, f, g, h, t);
            $round!(h, a, b, c, d, e, f, g, t + 1);
            $round!(g, h, a, b, c, d, e, f, t + 2);
            $round!(f, g, h, a, b, c, d, e, t + 3);
            $round!(e, f, g, h, a, b, c, d, t + 4);
            $round!(d, e, f, g, h, a, b, c, t + 5);
            $round!(c, d, e, f, g, h, a, b, t + 6);
            $round!(b, c, d, e, f, g, h, a, t + 7);
        }
        for (s, new) in $s.iter_mut().zip([a, b, c, d, e, f, g, h]) {
            for (s, new) in s.iter_mut().zip(new) {
                *s = $add(*s, new);
            }
        }
    };
}
pub(super) use rounds;

/// `compress_groups` (plain AVX2) and `compress_groups_clmul` (Σ0 and Σ1 as carry-less
/// products): one body for both, which only the Σ functions and the instruction sets differ in.
macro_rules! compress_groups {
    ($(#[$doc:meta])* $name:ident, $features:literal, $sigma0:ident, $sigma1:ident) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        unsafe fn $name<const G: usize>(
            states: &mut [[u64; 8]],
            ptrs: &[*const u8],
            blocks: usize,
        ) {
            assert!(ptrs.len() == WIDTH * G);
            let mut s = load_states::<G>(states);
            // The window of the message schedule of every group, 16 words of four lanes
            // each: 512 bytes per group on the (L1-resident) stack, as registers cannot hold
            // it.
            let mut w = [[_mm256_setzero_si256(); 16]; G];

            for block in 0..blocks {
                for (g, w) in w.iter_mut().enumerate() {
                    // SAFETY: `block < blocks` and every message has `blocks * 128` bytes.
                    let lanes = &ptrs[WIDTH * g..WIDTH * (g + 1)];
                    let words = unsafe { load_block(lanes, block * BLOCK) };
                    w[..16].copy_from_slice(&words);
                }

                // b ^ c of the coming round, which is a ^ b of the one before: Maj(a, b, c) is
                // b ^ ((a ^ b) & (b ^ c)), three instructions with this carried over.
                let mut bc: [__m256i; G] =
                    std::array::from_fn(|g| _mm256_xor_si256(s[1][g], s[2][g]));

                macro_rules! round {
                    (
                        $a:ident, $b:ident, $c:ident, $d:ident,
                        $e:ident, $f:ident, $g:ident, $h:ident, $t:expr
                    ) => {
                        let k = _mm256_set1_epi64x(K[$t] as i64);
                        for n in 0..G {
                            // T1 = h + Σ1(e) + Ch(e, f, g) + K[t] + W[t], with Σ1, the longest
                            // chain from e, added last; Ch(e, f, g) = ((f ^ g) & e) ^ g.
                            let ch = _mm256_xor_si256(
                                _mm256_and_si256(_mm256_xor_si256($f[n], $g[n]), $e[n]),
                                $g[n],
                            );
                            let t1 = _mm256_add_epi64($h[n], _mm256_add_epi64(w[n][$t % 16], k));
                            let t1 =
                                _mm256_add_epi64(_mm256_add_epi64(t1, ch), $sigma1($e[n]));
                            let ab = _mm256_xor_si256($a[n], $b[n]);
                            let maj = _mm256_xor_si256($b[n], _mm256_and_si256(ab, bc[n]));
                            bc[n] = ab;
                            let t2 = _mm256_add_epi64($sigma0($a[n]), maj);
                            $d[n] = _mm256_add_epi64($d[n], t1);
                            $h[n] = _mm256_add_epi64(t1, t2);
                        }
                    };
                }
                rounds!(round, s, w);
            }
            store_states(s, states);
        }
    };
}

compress_groups! {
    /// Hashes `blocks` blocks of all `4 * G` messages, the `G` groups of four interleaved round
    /// by round.
    ///
    /// Per block and group of four messages: 80 rounds of 35 vector ALU instructions (12 of them
    /// shifts: Σ0 and Σ1 are three rotations each) and 64 schedule words of 19 (8 shifts and a
    /// byte shuffle), about 4 100 for 512 bytes. A core with four vector ALUs (AMD Zen 4) needs at
    /// least ~1 020 cycles for them, 2.0 cycles per byte; this code measures 2.3 there, where
    /// OpenSSL's one stream of SHA-512 (its x86-64 assembly) takes 4.1: the kernel does 1.8× a
    /// stream's throughput per core, and AVX2 cannot do much better than 2×.
    ///
    /// # Safety
    /// Every pointer in `ptrs` must have `blocks * 128` readable bytes.
    compress_groups, "avx2", big_sigma0, big_sigma1
}

compress_groups! {
    /// [`compress_groups`] with Σ0 and Σ1 as carry-less products: a round of 23 vector
    /// instructions (4 of them `vpclmulqdq`) instead of 35, whose 22 shifts and ors of the
    /// rotations mostly compete for the two vector shifters. Measured on AMD Zen 5 with
    /// `MTSUM_SIMD=avx2`: 6 % faster for 8 messages, not the 30 % of the count, as a
    /// `vpclmulqdq` starts only every other cycle there and takes 5 cycles.
    ///
    /// # Safety
    /// Every pointer in `ptrs` must have `blocks * 128` readable bytes.
    compress_groups_clmul, "avx2,vpclmulqdq", clmul_big_sigma0, clmul_big_sigma1
}
