//! `mtsum -c` against the real coreutils, b3sum and xxhsum, on one scenario.
//!
//! The scenario is a directory as people leave it some time after writing their sums: files
//! that still match (among them names with a space, a newline, a backslash, a carriage return
//! and invalid UTF-8, an empty file, a 2 MiB file), one that changed, one that is gone, one that
//! cannot be read, and a name that has become a directory. Every sum file is written by its tool
//! *before* those changes, on the very same files.
//!
//! Then `mtsum -c` must print what `sha256sum -c` prints on the same scenario: the same stdout
//! bytes, the same stderr lines but for the program name, the same exit status; with each
//! option and their combinations, from files, standard input, CRLF files, files full of junk.
//! In the other direction, coreutils' `-c` reads what `mtsum -t plain` writes.
//!
//! The unreadable file needs an unprivileged user: as root, every check runs as user and group
//! 65534 through `setpriv`, or the comparisons are skipped saying why. So are the tools that
//! are not installed, and coreutils other than 9.0/9.1 (later versions escape verdict names
//! differently; mtsum follows 9.1). All tools run with `LC_ALL=C.UTF-8`, so that names in
//! messages are quoted the same way.
//!
//! `--json`, which coreutils lacks, is held to mtsum's own text output: the same stderr and
//! exit status, and on stdout one JSON object per line of the sum files, then a summary.
//!
//! This file: the scenario against the other tools. `check_round_trip.rs` has round trips
//! and malformed sum files, `check_hints.rs` the command line and the hints, `check_json.rs`
//! `--json`; their helpers are in `tests/common/check.rs`.

mod common;

use common::check::*;
use common::run::run;
use common::{os, skip, strs, unprivileged};
use std::ffi::OsString;
use std::fs;

// ---------------------------------------------------------------------------------------------
// coreutils reads what mtsum writes
// ---------------------------------------------------------------------------------------------

#[test]
fn sha256sum_accepts_what_mtsum_writes() {
    const TEST: &str = "sha256sum_accepts_what_mtsum_writes";
    if let Some(why) = coreutils_missing() {
        return skip(TEST, &why);
    }
    let prefix = match unprivileged() {
        Ok(prefix) => prefix,
        Err(why) => return skip(TEST, &why),
    };
    let dir = open_tempdir();
    for name in NAMES {
        put(dir.path(), name, &content(name));
    }
    let names: Vec<OsString> = NAMES.iter().map(|n| os(n)).collect();
    let tools = [
        ("md5sum", "md5"),
        ("sha1sum", "sha1"),
        ("sha224sum", "sha224"),
        ("sha256sum", "sha256"),
        ("sha384sum", "sha384"),
        ("sha512sum", "sha512"),
    ];
    // Sum files of every tool and format, written by the tool and by mtsum.
    let mut files = Vec::new();
    for (tool, alg) in tools {
        for tag in [&[][..], &["--tag"]] {
            let mut theirs = strs(&[tool]);
            theirs.extend(strs(tag));
            theirs.extend(names.iter().cloned());
            let theirs = run_in(dir.path(), &[], &theirs, b"");
            let mut ours = strs(&["-t", "plain", "-a", alg]);
            ours.extend(strs(tag));
            ours.extend(names.iter().cloned());
            let ours = run(dir.path(), &ours);
            assert_eq!((theirs.code, ours.code), (Some(0), Some(0)));
            assert_eq!(
                lines(&ours.stdout),
                lines(&theirs.stdout),
                "mtsum -t plain -a {alg} {tag:?} writes what {tool} {tag:?} writes"
            );
            let file = format!("{tool}{}.sums", tag.join(""));
            put(dir.path(), file.as_bytes(), &ours.stdout);
            files.push((tool, file, theirs.stdout));
        }
    }
    fs::write(dir.path().join("changed"), b"after!").unwrap();
    fs::remove_file(dir.path().join("missing")).unwrap();
    set_mode(&dir.path().join("unreadable"), 0o000);
    fs::remove_file(dir.path().join("adir")).unwrap();
    fs::create_dir(dir.path().join("adir")).unwrap();
    for (tool, file, their_sums) in files {
        let ours = run_in(dir.path(), prefix, &strs(&[tool, "-c", &file]), b"");
        put(dir.path(), b"theirs.sums", &their_sums);
        let theirs = run_in(dir.path(), prefix, &strs(&[tool, "-c", "theirs.sums"]), b"");
        let warnings = replace(
            SHA256SUM_WARNINGS,
            b"sha256sum: ",
            format!("{tool}: ").as_bytes(),
        );
        let what = format!("{tool} -c {file}");
        assert_eq!(lines(&ours.stdout), lines(SHA256SUM_VERDICTS), "{what}");
        assert_eq!(lines(&ours.stderr), lines(&warnings), "{what}");
        assert_eq!(ours.code, Some(1), "{what}");
        assert_eq!(lines(&theirs.stdout), lines(&ours.stdout), "{what}");
        assert_eq!(lines(&theirs.stderr), lines(&ours.stderr), "{what}");
        assert_eq!(theirs.code, ours.code, "{what}");
    }
}

