//! Many messages of one length at once, for the algorithms without a lanes kernel
//! ([`crate::lanes`]): BLAKE3, XXH3 and XXH128.
//!
//! The fixed-leaf layouts hash thousands of equal leaves per MiB, and the inner nodes over them,
//! each with a prefix byte. One [`crate::algorithm::Hasher`] per message spent most of the time
//! around the hash rather than in it: XXH3's boxed streaming state cost an allocation per leaf
//! (a third of the time of 1 KiB leaves), and BLAKE3's prefix byte shifts the data against its
//! 1 KiB chunks, so that every leaf ran as a tree of its own on one SIMD lane. Here BLAKE3
//! hashes the chunks of all the messages side by side in its SIMD kernel, then the parents of
//! all their trees level by level; XXH3 hashes each message in one pass, without a state,
//! reading it in place behind the prefix (`batch::xxh3`).

use crate::algorithm::{Algorithm, Digest};
use crate::lanes::{Isa, Vector};

mod xxh3;

/// Whether [`hash_each`] is faster than one [`crate::algorithm::Hasher`] per message.
pub fn pays(alg: Algorithm) -> bool {
    matches!(alg, Algorithm::Blake3 | Algorithm::Xxh3 | Algorithm::Xxh128)
}

/// The digests of `prefix ‖ m` for every message `m` of `len` bytes that `data` holds, in
/// order: what `alg.hash_parts(&[prefix, m])` gives for each, faster where [`pays`].
///
/// BLAKE3 runs on the widest SIMD instructions this CPU has within the cap of the lanes'
/// kernels ([`Isa::cap`]), so that `MTSUM_SIMD` and `MTSUM_FORCE_PORTABLE` measure the whole
/// program as a machine without AVX-512 runs it. The digests never depend on the choice.
///
/// # Panics
/// If `len` is 0 or `data` is not a whole number of messages; callers cut their data so.
pub fn hash_each(alg: Algorithm, prefix: &[u8], data: &[u8], len: usize) -> Vec<Digest> {
    let mut digests = Vec::with_capacity(data.len() / len.max(1));
    hash_each_into(alg, prefix, data, len, &mut digests);
    digests
}

/// [`hash_each`], appending the digests to `out`: a caller hashing chunk after chunk keeps
/// one vector rather than allocating (and page-faulting in) a fresh one per chunk.
///
/// # Panics
/// As [`hash_each`].
pub fn hash_each_into(
    alg: Algorithm,
    prefix: &[u8],
    data: &[u8],
    len: usize,
    out: &mut Vec<Digest>,
) {
    hash_each_within(Isa::cap(), alg, prefix, data, len, out);
}

/// The widest vector instructions [`hash_each_into`] hashes BLAKE3 leaves with on this CPU,
/// within [`Isa::cap`]: what `mtsum --version` reports for BLAKE3.
pub fn blake3_vector() -> Vector {
    blake3_many::Kernels::within(Isa::cap()).vector()
}

/// [`hash_each_into`] on the SIMD instructions allowed by `cap`: the tests run every one this
/// CPU has in one process, which the environment variables, read once, cannot do.
fn hash_each_within(
    cap: Isa,
    alg: Algorithm,
    prefix: &[u8],
    data: &[u8],
    len: usize,
    out: &mut Vec<Digest>,
) {
    assert!(
        len > 0 && data.len().is_multiple_of(len),
        "whole messages of {len} bytes"
    );
    match alg {
        // The layouts' prefixes are a byte; a prefix of a block or more is no leaf's.
        Algorithm::Blake3 if prefix.len() < blake3::BLOCK_LEN => {
            blake3_many::hash_each(blake3_many::Kernels::within(cap), prefix, data, len, out)
        }
        Algorithm::Xxh3 | Algorithm::Xxh128 => xxh3_each(cap, alg, prefix, data, len, out),
        _ => out.extend(data.chunks_exact(len).map(|m| alg.hash_parts(&[prefix, m]))),
    }
}

