//! The job manager, once for every compression function: lanes, their chunk queues, partial
//! blocks, padding and events. [`super::Lanes`] holds one of these for the family of its
//! kernel's algorithm.

use std::collections::VecDeque;
use std::marker::PhantomData;

use super::family::Family;
use super::{Event, Kernel, Lane, MAX_LANES};
use crate::algorithm::Algorithm;

/// A lane set of the compression function `F`.
///
/// The per-lane arrays have [`MAX_LANES`] entries whatever the kernel, so that they live inline
/// and the loops of a step have a fixed length; lanes from the kernel's count on stay idle.
pub(super) struct Manager<F: Family, T, B> {
    kernel: Kernel,
    /// Bit `i` is set while lane `i` (below `kernel.lanes()`) has no message: finding a free
    /// lane is one instruction rather than a loop over the slots.
    free: u32,
    states: [F::State; MAX_LANES],
    slots: [Slot<T, B>; MAX_LANES],
    events: VecDeque<Event<T, B>>,
    family: PhantomData<F>,
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
    /// A block gathered across chunk boundaries, or the last one or two blocks with padding
    /// (two blocks of SHA-512 at most).
    buf: [u8; 256],
    /// Bytes gathered in `buf` towards a block (less than a block), while no block is ready.
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

impl<F: Family, T, B: AsRef<[u8]>> Manager<F, T, B> {
    pub(super) fn new(kernel: Kernel) -> Self {
        let lanes = kernel.lanes();
        assert!(
            lanes <= MAX_LANES,
            "{kernel} has more than {MAX_LANES} lanes"
        );
        Manager {
            kernel,
            free: ((1u64 << lanes) - 1) as u32,
            states: [F::initial(kernel.algorithm()); MAX_LANES],
            slots: std::array::from_fn(|_| Slot {
                generation: 0,
                tag: None,
                closed: false,
                padded: false,
                len: 0,
                queue: VecDeque::new(),
                offset: 0,
                buf: [0; 256],
                part: 0,
                ready: (0, 0),
            }),
            events: VecDeque::new(),
            family: PhantomData,
        }
    }

    pub(super) fn kernel(&self) -> Kernel {
        self.kernel
    }

    fn algorithm(&self) -> Algorithm {
        self.kernel.algorithm()
    }

    pub(super) fn busy_lanes(&self) -> usize {
        self.kernel.lanes() - self.free.count_ones() as usize
    }

    pub(super) fn has_free_lane(&self) -> bool {
        self.free != 0
    }

    pub(super) fn start_with_prefix(&mut self, tag: T, prefix: &[u8]) -> Result<Lane, T> {
        assert!(
            prefix.len() < F::BLOCK,
            "a prefix is shorter than a block ({} bytes)",
            F::BLOCK
        );
        if self.free == 0 {
            return Err(tag);
        }
        let index = self.free.trailing_zeros() as usize;
        self.free &= !(1 << index);
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
        self.states[index] = F::initial(self.kernel.algorithm());
        Ok(Lane {
            index: index as u8,
            generation: slot.generation,
        })
    }

    /// The slot of a started, unfinished message.
    fn open_slot(&mut self, lane: Lane) -> &mut Slot<T, B> {
        let slot = self.slots.get_mut(lane.index());
        match slot {
            Some(slot)
                if slot.generation == lane.generation && slot.tag.is_some() && !slot.closed =>
            {
                slot
            }
            _ => panic!("lane {} does not hold an unfinished message", lane.index),
        }
    }

    pub(super) fn push(&mut self, lane: Lane, chunk: B) {
        let slot = self.open_slot(lane);
        slot.len = slot.len.wrapping_add(chunk.as_ref().len() as u64);
        slot.queue.push_back(chunk);
    }

    pub(super) fn finish(&mut self, lane: Lane) {
        self.open_slot(lane).closed = true;
    }

    /// The next event, hashing as far as needed to produce one; with `flush`, even while some
    /// lanes wait for bytes.
    pub(super) fn next_event(&mut self, flush: bool) -> Option<Event<T, B>> {
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
        // Only the lanes with a message, from the bit mask of the free ones: a kernel of two
        // lanes does not look at thirty idle slots. Measured in thread CPU time against
        // `array::from_fn` over every slot (whose closure LLVM left out of line): SHA-256 on
        // two SHA-NI lanes +33 % on 64-byte messages, +6 % on 4 KiB ones; MD5 on 32 AVX-512
        // lanes -6 % on 64-byte messages, -1 % on 4 KiB ones.
        let mut inputs = [Input::Idle; MAX_LANES];
        let mut busy = !self.free & (u32::MAX >> (32 - self.kernel.lanes()));
        while busy != 0 {
            let lane = busy.trailing_zeros() as usize;
            busy &= busy - 1;
            inputs[lane] = self.input(lane);
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
        let mut data: [Option<&[u8]>; MAX_LANES] = [None; MAX_LANES];
        for ((data, slot), input) in data.iter_mut().zip(&self.slots).zip(inputs) {
            *data = match input {
                Input::Buffered(_) => Some(&slot.buf[slot.ready.0..slot.ready.1]),
                Input::Chunk(_) => Some(&slot.queue[0].as_ref()[slot.offset..]),
                Input::Idle | Input::Starved => None,
            };
        }
        self.kernel.compress::<F>(&mut self.states, &data, blocks);
        let hashed = blocks * F::BLOCK;
        for (slot, input) in self.slots.iter_mut().zip(inputs) {
            match input {
                Input::Buffered(_) => slot.ready.0 += hashed,
                Input::Chunk(_) => {
                    slot.offset += hashed;
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
    ///
    /// Inlined into [`step`](Manager::step), which calls it for every lane: as a call, it cost
    /// 64-byte messages 8 % more instructions.
    #[inline(always)]
    fn input(&mut self, lane: usize) -> Input {
        let alg = self.algorithm();
        let slot = &mut self.slots[lane];
        if slot.tag.is_none() {
            return Input::Idle;
        }
        if slot.ready.0 < slot.ready.1 {
            return Input::Buffered((slot.ready.1 - slot.ready.0) / F::BLOCK);
        }
        if slot.padded {
            let tag = slot.tag.take().expect("a busy lane");
            self.free |= 1 << lane;
            let digest = F::digest(alg, &self.states[lane]);
            self.events.push_back(Event::Finished(tag, digest));
            return Input::Idle;
        }
        while let Some(front) = slot.queue.front() {
            let rest = &front.as_ref()[slot.offset..];
            if slot.part == 0 && rest.len() >= F::BLOCK {
                return Input::Chunk(rest.len() / F::BLOCK);
            }
            // Less than a block left in the chunk, or a block begun in `buf`: gather.
            let take = rest.len().min(F::BLOCK - slot.part);
            slot.buf[slot.part..slot.part + take].copy_from_slice(&rest[..take]);
            slot.part += take;
            slot.offset += take;
            if slot.offset == front.as_ref().len() {
                slot.offset = 0;
                let chunk = slot.queue.pop_front().expect("the front chunk");
                self.events.push_back(Event::Consumed(chunk));
            }
            if slot.part == F::BLOCK {
                slot.part = 0;
                slot.ready = (0, F::BLOCK);
                return Input::Buffered(1);
            }
        }
        if !slot.closed {
            return Input::Starved;
        }
        let end = F::pad(&mut slot.buf, slot.part, slot.len);
        slot.part = 0;
        slot.ready = (0, end);
        slot.padded = true;
        Input::Buffered(end / F::BLOCK)
    }
}
