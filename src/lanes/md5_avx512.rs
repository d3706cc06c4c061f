//! MD5 in AVX-512: sixteen messages per 512-bit register, one 32-bit word of each per lane.
//!
//! The same multi-buffer scheme as the AVX2 kernel ([`super::md5_avx2`]), twice as wide, with
//! two instructions AVX2 lacks that shorten every MD5 step: `vprold` rotates a word in one
//! instruction (AVX2 needs two shifts and an or), and `vpternlogd` computes any function of
//! three words, so each of the round functions F, G, H and I is one instruction (two or three
//! in AVX2). A step is then six instructions: three adds into `a`, the round function, the
//! rotate, and the add of `b`. On CPUs that split 512-bit operations into two 256-bit halves
//! (AMD Zen 4) the width gains nothing by itself; the win is those saved instructions.
//!
//! `N` is 16 (one group of sixteen lanes) or 32 (two groups interleaved step by step, as the
//! AVX2 kernel interleaves its two groups of eight, so that one group's chain of dependent
//! steps fills the latency of the other's; on Zen 4, for long calls, one group after the
//! other: [`SPLIT_BLOCKS`]).
//!
//! The message words arrive transposed: sixteen 64-byte rows, one per lane, loaded whole and
//! turned into sixteen columns, one per message word, with 64 shuffles per block and group
//! ([`transpose`]). That measured fastest of three ways: gathering each column from the
//! sixteen lanes with `vpgatherdd` (a load per lane, with 32-bit offsets from one lane's
//! address) ran at half the speed or less, and
//! loading 128-bit quarters of rows into place (inserts or masked broadcasts) to leave only
//! 32 shuffles was no faster with one group and slower with two.
//!
//! Written with `std::arch` intrinsics: within a `#[target_feature(enable = "avx512f")]`
//! function the arithmetic intrinsics are safe to call, so the only `unsafe` left is reading
//! and writing memory through pointers, entering the feature-gated code, and one empty `asm!`
//! that keeps LLVM from reordering the adds of a step.

use std::arch::x86_64::*;
use std::array::from_fn;

use super::simd::{checked_pointers, half_width_512};

/// Lanes per 512-bit register.
const WIDTH: usize = 16;

/// Whether this CPU runs [`compress`].
pub(super) fn supported() -> bool {
    is_x86_feature_detected!("avx512f")
}

/// Runs `blocks` 64-byte blocks of `data[i]` through `states[i]`, for each of the `N` messages
/// at once. A state is the words A, B, C, D, as RustCrypto's `md5::block_api::compress` takes
/// it. `N` is 16 or 32 (two groups of 16 interleaved); anything else does not compile.
///
/// # Panics
/// If a message has less than `blocks * 64` bytes of data.
///
/// # Safety
/// The CPU must support AVX-512F ([`supported`]).
pub(super) unsafe fn compress<const N: usize>(
    states: &mut [[u32; 4]; N],
    data: &[&[u8]; N],
    blocks: usize,
) {
    const { assert!(N == WIDTH || N == 2 * WIDTH, "N must be 16 or 32") };
    let ptrs = checked_pointers(data, blocks, 64);
    // SAFETY: the caller guarantees AVX-512F; every pointer has `blocks * 64` readable bytes
    // (checked by `checked_pointers`) and `data` outlives the call. `N` is 16 or 32 (checked at compile time),
    // so the slices have the lengths `compress_groups` asks for.
    unsafe {
        if N == WIDTH {
            compress_groups::<1>(states, &ptrs, blocks);
        } else if blocks >= SPLIT_BLOCKS && half_width_512() {
            let (first, second) = states.split_at_mut(WIDTH);
            compress_groups::<1>(first, &ptrs[..WIDTH], blocks);
            compress_groups::<1>(second, &ptrs[WIDTH..], blocks);
        } else {
            compress_groups::<2>(states, &ptrs, blocks);
        }
    }
}

