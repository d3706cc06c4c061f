//! Sum files: the checksum lines mtsum writes, and the parser `-c` reads them back with.
//!
//! People keep sums for years and check them with whatever tool is at hand, so both directions
//! follow coreutils 9 byte for byte; mtsum's own additions are only new *tags*.
//!
//! # Writing
//!
//! [`format_line`] writes one of three [`Format`]s:
//!
//! - GNU (the default): `HEX  NAME`, exactly what `sha256sum` prints;
//! - BSD tag (`--tag`): `TAG (NAME) = HEX`, exactly what `sha256sum --tag` prints;
//! - bare (`--no-names`): `HEX`, as C++ mtsum prints it (not read back by `-c`).
//!
//! A name containing `\`, a newline or a carriage return is escaped (`\\`, `\n`, `\r`) and the
//! whole line then starts with a `\`, so that one line always holds one name. With `-z`
//! ([`Terminator::Nul`]) lines end in a NUL byte instead and nothing is escaped, as in coreutils.
//!
//! # Tags
//!
//! A tag says how to recompute the digest ([`tag`], [`parse_tag`]), in any letter case:
//!
//! ```text
//! tag       = plain-tag | tree-tag
//! plain-tag = ALG                       ; the ordinary digest, as the other tools spell it:
//!                                       ; MD5 SHA1 SHA224 SHA256 SHA384 SHA512 BLAKE3 XXH3 XXH128,
//!                                       ; and CRC32 CRC32C CRC64NVME
//! tree-tag  = "MTSUM-" ALG              ; e.g. MTSUM-SHA256
//!           | "MERKLE-" ALG "-" LEAF    ; e.g. MERKLE-SHA256-64
//!           | "RFC6962-" ALG "-" LEAF   ; e.g. RFC6962-BLAKE3-1M
//!           | "S3-" ALG "-" PART        ; e.g. S3-MD5-8M, S3-CRC32C-16M
//!           | "S3-" ALG "-" PARTS       ; e.g. S3-MD5-5M,7M,5M,1, S3-MD5-8Mx1000,3M
//!           | "GLACIER-SHA256" | "DROPBOX-SHA256" | "BTV2-SHA256"
//! LEAF      = the leaf size as -l takes it; mtsum writes the shortest exact form (64, 4K, 1M, 2G)
//! PART      = the part size as --part-size takes it, written the same way
//! PARTS     = PART ["x" COUNT] *("," PART ["x" COUNT]) ; each part's size, in order, for an
//!             object whose parts differ (PART xN: N parts of that size); at least two
//!             parts, or one with its count: a single PART is a part size
//! ```
//!
//! A tag whose algorithm its layout is not defined with (`MERKLE-CRC32-1M`, `GLACIER-MD5`) is
//! not one we can recompute. The value after `=` (and before the name of an untagged line) is
//! hex or base64 ([`Root::parse`]), followed by S3's `-N` where the value has one.
//!
//! A plain tag is the tag of `sha256sum --tag`, `md5sum --tag` and `xxhsum --tag`, so those
//! tools check what `mtsum -t plain --tag` writes. A tree tag cannot be confused with theirs.
//!
//! # Reading
//!
//! [`Parser::parse_line`] reads what `sha256sum -c` reads, with the same quirks (see its
//! documentation), plus every tag above, xxhsum's `XXH3_LE`/`XXH128_LE` tags and the
//! `XXH3_HEX  NAME` lines of some xxhsum versions. Which algorithm an untagged line uses is the
//! caller's decision (`-a`, or the digest length: [`algorithms_with_digest_len`]).
//!
//! ```
//! use mtsum::sumfile::{self, Format, Terminator};
//! use mtsum::{Algorithm, Layout, LeafSize};
//!
//! let layout = Layout::Rfc6962(LeafSize::DEFAULT);
//! let root = mtsum::reference::checksum(layout, Algorithm::Sha256, b"abc").unwrap();
//! let line = sumfile::format_line(Format::Tag, Terminator::Newline, layout, Algorithm::Sha256,
//!                                 &root, b"a file");
//! assert!(line.starts_with(b"RFC6962-SHA256-1M (a file) = "));
//!
//! let entry = sumfile::parse_line(&line).unwrap().unwrap();
//! assert_eq!(entry.name, b"a file");
//! assert_eq!(entry.expected, root);
//! assert_eq!(entry.spec, Some((layout, Algorithm::Sha256)));
//! ```
//!
//! `--json` output is not a sum file: it is [`crate::json`]'s.

