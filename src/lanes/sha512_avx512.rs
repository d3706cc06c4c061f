//! SHA-512 in AVX-512VL: the AVX2 kernel (`sha512_avx2`: four messages per 256-bit register,
//! one 64-bit word of each per lane) with the two instructions AVX2 lacks.
//!
//! - `vprorq` rotates 64-bit lanes in one instruction, where AVX2 takes two shifts and an or;
//! - `vpternlogq` computes any function of three inputs bit by bit: the three-way xor of Σ0,
//!   Σ1, σ0 and σ1, Ch and Maj are one instruction each.
//!
//! A round goes from 35 instructions to 17, a schedule word from 19 to 11. [`compress`] keeps
//! the registers 256 bits wide: the VL in AVX-512VL is the AVX-512 instructions on ymm
//! registers, which every AVX-512 core runs at full rate. [`compress_zmm`] runs the same
//! rounds on eight messages per 512-bit register: AMD Zen 4 splits those in two (there eight
//! messages in one zmm register measured 4 % slower than two interleaved groups of four in ymm
//! registers), AMD Zen 5 does not, and there two groups of eight hash 1.8 × as fast as two of
//! four (6.6 GB/s on one core against 3.6, 5.4 × one OpenSSL stream; `docs/performance.md`,
//! "Multi-buffer kernels"), so it is chosen first.
//!
//! Everything but the round functions is the AVX2 kernel's: the entry checks, the constants,
//! the loads and transpositions, and the order of rounds and schedule words. It runs in
//! functions with AVX-512F and AVX-512VL enabled, which imply AVX2.

use std::arch::x86_64::*;

use super::sha512_avx2::{
    BLOCK, K, WIDTH, by_groups, load_block, load_states, rounds, store_states,
};
use super::simd::checked_pointers;

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
    // SAFETY: the caller guarantees AVX-512F and AVX-512VL, which the functions need.
    unsafe {
        by_groups(
            states,
            data,
            blocks,
            [compress_groups::<1>, compress_groups::<2>],
        )
    }
}

super::simd::bench_entry!(bench_compress_sha512_avx512, [u64; 8]);

// `vpternlogq`'s immediate is the truth table of the function it computes: bit `4x + 2y + z`
// of it is the result for input bits x, y, z. Evaluating the function on x = 0xf0, y = 0xcc,
// z = 0xaa (the columns of that table) gives it.

/// x ^ y ^ z.
pub(super) const XOR3: i32 = 0xf0 ^ 0xcc ^ 0xaa;
/// Ch(x, y, z) = (x & y) ^ (!x & z): y where x is set, z elsewhere.
pub(super) const CH: i32 = (0xf0 & 0xcc) | (!0xf0 & 0xaa);
/// Maj(x, y, z) = (x & y) ^ (x & z) ^ (y & z): the bit most of the three have.
pub(super) const MAJ: i32 = (0xf0 & 0xcc) | (0xf0 & 0xaa) | (0xcc & 0xaa);

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
    // The window of the message schedule of every group (see `rounds!`): 512 bytes per
    // group on the (L1-resident) stack.
    let mut w = [[_mm256_setzero_si256(); 16]; G];

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
                    let t1 = _mm256_add_epi64($h[n], _mm256_add_epi64(w[n][$t % 16], k));
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

/// Lanes (messages) per 512-bit register.
const ZMM_WIDTH: usize = 8;

/// Whether this CPU runs [`compress_zmm`]: AVX-512F, and AVX-512BW for the byte shuffle
/// that swaps the message words' bytes.
pub(super) fn supported_zmm() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
}

