//! SHA-256 in AVX-512: sixteen messages per 512-bit register, one 32-bit word of each per lane.
//!
//! The AVX2 kernel (`sha256_avx2`, eight lanes) twice as wide, with AVX-512's rotate
//! (`vprord`) and three-input logic (`vpternlogd`): a round is 17 instructions instead of 35,
//! a schedule word 11 instead of 21. On a core that runs 512-bit instructions at the rate of
//! 256-bit ones (AMD Zen 5) that is four times the AVX2 kernel's work per instruction, and
//! beats SHA-NI, whose `sha256rnds2` does two rounds of one message per instruction: 1.8 × the
//! two interleaved SHA-NI streams of `sha256_ni` there (5.97 against 3.31 GB/s on one core,
//! `docs/performance.md`, "Multi-buffer kernels"). Where 512-bit instructions are split
//! in two (AMD Zen 4) it is about as fast as those.
//!
//! The blocks are loaded as MD5's are in `md5_avx512` (sixteen 64-byte rows, one per message,
//! transposed into sixteen columns, one per message word), with a byte swap of every word, as
//! SHA's words are big-endian. The states are gathered and scattered once per call.

use std::arch::x86_64::*;
use std::array::from_fn;

use super::md5_avx512::transpose;
use super::sha256_avx2::rounds;
use super::sha256_ni::K;
use super::sha512_avx512::{CH, MAJ, XOR3};
use super::simd::checked_pointers;

/// Lanes per 512-bit register, and messages per call.
const WIDTH: usize = 16;

/// Bytes per block.
const BLOCK: usize = 64;

/// Whether this CPU runs [`compress`]: AVX-512F, and AVX-512BW for the byte shuffle that
/// swaps the message words' bytes.
pub(super) fn supported() -> bool {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw")
}

/// Runs `blocks` 64-byte blocks of `data[i]` through `states[i]`, SHA-256's (or SHA-224's)
/// state in the order a..h, for `N` = 16 messages.
///
/// # Panics
/// If a message has less than `blocks * 64` bytes of data. Other `N` do not compile.
///
/// # Safety
/// The CPU must have AVX-512F and AVX-512BW ([`supported`]).
pub(super) unsafe fn compress<const N: usize>(
    states: &mut [[u32; 8]; N],
    data: &[&[u8]; N],
    blocks: usize,
) {
    const { assert!(N == WIDTH, "16 messages") };
    let ptrs = checked_pointers(data, blocks, BLOCK);
    let ptrs: [*const u8; WIDTH] = from_fn(|i| ptrs[i]);
    let states: &mut [[u32; 8]; WIDTH] = states.as_mut_slice().try_into().expect("16 messages");
    // SAFETY: the caller guarantees AVX-512F and AVX-512BW; every pointer has `blocks * 64`
    // readable bytes (checked by `checked_pointers`) and `data` outlives the call.
    unsafe { compress_lanes(states, &ptrs, blocks) }
}

/// The xor of the rotations right of every word by `A`, `B` and `C`: Σ0 and Σ1.
#[inline]
#[target_feature(enable = "avx512f")]
fn rotations<const A: i32, const B: i32, const C: i32>(x: __m512i) -> __m512i {
    _mm512_ternarylogic_epi32::<XOR3>(
        _mm512_ror_epi32::<A>(x),
        _mm512_ror_epi32::<B>(x),
        _mm512_ror_epi32::<C>(x),
    )
}

/// The xor of the rotations right of every word by `A` and `B` and its shift right by `S`:
/// σ0 and σ1.
#[inline]
#[target_feature(enable = "avx512f")]
fn rotations_shift<const A: i32, const B: i32, const S: u32>(x: __m512i) -> __m512i {
    _mm512_ternarylogic_epi32::<XOR3>(
        _mm512_ror_epi32::<A>(x),
        _mm512_ror_epi32::<B>(x),
        _mm512_srli_epi32::<S>(x),
    )
}

