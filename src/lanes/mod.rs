//! Multi-buffer hashing: many independent messages hashed at once on one core.
//!
//! MD5 has no hardware instruction and one stream of it is bound by the latency of its 64
//! dependent steps per block. The leaves of a Merkle tree are independent messages, so a core
//! can instead run 16 of them side by side in SIMD registers ([`Kernel::avx2`]: two groups of
//! eight 32-bit lanes), several times the throughput of one stream.
//!
//! [`Md5Lanes`] is the job manager, after the one of Intel's isa-l_crypto: a message claims a
//! lane ([`Md5Lanes::start`]), its bytes arrive as a stream of chunks ([`Md5Lanes::push`]) that
//! the lane set holds, without copying, until they are hashed, and it ends with
//! [`Md5Lanes::finish`]. [`Md5Lanes::poll`] runs the kernel over the blocks that every busy
//! lane has and hands back, as [`Event`]s, the chunks it is done with and the digests of
//! finished messages, whose lanes are then free for the next message. Each lane buffers its
//! own partial block and pads its own message, so messages of any lengths mix; lanes without
//! a message compute on another lane's data and their result is dropped.
//!
//! ```
//! use mtsum::Algorithm;
//! use mtsum::lanes::{self, Event, Kernel, Md5Lanes};
//!
//! let messages: [&[u8]; 3] = [b"", b"abc", &[7; 1000]];
//! let mut set = Md5Lanes::new();
//! for (i, m) in messages.iter().enumerate() {
//!     let lane = set.start(i).unwrap();
//!     set.push(lane, *m); // a message may take any number of pushes
//!     set.finish(lane);
//! }
//! let mut digests = [None; 3];
//! while let Some(event) = set.poll() {
//!     if let Event::Finished(i, digest) = event {
//!         digests[i] = Some(digest);
//!     }
//! }
//! for (m, d) in messages.iter().zip(digests) {
//!     assert_eq!(d, Some(Algorithm::Md5.hash(m)));
//! }
//! // The same, for messages held in memory:
//! assert_eq!(lanes::hash_many(Kernel::detect(), b"", &messages)[1], Algorithm::Md5.hash(b"abc"));
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::sync::OnceLock;

use crate::algorithm::{Algorithm, Digest};

#[cfg(target_arch = "x86_64")]
mod md5_avx2;
#[cfg(target_arch = "x86_64")]
mod md5_avx512;
mod md5_scalar;
#[cfg(target_arch = "x86_64")]
mod sha1_ni;
#[cfg(target_arch = "x86_64")]
mod sha256_ni;

#[cfg(target_arch = "x86_64")]
#[doc(hidden)]
pub use md5_avx512::bench_compress_md5_avx512;
#[cfg(target_arch = "x86_64")]
#[doc(hidden)]
pub use sha1_ni::bench_compress_sha1;
#[cfg(target_arch = "x86_64")]
#[doc(hidden)]
pub use sha256_ni::bench_compress_sha256;

/// How many messages a lane set hashes at once, whatever the kernel (so that scheduling, and
/// what the tests exercise, is the same on every CPU).
pub const LANES: usize = 16;

/// The algorithms that have lane sets.
pub const LANE_ALGORITHMS: [Algorithm; 1] = [Algorithm::Md5];

/// The most messages any kernel hashes at once.
pub const MAX_LANES: usize = LANES;

/// The environment variable that makes [`Kernel::detect`] choose the portable kernel (any
/// value but empty or `0`): for tests, and for comparing kernels.
pub const FORCE_PORTABLE_VAR: &str = "MTSUM_FORCE_PORTABLE";

/// An MD5 compression kernel for a lane set. A value exists only for kernels this CPU runs:
/// the SIMD constructors check the CPU's features, which is what makes calling the kernels
/// sound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Kernel(Imp);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Imp {
    Portable,
    /// Two groups of eight lanes interleaved step by step.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// Two groups of eight lanes one after the other: only to measure what interleaving gains.
    #[cfg(target_arch = "x86_64")]
    Avx2Single,
}

impl Kernel {
    /// The kernel for this CPU, chosen once per process: AVX2 where the CPU has it, unless
    /// [`FORCE_PORTABLE_VAR`] is set; the portable kernel otherwise.
    pub fn detect() -> Kernel {
        static CHOSEN: OnceLock<Kernel> = OnceLock::new();
        *CHOSEN.get_or_init(|| Kernel::choose(std::env::var_os(FORCE_PORTABLE_VAR)))
    }

