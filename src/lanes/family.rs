//! The Merkle–Damgård hash functions as the job manager sees them: a block size, how the
//! padding ends, a chaining state of a few words, its initial values, and how the state becomes
//! the digest. MD5, SHA-1, SHA-256 and SHA-512 are the four compression functions; SHA-224 and
//! SHA-384 run those of SHA-256 and SHA-512 from other initial values and cut the output short
//! (FIPS 180-4, 5.3 and 6).

use crate::algorithm::{Algorithm, Digest};

/// `$body` with the type `$f` standing for the compression function of the algorithm `$alg`.
///
/// # Panics
/// If `$alg` is not a Merkle–Damgård algorithm (BLAKE3, XXH3 and the CRCs have no kernel).
macro_rules! with_family {
    ($alg:expr, $f:ident => $body:expr) => {
        match $alg {
            $crate::algorithm::Algorithm::Md5 => {
                type $f = $crate::lanes::family::Md5;
                $body
            }
            $crate::algorithm::Algorithm::Sha1 => {
                type $f = $crate::lanes::family::Sha1;
                $body
            }
            $crate::algorithm::Algorithm::Sha224 | $crate::algorithm::Algorithm::Sha256 => {
                type $f = $crate::lanes::family::Sha256;
                $body
            }
            $crate::algorithm::Algorithm::Sha384 | $crate::algorithm::Algorithm::Sha512 => {
                type $f = $crate::lanes::family::Sha512;
                $body
            }
            alg => unreachable!("{alg} has no kernel"),
        }
    };
}
pub(super) use with_family;

/// One compression function and the algorithms built on it.
pub(super) trait Family: 'static {
    /// A word of the state: `u32`, or `u64` for SHA-512.
    type Word: Copy + Into<u64>;
    /// One message's chaining state, words in the standard order (A B C D for MD5, H0 H1 …
    /// for SHA), as RustCrypto's block functions and the SIMD kernels take it.
    type State: Copy + AsRef<[Self::Word]>;
    /// Bytes per block: 64, or 128 for SHA-512.
    const BLOCK: usize;
    /// Bytes of the message length (in bits) that end the padding: 8, or 16 for SHA-512.
    const LENGTH_BYTES: usize;
    /// Whether the words and the length are read and written big-endian (SHA) rather than
    /// little-endian (MD5).
    const BIG_ENDIAN: bool;

    /// The initial state of `alg`, one of the algorithms of this family.
    fn initial(alg: Algorithm) -> Self::State;

    /// RustCrypto's compression function over `blocks`, a whole number of blocks.
    fn compress_portable(state: &mut Self::State, blocks: &[u8]);

    /// The states of a lane set in the form the SIMD kernel dispatch matches on.
    fn view(states: &mut [Self::State]) -> StatesMut<'_>;

    /// The digest of `alg` once every block, padding included, went through `state`: the
    /// words in the family's byte order, cut to the digest's length. Inlined into the loop
    /// that collects a run's digests: called from two places, it was not, and its call per
    /// 64-byte leaf cost MD5 2 % of its time.
    #[inline(always)]
    fn digest(alg: Algorithm, state: &Self::State) -> Digest {
        let word = std::mem::size_of::<Self::Word>();
        let mut bytes = [0; Digest::MAX_LEN];
        for (out, &w) in bytes.chunks_exact_mut(word).zip(state.as_ref()) {
            put_uint(u128::from(w.into()), Self::BIG_ENDIAN, out);
        }
        let len = alg.digest_len();
        let state_len = std::mem::size_of_val(state.as_ref());
        if len < state_len {
            // SHA-224 and SHA-384 leave out words of the state.
            bytes[len..state_len].fill(0);
        }
        Digest::from_zero_padded(bytes, len)
    }

    /// The blocks that the last `tail` bytes of a message (less than a block) take once
    /// padded: one, or two when the length does not fit after them.
    fn tail_blocks(tail: usize) -> usize {
        if tail < Self::BLOCK - Self::LENGTH_BYTES {
            1
        } else {
            2
        }
    }

    /// Writes the padding of a message of `len` bytes whose last `tail` bytes (less than a
    /// block) are at the start of `buf`: 0x80, zeros up to the length field, the length in
    /// bits (RFC 1321, 3.1–3.2; FIPS 180-4, 5.1). Returns the bytes of `buf` to hash: one
    /// block, or two when the length does not fit after the tail.
    fn pad(buf: &mut [u8], tail: usize, len: u64) -> usize {
        let end = Self::tail_blocks(tail) * Self::BLOCK;
        let length_at = end - Self::LENGTH_BYTES;
        buf[tail] = 0x80;
        buf[tail + 1..length_at].fill(0);
        put_uint(
            u128::from(len) * 8,
            Self::BIG_ENDIAN,
            &mut buf[length_at..end],
        );
        end
    }
}

/// Writes the low `out.len()` bytes of `value` in the given byte order.
fn put_uint(value: u128, big_endian: bool, out: &mut [u8]) {
    let n = out.len();
    if big_endian {
        out.copy_from_slice(&value.to_be_bytes()[16 - n..]);
    } else {
        out.copy_from_slice(&value.to_le_bytes()[..n]);
    }
}