use std::borrow::Cow;

use crate::algorithm::{Algorithm, Digest};
use crate::layout::{Layout, PartList, Root};

/// How a checksum line is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Format {
    /// `HEX  NAME`, as `sha256sum` prints it.
    #[default]
    Gnu,
    /// `TAG (NAME) = HEX`, as `sha256sum --tag` prints it; the tag names layout and algorithm.
    Tag,
    /// `HEX` alone, as C++ mtsum prints it with `--no-names`; no name, so nothing to escape.
    Bare,
}

/// What ends a checksum line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Terminator {
    /// A newline; odd names are escaped so that a line always holds one name.
    #[default]
    Newline,
    /// A NUL byte (`-z`), for `xargs -0` and friends: names are written raw, since no file
    /// name can hold a NUL.
    Nul,
}

impl Terminator {
    /// The byte that ends a line.
    pub fn byte(self) -> u8 {
        match self {
            Terminator::Newline => b'\n',
            Terminator::Nul => b'\0',
        }
    }
}

/// The tag of a BSD-style line: `SHA256` for the plain layout (the spelling of coreutils,
/// b3sum and xxhsum, so that their `-c` accepts our files), and for a tree layout its name,
/// the algorithm and the leaf size, so that the line says how to recompute itself.
///
/// ```
/// use mtsum::{Algorithm, Layout, LeafSize, sumfile::tag};
/// assert_eq!(tag(Layout::Plain, Algorithm::Xxh128), "XXH128");
/// assert_eq!(tag(Layout::Mtsum, Algorithm::Sha256), "MTSUM-SHA256");
/// assert_eq!(tag(Layout::Merkle(LeafSize::new(64).unwrap()), Algorithm::Md5), "MERKLE-MD5-64");
/// ```
pub fn tag(layout: Layout, alg: Algorithm) -> String {
    let alg = alg.name().to_ascii_uppercase();
    if layout == Layout::Plain {
        return alg;
    }
    let name = layout.name().to_ascii_uppercase();
    if let Layout::S3Parts(parts) = layout {
        return format!("{name}-{alg}-{parts}");
    }
    match layout.size_parameter() {
        Some(leaf) => format!("{name}-{alg}-{leaf}"),
        None => format!("{name}-{alg}"),
    }
}

