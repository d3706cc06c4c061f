//! SHA-512 in AVX-512VL: the AVX2 kernel (`sha512_avx2`: four messages per 256-bit register,
//! one 64-bit word of each per lane) with the two instructions AVX2 lacks.
//!
//! - `vprorq` rotates 64-bit lanes in one instruction, where AVX2 takes two shifts and an or;
//! - `vpternlogq` computes any function of three inputs bit by bit: the three-way xor of Σ0,
//!   Σ1, σ0 and σ1, Ch and Maj are one instruction each.
//!
//! A round goes from 35 instructions to 17, a schedule word from 19 to 11. The registers stay
//! 256 bits wide: the VL in AVX-512VL is the AVX-512 instructions on ymm registers, which every
//! AVX-512 core runs at full rate (512-bit registers are split in two on AMD Zen 4, and make
//! some Intel cores lower their clock). Eight messages in one zmm register measured 4 % slower
//! on Zen 4 than two interleaved groups of four in ymm registers, so there is no zmm kernel.
//!
//! Everything but the round functions is the AVX2 kernel's: the entry checks, the constants,
//! the loads and transpositions, and the order of rounds and schedule words. It runs in
//! functions with AVX-512F and AVX-512VL enabled, which imply AVX2.

use std::arch::x86_64::*;

use super::sha512_avx2::{
    BLOCK, K, WIDTH, load_block, load_states, message_pointers, rounds, store_states,
};

/// Whether this CPU runs the kernel: AVX-512F (the foundation every AVX-512 instruction
/// needs) and AVX-512VL (its instructions on 256-bit registers).
pub(super) fn supported() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
}

/// Runs `blocks` 128-byte blocks of `data[i]` through `states[i]`, SHA-512's (or SHA-384's:
/// the same compression) state in the order a..h, for `N` = 4 messages (one group) or 8 (two
/// groups of four interleaved: the faster, see [`compress_groups`]).
///
/// # Panics
/// If a message has less than `blocks * 128` bytes of data. Other `N` do not compile.
///
/// # Safety
/// The CPU must have AVX-512F and AVX-512VL ([`supported`]).
pub(super) unsafe fn compress<const N: usize>(
    states: &mut [[u64; 8]; N],
    data: &[&[u8]; N],
    blocks: usize,
) {
    let ptrs = message_pointers(data, blocks);
    // SAFETY: the caller guarantees AVX-512F and AVX-512VL; every pointer has `blocks * 128`
    // readable bytes (checked by `message_pointers`) and `data` outlives the call.
    unsafe {
        if N == WIDTH {
            compress_groups::<1>(states, &ptrs, blocks);
        } else {
            compress_groups::<2>(states, &ptrs, blocks);
        }
    }
}

super::kernel::bench_entry!(bench_compress_sha512_avx512, [u64; 8]);

// `vpternlogq`'s immediate is the truth table of the function it computes: bit `4x + 2y + z`
// of it is the result for input bits x, y, z. Evaluating the function on x = 0xf0, y = 0xcc,
// z = 0xaa (the columns of that table) gives it.

/// x ^ y ^ z.
const XOR3: i32 = 0xf0 ^ 0xcc ^ 0xaa;
/// Ch(x, y, z) = (x & y) ^ (!x & z): y where x is set, z elsewhere.
const CH: i32 = (0xf0 & 0xcc) | (!0xf0 & 0xaa);
/// Maj(x, y, z) = (x & y) ^ (x & z) ^ (y & z): the bit most of the three have.
const MAJ: i32 = (0xf0 & 0xcc) | (0xf0 & 0xaa) | (0xcc & 0xaa);

/// x ^ y ^ z in one instruction.
#[inline]
#[target_feature(enable = "avx512f,avx512vl")]
fn xor3(x: __m256i, y: __m256i, z: __m256i) -> __m256i {
    _mm256_ternarylogic_epi64::<XOR3>(x, y, z)
}

/// Σ0 (FIPS 180-4, 4.1.3): rotr 28 ^ rotr 34 ^ rotr 39.
#[inline]
#[target_feature(enable = "avx512f,avx512vl")]
fn big_sigma0(x: __m256i) -> __m256i {
    xor3(
        _mm256_ror_epi64::<28>(x),
        _mm256_ror_epi64::<34>(x),
        _mm256_ror_epi64::<39>(x),
    )
}

