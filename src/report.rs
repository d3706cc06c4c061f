//! How results are printed: names, error lines and the `--verbose` figures of C++ mtsum.
//! The checksum lines themselves are [`crate::sumfile`]'s, which also reads them back.

use std::borrow::Cow;
use std::num::NonZeroUsize;
use std::time::Duration;

use crate::algorithm::Algorithm;
use crate::engine::FileDigest;
use crate::layout::Layout;
use crate::source::Target;

/// The name of `target` as raw bytes: paths are printed byte for byte, as coreutils does, even
/// when they are not valid UTF-8.
pub fn name_bytes(target: &Target) -> &[u8] {
    target.name_bytes()
}

/// Which of C++ mtsum's figures go to stderr besides the results: one type for hash mode and
/// `-c`, so that both print them alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    /// `--verbose`: the settings inputs are hashed with, each input's size, and the read mode
    /// an input refused; and the timing lines.
    pub verbose: bool,
    /// `--benchmark`: each input's time and throughput.
    pub benchmark: bool,
}

impl Figures {
    /// With `verbose`, the lines that say how inputs are hashed: `Algorithm: sha256`,
    /// `Layout: mtsum`, `Number of processors: 2`, `Multi-buffer kernel: …`; empty otherwise.
    pub fn settings(
        &self,
        algorithm: Algorithm,
        layout: Layout,
        processors: NonZeroUsize,
    ) -> String {
        if !self.verbose {
            return String::new();
        }
        // Which SIMD kernel hashes several leaves or files at once, if the algorithm has one
        // on this CPU (one big file with `plain` is still hashed as one stream).
        let kernel = crate::lanes::Kernel::multi_buffer(algorithm);
        format!(
            "Algorithm: {algorithm}\nLayout: {layout}\nNumber of processors: {processors}\n\
             Multi-buffer kernel: {}\n",
            kernel.map_or("none", |k| k.name())
        )
    }

