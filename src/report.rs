//! How results are printed: the checksum lines of coreutils, and the `--verbose` figures of
//! C++ mtsum.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use crate::algorithm::Digest;
use crate::source::Target;

/// The name of `target` as raw bytes: paths are printed byte for byte, as coreutils does, even
/// when they are not valid UTF-8.
pub fn name_bytes(target: &Target) -> &[u8] {
    match target {
        Target::Path(p) => p.as_os_str().as_bytes(),
        Target::Stdin => b"-",
    }
}

/// Escapes a name as coreutils 9 does in checksum lines: `\` becomes `\\`, a newline `\n`, a
/// carriage return `\r`. Returns whether anything was escaped: then the line starts with `\`.
pub fn escape_name(name: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::with_capacity(name.len());
    let mut escaped = false;
    for &b in name {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => {
                out.push(b);
                continue;
            }
        }
        escaped = true;
    }
    (out, escaped)
}

/// A GNU checksum line, `HEX  NAME\n`, with coreutils' escaping of odd names.
pub fn gnu_line(digest: &Digest, name: &[u8]) -> Vec<u8> {
    let (name, escaped) = escape_name(name);
    let mut line = Vec::with_capacity(name.len() + 2 * digest.as_bytes().len() + 4);
    if escaped {
        line.push(b'\\');
    }
    line.extend_from_slice(digest.to_hex().as_bytes());
    line.extend_from_slice(b"  ");
    line.extend_from_slice(&name);
    line.push(b'\n');
    line
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
    use crate::Algorithm;

    #[test]
    fn plain_names_are_not_escaped() {
        let d = Algorithm::Md5.hash(b"");
        assert_eq!(
            gnu_line(&d, b"a b.txt"),
            b"d41d8cd98f00b204e9800998ecf8427e  a b.txt\n"
        );
    }

    #[test]
    fn backslash_and_newline_are_escaped_and_mark_the_line() {
        let d = Algorithm::Md5.hash(b"");
        assert_eq!(
            gnu_line(&d, b"a\\b\nc\rd"),
            b"\\d41d8cd98f00b204e9800998ecf8427e  a\\\\b\\nc\\rd\n"
        );
    }

    #[test]
    fn timing_reads_like_cpp_mtsum() {
        assert_eq!(
            timing_line(2_000_000_000, Duration::from_secs(1)),
            "1.00 s (2.00 GB/s)"
        );
    }
}