/// The fewest blocks per call for which thirty-two lanes run as two groups of sixteen one
/// after the other, rather than interleaved, on a CPU that splits 512-bit instructions into
/// two 256-bit halves (AMD Zen 4, [`half_width_512`]).
///
/// Lanes of one length may sit a multiple of 4 KiB apart (the leaves of a chunk; no longer
/// the lanes' read buffers, see `source::STAGGER_LINES`), so at each block every lane's row
/// falls in the same two sets of the 8-way L1 cache: 32 lanes bring 64 lines into them per
/// block, twice what 16 do, and every row is read again from L2 or beyond. Measured on one Zen 4 core, messages cut from 16 MiB
/// 4 KiB apart, thread CPU time, medians of 5: 4 KiB messages 6.2 GB/s interleaved against
/// 6.6 one group at a time, 128 KiB ones 6.3 against 7.4; with each group's rows loaded a
/// block early (see [`compress_groups`]) the one group gives 7.3 and 8.0. `mtsum -p 1 -a md5
/// -t rfc6962` on a cached 2 GiB file, CPU time of the hashing thread, medians of 7 runs in
/// turn with the kernel before: 4 KiB leaves 380 → 318 ms, 64 KiB 362 → 280, 1 MiB 356 →
/// 280, 16 MiB 362 → 275 (and the default layout, sixteen lanes, 308 → 280 from the early
/// loads alone). Short calls keep the interleaved groups, which cost less per block there:
/// 1 KiB leaves (15 blocks in place) 8.6 against 7.1 GB/s in cache, 2 KiB leaves (31 blocks)
/// 311 against 336 ms of the hashing thread. On Zen 5, whose 512-bit units are whole, the
/// interleaved groups are 1.2–1.4 × one group.
const SPLIT_BLOCKS: usize = 32;

// The round functions of RFC 1321 (3.4), on words: what the truth tables below are made of,
// and what the tests check the vector instructions against.
const fn f(x: u32, y: u32, z: u32) -> u32 {
    (x & y) | (!x & z)
}
const fn g(x: u32, y: u32, z: u32) -> u32 {
    (x & z) | (y & !z)
}
const fn h(x: u32, y: u32, z: u32) -> u32 {
    x ^ y ^ z
}
const fn i(x: u32, y: u32, z: u32) -> u32 {
    y ^ (x | !z)
}

/// The `vpternlogd` immediate of a function of three words, given the function's value on
/// 0xf0, 0xcc, 0xaa. The instruction looks bit `4x + 2y + z` of the immediate up for each bit
/// position (`x` the bit of the first operand), and those three words have at bit position `n`
/// (`n < 8`) the bits of `n`, so the low byte of the value is the truth table.
const fn truth_table(value: u32) -> i32 {
    (value & 0xff) as i32
}

// One instruction per round function: 0xca, 0xe4, 0x96, 0x39.
const F: i32 = truth_table(f(0xf0, 0xcc, 0xaa));
const G: i32 = truth_table(g(0xf0, 0xcc, 0xaa));
const H: i32 = truth_table(h(0xf0, 0xcc, 0xaa));
const I: i32 = truth_table(i(0xf0, 0xcc, 0xaa));