    /// The choice of [`Kernel::detect`], given the value of [`FORCE_PORTABLE_VAR`].
    fn choose(force_portable: Option<std::ffi::OsString>) -> Kernel {
        let forced = force_portable.is_some_and(|v| !v.is_empty() && v != "0");
        match Kernel::avx2() {
            Some(k) if !forced => k,
            _ => Kernel::portable(),
        }
    }

    /// The kernel to hash many messages with in place of one stream at a time: that of
    /// [`Kernel::detect`], unless it is the portable one (no faster than one stream).
    pub fn multi_buffer() -> Option<Kernel> {
        Some(Kernel::detect()).filter(|k| *k != Kernel::portable())
    }

    /// The portable kernel: RustCrypto's scalar MD5, one lane after another. Runs anywhere,
    /// no faster than one stream.
    pub fn portable() -> Kernel {
        Kernel(Imp::Portable)
    }

    /// AVX2, two interleaved groups of eight lanes; `None` if the CPU lacks AVX2.
    pub fn avx2() -> Option<Kernel> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Some(Kernel(Imp::Avx2));
        }
        None
    }

    /// AVX2 with the two groups of eight lanes hashed one after the other rather than
    /// interleaved; `None` if the CPU lacks AVX2. Slower than [`Kernel::avx2`]: it exists to
    /// measure what the interleaving gains.
    pub fn avx2_uninterleaved() -> Option<Kernel> {
        Kernel::avx2().map(|_| {
            #[cfg(target_arch = "x86_64")]
            return Kernel(Imp::Avx2Single);
            #[cfg(not(target_arch = "x86_64"))]
            unreachable!("no AVX2 outside x86-64")
        })
    }

    /// Every kernel this CPU runs, portable first: for tests and benchmarks.
    pub fn available() -> Vec<Kernel> {
        [
            Some(Kernel::portable()),
            Kernel::avx2(),
            Kernel::avx2_uninterleaved(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// How many messages the kernel hashes at once.
    pub fn lanes(self) -> usize {
        LANES
    }

    /// A short name: `portable`, `avx2-8x2`, `avx2-8x1`.
    pub fn name(self) -> &'static str {
        match self.0 {
            Imp::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 => "avx2-8x2",
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2Single => "avx2-8x1",
        }
    }

    /// Runs `blocks` blocks of every `Some` lane's data (at least `blocks * 64` bytes each)
    /// through its state; `None` lanes keep their state.
    fn compress(self, states: &mut States, data: &[Option<&[u8]>; LANES], blocks: usize) {
        let interleave = match self.0 {
            Imp::Portable => return md5_scalar::compress(states, data, blocks),
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2 => true,
            #[cfg(target_arch = "x86_64")]
            Imp::Avx2Single => false,
        };
        #[cfg(target_arch = "x86_64")]
        {
            // Idle lanes compute on a busy lane's data (never out of bounds, never a branch in
            // the kernel) and get their state back afterwards.
            let Some(busy) = data.iter().flatten().next() else {
                return;
            };
            let inputs = std::array::from_fn(|lane| data[lane].unwrap_or(busy));
            let saved = *states;
            // SAFETY: a `Kernel` holding `Imp::Avx2` or `Imp::Avx2Single` is only made by
            // `Kernel::avx2`, after `is_x86_feature_detected!("avx2")`.
            unsafe { md5_avx2::compress(states, &inputs, blocks, interleave) };
            for lane in (0..LANES).filter(|&lane| data[lane].is_none()) {
                states.set_lane(lane, saved.lane(lane));
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = interleave;
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The MD5 states of all lanes, transposed: `.0[w][lane]` is word `w` (A, B, C, D) of a lane,
/// so that eight lanes of a word load as one 256-bit register.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct States([[u32; LANES]; 4]);

/// MD5's initial state (RFC 1321, 3.3).
const MD5_INIT: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

impl States {
    fn lane(&self, lane: usize) -> [u32; 4] {
        std::array::from_fn(|w| self.0[w][lane])
    }

    fn set_lane(&mut self, lane: usize, state: [u32; 4]) {
        for (w, v) in state.into_iter().enumerate() {
            self.0[w][lane] = v;
        }
    }
}

/// A message's place in a lane set, from [`Md5Lanes::start`] until its digest is handed back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lane {
    index: u8,
    /// Tells a message from the earlier ones of the same lane, so that a stale handle panics
    /// rather than feeding another message.
    generation: u32,
}

impl Lane {
    /// The lane's number, `0..LANES`.
    pub fn index(self) -> usize {
        self.index as usize
    }
}

/// What [`Md5Lanes::poll`] hands back.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<T, B> {
    /// A chunk given to [`Md5Lanes::push`] is hashed: its buffer may be reused.
    Consumed(B),
    /// The message started with this tag is hashed; its lane is free again.
    Finished(T, Digest),
}

/// A lane set: up to [`LANES`] MD5 messages hashed at once, each fed as a stream of chunks of
/// type `B` (`Vec<u8>`, `&[u8]`, anything that is `AsRef<[u8]>`) and known by a tag of type
/// `T`. See the [module documentation](self) for an example.
pub struct Md5Lanes<T, B = Vec<u8>> {
    kernel: Kernel,
    states: States,
    slots: [Slot<T, B>; LANES],
    events: VecDeque<Event<T, B>>,
}

/// One lane's message.
struct Slot<T, B> {
    generation: u32,
    /// `Some` from `start` until the digest is handed back.
    tag: Option<T>,
    /// No more chunks will come (`finish`).
    closed: bool,
    /// The padding is in `buf`: the message ends when `buf`'s ready blocks are hashed.
    padded: bool,
    /// Bytes of the message so far, for the padding.
    len: u64,
    /// Chunks not yet hashed; `offset` bytes of the front one are.
    queue: VecDeque<B>,
    offset: usize,
    /// A block gathered across chunk boundaries, or the last one or two blocks with padding.
    buf: [u8; 128],
    /// Bytes gathered in `buf` towards a block (`< 64`), while no block is ready.
    part: usize,
    /// `buf[ready.0..ready.1]`: whole blocks ready for the kernel.
    ready: (usize, usize),
}

/// What a lane can give the kernel now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Input {
    /// No message.
    Idle,
    /// A message waiting for more bytes before it has a whole block.
    Starved,
    /// This many blocks in the lane's `buf`.
    Buffered(usize),
    /// This many blocks of the front chunk, from `offset`.
    Chunk(usize),
}

impl Input {
    fn blocks(self) -> Option<usize> {
        match self {
            Input::Buffered(n) | Input::Chunk(n) => Some(n),
            Input::Idle | Input::Starved => None,
        }
    }
}

impl<T, B: AsRef<[u8]>> Default for Md5Lanes<T, B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, B: AsRef<[u8]>> Md5Lanes<T, B> {
    /// An empty lane set with the kernel of [`Kernel::detect`].
    pub fn new() -> Self {
        Self::with_kernel(Kernel::detect())
    }

    /// An empty lane set with the given kernel.
    pub fn with_kernel(kernel: Kernel) -> Self {
        Md5Lanes {
            kernel,
            states: States([[0; LANES]; 4]),
            slots: std::array::from_fn(|_| Slot {
                generation: 0,
                tag: None,
                closed: false,
                padded: false,
                len: 0,
                queue: VecDeque::new(),
                offset: 0,
                buf: [0; 128],
                part: 0,
                ready: (0, 0),
            }),
            events: VecDeque::new(),
        }
    }

    /// The kernel this set runs.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// How many messages are started and not yet handed back.
    pub fn busy_lanes(&self) -> usize {
        self.slots.iter().filter(|s| s.tag.is_some()).count()
    }

    /// Whether [`start`](Md5Lanes::start) would find a lane.
    pub fn has_free_lane(&self) -> bool {
        self.slots.iter().any(|s| s.tag.is_none())
    }

    /// Starts a message known by `tag` in a free lane; `Err(tag)` if every lane is busy.
    pub fn start(&mut self, tag: T) -> Result<Lane, T> {
        self.start_with_prefix(tag, &[])
    }

    /// Starts a message that begins with `prefix` (copied), such as the `0x00` of an RFC 6962
    /// leaf; `Err(tag)` if every lane is busy.
    ///
    /// # Panics
    /// If `prefix` is 64 bytes or longer.
    pub fn start_with_prefix(&mut self, tag: T, prefix: &[u8]) -> Result<Lane, T> {
        assert!(prefix.len() < 64, "a prefix is shorter than a block");
        let Some(index) = self.slots.iter().position(|s| s.tag.is_none()) else {
            return Err(tag);
        };
        let slot = &mut self.slots[index];
        slot.generation = slot.generation.wrapping_add(1);
        slot.tag = Some(tag);
        slot.closed = false;
        slot.padded = false;
        slot.len = prefix.len() as u64;
        slot.buf[..prefix.len()].copy_from_slice(prefix);
        slot.part = prefix.len();
        slot.ready = (0, 0);
        debug_assert!(slot.queue.is_empty() && slot.offset == 0);
        self.states.set_lane(index, MD5_INIT);
        Ok(Lane {
            index: index as u8,
            generation: slot.generation,
        })
    }

    /// The slot of a started, unfinished message.
    fn open_slot(&mut self, lane: Lane) -> &mut Slot<T, B> {
        let slot = &mut self.slots[lane.index()];
        assert!(
            slot.generation == lane.generation && slot.tag.is_some() && !slot.closed,
            "lane {} does not hold an unfinished message",
            lane.index
        );
        slot
    }

    /// Appends `chunk` to the message in `lane`. The set keeps the chunk until its bytes are
    /// hashed, then hands it back as [`Event::Consumed`].
    ///
    /// # Panics
    /// If the message was finished, or the handle is stale.
    pub fn push(&mut self, lane: Lane, chunk: B) {
        let slot = self.open_slot(lane);
        slot.len = slot.len.wrapping_add(chunk.as_ref().len() as u64);
        slot.queue.push_back(chunk);
    }

    /// Ends the message in `lane`: no more chunks. Its digest comes from
    /// [`poll`](Md5Lanes::poll) once its bytes are hashed.
    ///
    /// # Panics
    /// If the message was finished already, or the handle is stale.
    pub fn finish(&mut self, lane: Lane) {
        self.open_slot(lane).closed = true;
    }

    /// The next event, hashing as far as needed to produce one while every busy lane has input
    /// (a whole block, or the end of its message). `None` when nothing is left to hash, or when
    /// a lane waits for bytes that only [`push`](Md5Lanes::push) can give: hashing on without it
    /// would waste its share of the kernel. [`flush`](Md5Lanes::flush) goes on regardless.
    pub fn poll(&mut self) -> Option<Event<T, B>> {
        self.next_event(false)
    }

    /// Like [`poll`](Md5Lanes::poll), but hashes whatever lanes have input even while others
    /// wait for bytes. `None` means every queued chunk was handed back (bytes short of a block
    /// are kept in the lane) and every finished message's digest too.
    pub fn flush(&mut self) -> Option<Event<T, B>> {
        self.next_event(true)
    }

    fn next_event(&mut self, flush: bool) -> Option<Event<T, B>> {
        loop {
            if let Some(event) = self.events.pop_front() {
                return Some(event);
            }
            if !self.step(flush) {
                return None;
            }
        }
    }

    /// Gathers every lane's input and runs the kernel over the blocks that all busy lanes
    /// have; `false` if there was nothing to do (or, unless `flush`, a lane starved).
    fn step(&mut self, flush: bool) -> bool {
        let mut inputs = [Input::Idle; LANES];
        for (lane, input) in inputs.iter_mut().enumerate() {
            *input = self.input(lane);
        }
        // Hand back freed buffers and lanes before hashing on: the caller may refill them.
        if !self.events.is_empty() {
            return true;
        }
        if !flush && inputs.contains(&Input::Starved) {
            return false;
        }
        let Some(blocks) = inputs.iter().filter_map(|i| i.blocks()).min() else {
            return false;
        };
        let data: [Option<&[u8]>; LANES] = std::array::from_fn(|lane| {
            let slot = &self.slots[lane];
            match inputs[lane] {
                Input::Buffered(_) => Some(&slot.buf[slot.ready.0..slot.ready.1]),
                Input::Chunk(_) => Some(&slot.queue[0].as_ref()[slot.offset..]),
                Input::Idle | Input::Starved => None,
            }
        });
        self.kernel.compress(&mut self.states, &data, blocks);
        for (slot, input) in self.slots.iter_mut().zip(inputs) {
            match input {
                Input::Buffered(_) => slot.ready.0 += blocks * 64,
                Input::Chunk(_) => {
                    slot.offset += blocks * 64;
                    if slot.offset == slot.queue[0].as_ref().len() {
                        slot.offset = 0;
                        let chunk = slot.queue.pop_front().expect("the front chunk");
                        self.events.push_back(Event::Consumed(chunk));
                    }
                }
                Input::Idle | Input::Starved => {}
            }
        }
        true
    }

    /// What `lane` can hash next. Moves bytes short of a block into the lane's buffer
    /// (handing back the chunks they empty), pads a finished message, and hands back the
    /// digest of a message whose last block is hashed.
    fn input(&mut self, lane: usize) -> Input {
        let slot = &mut self.slots[lane];
        if slot.tag.is_none() {
            return Input::Idle;
        }
        if slot.ready.0 < slot.ready.1 {
            return Input::Buffered((slot.ready.1 - slot.ready.0) / 64);
        }
        if slot.padded {
            let tag = slot.tag.take().expect("a busy lane");
            let state = self.states.lane(lane);
            let mut digest = [0; 16];
            for (bytes, word) in digest.chunks_exact_mut(4).zip(state) {
                bytes.copy_from_slice(&word.to_le_bytes());
            }
            self.events
                .push_back(Event::Finished(tag, Digest::from_slice(&digest)));
            return Input::Idle;
        }
        while let Some(front) = slot.queue.front() {
            let rest = &front.as_ref()[slot.offset..];
            if slot.part == 0 && rest.len() >= 64 {
                return Input::Chunk(rest.len() / 64);
            }
            // Fewer than 64 bytes left in the chunk, or a block begun in `buf`: gather.
            let take = rest.len().min(64 - slot.part);
            slot.buf[slot.part..slot.part + take].copy_from_slice(&rest[..take]);
            slot.part += take;
            slot.offset += take;
            if slot.offset == front.as_ref().len() {
                slot.offset = 0;
                let chunk = slot.queue.pop_front().expect("the front chunk");
                self.events.push_back(Event::Consumed(chunk));
            }
            if slot.part == 64 {
                slot.part = 0;
                slot.ready = (0, 64);
                return Input::Buffered(1);
            }
        }
        if !slot.closed {
            return Input::Starved;
        }
        // RFC 1321, 3.1–3.2: 0x80, zeros to 56 mod 64, the length in bits little-endian.
        let end = if slot.part < 56 { 64 } else { 128 };
        slot.buf[slot.part] = 0x80;
        slot.buf[slot.part + 1..end - 8].fill(0);
        slot.buf[end - 8..end].copy_from_slice(&slot.len.wrapping_mul(8).to_le_bytes());
        slot.part = 0;
        slot.ready = (0, end);
        slot.padded = true;
        Input::Buffered(end / 64)
    }
}

/// The MD5 digests of `prefix || message` for every message, in order, hashed [`LANES`] at a
/// time with `kernel`: the shortest messages finish first and free their lanes for the next.
///
/// # Panics
/// If `prefix` is 64 bytes or longer.
pub fn hash_many(kernel: Kernel, prefix: &[u8], messages: &[&[u8]]) -> Vec<Digest> {
    let mut set: Md5Lanes<usize, &[u8]> = Md5Lanes::with_kernel(kernel);
    let mut digests = vec![None; messages.len()];
    let mut next = 0;
    loop {
        while next < messages.len() {
            let Ok(lane) = set.start_with_prefix(next, prefix) else {
                break;
            };
            set.push(lane, messages[next]);
            set.finish(lane);
            next += 1;
        }
        match set.poll() {
            Some(Event::Finished(i, digest)) => digests[i] = Some(digest),
            Some(Event::Consumed(_)) => {}
            None => break,
        }
    }
    digests
        .into_iter()
        .map(|d| d.expect("every message was hashed"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn force_portable_variable_chooses_the_portable_kernel() {
        assert_eq!(Kernel::choose(Some("1".into())), Kernel::portable());
        assert_eq!(Kernel::choose(Some("yes".into())), Kernel::portable());
        let native = Kernel::avx2().unwrap_or(Kernel::portable());
        assert_eq!(Kernel::choose(None), native);
        assert_eq!(Kernel::choose(Some("0".into())), native);
        assert_eq!(Kernel::choose(Some("".into())), native);
    }

    #[test]
    fn idle_lanes_keep_their_state() {
        for kernel in Kernel::available() {
            let mut states = States([[0; LANES]; 4]);
            for lane in 0..LANES {
                states.set_lane(lane, [lane as u32; 4]);
            }
            let block = [0x5a; 64];
            let data = std::array::from_fn(|lane| (lane % 3 == 0).then_some(&block[..]));
            kernel.compress(&mut states, &data, 1);
            for lane in 0..LANES {
                let mut expected = [lane as u32; 4];
                if lane % 3 == 0 {
                    md5::block_api::compress(&mut expected, &[block]);
                }
                assert_eq!(states.lane(lane), expected, "{kernel} lane {lane}");
            }
        }
    }
}