// ---------------------------------------------------------------------------------------------
// mtsum reads what the others write, and says what sha256sum says
// ---------------------------------------------------------------------------------------------

/// The scenario with sums by `writers`, or `None` after saying why the test is skipped.
fn scenario(test: &str, writers: &[Writer]) -> Option<Scenario> {
    match Scenario::new(writers) {
        Ok(s) if s.written.is_empty() => {
            skip(test, "none of the tools is installed");
            None
        }
        Ok(s) => Some(s),
        Err(why) => {
            skip(test, &why);
            None
        }
    }
}

#[test]
fn check_matches_sha256sum_with_every_option() {
    let Some(s) = scenario("check_matches_sha256sum", &[SHA256SUM, SHA256SUM_TAG]) else {
        return;
    };
    // The reference says what the scenario is meant to say.
    let plain = &s.written[0];
    let out = s.reference("sha256sum", &strs(&[CHECK_FILE]), &plain.reference, b"");
    assert_eq!(lines(&out.stdout), lines(SHA256SUM_VERDICTS));
    assert_eq!(lines(&out.stderr), lines(SHA256SUM_WARNINGS));
    assert_eq!(out.code, Some(1));
    for written in &s.written {
        compare_writer(&s, written);
    }
}

#[test]
fn check_matches_sha256sum_on_files_of_md5sum_sha1sum_sha224sum_sha384sum_sha512sum() {
    let test = "check_matches_sha256sum_on_files_of_other_coreutils";
    let Some(s) = scenario(test, &OTHER_COREUTILS) else {
        return;
    };
    for written in &s.written {
        compare_writer(&s, written);
    }
}

#[test]
fn check_matches_sha256sum_on_files_of_b3sum() {
    let Some(s) = scenario("check_matches_sha256sum_on_files_of_b3sum", &[B3SUM]) else {
        return;
    };
    for written in &s.written {
        compare_writer(&s, written);
    }
}

#[test]
fn check_matches_sha256sum_on_files_of_xxhsum() {
    let Some(s) = scenario("check_matches_sha256sum_on_files_of_xxhsum", &XXHSUM) else {
        return;
    };
    for written in &s.written {
        compare_writer(&s, written);
    }
}

#[test]
fn check_reads_sum_files_from_standard_input_as_sha256sum_does() {
    let Some(s) = scenario("check_reads_sum_files_from_standard_input", &[SHA256SUM]) else {
        return;
    };
    let sums = with_junk(&s.written[0].sums);
    let invocations: [&[&str]; 5] = [
        &["-"],
        &[],
        &[CHECK_FILE, "-"],
        &["-", CHECK_FILE],
        &["-", "-"],
    ];
    for options in [
        &[][..],
        &["--warn"],
        &["--quiet"],
        &["--status"],
        &["--strict"],
    ] {
        for files in invocations {
            let args = strs(&[options, files].concat());
            let what = format!("-c {args:?} < sums");
            s.compare_args(&what, &SHA256SUM, &sums, &sums, &args, &sums);
            let what = format!("-c {args:?} < CRLF sums");
            s.compare_args(&what, &SHA256SUM, &sums, &sums, &args, &crlf(&sums));
        }
    }
}

