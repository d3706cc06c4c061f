//! Hash functions: one enum names them, one streaming [`Hasher`] runs them.
//!
//! Every layout is generic over the algorithm, so this module is the only place that knows which
//! crate implements which function. Digests are fixed-size values ([`Digest`]) rather than
//! `Vec<u8>` because tree layouts create millions of them.
//!
//! Backends, chosen by measurement on one core (1 MiB updates, see `docs/performance-choices.md`):
//! the RustCrypto crates for sha1/sha224/sha256 (they use SHA-NI where the CPU has it and
//! match OpenSSL), the system libcrypto for sha384/sha512 (about 1.9× RustCrypto) and md5
//! (about 1.25×), BLAKE3's and xxHash's own crates. OpenSSL's generic EVP interface costs an
//! allocation per message, so MD5 goes through it only for long messages
//! ([`Algorithm::bulk_hasher`]); tree nodes and small leaves stay on the allocation-free path.
//! Where libcrypto refuses MD5 (FIPS mode), long messages take RustCrypto's MD5 as well.

use std::fmt;
use std::str::FromStr;

use blake3::hazmat::{HasherExt as _, Mode};
use sha2::Digest as _;

/// A hash function mtsum can compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    Md5,
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
    Blake3,
    /// XXH3 with 64-bit output, printed big-endian as `xxhsum -H3` does.
    Xxh3,
    /// XXH3 with 128-bit output, printed big-endian as `xxhsum -H128` does.
    Xxh128,
    /// CRC-32/ISO-HDLC, zlib's and gzip's CRC-32 (check value `cbf43926`).
    Crc32,
    /// CRC-32C (Castagnoli), as iSCSI, ext4, GCS and S3 use it (check value `e3069283`).
    Crc32c,
    /// CRC-64/NVME, S3's default checksum since December 2024 (check value
    /// `ae8b14860a799888`).
    Crc64Nvme,
}

impl Algorithm {
    /// Every algorithm, in the order help texts list them.
    pub const ALL: [Algorithm; 12] = [
        Algorithm::Md5,
        Algorithm::Sha1,
        Algorithm::Sha224,
        Algorithm::Sha256,
        Algorithm::Sha384,
        Algorithm::Sha512,
        Algorithm::Blake3,
        Algorithm::Xxh3,
        Algorithm::Xxh128,
        Algorithm::Crc32,
        Algorithm::Crc32c,
        Algorithm::Crc64Nvme,
    ];

