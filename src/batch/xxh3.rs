//! XXH3's long-input hash (more than 240 bytes, 64 and 128 bits, default secret and seed)
//! of `prefix ‖ m` for many messages `m`, read where they lie.
//!
//! The crate's one-shot functions need the message in one slice, so a leaf behind its prefix
//! byte was copied first: at 1 KiB leaves that `memmove` was a sixth of the CPU time, and the
//! one-shot call, built for SSE2 only, another third (half the speed per byte of the crate's
//! own streaming state). XXH3 reads its input as 64-byte stripes, each on its own: only the
//! first stripe holds the prefix (copied, 64 bytes), every other one is read in place, at an
//! offset of the prefix's length in the message. The accumulators stay in AVX-512 or AVX2
//! registers for the whole message where the CPU has them (within [`Isa::cap`]).
//!
//! The algorithm is XXH3's specification (`xxhash.h`, `XXH3_hashLong_*`); the tests compare
//! every instruction set with the crate at the block and stripe boundaries.

use crate::algorithm::{Algorithm, Digest};
use crate::lanes::Isa;
#[cfg(target_arch = "x86_64")]
use crate::lanes::Vector;

/// Bytes of a stripe, the input of one accumulation.
const STRIPE: usize = 64;
/// XXH3's default secret (`XXH3_kSecret`).
const SECRET: [u8; 192] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
];
/// Stripes between two scrambles: the secret advances 8 bytes a stripe.
const STRIPES_PER_BLOCK: usize = (SECRET.len() - STRIPE) / 8;
const BLOCK: usize = STRIPE * STRIPES_PER_BLOCK;
/// Where in the secret the scramble's key, the last stripe's key and the merges' keys begin.
const SCRAMBLE_KEY: usize = SECRET.len() - STRIPE;
const LAST_STRIPE_KEY: usize = SECRET.len() - STRIPE - 7;
const MERGE_LOW_KEY: usize = 11;
const MERGE_HIGH_KEY: usize = SECRET.len() - STRIPE - 11;

/// Messages (prefix included) longer than this take the long hash; shorter ones XXH3 hashes
/// differently, and the crate's one-shot functions do well enough on a copy.
pub(super) const MIDSIZE_MAX: usize = 240;

const PRIME32_1: u64 = 0x9E37_79B1;
const PRIME32_2: u64 = 0x85EB_CA77;
const PRIME32_3: u64 = 0xC2B2_AE3D;
const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const PRIME64_5: u64 = 0x27D4_EB2F_1656_67C5;
const INITIAL: [u64; 8] = [
    PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1,
];

/// Appends to `out` the XXH3 (`alg` is XXH3 or XXH128) of `prefix ‖ m` for every `m` of
/// `len` bytes in `data`, on the widest instructions this CPU has within `cap`.
///
/// # Panics
/// Unless `prefix` is shorter than a stripe and `prefix ‖ m` longer than [`MIDSIZE_MAX`].
pub(super) fn hash_each(
    cap: Isa,
    alg: Algorithm,
    prefix: &[u8],
    data: &[u8],
    len: usize,
    out: &mut Vec<Digest>,
) {
    assert!(prefix.len() < STRIPE && prefix.len() + len > MIDSIZE_MAX);
    #[cfg(target_arch = "x86_64")]
    {
        if cap.vector >= Vector::Avx512 && std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F, all the function is compiled for.
            return unsafe { each_avx512(alg, prefix, data, len, out) };
        }
        if cap.vector >= Vector::Avx2 && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            return unsafe { each_avx2(alg, prefix, data, len, out) };
        }
    }
    let _ = cap;
    each::<Scalar>(alg, prefix, data, len, out);
}

/// The accumulators of one message in registers of some instruction set.
trait Accumulators: Copy {
    /// [`INITIAL`].
    fn initial() -> Self;
    /// Absorbs one stripe with the key at `secret[at..]`.
    fn accumulate(&mut self, stripe: &[u8; STRIPE], at: usize);
    /// Scrambles with the key at the end of the secret.
    fn scramble(&mut self);
    fn words(self) -> [u64; 8];
}

