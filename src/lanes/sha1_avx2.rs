//! SHA-1 in AVX2: eight messages per 256-bit register, one 32-bit word of each per lane.
//!
//! For CPUs without SHA-NI, as the SHA-256 kernel of eight lanes (`sha256_avx2`), whose entry
//! checks and loading of the blocks this one takes: one SHA-1 stream is a chain of 80
//! dependent rounds per block, eight independent messages side by side in a 256-bit register
//! do 8× the work per instruction (Intel's isa-l_crypto `sha1_mb_x8_avx2`).
//!
//! A round is about 13 instructions (two rotations of three, the round function, four adds),
//! a schedule word 6: a third of SHA-256's work per block.
//!
//! Written with `std::arch` intrinsics: within a `#[target_feature(enable = "avx2")]` function
//! the arithmetic intrinsics are safe to call, so the only `unsafe` left is reading memory
//! through pointers and entering the feature-gated code.

use std::arch::x86_64::*;
use std::array::from_fn;

/// Whether this CPU runs [`compress`]: AVX2, as for the SHA-256 kernel.
pub(super) use super::sha256_avx2::supported;
use super::sha256_avx2::{BLOCK, LANES, load_block, message_pointers};

/// Runs `blocks` 64-byte blocks of `data[i]` through `states[i]`, SHA-1's state in the
/// standard word order a..e, that of RustCrypto's `sha1::block_api::compress`, for `N` = 8
/// messages.
///
/// # Panics
/// If a message has less than `blocks * 64` bytes of data. Other `N` do not compile.
///
/// # Safety
/// The CPU must support AVX2 ([`supported`]).
pub(super) unsafe fn compress<const N: usize>(
    states: &mut [[u32; 5]; N],
    data: &[&[u8]; N],
    blocks: usize,
) {
    let ptrs = message_pointers(data, blocks);
    let states: &mut [[u32; 5]; LANES] = states.as_mut_slice().try_into().expect("8 messages");
    // SAFETY: the caller guarantees AVX2; every pointer has `blocks * 64` readable bytes
    // (checked by `message_pointers`) and `data` outlives the call.
    unsafe { compress_lanes(states, &ptrs, blocks) }
}

super::simd::bench_entry!(bench_compress_sha1_avx2, [u32; 5]);

/// `x` rotated left by the literal `s`: two shifts and an or.
macro_rules! rotl {
    ($x:expr, $s:literal) => {
        _mm256_or_si256(
            _mm256_slli_epi32::<$s>($x),
            _mm256_srli_epi32::<{ 32 - $s }>($x),
        )
    };
}

// The round functions (FIPS 180-4, 4.1.1), written so that `b`, the newest of the three
// values (rotated in the round before), enters last.
macro_rules! ch {
    // (b & c) ^ (!b & d)
    ($b:expr, $c:expr, $d:expr) => {
        _mm256_xor_si256($d, _mm256_and_si256($b, _mm256_xor_si256($c, $d)))
    };
}
macro_rules! parity {
    ($b:expr, $c:expr, $d:expr) => {
        _mm256_xor_si256(_mm256_xor_si256($c, $d), $b)
    };
}
macro_rules! maj {
    // (b & c) | (b & d) | (c & d): c & d where c and d agree, b where they do not; the two
    // halves never overlap, so or is xor.
    ($b:expr, $c:expr, $d:expr) => {
        _mm256_xor_si256(
            _mm256_and_si256($c, $d),
            _mm256_and_si256($b, _mm256_xor_si256($c, $d)),
        )
    };
}

/// Schedule word `t + 16`, for `t` below 64 (FIPS 180-4, 6.1.2, step 1):
/// W[t] = rotl 1 (W[t - 3] ^ W[t - 8] ^ W[t - 14] ^ W[t - 16]).
#[inline]
#[target_feature(enable = "avx2")]
fn schedule(w: &mut [__m256i; 80], t: usize) {
    let t = t + 16;
    if t < 80 {
        let x = _mm256_xor_si256(
            _mm256_xor_si256(w[t - 3], w[t - 8]),
            _mm256_xor_si256(w[t - 14], w[t - 16]),
        );
        w[t] = rotl!(x, 1);
    }
}

/// Hashes `blocks` blocks of the eight messages: 80 rounds of about 13 vector instructions
/// and 64 schedule words of 6 per block, schedule word `t + 16` computed along with round `t`
/// (see the SHA-256 kernel). Five rounds per iteration bring the names back to where they
/// started.
///
/// # Safety
/// Every pointer in `ptrs` must have `blocks * 64` readable bytes.
#[target_feature(enable = "avx2")]
unsafe fn compress_lanes(states: &mut [[u32; 5]; LANES], ptrs: &[*const u8; LANES], blocks: usize) {
    // `s[j]` holds word `j` of the eight states. Five words do not make an 8×8 transpose;
    // this runs once per call, not per block.
    let mut s: [__m256i; 5] = from_fn(|j| {
        let words: [u32; LANES] = from_fn(|lane| states[lane][j]);
        // SAFETY: `words` is 32 bytes; unaligned load.
        unsafe { _mm256_loadu_si256(words.as_ptr().cast()) }
    });
    // The message schedule, 80 words of eight lanes: 2.5 KiB on the (L1-resident) stack.
    let mut w = [_mm256_setzero_si256(); 80];

    for block in 0..blocks {
        // SAFETY: `block < blocks` and every message has `blocks * 64` bytes.
        let words = unsafe { load_block(ptrs, block * BLOCK) };
        w[..16].copy_from_slice(&words);

        let [mut a, mut b, mut c, mut d, mut e] = s;

        // One round: e += rotl 5 (a) + f(b, c, d) + K + W[t], b = rotl 30 (b); the new a is
        // then in `e`, and the next round takes the names shifted by one.
        macro_rules! round {
            ($f:ident, $k:ident, $a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $t:expr) => {
                let t = $t;
                let x = _mm256_add_epi32($e, _mm256_add_epi32(w[t], $k));
                let x = _mm256_add_epi32(x, $f!($b, $c, $d));
                $e = _mm256_add_epi32(x, rotl!($a, 5));
                $b = rotl!($b, 30);
                schedule(&mut w, t);
            };
        }
        // Twenty rounds with round function `f` and constant `k`.
        macro_rules! stage {
            ($f:ident, $k:literal, $first:literal) => {
                let k = _mm256_set1_epi32(u32::cast_signed($k));
                for t in ($first..$first + 20).step_by(5) {
                    round!($f, k, a, b, c, d, e, t);
                    round!($f, k, e, a, b, c, d, t + 1);
                    round!($f, k, d, e, a, b, c, t + 2);
                    round!($f, k, c, d, e, a, b, t + 3);
                    round!($f, k, b, c, d, e, a, t + 4);
                }
            };
        }
        stage!(ch, 0x5a827999, 0);
        stage!(parity, 0x6ed9eba1, 20);
        stage!(maj, 0x8f1bbcdc, 40);
        stage!(parity, 0xca62c1d6, 60);

        for (s, new) in s.iter_mut().zip([a, b, c, d, e]) {
            *s = _mm256_add_epi32(*s, new);
        }
    }

    for (j, s) in s.into_iter().enumerate() {
        let mut words = [0u32; LANES];
        // SAFETY: `words` is 32 bytes; unaligned store.
        unsafe { _mm256_storeu_si256(words.as_mut_ptr().cast(), s) };
        for (state, word) in states.iter_mut().zip(words) {
            state[j] = word;
        }
    }
}