    /// The lowercase name used on the command line (`-a`) and in OpenSSL.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Md5 => "md5",
            Algorithm::Sha1 => "sha1",
            Algorithm::Sha224 => "sha224",
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha384 => "sha384",
            Algorithm::Sha512 => "sha512",
            Algorithm::Blake3 => "blake3",
            Algorithm::Xxh3 => "xxh3",
            Algorithm::Xxh128 => "xxh128",
            Algorithm::Crc32 => "crc32",
            Algorithm::Crc32c => "crc32c",
            Algorithm::Crc64Nvme => "crc64nvme",
        }
    }

    /// Length of the digest in bytes.
    pub fn digest_len(self) -> usize {
        match self {
            Algorithm::Md5 => 16,
            Algorithm::Sha1 => 20,
            Algorithm::Sha224 => 28,
            Algorithm::Sha256 => 32,
            Algorithm::Sha384 => 48,
            Algorithm::Sha512 => 64,
            Algorithm::Blake3 => 32,
            Algorithm::Xxh3 => 8,
            Algorithm::Xxh128 => 16,
            Algorithm::Crc32 | Algorithm::Crc32c => 4,
            Algorithm::Crc64Nvme => 8,
        }
    }

    /// A fresh streaming hasher, cheap to create: for short messages such as tree nodes.
    pub fn hasher(self) -> Hasher {
        Hasher(match self {
            Algorithm::Md5 => State::Md5(md5::Md5::new()),
            Algorithm::Sha1 => State::Sha1(sha1::Sha1::new()),
            Algorithm::Sha224 => State::Sha224(sha2::Sha224::new()),
            Algorithm::Sha256 => State::Sha256(sha2::Sha256::new()),
            #[cfg(feature = "openssl")]
            Algorithm::Sha384 => State::OsslSha384(openssl::sha::Sha384::new()),
            #[cfg(feature = "openssl")]
            Algorithm::Sha512 => State::OsslSha512(openssl::sha::Sha512::new()),
            #[cfg(not(feature = "openssl"))]
            Algorithm::Sha384 => State::Sha384(sha2::Sha384::new()),
            #[cfg(not(feature = "openssl"))]
            Algorithm::Sha512 => State::Sha512(sha2::Sha512::new()),
            Algorithm::Blake3 => State::Blake3(Box::default()),
            Algorithm::Xxh3 => State::Xxh3(Box::default()),
            Algorithm::Xxh128 => State::Xxh128(Box::default()),
            Algorithm::Crc32 | Algorithm::Crc32c | Algorithm::Crc64Nvme => {
                State::Crc(self, Box::new(crc_fast::Digest::new(crc_parameters(self))))
            }
        })
    }

    /// A fresh streaming hasher for long messages (plain digests, large leaves): the fastest
    /// backend even where creating it costs more.
    pub fn bulk_hasher(self) -> Hasher {
        match self {
            #[cfg(feature = "openssl")]
            Algorithm::Md5 => md5_or_portable(openssl::hash::Hasher::new(
                openssl::hash::MessageDigest::md5(),
            )),
            _ => self.hasher(),
        }
    }

    /// The digest of `parts` concatenated: the building block of every tree node.
    pub fn hash_parts(self, parts: &[&[u8]]) -> Digest {
        let mut hasher = self.hasher();
        for part in parts {
            hasher.update(part);
        }
        hasher.finalize()
    }

    /// The digest of one byte string.
    pub fn hash(self, data: &[u8]) -> Digest {
        self.hash_parts(&[data])
    }

    /// Whether the digest of a long message is itself the root of a Merkle tree whose
    /// subtrees can be hashed apart and joined ([`Hasher::subtree`], [`join_subtrees`]).
    /// BLAKE3's is (a tree of 1 KiB chunks): its plain digest can use every worker, as
    /// `b3sum` does, and still be exactly `b3sum`'s.
    pub fn is_tree(self) -> bool {
        self == Algorithm::Blake3
    }

    /// Whether the algorithm is a CRC: linear, so that the CRC of a long message follows from
    /// the CRCs of its pieces and their lengths ([`combine_crcs`]), which lets its plain digest
    /// use every worker; and no hash to build a tree of.
    pub fn is_crc(self) -> bool {
        matches!(
            self,
            Algorithm::Crc32 | Algorithm::Crc32c | Algorithm::Crc64Nvme
        )
    }
}

/// The `crc-fast` parameters of a CRC algorithm ([`Algorithm::is_crc`]). crc-fast folds with
/// carry-less multiplication (PCLMULQDQ, VPCLMULQDQ on AVX-512 CPUs; PMULL on ARM) for every
/// CRC width, and combines CRCs: measured against the single-CRC crates in
/// `docs/performance.md`.
fn crc_parameters(alg: Algorithm) -> crc_fast::CrcAlgorithm {
    match alg {
        Algorithm::Crc32 => crc_fast::CrcAlgorithm::Crc32IsoHdlc,
        Algorithm::Crc32c => crc_fast::CrcAlgorithm::Crc32Iscsi,
        Algorithm::Crc64Nvme => crc_fast::CrcAlgorithm::Crc64Nvme,
        _ => unreachable!("{alg} is not a CRC"),
    }
}