#[test]
fn lines_naming_standard_input_read_it_once_as_sha256sum_does() {
    let Some(s) = scenario("lines_naming_standard_input", &[SHA256SUM]) else {
        return;
    };
    // Big enough that two readers of standard input would split it between them.
    let data = noise(8 << 20, 8);
    let good = sha256_hex(b"hello\n");
    let dashes = format!(
        "{}  -\n{}  -\n{}  -\n{good}  good\n",
        sha256_hex(&data),
        sha256_hex(b""),
        sha256_hex(&data)
    );
    // A sum file on standard input, long, naming `-` itself (which it cannot check).
    let mut stdin_sums = b"# a comment line of some length to make this file big\n".repeat(150_000);
    stdin_sums.extend_from_slice(format!("{good}  good\n{good}  -\n").as_bytes());
    let cases: [(&[&str], &[u8]); 4] = [
        (&[CHECK_FILE], &data),
        (&[CHECK_FILE, "-"], &data),
        (&["-", CHECK_FILE], &stdin_sums),
        (&[CHECK_FILE, "-", CHECK_FILE], &stdin_sums),
    ];
    for round in 0..3 {
        for (files, stdin) in cases {
            for options in [&[][..], &["--warn"]] {
                let args = strs(&[options, files].concat());
                let what = format!("round {round}: -c {args:?}");
                let dashes = dashes.as_bytes();
                s.compare_args(&what, &SHA256SUM, dashes, dashes, &args, stdin);
            }
        }
    }
}

#[test]
fn several_sum_files_are_summarised_one_by_one_as_sha256sum_does() {
    let Some(s) = scenario("several_sum_files", &[SHA256SUM]) else {
        return;
    };
    let good = sha256_hex(b"hello\n");
    let dir = s.path();
    put(dir, b"no proper lines", b"just junk\n# and a comment\n");
    put(dir, b"empty.sums", b"");
    put(
        dir,
        b"only-missing.sums",
        format!("{good}  missing\n").as_bytes(),
    );
    put(dir, b"one blank.sums", format!("{good} good\n").as_bytes());
    set_mode(&put(dir, b"locked.sums", b""), 0o000);
    let stdin = format!("{good}  good\n{good}  changed\nnonsense\n");
    let runs: [&[&str]; 4] = [
        &[
            CHECK_FILE,
            "no proper lines",
            "missing.sums",
            "adir",
            "locked.sums",
            "-",
            "only-missing.sums",
            "empty.sums",
            CHECK_FILE,
        ],
        // coreutils holds all the files of a run to the separator of the first untagged line.
        &["one blank.sums", CHECK_FILE],
        &[CHECK_FILE, "one blank.sums"],
        &["only-missing.sums", "-"],
    ];
    let sums = with_junk(&s.written[0].sums);
    for files in runs {
        for options in OPTION_SETS {
            let args = strs(&[options, files].concat());
            let what = format!("-c {args:?}");
            s.compare_args(&what, &SHA256SUM, &sums, &sums, &args, stdin.as_bytes());
        }
    }
}

#[test]
fn odd_lines_are_read_as_sha256sum_reads_them() {
    let Some(s) = scenario("odd_lines_are_read_as_sha256sum_reads_them", &[SHA256SUM]) else {
        return;
    };
    put(s.path(), b"go) = od", b"od");
    let g = sha256_hex(b"hello\n");
    let upper = g.to_ascii_uppercase();
    let files = [
        format!(
            "{g} *good\n  {g}  good\n\t{g}  good\nSHA256(good)= {g}\nSHA256 (good)={g}\n\
             SHA256  (good) = {g}\n{g}  \n{g}\n{g}  good extra\n{upper}  good\n"
        ),
        format!("{g} good\n{g}  good\n{g} *good\n{g}\tgood\n"),
        format!("{g} good\nSHA256 (good) = {g}\n{g}  good\n"),
        format!("\\{g}  g\\ood\n\\{g}  good\\\n{g}  \\good\n\\{g}  \\\\x\n"),
        format!("SHA256 (go) = od) = {g}\n\\SHA256 (go) = od) = {g}\n"),
        format!(
            "SHA256 () = {g}\n\\\n\\{g}\n{g}0  good\nSHA256 (good) = \nSHA256 (good) {g}\n\
             SHA256 (good = {g}\n(good) = {g}\n {g}  good\n{g}\t good\n{g} \tgood\n{g}good\n"
        ),
        format!("{g}   good\n{g}  good \n"),
    ];
    for sums in &files {
        for options in [&[][..], &["--warn"], &["--strict"], &["--ignore-missing"]] {
            let what = format!("-c {options:?} on {sums:?}");
            let sums = sums.as_bytes();
            s.compare(&what, &SHA256SUM, sums, sums, options);
        }
    }
}
