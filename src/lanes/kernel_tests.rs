//! The tests of every kernel, driven by the kernel table: each row of [`SIMD`] this CPU runs
//! (and the widths that only the benchmarks run, [`BENCH_WIDTHS`]) is called directly, for
//! every algorithm it hashes, and checked against RustCrypto's block functions and the
//! published digests; every [`Kernel`] is checked for what the lane set adds (idle lanes, the
//! narrower kernel for few busy lanes). A new kernel is tested by its row. `tests/lanes.rs` checks whole lane sets
//! against one stream and the NIST vectors, through the public API.

use std::fmt::Debug;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::family::{Family, with_family};
use super::kernel::{Run, SIMD, Spec};
use super::{Kernel, MAX_LANES};
use crate::algorithm::{Algorithm, Digest};

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

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// A random chaining state of `alg`: its initial state through a random block.
    fn state<F: Family>(&mut self, alg: Algorithm) -> F::State {
        let mut state = F::initial(alg);
        F::compress_portable(&mut state, &self.bytes(F::BLOCK));
        state
    }
}

/// A kernel called directly: a row of the table, or a width that only a benchmark runs.
#[derive(Clone, Copy)]
struct Row {
    names: &'static [(Algorithm, &'static str)],
    lanes: usize,
    runs: fn() -> bool,
    run: Run,
}

impl From<&Spec> for Row {
    fn from(spec: &Spec) -> Row {
        Row {
            names: spec.names,
            lanes: spec.lanes,
            runs: spec.runs,
            run: spec.run,
        }
    }
}

/// The row of the `$module::compress::<$lanes>` kernel of `$alg`, whose compression function
/// has the same name.
#[cfg(target_arch = "x86_64")]
macro_rules! width {
    ($alg:ident, $module:ident, $lanes:literal, $name:literal) => {
        Row {
            names: &[(Algorithm::$alg, $name)],
            lanes: $lanes,
            runs: super::$module::supported,
            run: super::kernel::run!($alg, super::$module::compress::<$lanes>),
        }
    };
}

/// The widths of the SHA-NI kernels that no row of the table runs but `benches/sha_ni.rs`
/// measures.
#[cfg(target_arch = "x86_64")]
const BENCH_WIDTHS: &[Row] = &[
    width!(Sha1, sha1_ni, 1, "sha1-ni-x1"),
    width!(Sha1, sha1_ni, 3, "sha1-ni-x3"),
    width!(Sha256, sha256_ni, 1, "sha256-ni-x1"),
    width!(Sha256, sha256_ni, 3, "sha256-ni-x3"),
    width!(Sha256, sha256_ni, 4, "sha256-ni-x4"),
];
#[cfg(not(target_arch = "x86_64"))]
const BENCH_WIDTHS: &[Row] = &[];

#[test]
fn every_kernel_in_the_table_matches_rustcrypto_and_the_published_digests() {
    let rows = SIMD
        .iter()
        .map(Row::from)
        .chain(BENCH_WIDTHS.iter().copied());
    for row in rows {
        for &(alg, name) in row.names {
            if !(row.runs)() {
                eprintln!("skipped {name}: this CPU lacks its instructions");
                continue;
            }
            with_family!(alg, F => Case::<F>::new(row, alg, name).check_all());
        }
    }
}

