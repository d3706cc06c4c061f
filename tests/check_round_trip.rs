//! `mtsum -c` on what mtsum writes (round trips that find any corrupted byte) and on sum
//! files that are malformed or name odd files: never a panic, messages as sha256sum quotes
//! them.

mod common;

use common::check::*;
use common::run::run;
use common::{os, skip, strs};
use proptest::prelude::*;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;

// ---------------------------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------------------------

/// How a verdict names a file: escaped behind a `\` when it holds a newline (coreutils 9.1).
fn verdict(name: &[u8], verdict: &str) -> Vec<u8> {
    let mut line = if name.contains(&b'\n') {
        [
            b"\\".as_slice(),
            &replace(&replace(name, b"\\", b"\\\\"), b"\n", b"\\n"),
        ]
        .concat()
    } else {
        name.to_vec()
    };
    line.extend_from_slice(format!(": {verdict}\n").as_bytes());
    line
}

#[test]
fn mtsum_round_trip_is_clean_and_finds_one_corrupted_byte() {
    let dir = open_tempdir();
    let sizes = [
        0usize,
        1,
        63,
        64,
        65,
        1023,
        1024,
        1025,
        4095,
        4096,
        4097,
        100_000,
        (1 << 20) + 3,
    ];
    let mut names: Vec<Vec<u8>> = Vec::new();
    for (i, size) in sizes.into_iter().enumerate() {
        let name = format!("f{size}").into_bytes();
        put(dir.path(), &name, &noise(size, i as u64));
        names.push(name);
    }
    for (i, name) in [&b"a b"[..], b"new\nline", b"back\\slash", b"\xff\xfe"]
        .into_iter()
        .enumerate()
    {
        put(dir.path(), name, &noise(5000, 100 + i as u64));
        names.push(name.to_vec());
    }
    let args: Vec<OsString> = names.iter().map(|n| os(n)).collect();
    // How sums are written, and what -c needs to read them back (tagged lines need nothing).
    let configs: [(&[&str], &[&str]); 12] = [
        (&[], &[]),
        (&["--tag"], &[]),
        (&["-t", "rfc6962", "-l", "4K", "--tag"], &[]),
        (&["-t", "merkle", "--tag"], &[]),
        (&["-t", "merkle", "-l", "64", "-a", "blake3", "--tag"], &[]),
        (&["-t", "rfc6962", "-l", "1K", "-a", "xxh3", "--tag"], &[]),
        (&["-t", "mtsum", "-a", "sha512", "--tag"], &[]),
        (&["-t", "plain", "-a", "xxh128", "--tag"], &[]),
        (&["-t", "plain", "-a", "md5"], &["-t", "plain"]),
        (&["-a", "md5"], &["-a", "md5"]),
        (
            &["-t", "rfc6962", "-l", "4K"],
            &["-t", "rfc6962", "-l", "4K"],
        ),
        (
            &["-t", "merkle", "-l", "1K", "-a", "sha1"],
            &["-t", "merkle", "-l", "1K"],
        ),
    ];
    let all_ok: Vec<u8> = names.iter().flat_map(|n| verdict(n, "OK")).collect();
    for (i, (write, read)) in configs.into_iter().enumerate() {
        let what = format!("mtsum {write:?} | mtsum -c {read:?}");
        let written = run(dir.path(), [strs(write), args.clone()].concat());
        assert_eq!(written.code, Some(0), "{what}: {}", written.stderr());
        put(dir.path(), b"sums", &written.stdout);
        let check = [strs(read), strs(&["-c", "sums"])].concat();
        let out = run(dir.path(), &check);
        assert_eq!(lines(&out.stdout), lines(&all_ok), "{what}");
        assert_eq!(out.stderr(), "", "{what}");
        assert_eq!(out.code, Some(0), "{what}");

        // One byte changed, in a different file and place each time.
        let victim = &names[(i * 5 + 3) % names.len()];
        let victim = if victim == b"f0" { &names[1] } else { victim };
        let path = dir.path().join(OsStr::from_bytes(victim));
        let original = fs::read(&path).unwrap();
        let mut corrupt = original.clone();
        let at = (i * 7919) % corrupt.len();
        corrupt[at] ^= 0x20;
        fs::write(&path, &corrupt).unwrap();
        let out = run(dir.path(), &check);
        fs::write(&path, &original).unwrap();
        let expected: Vec<u8> = names
            .iter()
            .flat_map(|n| verdict(n, if n == victim { "FAILED" } else { "OK" }))
            .collect();
        let what = format!("{what}, byte {at} of {:?} changed", victim.escape_ascii());
        assert_eq!(lines(&out.stdout), lines(&expected), "{what}");
        assert_eq!(
            out.stderr(),
            "mtsum: WARNING: 1 computed checksum did NOT match\n",
            "{what}"
        );
        assert_eq!(out.code, Some(1), "{what}");
    }
}

