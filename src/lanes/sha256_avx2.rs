//! SHA-256 in AVX2: eight messages per 256-bit register, one 32-bit word of each per lane.
//!
//! For CPUs without SHA-NI (Intel before Ice Lake, and Haswell to Comet Lake in particular):
//! there one SHA-256 stream is a chain of 64 dependent rounds per block in scalar code, while
//! the leaves of a Merkle tree are independent messages. Eight of them side by side in a
//! 256-bit register do 8× the work per instruction, as Intel's isa-l_crypto
//! `sha256_mb_x8_avx2` does. Where SHA-NI exists, its kernel is faster and chosen first.
//!
//! AVX2 has no vector rotate, so each rotation is two shifts (xored with the others, see
//! [`xor_shifts!`]): 12 of a round's 35 instructions are shifts. The kernel is bound by the
//! instruction count, as the SHA-512 one is, and shares its structure: the schedule is
//! computed along with the rounds, Maj carries `b ^ c` over from the round before. The SHA-1
//! kernel of eight lanes takes from here the entry checks and the loading of the blocks.
//!
//! Written with `std::arch` intrinsics: within a `#[target_feature(enable = "avx2")]` function
//! the arithmetic intrinsics are safe to call, so the only `unsafe` left is reading memory
//! through pointers and entering the feature-gated code.

use std::arch::x86_64::*;
use std::array::from_fn;

use super::simd::checked_pointers;

use super::md5_avx2::transpose;
use super::sha256_ni::K;
use super::simd::xor_shifts;

/// Messages per call: one per 32-bit lane of a 256-bit register.
pub(super) const LANES: usize = 8;

/// Bytes per block (SHA-1's and SHA-256's).
pub(super) const BLOCK: usize = 64;

/// Whether this CPU runs [`compress`] (and the SHA-1 kernel of eight lanes).
pub(super) fn supported() -> bool {
    is_x86_feature_detected!("avx2")
}

/// Runs `blocks` 64-byte blocks of `data[i]` through `states[i]`, SHA-256's (or SHA-224's:
/// the same compression) state in the standard word order a..h, that of RustCrypto's
/// `sha2::block_api::compress256`, for `N` = 8 messages.
///
/// # Panics
/// If a message has less than `blocks * 64` bytes of data. Other `N` do not compile.
///
/// # Safety
/// The CPU must support AVX2 ([`supported`]).
pub(super) unsafe fn compress<const N: usize>(
    states: &mut [[u32; 8]; N],
    data: &[&[u8]; N],
    blocks: usize,
) {
    let ptrs = message_pointers(data, blocks);
    let states: &mut [[u32; 8]; LANES] = states.as_mut_slice().try_into().expect("8 messages");
    // SAFETY: the caller guarantees AVX2; every pointer has `blocks * 64` readable bytes
    // (checked by `message_pointers`) and `data` outlives the call.
    unsafe { compress_lanes(states, &ptrs, blocks) }
}

/// The start of every message, once checked that each has `blocks` blocks: what makes the
/// kernels' reads through the pointers sound.
///
/// # Panics
/// If a message is shorter. `N` other than 8 does not compile.
pub(super) fn message_pointers<const N: usize>(
    data: &[&[u8]; N],
    blocks: usize,
) -> [*const u8; LANES] {
    const { assert!(N == LANES, "8 messages") };
    let ptrs = checked_pointers(data, blocks, BLOCK);
    from_fn(|i| ptrs[i])
}

super::simd::bench_entry!(bench_compress_sha256_avx2, [u32; 8]);