/// The published digests: RFC 1321's test suite (A.5) for MD5; for SHA, NIST's examples for
/// FIPS 180: "abc" (one block) and a message of 56 or 112 bytes (two blocks).
fn known_answers(alg: Algorithm) -> &'static [(&'static str, &'static str)] {
    const SHA_TWO_BLOCKS: &str = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    const SHA512_TWO_BLOCKS: &str = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn\
                                     hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    match alg {
        Algorithm::Md5 => &[
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                "abcdefghijklmnopqrstuvwxyz",
                "c3fcd3d76192e4007dfb496cca67e13b",
            ),
            (
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                "d174ab98d277d9f5a5611c2c9f419d9f",
            ),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ],
        Algorithm::Sha1 => &[
            ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
            (SHA_TWO_BLOCKS, "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        ],
        Algorithm::Sha224 => &[
            (
                "abc",
                "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
            ),
            (
                SHA_TWO_BLOCKS,
                "75388b16512776cc5dba5da1fd890150b0c6455cb4f58b1952522525",
            ),
        ],
        Algorithm::Sha256 => &[
            (
                "abc",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (
                SHA_TWO_BLOCKS,
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
            ),
        ],
        Algorithm::Sha384 => &[
            (
                "abc",
                "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded163\
                 1a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7",
            ),
            (
                SHA512_TWO_BLOCKS,
                "09330c33f71147e83d192fc782cd1b4753111b173b3b05d2\
                 2fa08086e3b0f712fcc7c71a557e2db966c3e9fa91746039",
            ),
        ],
        Algorithm::Sha512 => &[
            (
                "abc",
                "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a\
                 2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
            ),
            (
                SHA512_TWO_BLOCKS,
                "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018\
                 501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909",
            ),
        ],
        _ => unreachable!("{alg} has no kernel"),
    }
}

/// `message` padded to whole `block`-byte blocks, as MD5 (RFC 1321, 3.1-3.2) and SHA (FIPS
/// 180-4, 5.1) do: 0x80, zeros, then the length in bits in the last eighth of a block
/// (64 bits for 64-byte blocks, 128 for 128-byte ones), little-endian for MD5. Written out
/// apart from the lane set's padding, which `tests/lanes.rs` checks.
fn padded(message: &[u8], block: usize, big_endian: bool) -> Vec<u8> {
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

/// A row's kernel for one of its algorithms, on the states of its compression function `F`.
struct Case<'a, F> {
    name: &'a str,
    alg: Algorithm,
    lanes: usize,
    run: Run,
    family: std::marker::PhantomData<F>,
}

impl<'a, F: Family> Case<'a, F>
where
    F::State: PartialEq + Debug,
{
    /// # Panics
    /// If the CPU does not run the row's kernel: calling it would not be sound.
    fn new(row: Row, alg: Algorithm, name: &'a str) -> Self {
        assert!((row.runs)(), "the CPU runs {name}");
        Case {
            name,
            alg,
            lanes: row.lanes,
            run: row.run,
            family: std::marker::PhantomData,
        }
    }

    /// The kernel over `states` and `data`, one per lane.
    fn kernel(&self, states: &mut [F::State], data: &[&[u8]], blocks: usize) {
        // SAFETY: `new` checked that the CPU runs the kernel.
        unsafe { (self.run)(F::view(states), data, blocks) }
    }

    fn check_all(&self) {
        let mut rng = Rng(self.lanes as u64 ^ self.name.len() as u64);
        self.matches_the_block_function(&mut rng);
        self.known_answers_in_every_lane();
        self.messages_of_every_length_side_by_side(&mut rng);
        self.short_data_panics();
    }

    /// Random states and different random data per lane, at random alignments and with up to a
    /// block of bytes past the blocks that must not count, against RustCrypto's block function,
    /// for 0, 1, 2, 9, 17 and 40 blocks (40: enough for the MD5 kernel of 32 lanes to run its
    /// two groups one after the other where it does, `md5_avx512::SPLIT_BLOCKS`).
    fn matches_the_block_function(&self, rng: &mut Rng) {
        let Case {
            name, alg, lanes, ..
        } = *self;
        for blocks in [0, 1, 2, 9, 17, 40] {
            for _ in 0..8 {
                let mut states: Vec<F::State> = (0..lanes).map(|_| rng.state::<F>(alg)).collect();
                let buffers: Vec<(usize, Vec<u8>)> = (0..lanes)
                    .map(|_| {
                        let offset = rng.below(F::BLOCK);
                        let len = offset + blocks * F::BLOCK + rng.below(F::BLOCK);
                        (offset, rng.bytes(len))
                    })
                    .collect();
                let data: Vec<&[u8]> = buffers.iter().map(|(o, b)| &b[*o..]).collect();
                let mut expected = states.clone();
                for (state, data) in expected.iter_mut().zip(&data) {
                    F::compress_portable(state, &data[..blocks * F::BLOCK]);
                }
                self.kernel(&mut states, &data, blocks);
                assert_eq!(states, expected, "{name}: {lanes} lanes, {blocks} blocks");
            }
        }
    }

    /// Each known answer, padded, in every lane from the initial state, all its blocks in one call.
    fn known_answers_in_every_lane(&self) {
        let Case {
            name, alg, lanes, ..
        } = *self;
        for &(message, expected) in known_answers(alg) {
            let padded = padded(message.as_bytes(), F::BLOCK, F::BIG_ENDIAN);
            let blocks = padded.len() / F::BLOCK;
            let mut states = vec![F::initial(alg); lanes];
            self.kernel(&mut states, &vec![&padded[..]; lanes], blocks);
            for (lane, state) in states.iter().enumerate() {
                let digest = F::digest(alg, state).to_hex();
                assert_eq!(digest, expected, "{name} lane {lane}, {blocks} blocks");
            }
        }
    }

    /// The known answers and messages of every length from 0 to two blocks, side by side: lane
    /// `i` of a batch holds the batch's message `i`, so that lanes end after different numbers of
    /// blocks. The kernel runs one block at a time, as the lane set runs it: a lane whose message
    /// is done hashes another lane's block, and gets its state back.
    fn messages_of_every_length_side_by_side(&self, rng: &mut Rng) {
        let Case {
            name, alg, lanes, ..
        } = *self;
        let known = known_answers(alg)
            .iter()
            .map(|&(m, d)| (m.as_bytes().to_vec(), Digest::from_hex(d).unwrap()));
        let lengths = (0..=2 * F::BLOCK).map(|len| {
            let m = rng.bytes(len);
            let d = alg.hash(&m);
            (m, d)
        });
        let messages: Vec<(Vec<u8>, Digest)> = known.chain(lengths).collect();
        for batch in messages.chunks(lanes) {
            let message = |lane: usize| &batch[lane % batch.len()];
            let padded: Vec<Vec<u8>> = (0..lanes)
                .map(|lane| padded(&message(lane).0, F::BLOCK, F::BIG_ENDIAN))
                .collect();
            let longest = (0..lanes).max_by_key(|&l| padded[l].len()).unwrap();
            let mut states = vec![F::initial(alg); lanes];
            for at in (0..padded[longest].len()).step_by(F::BLOCK) {
                let done = |lane: usize| padded[lane].len() <= at;
                let data: Vec<&[u8]> = (0..lanes)
                    .map(|lane| &padded[if done(lane) { longest } else { lane }][at..])
                    .collect();
                let before = states.clone();
                self.kernel(&mut states, &data, 1);
                for lane in (0..lanes).filter(|&l| done(l)) {
                    states[lane] = before[lane];
                }
            }
            for (lane, state) in states.iter().enumerate() {
                let (m, expected) = message(lane);
                let got = F::digest(alg, state);
                assert_eq!(got, *expected, "{name} lane {lane}: {} bytes", m.len());
            }
        }
    }

    /// Two blocks in every lane but one, a byte short, in each lane in turn: the kernel must
    /// refuse before it reads anything, or writes a state.
    fn short_data_panics(&self) {
        let Case {
            name, alg, lanes, ..
        } = *self;
        let long = vec![0; 2 * F::BLOCK];
        for short in 0..lanes {
            let mut data = vec![&long[..]; lanes];
            data[short] = &long[..2 * F::BLOCK - 1];
            let mut states = vec![F::initial(alg); lanes];
            let panic = catch_unwind(AssertUnwindSafe(|| self.kernel(&mut states, &data, 2)))
                .expect_err(&format!("{name} hashed lane {short} without its blocks"));
            let message = panic
                .downcast_ref::<String>()
                .map_or("", String::as_str)
                .to_owned();
            assert!(
                message.contains("needs 2 blocks"),
                "{name} lane {short}: {message}"
            );
            assert_eq!(states, vec![F::initial(alg); lanes], "{name} lane {short}");
        }
    }
}

/// Every lane of `kernel` that has data hashes it from its own state; the others keep
/// theirs: with busy lanes spread over the whole set, with the second half idle, with one
/// busy lane (where a kernel with a `fewer` runs that one, on the busy lanes packed), and
/// with all lanes but one busy.
fn idle_lanes_keep_their_state<F: Family>(kernel: Kernel, rng: &mut Rng)
where
    F::State: PartialEq + Debug,
{
    let n = kernel.lanes();
    let block = rng.bytes(F::BLOCK);
    let spread = |lane: usize| lane < n && lane.is_multiple_of(3);
    let first_half = |lane: usize| lane < n / 2 && lane.is_multiple_of(3);
    let one = |lane: usize| lane == n - 1;
    let all_but_one = |lane: usize| lane < n && lane != 1;
    for busy in [
        &spread as &dyn Fn(usize) -> bool,
        &first_half,
        &one,
        &all_but_one,
    ] {
        let initial: [F::State; MAX_LANES] =
            std::array::from_fn(|_| rng.state::<F>(kernel.algorithm()));
        let mut states = initial;
        let data = std::array::from_fn(|l| busy(l).then_some(&block[..]));
        kernel.compress::<F>(&mut states, &data, 1);
        for (lane, got) in states.iter().enumerate() {
            let mut expected = initial[lane];
            if busy(lane) {
                F::compress_portable(&mut expected, &block);
            }
            assert_eq!(*got, expected, "{kernel} lane {lane}");
        }
    }
}

/// Busy lanes at random places among the kernel's lanes, as many as each count of
/// [`BUSY_COUNTS`] that fits, with random states and 1 to 3 random blocks each: each busy
/// lane's state is the block function's, each idle lane's is untouched. The counts are either
/// side of every multiple of eight, where a kernel of groups of eight or sixteen hands its
/// busy lanes to a narrower one (MD5 in AVX2: up to 8 of 16 to one group).
fn partly_busy_lanes_hash_as_the_block_function<F: Family>(kernel: Kernel, rng: &mut Rng)
where
    F::State: PartialEq + Debug,
{
    let n = kernel.lanes();
    for &count in BUSY_COUNTS.iter().filter(|&&c| c <= n) {
        let mut lanes: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            lanes.swap(i, rng.below(i + 1));
        }
        let busy = &lanes[..count];
        let blocks = 1 + rng.below(3);
        let buffers: Vec<Vec<u8>> = (0..n).map(|_| rng.bytes(blocks * F::BLOCK)).collect();
        let initial: [F::State; MAX_LANES] =
            std::array::from_fn(|_| rng.state::<F>(kernel.algorithm()));
        let mut states = initial;
        let data = std::array::from_fn(|l| busy.contains(&l).then(|| &buffers[l][..]));
        kernel.compress::<F>(&mut states, &data, blocks);
        for (lane, got) in states.iter().enumerate() {
            let mut expected = initial[lane];
            if busy.contains(&lane) {
                F::compress_portable(&mut expected, &buffers[lane]);
            }
            assert_eq!(*got, expected, "{kernel}: lane {lane}, {count} busy");
        }
    }
}