/// Hashes `blocks` blocks of the `16 * GROUPS` messages, the `GROUPS` groups of sixteen interleaved step
/// by step.
///
/// # Safety
/// Every pointer must have `blocks * 64` readable bytes.
#[target_feature(enable = "avx512f")]
unsafe fn compress_groups<const GROUPS: usize>(
    states: &mut [[u32; 4]],
    ptrs: &[*const u8],
    blocks: usize,
) {
    assert!(states.len() == WIDTH * GROUPS && ptrs.len() == WIDTH * GROUPS);
    let ptrs: [[*const u8; WIDTH]; GROUPS] = from_fn(|g| from_fn(|j| ptrs[WIDTH * g + j]));
    // The states, transposed: element `j` of `abcd[word][g]` is word `word` of message
    // `16 g + j`, `4 (16 g + j) + word` words into `states`. One gather per register, and one
    // scatter back at the end, once per call.
    let base = states.as_mut_ptr().cast::<u32>();
    let offsets = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60);
    let mut abcd = [[_mm512_setzero_si512(); GROUPS]; 4];
    for (word, v) in abcd.iter_mut().enumerate() {
        for (g, v) in v.iter_mut().enumerate() {
            // SAFETY: the words read are `64 g + word + 4 j` for `j < 16`, `word < 4` and
            // `g < GROUPS`: within the `64 * GROUPS` words of `states` (asserted above).
            *v = unsafe { _mm512_i32gather_epi32::<4>(offsets, base.add(64 * g + word).cast()) };
        }
    }
    let [mut a, mut b, mut c, mut d] = abcd;

    // The rows of block `$block` of the lanes `$ptrs` into `$rows`. A macro, not a closure or
    // a function: see the loops below.
    macro_rules! load_rows {
        ($rows:expr, $ptrs:expr, $block:expr) => {
            for (row, p) in $rows.iter_mut().zip($ptrs) {
                // SAFETY: `$block < blocks` (each use checks) and the message has
                // `blocks * 64` readable bytes, so the 64 bytes at `$block * 64` are in
                // bounds; unaligned load.
                *row = unsafe { _mm512_loadu_si512(p.add($block * 64).cast()) };
            }
        };
    }
    // One group loads each block's rows a block early, at the start of the block before:
    // loaded where they are used, they wait on the cache at the head of every block (when
    // the lanes are 4 KiB apart, see `SPLIT_BLOCKS`, every row comes from L2 or beyond, and
    // no prefetch survives the other lanes' rows in those sets), while the steps of the
    // block before are still in the out-of-order window. On 16 MiB of messages 4 KiB apart,
    // 4 KiB each 6.6 → 7.3 GB/s, 128 KiB each 7.4 → 8.0. Two groups have no registers to
    // spare for it: 6.2 → 5.7 GB/s, and 1 KiB leaves took 14 % more of the hashing thread.
    let mut next = [_mm512_setzero_si512(); 16];
    if GROUPS == 1 && blocks > 0 {
        load_rows!(next, &ptrs[0], 0);
    }

    for block in 0..blocks {
        // The 16 message words of every lane, transposed: `w[g][k]` holds word `k` of the
        // sixteen lanes of group `g`. Loops rather than `from_fn`: LLVM compiled that closure
        // out of line, and the call (with a `vzeroupper` and the state spilled around it)
        // cost a sixth of the time.
        let mut w = [[_mm512_setzero_si512(); 16]; GROUPS];
        if GROUPS == 1 {
            let rows = next;
            if block + 1 < blocks {
                load_rows!(next, &ptrs[0], block + 1);
            }
            w[0] = transpose(rows);
        } else {
            for (w, ptrs) in w.iter_mut().zip(&ptrs) {
                let mut rows = [_mm512_setzero_si512(); 16];
                load_rows!(rows, ptrs, block);
                *w = transpose(rows);
            }
        }
        let (a0, b0, c0, d0) = (a, b, c, d);

        // One MD5 step in every group: a = b + rotl(a + fun(b, c, d) + w[k] + K, s). Only
        // `fun` waits for the previous step (for `b`), so it is added last: a step's critical
        // path is then `vpternlogd`, one add, `vprold` and the add of `b`. LLVM would
        // reassociate the adds and put the constant last, one add more on that path (a
        // sixth slower with one group, measured); the empty `asm!` hides `t` from it.
        macro_rules! step {
            ($fun:ident, $a:ident, $b:ident, $c:ident, $d:ident, $k:literal, $K:literal, $s:literal) => {
                for g in 0..GROUPS {
                    let mut t = _mm512_add_epi32(
                        _mm512_add_epi32($a[g], w[g][$k]),
                        _mm512_set1_epi32(u32::cast_signed($K)),
                    );
                    // SAFETY: an empty assembly statement: no instruction, no memory access,
                    // `t` in and out of one register unchanged.
                    unsafe {
                        std::arch::asm!(
                            "/* {t} */",
                            t = inout(zmm_reg) t,
                            options(pure, nomem, nostack, preserves_flags),
                        );
                    }
                    let fun = _mm512_ternarylogic_epi32::<$fun>($b[g], $c[g], $d[g]);
                    let t = _mm512_rol_epi32::<$s>(_mm512_add_epi32(t, fun));
                    $a[g] = _mm512_add_epi32($b[g], t);
                }
            };
        }

        // Round 1.
        step!(F, a, b, c, d, 0, 0xd76aa478, 7);
        step!(F, d, a, b, c, 1, 0xe8c7b756, 12);
        step!(F, c, d, a, b, 2, 0x242070db, 17);
        step!(F, b, c, d, a, 3, 0xc1bdceee, 22);
        step!(F, a, b, c, d, 4, 0xf57c0faf, 7);
        step!(F, d, a, b, c, 5, 0x4787c62a, 12);
        step!(F, c, d, a, b, 6, 0xa8304613, 17);
        step!(F, b, c, d, a, 7, 0xfd469501, 22);
        step!(F, a, b, c, d, 8, 0x698098d8, 7);
        step!(F, d, a, b, c, 9, 0x8b44f7af, 12);
        step!(F, c, d, a, b, 10, 0xffff5bb1, 17);
        step!(F, b, c, d, a, 11, 0x895cd7be, 22);
        step!(F, a, b, c, d, 12, 0x6b901122, 7);
        step!(F, d, a, b, c, 13, 0xfd987193, 12);
        step!(F, c, d, a, b, 14, 0xa679438e, 17);
        step!(F, b, c, d, a, 15, 0x49b40821, 22);
        // Round 2.
        step!(G, a, b, c, d, 1, 0xf61e2562, 5);
        step!(G, d, a, b, c, 6, 0xc040b340, 9);
        step!(G, c, d, a, b, 11, 0x265e5a51, 14);
        step!(G, b, c, d, a, 0, 0xe9b6c7aa, 20);
        step!(G, a, b, c, d, 5, 0xd62f105d, 5);
        step!(G, d, a, b, c, 10, 0x02441453, 9);
        step!(G, c, d, a, b, 15, 0xd8a1e681, 14);
        step!(G, b, c, d, a, 4, 0xe7d3fbc8, 20);
        step!(G, a, b, c, d, 9, 0x21e1cde6, 5);
        step!(G, d, a, b, c, 14, 0xc33707d6, 9);
        step!(G, c, d, a, b, 3, 0xf4d50d87, 14);
        step!(G, b, c, d, a, 8, 0x455a14ed, 20);
        step!(G, a, b, c, d, 13, 0xa9e3e905, 5);
        step!(G, d, a, b, c, 2, 0xfcefa3f8, 9);
        step!(G, c, d, a, b, 7, 0x676f02d9, 14);
        step!(G, b, c, d, a, 12, 0x8d2a4c8a, 20);
        // Round 3.
        step!(H, a, b, c, d, 5, 0xfffa3942, 4);
        step!(H, d, a, b, c, 8, 0x8771f681, 11);
        step!(H, c, d, a, b, 11, 0x6d9d6122, 16);
        step!(H, b, c, d, a, 14, 0xfde5380c, 23);
        step!(H, a, b, c, d, 1, 0xa4beea44, 4);
        step!(H, d, a, b, c, 4, 0x4bdecfa9, 11);
        step!(H, c, d, a, b, 7, 0xf6bb4b60, 16);
        step!(H, b, c, d, a, 10, 0xbebfbc70, 23);
        step!(H, a, b, c, d, 13, 0x289b7ec6, 4);
        step!(H, d, a, b, c, 0, 0xeaa127fa, 11);
        step!(H, c, d, a, b, 3, 0xd4ef3085, 16);
        step!(H, b, c, d, a, 6, 0x04881d05, 23);
        step!(H, a, b, c, d, 9, 0xd9d4d039, 4);
        step!(H, d, a, b, c, 12, 0xe6db99e5, 11);
        step!(H, c, d, a, b, 15, 0x1fa27cf8, 16);
        step!(H, b, c, d, a, 2, 0xc4ac5665, 23);
        // Round 4.
        step!(I, a, b, c, d, 0, 0xf4292244, 6);
        step!(I, d, a, b, c, 7, 0x432aff97, 10);
        step!(I, c, d, a, b, 14, 0xab9423a7, 15);
        step!(I, b, c, d, a, 5, 0xfc93a039, 21);
        step!(I, a, b, c, d, 12, 0x655b59c3, 6);
        step!(I, d, a, b, c, 3, 0x8f0ccc92, 10);
        step!(I, c, d, a, b, 10, 0xffeff47d, 15);
        step!(I, b, c, d, a, 1, 0x85845dd1, 21);
        step!(I, a, b, c, d, 8, 0x6fa87e4f, 6);
        step!(I, d, a, b, c, 15, 0xfe2ce6e0, 10);
        step!(I, c, d, a, b, 6, 0xa3014314, 15);
        step!(I, b, c, d, a, 13, 0x4e0811a1, 21);
        step!(I, a, b, c, d, 4, 0xf7537e82, 6);
        step!(I, d, a, b, c, 11, 0xbd3af235, 10);
        step!(I, c, d, a, b, 2, 0x2ad7d2bb, 15);
        step!(I, b, c, d, a, 9, 0xeb86d391, 21);

        for g in 0..GROUPS {
            a[g] = _mm512_add_epi32(a[g], a0[g]);
            b[g] = _mm512_add_epi32(b[g], b0[g]);
            c[g] = _mm512_add_epi32(c[g], c0[g]);
            d[g] = _mm512_add_epi32(d[g], d0[g]);
        }
    }

    for (word, v) in [a, b, c, d].iter().enumerate() {
        for (g, v) in v.iter().enumerate() {
            // SAFETY: the words of the gathers above, in `states`, which is borrowed mutably.
            unsafe { _mm512_i32scatter_epi32::<4>(base.add(64 * g + word).cast(), offsets, *v) };
        }
    }
}