/// XXH3 (64 or 128 bits) of `prefix ‖ m` for every `m`: messages longer than XXH3's
/// mid-size limit through [`xxh3::hash_each`], which reads them in place; shorter ones (the
/// inner nodes) with the crate's one-shot functions, on a copy behind the prefix where there
/// is one. The digests are appended to `out`.
fn xxh3_each(
    cap: Isa,
    alg: Algorithm,
    prefix: &[u8],
    data: &[u8],
    len: usize,
    out: &mut Vec<Digest>,
) {
    use xxhash_rust::xxh3::{xxh3_64, xxh3_128};
    if prefix.len() + len > xxh3::MIDSIZE_MAX && prefix.len() < 64 {
        return xxh3::hash_each(cap, alg, prefix, data, len, out);
    }
    let digest = |message: &[u8]| match alg {
        Algorithm::Xxh3 => Digest::from_slice(&xxh3_64(message).to_be_bytes()),
        _ => Digest::from_slice(&xxh3_128(message).to_be_bytes()),
    };
    let messages = data.chunks_exact(len);
    if prefix.is_empty() {
        return out.extend(messages.map(digest));
    }
    let mut buf = prefix.to_vec();
    out.extend(messages.map(|m| {
        buf.truncate(prefix.len());
        buf.extend_from_slice(m);
        digest(&buf)
    }))
}

/// BLAKE3 over many messages of one length, on the crate's own compression kernels.
///
/// It uses `blake3::platform`, which the crate exports `#[doc(hidden)]` (for its benchmarks)
/// without a stability promise: the stable `hazmat` module hashes one subtree per call, on
/// as many lanes as that subtree has chunks, which is the very cost this module avoids for
/// leaves of a few chunks. Cargo.toml therefore pins the exact blake3 version; the tests
/// compare every path with `blake3::hash` at every chunk and block boundary.
mod blake3_many {
    use blake3::platform::Platform;
    use blake3::{BLOCK_LEN, CHUNK_LEN, IncrementCounter, OUT_LEN};

    use crate::algorithm::Digest;
    use crate::lanes::{Isa, Vector};

    // The domain flags and the key of the BLAKE3 specification (sections 2.1 and 2.2).
    const CHUNK_START: u8 = 1 << 0;
    const CHUNK_END: u8 = 1 << 1;
    const PARENT: u8 = 1 << 2;
    const ROOT: u8 = 1 << 3;
    const IV: [u32; 8] = [
        0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB,
        0x5BE0CD19,
    ];

    /// About how many input bytes [`hash_each`] takes at a time: what it keeps grows with it
    /// (a copied first chunk per message, 32 bytes per chunk). Groups of 64 and 256 KiB,
    /// which the caches hold better, measured no faster.
    const GROUP_BYTES: usize = 1 << 20;

    /// The kernels of one instruction set: the crate's `Platform` for whole blocks and
    /// chunks, and the compression in lanes of [`tails`] for the short ones.
    #[derive(Clone, Copy, Debug)]
    pub(super) struct Kernels {
        platform: Platform,
        /// The copy of [`tails_in_lanes`] to run: made only by [`Kernels::within`], which
        /// checks that this CPU has its instructions.
        tails: Vector,
    }

    impl Kernels {
        /// The widest kernels this CPU runs within `cap`. The crate has no public constructor
        /// of its AVX-512 `Platform` (it exists only where the crate's build compiled its
        /// assembly), so AVX-512 takes whatever the crate detects, which is at most that; a
        /// cap without vector instructions takes the crate's portable code, not SSE4.1.
        pub(super) fn within(cap: Isa) -> Kernels {
            #[cfg(target_arch = "x86_64")]
            {
                if cap.vector >= Vector::Avx512 && std::arch::is_x86_feature_detected!("avx512f") {
                    return Kernels {
                        platform: Platform::detect(),
                        tails: Vector::Avx512,
                    };
                }
                if cap.vector >= Vector::Avx2
                    && let Some(platform) = Platform::avx2()
                {
                    return Kernels {
                        platform,
                        tails: Vector::Avx2,
                    };
                }
            }
            let platform = match cap.vector {
                Vector::None => Platform::portable(),
                _ => Platform::detect(),
            };
            Kernels {
                platform,
                tails: Vector::None,
            }
        }