/// The CRC of a message `left ‖ right` from the CRCs of its two pieces and the length of
/// the second (multiplication by `x^(8·right_len)` in GF(2), as zlib's `crc32_combine`).
///
/// # Panics
/// If `alg` is not a CRC.
pub fn combine_crcs(alg: Algorithm, left: &Digest, right: &Digest, right_len: u64) -> Digest {
    assert!(alg.is_crc(), "{alg} is not a CRC");
    let value = |d: &Digest| {
        let mut be = [0u8; 8];
        be[8 - d.as_bytes().len()..].copy_from_slice(d.as_bytes());
        u64::from_be_bytes(be)
    };
    let crc = crc_fast::checksum_combine(crc_parameters(alg), value(left), value(right), right_len);
    crc_digest(alg, crc)
}

/// A CRC value as its digest: the big-endian bytes of its width.
fn crc_digest(alg: Algorithm, crc: u64) -> Digest {
    let be = crc.to_be_bytes();
    Digest::from_slice(&be[8 - alg.digest_len()..])
}

/// The MD5 hasher of libcrypto's EVP interface if libcrypto gave one, else RustCrypto's: a
/// libcrypto in FIPS mode refuses MD5, and `-a md5` must then work all the same (at
/// RustCrypto's speed), not panic.
#[cfg(feature = "openssl")]
fn md5_or_portable(evp: Result<openssl::hash::Hasher, openssl::error::ErrorStack>) -> Hasher {
    match evp {
        Ok(h) => Hasher(State::EvpMd5(h)),
        Err(_) => Algorithm::Md5.hasher(),
    }
}

/// The parent of two subtrees of a tree algorithm ([`Algorithm::is_tree`]): the root digest
/// with `is_root`, else the chaining value to join further. The left subtree must cover the
/// largest power of two of 1 KiB chunks strictly less than both together (BLAKE3's shape,
/// which is RFC 6962's over chunks).
///
/// # Panics
/// If `alg` is not a tree algorithm.
pub fn join_subtrees(alg: Algorithm, left: &Digest, right: &Digest, is_root: bool) -> Digest {
    assert!(alg.is_tree(), "{alg} is not a tree algorithm");
    let cv =
        |d: &Digest| -> [u8; 32] { d.as_bytes().try_into().expect("a 32-byte chaining value") };
    let (l, r) = (cv(left), cv(right));
    if is_root {
        Digest::from_slice(blake3::hazmat::merge_subtrees_root(&l, &r, Mode::Hash).as_bytes())
    } else {
        Digest::from_slice(&blake3::hazmat::merge_subtrees_non_root(&l, &r, Mode::Hash))
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing an unknown algorithm name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown algorithm '{0}' (known: md5, sha1, sha224, sha256, sha384, sha512, blake3, xxh3, xxh128, crc32, crc32c, crc64nvme)"
)]
pub struct UnknownAlgorithm(pub String);

impl FromStr for Algorithm {
    type Err = UnknownAlgorithm;

    /// Accepts the names of [`Algorithm::name`] in any case, and the dashed spellings
    /// (`SHA-256`) that OpenSSL and BSD tags also use.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Compared a byte at a time rather than through a lowered copy: a manifest or a sum
        // file names an algorithm on each of its lines.
        let wanted = s
            .bytes()
            .filter(|&b| b != b'-')
            .map(|b| b.to_ascii_lowercase());
        Algorithm::ALL
            .into_iter()
            .find(|a| wanted.clone().eq(a.name().bytes()))
            .ok_or_else(|| UnknownAlgorithm(s.to_string()))
    }
}

/// A streaming hash computation: feed bytes with [`update`](Hasher::update), then
/// [`finalize`](Hasher::finalize).
#[derive(Clone)]
pub struct Hasher(State);