    /// The lines for the input `name` hashed as `digest`: with `verbose`, a note on the read
    /// mode it refused and `File size: N bytes`; with either flag, its timing line after its
    /// name (quoted as in error lines), `NAME: 1.23 s (4.56 GB/s)`: inputs are hashed side
    /// by side, and a time is worth little without what it is the time of.
    pub fn of_input(&self, name: &[u8], digest: &FileDigest) -> Vec<u8> {
        let mut lines = Vec::new();
        if self.verbose {
            if let Some(fallback) = &digest.fallback {
                lines.extend(error_line(name, fallback));
            }
            lines.extend(format!("File size: {} bytes\n", digest.size).bytes());
        }
        if self.verbose || self.benchmark {
            let timing = timing_line(digest.size, digest.elapsed);
            lines.extend_from_slice(&quote(name));
            lines.extend(format!(": {timing}\n").bytes());
        }
        lines
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
///
/// The rules, and their quirks, are gnulib's `quotearg_buffer_restyled`: inside single
/// quotes, a run of characters that need escaping becomes `'$'\t\001''`; a name with a single
/// quote and nothing else that a C string and a shell read differently is double-quoted
/// instead; otherwise such a name is quoted twice over, and the second pass starts with the
/// escape state the first pass ended in (hence `'''it'\''s'$'\n'` for `it's` + newline).
///
/// A URL's colons do not count: every `s3://` or `https://` name has one, and a name that
/// is a URL is no file name a shell could mistake (`mtsum: s3://b/k: cause`, as the AWS CLI
/// writes it).
pub fn quote(name: &[u8]) -> Cow<'_, [u8]> {
    let chars = QuoteChar::scan(name);
    let url = crate::source::remote::is_url(name);
    let needs_quotes = name.is_empty()
        || chars
            .iter()
            .enumerate()
            .any(|(i, c)| c.special(i, name.len()) && !(url && matches!(c, QuoteChar::Text(":"))));
    if !needs_quotes {
        return Cow::Borrowed(name);
    }
    let has_single_quote = chars.iter().any(|c| matches!(c, QuoteChar::Text("'")));
    if has_single_quote && chars.iter().all(QuoteChar::same_in_c_and_shell) {
        let text = String::from_utf8_lossy(name);
        return Cow::Owned(format!("\"{text}\"").into_bytes());
    }
    let (mut out, pending) = single_quoted(&chars, false);
    if has_single_quote {
        out = single_quoted(&chars, pending).0;
    }
    Cow::Owned(out)
}

/// One character of a name, as the quoting sees it.
#[derive(Clone, Copy, Debug)]
enum QuoteChar<'a> {
    /// A printable character (ASCII or valid UTF-8).
    Text(&'a str),
    /// A control character or a byte that is not UTF-8: written as an escape.
    Escape(u8),
}

impl<'a> QuoteChar<'a> {
    fn scan(name: &'a [u8]) -> Vec<QuoteChar<'a>> {
        let mut out = Vec::with_capacity(name.len());
        for chunk in name.utf8_chunks() {
            let valid = chunk.valid();
            for (i, c) in valid.char_indices() {
                if c.is_control() && c.is_ascii() {
                    out.push(QuoteChar::Escape(c as u8));
                } else {
                    out.push(QuoteChar::Text(&valid[i..i + c.len_utf8()]));
                }
            }
            out.extend(chunk.invalid().iter().map(|&b| QuoteChar::Escape(b)));
        }
        out
    }

    /// Whether this character, at position `i` of a name of `len` bytes, makes the name need
    /// quotes.
    fn special(&self, i: usize, len: usize) -> bool {
        match *self {
            QuoteChar::Escape(_) => true,
            QuoteChar::Text(t) => match t {
                " " | "!" | "\"" | "$" | "&" | "(" | ")" | "*" | ";" | "<" | "=" | ">" | "?"
                | "[" | "\\" | "^" | "`" | "|" | "'" | ":" => true,
                "#" | "~" => i == 0,
                "{" | "}" => len == 1,
                _ => false,
            },
        }
    }

    /// Whether a C string and a shell's double quotes read this character alike.
    fn same_in_c_and_shell(&self) -> bool {
        match *self {
            QuoteChar::Escape(_) => false,
            QuoteChar::Text(t) => !matches!(
                t,
                "!" | "\""
                    | "$"
                    | "&"
                    | "("
                    | ")"
                    | "*"
                    | ";"
                    | "<"
                    | "="
                    | ">"
                    | "?"
                    | "["
                    | "\\"
                    | "^"
                    | "`"
                    | "|"
            ),
        }
    }
}

/// The single-quoted form, and whether it ended inside an escape run.
fn single_quoted(chars: &[QuoteChar<'_>], mut in_escape: bool) -> (Vec<u8>, bool) {
    let mut out = b"'".to_vec();
    for c in chars {
        match *c {
            QuoteChar::Escape(b) => {
                if !in_escape {
                    out.extend_from_slice(b"'$'");
                    in_escape = true;
                }
                let esc = match b {
                    0x07 => "\\a".to_string(),
                    0x08 => "\\b".to_string(),
                    0x0c => "\\f".to_string(),
                    b'\n' => "\\n".to_string(),
                    b'\r' => "\\r".to_string(),
                    b'\t' => "\\t".to_string(),
                    0x0b => "\\v".to_string(),
                    b => format!("\\{b:03o}"),
                };
                out.extend_from_slice(esc.as_bytes());
            }
            QuoteChar::Text("'") => {
                out.extend_from_slice(b"'\\''");
                in_escape = false;
            }
            QuoteChar::Text(t) => {
                if in_escape {
                    out.extend_from_slice(b"''");
                    in_escape = false;
                }
                out.extend_from_slice(t.as_bytes());
            }
        }
    }
    out.push(b'\'');
    (out, in_escape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_like_coreutils_diagnostics() {
        // What `sha256sum NAME` prints for a missing NAME (coreutils 9.1, C.UTF-8).
        let cases: [(&[u8], &str); 19] = [
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
            (b"\tgood", r"''$'\t''good'"),
            (b"\t", r"''$'\t'"),
            (b"\xff", r"''$'\377'"),
            (b"\n\n", r"''$'\n\n'"),
            (b"a\x01\x02b", r"'a'$'\001\002''b'"),
            (b"\t'x", r"''$'\t'\''x'"),
            (b"it's\n", r"'''it'\''s'$'\n'"),
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