/// The layout and algorithm a tag names: the inverse of [`tag`], in any letter case. A leaf
/// size may be spelled in any way `-l` accepts (`1M`, `1MiB`, `1048576`). `None` for a tag we
/// do not know, such as coreutils' `BLAKE2b` or xxhsum's `XXH64`: such a digest cannot be
/// recomputed, so a line carrying it is not a line we can check.
///
/// ```
/// use mtsum::{Algorithm, Layout, LeafSize, sumfile::parse_tag};
/// let leaf = LeafSize::new(1 << 20).unwrap();
/// assert_eq!(parse_tag("rfc6962-sha256-1M"), Some((Layout::Rfc6962(leaf), Algorithm::Sha256)));
/// assert_eq!(parse_tag("SHA256"), Some((Layout::Plain, Algorithm::Sha256)));
/// assert_eq!(parse_tag("BLAKE2b"), None);
/// ```
pub fn parse_tag(tag: &str) -> Option<(Layout, Algorithm)> {
    let tree = tag
        .split_once('-')
        .and_then(|(name, rest)| Some((name, rest, Layout::from_name(name, None).ok()?)));
    let Some((name, rest, layout)) = tree else {
        return Some((Layout::Plain, tag.parse().ok()?));
    };
    let (layout, alg) = match layout {
        // "PLAIN-SHA256" is not something we write: one spelling per layout.
        Layout::Plain => return None,
        _ if layout.size_parameter().is_none() => (layout, rest.parse().ok()?),
        _ => {
            // The size comes last, so that an algorithm spelled with a dash still parses.
            let (alg, size) = rest.rsplit_once('-')?;
            let layout = match PartList::is_list(size) && layout.name() == "s3" {
                true => Layout::S3Parts(size.parse().ok()?),
                false => Layout::from_name(name, Some(size.parse().ok()?)).ok()?,
            };
            (layout, alg.parse().ok()?)
        }
    };
    // A tag naming an algorithm its layout is not defined with cannot be recomputed either.
    layout.check_algorithm(alg).ok()?;
    Some((layout, alg))
}

/// A tag as found in a line: ours and coreutils' ([`parse_tag`]), or xxhsum's
/// `--little-endian` ones (`XXH3_LE`, `XXH128_LE`), whose digests are printed byte-reversed.
fn parse_line_tag(tag: &[u8]) -> Option<(Layout, Algorithm, ByteOrder)> {
    let tag = std::str::from_utf8(tag).ok()?;
    let little = tag.len() >= 3 && tag.as_bytes()[tag.len() - 3..].eq_ignore_ascii_case(b"_LE");
    if little {
        // The last three bytes are ASCII, so this is a character boundary.
        let alg = tag[..tag.len() - 3].parse().ok()?;
        return matches!(alg, Algorithm::Xxh3 | Algorithm::Xxh128).then_some((
            Layout::Plain,
            alg,
            ByteOrder::Reversed,
        ));
    }
    let (layout, alg) = parse_tag(tag)?;
    Some((layout, alg, ByteOrder::AsPrinted))
}

/// Whether a digest's hex is the value itself or its bytes in reverse (xxhsum `_LE` tags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ByteOrder {
    AsPrinted,
    Reversed,
}

/// The algorithms whose digests are `len` bytes long: the candidates for an untagged line
/// whose algorithm the command line does not fix. More than one means the length is
/// ambiguous (MD5 and XXH128 are both 16 bytes; SHA-256 and BLAKE3 both 32).
///
/// ```
/// use mtsum::{Algorithm, sumfile::algorithms_with_digest_len};
/// assert_eq!(algorithms_with_digest_len(20), [Algorithm::Sha1]);
/// assert_eq!(algorithms_with_digest_len(32), [Algorithm::Sha256, Algorithm::Blake3]);
/// assert!(algorithms_with_digest_len(7).is_empty());
/// ```
pub fn algorithms_with_digest_len(len: usize) -> Vec<Algorithm> {
    Algorithm::ALL
        .into_iter()
        .filter(|a| a.digest_len() == len)
        .collect()
}

/// Whether coreutils escapes `name` in a checksum line: it holds a `\`, a newline or a
/// carriage return, any of which would make the line ambiguous or split it.
pub fn needs_escape(name: &[u8]) -> bool {
    name.iter().any(|b| matches!(b, b'\\' | b'\n' | b'\r'))
}

/// `name` with `\` written `\\`, a newline `\n` and a carriage return `\r`, as coreutils 9
/// writes it; borrowed when there is nothing to escape. A line holding an escaped name must
/// start with `\` (see [`needs_escape`]), or readers take the escapes literally.
pub fn escape_name(name: &[u8]) -> Cow<'_, [u8]> {
    if !needs_escape(name) {
        return Cow::Borrowed(name);
    }
    let mut out = Vec::with_capacity(name.len() + 8);
    for &b in name {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.push(b),
        }
    }
    Cow::Owned(out)
}

