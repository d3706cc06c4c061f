//! Sum files against the tools people already have: what mtsum writes must be byte for byte
//! what `sha256sum`, `md5sum`, `b3sum` and `xxhsum` write, their `-c` must accept it, and our
//! parser must read their files. Plus the grammar's corner cases and a fuzzing of the parser.
//!
//! Tests that need a tool which is not installed say so on stderr and pass.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Output};

use mtsum::layout::{PartSize, Root};
use mtsum::sumfile::{
    self, Entry, Format, ImproperLine, Parser, Terminator, algorithms_with_digest_len, parse_line,
    parse_tag, tag,
};
use mtsum::{Algorithm, Digest, Layout, LeafSize, reference};
use proptest::prelude::*;

/// The content of every scenario file.
const CONTENT: &[u8] = b"abc";

/// Names that exercise every rule: blanks, the escaped bytes, bytes that are not UTF-8, the
/// characters of the tag syntax, and leading characters that mean something in a sum file.
const NAMES: &[&[u8]] = &[
    b"plain",
    b"a b",
    b" leading space",
    b"trailing space ",
    b"tab\there",
    b"back\\slash",
    b"\\",
    b"new\nline",
    b"cr\rx",
    b"all\\three\n\r",
    b"bad\xff\xfe",
    b"p (x) = y",
    b"close)",
    b"*star",
    b"#hash",
];

fn leaf(n: u64) -> LeafSize {
    LeafSize::new(n).unwrap()
}

/// A directory holding one file per name of [`NAMES`], all with [`CONTENT`].
fn scenario() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in NAMES {
        std::fs::write(dir.path().join(OsStr::from_bytes(name)), CONTENT).unwrap();
    }
    dir
}

/// Runs `tool args... names...` in `dir`; `None` (and a note) when the tool is missing.
fn run(dir: &Path, tool: &str, args: &[&str], names: &[&[u8]]) -> Option<Output> {
    let output = Command::new(tool)
        .current_dir(dir)
        .args(args)
        .args(names.iter().map(|n| OsStr::from_bytes(n)))
        .output();
    match output {
        Ok(out) => Some(out),
        Err(e) => {
            eprintln!("skipped: {tool} is not available ({e})");
            None
        }
    }
}

/// Runs a tool that must succeed and returns its stdout.
fn stdout_of(dir: &Path, tool: &str, args: &[&str], names: &[&[u8]]) -> Option<Vec<u8>> {
    let out = run(dir, tool, args, names)?;
    assert!(
        out.status.success(),
        "{tool} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(out.stdout)
}

/// What mtsum writes for every name, in one format, for the plain layout.
fn our_lines(format: Format, terminator: Terminator, alg: Algorithm, names: &[&[u8]]) -> Vec<u8> {
    let digest = alg.hash(CONTENT);
    names
        .iter()
        .flat_map(|name| {
            sumfile::format_line(format, terminator, Layout::Plain, alg, &digest.into(), name)
        })
        .collect()
}

/// Splits tool output into lines, terminators kept.
fn lines(bytes: &[u8], terminator: u8) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == terminator).collect()
}

fn compare_with_tool(
    tool: &str,
    args: &[&str],
    format: Format,
    terminator: Terminator,
    alg: Algorithm,
    names: &[&[u8]],
) {
    let dir = scenario();
    let Some(theirs) = stdout_of(dir.path(), tool, args, names) else {
        return;
    };
    let ours = our_lines(format, terminator, alg, names);
    let t = terminator.byte();
    for (o, t_line) in lines(&ours, t).iter().zip(lines(&theirs, t)) {
        assert_eq!(
            String::from_utf8_lossy(o),
            String::from_utf8_lossy(t_line),
            "{tool} {args:?}: {:?} vs {:?}",
            o,
            t_line
        );
    }
    assert_eq!(ours, theirs, "{tool} {args:?}");
}

// ---------------------------------------------------------------------------------------------
// Writing: byte for byte what the other tools write
// ---------------------------------------------------------------------------------------------

#[test]
fn gnu_lines_match_sha256sum_byte_for_byte() {
    compare_with_tool(
        "sha256sum",
        &[],
        Format::Gnu,
        Terminator::Newline,
        Algorithm::Sha256,
        NAMES,
    );
}

