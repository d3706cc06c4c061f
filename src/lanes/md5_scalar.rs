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
        let data = &data[..blocks * 64];
        // SAFETY: `[u8; 64]` has the size of 64 `u8`s and their alignment (1), so `data`, which
        // is `blocks * 64` bytes long, is exactly `blocks` such arrays. (`<[u8]>::as_chunks`
        // says this safely from Rust 1.88 on.)
        let data: &[[u8; 64]] = unsafe { std::slice::from_raw_parts(data.as_ptr().cast(), blocks) };
        let mut state = states.lane(lane);
        md5::block_api::compress(&mut state, data);
        states.set_lane(lane, state);
    }
}
