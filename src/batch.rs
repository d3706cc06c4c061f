//! Many messages of one length at once, for the algorithms without a lanes kernel
//! ([`crate::lanes`]): BLAKE3, XXH3 and XXH128.
//!
//! The fixed-leaf layouts hash thousands of equal leaves per MiB, and the inner nodes over them,
//! each with a prefix byte. One [`crate::algorithm::Hasher`] per message spent most of the time
//! around the hash rather than in it: XXH3's boxed streaming state cost an allocation per leaf
//! (a third of the time of 1 KiB leaves), and BLAKE3's prefix byte shifts the data against its
//! 1 KiB chunks, so that every leaf ran as a tree of its own on one SIMD lane. Here BLAKE3
//! hashes the chunks of all the messages side by side in its SIMD kernel, then the parents of
//! all their trees level by level; XXH3 hashes each message in one call, without a state.

use crate::algorithm::{Algorithm, Digest};

/// Whether [`hash_each`] is faster than one [`crate::algorithm::Hasher`] per message.
pub fn pays(alg: Algorithm) -> bool {
    matches!(alg, Algorithm::Blake3 | Algorithm::Xxh3 | Algorithm::Xxh128)
}

/// The digests of `prefix ‖ m` for every message `m` of `len` bytes that `data` holds, in
/// order: what `alg.hash_parts(&[prefix, m])` gives for each, faster where [`pays`].
///
/// # Panics
/// If `len` is 0 or `data` is not a whole number of messages; callers cut their data so.
pub fn hash_each(alg: Algorithm, prefix: &[u8], data: &[u8], len: usize) -> Vec<Digest> {
    assert!(
        len > 0 && data.len().is_multiple_of(len),
        "whole messages of {len} bytes"
    );
    match alg {
        Algorithm::Blake3 => blake3_many::hash_each(prefix, data, len),
        Algorithm::Xxh3 | Algorithm::Xxh128 => xxh3_each(alg, prefix, data, len),
        _ => data
            .chunks_exact(len)
            .map(|m| alg.hash_parts(&[prefix, m]))
            .collect(),
    }
}

/// Messages at least this long go through one reused streaming state rather than a copy
/// behind the prefix: copying costs about as much as XXH3 hashes, so it pays only where
/// setting up the stream (about the time to hash a few hundred bytes) is the larger cost.
const XXH3_COPY_MAX: usize = 4096;

/// XXH3 (64 or 128 bits) of `prefix ‖ m` for every `m`: the one-shot functions on `m` itself
/// without a prefix, or on a copy behind the prefix in one reused buffer; long messages with a
/// prefix through one streaming state, reset for each.
fn xxh3_each(alg: Algorithm, prefix: &[u8], data: &[u8], len: usize) -> Vec<Digest> {
    use xxhash_rust::xxh3::{Xxh3Default, xxh3_64, xxh3_128};
    let digest = |message: &[u8]| match alg {
        Algorithm::Xxh3 => Digest::from_slice(&xxh3_64(message).to_be_bytes()),
        _ => Digest::from_slice(&xxh3_128(message).to_be_bytes()),
    };
    let messages = data.chunks_exact(len);
    if prefix.is_empty() {
        return messages.map(digest).collect();
    }
    if len <= XXH3_COPY_MAX {
        let mut buf = prefix.to_vec();
        return messages
            .map(|m| {
                buf.truncate(prefix.len());
                buf.extend_from_slice(m);
                digest(&buf)
            })
            .collect();
    }
    let mut state = Box::new(Xxh3Default::new());
    messages
        .map(|m| {
            state.reset();
            state.update(prefix);
            state.update(m);
            match alg {
                Algorithm::Xxh3 => Digest::from_slice(&state.digest().to_be_bytes()),
                _ => Digest::from_slice(&state.digest128().to_be_bytes()),
            }
        })
        .collect()
}

/// BLAKE3 over many messages of one length, on the crate's own compression kernels.
///
/// It uses `blake3::platform`, which the crate exports `#[doc(hidden)]` (for its benchmarks)
/// without a stability promise: the stable `hazmat` module hashes one subtree per call, on
/// as many lanes as that subtree has chunks, which is the very cost this module avoids for
/// leaves of a few chunks. Cargo.toml therefore pins the exact blake3 version; the tests
/// compare every path with `blake3::hash` at every chunk and block boundary.
mod blake3_many {
    use blake3::platform::{self, Platform};
    use blake3::{BLOCK_LEN, CHUNK_LEN, IncrementCounter, OUT_LEN};

    use crate::algorithm::Digest;

    // The domain flags and the key of the BLAKE3 specification (sections 2.1 and 2.2).
    const CHUNK_START: u8 = 1 << 0;
    const CHUNK_END: u8 = 1 << 1;
    const PARENT: u8 = 1 << 2;
    const ROOT: u8 = 1 << 3;
    const IV: [u32; 8] = [
        0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB,
        0x5BE0CD19,
    ];

