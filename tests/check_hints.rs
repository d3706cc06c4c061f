//! `mtsum -c`'s command line as coreutils reads it, and the hints and notes it adds when
//! the values of a sum file fail as another layout or algorithm would have them.

mod common;

use common::check::*;
use common::run::run;
use common::strs;
use mtsum::Algorithm;

// ---------------------------------------------------------------------------------------------
// The command line as coreutils reads it
// ---------------------------------------------------------------------------------------------

#[test]
fn repeated_options_are_accepted_as_in_coreutils() {
    let dir = open_tempdir();
    put(dir.path(), b"good", b"hello\n");
    let sums = format!("{}  good\n", sha256_hex(b"hello\n"));
    put(dir.path(), b"sums", sums.as_bytes());
    for options in [
        &["-c", "-c"][..],
        &["-c", "--quiet", "--quiet"],
        &["-c", "--status", "--status"],
        &["-c", "-w", "--warn"],
        &["-c", "--strict", "--strict"],
        &["-c", "--ignore-missing", "--ignore-missing"],
        &["-c", "--quiet", "--status", "--quiet"],
    ] {
        let args = [strs(&["-t", "plain"]), strs(options), strs(&["sums"])].concat();
        let out = run(dir.path(), &args);
        assert_eq!(out.code, Some(0), "{options:?}: {}", out.stderr());
    }
}

#[test]
fn long_options_may_be_abbreviated_as_in_coreutils() {
    let dir = open_tempdir();
    put(dir.path(), b"good", b"hello\n");
    let sums = format!("{}  good\n", sha256_hex(b"hello\n"));
    put(dir.path(), b"sums", sums.as_bytes());
    for (option, stdout) in [
        ("--stat", ""),
        ("--quie", ""),
        ("--ignore", "good: OK\n"),
        ("--str", "good: OK\n"),
        ("--wa", "good: OK\n"),
    ] {
        let args = strs(&["-t", "plain", "-c", option, "sums"]);
        let out = run(dir.path(), &args);
        assert_eq!(out.code, Some(0), "{option}: {}", out.stderr());
        assert_eq!(String::from_utf8_lossy(&out.stdout), stdout, "{option}");
    }
}

#[test]
fn one_untagged_line_of_another_layout_gets_the_hint_in_the_singular() {
    let dir = open_tempdir();
    put(dir.path(), b"a", b"a\n");
    put(
        dir.path(),
        b"sums",
        (sha256_hex(b"a\n") + "  a\n").as_bytes(),
    );
    let out = run(dir.path(), strs(&["-c", "sums"]));
    assert_eq!(out.code, Some(1));
    let hint = "mtsum: note: untagged line was checked with the mtsum layout;";
    assert!(out.stderr().contains(hint), "{}", out.stderr());
}

#[test]
fn warn_names_an_untagged_line_with_the_layouts_default_algorithm() {
    // S3's default algorithm is MD5 (the ETag), not SHA-256.
    let dir = open_tempdir();
    put(dir.path(), b"sums", b"junk line\n");
    let out = run(dir.path(), strs(&["-c", "-t", "s3", "--warn", "sums"]));
    assert_eq!(out.code, Some(1));
    let warning = "mtsum: sums: 1: improperly formatted S3-MD5-8M checksum line\n";
    assert!(out.stderr().starts_with(warning), "{}", out.stderr());
}

#[test]
fn sums_of_another_layout_get_a_hint_about_the_layout() {
    let dir = open_tempdir();
    put(dir.path(), b"a", b"a\n");
    put(dir.path(), b"b", b"b\n");
    // What `sha256sum a b` writes: plain digests, untagged.
    let sums = [sha256_hex(b"a\n") + "  a\n", sha256_hex(b"b\n") + "  b\n"].concat();
    put(dir.path(), b"sums", sums.as_bytes());
    let hint = "mtsum: note: untagged lines were checked with the mtsum layout";

    let default = run(dir.path(), strs(&["-c", "sums"]));
    assert_eq!(default.code, Some(1));
    assert!(default.stderr().contains(hint), "{}", default.stderr());

    let plain = run(dir.path(), strs(&["-t", "plain", "-c", "sums"]));
    assert_eq!(plain.code, Some(0));
    assert!(!plain.stderr().contains("note:"), "{}", plain.stderr());

    // One corrupted file among good ones is corruption, not a layout mix-up.
    let own = run(dir.path(), strs(&["a", "b"]));
    put(dir.path(), b"own", own.stdout.as_slice());
    put(dir.path(), b"b", b"B\n");
    let corrupt = run(dir.path(), strs(&["-c", "own"]));
    assert_eq!(corrupt.code, Some(1));
    assert!(!corrupt.stderr().contains("note:"), "{}", corrupt.stderr());
}