/// The counts of busy lanes [`partly_busy_lanes_hash_as_the_block_function`] tries.
const BUSY_COUNTS: [usize; 10] = [1, 8, 9, 16, 17, 23, 24, 25, 31, 32];

#[test]
fn partly_busy_lane_sets_hash_each_busy_lane_in_every_kernel() {
    let mut rng = Rng(0xb05e);
    for alg in Algorithm::ALL {
        for kernel in kernels_under_every_cap(alg) {
            with_family!(alg, F => partly_busy_lanes_hash_as_the_block_function::<F>(kernel, &mut rng));
        }
    }
}

#[test]
fn idle_lanes_keep_their_state_in_every_kernel() {
    let mut rng = Rng(0x1d1e);
    for alg in Algorithm::ALL {
        for kernel in Kernel::available(alg) {
            with_family!(alg, F => idle_lanes_keep_their_state::<F>(kernel, &mut rng));
        }
    }
}

/// The lengths where the padding changes shape, for 64- and 128-byte blocks: empty, one byte,
/// the last length whose padding fits the block (55, 111; 119 with a one-byte prefix in two
/// 64-byte blocks), the first that takes another block (56, 112, 120), a byte either side of
/// one and two 64-byte blocks, and of a 1 KiB leaf, and a 4 KiB one.
const BOUNDARY_LENGTHS: [usize; 18] = [
    0, 1, 55, 56, 63, 64, 65, 111, 112, 119, 120, 127, 128, 129, 1023, 1024, 1025, 4096,
];