    /// About how many input bytes one round of [`hash_group`] takes: the chaining values it
    /// keeps are a thirty-second of that.
    const GROUP_BYTES: usize = 1 << 20;

    pub(super) fn hash_each(prefix: &[u8], data: &[u8], len: usize) -> Vec<Digest> {
        assert!(prefix.len() < BLOCK_LEN, "a prefix shorter than a block");
        let platform = Platform::detect();
        let per_group = (GROUP_BYTES / len).max(1);
        let mut digests = Vec::with_capacity(data.len() / len);
        for group in data.chunks(per_group * len) {
            let messages: Vec<Message> = group
                .chunks_exact(len)
                .map(|data| Message { prefix, data })
                .collect();
            if prefix.len() + len <= CHUNK_LEN {
                single_chunks(platform, &messages, &mut digests);
            } else {
                chunk_trees(platform, &messages, &mut digests);
            }
        }
        digests
    }

    /// Bytes `0..N` of every message: in place without a prefix, else copied into `store`.
    fn heads<'a, const N: usize>(
        messages: &[Message<'a>],
        store: &'a mut Vec<[u8; N]>,
    ) -> Vec<&'a [u8; N]> {
        if messages.first().is_none_or(|m| m.prefix.is_empty()) {
            return messages.iter().map(|m| m.in_place(0)).collect();
        }
        store.resize(messages.len(), [0; N]);
        for (msg, head) in messages.iter().zip(store.iter_mut()) {
            msg.copy(0, head);
        }
        store.iter().collect()
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

        /// Bytes `start..start + out.len()` of the message into `out`.
        fn copy(&self, start: usize, out: &mut [u8]) {
            let p = self.prefix.len();
            let end = start + out.len();
            let from_prefix = start.min(p)..end.min(p);
            let head = from_prefix.len();
            out[..head].copy_from_slice(&self.prefix[from_prefix]);
            out[head..].copy_from_slice(&self.data[start.max(p) - p..end - p]);
        }

        /// Bytes `start..start + N` of the message where they lie whole in its data.
        fn in_place<const N: usize>(&self, start: usize) -> &'a [u8; N] {
            let at = start - self.prefix.len();
            self.data[at..at + N].try_into().expect("N bytes")
        }

        /// The chaining value of the last chunk, bytes `start..` of the message (at most a
        /// chunk), as chunk number `counter`, continuing from `cv` after its first `skip`
        /// blocks, one block after another; `last` flags its last block (`ROOT` for the
        /// digest of a message of one chunk).
        fn tail(
            &self,
            platform: Platform,
            mut cv: [u32; 8],
            start: usize,
            skip: usize,
            counter: u64,
            last: u8,
        ) -> [u8; OUT_LEN] {
            let len = self.len() - start;
            let blocks = len.div_ceil(BLOCK_LEN).max(1);
            for b in skip..blocks {
                let at = b * BLOCK_LEN;
                let block_len = (len - at).min(BLOCK_LEN);
                let mut block = [0u8; BLOCK_LEN];
                self.copy(start + at, &mut block[..block_len]);
                let mut flags = 0;
                if b == 0 {
                    flags |= CHUNK_START;
                }
                if b == blocks - 1 {
                    flags |= CHUNK_END | last;
                }
                platform.compress_in_place(&mut cv, &block, block_len as u8, counter, flags);
            }
            platform::le_bytes_from_words_32(&cv)
        }
    }

    /// The digests of messages of one chunk or less: a whole 1 KiB chunk or a first block
    /// of all of them at once in SIMD lanes, the blocks after it one by one.
    fn single_chunks(platform: Platform, messages: &[Message], digests: &mut Vec<Digest>) {
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
            digests.extend(
                messages
                    .iter()
                    .map(|msg| Digest::from_slice(&msg.tail(platform, IV, 0, 0, 0, ROOT))),
            );
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
        let firsts = out.chunks_exact(OUT_LEN);
        if m == BLOCK_LEN {
            digests.extend(firsts.map(Digest::from_slice));
            return;
        }
        for (msg, first) in messages.iter().zip(firsts) {
            let cv = platform::words_from_le_bytes_32(first.try_into().expect("a CV"));
            digests.push(Digest::from_slice(&msg.tail(platform, cv, 0, 1, 0, ROOT)));
        }
    }

    /// The digests of messages of more than one chunk: their whole chunks in SIMD lanes, a
    /// short last chunk one block after another, then the parents of all their trees level
    /// by level in SIMD lanes.
    fn chunk_trees(platform: Platform, messages: &[Message], digests: &mut Vec<Digest>) {
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
            for (msg, out) in messages.iter().zip(cvs.chunks_exact_mut(chunks * OUT_LEN)) {
                let cv = msg.tail(platform, IV, start, 0, whole as u64, 0);
                out[whole * OUT_LEN..].copy_from_slice(&cv);
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
}