/// [`compress`] in 512-bit registers: eight messages per register, for `N` = 8 messages (one
/// group) or 16 (two groups interleaved).
///
/// # Panics
/// If a message has less than `blocks * 128` bytes of data. Other `N` do not compile.
///
/// # Safety
/// The CPU must have AVX-512F and AVX-512BW ([`supported_zmm`]).
pub(super) unsafe fn compress_zmm<const N: usize>(
    states: &mut [[u64; 8]; N],
    data: &[&[u8]; N],
    blocks: usize,
) {
    const { assert!(N == ZMM_WIDTH || N == 2 * ZMM_WIDTH, "8 or 16 messages") };
    let ptrs = checked_pointers(data, blocks, BLOCK);
    // SAFETY: the caller guarantees AVX-512F and AVX-512BW; every pointer has `blocks * 128`
    // readable bytes (checked by `checked_pointers`) and `data` outlives the call.
    unsafe {
        if N == ZMM_WIDTH {
            zmm_groups::<1>(states, &ptrs, blocks);
        } else {
            zmm_groups::<2>(states, &ptrs, blocks);
        }
    }
}

/// σ0 in 512-bit registers.
#[inline]
#[target_feature(enable = "avx512f")]
fn small_sigma0_zmm(x: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<XOR3>(
        _mm512_ror_epi64::<1>(x),
        _mm512_ror_epi64::<8>(x),
        _mm512_srli_epi64::<7>(x),
    )
}

/// σ1 in 512-bit registers.
#[inline]
#[target_feature(enable = "avx512f")]
fn small_sigma1_zmm(x: __m512i) -> __m512i {
    _mm512_ternarylogic_epi64::<XOR3>(
        _mm512_ror_epi64::<19>(x),
        _mm512_ror_epi64::<61>(x),
        _mm512_srli_epi64::<6>(x),
    )
}

/// Transposes an 8×8 matrix of 64-bit words: row `j` in, column `j` out (its own inverse).
/// 24 shuffles: 64-bit interleaves of row pairs, then a 4×4 transpose of 128-bit blocks in
/// two rounds of `vshufi64x2`.
#[inline]
#[target_feature(enable = "avx512f")]
fn transpose8(r: [__m512i; 8]) -> [__m512i; 8] {
    use std::array::from_fn;
    // Block `q` of t[2i + m] holds word 2q + m of rows 2i and 2i + 1.
    let t: [__m512i; 8] = from_fn(|j| {
        let (x, y) = (r[j & !1], r[j | 1]);
        if j % 2 == 0 {
            _mm512_unpacklo_epi64(x, y)
        } else {
            _mm512_unpackhi_epi64(x, y)
        }
    });
    // Column 2q + m is block `q` of t[m], t[2 + m], t[4 + m], t[6 + m]: for each `m`, a 4×4
    // transpose of blocks. `::<0x88>(x, y)` takes blocks 0 and 2 of `x`, then of `y`;
    // `::<0xdd>` blocks 1 and 3.
    let u: [__m512i; 8] = from_fn(|j| {
        let (m, k) = (j % 2, j / 2);
        let (x, y) = (t[4 * (k / 2) + m], t[4 * (k / 2) + 2 + m]);
        if k % 2 == 0 {
            _mm512_shuffle_i64x2::<0x88>(x, y)
        } else {
            _mm512_shuffle_i64x2::<0xdd>(x, y)
        }
    });
    // u[m] = blocks 0, 2 of t[m], t[2 + m]; u[2 + m] = blocks 1, 3 of them; u[4 + m],
    // u[6 + m] the same of t[4 + m], t[6 + m].
    from_fn(|c| {
        let (q, m) = (c / 2, c % 2);
        let (x, y) = (u[2 * (q % 2) + m], u[4 + 2 * (q % 2) + m]);
        if q < 2 {
            _mm512_shuffle_i64x2::<0x88>(x, y)
        } else {
            _mm512_shuffle_i64x2::<0xdd>(x, y)
        }
    })
}