        /// The instruction set of the kernels.
        pub(super) fn vector(self) -> Vector {
            self.tails
        }
    }

    /// [`super::hash_each_into`] for a `prefix` shorter than a block, on `kernels`.
    pub(super) fn hash_each(
        kernels: Kernels,
        prefix: &[u8],
        data: &[u8],
        len: usize,
        digests: &mut Vec<Digest>,
    ) {
        debug_assert!(prefix.len() < BLOCK_LEN, "a prefix shorter than a block");
        let per_group = (GROUP_BYTES / len).max(1);
        digests.reserve(data.len() / len);
        for group in data.chunks(per_group * len) {
            let messages: Vec<Message> = group
                .chunks_exact(len)
                .map(|data| Message { prefix, data })
                .collect();
            if prefix.len() + len <= CHUNK_LEN {
                single_chunks(kernels, &messages, digests);
            } else {
                chunk_trees(kernels, &messages, digests);
            }
        }
    }

    /// Bytes `0..N` of every message: in place without a prefix, else copied into `store`
    /// (appended, not zeroed first: zeroing cost 3 % of 1 KiB leaves).
    fn heads<'a, const N: usize>(
        messages: &[Message<'a>],
        store: &'a mut Vec<u8>,
    ) -> Vec<&'a [u8; N]> {
        if messages.first().is_none_or(|m| m.prefix.is_empty()) {
            return messages.iter().map(|m| m.in_place(0)).collect();
        }
        store.reserve_exact(messages.len() * N);
        for msg in messages {
            store.extend_from_slice(msg.prefix);
            store.extend_from_slice(&msg.data[..N - msg.prefix.len()]);
        }
        store
            .chunks_exact(N)
            .map(|head| head.try_into().expect("N bytes"))
            .collect()
    }

    /// The message `prefix ‖ data`, read as BLAKE3 input.
    #[derive(Clone, Copy)]
    struct Message<'a> {
        prefix: &'a [u8],
        data: &'a [u8],
    }

    impl<'a> Message<'a> {
        fn len(&self) -> usize {
            self.prefix.len() + self.data.len()
        }

        /// Bytes `start..start + N` of the message where they lie whole in its data.
        fn in_place<const N: usize>(&self, start: usize) -> &'a [u8; N] {
            let at = start - self.prefix.len();
            self.data[at..at + N].try_into().expect("N bytes")
        }
    }

    /// The digests of messages of one chunk or less: a whole 1 KiB chunk or a first block
    /// of all of them at once in the crate's SIMD kernel, the blocks after it in [`tails`].
    fn single_chunks(kernels: Kernels, messages: &[Message], digests: &mut Vec<Digest>) {
        let platform = kernels.platform;
        let m = messages.first().map_or(0, Message::len);
        let mut out = vec![0u8; messages.len() * OUT_LEN];
        if m == CHUNK_LEN && messages[0].prefix.is_empty() {
            let inputs: Vec<&[u8; CHUNK_LEN]> = messages.iter().map(|m| m.in_place(0)).collect();
            platform.hash_many(
                &inputs,
                &IV,
                0,
                IncrementCounter::No,
                0,
                CHUNK_START,
                CHUNK_END | ROOT,
                &mut out,
            );
            digests.extend(out.chunks_exact(OUT_LEN).map(Digest::from_slice));
            return;
        }
        if m < BLOCK_LEN {
            let roots = tails(kernels, messages, None, 0, 0, 0, ROOT);
            digests.extend(roots.iter().map(|d| Digest::from_slice(d)));
            return;
        }
        let mut store = Vec::new();
        let inputs = heads::<BLOCK_LEN>(messages, &mut store);
        let last = if m == BLOCK_LEN { CHUNK_END | ROOT } else { 0 };
        platform.hash_many(
            &inputs,
            &IV,
            0,
            IncrementCounter::No,
            0,
            CHUNK_START,
            last,
            &mut out,
        );
        if m == BLOCK_LEN {
            digests.extend(out.chunks_exact(OUT_LEN).map(Digest::from_slice));
            return;
        }
        let roots = tails(kernels, messages, Some(&out), 0, 1, 0, ROOT);
        digests.extend(roots.iter().map(|d| Digest::from_slice(d)));
    }

    /// The digests of messages of more than one chunk: their whole chunks in the crate's SIMD
    /// kernel, a short last chunk in [`tails`], then the parents of all their trees level by
    /// level in the kernel again.
    fn chunk_trees(kernels: Kernels, messages: &[Message], digests: &mut Vec<Digest>) {
        let platform = kernels.platform;
        let n = messages.len();
        let m = messages[0].len();
        let chunks = m.div_ceil(CHUNK_LEN);
        // The chunks the SIMD kernel takes: every one but a short last.
        let whole = if m.is_multiple_of(CHUNK_LEN) {
            chunks
        } else {
            chunks - 1
        };
        // The first chunk of each message: copied behind the prefix, if there is one.
        let mut store = Vec::new();
        let heads = heads::<CHUNK_LEN>(messages, &mut store);
        let chunk = |i: usize, j: usize| match j {
            0 => heads[i],
            _ => messages[i].in_place(j * CHUNK_LEN),
        };
        // The chaining values of message `i`'s chunks at `i * chunks ..`.
        let mut cvs = vec![0u8; n * chunks * OUT_LEN];
        if n >= whole {
            // Few chunks per message: chunk `j` of every message at once.
            let mut out = vec![0u8; n * OUT_LEN];
            for j in 0..whole {
                let inputs: Vec<&[u8; CHUNK_LEN]> = (0..n).map(|i| chunk(i, j)).collect();
                platform.hash_many(
                    &inputs,
                    &IV,
                    j as u64,
                    IncrementCounter::No,
                    0,
                    CHUNK_START,
                    CHUNK_END,
                    &mut out,
                );
                for (i, cv) in out.chunks_exact(OUT_LEN).enumerate() {
                    let at = (i * chunks + j) * OUT_LEN;
                    cvs[at..at + OUT_LEN].copy_from_slice(cv);
                }
            }
        } else {
            // Many chunks per message: a message's chunks at once, counting up.
            for (i, out) in cvs.chunks_exact_mut(chunks * OUT_LEN).enumerate() {
                let inputs: Vec<&[u8; CHUNK_LEN]> = (0..whole).map(|j| chunk(i, j)).collect();
                platform.hash_many(
                    &inputs,
                    &IV,
                    0,
                    IncrementCounter::Yes,
                    0,
                    CHUNK_START,
                    CHUNK_END,
                    out,
                );
            }
        }
        if whole < chunks {
            let start = whole * CHUNK_LEN;
            let lasts = tails(kernels, messages, None, start, 0, whole as u64, 0);
            for (cv, out) in lasts.iter().zip(cvs.chunks_exact_mut(chunks * OUT_LEN)) {
                out[whole * OUT_LEN..].copy_from_slice(cv);
            }
        }
        // BLAKE3's tree (the left subtree takes the largest power of two of chunks below
        // their number) is the one that pairs neighbours from the left, level by level,
        // and carries an odd last one up.
        let mut width = chunks;
        while width > 1 {
            let pairs = width / 2;
            let next = width - pairs;
            let flags = if next == 1 { PARENT | ROOT } else { PARENT };
            let inputs: Vec<&[u8; BLOCK_LEN]> = cvs
                .chunks_exact(width * OUT_LEN)
                .flat_map(|level| level.chunks_exact(BLOCK_LEN))
                .map(|pair| pair.try_into().expect("two CVs"))
                .collect();
            let mut out = vec![0u8; n * pairs * OUT_LEN];
            platform.hash_many(&inputs, &IV, 0, IncrementCounter::No, flags, 0, 0, &mut out);
            if next > pairs {
                let mut carried = Vec::with_capacity(n * next * OUT_LEN);
                for (parents, level) in out
                    .chunks_exact(pairs * OUT_LEN)
                    .zip(cvs.chunks_exact(width * OUT_LEN))
                {
                    carried.extend_from_slice(parents);
                    carried.extend_from_slice(&level[(width - 1) * OUT_LEN..]);
                }
                out = carried;
            }
            cvs = out;
            width = next;
        }
        digests.extend(cvs.chunks_exact(OUT_LEN).map(Digest::from_slice));
    }

    /// Messages whose blocks [`tails`] compresses side by side.
    const LANES: usize = 16;

    /// One 32-bit word of every lane.
    type Words = [u32; LANES];

    /// The chaining values of the last chunks of `messages` (bytes `start..` of each, at
    /// most a chunk), as chunk number `counter`: from `firsts` (the chaining values after
    /// their first `skip` blocks), else from the key; `last` flags the last block (`ROOT`
    /// for the digests of messages of one chunk).
    ///
    /// The SIMD kernel of the crate takes whole 64-byte blocks only, and one compression at
    /// a time cost about as much as the 16 blocks of a 1 KiB leaf in the kernel: `rfc6962`'s
    /// 1 KiB leaves end in a chunk of one byte, and its inner nodes are 65 bytes. Here the
    /// blocks of 16 messages go through one compression in 16 lanes: one AVX-512 register per
    /// state word, or (AVX2, portable) as the compiler vectorizes the lanes' arrays.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
    fn tails(
        kernels: Kernels,
        messages: &[Message],
        firsts: Option<&[u8]>,
        start: usize,
        skip: usize,
        counter: u64,
        last: u8,
    ) -> Vec<[u8; OUT_LEN]> {
        #[cfg(target_arch = "x86_64")]
        match kernels.tails {
            Vector::Avx512 => {
                // SAFETY: `Kernels::within` chose AVX-512 only where the CPU has AVX-512F,
                // all the function is compiled for.
                return unsafe { tails_avx512(messages, firsts, start, skip, counter, last) };
            }
            Vector::Avx2 => {
                // SAFETY: as above, with AVX2.
                return unsafe { tails_avx2(messages, firsts, start, skip, counter, last) };
            }
            Vector::None => {}
        }
        tails_in_lanes(
            messages,
            firsts,
            start,
            skip,
            counter,
            last,
            compress_in_lanes,
        )
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn tails_avx512(
        messages: &[Message],
        firsts: Option<&[u8]>,
        start: usize,
        skip: usize,
        counter: u64,
        last: u8,
    ) -> Vec<[u8; OUT_LEN]> {
        let compress = |cv: &mut _, m: &_, counter, block_len, flags| {
            compress_avx512(cv, m, counter, block_len, flags)
        };
        tails_in_lanes(messages, firsts, start, skip, counter, last, compress)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn tails_avx2(
        messages: &[Message],
        firsts: Option<&[u8]>,
        start: usize,
        skip: usize,
        counter: u64,
        last: u8,
    ) -> Vec<[u8; OUT_LEN]> {
        tails_in_lanes(
            messages,
            firsts,
            start,
            skip,
            counter,
            last,
            compress_in_lanes,
        )
    }

    /// [`tails`] with the compression function `compress`, for whatever instruction set its
    /// caller is compiled for.
    #[inline(always)]
    fn tails_in_lanes(
        messages: &[Message],
        firsts: Option<&[u8]>,
        start: usize,
        skip: usize,
        counter: u64,
        last: u8,
        compress: impl Fn(&mut [Words; 8], &[Words; 16], u64, u32, u8),
    ) -> Vec<[u8; OUT_LEN]> {
        let Some(first) = messages.first() else {
            return Vec::new();
        };
        let len = first.len() - start;
        let blocks = len.div_ceil(BLOCK_LEN).max(1);
        let mut out = Vec::with_capacity(messages.len());
        for (g, group) in messages.chunks(LANES).enumerate() {
            let mut cv = [[0u32; LANES]; 8];
            for (l, _) in group.iter().enumerate() {
                let words = match firsts {
                    Some(f) => {
                        let at = (g * LANES + l) * OUT_LEN;
                        let bytes = &f[at..at + OUT_LEN];
                        std::array::from_fn(|w| word(&bytes[4 * w..]))
                    }
                    None => IV,
                };
                for (w, word) in words.into_iter().enumerate() {
                    cv[w][l] = word;
                }
            }
            for b in skip..blocks {
                let at = b * BLOCK_LEN;
                let block_len = (len - at).min(BLOCK_LEN);
                let mut m = [[0u32; LANES]; 16];
                for (l, msg) in group.iter().enumerate() {
                    let from = start + at;
                    if block_len == BLOCK_LEN && from >= msg.prefix.len() {
                        let block: &[u8; BLOCK_LEN] = msg.in_place(from);
                        for (w, words) in m.iter_mut().enumerate() {
                            words[l] = word(&block[4 * w..]);
                        }
                    } else {
                        // Byte by byte into the words, not through a copy of the block: the
                        // loads of a copy just made stalled, a tenth of 1 KiB leaves' time.
                        let bytes = msg.prefix.iter().chain(msg.data).skip(from);
                        for (i, &byte) in bytes.take(block_len).enumerate() {
                            m[i / 4][l] |= u32::from(byte) << (8 * (i % 4));
                        }
                    }
                }
                let mut flags = 0;
                if b == 0 {
                    flags |= CHUNK_START;
                }
                if b == blocks - 1 {
                    flags |= CHUNK_END | last;
                }
                compress(&mut cv, &m, counter, block_len as u32, flags);
            }
            for l in 0..group.len() {
                let mut bytes = [0u8; OUT_LEN];
                for (w, words) in cv.iter().enumerate() {
                    bytes[4 * w..4 * w + 4].copy_from_slice(&words[l].to_le_bytes());
                }
                out.push(bytes);
            }
        }
        out
    }

    /// The little-endian word at the start of `bytes`.
    #[inline(always)]
    fn word(bytes: &[u8]) -> u32 {
        u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"))
    }

    /// The order of the message words in each of the 7 rounds (the specification's
    /// permutation applied round after round).
    const SCHEDULE: [[usize; 16]; 7] = [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8],
        [3, 4, 10, 12, 13, 2, 7, 14, 6, 5, 9, 0, 11, 15, 8, 1],
        [10, 7, 12, 9, 14, 3, 13, 15, 4, 0, 11, 2, 5, 8, 1, 6],
        [12, 13, 9, 11, 15, 10, 14, 8, 7, 2, 5, 3, 0, 1, 6, 4],
        [9, 14, 11, 5, 8, 12, 15, 1, 13, 3, 0, 10, 2, 6, 4, 7],
        [11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13],
    ];

    /// BLAKE3's compression function (specification, section 2.2) in every lane: the
    /// chaining values `cv` (word-major) absorb the blocks `m`; counter, block length and
    /// flags are the same in every lane.
    #[inline(always)]
    fn compress_in_lanes(
        cv: &mut [Words; 8],
        m: &[Words; 16],
        counter: u64,
        block_len: u32,
        flags: u8,
    ) {
        let splat = |x: u32| [x; LANES];
        let mut v: [Words; 16] = [
            cv[0],
            cv[1],
            cv[2],
            cv[3],
            cv[4],
            cv[5],
            cv[6],
            cv[7],
            splat(IV[0]),
            splat(IV[1]),
            splat(IV[2]),
            splat(IV[3]),
            splat(counter as u32),
            splat((counter >> 32) as u32),
            splat(block_len),
            splat(flags as u32),
        ];
        for s in &SCHEDULE {
            g(&mut v, [0, 4, 8, 12], &m[s[0]], &m[s[1]]);
            g(&mut v, [1, 5, 9, 13], &m[s[2]], &m[s[3]]);
            g(&mut v, [2, 6, 10, 14], &m[s[4]], &m[s[5]]);
            g(&mut v, [3, 7, 11, 15], &m[s[6]], &m[s[7]]);
            g(&mut v, [0, 5, 10, 15], &m[s[8]], &m[s[9]]);
            g(&mut v, [1, 6, 11, 12], &m[s[10]], &m[s[11]]);
            g(&mut v, [2, 7, 8, 13], &m[s[12]], &m[s[13]]);
            g(&mut v, [3, 4, 9, 14], &m[s[14]], &m[s[15]]);
        }
        for w in 0..8 {
            for l in 0..LANES {
                cv[w][l] = v[w][l] ^ v[w + 8][l];
            }
        }
    }

    /// [`compress_in_lanes`] in AVX-512 registers, one per state word (the compiler's
    /// vectorization of the arrays kept the state in memory, at twice the time).
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn compress_avx512(
        cv: &mut [Words; 8],
        m: &[Words; 16],
        counter: u64,
        block_len: u32,
        flags: u8,
    ) {
        use std::arch::x86_64::*;
        let mut mw = [_mm512_setzero_si512(); 16];
        for (reg, words) in mw.iter_mut().zip(m) {
            // SAFETY: `words` is 16 `u32`s, the 64 bytes of a register; the load is unaligned.
            *reg = unsafe { _mm512_loadu_si512(words.as_ptr().cast()) };
        }
        let mut v = [_mm512_setzero_si512(); 16];
        for (reg, words) in v.iter_mut().zip(cv.iter()) {
            // SAFETY: as above.
            *reg = unsafe { _mm512_loadu_si512(words.as_ptr().cast()) };
        }
        for i in 0..4 {
            v[8 + i] = _mm512_set1_epi32(IV[i] as i32);
        }
        v[12] = _mm512_set1_epi32(counter as u32 as i32);
        v[13] = _mm512_set1_epi32((counter >> 32) as u32 as i32);
        v[14] = _mm512_set1_epi32(block_len as i32);
        v[15] = _mm512_set1_epi32(flags as i32);
        for s in &SCHEDULE {
            g_avx512(&mut v, [0, 4, 8, 12], mw[s[0]], mw[s[1]]);
            g_avx512(&mut v, [1, 5, 9, 13], mw[s[2]], mw[s[3]]);
            g_avx512(&mut v, [2, 6, 10, 14], mw[s[4]], mw[s[5]]);
            g_avx512(&mut v, [3, 7, 11, 15], mw[s[6]], mw[s[7]]);
            g_avx512(&mut v, [0, 5, 10, 15], mw[s[8]], mw[s[9]]);
            g_avx512(&mut v, [1, 6, 11, 12], mw[s[10]], mw[s[11]]);
            g_avx512(&mut v, [2, 7, 8, 13], mw[s[12]], mw[s[13]]);
            g_avx512(&mut v, [3, 4, 9, 14], mw[s[14]], mw[s[15]]);
        }
        for (i, words) in cv.iter_mut().enumerate() {
            let out = _mm512_xor_si512(v[i], v[i + 8]);
            // SAFETY: as above; the store is unaligned.
            unsafe { _mm512_storeu_si512(words.as_mut_ptr().cast(), out) };
        }
    }

    /// [`g`] in AVX-512 registers.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn g_avx512(
        v: &mut [std::arch::x86_64::__m512i; 16],
        [a, b, c, d]: [usize; 4],
        x: std::arch::x86_64::__m512i,
        y: std::arch::x86_64::__m512i,
    ) {
        use std::arch::x86_64::*;
        v[a] = _mm512_add_epi32(_mm512_add_epi32(v[a], v[b]), x);
        v[d] = _mm512_ror_epi32::<16>(_mm512_xor_si512(v[d], v[a]));
        v[c] = _mm512_add_epi32(v[c], v[d]);
        v[b] = _mm512_ror_epi32::<12>(_mm512_xor_si512(v[b], v[c]));
        v[a] = _mm512_add_epi32(_mm512_add_epi32(v[a], v[b]), y);
        v[d] = _mm512_ror_epi32::<8>(_mm512_xor_si512(v[d], v[a]));
        v[c] = _mm512_add_epi32(v[c], v[d]);
        v[b] = _mm512_ror_epi32::<7>(_mm512_xor_si512(v[b], v[c]));
    }

    /// The quarter-round G on the state words `[a, b, c, d]` of every lane.
    #[inline(always)]
    fn g(v: &mut [Words; 16], [a, b, c, d]: [usize; 4], x: &Words, y: &Words) {
        for l in 0..LANES {
            v[a][l] = v[a][l].wrapping_add(v[b][l]).wrapping_add(x[l]);
            v[d][l] = (v[d][l] ^ v[a][l]).rotate_right(16);
            v[c][l] = v[c][l].wrapping_add(v[d][l]);
            v[b][l] = (v[b][l] ^ v[c][l]).rotate_right(12);
            v[a][l] = v[a][l].wrapping_add(v[b][l]).wrapping_add(y[l]);
            v[d][l] = (v[d][l] ^ v[a][l]).rotate_right(8);
            v[c][l] = v[c][l].wrapping_add(v[d][l]);
            v[b][l] = (v[b][l] ^ v[c][l]).rotate_right(7);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The instruction sets this CPU has, each as the cap that allows it alone and the
    /// narrower ones: portable first.
    fn caps_of_this_cpu() -> Vec<Isa> {
        use crate::lanes::Vector;
        let mut vectors = vec![Vector::None];
        for cap in [Vector::Avx2, Vector::Avx512] {
            let cap = Isa {
                vector: cap,
                sha_ni: false,
            };
            let chosen = blake3_many::Kernels::within(cap).vector();
            if !vectors.contains(&chosen) {
                vectors.push(chosen);
            }
        }
        vectors
            .into_iter()
            .map(|vector| Isa {
                vector,
                sha_ni: false,
            })
            .collect()
    }

    /// Every compiled copy of the BLAKE3 path (the crate's kernels and the compression in
    /// lanes of the short blocks) gives `blake3::hash`, at the block and chunk boundaries,
    /// with and without the prefix byte, with fewer and more messages than lanes, and fewer
    /// and more than the chunks of a message: tests/many_leaves.rs runs only the one this CPU
    /// picks.
    #[test]
    fn blake3_digests_equal_blake3_hash_on_every_instruction_set() {
        let caps = caps_of_this_cpu();
        for cap in &caps {
            assert_eq!(blake3_many::Kernels::within(*cap).vector(), cap.vector);
        }
        let data: Vec<u8> = (0..40 * 4100u32).map(|i| (i * 31 % 251) as u8).collect();
        for prefix in [&[][..], &[0]] {
            for len in [1, 63, 64, 65, 1000, 1023, 1024, 1025, 2049, 3072, 4097] {
                for count in [1, 2, 3, 15, 16, 17, 40] {
                    let data = &data[..len * count];
                    let want: Vec<Digest> = data
                        .chunks_exact(len)
                        .map(|m| blake3::hash(&[prefix, m].concat()))
                        .map(|d| Digest::from_slice(d.as_bytes()))
                        .collect();
                    for &cap in &caps {
                        let mut got = Vec::new();
                        hash_each_within(cap, Algorithm::Blake3, prefix, data, len, &mut got);
                        assert_eq!(got, want, "{cap}: {prefix:?} ‖ {count} × {len}");
                    }
                }
            }
        }
    }
}