// The large states are boxed so that a `Hasher` stays small enough to move around cheaply.
#[derive(Clone)]
enum State {
    Md5(md5::Md5),
    Sha1(sha1::Sha1),
    Sha224(sha2::Sha224),
    Sha256(sha2::Sha256),
    #[cfg(not(feature = "openssl"))]
    Sha384(sha2::Sha384),
    #[cfg(not(feature = "openssl"))]
    Sha512(sha2::Sha512),
    #[cfg(feature = "openssl")]
    OsslSha384(openssl::sha::Sha384),
    #[cfg(feature = "openssl")]
    OsslSha512(openssl::sha::Sha512),
    #[cfg(feature = "openssl")]
    EvpMd5(openssl::hash::Hasher),
    Blake3(Box<blake3::Hasher>),
    /// BLAKE3 with a prefix not yet absorbed: it goes in with the first data, in one slice
    /// (see [`Hasher::prefixed`]); empty once it has.
    Blake3Prefixed(Box<blake3::Hasher>, &'static [u8]),
    /// A BLAKE3 subtree that is not the whole message; finalizes to its chaining value.
    Blake3Subtree(Box<blake3::Hasher>),
    Xxh3(Box<xxhash_rust::xxh3::Xxh3Default>),
    Xxh128(Box<xxhash_rust::xxh3::Xxh3Default>),
    /// crc-fast keeps every width in a `u64`; the algorithm says how many bytes are the CRC.
    Crc(Algorithm, Box<crc_fast::Digest>),
}

/// Bytes of a BLAKE3 message that [`Hasher::prefixed`] gathers behind its prefix: 16 chunks of
/// 1 KiB, the most the crate's widest SIMD kernel (AVX-512) hashes at once. From there on the
/// crate takes the data in place in subtrees of at least as many chunks, as it does for a
/// message without a prefix.
const PREFIX_JOIN: usize = 16 << 10;

thread_local! {
    /// The slice that [`Hasher::prefixed`] joins for BLAKE3, kept from leaf to leaf: an
    /// array of [`PREFIX_JOIN`] bytes on the stack, zeroed for every leaf, made 20 000 files
    /// of a few bytes 9 % dearer (`-p 2 -a blake3 -r`, 205 → 224 ms of CPU), and a `Vec`
    /// allocated per leaf cost the 20 000 files of 64 KiB 1–2 %.
    static JOINED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Hasher {
    /// A hasher for the subtree of a tree algorithm's own tree ([`Algorithm::is_tree`]) that
    /// starts at byte `offset` of a longer message; its digest is the subtree's chaining
    /// value, for [`join_subtrees`]. The subtree must be a power of two of 1 KiB chunks long
    /// (the last one of the message may be shorter) and start at a multiple of that length.
    ///
    /// # Panics
    /// If `alg` is not a tree algorithm or `offset` is not a multiple of 1 KiB.
    pub fn subtree(alg: Algorithm, offset: u64) -> Hasher {
        assert!(alg.is_tree(), "{alg} is not a tree algorithm");
        let mut h = Box::new(blake3::Hasher::new());
        h.set_input_offset(offset);
        Hasher(State::Blake3Subtree(h))
    }

    /// This hasher, fed with `prefix` (a layout's prefix byte before a leaf's data).
    ///
    /// BLAKE3 keeps it back and absorbs it with the first 16 KiB (`PREFIX_JOIN`) of the data
    /// in one slice. Fed alone, a prefix byte leaves every later chunk of the message a byte
    /// into the slices the crate gets, which then hashes the first two chunks one 64-byte
    /// block at a time and the next ones in subtrees of 2, 4 and 8 chunks, not in its widest
    /// SIMD batches of 16: small files of the `mtsum` layout (two leaves of some 32 KiB each)
    /// spent 17 % of their CPU time in the crate's one-block compression, against 4 % for the
    /// same files without a prefix.
    pub fn prefixed(self, prefix: &'static [u8]) -> Hasher {
        match self.0 {
            State::Blake3(h) if !prefix.is_empty() => Hasher(State::Blake3Prefixed(h, prefix)),
            state => {
                let mut h = Hasher(state);
                h.update(prefix);
                h
            }
        }
    }

    /// Absorbs `data`.
    pub fn update(&mut self, data: &[u8]) {
        match &mut self.0 {
            State::Md5(h) => h.update(data),
            State::Sha1(h) => h.update(data),
            State::Sha224(h) => h.update(data),
            State::Sha256(h) => h.update(data),
            #[cfg(not(feature = "openssl"))]
            State::Sha384(h) => h.update(data),
            #[cfg(not(feature = "openssl"))]
            State::Sha512(h) => h.update(data),
            #[cfg(feature = "openssl")]
            State::OsslSha384(h) => h.update(data),
            #[cfg(feature = "openssl")]
            State::OsslSha512(h) => h.update(data),
            #[cfg(feature = "openssl")]
            // Once libcrypto has set up MD5 (see `md5_or_portable`), updating and finishing
            // it fail only on an internal error of libcrypto, never for want of MD5.
            State::EvpMd5(h) => h.update(data).expect("MD5 update cannot fail"),
            State::Blake3(h) | State::Blake3Subtree(h) => {
                h.update(data);
            }
            State::Blake3Prefixed(h, prefix) if prefix.is_empty() => {
                h.update(data);
            }
            State::Blake3Prefixed(h, prefix) => {
                if data.is_empty() {
                    return;
                }
                let (head, rest) = data.split_at(data.len().min(PREFIX_JOIN - prefix.len()));
                JOINED.with_borrow_mut(|joined| {
                    joined.clear();
                    joined.extend_from_slice(prefix);
                    joined.extend_from_slice(head);
                    h.update(joined);
                });
                h.update(rest);
                *prefix = &[];
            }
            State::Xxh3(h) | State::Xxh128(h) => h.update(data),
            State::Crc(_, h) => h.update(data),
        }
    }

    /// The digest of everything absorbed.
    pub fn finalize(self) -> Digest {
        match self.0 {
            State::Md5(h) => Digest::from_slice(&h.finalize()),
            State::Sha1(h) => Digest::from_slice(&h.finalize()),
            State::Sha224(h) => Digest::from_slice(&h.finalize()),
            State::Sha256(h) => Digest::from_slice(&h.finalize()),
            #[cfg(not(feature = "openssl"))]
            State::Sha384(h) => Digest::from_slice(&h.finalize()),
            #[cfg(not(feature = "openssl"))]
            State::Sha512(h) => Digest::from_slice(&h.finalize()),
            #[cfg(feature = "openssl")]
            State::OsslSha384(h) => Digest::from_slice(&h.finish()),
            #[cfg(feature = "openssl")]
            State::OsslSha512(h) => Digest::from_slice(&h.finish()),
            #[cfg(feature = "openssl")]
            State::EvpMd5(mut h) => Digest::from_slice(&h.finish().expect("MD5 final cannot fail")),
            State::Blake3(h) => Digest::from_slice(h.finalize().as_bytes()),
            // A prefix still held back is the whole message.
            State::Blake3Prefixed(mut h, prefix) => {
                h.update(prefix);
                Digest::from_slice(h.finalize().as_bytes())
            }
            // An empty subtree has no chaining value; it only arises when the file shrank
            // while it was read, which the engine reports instead of the digest.
            State::Blake3Subtree(h) if h.count() == 0 => Digest::from_slice(&[0; 32]),
            State::Blake3Subtree(h) => Digest::from_slice(&h.finalize_non_root()),
            State::Xxh3(h) => Digest::from_slice(&h.digest().to_be_bytes()),
            State::Xxh128(h) => Digest::from_slice(&h.digest128().to_be_bytes()),
            State::Crc(alg, h) => crc_digest(alg, h.finalize()),
        }
    }
}

/// A digest of up to 64 bytes, stored inline.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest {
    len: u8,
    bytes: [u8; Digest::MAX_LEN],
}

impl Digest {
    /// The longest digest of any [`Algorithm`] (SHA-512).
    pub const MAX_LEN: usize = 64;