#[test]
fn tagged_lines_match_coreutils_tag_for_every_coreutils_algorithm() {
    for (tool, alg) in [
        ("md5sum", Algorithm::Md5),
        ("sha1sum", Algorithm::Sha1),
        ("sha224sum", Algorithm::Sha224),
        ("sha256sum", Algorithm::Sha256),
        ("sha384sum", Algorithm::Sha384),
        ("sha512sum", Algorithm::Sha512),
    ] {
        compare_with_tool(
            tool,
            &["--tag"],
            Format::Tag,
            Terminator::Newline,
            alg,
            NAMES,
        );
        compare_with_tool(tool, &[], Format::Gnu, Terminator::Newline, alg, NAMES);
    }
}

#[test]
fn nul_terminated_lines_match_sha256sum_z_unescaped() {
    compare_with_tool(
        "sha256sum",
        &["-z"],
        Format::Gnu,
        Terminator::Nul,
        Algorithm::Sha256,
        NAMES,
    );
    compare_with_tool(
        "sha256sum",
        &["--tag", "-z"],
        Format::Tag,
        Terminator::Nul,
        Algorithm::Sha256,
        NAMES,
    );
}

#[test]
fn plain_tags_match_xxhsum_tag() {
    // xxhsum 0.8.1 escapes nothing, so only names that need no escaping compare.
    let names: Vec<&[u8]> = NAMES
        .iter()
        .copied()
        .filter(|n| !sumfile::needs_escape(n))
        .collect();
    compare_with_tool(
        "xxhsum",
        &["--tag", "-H3"],
        Format::Tag,
        Terminator::Newline,
        Algorithm::Xxh3,
        &names,
    );
    compare_with_tool(
        "xxhsum",
        &["--tag", "-H128"],
        Format::Tag,
        Terminator::Newline,
        Algorithm::Xxh128,
        &names,
    );
}

#[test]
fn gnu_lines_match_b3sum_for_names_it_prints_exactly() {
    // b3sum prints names as UTF-8 (lossily) and does not escape a carriage return.
    let names: Vec<&[u8]> = NAMES
        .iter()
        .copied()
        .filter(|n| std::str::from_utf8(n).is_ok() && !n.contains(&b'\r'))
        .collect();
    compare_with_tool(
        "b3sum",
        &[],
        Format::Gnu,
        Terminator::Newline,
        Algorithm::Blake3,
        &names,
    );
}