/// The inverse of [`escape_name`]; `None` when a `\` is last or followed by anything but `\`,
/// `n` or `r` (coreutils then calls the line improperly formatted).
fn unescape_name(name: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(name.len());
    let mut bytes = name.iter();
    while let Some(&b) = bytes.next() {
        out.push(if b == b'\\' {
            match bytes.next()? {
                b'\\' => b'\\',
                b'n' => b'\n',
                b'r' => b'\r',
                _ => return None,
            }
        } else {
            b
        });
    }
    Some(out)
}

/// How `sha256sum -c` of coreutils 9.1 prints a name before `: OK`, `: FAILED` and
/// `: FAILED open or read`: raw, unless it holds a newline; then escaped, behind a `\`.
/// (Unlike checksum lines, a lone `\` or carriage return does not trigger escaping there.
/// Later coreutils escape in both places alike.)
pub fn verdict_name(name: &[u8]) -> Cow<'_, [u8]> {
    if !name.contains(&b'\n') {
        return Cow::Borrowed(name);
    }
    let mut out = b"\\".to_vec();
    out.extend_from_slice(&escape_name(name));
    Cow::Owned(out)
}

/// One checksum line, terminator included, byte for byte as coreutils prints it: `HEX  NAME`
/// or `TAG (NAME) = HEX` (see [`tag`]), escaped as described in the module documentation; or
/// the bare `HEX`.
/// `layout` and `alg` matter only for [`Format::Tag`].
pub fn format_line(
    format: Format,
    terminator: Terminator,
    layout: Layout,
    alg: Algorithm,
    root: &Root,
    name: &[u8],
) -> Vec<u8> {
    let hex = root.to_string();
    match format {
        Format::Gnu => labelled_line(&hex, name, terminator),
        Format::Tag => line_with_name(name, terminator, |line, name| {
            line.extend_from_slice(tag(layout, alg).as_bytes());
            line.extend_from_slice(b" (");
            line.extend_from_slice(name);
            line.extend_from_slice(b") = ");
            line.extend_from_slice(hex.as_bytes());
        }),
        Format::Bare => {
            let mut line = hex.into_bytes();
            line.push(terminator.byte());
            line
        }
    }
}

/// `LABEL  NAME`: a GNU line with any word in place of the digest, escaped alike, so that a
/// line of another report (an audit's `corrupt  NAME`) holds one name just as a checksum
/// line does.
///
/// ```
/// use mtsum::sumfile::{Terminator, labelled_line};
/// assert_eq!(labelled_line("ok", b"a b", Terminator::Newline), b"ok  a b\n");
/// assert_eq!(labelled_line("corrupt", b"x\ny", Terminator::Newline), b"\\corrupt  x\\ny\n");
/// ```
pub fn labelled_line(label: &str, name: &[u8], terminator: Terminator) -> Vec<u8> {
    line_with_name(name, terminator, |line, name| {
        line.extend_from_slice(label.as_bytes());
        line.extend_from_slice(b"  ");
        line.extend_from_slice(name);
    })
}

/// The line `fields` writes around `name`: the name escaped (and the line marked with a
/// leading `\`) where a newline terminator calls for it, and the terminator at the end.
fn line_with_name(
    name: &[u8],
    terminator: Terminator,
    fields: impl FnOnce(&mut Vec<u8>, &[u8]),
) -> Vec<u8> {
    let escaped = terminator == Terminator::Newline && needs_escape(name);
    let name = if escaped {
        escape_name(name)
    } else {
        Cow::Borrowed(name)
    };
    let mut line = Vec::with_capacity(name.len() + 160);
    if escaped {
        line.push(b'\\');
    }
    fields(&mut line, &name);
    line.push(terminator.byte());
    line
}