    /// Copies a digest from its bytes.
    ///
    /// # Panics
    /// If `bytes` is longer than [`Digest::MAX_LEN`]; callers pass hash outputs, never user input.
    pub fn from_slice(bytes: &[u8]) -> Digest {
        assert!(
            bytes.len() <= Self::MAX_LEN,
            "digest longer than {} bytes",
            Self::MAX_LEN
        );
        let mut d = Digest {
            len: bytes.len() as u8,
            bytes: [0; Self::MAX_LEN],
        };
        d.bytes[..bytes.len()].copy_from_slice(bytes);
        d
    }

    /// The digest of the first `len` bytes of `bytes`, all of whose later bytes are zero: what
    /// [`Digest::from_slice`] makes, without its copy of a slice of run-time length, a call of
    /// `memcpy` per digest (a GiB of 1 KiB leaves is a million leaves and a million nodes).
    pub(crate) fn from_zero_padded(bytes: [u8; Self::MAX_LEN], len: usize) -> Digest {
        debug_assert!(len <= Self::MAX_LEN && bytes[len..].iter().all(|&b| b == 0));
        Digest {
            len: len as u8,
            bytes,
        }
    }

    /// Parses lowercase or uppercase hex; `None` when it is not hex or too long.
    pub fn from_hex(hex: &str) -> Option<Digest> {
        let hex = hex.as_bytes();
        if !hex.len().is_multiple_of(2) || hex.len() > 2 * Self::MAX_LEN {
            return None;
        }
        // By table, and judged once at the end rather than at each digit: a manifest or a sum
        // file is tens of thousands of digests read before anything else can start.
        let mut bytes = [0u8; Self::MAX_LEN];
        let mut bad = 0;
        for (byte, pair) in bytes.iter_mut().zip(hex.chunks_exact(2)) {
            let (high, low) = (HEX_DIGIT[pair[0] as usize], HEX_DIGIT[pair[1] as usize]);
            bad |= high | low;
            *byte = high << 4 | low;
        }
        (bad & NOT_HEX == 0).then(|| Digest::from_zero_padded(bytes, hex.len() / 2))
    }

