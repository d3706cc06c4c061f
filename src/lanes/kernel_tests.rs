//! What the tests of the SIMD kernels share: a seeded generator, the note when the CPU cannot
//! run a kernel, the check against RustCrypto's scalar compression, message padding, a
//! known answer in every lane and the data for the short-message panic. Each kernel's tests
//! pass it a closure that makes the unsafe call, with its own SAFETY comment.

use std::array::from_fn;
use std::fmt::Debug;

/// SplitMix64: seeded, so that a failure repeats.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A random state of 32-bit words.
    pub(super) fn u32s<const W: usize>(&mut self) -> [u32; W] {
        from_fn(|_| self.next() as u32)
    }

    /// A random state of 64-bit words.
    pub(super) fn u64s<const W: usize>(&mut self) -> [u64; W] {
        from_fn(|_| self.next())
    }
}

/// Whether to skip a kernel's test because the CPU lacks `features` (`supported` is the
/// kernel's own check); says so on stderr when it does.
pub(super) fn lacks(supported: bool, features: &str) -> bool {
    if !supported {
        eprintln!("skipped: this CPU lacks {features}");
    }
    !supported
}

/// `kernel` against `scalar` (RustCrypto's compression over whole `B`-byte blocks) for each
/// of `block_counts`, eight times each: `N` random states (from `random_state`) and different
/// random data per lane, at random alignments and with up to a block of bytes past the
/// blocks that must not count.
pub(super) fn check_against_scalar<const N: usize, S, const B: usize>(
    rng: &mut Rng,
    block_counts: &[usize],
    random_state: impl Fn(&mut Rng) -> S,
    kernel: impl Fn(&mut [S; N], &[&[u8]; N], usize),
    scalar: impl Fn(&mut S, &[[u8; B]]),
) where
    S: Copy + PartialEq + Debug,
{
    for &blocks in block_counts {
        for _ in 0..8 {
            let mut states: [S; N] = from_fn(|_| random_state(rng));
            let offsets: [usize; N] = from_fn(|_| rng.below(B));
            let buffers: Vec<Vec<u8>> = offsets
                .iter()
                .map(|&offset| {
                    let len = offset + blocks * B + rng.below(B);
                    (0..len).map(|_| rng.next() as u8).collect()
                })
                .collect();
            let data: [&[u8]; N] = from_fn(|i| &buffers[i][offsets[i]..]);
            let mut expected = states;
            for (state, data) in expected.iter_mut().zip(data) {
                let whole: Vec<[u8; B]> = data[..blocks * B]
                    .chunks_exact(B)
                    .map(|b| b.try_into().unwrap())
                    .collect();
                scalar(state, &whole);
            }
            kernel(&mut states, &data, blocks);
            assert_eq!(states, expected, "{N} lanes, {blocks} blocks");
        }
    }
}

/// `message` padded to whole `block`-byte blocks, as MD5 (RFC 1321, 3.1-3.2) and SHA (FIPS
/// 180-4, 5.1) do: 0x80, zeros, then the length in bits in the last eighth of a block
/// (64 bits for 64-byte blocks, 128 for 128-byte ones), little-endian for MD5.
pub(super) fn padded(message: &[u8], block: usize, big_endian: bool) -> Vec<u8> {
    let field = block / 8;
    let bits = message.len() as u128 * 8;
    let mut padded = message.to_vec();
    padded.push(0x80);
    while padded.len() % block != block - field {
        padded.push(0);
    }
    if big_endian {
        padded.extend_from_slice(&bits.to_be_bytes()[16 - field..]);
    } else {
        padded.extend_from_slice(&bits.to_le_bytes()[..field]);
    }
    padded
}

/// The big-endian words of a SHA state, in hex: its digest.
pub(super) fn hex_be<W: std::fmt::LowerHex>(state: &[W]) -> String {
    let width = 2 * size_of::<W>();
    state.iter().map(|w| format!("{w:0width$x}")).collect()
}

/// SHA's padding of `message` (big-endian length) through every lane from `init`, all its
/// blocks in one call: every lane's digest is `expected`.
pub(super) fn known_answer_in_every_lane<const N: usize, const W: usize, T>(
    kernel: impl Fn(&mut [[T; W]; N], &[&[u8]; N], usize),
    block: usize,
    init: [T; W],
    message: &[u8],
    expected: &str,
) where
    T: Copy + std::fmt::LowerHex,
{
    let padded = padded(message, block, true);
    let blocks = padded.len() / block;
    let mut states = [init; N];
    kernel(&mut states, &[&padded[..]; N], blocks);
    for (i, state) in states.iter().enumerate() {
        assert_eq!(hex_be(state), expected, "lane {i} of {N}, {blocks} blocks");
    }
}

/// `kernel` on `N` messages of two `block`-byte blocks, the one in lane `short` a byte short:
/// the kernel must panic ("every message needs 2 blocks") before reading anything.
pub(super) fn one_message_short<const N: usize, S: Copy>(
    kernel: impl Fn(&mut [S; N], &[&[u8]; N], usize),
    block: usize,
    state: S,
    short: usize,
) {
    let long = vec![0; 2 * block];
    let mut data = [&long[..]; N];
    data[short] = &long[..2 * block - 1];
    kernel(&mut [state; N], &data, 2);
}