#[test]
fn ten_thousand_files_from_mtsum_r_check_clean_and_any_corrupted_byte_is_found() {
    let dir = open_tempdir();
    let tree = dir.path().join("tree");
    let mut files = Vec::new();
    for d in 0..100 {
        let sub = tree.join(format!("d{d:02}"));
        fs::create_dir_all(&sub).unwrap();
        for f in 0..100 {
            let path = sub.join(format!("f{f:02}"));
            let bytes = noise(1 + (d * 100 + f) % 200, (d * 100 + f) as u64);
            fs::write(&path, bytes).unwrap();
            files.push(format!("tree/d{d:02}/f{f:02}"));
        }
    }
    let written = run(dir.path(), strs(&["-r", "tree"]));
    assert_eq!(written.code, Some(0), "{}", written.stderr());
    put(dir.path(), b"tree.sums", &written.stdout);
    assert_eq!(
        written.stdout.iter().filter(|&&b| b == b'\n').count(),
        10_000
    );

    let out = run(dir.path(), strs(&["-c", "tree.sums"]));
    let expected: String = files.iter().map(|f| format!("{f}: OK\n")).collect();
    assert!(
        out.stdout == expected.as_bytes(),
        "not every file checked OK"
    );
    assert_eq!((out.stderr(), out.code), ("", Some(0)));

    // Any one byte: a few files and places picked by a fixed pseudo-random sequence.
    for (round, pick) in noise(4, 10_000).into_iter().enumerate() {
        let index = (usize::from(pick) * 9973 + round * 4409) % files.len();
        let path = dir.path().join(&files[index]);
        let original = fs::read(&path).unwrap();
        let mut corrupt = original.clone();
        let at = (round * 31 + usize::from(pick)) % corrupt.len();
        corrupt[at] ^= 1 << (round % 8);
        fs::write(&path, &corrupt).unwrap();
        let out = run(dir.path(), strs(&["-c", "--quiet", "tree.sums"]));
        fs::write(&path, &original).unwrap();
        let what = format!("byte {at} of {} changed", files[index]);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{}: FAILED\n", files[index]),
            "{what}"
        );
        assert_eq!(
            out.stderr(),
            "mtsum: WARNING: 1 computed checksum did NOT match\n",
            "{what}"
        );
        assert_eq!(out.code, Some(1), "{what}");
    }
}

// ---------------------------------------------------------------------------------------------
// Malformed input
// ---------------------------------------------------------------------------------------------

/// Every proper prefix of `line`, one per line.
fn truncations(line: &str) -> Vec<u8> {
    (1..line.len())
        .flat_map(|n| [line.as_bytes()[..n].to_vec(), b"\n".to_vec()].concat())
        .collect()
}

#[test]
fn malformed_sum_files_never_panic() {
    let dir = open_tempdir();
    put(dir.path(), b"good", b"hello\n");
    let g = sha256_hex(b"hello\n");
    let rfc = "4fa1e0cab8a63ec8a37c9ba3f0b1bde0f4d00fcbb4dbb8d5bb1a1bba1bb1c0aa";
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "truncated lines",
            [
                truncations(&format!("SHA256 (good) = {g}")),
                truncations(&format!("\\{g}  new\\nline")),
                truncations(&format!("RFC6962-SHA256-4K (good) = {rfc}")),
                truncations(&format!("XXH3_LE (good) = {}", &g[..16])),
            ]
            .concat(),
        ),
        (
            "wrong digest lengths",
            format!(
                "SHA256 (good) = abcd\nSHA256 (good) = {g}0\nMD5 (good) = {g}\n\
                 {}  good\nabc  good\nXXH3 (good) = {g}\nXXH3_{g}  good\n\
                 MTSUM-SHA256 (good) = {}\n",
                &g[..63],
                &g[..32]
            )
            .into_bytes(),
        ),
        (
            "unknown tags",
            format!(
                "BLAKE2b (good) = {g}\nXXH64 (good) = {}\nMTSUM-FOO (good) = {g}\n\
                 PLAIN-SHA256 (good) = {g}\nRFC6962-SHA256-0 (good) = {g}\n\
                 MERKLE-SHA256-99999999999999999999999G (good) = {g}\n\
                 MERKLE-SHA256 (good) = {g}\nRFC6962--4K (good) = {g}\n\
                 \u{e9}\u{e9} (good) = {g}\nSHA256\u{0} (good) = {g}\n(good) = {g}\n",
                &g[..16]
            )
            .into_bytes(),
        ),
        ("binary garbage", noise(1 << 20, 77)),
        (
            "binary garbage between newlines",
            noise(1 << 16, 78)
                .chunks(37)
                .flat_map(|c| [c, b"\n"].concat())
                .collect(),
        ),
        (
            "NUL bytes and odd escapes",
            format!("{g}  go\0od\n\0\0\0\n\\{g}  a\\tb\n\\\n\\\\\n\\{g}  x\\\n").into_bytes(),
        ),
        ("only a newline", b"\n".to_vec()),
        ("only CR", b"\r".to_vec()),
        ("nothing", Vec::new()),
    ];
    for (what, sums) in &cases {
        put(dir.path(), b"bad.sums", sums);
        for options in [
            &[][..],
            &["--warn", "--strict"],
            &["-t", "plain", "-a", "md5"],
        ] {
            let args = [strs(options), strs(&["-c", "bad.sums"])].concat();
            let out = run(dir.path(), &args);
            assert_eq!(out.code, Some(1), "{what}, {options:?}: {}", out.stderr());
            assert!(!out.stderr.is_empty(), "{what}, {options:?}: no warning");
        }
    }

    // A line of 100 MB (hex, as if a digest), then a good line: one improper line.
    let mut huge = vec![b'a'; 100_000_000];
    huge.extend_from_slice(format!("  good\n{g}  good\n").as_bytes());
    put(dir.path(), b"huge.sums", &huge);
    drop(huge);
    let args = strs(&["-t", "plain", "-c", "--warn", "huge.sums"]);
    let out = run(dir.path(), &args);
    assert_eq!(lines(&out.stdout), lines(b"good: OK\n"));
    assert_eq!(
        out.stderr(),
        "mtsum: huge.sums: 1: improperly formatted SHA256 checksum line\n\
         mtsum: WARNING: 1 line is improperly formatted\n"
    );
    assert_eq!(out.code, Some(0));
    let args = strs(&["-t", "plain", "-c", "--strict", "huge.sums"]);
    let out = run(dir.path(), &args);
    assert_eq!(out.code, Some(1), "--strict fails on the improper line");
}

