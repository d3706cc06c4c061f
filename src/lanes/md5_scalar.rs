//! The portable kernel: RustCrypto's MD5 compression function, one lane after another.
//!
//! It gives the lane set the same results and the same scheduling on every CPU, which is what
//! the tests compare the SIMD kernels with; it is no faster than hashing the messages one by one.

use super::{LANES, States};

/// Runs `blocks` 64-byte blocks of every `Some` lane's data through its MD5 state; `None`
/// lanes are left alone.
pub(super) fn compress(states: &mut States, data: &[Option<&[u8]>; LANES], blocks: usize) {
    for (lane, data) in data.iter().enumerate() {
        let Some(data) = data else { continue };
        let mut state = states.lane(lane);
        for block in data[..blocks * 64].chunks_exact(64) {
            let block: &[u8; 64] = block.try_into().expect("64-byte chunks");
            md5::block_api::compress(&mut state, std::slice::from_ref(block));
        }
        states.set_lane(lane, state);
    }
}