/// Every kernel of `alg` this CPU runs (on a CPU with AVX-512, the AVX2 ones too), each also
/// as every cap chooses it: `sha256-avx512-16` with and without the SHA-NI pairs it hands
/// few busy lanes to.
fn kernels_under_every_cap(alg: Algorithm) -> Vec<Kernel> {
    let caps = ["avx2-nosha", "avx2", "avx512-nosha", "avx512"];
    let chosen = caps.map(|cap| Kernel::choose(alg, cap.parse().expect("a cap")));
    let mut kernels = Kernel::available(alg);
    for kernel in chosen.into_iter().flatten() {
        if !kernels.contains(&kernel) {
            kernels.push(kernel);
        }
    }
    kernels
}

/// Runs of messages of one length (a fixed layout's leaves, a level's inner nodes) skip the
/// job manager: the whole blocks are read in place, the prefix's block and the padded tail
/// copied. At every boundary length, with and without a prefix, for every number of messages
/// from none to two full sets and one more (full groups straight through the kernel, the last
/// partial one through a narrower kernel where there is one), each digest is one stream's.
#[test]
fn every_kernel_hashes_runs_of_one_length_as_one_stream() {
    let mut rng = Rng(0x0e1e);
    for alg in Algorithm::ALL
        .into_iter()
        .filter(|&a| Kernel::portable(a).is_some())
    {
        let kernels = kernels_under_every_cap(alg);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let avx2 = kernels.iter().any(|k| k.name().contains("-avx2-"));
            assert!(avx2, "{alg}: the AVX2 kernels are tested on this CPU");
        }
        for kernel in kernels {
            for len in BOUNDARY_LENGTHS {
                let messages: Vec<Vec<u8>> = (0..=2 * kernel.lanes() + 1)
                    .map(|_| rng.bytes(len))
                    .collect();
                let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
                for prefix in [&b""[..], b"\x00"] {
                    let expected: Vec<Digest> =
                        refs.iter().map(|m| alg.hash_parts(&[prefix, m])).collect();
                    for count in 0..=refs.len() {
                        let got = super::hash_many(kernel, prefix, &refs[..count]);
                        assert_eq!(
                            got,
                            expected[..count],
                            "{kernel}: {count} × {len} bytes, prefix {prefix:?}"
                        );
                    }
                }
            }
        }
    }
}

