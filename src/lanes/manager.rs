//! The job manager, once for every compression function: lanes, their chunk queues, partial
//! blocks, padding and events. [`super::Lanes`] holds one of these for the family of its
//! kernel's algorithm.

use std::collections::VecDeque;
use std::marker::PhantomData;

use super::family::Family;
use super::kernel::FullLanes;
use super::{Event, Kernel, Lane, MAX_LANES};
use crate::algorithm::Algorithm;

/// A lane set of the compression function `F`.
///
/// The per-lane arrays have [`MAX_LANES`] entries whatever the kernel, so that they live inline
/// and the loops of a step have a fixed length; lanes from the kernel's count on stay idle.
pub(super) struct Manager<F: Family, T, B> {
    kernel: Kernel,
    full: FullLanes,
    /// Bit `i` is set while lane `i` (below `kernel.lanes()`) has no message: finding a free
    /// lane is one instruction rather than a loop over the slots.
    free: u32,
    /// The lanes whose input the next step works out again: their segment is hashed, or a
    /// chunk, the end of the message or a new message came.
    stale: u32,
    /// The lanes whose input is a block just gathered in `buf`, which the next step may
    /// extend with more blocks of the chunk it came from ([`Slot::extend`]).
    extendable: u32,
    /// What each lane hashes, counted down step by step.
    inputs: [Input; MAX_LANES],
    states: [F::State; MAX_LANES],
    slots: [Slot<T, B>; MAX_LANES],
    events: VecDeque<Event<T, B>>,
    family: PhantomData<F>,
    /// Kernel calls so far, for the tests of how many steps a message takes.
    #[cfg(test)]
    steps: usize,
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
    /// Blocks gathered across chunk boundaries, with the blocks after them ([`Slot::extend`]),
    /// or the end of the message with its padding ([`Slot::gather_end`]).
    buf: [u8; GATHER],
    /// Bytes gathered in `buf` towards a block (less than a block), while no block is ready.
    part: usize,
    /// `buf[ready.0..ready.1]`: whole blocks ready for the kernel.
    ready: (usize, usize),
}

/// Bytes of a lane's buffer: 16 blocks, 8 of SHA-512. A message's head gathered there,
/// extended to the step's length, and its end gathered with the padding, save most steps of
/// one block: `mtsum -r` over 20 000 files of 64 KiB on average took 46 891 MD5 steps, 14 198
/// of one block, where it took 66 894 and 47 386 (SHA-256 on two SHA-NI lanes: 76 941 and
/// 21 297 against 102 572 and 74 871). Twice or four times the buffer saved more steps (37 311
/// and 30 946 for MD5) but no CPU time that the noise let us see, and the set's buffers
/// would no longer fit L1 (32 KiB for 32 lanes).
const GATHER: usize = 1024;

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

impl<F: Family, T, B: AsRef<[u8]>> Manager<F, T, B> {
    /// Blocks of `F` a lane's buffer holds.
    const GATHER_BLOCKS: usize = GATHER / F::BLOCK;