/// The 64-bit little-endian word of `bytes` at `at`.
#[inline(always)]
fn word(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// The accumulators in general-purpose registers, for any CPU.
#[derive(Clone, Copy)]
struct Scalar([u64; 8]);

impl Accumulators for Scalar {
    #[inline(always)]
    fn initial() -> Self {
        Scalar(INITIAL)
    }

    #[inline(always)]
    fn accumulate(&mut self, stripe: &[u8; STRIPE], at: usize) {
        for i in 0..8 {
            let data = word(stripe, 8 * i);
            let key = data ^ word(&SECRET, at + 8 * i);
            self.0[i ^ 1] = self.0[i ^ 1].wrapping_add(data);
            self.0[i] = self.0[i].wrapping_add((key & 0xFFFF_FFFF) * (key >> 32));
        }
    }

    #[inline(always)]
    fn scramble(&mut self) {
        for i in 0..8 {
            let acc = self.0[i] ^ (self.0[i] >> 47) ^ word(&SECRET, SCRAMBLE_KEY + 8 * i);
            self.0[i] = acc.wrapping_mul(PRIME32_1);
        }
    }

    #[inline(always)]
    fn words(self) -> [u64; 8] {
        self.0
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{Accumulators, INITIAL, PRIME32_1, SCRAMBLE_KEY, SECRET, STRIPE};

    /// The accumulators in two AVX2 registers: only for functions compiled for AVX2.
    #[derive(Clone, Copy)]
    pub(super) struct Avx2([__m256i; 2]);

    impl Accumulators for Avx2 {
        #[inline(always)]
        fn initial() -> Self {
            // SAFETY: an unaligned load of 64 bytes in two halves; AVX2 as the type says.
            unsafe {
                let p = INITIAL.as_ptr().cast::<__m256i>();
                Avx2([_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))])
            }
        }

        #[inline(always)]
        fn accumulate(&mut self, stripe: &[u8; STRIPE], at: usize) {
            let key = &SECRET[at..at + STRIPE];
            for (i, acc) in self.0.iter_mut().enumerate() {
                // SAFETY: unaligned loads of 32 bytes within the 64 of `stripe` and `key`.
                unsafe {
                    let data = _mm256_loadu_si256(stripe.as_ptr().add(32 * i).cast());
                    let k = _mm256_loadu_si256(key.as_ptr().add(32 * i).cast());
                    let data_key = _mm256_xor_si256(data, k);
                    let product = _mm256_mul_epu32(data_key, _mm256_srli_epi64::<32>(data_key));
                    let swapped = _mm256_shuffle_epi32::<0b01_00_11_10>(data);
                    *acc = _mm256_add_epi64(_mm256_add_epi64(*acc, swapped), product);
                }
            }
        }

        #[inline(always)]
        fn scramble(&mut self) {
            let key = &SECRET[SCRAMBLE_KEY..];
            for (i, acc) in self.0.iter_mut().enumerate() {
                // SAFETY: as above.
                unsafe {
                    let prime = _mm256_set1_epi64x(PRIME32_1 as i64);
                    let k = _mm256_loadu_si256(key.as_ptr().add(32 * i).cast());
                    let a = _mm256_xor_si256(*acc, _mm256_srli_epi64::<47>(*acc));
                    let a = _mm256_xor_si256(a, k);
                    let low = _mm256_mul_epu32(a, prime);
                    let high = _mm256_mul_epu32(_mm256_srli_epi64::<32>(a), prime);
                    *acc = _mm256_add_epi64(low, _mm256_slli_epi64::<32>(high));
                }
            }
        }

        #[inline(always)]
        fn words(self) -> [u64; 8] {
            let mut words = [0; 8];
            // SAFETY: unaligned stores of 32 bytes into the 64 of `words`.
            unsafe {
                let p = words.as_mut_ptr().cast::<__m256i>();
                _mm256_storeu_si256(p, self.0[0]);
                _mm256_storeu_si256(p.add(1), self.0[1]);
            }
            words
        }
    }

    /// The accumulators in one AVX-512 register: only for functions compiled for AVX-512F.
    #[derive(Clone, Copy)]
    pub(super) struct Avx512(__m512i);

    impl Accumulators for Avx512 {
        #[inline(always)]
        fn initial() -> Self {
            // SAFETY: an unaligned load of 64 bytes; AVX-512F as the type says.
            Avx512(unsafe { _mm512_loadu_si512(INITIAL.as_ptr().cast()) })
        }

        #[inline(always)]
        fn accumulate(&mut self, stripe: &[u8; STRIPE], at: usize) {
            let key = &SECRET[at..at + STRIPE];
            // SAFETY: unaligned loads of the 64 bytes of `stripe` and `key`.
            unsafe {
                let data = _mm512_loadu_si512(stripe.as_ptr().cast());
                let k = _mm512_loadu_si512(key.as_ptr().cast());
                let data_key = _mm512_xor_si512(data, k);
                let product = _mm512_mul_epu32(data_key, _mm512_srli_epi64::<32>(data_key));
                let swapped = _mm512_shuffle_epi32::<_MM_PERM_BADC>(data);
                self.0 = _mm512_add_epi64(_mm512_add_epi64(self.0, swapped), product);
            }
        }

        #[inline(always)]
        fn scramble(&mut self) {
            // SAFETY: as above.
            unsafe {
                let prime = _mm512_set1_epi64(PRIME32_1 as i64);
                let k = _mm512_loadu_si512(SECRET[SCRAMBLE_KEY..].as_ptr().cast());
                let a = _mm512_xor_si512(self.0, _mm512_srli_epi64::<47>(self.0));
                let a = _mm512_xor_si512(a, k);
                let low = _mm512_mul_epu32(a, prime);
                let high = _mm512_mul_epu32(_mm512_srli_epi64::<32>(a), prime);
                self.0 = _mm512_add_epi64(low, _mm512_slli_epi64::<32>(high));
            }
        }

        #[inline(always)]
        fn words(self) -> [u64; 8] {
            let mut words = [0; 8];
            // SAFETY: an unaligned store of the 64 bytes of `words`.
            unsafe { _mm512_storeu_si512(words.as_mut_ptr().cast(), self.0) };
            words
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn each_avx2(alg: Algorithm, prefix: &[u8], data: &[u8], len: usize, out: &mut Vec<Digest>) {
    each::<x86::Avx2>(alg, prefix, data, len, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn each_avx512(alg: Algorithm, prefix: &[u8], data: &[u8], len: usize, out: &mut Vec<Digest>) {
    each::<x86::Avx512>(alg, prefix, data, len, out);
}

/// [`hash_each`] with the accumulators `A`, inlined into a function compiled for their
/// instruction set.
#[inline(always)]
fn each<A: Accumulators>(
    alg: Algorithm,
    prefix: &[u8],
    data: &[u8],
    len: usize,
    out: &mut Vec<Digest>,
) {
    let p = prefix.len();
    let n = p + len;
    let mut first = [0u8; STRIPE];
    first[..p].copy_from_slice(prefix);
    out.reserve(data.len() / len);
    for m in data.chunks_exact(len) {
        first[p..].copy_from_slice(&m[..STRIPE - p]);
        // Stripe `s` of the message (prefix included) starts at byte `s * STRIPE`, which is
        // byte `s * STRIPE - p` of `m` for every stripe but the first.
        let stripe = |s: usize| -> &[u8; STRIPE] {
            let at = s * STRIPE - p;
            m[at..at + STRIPE].try_into().expect("a stripe")
        };
        let mut acc = A::initial();
        acc.accumulate(&first, 0);
        // The first stripe is done: `from` is where the next block (or the last partial
        // one) starts within its block.
        let mut from = 1;
        let blocks = (n - 1) / BLOCK;
        for b in 0..blocks {
            for s in from..STRIPES_PER_BLOCK {
                acc.accumulate(stripe(b * STRIPES_PER_BLOCK + s), 8 * s);
            }
            acc.scramble();
            from = 0;
        }
        let stripes = (n - 1 - blocks * BLOCK) / STRIPE;
        for s in from..stripes {
            acc.accumulate(stripe(blocks * STRIPES_PER_BLOCK + s), 8 * s);
        }
        let last: &[u8; STRIPE] = m[len - STRIPE..].try_into().expect("a stripe");
        acc.accumulate(last, LAST_STRIPE_KEY);
        let words = acc.words();
        let low = merge(&words, MERGE_LOW_KEY, (n as u64).wrapping_mul(PRIME64_1));
        out.push(match alg {
            Algorithm::Xxh3 => Digest::from_slice(&low.to_be_bytes()),
            _ => {
                let high = merge(&words, MERGE_HIGH_KEY, !(n as u64).wrapping_mul(PRIME64_2));
                let both = u128::from(low) | (u128::from(high) << 64);
                Digest::from_slice(&both.to_be_bytes())
            }
        });
    }
}

/// XXH3's `mergeAccs`: the accumulators folded pairwise with the key at `secret[at..]`.
#[inline(always)]
fn merge(acc: &[u64; 8], at: usize, start: u64) -> u64 {
    let mut result = start;
    for i in 0..4 {
        let l = acc[2 * i] ^ word(&SECRET, at + 16 * i);
        let r = acc[2 * i + 1] ^ word(&SECRET, at + 16 * i + 8);
        let product = u128::from(l) * u128::from(r);
        result = result.wrapping_add((product as u64) ^ ((product >> 64) as u64));
    }
    result ^= result >> 37;
    result = result.wrapping_mul(0x1656_6791_9E37_79F9);
    result ^ (result >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lanes::Vector;

    /// Every instruction set gives the crate's XXH3 and XXH128 of `prefix ‖ m`, with and
    /// without a prefix, around the stripe and block (1 KiB) boundaries and far past them.
    #[test]
    fn digests_equal_the_crates_on_every_instruction_set() {
        let caps = [Vector::None, Vector::Avx2, Vector::Avx512].map(|vector| Isa {
            vector,
            sha_ni: false,
        });
        let data: Vec<u8> = (0..3 * 9000u32).map(|i| (i * 131 % 251) as u8).collect();
        for prefix in [&[][..], &[0], &[1; 63]] {
            let lens = [
                241, 255, 256, 257, 1023, 1024, 1025, 1087, 1088, 2048, 4096, 8999,
            ];
            for len in lens
                .into_iter()
                .filter(|len| len + prefix.len() > MIDSIZE_MAX)
            {
                let data = &data[..3 * len];
                for alg in [Algorithm::Xxh3, Algorithm::Xxh128] {
                    let want: Vec<Digest> = data
                        .chunks_exact(len)
                        .map(|m| alg.hash_parts(&[prefix, m]))
                        .collect();
                    for cap in caps {
                        let mut got = vec![alg.hash(b"kept")];
                        hash_each(cap, alg, prefix, data, len, &mut got);
                        assert_eq!(got[0], alg.hash(b"kept"), "appends");
                        assert_eq!(got[1..], want, "{alg} {cap:?} {} + {len}", prefix.len());
                    }
                }
            }
        }
    }
}