#[test]
fn tagged_lines_name_the_layout_and_leaf_size() {
    let cases = [
        (Layout::Plain, Algorithm::Sha256, "SHA256"),
        (Layout::Plain, Algorithm::Md5, "MD5"),
        (Layout::Plain, Algorithm::Blake3, "BLAKE3"),
        (Layout::Plain, Algorithm::Xxh3, "XXH3"),
        (Layout::Plain, Algorithm::Xxh128, "XXH128"),
        (Layout::Mtsum, Algorithm::Sha256, "MTSUM-SHA256"),
        (
            Layout::Merkle(leaf(64)),
            Algorithm::Sha256,
            "MERKLE-SHA256-64",
        ),
        (
            Layout::Rfc6962(leaf(1 << 20)),
            Algorithm::Sha256,
            "RFC6962-SHA256-1M",
        ),
        (
            Layout::Rfc6962(leaf(4 << 10)),
            Algorithm::Blake3,
            "RFC6962-BLAKE3-4K",
        ),
        (
            Layout::Merkle(leaf(3 << 30)),
            Algorithm::Sha512,
            "MERKLE-SHA512-3G",
        ),
        (
            Layout::Merkle(leaf(1000)),
            Algorithm::Sha1,
            "MERKLE-SHA1-1000",
        ),
    ];
    for (layout, alg, expected) in cases {
        assert_eq!(tag(layout, alg), expected);
        let digest = reference::root(layout, alg, CONTENT);
        let line = sumfile::format_line(
            Format::Tag,
            Terminator::Newline,
            layout,
            alg,
            &digest.into(),
            b"f",
        );
        assert_eq!(
            line,
            format!("{expected} (f) = {}\n", digest.to_hex()).into_bytes()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The other tools read what we write
// ---------------------------------------------------------------------------------------------

/// Writes `sums` to a file in `dir` and runs `tool -c` on it; `None` when the tool is missing.
fn check_with(dir: &Path, tool: &str, args: &[&str], sums: &[u8]) -> Option<Output> {
    let sum_file = dir.join("SUMS");
    std::fs::write(&sum_file, sums).unwrap();
    let mut all: Vec<&str> = args.to_vec();
    all.push("-c");
    let out = run(dir, tool, &all, &[sum_file.as_os_str().as_bytes()])?;
    std::fs::remove_file(&sum_file).unwrap();
    Some(out)
}

#[test]
fn coreutils_check_accepts_what_we_write() {
    let dir = scenario();
    for (tool, alg) in [("sha256sum", Algorithm::Sha256), ("md5sum", Algorithm::Md5)] {
        for format in [Format::Gnu, Format::Tag] {
            let sums = our_lines(format, Terminator::Newline, alg, NAMES);
            let Some(out) = check_with(dir.path(), tool, &["--strict"], &sums) else {
                return;
            };
            assert!(
                out.status.success(),
                "{tool} -c {format:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let oks = lines(&out.stdout, b'\n')
                .iter()
                .filter(|l| l.ends_with(b": OK\n"))
                .count();
            assert_eq!(oks, NAMES.len(), "{tool} -c {format:?}");
        }
    }
}

#[test]
fn xxhsum_and_b3sum_check_accept_what_we_write() {
    let dir = scenario();
    let simple: Vec<&[u8]> = NAMES
        .iter()
        .copied()
        .filter(|n| !sumfile::needs_escape(n))
        .collect();
    let utf8: Vec<&[u8]> = simple
        .iter()
        .copied()
        .filter(|n| std::str::from_utf8(n).is_ok())
        .collect();
    let runs = [
        ("xxhsum", Format::Tag, Algorithm::Xxh3, &simple),
        ("xxhsum", Format::Tag, Algorithm::Xxh128, &simple),
        ("xxhsum", Format::Gnu, Algorithm::Xxh128, &simple),
        ("b3sum", Format::Gnu, Algorithm::Blake3, &utf8),
    ];
    for (tool, format, alg, names) in runs {
        let sums = our_lines(format, Terminator::Newline, alg, names);
        let Some(out) = check_with(dir.path(), tool, &[], &sums) else {
            continue;
        };
        assert!(
            out.status.success(),
            "{tool} -c {alg} {format:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// We read what the other tools write
// ---------------------------------------------------------------------------------------------

/// Parses every line of `sums` with one parser, as `-c` does, and checks that each names one
/// of `names`, in order, with the digest of [`CONTENT`].
fn assert_reads(sums: &[u8], names: &[&[u8]], alg: Algorithm, tagged: bool, what: &str) {
    let mut parser = Parser::default();
    let entries: Vec<Entry> = lines(sums, b'\n')
        .into_iter()
        .map(|l| {
            parser
                .parse_line(l)
                .unwrap_or_else(|e| panic!("{what}: {e}: {:?}", String::from_utf8_lossy(l)))
                .expect("a checksum line")
        })
        .collect();
    let got: Vec<&[u8]> = entries.iter().map(|e| &e.name[..]).collect();
    assert_eq!(got, names, "{what}");
    for e in &entries {
        assert_eq!(e.expected, Root::from(alg.hash(CONTENT)), "{what}");
        assert_eq!(e.spec, tagged.then_some((Layout::Plain, alg)), "{what}");
    }
}

#[test]
fn we_read_what_coreutils_writes() {
    let dir = scenario();
    for (tool, alg) in [
        ("md5sum", Algorithm::Md5),
        ("sha1sum", Algorithm::Sha1),
        ("sha256sum", Algorithm::Sha256),
        ("sha512sum", Algorithm::Sha512),
    ] {
        for (args, tagged) in [
            (&[][..], false),
            (&["--tag"][..], true),
            (&["-b"][..], false),
        ] {
            let Some(sums) = stdout_of(dir.path(), tool, args, NAMES) else {
                return;
            };
            assert_reads(&sums, NAMES, alg, tagged, &format!("{tool} {args:?}"));
        }
    }
}

#[test]
fn we_read_what_xxhsum_and_b3sum_write() {
    let dir = scenario();
    let simple: Vec<&[u8]> = NAMES
        .iter()
        .copied()
        .filter(|n| !sumfile::needs_escape(n))
        .collect();
    for (args, alg, tagged) in [
        (&["-H3"][..], Algorithm::Xxh3, true), // 0.8.1 prints -H3 as a tag line anyway
        (&["--tag", "-H3"][..], Algorithm::Xxh3, true),
        (&["-H128"][..], Algorithm::Xxh128, false),
        (&["--tag", "-H128"][..], Algorithm::Xxh128, true),
        (
            &["--tag", "-H3", "--little-endian"][..],
            Algorithm::Xxh3,
            true,
        ),
        (
            &["--tag", "-H128", "--little-endian"][..],
            Algorithm::Xxh128,
            true,
        ),
    ] {
        let Some(sums) = stdout_of(dir.path(), "xxhsum", args, &simple) else {
            break;
        };
        // Some versions print `XXH3_HEX  NAME` for -H3: it is read as a tag, too.
        let tagged = tagged || sums.starts_with(b"XXH3_");
        assert_reads(&sums, &simple, alg, tagged, &format!("xxhsum {args:?}"));
    }
    let utf8: Vec<&[u8]> = NAMES
        .iter()
        .copied()
        .filter(|n| std::str::from_utf8(n).is_ok() && !n.contains(&b'\r'))
        .collect();
    if let Some(sums) = stdout_of(dir.path(), "b3sum", &[], &utf8) {
        assert_reads(&sums, &utf8, Algorithm::Blake3, false, "b3sum");
    }
}

// ---------------------------------------------------------------------------------------------
// The grammar, as sha256sum -c reads it (each case checked against coreutils 9.1)
// ---------------------------------------------------------------------------------------------

const ABC_SHA256: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

fn entry(line: &str) -> Entry {
    parse_line(line.as_bytes())
        .unwrap_or_else(|e| panic!("{line:?}: {e}"))
        .unwrap_or_else(|| panic!("{line:?}: no entry"))
}

fn sha256(name: &str, tagged: bool) -> Entry {
    Entry {
        name: name.as_bytes().to_vec(),
        expected: Root::from(Algorithm::Sha256.hash(CONTENT)),
        spec: tagged.then_some((Layout::Plain, Algorithm::Sha256)),
    }
}

#[test]
fn crlf_line_endings_are_accepted() {
    assert_eq!(entry(&format!("{ABC_SHA256}  f\r\n")), sha256("f", false));
    assert_eq!(
        entry(&format!("SHA256 (f) = {ABC_SHA256}\r\n")),
        sha256("f", true)
    );
    assert_eq!(entry(&format!("{ABC_SHA256}  f\r")), sha256("f", false));
    // Only one: a name may end in a carriage return (escaped, since coreutils 9).
    assert_eq!(
        entry(&format!("\\{ABC_SHA256}  f\\r\r\n")),
        sha256("f\r", false)
    );
}

#[test]
fn blank_lines_and_comments_carry_no_entry() {
    for line in ["", "\n", "\r\n", "#", "# a comment\n", "#{ABC_SHA256}  f\n"] {
        assert_eq!(parse_line(line.as_bytes()), Ok(None), "{line:?}");
    }
    // coreutils: only an empty line is blank, and only a `#` in the first column comments.
    for line in ["   \n", "\t\n", " # not a comment\n"] {
        assert!(parse_line(line.as_bytes()).is_err(), "{line:?}");
    }
}

#[test]
fn gnu_lines_take_two_spaces_or_a_binary_marker_or_a_tab() {
    assert_eq!(entry(&format!("{ABC_SHA256}  f")), sha256("f", false));
    assert_eq!(entry(&format!("{ABC_SHA256} *f")), sha256("f", false));
    assert_eq!(entry(&format!("{ABC_SHA256}\t f")), sha256("f", false));
    assert_eq!(entry(&format!("{ABC_SHA256}\t*f")), sha256("f", false));
    assert_eq!(entry(&format!("  {ABC_SHA256}  f")), sha256("f", false));
    // Everything after the separator is the name, blanks included.
    assert_eq!(entry(&format!("{ABC_SHA256}   f ")), sha256(" f ", false));
    assert_eq!(
        entry(&format!("{ABC_SHA256}  p (x) = y")),
        sha256("p (x) = y", false)
    );
}

#[test]
fn uppercase_hex_is_accepted() {
    let upper = ABC_SHA256.to_uppercase();
    assert_eq!(entry(&format!("{upper}  f")), sha256("f", false));
    assert_eq!(entry(&format!("SHA256 (f) = {upper}")), sha256("f", true));
}

#[test]
fn one_space_lines_are_accepted_but_not_mixed_with_two_space_lines() {
    // BSD `md5 -r` style: `HEX NAME`.
    let mut p = Parser::default();
    let one = format!("{ABC_SHA256} f");
    let two = format!("{ABC_SHA256}  f");
    assert_eq!(p.parse_line(one.as_bytes()), Ok(Some(sha256("f", false))));
    // Once one space is the rule, a second space belongs to the name.
    assert_eq!(p.parse_line(two.as_bytes()), Ok(Some(sha256(" f", false))));
    // The other way round, a one-space line is refused.
    let mut p = Parser::default();
    assert_eq!(p.parse_line(two.as_bytes()), Ok(Some(sha256("f", false))));
    assert_eq!(
        p.parse_line(one.as_bytes()),
        Err(ImproperLine::MixedSeparators)
    );
    // Tag lines do not take part.
    let tagged = format!("SHA256 (f) = {ABC_SHA256}");
    assert_eq!(p.parse_line(tagged.as_bytes()), Ok(Some(sha256("f", true))));
    // "HEX  " alone: one blank, then the name " ", as coreutils reads it.
    assert_eq!(entry(&format!("{ABC_SHA256}  ")), sha256(" ", false));
    assert!(parse_line(format!("{ABC_SHA256} ").as_bytes()).is_err());
    assert!(parse_line(ABC_SHA256.as_bytes()).is_err());
}

#[test]
fn escaped_lines_are_unescaped() {
    assert_eq!(
        entry(&format!("\\{ABC_SHA256}  back\\\\slash")),
        sha256("back\\slash", false)
    );
    assert_eq!(
        entry(&format!("\\{ABC_SHA256}  new\\nline")),
        sha256("new\nline", false)
    );
    assert_eq!(
        entry(&format!("\\{ABC_SHA256}  cr\\rx")),
        sha256("cr\rx", false)
    );
    assert_eq!(entry(&format!(" \\{ABC_SHA256}  f")), sha256("f", false));
    assert_eq!(
        entry(&format!("\\SHA256 (new\\nline) = {ABC_SHA256}")),
        sha256("new\nline", true)
    );
    // Without the leading `\`, escapes are taken literally.
    assert_eq!(
        entry(&format!("{ABC_SHA256}  new\\nline")),
        sha256("new\\nline", false)
    );
    assert_eq!(
        entry(&format!("SHA256 (new\\nline) = {ABC_SHA256}")),
        sha256("new\\nline", true)
    );
    for bad in [
        format!("\\{ABC_SHA256}  back\\slash"),
        format!("\\{ABC_SHA256}  trailing\\"),
        format!("\\SHA256 (a\\tb) = {ABC_SHA256}"),
    ] {
        assert_eq!(
            parse_line(bad.as_bytes()),
            Err(ImproperLine::BadEscape),
            "{bad:?}"
        );
    }
    // A blank between `\` and the digest is not allowed.
    assert!(parse_line(format!("\\ {ABC_SHA256}  f").as_bytes()).is_err());
}

#[test]
fn tag_lines_follow_coreutils_spacing() {
    assert_eq!(
        entry(&format!("SHA256 (f) = {ABC_SHA256}")),
        sha256("f", true)
    );
    // OpenSSL's `SHA256(f)= HEX`, and any blanks around `=`.
    assert_eq!(
        entry(&format!("SHA256(f)= {ABC_SHA256}")),
        sha256("f", true)
    );
    assert_eq!(
        entry(&format!("SHA256 (f)={ABC_SHA256}")),
        sha256("f", true)
    );
    assert_eq!(
        entry(&format!("SHA256 (f)\t=\t {ABC_SHA256}")),
        sha256("f", true)
    );
    assert_eq!(
        entry(&format!("  SHA256 (f) = {ABC_SHA256}")),
        sha256("f", true)
    );
    // Two spaces before `(`, anything after the digest, or no digest: improper.
    for bad in [
        format!("SHA256  (f) = {ABC_SHA256}"),
        format!("SHA256 (f) = {ABC_SHA256} "),
        format!("SHA256 (f) = {ABC_SHA256}x"),
        "SHA256 (f) = ".to_string(),
        format!("SHA256 (f) {ABC_SHA256}"),
        format!("SHA256 f) = {ABC_SHA256}"),
    ] {
        assert!(parse_line(bad.as_bytes()).is_err(), "{bad:?}");
    }
}

#[test]
fn tag_line_names_end_at_the_last_parenthesis() {
    assert_eq!(
        entry(&format!("SHA256 (p (x) = y) = {ABC_SHA256}")),
        sha256("p (x) = y", true)
    );
    assert_eq!(
        entry(&format!("SHA256 (a)b) = {ABC_SHA256}")),
        sha256("a)b", true)
    );
    assert_eq!(
        entry(&format!("SHA256 (close)) = {ABC_SHA256}")),
        sha256("close)", true)
    );
    assert_eq!(
        entry(&format!("SHA256 () = {ABC_SHA256}")),
        sha256("", true)
    );
}

#[test]
fn tag_lines_name_their_layout_and_algorithm_in_any_case() {
    let d = reference::root(Layout::Rfc6962(leaf(1 << 20)), Algorithm::Sha256, CONTENT);
    for t in [
        "RFC6962-SHA256-1M",
        "rfc6962-sha256-1m",
        "Rfc6962-Sha256-1MiB",
    ] {
        let e = entry(&format!("{t} (f) = {}", d.to_hex()));
        assert_eq!(
            e.spec,
            Some((Layout::Rfc6962(leaf(1 << 20)), Algorithm::Sha256)),
            "{t}"
        );
        assert_eq!(e.expected, Root::from(d));
    }
    let e = entry(&format!("sha256 (f) = {ABC_SHA256}"));
    assert_eq!(e, sha256("f", true));
}

#[test]
fn digests_must_have_the_length_of_the_tags_algorithm() {
    let md5 = Algorithm::Md5.hash(CONTENT).to_hex();
    assert_eq!(
        parse_line(format!("SHA256 (f) = {md5}").as_bytes()),
        Err(ImproperLine::BadDigest)
    );
    assert_eq!(
        parse_line(format!("SHA256 (f) = {}", &ABC_SHA256[1..]).as_bytes()),
        Err(ImproperLine::BadDigest)
    );
    assert_eq!(
        entry(&format!("MD5 (f) = {md5}")).spec,
        Some((Layout::Plain, Algorithm::Md5))
    );
}

#[test]
fn untagged_digests_must_have_some_algorithms_length() {
    for hex_len in [2, 6, 30, 62, 66, 130, 200] {
        let line = format!("{}  f", "a".repeat(hex_len));
        assert_eq!(
            parse_line(line.as_bytes()),
            Err(ImproperLine::BadDigest),
            "{hex_len}"
        );
    }
    for alg in Algorithm::ALL {
        let d = alg.hash(CONTENT);
        let e = entry(&format!("{d}  f"));
        assert_eq!(e.expected, Root::from(d));
        assert_eq!(e.spec, None);
        assert!(algorithms_with_digest_len(d.as_bytes().len()).contains(&alg));
    }
    assert!(parse_line(format!("{}  f", "!".repeat(64)).as_bytes()).is_err());
    assert!(parse_line(format!("+{}  f", &ABC_SHA256[2..]).as_bytes()).is_err());
    // Not hex, but base64 of 48 bytes: a SHA-384 as GCS or S3 headers would show it.
    let e = entry(&format!("{}  f", "g".repeat(64)));
    assert_eq!(e.expected.digest().as_bytes().len(), 48);
}

#[test]
fn ambiguous_digest_lengths_are_left_to_the_caller() {
    assert_eq!(
        algorithms_with_digest_len(16),
        [Algorithm::Md5, Algorithm::Xxh128]
    );
    assert_eq!(
        algorithms_with_digest_len(32),
        [Algorithm::Sha256, Algorithm::Blake3]
    );
    assert_eq!(
        algorithms_with_digest_len(8),
        [Algorithm::Xxh3, Algorithm::Crc64Nvme]
    );
    assert_eq!(
        algorithms_with_digest_len(4),
        [Algorithm::Crc32, Algorithm::Crc32c]
    );
    assert_eq!(algorithms_with_digest_len(64), [Algorithm::Sha512]);
    assert!(algorithms_with_digest_len(0).is_empty());
}

#[test]
fn unknown_tags_are_improper_and_named() {
    let blake2 = "a".repeat(128);
    for (line, tag) in [
        (format!("BLAKE2b (f) = {blake2}"), "BLAKE2b"),
        (format!("BLAKE2b-256 (f) = {ABC_SHA256}"), "BLAKE2b-256"),
        ("XXH64 (f) = 44bc2cf5ad770999".to_string(), "XXH64"),
        (format!("SHA3-256 (f) = {ABC_SHA256}"), "SHA3-256"),
        (format!("PLAIN-SHA256 (f) = {ABC_SHA256}"), "PLAIN-SHA256"),
        (
            format!("MTSUM-SHA256-1M (f) = {ABC_SHA256}"),
            "MTSUM-SHA256-1M",
        ),
        (format!("MERKLE-SHA256 (f) = {ABC_SHA256}"), "MERKLE-SHA256"),
        (
            format!("MERKLE-SHA256-0 (f) = {ABC_SHA256}"),
            "MERKLE-SHA256-0",
        ),
    ] {
        assert_eq!(
            parse_line(line.as_bytes()),
            Err(ImproperLine::UnknownTag(tag.into())),
            "{line}"
        );
    }
}

#[test]
fn xxhsum_little_endian_tags_are_turned_around() {
    // `xxhsum --tag -H3 --little-endian` and `-H128` of "abc" (xxHash 0.8.1).
    let e = entry("XXH3_LE (f) = 50392f89945faf78");
    assert_eq!(e.expected, Root::from(Algorithm::Xxh3.hash(CONTENT)));
    assert_eq!(e.spec, Some((Layout::Plain, Algorithm::Xxh3)));
    let e = entry("XXH128_LE (f) = 50392f89945faf7885613a73b65ab006");
    assert_eq!(e.expected, Root::from(Algorithm::Xxh128.hash(CONTENT)));
    assert!(parse_line(format!("SHA256_LE (f) = {ABC_SHA256}").as_bytes()).is_err());
    // Some xxhsum versions mark XXH3 in GNU lines with a prefix.
    let e = entry("XXH3_78af5f94892f3950  f");
    assert_eq!(e.expected, Root::from(Algorithm::Xxh3.hash(CONTENT)));
    assert_eq!(e.spec, Some((Layout::Plain, Algorithm::Xxh3)));
    assert!(parse_line(format!("XXH3_{ABC_SHA256}  f").as_bytes()).is_err());
}

#[test]
fn nul_bytes_make_a_line_improper() {
    assert!(parse_line(format!("{ABC_SHA256}  a\0b").as_bytes()).is_err());
    assert!(parse_line(format!("SHA256 (a\0b) = {ABC_SHA256}").as_bytes()).is_err());
}

#[test]
fn nul_terminated_lines_are_read_raw() {
    let mut p = Parser::new(Terminator::Nul);
    let line = format!("{ABC_SHA256}  a\nb\r\0");
    assert_eq!(
        p.parse_line(line.as_bytes()),
        Ok(Some(sha256("a\nb\r", false)))
    );
}

#[test]
fn verdicts_escape_names_only_when_they_hold_a_newline() {
    // `sha256sum -c` of coreutils 9.1 prints `back\slash: OK` and `\new\nline: OK`.
    assert_eq!(&*sumfile::verdict_name(b"back\\slash"), b"back\\slash");
    assert_eq!(&*sumfile::verdict_name(b"cr\rx"), b"cr\rx");
    assert_eq!(&*sumfile::verdict_name(b"m\\i\nx\ry"), b"\\m\\\\i\\nx\\ry");
}

#[test]
fn a_ten_megabyte_line_does_not_panic() {
    let huge_name = "n".repeat(10 << 20);
    let e = entry(&format!("{ABC_SHA256}  {huge_name}\n"));
    assert_eq!(e.name.len(), 10 << 20);
    let e = entry(&format!("SHA256 ({huge_name}) = {ABC_SHA256}\n"));
    assert_eq!(e.name.len(), 10 << 20);
    let garbage: Vec<u8> = (0..10u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let _ = parse_line(&garbage);
    let hex_run = "a".repeat(10 << 20);
    assert!(parse_line(hex_run.as_bytes()).is_err());
    assert!(parse_line(format!("{hex_run}  f").as_bytes()).is_err());
    assert!(parse_line(format!("SHA256 (f) = {hex_run}").as_bytes()).is_err());
    assert!(parse_line(format!("\\{}", "\\\\".repeat(5 << 20)).as_bytes()).is_err());
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

fn leaf_sizes() -> impl Strategy<Value = LeafSize> {
    prop_oneof![
        (1u64..=u64::MAX),
        (1u64..2048, 0u32..=40).prop_map(|(m, shift)| m << shift),
    ]
    .prop_map(leaf)
}

fn layouts() -> impl Strategy<Value = Layout> {
    prop_oneof![
        Just(Layout::Mtsum),
        Just(Layout::Plain),
        leaf_sizes().prop_map(Layout::Merkle),
        leaf_sizes().prop_map(Layout::Rfc6962),
        (PartSize::MIN..=PartSize::MAX).prop_map(|p| Layout::S3(PartSize::new(p).unwrap())),
        Just(Layout::Glacier),
        Just(Layout::Dropbox),
        Just(Layout::Btv2),
    ]
}

fn algorithms() -> impl Strategy<Value = Algorithm> {
    proptest::sample::select(Algorithm::ALL.to_vec())
}

/// A layout with an algorithm it is defined with.
fn specs() -> impl Strategy<Value = (Layout, Algorithm)> {
    (layouts(), algorithms()).prop_filter("an algorithm of the layout", |(l, a)| {
        l.check_algorithm(*a).is_ok()
    })
}

fn digests(alg: Algorithm) -> impl Strategy<Value = Digest> {
    proptest::collection::vec(any::<u8>(), alg.digest_len()).prop_map(|b| Digest::from_slice(&b))
}

/// Names as a file system allows them (no NUL), biased towards the bytes that matter.
fn names() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => 1u8..=255,
        1 => proptest::sample::select(b"\\\n\r ()=*#\t-".to_vec()),
    ];
    proptest::collection::vec(byte, 1..40)
}

/// Fragments of the grammar, for inputs that get further into the parser than random bytes.
fn line_pieces() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"SHA256".to_vec()),
        Just(b"MD5".to_vec()),
        Just(b"XXH3_".to_vec()),
        Just(b"XXH128_LE".to_vec()),
        Just(b"MERKLE-SHA256-".to_vec()),
        Just(b"RFC6962-BLAKE3-1M".to_vec()),
        Just(b" (".to_vec()),
        Just(b"(".to_vec()),
        Just(b")".to_vec()),
        Just(b" = ".to_vec()),
        Just(b"=".to_vec()),
        Just(b"  ".to_vec()),
        Just(b" *".to_vec()),
        Just(b"\\".to_vec()),
        Just(b"\\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"#".to_vec()),
        Just(ABC_SHA256.as_bytes().to_vec()),
        Just(ABC_SHA256.as_bytes()[..32].to_vec()),
        Just(b"78af5f94892f3950".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..4),
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn parse_tag_inverts_tag((layout, alg) in specs()) {
        let t = tag(layout, alg);
        prop_assert_eq!(parse_tag(&t), Some((layout, alg)));
        prop_assert_eq!(parse_tag(&t.to_lowercase()), Some((layout, alg)));
    }

    #[test]
    fn lines_round_trip_through_the_parser(
        format in prop_oneof![Just(Format::Gnu), Just(Format::Tag)],
        terminator in prop_oneof![Just(Terminator::Newline), Just(Terminator::Nul)],
        (layout, alg, digest) in specs().prop_flat_map(|(l, a)| (Just(l), Just(a), digests(a))),
        name in names(),
    ) {
        let line = sumfile::format_line(format, terminator, layout, alg, &digest.into(), &name);
        prop_assert_eq!(line.last(), Some(&terminator.byte()));
        let body = &line[..line.len() - 1];
        prop_assert!(!body.contains(&terminator.byte()), "one line holds one name");
        let entry = Parser::new(terminator).parse_line(&line).unwrap().unwrap();
        prop_assert_eq!(&entry.name, &name);
        prop_assert_eq!(entry.expected, Root::from(digest));
        let spec = (format == Format::Tag).then_some((layout, alg));
        prop_assert_eq!(entry.spec, spec);
    }

    #[test]
    fn arbitrary_bytes_never_panic(line in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_line(&line);
        let _ = Parser::new(Terminator::Nul).parse_line(&line);
    }

    #[test]
    fn lines_made_of_grammar_fragments_never_panic(line in line_pieces()) {
        let mut parser = Parser::default();
        let _ = parser.parse_line(&line);
        let _ = parser.parse_line(&line);
    }

    #[test]
    fn tags_never_panic(t in ".{0,40}") {
        let _ = parse_tag(&t);
    }
}