/// Transposes a 16×16 matrix of 32-bit words: row `j` in, column `j` out. Four rounds of 16
/// shuffles: 32-bit and 64-bit interleaves within 128-bit blocks, which leave a 4×4 matrix of
/// 128-bit blocks to transpose, then two rounds of 128-bit block shuffles that do it.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn transpose(r: [__m512i; 16]) -> [__m512i; 16] {
    // Block `q` of t[2i] holds words 4q, 4q + 1 of rows 2i and 2i + 1, interleaved; of
    // t[2i + 1], words 4q + 2, 4q + 3.
    let t: [__m512i; 16] = from_fn(|j| {
        let (x, y) = (r[j & !1], r[j | 1]);
        if j % 2 == 0 {
            _mm512_unpacklo_epi32(x, y)
        } else {
            _mm512_unpackhi_epi32(x, y)
        }
    });
    // Block `q` of u[4i + m] holds word 4q + m of rows 4i .. 4i + 4.
    let u: [__m512i; 16] = from_fn(|j| {
        let (i, m) = (j / 4, j % 4);
        let (x, y) = (t[4 * i + m / 2], t[4 * i + 2 + m / 2]);
        if m % 2 == 0 {
            _mm512_unpacklo_epi64(x, y)
        } else {
            _mm512_unpackhi_epi64(x, y)
        }
    });
    // What is left, for each `m`: a 4×4 transpose of 128-bit blocks, block `q` of u[4i + m]
    // to block `i` of column 4q + m. `_mm512_shuffle_i32x4::<0x88>(x, y)` takes blocks 0 and 2
    // of `x`, then of `y`; `::<0xdd>`, blocks 1 and 3. Writing (i, q) for block `q` of
    // u[4i + m]: v[m] = (0,0) (0,2) (1,0) (1,2), v[4 + m] = (0,1) (0,3) (1,1) (1,3), and
    // v[8 + m], v[12 + m] the same for rows 8-15 (i = 2, 3).
    let v: [__m512i; 16] = from_fn(|j| {
        let (s, m) = (j / 4, j % 4);
        let (x, y) = (u[8 * (s / 2) + m], u[8 * (s / 2) + 4 + m]);
        if s % 2 == 0 {
            _mm512_shuffle_i32x4::<0x88>(x, y)
        } else {
            _mm512_shuffle_i32x4::<0xdd>(x, y)
        }
    });
    // Column 4q + m: (0,q) (1,q) (2,q) (3,q), from v[m] and v[8 + m] for even `q`, from
    // v[4 + m] and v[12 + m] for odd `q`; the lower blocks of each for q < 2, the upper ones
    // for q >= 2.
    from_fn(|k| {
        let (q, m) = (k / 4, k % 4);
        let (x, y) = (v[4 * (q % 2) + m], v[8 + 4 * (q % 2) + m]);
        if q < 2 {
            _mm512_shuffle_i32x4::<0x88>(x, y)
        } else {
            _mm512_shuffle_i32x4::<0xdd>(x, y)
        }
    })
}

