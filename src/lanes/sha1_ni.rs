//! SHA-1 with the x86 SHA extensions (SHA-NI), several messages interleaved on one core.
//!
//! With SHA-NI, one SHA-1 stream is bound by latency rather than by the hardware: a block is a
//! chain of 20 `sha1rnds4` (four rounds each), every one waiting for the result of the one
//! before, while the core could start a new one before the last has finished. The leaves of a
//! Merkle tree are independent messages: hashing `N` of them in one instruction stream, step by
//! step, gives the out-of-order core `N` independent chains to fill that latency with, as
//! Intel's isa-l_crypto does with two (`sha1_ni_x2`).
//!
//! The single-stream algorithm is the usual one (Intel's SHA extensions white paper, the Linux
//! kernel's `sha1_ni_asm`, RustCrypto's `sha1`): every variable here is an array of `N`
//! registers, one per stream, and every step a loop over the streams, which LLVM unrolls into
//! `N` independent instructions side by side.
//!
//! Written with `std::arch` intrinsics: within a `#[target_feature]` function the arithmetic
//! intrinsics are safe to call, so the only `unsafe` left is reading memory through pointers
//! and entering the feature-gated code.

use std::arch::x86_64::*;
use std::array::from_fn;

use super::simd::checked_pointers;

/// Whether this CPU runs [`compress`]: the instructions of the SHA-256 kernel's.
pub(super) use super::sha256_ni::supported;

/// Runs `blocks` 64-byte blocks of `data[i]` through `states[i]`, for each of the `N` streams
/// at once. A state is in the standard word order a, b, c, d, e (that of RustCrypto's
/// `sha1::block_api::compress`).
///
/// # Panics
/// If a stream has less than `blocks * 64` bytes of data.
///
/// # Safety
/// The CPU must support SHA-NI, SSSE3 and SSE4.1 ([`supported`]).
pub(super) unsafe fn compress<const N: usize>(
    states: &mut [[u32; 5]; N],
    data: &[&[u8]; N],
    blocks: usize,
) {
    let ptrs = checked_pointers(data, blocks, 64);
    // SAFETY: the caller guarantees the CPU features; every pointer has `blocks * 64` readable
    // bytes (checked by `checked_pointers`) and `data` outlives the call.
    unsafe { compress_interleaved(states, &ptrs, blocks) }
}

/// The kernel of [`compress`].
///
/// # Safety
/// Every pointer must have `blocks * 64` readable bytes.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
unsafe fn compress_interleaved<const N: usize>(
    states: &mut [[u32; 5]; N],
    ptrs: &[*const u8; N],
    blocks: usize,
) {
    // The SHA-1 instructions keep a, b, c, d in one register, from the highest 32-bit element
    // down, and e in the highest element of another.
    let mut abcd: [__m128i; N] = from_fn(|i| {
        let [a, b, c, d, _] = states[i].map(u32::cast_signed);
        _mm_set_epi32(a, b, c, d)
    });
    let mut e: [__m128i; N] = from_fn(|i| _mm_set_epi32(states[i][4].cast_signed(), 0, 0, 0));

    for block in 0..blocks {
        // In memory, as in the SHA-256 kernel (`sha256_ni`): 1.7 % faster with four streams.
        let mut saved = (abcd, e);
        std::hint::black_box(&mut saved);
        let (abcd0, e0) = saved;
        // The 16 message words of every stream: `w[j][i]` holds words 4j .. 4j + 4 of stream
        // `i`, the first in the highest element. It is a window over the message schedule:
        // from round 16 on, each quarter is replaced by the next four words before they are
        // used.
        let mut w: [[__m128i; N]; 4] = from_fn(|j| {
            from_fn(|i| {
                // SAFETY: `block < blocks` and every pointer has `blocks * 64` readable
                // bytes, so the 16 bytes at `block * 64 + j * 16` are in bounds.
                unsafe { load_be_words(ptrs[i].add(block * 64 + j * 16)) }
            })
        });
        // What `sha1rnds4` takes besides a, b, c, d: e plus the first message word, and the
        // next three words. For later groups of rounds `sha1nexte` makes it.
        let mut ew: [__m128i; N] = from_fn(|i| _mm_add_epi32(e[i], w[0][i]));

        // Rounds 0 .. 20.
        rounds4::<0, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<1, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<2, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<3, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<4, N>(&mut abcd, &mut ew, &mut w);
        // Rounds 20 .. 40.
        rounds4::<5, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<6, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<7, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<8, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<9, N>(&mut abcd, &mut ew, &mut w);
        // Rounds 40 .. 60.
        rounds4::<10, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<11, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<12, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<13, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<14, N>(&mut abcd, &mut ew, &mut w);
        // Rounds 60 .. 80; the last group gives back a, b, c, d from before it, whose a,
        // rotated, is the new e.
        rounds4::<15, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<16, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<17, N>(&mut abcd, &mut ew, &mut w);
        rounds4::<18, N>(&mut abcd, &mut ew, &mut w);
        let before = rounds4::<19, N>(&mut abcd, &mut ew, &mut w);

        abcd = from_fn(|i| _mm_add_epi32(abcd[i], abcd0[i]));
        e = from_fn(|i| _mm_sha1nexte_epu32(before[i], e0[i]));
    }

    for i in 0..N {
        let [d, c, b, a] = elements(abcd[i]);
        let [_, _, _, e] = elements(e[i]);
        states[i] = [a, b, c, d, e];
    }
}