#[test]
fn s3_values_checked_without_a_layout_get_a_hint_about_s3_not_plain() {
    let dir = open_tempdir();
    put(dir.path(), b"f", &noise(6 << 20, 5));
    // What an S3 listing gives: the ETag of a multipart upload, untagged.
    let args = strs(&["-t", "s3", "--part-size", "5M", "f"]);
    let sums = run(dir.path(), &args).stdout;
    assert!(String::from_utf8_lossy(&sums).contains("-2  f"), "{sums:?}");
    put(dir.path(), b"sums", &sums);
    let out = run(dir.path(), strs(&["-c", "sums"]));
    assert_eq!(out.code, Some(1));
    let hint = "mtsum: note: untagged line was checked with the mtsum layout; use -t s3 for S3 \
                values (a part count after a dash), with --part-size auto if their part size \
                is not known\n";
    assert!(out.stderr().ends_with(hint), "{}", out.stderr());
    let auto = strs(&["-c", "-t", "s3", "--part-size", "auto", "sums"]);
    assert_eq!(run(dir.path(), &auto).code, Some(0), "as the hint says");
}

/// `b3sum` and `xxhsum -H128` write untagged values whose length implies SHA-256 and MD5:
/// checked with `-t plain` and no `-a`, they fail, and a note names the `-a` they need.
#[test]
fn untagged_values_that_all_fail_as_the_algorithm_their_length_implies_get_a_note() {
    let dir = open_tempdir();
    put(dir.path(), b"h", b"hello");
    let cases = [
        (
            Algorithm::Blake3,
            "blake3",
            "256-bit values were checked as SHA-256; for sums \
          written by b3sum, add -a blake3\n",
        ),
        (
            Algorithm::Xxh128,
            "xxh128",
            "128-bit values were checked as MD5; for sums written \
          by xxhsum -H128, add -a xxh128\n",
        ),
    ];
    for (alg, name, note) in cases {
        let line = format!("{}  h\n", alg.hash(b"hello").to_hex());
        put(dir.path(), b"sums", line.as_bytes());
        let out = run(dir.path(), strs(&["-c", "-t", "plain", "sums"]));
        assert_eq!(
            (out.code, out.stdout.as_slice()),
            (Some(1), &b"h: FAILED\n"[..])
        );
        let want = format!("mtsum: note: untagged {note}");
        assert!(out.stderr().ends_with(&want), "{}", out.stderr());
        // As the note says; and without -t, the layout's hint names -a too.
        let with_a = strs(&["-c", "-t", "plain", "-a", name, "sums"]);
        let out = run(dir.path(), &with_a);
        assert_eq!((out.code, out.stderr()), (Some(0), ""));
        let out = run(dir.path(), strs(&["-c", "sums"]));
        assert!(
            out.stderr().contains(&format!("-a {name} for")),
            "{}",
            out.stderr()
        );
        assert!(!out.stderr().contains(&want), "one note: {}", out.stderr());
    }
}

#[test]
fn untagged_64_bit_values_that_all_fail_as_xxh3_get_a_note_about_xxh64() {
    let dir = open_tempdir();
    put(dir.path(), b"h", b"hello");
    let note = "mtsum: note: untagged 64-bit values were checked as XXH3; xxhsum writes XXH64 by \
                default, which mtsum does not compute (xxhsum -H3 writes XXH3)\n";
    // What `xxhsum h` writes: XXH64, untagged (published value of XXH64("hello")).
    put(dir.path(), b"xxh64", b"26c7827d889f6da3  h\n");
    let out = run(dir.path(), strs(&["-c", "-t", "plain", "xxh64"]));
    assert_eq!(out.code, Some(1));
    assert!(out.stderr().ends_with(note), "{}", out.stderr());

    // XXH3 values that check out need no note, nor a corrupted file among good ones.
    let own = run(dir.path(), strs(&["-t", "plain", "-a", "xxh3", "h"])).stdout;
    put(dir.path(), b"xxh3", &own);
    let out = run(dir.path(), strs(&["-c", "-t", "plain", "xxh3"]));
    assert_eq!((out.code, out.stderr()), (Some(0), ""));
    // Asked for with -a, XXH3 is what the user means: no note either.
    let out = run(
        dir.path(),
        strs(&["-c", "-t", "plain", "-a", "xxh3", "xxh64"]),
    );
    assert_eq!(out.code, Some(1));
    assert!(!out.stderr().contains("note:"), "{}", out.stderr());
}