super::simd::bench_entry!(bench_compress_md5_avx512, [u32; 4]);

#[cfg(test)]
mod tests {
    //! The kernel's own parts; the kernel as a whole is tested with every other, from its row
    //! in the kernel table (`kernel_tests.rs`).

    use super::super::kernel_tests::Rng;
    use super::*;

    fn skip() -> bool {
        if !supported() {
            eprintln!("skipped: this CPU lacks AVX-512F");
        }
        !supported()
    }

    #[test]
    fn truth_tables() {
        // The immediates worked out by hand from RFC 1321's definitions.
        assert_eq!([F, G, H, I], [0xca, 0xe4, 0x96, 0x39]);
    }

    /// `vpternlogd` with each immediate against the scalar round function, on random words.
    #[target_feature(enable = "avx512f")]
    fn ternary_logic(rng: &mut Rng) {
        let random = |rng: &mut Rng| -> [u32; 16] { from_fn(|_| rng.next() as u32) };
        let load = |v: &[u32; 16]| {
            // SAFETY: `v` is 64 readable bytes; unaligned load.
            unsafe { _mm512_loadu_si512(v.as_ptr().cast()) }
        };
        let store = |v: __m512i| {
            let mut out = [0u32; 16];
            // SAFETY: `out` is 64 writable bytes; unaligned store.
            unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), v) };
            out
        };
        for _ in 0..64 {
            let (x, y, z) = (random(rng), random(rng), random(rng));
            let (vx, vy, vz) = (load(&x), load(&y), load(&z));
            let scalar =
                |fun: fn(u32, u32, u32) -> u32| -> [u32; 16] { from_fn(|j| fun(x[j], y[j], z[j])) };
            assert_eq!(store(_mm512_ternarylogic_epi32::<F>(vx, vy, vz)), scalar(f));
            assert_eq!(store(_mm512_ternarylogic_epi32::<G>(vx, vy, vz)), scalar(g));
            assert_eq!(store(_mm512_ternarylogic_epi32::<H>(vx, vy, vz)), scalar(h));
            assert_eq!(store(_mm512_ternarylogic_epi32::<I>(vx, vy, vz)), scalar(i));
        }
    }

    #[test]
    fn ternary_logic_is_the_round_functions() {
        if skip() {
            return;
        }
        // SAFETY: the CPU feature is checked above.
        unsafe { ternary_logic(&mut Rng(0x7465_726e)) };
    }

    #[test]
    fn transpose_is_a_transpose() {
        if skip() {
            return;
        }
        #[target_feature(enable = "avx512f")]
        fn check() {
            let rows: [[u32; 16]; 16] = from_fn(|r| from_fn(|c| (r * 16 + c) as u32));
            // SAFETY: each row is 64 readable bytes; unaligned load.
            let vectors = from_fn(|r| unsafe { _mm512_loadu_si512(rows[r].as_ptr().cast()) });
            for (c, column) in transpose(vectors).into_iter().enumerate() {
                let mut out = [0u32; 16];
                // SAFETY: `out` is 64 writable bytes; unaligned store.
                unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), column) };
                assert_eq!(out, from_fn(|r| rows[r][c]), "column {c}");
            }
        }
        // SAFETY: the CPU feature is checked above.
        unsafe { check() };
    }
}