/// One checksum line, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The file to check, unescaped: the raw bytes of its path.
    pub name: Vec<u8>,
    /// The value the file should have, in the byte order mtsum computes (xxhsum's
    /// little-endian `_LE` digests are turned around), read from hex or base64, with S3's
    /// part count if the line has one.
    pub expected: Root,
    /// The layout and algorithm the line's tag names; `None` for an untagged line, whose
    /// algorithm the caller chooses (then `expected` has the length of at least one
    /// algorithm, but not necessarily of the chosen one: a mismatch is an improper line).
    pub spec: Option<(Layout, Algorithm)>,
}

/// Why a line is not a checksum line. `sha256sum -c` counts all of these alike as
/// "improperly formatted"; the reasons are for library users and `--warn` diagnostics.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ImproperLine {
    /// `TAG (NAME) = HEX` with a tag we cannot recompute.
    #[error("unknown tag '{0}'")]
    UnknownTag(String),
    /// The digest is neither hex nor base64 of the length of any algorithm's digest (or of
    /// the tag's algorithm's).
    #[error("the digest is not hex or base64 of a known length")]
    BadDigest,
    /// A line starting with `\` whose name holds an escape other than `\\`, `\n`, `\r`.
    #[error("invalid escape in the file name")]
    BadEscape,
    /// `HEX NAME` (one space, BSD `md5 -r` style) after `HEX  NAME` lines, or the reverse:
    /// coreutils refuses to mix them, lest a name with a leading space be misread.
    #[error("'HEX NAME' and 'HEX  NAME' lines are mixed")]
    MixedSeparators,
    /// Anything else: no separator, no digest, a NUL byte, a truncated tag line.
    #[error("not a checksum line")]
    Syntax,
}

/// How untagged lines separate digest and name. coreutils decides on the first such line of
/// a run and holds the others to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Separator {
    /// `HEX  NAME` or `HEX *NAME`: a blank, then a space or the binary marker `*`.
    Gnu,
    /// `HEX NAME`: one blank, as BSD `md5 -r` prints.
    Reversed,
}

/// Reads the lines of sum files, remembering between lines what coreutils remembers.
///
/// That is one thing: whether untagged lines separate digest and name by two characters
/// (`HEX  NAME`, `HEX *NAME`) or by one blank (`HEX NAME`). The first untagged line decides;
/// a later line of the other kind is improper, and once one blank is the rule a name keeps
/// any leading space or `*`. (coreutils keeps this across all the files of one `-c` run, so
/// use one parser for them all to match it exactly.)
#[derive(Clone, Debug, Default)]
pub struct Parser {
    terminator: Terminator,
    separator: Option<Separator>,
}

/// Blanks, as coreutils' `ISWHITE`.
fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

impl Parser {
    /// A parser for lines ending in `terminator`. coreutils' `-c` reads only
    /// [`Terminator::Newline`] files; [`Terminator::Nul`] reads what `-z` writes.
    pub fn new(terminator: Terminator) -> Parser {
        Parser {
            terminator,
            separator: None,
        }
    }

