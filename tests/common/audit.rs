//! Helpers of the audit tests (`tests/audit*.rs`): bit rot made by hand (their runs of the real
//! binary, and its `STATUS  NAME` lines, are [`super::run`]'s).

use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::SystemTime;

pub fn mtime(path: &Path) -> SystemTime {
    fs::metadata(path).unwrap().modified().unwrap()
}

/// Bit rot: one byte changes, and nothing else does (size, mtime to the nanosecond).
pub fn flip_byte_keeping_mtime(path: &Path, offset: u64) {
    flip_bytes_keeping_mtime(path, &[offset]);
}

/// Bit rot: the bytes at `offsets` change, and nothing else does (size, mtime to the
/// nanosecond).
pub fn flip_bytes_keeping_mtime(path: &Path, offsets: &[u64]) {
    let before = fs::metadata(path).unwrap().modified().unwrap();
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    for &offset in offsets {
        let mut byte = [0];
        f.read_exact_at(&mut byte, offset).unwrap();
        f.write_all_at(&[byte[0] ^ 0x10], offset).unwrap();
    }
    f.set_modified(before).unwrap();
    drop(f);
    assert_eq!(fs::metadata(path).unwrap().modified().unwrap(), before);
}
