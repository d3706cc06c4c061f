//! How results are printed: names, error lines and the `--verbose` figures of C++ mtsum.
//! The checksum lines themselves are [`crate::sumfile`]'s, which also reads them back.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use crate::source::Target;

/// The name of `target` as raw bytes: paths are printed byte for byte, as coreutils does, even
/// when they are not valid UTF-8.
pub fn name_bytes(target: &Target) -> &[u8] {
    match target {
        Target::Path(p) => p.as_os_str().as_bytes(),
        Target::Stdin => b"-",
    }
}

/// The timing line of C++ mtsum: `1.23 s (4.56 GB/s)`.
pub fn timing_line(bytes: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        bytes as f64 / 1e9 / secs
    } else {
        0.0
    };
    format!("{secs:.2} s ({rate:.2} GB/s)")
}

/// Writes `bytes` to `out` as one `write_all`, so that lines of concurrent writers never
/// interleave.
pub fn write_whole(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    out.write_all(bytes)?;
    out.flush()
}

/// `mtsum: NAME: cause` for stderr, with the name as the user wrote it.
pub fn error_line(name: &OsStr, cause: &dyn std::fmt::Display) -> Vec<u8> {
    let mut line = b"mtsum: ".to_vec();
    line.extend_from_slice(name.as_bytes());
    line.extend_from_slice(format!(": {cause}\n").as_bytes());
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_reads_like_cpp_mtsum() {
        assert_eq!(
            timing_line(2_000_000_000, Duration::from_secs(1)),
            "1.00 s (2.00 GB/s)"
        );
    }
}