    /// Parses one line, with or without its terminator. `Ok(None)` for what carries no
    /// checksum: an empty line, or one whose first byte is `#`.
    ///
    /// What is accepted is what `sha256sum -c` (coreutils 9.1) accepts, by the same rules:
    /// - a trailing `\r` is dropped (CRLF files), except in NUL-terminated lines;
    /// - blanks (spaces, tabs) before the line are skipped, then a `\` marks an escaped name;
    /// - `TAG (NAME) = HEX`: at most one space before `(`; the name ends at the *last* `)`,
    ///   so it may hold `) = ` itself; any blanks around `=`; nothing after the hex;
    /// - `HEX  NAME`, `HEX *NAME` (the digest ends at the first blank, then one space or `*`),
    ///   or `HEX NAME` (see [`Parser`]); the name is everything after, blanks included;
    /// - hex in either case, of the tag's algorithm's length, or for an untagged line of the
    ///   length of some algorithm.
    ///
    /// Differences, on purpose: tags are matched in any case and every tag of [`parse_tag`]
    /// is known (coreutils' tools know their own); a NUL byte makes the line improper
    /// (coreutils would silently cut the name at it).
    pub fn parse_line(&mut self, line: &[u8]) -> Result<Option<Entry>, ImproperLine> {
        if line.first() == Some(&b'#') {
            return Ok(None);
        }
        let end = self.terminator.byte();
        let mut line = line.strip_suffix(&[end]).unwrap_or(line);
        if self.terminator == Terminator::Newline {
            line = line.strip_suffix(b"\r").unwrap_or(line);
        }
        if line.is_empty() {
            return Ok(None);
        }
        if line.contains(&b'\0') {
            return Err(ImproperLine::Syntax);
        }
        let start = line
            .iter()
            .position(|&b| !is_blank(b))
            .unwrap_or(line.len());
        let mut rest = &line[start..];
        let escaped = rest.first() == Some(&b'\\');
        if escaped {
            rest = &rest[1..];
        }
        // A tag is the word before " (" or "(" (coreutils also reads OpenSSL's `SHA256(f)= `).
        let word_end = rest.iter().position(|&b| b == b' ' || b == b'(');
        let tagged = word_end.and_then(|w| {
            let after = &rest[w..];
            let open = after
                .strip_prefix(b" (")
                .or_else(|| after.strip_prefix(b"("))?;
            Some((&rest[..w], open))
        });
        let known = tagged.and_then(|(word, after_open)| Some((parse_line_tag(word)?, after_open)));
        if let Some(((layout, alg, order), after_open)) = known {
            return parse_tagged(after_open, escaped, layout, alg, order).map(Some);
        }
        match (self.parse_untagged(rest, escaped), tagged) {
            // A line shaped like a tag line is reported for its tag, not as bad hex.
            (Err(ImproperLine::BadDigest | ImproperLine::Syntax), Some((word, after)))
                if !word.is_empty() && after.contains(&b')') =>
            {
                Err(ImproperLine::UnknownTag(
                    String::from_utf8_lossy(word).into_owned(),
                ))
            }
            (result, _) => result.map(Some),
        }
    }

    /// `HEX  NAME`, `HEX *NAME` or `HEX NAME`, after the optional `\`.
    fn parse_untagged(&mut self, s: &[u8], escaped: bool) -> Result<Entry, ImproperLine> {
        let hex_end = s
            .iter()
            .position(|&b| is_blank(b))
            .ok_or(ImproperLine::Syntax)?;
        let field = &s[..hex_end];
        // Some xxhsum versions print `XXH3_HEX  NAME` to tell XXH3 from XXH64, which is just
        // as long.
        let (field, spec) = match field.strip_prefix(b"XXH3_") {
            Some(hex) => (hex, Some((Layout::Plain, Algorithm::Xxh3))),
            None => (field, None),
        };
        let expected = match spec {
            Some((_, alg)) => parse_value(field, &[alg.digest_len()]),
            None => parse_value(field, &digest_lengths()),
        }
        .ok_or(ImproperLine::BadDigest)?;
        // After the blank that ends the digest, at least one byte: the name is never empty.
        let mut name_start = hex_end + 1;
        let Some(&marker) = s.get(name_start) else {
            return Err(ImproperLine::Syntax);
        };
        let one_blank = s.len() - name_start == 1 || (marker != b' ' && marker != b'*');
        if one_blank {
            if self.separator == Some(Separator::Gnu) {
                return Err(ImproperLine::MixedSeparators);
            }
            self.separator = Some(Separator::Reversed);
        } else if self.separator != Some(Separator::Reversed) {
            self.separator = Some(Separator::Gnu);
            name_start += 1;
        }
        Ok(Entry {
            name: name_bytes(&s[name_start..], escaped)?,
            expected,
            spec,
        })
    }
}

