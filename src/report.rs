//! How results are printed: names, error lines and the `--verbose` figures of C++ mtsum.
//! The checksum lines themselves are [`crate::sumfile`]'s, which also reads them back.

use std::borrow::Cow;
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

/// `mtsum: NAME: cause` for stderr, the name quoted as coreutils quotes it in messages.
pub fn error_line(name: &[u8], cause: &dyn std::fmt::Display) -> Vec<u8> {
    let mut line = b"mtsum: ".to_vec();
    line.extend_from_slice(&quote(name));
    line.extend_from_slice(format!(": {cause}\n").as_bytes());
    line
}

/// A file name as coreutils prints it in diagnostics (gnulib's `quotef`: shell-escape
/// quoting that also quotes `:`), so that a name with spaces, quotes or control characters
/// reads unambiguously and can be pasted into a shell: `'a b'`, `"it's"`, `'x'$'\n''y'`.
/// Plain names are left alone. Valid UTF-8 counts as printable, as in a UTF-8 locale.
pub fn quote(name: &[u8]) -> Cow<'_, [u8]> {
    let Ok(text) = std::str::from_utf8(name) else {
        return Cow::Owned(quote_with_escapes(name));
    };
    let special = |i: usize, c: char| match c {
        ' ' | '!' | '"' | '$' | '&' | '(' | ')' | '*' | ';' | '<' | '=' | '>' | '?' | '['
        | '\\' | '^' | '`' | '|' | '\'' | ':' => true,
        '#' | '~' => i == 0,
        '{' | '}' => name.len() == 1,
        c => c.is_control(),
    };
    if !name.is_empty() && !text.char_indices().any(|(i, c)| special(i, c)) {
        return Cow::Borrowed(name);
    }
    if text.chars().any(char::is_control) {
        return Cow::Owned(quote_with_escapes(name));
    }
    if text.contains('\'') && !text.contains(['"', '$', '`', '\\', '!']) {
        return Cow::Owned(format!("\"{text}\"").into_bytes());
    }
    Cow::Owned(format!("'{}'", text.replace('\'', "'\\''")).into_bytes())
}

/// Single quotes, with control characters and invalid bytes as `$'\n'` or `$'\377'`
/// segments between quoted runs, as gnulib writes them.
fn quote_with_escapes(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut quoted_run = false;
    let escape = |out: &mut Vec<u8>, quoted_run: &mut bool, esc: String| {
        if *quoted_run {
            out.push(b'\'');
            *quoted_run = false;
        }
        out.extend_from_slice(format!("$'{esc}'").as_bytes());
    };
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_control() {
                let esc = match c {
                    '\x07' => "\\a".to_string(),
                    '\x08' => "\\b".to_string(),
                    '\x0c' => "\\f".to_string(),
                    '\n' => "\\n".to_string(),
                    '\r' => "\\r".to_string(),
                    '\t' => "\\t".to_string(),
                    '\x0b' => "\\v".to_string(),
                    c => format!("\\{:03o}", c as u32),
                };
                escape(&mut out, &mut quoted_run, esc);
                continue;
            }
            if !quoted_run {
                out.push(b'\'');
                quoted_run = true;
            }
            match c {
                '\'' => out.extend_from_slice(b"'\\''"),
                c => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            }
        }
        for b in chunk.invalid() {
            escape(&mut out, &mut quoted_run, format!("\\{b:03o}"));
        }
    }
    if quoted_run {
        out.push(b'\'');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_like_coreutils_diagnostics() {
        // What `sha256sum NAME` prints for a missing NAME (coreutils 9.1, C.UTF-8).
        let cases: [(&[u8], &str); 12] = [
            (b"plain.txt", "plain.txt"),
            (b"no such", "'no such'"),
            (b"x\ny", "'x'$'\\n''y'"),
            (b"it's", "\"it's\""),
            ("caf\u{e9} gone".as_bytes(), "'caf\u{e9} gone'"),
            (b"a:b", "'a:b'"),
            (b"#x", "'#x'"),
            (b"x#", "x#"),
            (b"~y", "'~y'"),
            (b"a=b", "'a=b'"),
            (b"b{", "b{"),
            (b"{", "'{'"),
        ];
        for (name, want) in cases {
            assert_eq!(String::from_utf8_lossy(&quote(name)), want, "{name:?}");
        }
    }

    #[test]
    fn timing_reads_like_cpp_mtsum() {
        assert_eq!(
            timing_line(2_000_000_000, Duration::from_secs(1)),
            "1.00 s (2.00 GB/s)"
        );
    }
}
