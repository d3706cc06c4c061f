//! SHA-256 with the x86 SHA extensions (SHA-NI), several messages interleaved on one core.
//!
//! With SHA-NI, one SHA-256 stream is bound by latency rather than by the hardware: a block is
//! a chain of 32 `sha256rnds2` (two rounds each), every one waiting for the result of the one
//! before, while the core could start a new one before the last has finished. The leaves of a
//! Merkle tree are independent messages: hashing `N` of them in one instruction stream, step by
//! step, gives the out-of-order core `N` independent chains to fill that latency with, as
//! Intel's isa-l_crypto does with two (`sha256_ni_x2`).
//!
//! The single-stream algorithm is the usual one (Intel's SHA extensions white paper, the Linux
//! kernel's `sha256_ni_asm`, RustCrypto's `sha2`): every variable here is an array of `N`
//! registers, one per stream, and every step a loop over the streams, which LLVM unrolls into
//! `N` independent instructions side by side.
//!
//! Written with `std::arch` intrinsics: within a `#[target_feature]` function the arithmetic
//! intrinsics are safe to call, so the only `unsafe` left is reading memory through pointers
//! and entering the feature-gated code.

use std::arch::x86_64::*;
use std::array::from_fn;

use super::simd::checked_pointers;

/// The 64 round constants of FIPS 180-4 (4.2.2), four per group of four rounds (the AVX2
/// kernel takes them one by one).
pub(super) const K: [[u32; 4]; 16] = [
    [0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5],
    [0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5],
    [0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3],
    [0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174],
    [0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc],
    [0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da],
    [0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7],
    [0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967],
    [0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13],
    [0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85],
    [0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3],
    [0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070],
    [0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5],
    [0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3],
    [0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208],
    [0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2],
];

/// Whether this CPU runs [`compress`].
pub(super) fn supported() -> bool {
    is_x86_feature_detected!("sha")
        && is_x86_feature_detected!("ssse3")
        && is_x86_feature_detected!("sse4.1")
}

/// Runs `blocks` 64-byte blocks of `data[i]` through `states[i]`, for each of the `N` streams
/// at once. A state is in the standard word order a, b, c, d, e, f, g, h (that of RustCrypto's
/// `sha2::block_api::compress256`).
///
/// # Panics
/// If a stream has less than `blocks * 64` bytes of data.
///
/// # Safety
/// The CPU must support SHA-NI, SSSE3 and SSE4.1 ([`supported`]).
pub(super) unsafe fn compress<const N: usize>(
    states: &mut [[u32; 8]; N],
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
    states: &mut [[u32; 8]; N],
    ptrs: &[*const u8; N],
    blocks: usize,
) {
    // `sha256rnds2` keeps the eight words in two registers of its own: a, b, e, f and c, d,
    // g, h, each from the highest 32-bit element down.
    let mut abef: [__m128i; N] = from_fn(|i| {
        let [a, b, _, _, e, f, _, _] = states[i].map(u32::cast_signed);
        _mm_set_epi32(a, b, e, f)
    });
    let mut cdgh: [__m128i; N] = from_fn(|i| {
        let [_, _, c, d, _, _, g, h] = states[i].map(u32::cast_signed);
        _mm_set_epi32(c, d, g, h)
    });

    for block in 0..blocks {
        // The states at the start of the block, kept in memory as Intel's `sha256_ni_x2` keeps
        // them: with two streams the block's working set (states, message windows, the
        // implicit `xmm0`) is more than the 16 registers the SHA instructions reach, and
        // left to choose, LLVM spilled a state register of the rounds' chain instead in some
        // builds, 5.5 % slower. (`black_box` is a hint to the compiler only: the digests do
        // not depend on it, and the kernel tests check them in every build.)
        let mut saved = (abef, cdgh);
        std::hint::black_box(&mut saved);
        let (abef0, cdgh0) = saved;
        // The 16 message words of every stream: `w[j][i]` holds words 4j .. 4j + 4 of stream
        // `i`, the first in the lowest element. It is a window over the message schedule:
        // from round 16 on, each quarter is replaced by the next four words before they are
        // used.
        let mut w: [[__m128i; N]; 4] = from_fn(|j| {
            from_fn(|i| {
                // SAFETY: `block < blocks` and every pointer has `blocks * 64` readable
                // bytes, so the 16 bytes at `block * 64 + j * 16` are in bounds.
                unsafe { load_be_words(ptrs[i].add(block * 64 + j * 16)) }
            })
        });

        rounds4(&mut abef, &mut cdgh, &w[0], K[0]);
        rounds4(&mut abef, &mut cdgh, &w[1], K[1]);
        rounds4(&mut abef, &mut cdgh, &w[2], K[2]);
        rounds4(&mut abef, &mut cdgh, &w[3], K[3]);
        for k in K[4..].chunks_exact(4) {
            for j in 0..4 {
                schedule(&mut w, j);
                rounds4(&mut abef, &mut cdgh, &w[j], k[j]);
            }
        }

        abef = from_fn(|i| _mm_add_epi32(abef[i], abef0[i]));
        cdgh = from_fn(|i| _mm_add_epi32(cdgh[i], cdgh0[i]));
    }

    for i in 0..N {
        let [f, e, b, a] = elements(abef[i]);
        let [h, g, d, c] = elements(cdgh[i]);
        states[i] = [a, b, c, d, e, f, g, h];
    }
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

/// Four big-endian 32-bit words from `p`, the first in the lowest element.
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
        _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3),
    )
}