/// Parses one line as a [`Parser`] that has seen no other line does: the convenient form for a
/// single line. A whole file should go through one [`Parser`], which applies coreutils' rule
/// about mixing `HEX NAME` and `HEX  NAME` lines.
pub fn parse_line(line: &[u8]) -> Result<Option<Entry>, ImproperLine> {
    Parser::default().parse_line(line)
}

/// The rest of `TAG (NAME) = HEX` after the `(`.
fn parse_tagged(
    s: &[u8],
    escaped: bool,
    layout: Layout,
    alg: Algorithm,
    order: ByteOrder,
) -> Result<Entry, ImproperLine> {
    // The hex never holds a `)`, so the last one closes the name, whatever the name holds.
    let close = s
        .iter()
        .rposition(|&b| b == b')')
        .ok_or(ImproperLine::Syntax)?;
    let after = trim_blanks_start(&s[close + 1..]);
    let hex = trim_blanks_start(after.strip_prefix(b"=").ok_or(ImproperLine::Syntax)?);
    let mut expected = parse_value(hex, &[alg.digest_len()]).ok_or(ImproperLine::BadDigest)?;
    if order == ByteOrder::Reversed {
        let mut bytes = expected.digest().as_bytes().to_vec();
        bytes.reverse();
        expected = Root::new(Digest::from_slice(&bytes));
    }
    Ok(Entry {
        name: name_bytes(&s[..close], escaped)?,
        expected,
        spec: Some((layout, alg)),
    })
}

fn trim_blanks_start(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| !is_blank(b)).unwrap_or(s.len());
    &s[start..]
}

/// The name as the line holds it, unescaped if the line started with `\`.
fn name_bytes(name: &[u8], escaped: bool) -> Result<Vec<u8>, ImproperLine> {
    if escaped {
        unescape_name(name).ok_or(ImproperLine::BadEscape)
    } else {
        Ok(name.to_vec())
    }
}

/// A value as a line holds it, for a digest of one of the lengths `lens`: hex digits, or
/// base64 (as `--base64` writes and S3, GCS and Azure report), either followed by S3's `-N`
/// (see [`Root::parse`]). Hex is tried at every length first, so that the one value that is
/// both (64 hex digits, or base64 of 48 bytes) is read as hex, as `sha256sum` means it.
fn parse_value(value: &[u8], lens: &[usize]) -> Option<Root> {
    let value = std::str::from_utf8(value).ok()?;
    let digits = value.split_once('-').map_or(value, |(d, _)| d);
    // Hex of another length is not read as base64; looked at only where a length differs.
    let hex = std::cell::OnceCell::new();
    let is_hex = || *hex.get_or_init(|| digits.bytes().all(|b| b.is_ascii_hexdigit()));
    lens.iter()
        .filter(|&&len| digits.len() == 2 * len || !is_hex())
        .find_map(|&len| Root::parse(value, len))
}