/// Four big-endian 32-bit words from `p`, the first in the highest element.
///
/// # Safety
/// `p` must have 16 readable bytes.
#[inline]
#[target_feature(enable = "sse2,ssse3")]
unsafe fn load_be_words(p: *const u8) -> __m128i {
    // SAFETY: the caller guarantees 16 readable bytes; unaligned load.
    let v = unsafe { _mm_loadu_si128(p.cast()) };
    _mm_shuffle_epi8(
        v,
        _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    )
}

/// The four 32-bit elements of `v`, the lowest first.
#[inline]
#[target_feature(enable = "sse2")]
fn elements(v: __m128i) -> [u32; 4] {
    let mut out = [0; 4];
    // SAFETY: `out` is 16 writable bytes; unaligned store.
    unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), v) };
    out
}

/// Rounds 4Q .. 4Q + 4 in every stream, and the `sha1rnds4` operand `ew` of the next four.
///
/// `abcd` holds a, b, c, d before the rounds and after them on return; `ew` the message words
/// of the rounds plus e. Returns a, b, c, d from before the rounds: e four rounds on is the a of
/// four rounds before, rotated (FIPS 180-4, 6.1.2, step 3), which is what `sha1nexte` adds to
/// the next four words.
#[inline]
#[target_feature(enable = "sha,sse2")]
fn rounds4<const Q: usize, const N: usize>(
    abcd: &mut [__m128i; N],
    ew: &mut [__m128i; N],
    w: &mut [[__m128i; N]; 4],
) -> [__m128i; N] {
    let before = *abcd;
    // The round function and constant, fixed for every 20 rounds, are the instruction's
    // immediate operand.
    *abcd = from_fn(|i| match Q / 5 {
        0 => _mm_sha1rnds4_epu32::<0>(abcd[i], ew[i]),
        1 => _mm_sha1rnds4_epu32::<1>(abcd[i], ew[i]),
        2 => _mm_sha1rnds4_epu32::<2>(abcd[i], ew[i]),
        _ => _mm_sha1rnds4_epu32::<3>(abcd[i], ew[i]),
    });
    let next = Q + 1;
    if next < 20 {
        if next >= 4 {
            schedule(w, next % 4);
        }
        *ew = from_fn(|i| _mm_sha1nexte_epu32(before[i], w[next % 4][i]));
    }
    before
}

/// Replaces quarter `j` of every stream's window, words t - 16 .. t - 12 of the message
/// schedule, by words t .. t + 4 (FIPS 180-4, 6.1.2, step 1):
/// W[t] = rotl1(W[t - 3] ^ W[t - 8] ^ W[t - 14] ^ W[t - 16]).
///
/// `sha1msg1` xors W[t - 14 ..] into W[t - 16 ..], the xor adds W[t - 8 ..], and `sha1msg2`
/// xors in W[t - 3 ..], the last of which is the first word it has just computed, and rotates.
#[inline]
#[target_feature(enable = "sha,sse2")]
fn schedule<const N: usize>(w: &mut [[__m128i; N]; 4], j: usize) {
    let [w0, w1, w2, w3] = [j, j + 1, j + 2, j + 3].map(|q| w[q % 4]);
    w[j] = from_fn(|i| {
        let t = _mm_xor_si128(_mm_sha1msg1_epu32(w0[i], w1[i]), w2[i]);
        _mm_sha1msg2_epu32(t, w3[i])
    });
}

super::simd::bench_entry!(bench_compress_sha1, [u32; 5]);