/// Four rounds in every stream, given their four message words `w` and constants `k`.
///
/// `sha256rnds2` does two rounds, with the message words plus constants of the low half of its
/// third operand. It takes c, d, g, h and a, b, e, f and returns the new a, b, e, f; the new
/// c, d, g, h are then the old a, b, e, f. So the first call leaves its result in `cdgh`, the
/// second, with the roles swapped, in `abef`: each register holds what its name says again.
#[inline]
#[target_feature(enable = "sha,sse2")]
fn rounds4<const N: usize>(
    abef: &mut [__m128i; N],
    cdgh: &mut [__m128i; N],
    w: &[__m128i; N],
    k: [u32; 4],
) {
    let [k0, k1, k2, k3] = k.map(u32::cast_signed);
    let k = _mm_set_epi32(k3, k2, k1, k0);
    let wk: [__m128i; N] = from_fn(|i| _mm_add_epi32(w[i], k));
    *cdgh = from_fn(|i| _mm_sha256rnds2_epu32(cdgh[i], abef[i], wk[i]));
    // Words and constants of rounds 3 and 4 moved to the low half.
    *abef = from_fn(|i| _mm_sha256rnds2_epu32(abef[i], cdgh[i], _mm_shuffle_epi32::<0x0e>(wk[i])));
}

/// Replaces quarter `j` of every stream's window, words t - 16 .. t - 12 of the message
/// schedule, by words t .. t + 4 (FIPS 180-4, 6.2.2, step 1):
/// W[t] = σ1(W[t - 2]) + W[t - 7] + σ0(W[t - 15]) + W[t - 16].
///
/// `sha256msg1` adds the σ0 terms to W[t - 16 ..], `alignr` picks W[t - 7 ..] out of the two
/// quarters that hold them, and `sha256msg2` adds the σ1 terms, the last two of which are of
/// the words it has just computed.
#[inline]
#[target_feature(enable = "sha,sse2,ssse3")]
fn schedule<const N: usize>(w: &mut [[__m128i; N]; 4], j: usize) {
    let [w0, w1, w2, w3] = [j, j + 1, j + 2, j + 3].map(|q| w[q % 4]);
    w[j] = from_fn(|i| {
        let t = _mm_add_epi32(
            _mm_sha256msg1_epu32(w0[i], w1[i]),
            _mm_alignr_epi8::<4>(w3[i], w2[i]),
        );
        _mm_sha256msg2_epu32(t, w3[i])
    });
}

super::simd::bench_entry!(bench_compress_sha256, [u32; 8]);