/// The 16 message words of the block at byte `offset` of the eight messages, transposed (word
/// `t` of every message in `w[t]`) and in host order: two 32-byte loads per message, a byte
/// swap of each (the words are big-endian) and an 8×8 transpose per half block.
///
/// # Safety
/// Every pointer must have `offset + 64` readable bytes.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn load_block(ptrs: &[*const u8; LANES], offset: usize) -> [__m256i; 16] {
    // Reverses the bytes of every 32-bit word.
    let bswap = _mm256_set_epi64x(
        0x0c0d_0e0f_0809_0a0b,
        0x0405_0607_0001_0203,
        0x0c0d_0e0f_0809_0a0b,
        0x0405_0607_0001_0203,
    );
    let rows = |half: usize| -> [__m256i; LANES] {
        from_fn(|lane| {
            // SAFETY: the caller guarantees `offset + 64` readable bytes, of which these are
            // 32; unaligned load.
            let v = unsafe { _mm256_loadu_si256(ptrs[lane].add(offset + half * 32).cast()) };
            _mm256_shuffle_epi8(v, bswap)
        })
    };
    let mut w = [_mm256_setzero_si256(); 16];
    w[..LANES].copy_from_slice(&transpose(rows(0)));
    w[LANES..].copy_from_slice(&transpose(rows(1)));
    w
}

/// Σ0 (FIPS 180-4, 4.1.2): rotr 2 ^ rotr 13 ^ rotr 22.
#[inline]
#[target_feature(enable = "avx2")]
fn big_sigma0(x: __m256i) -> __m256i {
    xor_shifts!(u32: x; r 2, l 30, r 13, l 19, r 22, l 10)
}

/// Σ1: rotr 6 ^ rotr 11 ^ rotr 25.
#[inline]
#[target_feature(enable = "avx2")]
fn big_sigma1(x: __m256i) -> __m256i {
    xor_shifts!(u32: x; r 6, l 26, r 11, l 21, r 25, l 7)
}

/// σ0: rotr 7 ^ rotr 18 ^ shr 3.
#[inline]
#[target_feature(enable = "avx2")]
fn small_sigma0(x: __m256i) -> __m256i {
    xor_shifts!(u32: x; r 7, l 25, r 18, l 14, r 3)
}

/// σ1: rotr 17 ^ rotr 19 ^ shr 10.
#[inline]
#[target_feature(enable = "avx2")]
fn small_sigma1(x: __m256i) -> __m256i {
    xor_shifts!(u32: x; r 17, l 15, r 19, l 13, r 10)
}

/// Schedule word `t + 16` (FIPS 180-4, 6.2.2, step 1):
/// W[t] = σ1(W[t - 2]) + W[t - 7] + σ0(W[t - 15]) + W[t - 16], in a window of 16 words
/// where it takes the place of word `t`, which round `t` has used. An array of all 64 words
/// had to be zeroed on every call (2 KiB), which a call of one or two blocks (a leaf's first
/// and last, a tree's inner node) paid as much as for a block's rounds; the SHA-512 kernels
/// keep theirs the same way. (SHA-1's eight lanes do not: their rounds step by five, so the
/// window's every index is computed at run time, which cost 6 % more than the zeroing.)
#[inline]
#[target_feature(enable = "avx2")]
fn schedule(w: &mut [__m256i; 16], t: usize) {
    let t = t + 16;
    w[t % 16] = _mm256_add_epi32(
        _mm256_add_epi32(small_sigma1(w[(t - 2) % 16]), w[(t - 7) % 16]),
        _mm256_add_epi32(small_sigma0(w[(t - 15) % 16]), w[t % 16]),
    );
}

/// One block's 64 rounds over the transposed states `$s` (`[_; 8]`) and message words `$w`
/// (`[_; 16]`, the block's words loaded: a window, see `schedule`), ending with the addition (`$add`) of the states from
/// before the block. `$round!(a, b, c, d, e, f, g, h, t)` is the kernel's round `t`, updating
/// `d` and `h`; the names rotate instead of the values moving. Schedule word `t + 16` is
/// computed along with round `t`, by the `schedule` function of the module the macro expands
/// in. The eight-lane AVX2 and sixteen-lane AVX-512 kernels share it.
macro_rules! rounds {
    ($round:ident, $s:ident, $w:ident, $add:ident) => {
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = $s;
        for t in (0..48).step_by(8) {
            $round!(a, b, c, d, e, f, g, h, t);
            schedule(&mut $w, t);
            $round!(h, a, b, c, d, e, f, g, t + 1);
            schedule(&mut $w, t + 1);
            $round!(g, h, a, b, c, d, e, f, t + 2);
            schedule(&mut $w, t + 2);
            $round!(f, g, h, a, b, c, d, e, t + 3);
            schedule(&mut $w, t + 3);
            $round!(e, f, g, h, a, b, c, d, t + 4);
            schedule(&mut $w, t + 4);
            $round!(d, e, f, g, h, a, b, c, t + 5);
            schedule(&mut $w, t + 5);
            $round!(c, d, e, f, g, h, a, b, t + 6);
            schedule(&mut $w, t + 6);
            $round!(b, c, d, e, f, g, h, a, t + 7);
            schedule(&mut $w, t + 7);
        }
        for t in (48..64).step_by(8) {
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
            *s = $add(*s, new);
        }
    };
}
pub(super) use rounds;