    /// The digest's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Lowercase hex, as every `*sum` tool prints it.
    pub fn to_hex(&self) -> String {
        self.to_string()
    }
}

/// What [`Digest::from_hex`] marks a byte that is no hex digit with.
const NOT_HEX: u8 = 0x80;

/// The value of each byte as a hex digit, either case; [`NOT_HEX`] for every other byte.
const HEX_DIGIT: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// Lowercase hex, as every checksum tool prints it. Written into one buffer and handed to the
/// formatter once, rather than a `{:02x}` per byte: the main thread, which also walks the
/// tree and orders the results, formats every line (`mtsum -p 2 -a sha512 -r` over 20 000
/// files of a few bytes: 244 → 208 ms of CPU, 0.138 → 0.119 s).
impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let bytes = self.as_bytes();
        let mut hex = [0; 2 * Digest::MAX_LEN];
        for (pair, b) in hex.chunks_exact_mut(2).zip(bytes) {
            pair[0] = HEX[usize::from(b >> 4)];
            pair[1] = HEX[usize::from(b & 0xf)];
        }
        f.pad(std::str::from_utf8(&hex[..2 * bytes.len()]).expect("hex digits are ASCII"))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_from_str() {
        for a in Algorithm::ALL {
            assert_eq!(a.name().parse::<Algorithm>(), Ok(a));
            assert_eq!(a.name().to_uppercase().parse::<Algorithm>(), Ok(a));
        }
        assert_eq!("SHA-256".parse::<Algorithm>(), Ok(Algorithm::Sha256));
        assert!("sha3".parse::<Algorithm>().is_err());
        for near in ["sha25", "sha2566", "sha256\u{e9}", ""] {
            assert!(near.parse::<Algorithm>().is_err(), "{near:?}");
        }
    }

    #[test]
    fn digest_length_matches_what_the_hasher_returns() {
        for a in Algorithm::ALL {
            assert_eq!(a.hash(b"abc").as_bytes().len(), a.digest_len(), "{a}");
        }
    }