/// Sum files made of the pieces checksum lines are made of, and some noise.
fn sum_file_pieces() -> impl Strategy<Value = Vec<u8>> {
    let words: Vec<Vec<u8>> = [
        "SHA256",
        "MD5",
        "XXH3_LE",
        "XXH3_",
        "MTSUM-SHA256",
        "RFC6962-SHA256-4K",
        "MERKLE-BLAKE3-1K",
        "BLAKE2b",
        " (",
        "(",
        ")",
        " = ",
        "=",
        "  ",
        " *",
        " ",
        "\t",
        "\\",
        "\\n",
        "\n",
        "\r\n",
        "#",
        "good",
        "missing",
        "-",
        "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
        "b1946ac92492d2347c6235b4d2611184",
        "5891b5b5",
    ]
    .iter()
    .map(|w| w.as_bytes().to_vec())
    .collect();
    let piece = prop_oneof![
        4 => proptest::sample::select(words),
        1 => proptest::collection::vec(any::<u8>(), 0..4),
    ];
    proptest::collection::vec(piece, 0..60).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn check_of_arbitrary_sum_files_never_panics(sums in sum_file_pieces(), strict in any::<bool>()) {
        let dir = open_tempdir();
        put(dir.path(), b"good", b"hello\n");
        put(dir.path(), b"s", &sums);
        let mut args = strs(&["-t", "plain", "-c", "--warn", "s"]);
        if strict {
            args.push("--strict".into());
        }
        // Standard input is empty: a line naming `-` reads nothing.
        let out = run(dir.path(), &args);
        prop_assert!(matches!(out.code, Some(0 | 1)), "{:?}", out);
        for line in out.stdout.split_inclusive(|&b| b == b'\n') {
            let verdict = [&b": OK\n"[..], b": FAILED\n", b": FAILED open or read\n"];
            prop_assert!(verdict.iter().any(|v| line.ends_with(v)), "{:?}", lines(line));
        }
    }
}

#[test]
fn messages_quote_odd_names_as_sha256sum_does() {
    if let Some(why) = coreutils_missing() {
        return skip("messages_quote_odd_names_as_sha256sum_does", &why);
    }
    let dir = open_tempdir();
    let names: [&[u8]; 14] = [
        b"\tgood",
        b"good\t",
        b"\t",
        b"\xff",
        b"\xffa",
        b"a\xff",
        b"\n\n",
        b"a\n\nb",
        b"x\ny",
        b"it's\n",
        b"\t'x",
        b"a\x01\x02b",
        b"\x7f",
        b"'\x1b[0m'",
    ];
    let g = sha256_hex(b"hello\n");
    let sums: Vec<u8> = names
        .iter()
        .flat_map(|n| {
            let escaped = n.contains(&b'\n');
            let name = replace(&replace(n, b"\\", b"\\\\"), b"\n", b"\\n");
            let mark: &[u8] = if escaped { b"\\" } else { b"" };
            [mark, g.as_bytes(), b"  ", &name, b"\n"].concat()
        })
        .collect();
    put(dir.path(), b"sums", &sums);
    let theirs = run_in(dir.path(), &[], &strs(&["sha256sum", "-c", "sums"]), b"");
    let ours = run(dir.path(), strs(&["-t", "plain", "-c", "sums"]));
    assert_same(
        "names that need quoting",
        "sha256sum",
        &theirs,
        "SHA256",
        &ours,
    );
}