/// Every kernel the CPU runs (on a CPU with AVX-512, the AVX2 ones too), through a whole lane
/// set, against the single-stream hash: the boundary lengths and random ones up to 40 blocks,
/// shuffled so that the lanes of a step hold messages of very different lengths and finish
/// at different steps, with and without a prefix (that of RFC 6962's leaves), and as many
/// messages as leave the last step's lanes partly idle (which runs a `fewer` kernel).
#[test]
fn every_kernel_hashes_boundary_and_random_lengths_side_by_side_as_one_stream() {
    let mut rng = Rng(0x51de);
    for alg in Algorithm::ALL {
        for kernel in Kernel::available(alg) {
            let lanes = kernel.lanes();
            let block = with_family!(alg, F => F::BLOCK);
            let mut lengths = BOUNDARY_LENGTHS.to_vec();
            lengths.extend((0..3 * lanes + 1).map(|_| rng.below(40 * block + 1)));
            for i in (1..lengths.len()).rev() {
                lengths.swap(i, rng.below(i + 1));
            }
            let messages: Vec<Vec<u8>> = lengths.iter().map(|&len| rng.bytes(len)).collect();
            let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
            for prefix in [&b""[..], b"\x00"] {
                let got = super::hash_many(kernel, prefix, &refs);
                for (message, digest) in messages.iter().zip(got) {
                    let expected = alg.hash(&[prefix, message].concat());
                    assert_eq!(digest, expected, "{kernel}: {} bytes", message.len());
                }
            }
        }
    }
}