    #[test]
    fn bulk_and_small_message_hashers_agree() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for a in Algorithm::ALL {
            for len in [0, 1, 55, 56, 64, 127, 128, 1000, data.len()] {
                let mut bulk = a.bulk_hasher();
                bulk.update(&data[..len]);
                assert_eq!(bulk.finalize(), a.hash(&data[..len]), "{a} {len}");
            }
        }
    }

    #[test]
    #[cfg(feature = "openssl")]
    fn md5_falls_back_to_rustcrypto_when_libcrypto_refuses_it() {
        // What `openssl::hash::Hasher::new` returns in FIPS mode, where MD5 is not allowed.
        let refused = Err(openssl::error::ErrorStack::get());
        let mut h = md5_or_portable(refused);
        assert!(matches!(h.0, State::Md5(_)), "the pure-Rust MD5");
        h.update(b"abc");
        assert_eq!(h.finalize().to_hex(), "900150983cd24fb0d6963f7d28e17f72");

        let given = openssl::hash::Hasher::new(openssl::hash::MessageDigest::md5());
        let mut h = md5_or_portable(given);
        assert!(
            matches!(h.0, State::EvpMd5(_)),
            "libcrypto's MD5 where it has one"
        );
        h.update(b"abc");
        assert_eq!(h.finalize().to_hex(), "900150983cd24fb0d6963f7d28e17f72");
    }

    #[test]
    fn a_prefix_held_back_digests_as_if_it_came_first() {
        // Every algorithm: `prefixed` is `update(prefix)`. BLAKE3 holds the prefix back and
        // gathers PREFIX_JOIN bytes behind it, so the data comes at sizes around a chunk, the
        // join and 16 chunks past it, fed whole, cut once around the join, or in 1000-byte
        // pieces with empty ones between; the reference is the crate's one-shot digest of
        // the message in one slice.
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        let prefix: &'static [u8] = &[0];
        for len in [
            0, 1, 1023, 1024, 16382, 16383, 16384, 32767, 32768, 32769, 50_000,
        ] {
            let message = [prefix, &data[..len]].concat();
            let want = blake3::hash(&message);
            let cuts: [&[usize]; 4] = [&[], &[1], &[16383], &[16384, 16385]];
            for cut in cuts {
                let mut h = Algorithm::Blake3.hasher().prefixed(prefix);
                let mut from = 0;
                for &at in cut.iter().filter(|&&at| at <= len) {
                    h.update(&data[from..at]);
                    from = at;
                }
                h.update(&data[from..len]);
                assert_eq!(
                    h.finalize().as_bytes(),
                    want.as_bytes(),
                    "{len} cut {cut:?}"
                );
            }
            let mut pieces = Algorithm::Blake3.hasher().prefixed(prefix);
            for piece in data[..len].chunks(1000) {
                pieces.update(&[]);
                pieces.update(piece);
            }
            assert_eq!(
                pieces.finalize().as_bytes(),
                want.as_bytes(),
                "{len} in pieces"
            );
            for a in Algorithm::ALL {
                let mut h = a.hasher().prefixed(prefix);
                h.update(&data[..len]);
                assert_eq!(h.finalize(), a.hash(&message), "{a} {len}");
            }
        }
    }

    #[test]
    fn two_blake3_subtrees_joined_at_the_root_are_the_ordinary_digest() {
        // 3 KiB + 1: the left subtree takes 2 KiB (the largest power of two of 1 KiB chunks
        // below 4 chunks), the right the rest.
        let data: Vec<u8> = (0..3073u32).map(|i| (i % 251) as u8).collect();
        let alg = Algorithm::Blake3;
        let (left, right) = data.split_at(2048);
        let mut l = Hasher::subtree(alg, 0);
        l.update(left);
        let mut r = Hasher::subtree(alg, 2048);
        r.update(right);
        let root = join_subtrees(alg, &l.finalize(), &r.finalize(), true);
        assert_eq!(root, alg.hash(&data));
        assert_eq!(root.as_bytes(), blake3::hash(&data).as_bytes());
    }

    #[test]
    fn an_empty_subtree_finalizes_without_panicking() {
        // A file that shrank while it was read leaves a subtree job without bytes; the engine
        // reports the change, but the hasher must not panic first.
        assert_eq!(
            Hasher::subtree(Algorithm::Blake3, 4 << 20)
                .finalize()
                .as_bytes()
                .len(),
            32
        );
    }

    #[test]
    #[should_panic(expected = "not a tree algorithm")]
    fn only_tree_algorithms_have_subtrees() {
        Hasher::subtree(Algorithm::Sha256, 0);
    }

    #[test]
    fn hex_round_trips() {
        let d = Algorithm::Sha256.hash(b"");
        assert_eq!(
            d.to_hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(Digest::from_hex(&d.to_hex()), Some(d));
        assert_eq!(Digest::from_hex(&d.to_hex().to_uppercase()), Some(d));
        assert_eq!(Digest::from_hex("abc"), None);
        assert_eq!(Digest::from_hex("zz"), None);
        assert_eq!(
            Digest::from_hex("+f"),
            None,
            "no sign, unlike from_str_radix"
        );
    }

    #[test]
    fn only_hex_digits_of_either_case_are_read_as_hex() {
        for c in (0..128u8).map(char::from) {
            for text in [format!("{c}0"), format!("0{c}")] {
                let read = Digest::from_hex(&text).map(|d| d.as_bytes()[0]);
                let want = c
                    .to_digit(16)
                    .map(|v| if text.starts_with(c) { v * 16 } else { v });
                assert_eq!(read.map(u32::from), want, "{text:?}");
            }
        }
        assert_eq!(
            Digest::from_hex("\u{e9}"),
            None,
            "two bytes that are no digits"
        );
        let d = Digest::from_hex("00ff10Ab").unwrap();
        assert_eq!(d.as_bytes(), [0x00, 0xff, 0x10, 0xab]);
    }

    #[test]
    fn xxh_digests_are_printed_big_endian_like_xxhsum() {
        // `printf abc | xxhsum -H3` and `-H128` (xxHash 0.8).
        assert_eq!(Algorithm::Xxh3.hash(b"abc").to_hex(), "78af5f94892f3950");
        assert_eq!(
            Algorithm::Xxh128.hash(b"abc").to_hex(),
            "06b05ab6733a618578af5f94892f3950"
        );
    }

    #[test]
    fn crcs_give_the_catalogue_check_values() {
        // The CRC catalogue's check value: the CRC of ASCII "123456789", printed big-endian.
        for (alg, check) in [
            (Algorithm::Crc32, "cbf43926"),
            (Algorithm::Crc32c, "e3069283"),
            (Algorithm::Crc64Nvme, "ae8b14860a799888"),
        ] {
            assert_eq!(alg.hash(b"123456789").to_hex(), check, "{alg}");
            assert_eq!(alg.hash(b"").to_hex(), "0".repeat(2 * alg.digest_len()));
        }
        // S3's documented example: CRC32 of "hello".
        assert_eq!(Algorithm::Crc32.hash(b"hello").to_hex(), "3610a686");
    }

    #[test]
    fn crcs_of_pieces_combine_into_the_crc_of_the_whole() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        for alg in Algorithm::ALL.into_iter().filter(|a| a.is_crc()) {
            for cut in [0, 1, 63, 64, 2500, 4999, 5000] {
                let (l, r) = data.split_at(cut);
                let joined = combine_crcs(alg, &alg.hash(l), &alg.hash(r), r.len() as u64);
                assert_eq!(joined, alg.hash(&data), "{alg} cut at {cut}");
            }
        }
    }

    #[test]
    fn crc_names_parse_with_or_without_dashes() {
        assert_eq!("CRC-32C".parse::<Algorithm>(), Ok(Algorithm::Crc32c));
        assert_eq!("crc64-nvme".parse::<Algorithm>(), Ok(Algorithm::Crc64Nvme));
        assert_eq!("CRC32".parse::<Algorithm>(), Ok(Algorithm::Crc32));
    }
}