/// Every algorithm's digest length, each once.
fn digest_lengths() -> Vec<usize> {
    let mut lens: Vec<usize> = Algorithm::ALL.iter().map(|a| a.digest_len()).collect();
    lens.sort_unstable();
    lens.dedup();
    lens
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LeafSize;

    fn sha256_of_abc() -> Digest {
        Algorithm::Sha256.hash(b"abc")
    }

    const ABC_SHA256: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn gnu_line_has_two_spaces_and_no_escape_for_plain_names() {
        let line = format_line(
            Format::Gnu,
            Terminator::Newline,
            Layout::Plain,
            Algorithm::Sha256,
            &Root::new(sha256_of_abc()),
            b"a b.txt",
        );
        assert_eq!(line, format!("{ABC_SHA256}  a b.txt\n").into_bytes());
    }

    #[test]
    fn backslash_newline_and_cr_are_escaped_and_mark_the_line() {
        let line = format_line(
            Format::Gnu,
            Terminator::Newline,
            Layout::Plain,
            Algorithm::Md5,
            &Root::new(Algorithm::Md5.hash(b"")),
            b"a\\b\nc\rd",
        );
        assert_eq!(
            line,
            b"\\d41d8cd98f00b204e9800998ecf8427e  a\\\\b\\nc\\rd\n"
        );
    }

    #[test]
    fn escaped_names_mark_the_whole_tag_line() {
        let line = format_line(
            Format::Tag,
            Terminator::Newline,
            Layout::Plain,
            Algorithm::Sha256,
            &Root::new(sha256_of_abc()),
            b"a\\b\nc\rd",
        );
        assert_eq!(
            line,
            format!("\\SHA256 (a\\\\b\\nc\\rd) = {ABC_SHA256}\n").into_bytes()
        );
    }

    #[test]
    fn nul_terminated_lines_are_not_escaped() {
        let line = format_line(
            Format::Gnu,
            Terminator::Nul,
            Layout::Plain,
            Algorithm::Sha256,
            &Root::new(sha256_of_abc()),
            b"a\\b\nc",
        );
        assert_eq!(line, format!("{ABC_SHA256}  a\\b\nc\0").into_bytes());
    }

    #[test]
    fn tags_of_tree_layouts_carry_the_leaf_size() {
        let leaf = |n| LeafSize::new(n).unwrap();
        assert_eq!(tag(Layout::Mtsum, Algorithm::Blake3), "MTSUM-BLAKE3");
        assert_eq!(
            tag(Layout::Rfc6962(leaf(1 << 20)), Algorithm::Sha256),
            "RFC6962-SHA256-1M"
        );
        assert_eq!(
            tag(Layout::Merkle(leaf(1536)), Algorithm::Xxh3),
            "MERKLE-XXH3-1536"
        );
    }

    #[test]
    fn an_s3_tag_names_its_part_size_or_each_part_where_they_differ() {
        use crate::layout::PartSize;
        let mib = 1 << 20;
        let uniform = Layout::S3(PartSize::DEFAULT);
        let listed = Layout::S3Parts(PartList::new(&[5 * mib, 7 * mib, 5 * mib, 1]).unwrap());
        assert_eq!(tag(uniform, Algorithm::Md5), "S3-MD5-8M");
        assert_eq!(tag(listed, Algorithm::Md5), "S3-MD5-5M,7M,5M,1");
        for layout in [uniform, listed] {
            assert_eq!(
                parse_tag(&tag(layout, Algorithm::Sha256)),
                Some((layout, Algorithm::Sha256))
            );
        }
        assert_eq!(
            parse_tag("s3-crc32-8mx2,1"),
            Some((
                Layout::S3Parts(PartList::new(&[8 * mib, 8 * mib, 1]).unwrap()),
                Algorithm::Crc32,
            ))
        );
        // A list is S3's alone, and its parts follow S3's rules.
        assert_eq!(parse_tag("MERKLE-SHA256-1M,2M"), None);
        assert_eq!(parse_tag("S3-MD5-1M,1"), None);
    }

    #[test]
    fn untagged_line_parses_with_binary_marker() {
        let e = parse_line(format!("{ABC_SHA256} *f").as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(e.name, b"f");
        assert_eq!(e.expected, Root::new(sha256_of_abc()));
        assert_eq!(e.spec, None);
    }

    #[test]
    fn hex_with_a_sign_is_not_a_digest() {
        assert_eq!(parse_value(b"+f", &[1]), None);
        assert_eq!(parse_value(b"", &[1]), None);
        let read = parse_value(b"0F", &[1]).map(|r| r.digest().to_hex());
        assert_eq!(read, Some("0f".into()));
    }

    #[test]
    fn unescape_inverts_escape() {
        let name = b"\\\n\r x\\n";
        assert_eq!(unescape_name(&escape_name(name)).unwrap(), name);
        assert_eq!(unescape_name(b"a\\"), None);
        assert_eq!(unescape_name(b"a\\t"), None);
    }
}