    pub(super) fn new(kernel: Kernel) -> Self {
        let lanes = kernel.lanes();
        assert!(
            lanes <= MAX_LANES,
            "{kernel} has more than {MAX_LANES} lanes"
        );
        Manager {
            kernel,
            full: kernel.full_lanes(),
            free: ((1u64 << lanes) - 1) as u32,
            stale: 0,
            extendable: 0,
            inputs: [Input::Idle; MAX_LANES],
            states: [F::initial(kernel.algorithm()); MAX_LANES],
            slots: std::array::from_fn(|_| Slot {
                generation: 0,
                tag: None,
                closed: false,
                padded: false,
                len: 0,
                queue: VecDeque::new(),
                offset: 0,
                buf: [0; GATHER],
                part: 0,
                ready: (0, 0),
            }),
            events: VecDeque::new(),
            family: PhantomData,
            #[cfg(test)]
            steps: 0,
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
        self.stale |= 1 << index;
        self.extendable &= !(1 << index);
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
        self.stale |= 1 << lane.index();
    }

    pub(super) fn finish(&mut self, lane: Lane) {
        self.open_slot(lane).closed = true;
        self.stale |= 1 << lane.index();
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

    /// Works out the input of the lanes whose segment ended (or whose queue changed), sets
    /// the step's length and runs the kernel over it; `false` if there was nothing to do (or,
    /// unless `flush`, a lane starved).
    ///
    /// A lane's input is kept from step to step: a step ends where the shortest segment ends,
    /// and the other lanes only count down. Working every busy lane's input out again at each
    /// step was most of the set's own cost with many short messages, whose steps mostly ran
    /// one block (the gathered head of a message, its padded tail; see [`GATHER`]). With
    /// both, `next_event` took 119 samples where it took 212 (MD5, 32 lanes, 20 000 files).
    fn step(&mut self, flush: bool) -> bool {
        let lanes = self.kernel.lanes();
        let all = u32::MAX >> (32 - lanes);
        // Only the lanes with a message, from the bit mask of the free ones: a kernel of two
        // lanes does not look at thirty idle slots.
        let mut stale = self.stale & !self.free & all;
        self.stale = 0;
        while stale != 0 {
            let lane = stale.trailing_zeros() as usize;
            stale &= stale - 1;
            self.inputs[lane] = self.input(lane);
        }
        // Hand back freed buffers and lanes before hashing on: the caller may refill them.
        if !self.events.is_empty() {
            return true;
        }
        let busy = !self.free & all;
        let mut blocks = usize::MAX;
        let mut starved = false;
        let mut lanes_in = 0u32;
        let mut rest = busy;
        while rest != 0 {
            let lane = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let n = match self.inputs[lane] {
                Input::Chunk(n) if n < Self::GATHER_BLOCKS => {
                    // The end of a message near: hashed with its tail from the buffer, it
                    // does not end a step of its own before the tail's.
                    match self.slots[lane].gather_end::<F>(&mut self.events) {
                        Some(n) => {
                            self.inputs[lane] = Input::Buffered(n);
                            n
                        }
                        None => n,
                    }
                }
                Input::Buffered(n) | Input::Chunk(n) => n,
                Input::Starved => {
                    starved = true;
                    continue;
                }
                Input::Idle => continue,
            };
            lanes_in |= 1 << lane;
            if self.extendable & (1 << lane) == 0 {
                blocks = blocks.min(n);
            }
        }
        if !flush && starved {
            return false;
        }
        // Gathered blocks take as many more of their chunk as the step runs anyway.
        let mut extend = self.extendable & lanes_in;
        self.extendable &= !extend;
        let target = blocks.min(Self::GATHER_BLOCKS);
        while extend != 0 {
            let lane = extend.trailing_zeros() as usize;
            extend &= extend - 1;
            let slot = &mut self.slots[lane];
            let n = match slot.gather_end::<F>(&mut self.events) {
                Some(n) => n,
                None => slot.extend::<F>(target, &mut self.events),
            };
            self.inputs[lane] = Input::Buffered(n);
            blocks = blocks.min(n);
        }
        if lanes_in == 0 {
            return false;
        }
        let mut data: [&[u8]; MAX_LANES] = [&[]; MAX_LANES];
        let mut rest = lanes_in;
        while rest != 0 {
            let lane = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let slot = &self.slots[lane];
            data[lane] = match self.inputs[lane] {
                Input::Buffered(_) => &slot.buf[slot.ready.0..slot.ready.1],
                _ => &slot.queue[0].as_ref()[slot.offset..],
            };
        }
        if lanes_in == all {
            // Every lane busy, the common case of a full set: no idle lanes to stand in for
            // or to restore.
            self.full
                .compress::<F>(&mut self.states[..lanes], &data[..lanes], blocks);
        } else {
            let mut some: [Option<&[u8]>; MAX_LANES] = [None; MAX_LANES];
            let mut rest = lanes_in;
            while rest != 0 {
                let lane = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                some[lane] = Some(data[lane]);
            }
            self.kernel.compress::<F>(&mut self.states, &some, blocks);
        }
        #[cfg(test)]
        {
            self.steps += 1;
        }
        let hashed = blocks * F::BLOCK;
        let mut rest = lanes_in;
        while rest != 0 {
            let lane = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let slot = &mut self.slots[lane];
            let left = match &mut self.inputs[lane] {
                Input::Buffered(n) => {
                    slot.ready.0 += hashed;
                    *n -= blocks;
                    *n
                }
                Input::Chunk(n) => {
                    slot.offset += hashed;
                    if slot.offset == slot.queue[0].as_ref().len() {
                        slot.offset = 0;
                        let chunk = slot.queue.pop_front().expect("the front chunk");
                        self.events.push_back(Event::Consumed(chunk));
                    }
                    *n -= blocks;
                    *n
                }
                Input::Idle | Input::Starved => unreachable!("a lane with input"),
            };
            if left == 0 {
                self.stale |= 1 << lane;
            }
        }
        true
    }

    /// What `lane` can hash next. Moves bytes short of a block into the lane's buffer
    /// (handing back the chunks they empty), pads a finished message, and hands back the
    /// digest of a message whose last block is hashed.
    ///
    /// Inlined into [`step`](Manager::step): as a call, it cost 64-byte messages 8 % more
    /// instructions.
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
            self.extendable &= !(1 << lane);
            let digest = F::digest(alg, &self.states[lane]);
            self.events.push_back(Event::Finished(tag, digest));
            return Input::Idle;
        }
        slot.ready = (0, 0);
        while let Some(front) = slot.queue.front() {
            let rest = &front.as_ref()[slot.offset..];
            if slot.part == 0 && rest.len() >= F::BLOCK {
                // A message's end near: `step` gathers it with the padding.
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
                // The step decides how many more blocks to gather after this one.
                self.extendable |= 1 << lane;
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

impl<T, B: AsRef<[u8]>> Slot<T, B> {
    /// The bytes of the front chunk not yet hashed or gathered.
    fn rest(&self) -> &[u8] {
        self.queue
            .front()
            .map_or(&[], |chunk| &chunk.as_ref()[self.offset..])
    }

    /// Moves the front chunk's next `len` bytes to the end of the ready blocks in `buf`,
    /// handing the chunk back once it is emptied.
    fn gather(&mut self, len: usize, events: &mut VecDeque<Event<T, B>>) {
        let at = self.ready.1;
        let Some(front) = self.queue.front() else {
            return;
        };
        let bytes = &front.as_ref()[self.offset..self.offset + len];
        self.buf[at..at + len].copy_from_slice(bytes);
        self.offset += len;
        if self.offset == front.as_ref().len() {
            self.offset = 0;
            let chunk = self.queue.pop_front().expect("the front chunk");
            events.push_back(Event::Consumed(chunk));
        }
    }

    /// Gathers up to `target` blocks in all (the step's length) after the lane's ready
    /// block(s), as many whole ones as the front chunk has and `buf` holds. Copying a few
    /// blocks costs less than the step that hashing them in place would begin. Returns the
    /// blocks ready.
    fn extend<F: Family>(&mut self, target: usize, events: &mut VecDeque<Event<T, B>>) -> usize {
        debug_assert_eq!(self.part, 0);
        let ready = (self.ready.1 - self.ready.0) / F::BLOCK;
        let room = (self.buf.len() - self.ready.1) / F::BLOCK;
        let more = target
            .saturating_sub(ready)
            .min(room)
            .min(self.rest().len() / F::BLOCK);
        if more > 0 {
            self.gather(more * F::BLOCK, events);
            self.ready.1 += more * F::BLOCK;
        }
        ready + more
    }

    /// Gathers the rest of the message after the ready blocks and pads it, if the message is
    /// finished, its rest is in the front chunk and it fits in `buf` with the padding: the
    /// lane then hashes to the message's end in one segment, where reading its last whole
    /// blocks in place took a step and the padded tail another. Returns the blocks ready, or
    /// `None` if it does not fit.
    fn gather_end<F: Family>(&mut self, events: &mut VecDeque<Event<T, B>>) -> Option<usize> {
        if !self.closed || self.queue.len() > 1 || self.part != 0 {
            return None;
        }
        if self.ready.0 == self.ready.1 {
            self.ready = (0, 0);
        }
        let len = self.rest().len();
        let tail = len % F::BLOCK;
        let pad_at = self.ready.1 + len - tail;
        let end = pad_at + F::tail_blocks(tail) * F::BLOCK;
        if end > self.buf.len() {
            return None;
        }
        self.gather(len, events);
        F::pad(&mut self.buf[pad_at..], tail, self.len);
        self.ready.1 = end;
        self.padded = true;
        Some((end - self.ready.0) / F::BLOCK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Digest;
    use crate::lanes::family::Md5;

    /// Hashes `messages`, each behind a one-byte prefix and pushed in chunks of `chunk`
    /// bytes, in an MD5 lane set that starts the next message as soon as a lane is free, as
    /// the engine does; returns the digests and the kernel calls it took.
    fn hash(messages: &[Vec<u8>], chunk: usize) -> (Vec<Digest>, usize) {
        let kernel = Kernel::portable(Algorithm::Md5).expect("a portable MD5 kernel");
        let mut set: Manager<Md5, usize, &[u8]> = Manager::new(kernel);
        let mut digests = vec![None; messages.len()];
        let mut next = 0;
        loop {
            while next < messages.len() && set.has_free_lane() {
                let lane = set.start_with_prefix(next, &[0]).expect("a free lane");
                for part in messages[next].chunks(chunk) {
                    set.push(lane, part);
                }
                set.finish(lane);
                next += 1;
            }
            match set.next_event(true) {
                Some(Event::Finished(i, digest)) => digests[i] = Some(digest),
                Some(Event::Consumed(_)) => {}
                None => break,
            }
        }
        let digests = digests.into_iter().map(|d| d.expect("hashed")).collect();
        (digests, set.steps)
    }

    fn message(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + len) as u8).collect()
    }

    fn expected(messages: &[Vec<u8>]) -> Vec<Digest> {
        let with_prefix = |m: &Vec<u8>| [&[0][..], m].concat();
        messages
            .iter()
            .map(|m| Algorithm::Md5.hash(&with_prefix(m)))
            .collect()
    }

    #[test]
    fn a_message_that_fits_the_buffer_in_one_chunk_takes_one_step() {
        // Gathered head, body in place, padded tail: three steps before the buffer took the
        // whole message.
        for len in [0, 62, 63, 100, 500, 950] {
            let messages = vec![message(len)];
            let (digests, steps) = hash(&messages, 1 << 16);
            assert_eq!(digests, expected(&messages), "{len} bytes");
            assert_eq!(steps, 1, "{len} bytes");
        }
    }

    #[test]
    fn heads_and_ends_gathered_save_a_third_of_the_steps() {
        // A head gathered while other lanes are in their bodies runs as long as they do, and
        // the end of a body near a step's end is gathered with the tail. Here 103 steps,
        // where a step per head block and per tail took 199.
        let messages: Vec<Vec<u8>> = (0..200).map(|i| message(1000 + 997 * (i % 13))).collect();
        let (digests, steps) = hash(&messages, 1 << 16);
        assert_eq!(digests, expected(&messages));
        assert!(3 * steps < 2 * 199, "{steps} steps");
    }

    #[test]
    fn chunks_of_any_size_give_the_same_digests() {
        let messages: Vec<Vec<u8>> = (0..40).map(|i| message(61 * i * i + i)).collect();
        for chunk in [1, 63, 64, 65, 1000, 1024, 4096] {
            let (digests, _) = hash(&messages, chunk);
            assert_eq!(digests, expected(&messages), "chunks of {chunk}");
        }
    }
}