/// Hashes `blocks` blocks of the eight messages.
///
/// Per block: 64 rounds of 35 vector instructions (12 of them shifts) and 48 schedule words
/// of 21 (10 shifts), about 3 250 for 512 bytes.
///
/// Schedule word `t + 16` is computed along with round `t` rather than all before the
/// rounds, as in the SHA-512 kernel: the rounds are mostly adds and logic, the schedule mostly
/// shifts (which fewer ports execute), and mixed they keep the ports busier. Eight rounds per
/// iteration bring the names back to where they started; loops rather than 64 unrolled rounds
/// keep the code within the micro-op cache.
///
/// # Safety
/// Every pointer in `ptrs` must have `blocks * 64` readable bytes.
#[target_feature(enable = "avx2")]
unsafe fn compress_lanes(states: &mut [[u32; 8]; LANES], ptrs: &[*const u8; LANES], blocks: usize) {
    let rows = from_fn(|lane| {
        // SAFETY: a state is 32 bytes; unaligned load.
        unsafe { _mm256_loadu_si256(states[lane].as_ptr().cast()) }
    });
    // `s[j]` holds word `j` of the eight states.
    let mut s = transpose(rows);
    // The window of the message schedule, 16 words of eight lanes: 512 bytes on the
    // (L1-resident) stack, as registers cannot hold it.
    let mut w = [_mm256_setzero_si256(); 16];

    for block in 0..blocks {
        // SAFETY: `block < blocks` and every message has `blocks * 64` bytes.
        let words = unsafe { load_block(ptrs, block * BLOCK) };
        w[..16].copy_from_slice(&words);

        // b ^ c of the coming round, which is a ^ b of the one before: Maj(a, b, c) is
        // b ^ ((a ^ b) & (b ^ c)), three instructions with this carried over.
        let mut bc = _mm256_xor_si256(s[1], s[2]);

        macro_rules! round {
            ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $t:expr) => {
                let t = $t;
                let k = _mm256_set1_epi32(K[t / 4][t % 4].cast_signed());
                // T1 = h + Σ1(e) + Ch(e, f, g) + K[t] + W[t], with Σ1, the longest chain
                // from e, added last; Ch(e, f, g) = ((f ^ g) & e) ^ g.
                let ch = _mm256_xor_si256(_mm256_and_si256(_mm256_xor_si256($f, $g), $e), $g);
                let t1 = _mm256_add_epi32($h, _mm256_add_epi32(w[t % 16], k));
                let t1 = _mm256_add_epi32(_mm256_add_epi32(t1, ch), big_sigma1($e));
                let ab = _mm256_xor_si256($a, $b);
                let maj = _mm256_xor_si256($b, _mm256_and_si256(ab, bc));
                bc = ab;
                let t2 = _mm256_add_epi32(big_sigma0($a), maj);
                $d = _mm256_add_epi32($d, t1);
                $h = _mm256_add_epi32(t1, t2);
            };
        }

        rounds!(round, s, w, _mm256_add_epi32);
    }

    for (state, row) in states.iter_mut().zip(transpose(s)) {
        // SAFETY: a state is 32 bytes; unaligned store.
        unsafe { _mm256_storeu_si256(state.as_mut_ptr().cast(), row) };
    }
}