/// The per-lane states of a lane set, by compression function: what a SIMD kernel's arm in
/// the dispatch matches on to get the state type it takes.
pub(super) enum StatesMut<'a> {
    Md5(&'a mut [[u32; 4]]),
    Sha1(&'a mut [[u32; 5]]),
    Sha256(&'a mut [[u32; 8]]),
    Sha512(&'a mut [[u64; 8]]),
}

/// `data`, a whole number of `N`-byte blocks, as the slice of blocks RustCrypto's block
/// functions take: one call for all of them (with SHA-NI, a call per block made the portable
/// SHA-256 kernel clearly slower than one stream).
///
/// # Panics
/// If `data` is not a whole number of blocks.
fn blocks<const N: usize>(data: &[u8]) -> &[[u8; N]] {
    assert!(data.len().is_multiple_of(N), "a whole number of blocks");
    // SAFETY: `[u8; N]` has the size of `N` bytes and their alignment (1), so `data`, which
    // is a multiple of `N` bytes long, is exactly `data.len() / N` such arrays, borrowed as
    // long as `data`. (`<[u8]>::as_chunks` says this safely from Rust 1.88 on.)
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast(), data.len() / N) }
}

/// MD5 (RFC 1321).
pub(super) struct Md5;

impl Family for Md5 {
    type Word = u32;
    type State = [u32; 4];
    const BLOCK: usize = 64;
    const LENGTH_BYTES: usize = 8;
    const BIG_ENDIAN: bool = false;

    fn initial(alg: Algorithm) -> [u32; 4] {
        debug_assert_eq!(alg, Algorithm::Md5);
        // RFC 1321, 3.3.
        [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476]
    }

    fn compress_portable(state: &mut [u32; 4], data: &[u8]) {
        md5::block_api::compress(state, blocks(data));
    }

    fn view(states: &mut [[u32; 4]]) -> StatesMut<'_> {
        StatesMut::Md5(states)
    }
}

/// SHA-1 (FIPS 180-4).
pub(super) struct Sha1;

impl Family for Sha1 {
    type Word = u32;
    type State = [u32; 5];
    const BLOCK: usize = 64;
    const LENGTH_BYTES: usize = 8;
    const BIG_ENDIAN: bool = true;

    fn initial(alg: Algorithm) -> [u32; 5] {
        debug_assert_eq!(alg, Algorithm::Sha1);
        // FIPS 180-4, 5.3.1.
        [
            0x6745_2301,
            0xefcd_ab89,
            0x98ba_dcfe,
            0x1032_5476,
            0xc3d2_e1f0,
        ]
    }

    fn compress_portable(state: &mut [u32; 5], data: &[u8]) {
        sha1::block_api::compress(state, blocks(data));
    }

    fn view(states: &mut [[u32; 5]]) -> StatesMut<'_> {
        StatesMut::Sha1(states)
    }
}

/// SHA-256, and SHA-224 (FIPS 180-4).
pub(super) struct Sha256;

impl Family for Sha256 {
    type Word = u32;
    type State = [u32; 8];
    const BLOCK: usize = 64;
    const LENGTH_BYTES: usize = 8;
    const BIG_ENDIAN: bool = true;

    fn initial(alg: Algorithm) -> [u32; 8] {
        match alg {
            // FIPS 180-4, 5.3.2.
            Algorithm::Sha224 => [
                0xc105_9ed8,
                0x367c_d507,
                0x3070_dd17,
                0xf70e_5939,
                0xffc0_0b31,
                0x6858_1511,
                0x64f9_8fa7,
                0xbefa_4fa4,
            ],
            // FIPS 180-4, 5.3.3.
            Algorithm::Sha256 => [
                0x6a09_e667,
                0xbb67_ae85,
                0x3c6e_f372,
                0xa54f_f53a,
                0x510e_527f,
                0x9b05_688c,
                0x1f83_d9ab,
                0x5be0_cd19,
            ],
            _ => unreachable!("{alg} is not SHA-224 or SHA-256"),
        }
    }

    fn compress_portable(state: &mut [u32; 8], data: &[u8]) {
        sha2::block_api::compress256(state, blocks(data));
    }

    fn view(states: &mut [[u32; 8]]) -> StatesMut<'_> {
        StatesMut::Sha256(states)
    }
}

/// SHA-512, and SHA-384 (FIPS 180-4).
pub(super) struct Sha512;

impl Family for Sha512 {
    type Word = u64;
    type State = [u64; 8];
    const BLOCK: usize = 128;
    const LENGTH_BYTES: usize = 16;
    const BIG_ENDIAN: bool = true;

    fn initial(alg: Algorithm) -> [u64; 8] {
        match alg {
            // FIPS 180-4, 5.3.4.
            Algorithm::Sha384 => [
                0xcbbb_9d5d_c105_9ed8,
                0x629a_292a_367c_d507,
                0x9159_015a_3070_dd17,
                0x152f_ecd8_f70e_5939,
                0x6733_2667_ffc0_0b31,
                0x8eb4_4a87_6858_1511,
                0xdb0c_2e0d_64f9_8fa7,
                0x47b5_481d_befa_4fa4,
            ],
            // FIPS 180-4, 5.3.5.
            Algorithm::Sha512 => [
                0x6a09_e667_f3bc_c908,
                0xbb67_ae85_84ca_a73b,
                0x3c6e_f372_fe94_f82b,
                0xa54f_f53a_5f1d_36f1,
                0x510e_527f_ade6_82d1,
                0x9b05_688c_2b3e_6c1f,
                0x1f83_d9ab_fb41_bd6b,
                0x5be0_cd19_137e_2179,
            ],
            _ => unreachable!("{alg} is not SHA-384 or SHA-512"),
        }
    }

    fn compress_portable(state: &mut [u64; 8], data: &[u8]) {
        sha2::block_api::compress512(state, blocks(data));
    }

    fn view(states: &mut [[u64; 8]]) -> StatesMut<'_> {
        StatesMut::Sha512(states)
    }
}