/// Hashes `blocks` blocks of all `8 * G` messages, eight per 512-bit register, the `G` groups
/// interleaved round by round: the rounds of [`compress_groups`] on twice the lanes per
/// instruction.
///
/// AMD Zen 5 runs 512-bit instructions at the rate of 256-bit ones (four additions, two
/// rotations a cycle), so a round of eight messages costs what one of four does in ymm
/// registers: the kernel does twice the work per instruction. With two groups the 32
/// registers of AVX-512 still hold all 16 state vectors. (Zen 4 splits 512-bit instructions
/// in two; there the two groups of eight do what four groups of four in ymm would.)
///
/// # Safety
/// Every pointer in `ptrs` must have `blocks * 128` readable bytes.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn zmm_groups<const G: usize>(states: &mut [[u64; 8]], ptrs: &[*const u8], blocks: usize) {
    assert!(ptrs.len() == ZMM_WIDTH * G && states.len() == ZMM_WIDTH * G);
    // Reverses the bytes of every 64-bit word: SHA-512's words are big-endian.
    let bswap = _mm512_set_epi64(
        0x0809_0a0b_0c0d_0e0f,
        0x0001_0203_0405_0607,
        0x0809_0a0b_0c0d_0e0f,
        0x0001_0203_0405_0607,
        0x0809_0a0b_0c0d_0e0f,
        0x0001_0203_0405_0607,
        0x0809_0a0b_0c0d_0e0f,
        0x0001_0203_0405_0607,
    );
    // s[w][g]: word `w` of the eight messages of group `g`.
    let mut s = [[_mm512_setzero_si512(); G]; 8];
    for g in 0..G {
        // SAFETY: a state is 64 readable bytes; unaligned load.
        let rows = std::array::from_fn(|lane| unsafe {
            _mm512_loadu_si512(states[ZMM_WIDTH * g + lane].as_ptr().cast())
        });
        for (w, v) in transpose8(rows).into_iter().enumerate() {
            s[w][g] = v;
        }
    }
    // The window of the message schedule of every group (see `rounds!`): 1 KiB per group on
    // the (L1-resident) stack.
    let mut w = [[_mm512_setzero_si512(); 16]; G];

    for block in 0..blocks {
        for (g, w) in w.iter_mut().enumerate() {
            for half in 0..2 {
                let rows = std::array::from_fn(|lane| {
                    let p = ptrs[ZMM_WIDTH * g + lane];
                    // SAFETY: `block < blocks` and every message has `blocks * 128` bytes, so
                    // the 64 bytes at `block * 128 + half * 64` are readable; unaligned load.
                    let v = unsafe { _mm512_loadu_si512(p.add(block * BLOCK + half * 64).cast()) };
                    _mm512_shuffle_epi8(v, bswap)
                });
                w[8 * half..8 * half + 8].copy_from_slice(&transpose8(rows));
            }
        }

        // One round in every group, as in `compress_groups`.
        macro_rules! round {
            ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $t:expr) => {
                let k = _mm512_set1_epi64(K[$t] as i64);
                for n in 0..G {
                    let ch = _mm512_ternarylogic_epi64::<CH>($e[n], $f[n], $g[n]);
                    let t1 = _mm512_add_epi64($h[n], _mm512_add_epi64(w[n][$t % 16], k));
                    let sigma1 = _mm512_ternarylogic_epi64::<XOR3>(
                        _mm512_ror_epi64::<14>($e[n]),
                        _mm512_ror_epi64::<18>($e[n]),
                        _mm512_ror_epi64::<41>($e[n]),
                    );
                    let t1 = _mm512_add_epi64(_mm512_add_epi64(t1, ch), sigma1);
                    let maj = _mm512_ternarylogic_epi64::<MAJ>($a[n], $b[n], $c[n]);
                    let sigma0 = _mm512_ternarylogic_epi64::<XOR3>(
                        _mm512_ror_epi64::<28>($a[n]),
                        _mm512_ror_epi64::<34>($a[n]),
                        _mm512_ror_epi64::<39>($a[n]),
                    );
                    let t2 = _mm512_add_epi64(sigma0, maj);
                    $d[n] = _mm512_add_epi64($d[n], t1);
                    $h[n] = _mm512_add_epi64(t1, t2);
                }
            };
        }
        rounds!(
            round,
            s,
            w,
            _mm512_add_epi64,
            small_sigma0_zmm,
            small_sigma1_zmm
        );
    }
    for g in 0..G {
        let rows = transpose8(std::array::from_fn(|w| s[w][g]));
        for (lane, v) in rows.into_iter().enumerate() {
            // SAFETY: a state is 64 writable bytes; unaligned store.
            unsafe { _mm512_storeu_si512(states[ZMM_WIDTH * g + lane].as_mut_ptr().cast(), v) };
        }
    }
}