/// Σ1: rotr 14 ^ rotr 18 ^ rotr 41.
#[inline]
#[target_feature(enable = "avx512f,avx512vl")]
fn big_sigma1(x: __m256i) -> __m256i {
    xor3(
        _mm256_ror_epi64::<14>(x),
        _mm256_ror_epi64::<18>(x),
        _mm256_ror_epi64::<41>(x),
    )
}

/// σ0: rotr 1 ^ rotr 8 ^ shr 7 (the message schedule's; called by [`rounds!`]).
#[inline]
#[target_feature(enable = "avx512f,avx512vl")]
fn small_sigma0(x: __m256i) -> __m256i {
    xor3(
        _mm256_ror_epi64::<1>(x),
        _mm256_ror_epi64::<8>(x),
        _mm256_srli_epi64::<7>(x),
    )
}

/// σ1: rotr 19 ^ rotr 61 ^ shr 6.
#[inline]
#[target_feature(enable = "avx512f,avx512vl")]
fn small_sigma1(x: __m256i) -> __m256i {
    xor3(
        _mm256_ror_epi64::<19>(x),
        _mm256_ror_epi64::<61>(x),
        _mm256_srli_epi64::<6>(x),
    )
}

/// Hashes `blocks` blocks of all `4 * G` messages, the `G` groups of four interleaved round
/// by round.
///
/// Per block and group of four messages: 80 rounds of 17 vector ALU instructions (6 rotates,
/// 4 `vpternlogq`, 7 adds) and 64 schedule words of 11 (6 rotates and shifts, 2 `vpternlogq`,
/// 3 adds), about 2 150 with the loads for 512 bytes, half the AVX2 kernel's 4 100. On AMD
/// Zen 4 (four vector ALUs, two of which shift and rotate) that is at least ~540 cycles, 1.05
/// cycles per byte. Measured there: 1.14 cycles per byte for 8 messages (`G` = 2), 3.5× one
/// stream of OpenSSL's SHA-512 and 2× the AVX2 kernel; 1.31 for 4 messages (`G` = 1), where
/// one group's chain of dependent rounds leaves the ALUs idle at times.
///
/// # Safety
/// Every pointer in `ptrs` must have `blocks * 128` readable bytes.
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn compress_groups<const G: usize>(
    states: &mut [[u64; 8]],
    ptrs: &[*const u8],
    blocks: usize,
) {
    assert!(ptrs.len() == WIDTH * G);
    let mut s = load_states::<G>(states);
    // The message schedule of every group: 2.5 KiB per group on the (L1-resident) stack.
    let mut w = [[_mm256_setzero_si256(); 80]; G];

    for block in 0..blocks {
        for (g, w) in w.iter_mut().enumerate() {
            // SAFETY: `block < blocks` and every message has `blocks * 128` bytes.
            let words = unsafe { load_block(&ptrs[WIDTH * g..WIDTH * (g + 1)], block * BLOCK) };
            w[..16].copy_from_slice(&words);
        }

        // One round in every group; `rounds!` rotates the names instead of moving values.
        macro_rules! round {
            ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $t:expr) => {
                let k = _mm256_set1_epi64x(K[$t] as i64);
                for n in 0..G {
                    // T1 = h + W[t] + K[t] + Ch(e, f, g) + Σ1(e), T2 = Σ0(a) + Maj(a, b, c).
                    // The compiler reassociates the adds as it sees fit: summing the new e
                    // in another order (to shorten the chain from e) gave the same machine
                    // code.
                    let ch = _mm256_ternarylogic_epi64::<CH>($e[n], $f[n], $g[n]);
                    let t1 = _mm256_add_epi64($h[n], _mm256_add_epi64(w[n][$t], k));
                    let t1 = _mm256_add_epi64(_mm256_add_epi64(t1, ch), big_sigma1($e[n]));
                    let maj = _mm256_ternarylogic_epi64::<MAJ>($a[n], $b[n], $c[n]);
                    let t2 = _mm256_add_epi64(big_sigma0($a[n]), maj);
                    $d[n] = _mm256_add_epi64($d[n], t1);
                    $h[n] = _mm256_add_epi64(t1, t2);
                }
            };
        }
        rounds!(round, s, w);
    }
    store_states(s, states);
}
