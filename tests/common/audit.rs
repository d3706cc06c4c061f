//! Helpers of the audit tests (`tests/audit*.rs`): running the real binary, reading its
//! `STATUS  NAME` lines, and bit rot made by hand.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use assert_cmd::Command;

use super::MTSUM;

/// What one run produced, checked for a panic.
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub code: Option<i32>,
}

impl Run {
    /// `(status, name)` of each stdout line, in order (the name with whatever follows it,
    /// such as a corrupt file's damaged ranges).
    pub fn verdicts(&self) -> Vec<(String, String)> {
        self.stdout
            .lines()
            .map(|l| {
                let (status, name) = l.split_once("  ").expect("STATUS  NAME");
                (status.to_string(), name.to_string())
            })
            .collect()
    }

    /// The status of each name.
    pub fn by_name(&self) -> BTreeMap<String, String> {
        self.verdicts().into_iter().map(|(s, n)| (n, s)).collect()
    }
}

/// Runs `cmd` (at most two minutes) and keeps what it printed.
pub fn run(cmd: &mut Command) -> Run {
    let out = cmd
        .timeout(Duration::from_secs(120))
        .output()
        .expect("mtsum runs");
    let run = Run {
        stdout: String::from_utf8(out.stdout).expect("UTF-8 names in these tests"),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
    };
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

/// `mtsum ARGS` in `dir`.
pub fn mtsum_in(dir: &Path, args: &[&str]) -> Run {
    run(Command::new(MTSUM).args(args).current_dir(dir))
}

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