/// Schedule word `t + 16` (FIPS 180-4, 6.2.2, step 1): σ1(W[t - 2]) + W[t - 7] +
/// σ0(W[t - 15]) + W[t - 16], with σ0 = rotr 7 ^ rotr 18 ^ shr 3, σ1 = rotr 17 ^ rotr 19 ^
/// shr 10. In a window of 16 words, as the AVX2 kernel's.
#[inline]
#[target_feature(enable = "avx512f")]
fn schedule(w: &mut [__m512i; 16], t: usize) {
    let t = t + 16;
    let sigma0 = rotations_shift::<7, 18, 3>(w[(t - 15) % 16]);
    let sigma1 = rotations_shift::<17, 19, 10>(w[(t - 2) % 16]);
    w[t % 16] = _mm512_add_epi32(
        _mm512_add_epi32(sigma1, w[(t - 7) % 16]),
        _mm512_add_epi32(sigma0, w[t % 16]),
    );
}

/// Hashes `blocks` blocks of the sixteen messages: the rounds and schedule of the AVX2
/// kernel, in the same order (schedule word `t + 16` along with round `t`).
///
/// # Safety
/// Every pointer in `ptrs` must have `blocks * 64` readable bytes.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn compress_lanes(states: &mut [[u32; 8]; WIDTH], ptrs: &[*const u8; WIDTH], blocks: usize) {
    // The states, transposed: element `j` of `s[word]` is word `word` of message `j`, at
    // `8 j + word` words into `states`. One gather per word, and one scatter back at the end.
    let base = states.as_mut_ptr().cast::<u32>();
    let offsets = _mm512_setr_epi32(
        0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120,
    );
    // SAFETY: the words read are `8 j + word` for `j < 16` and `word < 8`: within the 128
    // words of `states`.
    let mut s: [__m512i; 8] =
        from_fn(|word| unsafe { _mm512_i32gather_epi32::<4>(offsets, base.add(word).cast()) });
    // Reverses the bytes of every 32-bit word.
    let bswap = _mm512_set4_epi32(0x0c0d_0e0f, 0x0809_0a0b, 0x0405_0607, 0x0001_0203);
    // The message schedule, 64 words of sixteen lanes: 4 KiB on the (L1-resident) stack.
    let mut w = [_mm512_setzero_si512(); 16];

    for block in 0..blocks {
        let mut rows = [_mm512_setzero_si512(); WIDTH];
        for (row, p) in rows.iter_mut().zip(ptrs) {
            // SAFETY: `block < blocks` and the message has `blocks * 64` readable bytes, so
            // the 64 bytes at `block * 64` are in bounds; unaligned load.
            let v = unsafe { _mm512_loadu_si512(p.add(block * BLOCK).cast()) };
            *row = _mm512_shuffle_epi8(v, bswap);
        }
        w[..16].copy_from_slice(&transpose(rows));

        macro_rules! round {
            ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $t:expr) => {
                let t = $t;
                let k = _mm512_set1_epi32(K[t / 4][t % 4].cast_signed());
                // T1 = h + W[t] + K[t] + Ch(e, f, g) + Σ1(e), Σ1 = rotr 6 ^ rotr 11 ^ rotr 25;
                // T2 = Σ0(a) + Maj(a, b, c), Σ0 = rotr 2 ^ rotr 13 ^ rotr 22.
                let ch = _mm512_ternarylogic_epi32::<CH>($e, $f, $g);
                let t1 = _mm512_add_epi32($h, _mm512_add_epi32(w[t % 16], k));
                let t1 = _mm512_add_epi32(_mm512_add_epi32(t1, ch), rotations::<6, 11, 25>($e));
                let maj = _mm512_ternarylogic_epi32::<MAJ>($a, $b, $c);
                let sigma0 = rotations::<2, 13, 22>($a);
                $d = _mm512_add_epi32($d, t1);
                $h = _mm512_add_epi32(t1, _mm512_add_epi32(sigma0, maj));
            };
        }

        rounds!(round, s, w, _mm512_add_epi32);
    }

    for (word, v) in s.into_iter().enumerate() {
        // SAFETY: the words of the gathers above, in `states`, which is borrowed mutably.
        unsafe { _mm512_i32scatter_epi32::<4>(base.add(word).cast(), offsets, v) };
    }
}
