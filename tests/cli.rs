//! The `mtsum` command as a user meets it: the real binary, run in a temporary directory.
//!
//! Every test asserts the three things a script sees: standard output (the sum list, byte for
//! byte), standard error (`mtsum: NAME: cause`, one line per failed input) and the exit status
//! (0 all fine, 1 some input failed while the others were still printed, 2 usage error).
//! Every run also checks that nothing panicked.
//!
//! Tests that need something the machine may not offer (coreutils, a non-root user, a loop
//! device) print why they skipped and pass, so that the suite runs anywhere.
//!
//! This file: hashing as a user asks for it (sums, standard input, the layouts and
//! coreutils), usage errors, and inputs that must never panic; `cli_inputs.rs` has inputs
//! that fail or change, `cli_output.rs` the output channels and the progress bar.

mod common;

use common::cli::*;
use common::run::*;
use common::{MTSUM, have, skip, tempdir, wait_until, write_file};
use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use assert_cmd::Command;

// ---------------------------------------------------------------------------------------------
// Normal use
// ---------------------------------------------------------------------------------------------

#[test]
fn a_file_prints_its_digest_two_spaces_and_its_name() {
    let dir = tempdir();
    write_file(dir.path(), "one", &[0]);
    run(dir.path(), ["one"]).assert(0, &format!("{MTSUM_SHA256_ONE_ZERO_BYTE}  one\n"), "");
}

#[test]
fn no_names_prints_the_bare_digest() {
    let dir = tempdir();
    write_file(dir.path(), "one", &[0]);
    run(dir.path(), ["--no-names", "one"]).assert(
        0,
        &format!("{MTSUM_SHA256_ONE_ZERO_BYTE}\n"),
        "",
    );
}

#[test]
fn zero_ends_each_bare_digest_with_nul() {
    let dir = tempdir();
    write_file(dir.path(), "one", &[0]);
    write_file(dir.path(), "empty", b"");
    run(dir.path(), ["-z", "--no-names", "one", "empty"]).assert(
        0,
        &format!("{MTSUM_SHA256_ONE_ZERO_BYTE}\0{MTSUM_SHA256_EMPTY}\0"),
        "",
    );
}

#[test]
fn a_full_standard_output_is_one_line_without_the_os_error_number() {
    if !Path::new("/dev/full").exists() {
        return skip(
            "a_full_standard_output_is_one_line_without_the_os_error_number",
            "no /dev/full",
        );
    }
    let dir = tempdir();
    write_file(dir.path(), "one", &[0]);
    let full = OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut cmd = StdCommand::new(MTSUM);
    cmd.arg("one").current_dir(dir.path()).stdout(full);
    let r = Run::from_output(cmd.output().expect("mtsum starts"));
    r.assert(1, "", "mtsum: standard output: No space left on device\n");
}

/// `/dev/full` for writing, or why a test cannot have it.
fn dev_full() -> Result<File, String> {
    OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .map_err(|e| format!("no /dev/full: {e}"))
}

#[test]
fn check_stops_at_a_full_standard_output_with_one_message_and_status_1() {
    let full = match dev_full() {
        Ok(full) => full,
        Err(why) => return skip("check_stops_at_a_full_standard_output", &why),
    };
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    // A mismatch for stdout, then missing files and the warnings for stderr: after the
    // stdout error nothing more is said, as in hash mode and the audit.
    let mut sums = format!("{}  a\n", "0".repeat(64));
    for i in 0..100 {
        sums += &format!("{}  gone-{i}\n", "0".repeat(64));
    }
    write_file(dir.path(), "sums", sums.as_bytes());
    for json in [&[][..], &["--json"]] {
        let mut cmd = StdCommand::new(MTSUM);
        cmd.args(["-t", "plain", "-c", "sums"]).args(json);
        cmd.current_dir(dir.path())
            .stdout(full.try_clone().unwrap());
        let r = Run::from_output(cmd.output().expect("mtsum starts"));
        r.assert(1, "", "mtsum: standard output: No space left on device\n");
    }
}

#[test]
fn check_reads_no_more_lines_once_standard_output_failed() {
    let full = match dev_full() {
        Ok(full) => full,
        Err(why) => return skip("check_reads_no_more_lines_once_stdout_failed", &why),
    };
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    let line = format!("{}  a\n", "0".repeat(64));
    // The sum file stays open: mtsum ends without waiting for its next line.
    let mut run = Background::start_to(
        dir.path(),
        ["-t", "plain", "-c", "-"],
        line.as_bytes(),
        full,
    );
    wait_until("mtsum ends while its sum file is open", || run.has_ended());
    let r = run.wait();
    r.assert(1, "", "mtsum: standard output: No space left on device\n");
}

#[test]
fn check_prints_its_verdicts_when_standard_error_fails_and_exits_1() {
    let full = match dev_full() {
        Ok(full) => full,
        Err(why) => return skip("check_prints_its_verdicts_when_stderr_fails", &why),
    };
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    let a = line_of(dir.path(), &["-t", "plain"], "a");
    // The junk line's warning goes first, to the full stderr; the verdict still comes,
    // and the status says that a message was lost, as `sha256sum -c --warn` does.
    write_file(dir.path(), "sums", format!("junk\n{a}").as_bytes());
    let out = StdCommand::new(MTSUM)
        .args(["-t", "plain", "-c", "--warn", "sums"])
        .current_dir(dir.path())
        .stderr(full)
        .output()
        .expect("mtsum starts");
    let out = Run::from_output(out);
    assert_eq!(out.stdout(), "a: OK\n");
    assert_eq!(out.code, Some(1));
}

#[test]
fn a_usage_error_exits_2_when_standard_error_fails() {
    let full = match dev_full() {
        Ok(full) => full,
        Err(why) => return skip("a_usage_error_exits_2_when_stderr_fails", &why),
    };
    let dir = tempdir();
    // A usage error of the argument parser, and one of the audit's own.
    for args in [&["-c", "--status", "--json", "sums"][..], &["--audit", "-"]] {
        let out = StdCommand::new(MTSUM)
            .args(args)
            .current_dir(dir.path())
            .stderr(full.try_clone().unwrap())
            .output()
            .expect("mtsum starts");
        let out = Run::from_output(out);
        assert_eq!(out.code, Some(2), "{args:?}: not a panic (101)");
    }
}

#[test]
fn verbose_hashing_prints_its_lines_when_standard_error_fails() {
    let full = match dev_full() {
        Ok(full) => full,
        Err(why) => return skip("verbose_hashing_when_stderr_fails", &why),
    };
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    let a = line_of(dir.path(), &["-t", "plain"], "a");
    let out = StdCommand::new(MTSUM)
        .args(["-t", "plain", "--verbose", "a"])
        .current_dir(dir.path())
        .stderr(full)
        .output()
        .expect("mtsum starts");
    let out = Run::from_output(out);
    assert_eq!(out.stdout(), a);
    let code = out.code;
    assert!(
        matches!(code, Some(0 | 1)),
        "a status, not a panic: {code:?}"
    );
}

#[test]
fn several_files_are_printed_in_command_line_order() {
    let dir = tempdir();
    // The large file first and names out of alphabetical order: the small files finish
    // first and sort first, yet must be printed where the command line put them.
    write_file(dir.path(), "zeta", &pattern(9 << 20));
    write_file(dir.path(), "alpha", b"alpha\n");
    write_file(dir.path(), "mid", b"");
    let names = ["zeta", "alpha", "mid", "alpha"];
    let expected: String = names.iter().map(|n| line_of(dir.path(), &[], n)).collect();
    run(dir.path(), ["-p", "2"].iter().chain(&names)).assert(0, &expected, "");
}

#[test]
fn plain_layout_equals_coreutils_byte_for_byte() {
    let dir = tempdir();
    // Sizes around the 64- and 128-byte blocks of every algorithm and beyond a read chunk, and
    // names that coreutils escapes (backslash, newline, carriage return) or prints raw.
    let files: Vec<(&[u8], Vec<u8>)> = vec![
        (b"empty", vec![]),
        (b"one", vec![0x61]),
        (b"block-1", pattern(63)),
        (b"block", pattern(64)),
        (b"block+1", pattern(129)),
        (b"large", pattern((1 << 20) + 17)),
        (b"with space", b"x".to_vec()),
        (b"back\\slash", b"y".to_vec()),
        (b"new\nline", b"z".to_vec()),
        (b"carriage\rreturn", b"w".to_vec()),
        (b"not-utf8-\xff\xfe", b"v".to_vec()),
    ];
    let names: Vec<&OsStr> = files.iter().map(|(n, _)| OsStr::from_bytes(n)).collect();
    for ((_, data), name) in files.iter().zip(&names) {
        write_file(dir.path(), name, data);
    }
    // b3sum escapes like coreutils 8 (backslash and newline only) and prints names as lossy
    // UTF-8, so it is not given the carriage-return name (escaped since coreutils 9) nor the
    // name that is not UTF-8 (printed raw by coreutils). Its digests are what matter.
    let all: &[&OsStr] = &names;
    let b3sum_names: Vec<&OsStr> = names
        .iter()
        .copied()
        .filter(|n| !n.as_bytes().contains(&b'\r') && n.to_str().is_some())
        .collect();
    let tools = [
        ("md5", "md5sum", all),
        ("sha1", "sha1sum", all),
        ("sha224", "sha224sum", all),
        ("sha256", "sha256sum", all),
        ("sha384", "sha384sum", all),
        ("sha512", "sha512sum", all),
        ("blake3", "b3sum", &b3sum_names),
    ];
    let mut compared = 0;
    for (alg, tool, names) in tools {
        if !have(tool) {
            skip(
                "plain_layout_equals_coreutils_byte_for_byte",
                &format!("no {tool}"),
            );
            continue;
        }
        let theirs = StdCommand::new(tool)
            .args(names)
            .current_dir(dir.path())
            .output()
            .expect("the tool runs");
        assert!(theirs.status.success(), "{tool} failed");
        let ours = run(
            dir.path(),
            ["-t", "plain", "-a", alg]
                .map(OsStr::new)
                .iter()
                .chain(names),
        );
        assert_eq!((ours.code, ours.stderr()), (Some(0), ""), "-a {alg}");
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout),
            "-t plain -a {alg} differs from {tool}"
        );
        assert_eq!(
            ours.stdout, theirs.stdout,
            "-t plain -a {alg}: bytes differ"
        );
        compared += 1;
    }
    assert!(compared > 0 || !have("sha256sum"));
}

#[test]
fn no_path_reads_standard_input_named_dash() {
    let dir = tempdir();
    run_stdin(dir.path(), ["-t", "plain"], b"hello\n").assert(
        0,
        &format!("{SHA256_HELLO}  -\n"),
        "",
    );
}

#[test]
fn dash_reads_standard_input_among_files() {
    let dir = tempdir();
    write_file(dir.path(), "empty", b"");
    run_stdin(
        dir.path(),
        ["-t", "plain", "empty", "-", "empty"],
        b"hello\n",
    )
    .assert(
        0,
        &format!("{SHA256_EMPTY}  empty\n{SHA256_HELLO}  -\n{SHA256_EMPTY}  empty\n"),
        "",
    );
}

#[test]
fn mtsum_layout_on_standard_input_equals_the_files_digest() {
    let dir = tempdir();
    write_file(dir.path(), "hello", b"hello\n");
    let expected = digest_of(dir.path(), &[], "hello");
    let r = run_stdin(dir.path(), ["-"], b"hello\n");
    r.assert(0, &format!("{expected}  -\n"), "");
}

#[test]
fn mtsum_layout_on_standard_input_longer_than_it_holds_fails_with_the_stream_hint() {
    let dir = tempdir();
    write_file(dir.path(), "empty", b"");
    let r = run_stdin(dir.path(), ["-", "empty"], &vec![0; LONGER_THAN_HELD]);
    assert_eq!(r.code, Some(1));
    assert_eq!(r.stdout(), format!("{MTSUM_SHA256_EMPTY}  empty\n"));
    assert!(r.stderr().starts_with("mtsum: -: "), "{}", r.stderr());
    assert!(r.stderr().contains(STREAM_HINT), "{}", r.stderr());
    assert_eq!(r.stderr().lines().count(), 1, "{}", r.stderr());
}

/// `mtsum ARGS` in `dir` with standard input `file` (as `< file` gives it).
fn run_with_stdin_file(dir: &Path, args: &[&str], file: File) -> Run {
    let mut cmd = StdCommand::new(MTSUM);
    let cmd = cmd.args(args).current_dir(dir).stdin(file);
    Run::from_output(cmd.output().expect("mtsum starts"))
}

#[test]
fn mtsum_layout_on_standard_input_redirected_from_a_large_file_equals_the_files_digest() {
    let dir = tempdir();
    let path = write_file(dir.path(), "big", &pattern(LONGER_THAN_HELD));
    let digest = digest_of(dir.path(), &[], "big");
    let r = run_with_stdin_file(dir.path(), &[], File::open(&path).unwrap());
    r.assert(0, &format!("{digest}  -\n"), "");
}

#[test]
fn standard_input_redirected_from_a_file_is_hashed_from_where_it_stands() {
    let dir = tempdir();
    let data = pattern(100_000);
    let path = write_file(dir.path(), "data", &data);
    write_file(dir.path(), "rest", &data[10..]);
    let digest = digest_of(dir.path(), &["-t", "plain"], "rest");
    // As after `head -c 10` read from it: coreutils hashes the bytes after those.
    let mut file = File::open(&path).unwrap();
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(10)).unwrap();
    let r = run_with_stdin_file(dir.path(), &["-t", "plain"], file);
    r.assert(0, &format!("{digest}  -\n"), "");
}

/// Where standard input stands in the tests of a file read from an offset: neither on a page
/// nor on a block boundary, so that `O_DIRECT` blocks and mapped pages must start before it.
const STDIN_OFFSET: u64 = (1 << 20) + 1000;

/// A sparse file `name` of `len` bytes in `dir` (cheap however long), holding 5000 bytes of
/// [`pattern`] at each of `marks`, so that a digest of other bytes than its own (from another
/// offset, or of another length) differs.
fn sparse_with_marks(dir: &Path, name: &str, len: u64, marks: &[u64]) -> PathBuf {
    use std::os::unix::fs::FileExt;
    let path = dir.join(name);
    let file = File::create(&path).expect("create a test file");
    file.set_len(len).expect("size a test file");
    for &at in marks {
        file.write_all_at(&pattern(5000), at)
            .expect("write a test file");
    }
    path
}

/// `path` opened to be standard input, standing at `offset`.
fn opened_at(path: &Path, offset: u64) -> File {
    let mut file = File::open(path).expect("open a test file");
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(offset)).expect("seek");
    file
}

#[test]
fn standard_input_redirected_from_a_file_past_64_mib_is_hashed_from_where_it_stands_in_every_read_mode()
 {
    let dir = tempdir();
    let len = STDIN_OFFSET + LONGER_THAN_HELD as u64 + 12_345;
    // Bytes before the offset, at it, further on and at the end; the rest holds those after.
    let marks = [0, STDIN_OFFSET, STDIN_OFFSET + (3 << 20), len - 5000];
    let big = sparse_with_marks(dir.path(), "big", len, &marks);
    let rest = marks[1..]
        .iter()
        .map(|m| m - STDIN_OFFSET)
        .collect::<Vec<_>>();
    sparse_with_marks(dir.path(), "rest", len - STDIN_OFFSET, &rest);
    for layout in [&[][..], &["-t", "merkle", "-l", "4K"]] {
        // From the offset, as after `dd bs=1 count=N` read up to it; and from the start.
        for (offset, name) in [(STDIN_OFFSET, "rest"), (0, "big")] {
            let digest = digest_of(dir.path(), layout, name);
            for flag in [None, Some("--mmap"), Some("--direct")] {
                let args = [layout, flag.as_slice()].concat();
                let r = run_with_stdin_file(dir.path(), &args, opened_at(&big, offset));
                r.assert(0, &format!("{digest}  -\n"), "");
            }
        }
    }
}

#[test]
fn standard_input_redirected_from_a_file_is_left_at_its_end_as_coreutils_leaves_it() {
    let dir = tempdir();
    let data = pattern(100_000);
    let path = write_file(dir.path(), "data", &data);
    let end = data.len() as u64;
    // From its start, from an offset, and past its end (where nothing is read, so it stays).
    for (offset, left_at) in [(0, end), (10, end), (end + 10, end + 10)] {
        for args in [&[][..], &["-t", "plain"]] {
            let stdin = opened_at(&path, offset);
            // The same open file as mtsum's standard input, as `(mtsum; cat) < data` shares it.
            let mut shared = stdin.try_clone().unwrap();
            assert_eq!(run_with_stdin_file(dir.path(), args, stdin).code, Some(0));
            let at = std::io::Seek::stream_position(&mut shared).unwrap();
            assert_eq!(at, left_at, "{args:?} from {offset}");
            if have("sha256sum") {
                let stdin = opened_at(&path, offset);
                let mut shared = stdin.try_clone().unwrap();
                StdCommand::new("sha256sum").stdin(stdin).output().unwrap();
                let theirs = std::io::Seek::stream_position(&mut shared).unwrap();
                assert_eq!(at, theirs, "{args:?} from {offset}: sha256sum");
            }
        }
    }
}

#[test]
fn standard_input_from_a_file_past_its_end_is_empty() {
    let dir = tempdir();
    let path = write_file(dir.path(), "data", &pattern(100));
    let r = run_with_stdin_file(dir.path(), &["-t", "plain"], opened_at(&path, 200));
    r.assert(0, &format!("{SHA256_EMPTY}  -\n"), "");
}

#[test]
fn standard_input_open_for_writing_only_is_a_bad_file_descriptor_even_with_nothing_to_read() {
    // `mtsum 0> empty` or `0>> data`: sha256sum's read fails, so there is no digest of it,
    // although an empty file, or one standing at its end, needs no read to learn its bytes.
    let dir = tempdir();
    let empty = write_file(dir.path(), "empty", b"");
    let data = write_file(dir.path(), "data", &pattern(100));
    let write_only = |path: &Path, at: u64| {
        let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(at)).unwrap();
        file
    };
    for (path, at) in [(&empty, 0), (&data, 100), (&data, 0)] {
        for args in [&[][..], &["-t", "plain"], &["--mmap"], &["--json"]] {
            let r = run_with_stdin_file(dir.path(), args, write_only(path, at));
            let what = format!("{args:?} {path:?} at {at}");
            assert_eq!(r.code, Some(1), "{what}: {}", r.stdout());
            assert_eq!(r.stderr(), error_line("-", "Bad file descriptor"), "{what}");
        }
        let r = run_with_stdin_file(dir.path(), &["--plan", "2", "-"], write_only(path, at));
        assert_eq!(
            r.stderr(),
            error_line("-", "Bad file descriptor"),
            "{path:?}"
        );
    }
}

#[test]
fn standard_input_named_twice_from_a_file_at_an_offset_gives_the_rest_then_nothing() {
    let dir = tempdir();
    let data = pattern(100_000);
    let path = write_file(dir.path(), "data", &data);
    write_file(dir.path(), "rest", &data[10..]);
    let rest = digest_of(dir.path(), &[], "rest");
    let r = run_with_stdin_file(dir.path(), &["-", "-"], opened_at(&path, 10));
    r.assert(0, &format!("{rest}  -\n{MTSUM_SHA256_EMPTY}  -\n"), "");
}

#[test]
fn check_lines_naming_standard_input_from_a_file_at_an_offset_check_the_rest() {
    let dir = tempdir();
    let data = pattern(100_000);
    let path = write_file(dir.path(), "data", &data);
    write_file(dir.path(), "rest", &data[10..]);
    let rest = digest_of(dir.path(), &[], "rest");
    write_file(dir.path(), "sums", format!("{rest}  -\n").as_bytes());
    let r = run_with_stdin_file(dir.path(), &["-c", "sums"], opened_at(&path, 10));
    r.assert(0, "-: OK\n", "");
    // The sum file itself on standard input, read from where it stands.
    let sums = write_file(
        dir.path(),
        "junk then sums",
        format!("junk\n{rest}  rest\n").as_bytes(),
    );
    let r = run_with_stdin_file(dir.path(), &["-c", "-"], opened_at(&sums, 5));
    r.assert(0, "rest: OK\n", "");
}

#[test]
fn merkle_and_rfc6962_on_standard_input_equal_the_files_digest() {
    let dir = tempdir();
    // Three and a bit default leaves; 769 and a bit 4 KiB leaves.
    let data = pattern((3 << 20) + 5);
    write_file(dir.path(), "data", &data);
    for layout in [
        &["-t", "merkle"][..],
        &["-t", "merkle", "-l", "4K"],
        &["-t", "rfc6962"],
        &["-t", "rfc6962", "-l", "4K"],
        &["-t", "plain"],
    ] {
        let from_file = digest_of(dir.path(), layout, "data");
        let args = [layout, &["--no-names"]].concat();
        run_stdin(dir.path(), &args, &data).assert(0, &format!("{from_file}\n"), "");
        let args = [layout, &["-"]].concat();
        run_stdin(dir.path(), &args, &data).assert(0, &format!("{from_file}  -\n"), "");
    }
}

#[test]
fn standard_input_named_twice_gives_its_bytes_to_the_first_dash_and_nothing_to_the_second() {
    // As `sha256sum - -`: the first `-` reads the stream to its end, the second finds it there.
    // Several MiB, so that two workers reading it at once would each get a part of it.
    let dir = tempdir();
    let data = pattern(30 << 20);
    write_file(dir.path(), "data", &data);
    write_file(dir.path(), "empty", b"");
    for layout in [&["-t", "plain"][..], &["-t", "merkle"], &["-t", "mtsum"]] {
        let from_file = digest_of(dir.path(), layout, "data");
        let empty = digest_of(dir.path(), layout, "empty");
        for threads in ["1", "2", "4"] {
            let args = [layout, &["-p", threads, "-", "-"]].concat();
            run_stdin(dir.path(), &args, &data).assert(
                0,
                &format!("{from_file}  -\n{empty}  -\n"),
                "",
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Usage errors: exit 2, nothing hashed
// ---------------------------------------------------------------------------------------------

#[test]
fn zero_processors_is_a_usage_error() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    run(dir.path(), ["-p", "0", "a"]).assert_usage_error("at least 1");
}

#[test]
fn non_numeric_processors_is_a_usage_error() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    run(dir.path(), ["-p", "abc", "a"]).assert_usage_error("'abc' is not a number of processors");
}

#[test]
fn unknown_algorithm_is_a_usage_error_listing_the_algorithms() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    let r = run(dir.path(), ["-a", "sha3", "a"]);
    r.assert_usage_error("sha3");
    for alg in [
        "md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake3", "xxh3", "xxh128",
    ] {
        assert!(
            r.stderr().contains(alg),
            "{alg} not listed:\n{}",
            r.stderr()
        );
    }
}

#[test]
fn unknown_layout_is_a_usage_error_listing_the_layouts() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    let r = run(dir.path(), ["-t", "sha256tree", "a"]);
    r.assert_usage_error("sha256tree");
    for layout in ["mtsum", "plain", "merkle", "rfc6962"] {
        assert!(
            r.stderr().contains(layout),
            "{layout} not listed:\n{}",
            r.stderr()
        );
    }
}

#[test]
fn zero_leaf_size_is_a_usage_error() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    for layout in ["merkle", "rfc6962"] {
        run(dir.path(), ["-t", layout, "-l", "0", "a"]).assert_usage_error("at least 1 byte");
    }
}

#[test]
fn malformed_leaf_size_is_a_usage_error() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    for size in ["1X", "K", "-4K", "1.5M", "4 K B", ""] {
        // `--leaf-size=` so that `-4K` and the empty string reach the parser as values.
        let arg = format!("--leaf-size={size}");
        run(dir.path(), ["-t", "merkle", &arg, "a"])
            .assert_usage_error(&format!("invalid leaf size '{size}'"));
    }
    run(dir.path(), ["-t", "merkle", "-l", "99999999999T", "a"]).assert_usage_error("too large");
}

#[test]
fn leaf_size_for_a_layout_without_leaves_is_a_usage_error() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    for layout in [
        &["-l", "4K"][..],
        &["-t", "mtsum", "-l", "4K"],
        &["-t", "plain", "-l", "1M"],
    ] {
        let r = run(dir.path(), [layout, &["a"]].concat());
        r.assert_usage_error("leaf size");
        assert!(r.stderr().contains("merkle and rfc6962"), "{}", r.stderr());
    }
}

#[test]
fn usage_errors_are_one_line_starting_with_mtsum() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    for args in [
        &["-p", "0"][..],
        &["-p", "abc"],
        &["-p", "100000"],
        &["-a", "sha3"],
        &["-t", "sha256tree"],
        &["-t", "merkle", "-l", "0"],
        &["-t", "merkle", "-l", "1X"],
        &["-t", "mtsum", "-l", "4K"],
        &["-t", "plain", "-l", "4K"],
    ] {
        run(dir.path(), [args, &["a"]].concat()).assert_one_usage_line(args);
    }
}

#[test]
fn stored_takes_only_prefixes_of_buckets_and_nothing_of_hash_mode() {
    // No store is asked: each of these is refused before any request, with exit 2.
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    for args in [
        &["--stored"][..],
        &["--stored", "a"],
        &["--stored", "s3://bucket/key"],
        &["--stored", "https://example.org/dir/"],
        &["--stored", "s3://bucket/", "a"],
        &["--stored", "-c", "s3://bucket/"],
        &["--stored", "-t", "s3", "s3://bucket/"],
        &["--stored", "--tag", "s3://bucket/"],
        &["--stored", "--json", "-z", "s3://bucket/"],
    ] {
        run(dir.path(), args.to_vec()).assert_one_usage_line(args);
    }
}

#[test]
fn options_that_would_be_ignored_are_usage_errors() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    // -c reads the sum files it is given, not the trees below them; --repair prints what it
    // did as text.
    for (args, named) in [
        (&["-c", "-r"][..], "--recursive"),
        (
            &[
                "--audit", "--db", "db", "--repair", "a", "--from", "a", "--json",
            ],
            "--json",
        ),
    ] {
        let r = run(dir.path(), [args, &["a"]].concat());
        r.assert_usage_error(named);
    }
}

// ---------------------------------------------------------------------------------------------
// No input may cause a panic
// ---------------------------------------------------------------------------------------------

#[test]
fn odd_arguments_and_inputs_never_panic() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    write_file(dir.path(), "empty", b"");
    // More leaves of one byte than a graph may show.
    write_file(dir.path(), "r70k", &pattern(70_000));
    let invalid_utf8 = OsStr::from_bytes(b"\xff\xfe");
    let cases: Vec<Vec<&OsStr>> = [
        &[][..],
        &["-t", "plain"],
        &["-g"],
        &["-g", "-"],
        &["-g", "-t", "plain", "-"],
        &["-g", "-t", "merkle", "-"],
        &["-g", "empty", "a"],
        &["-g", "-t", "merkle", "empty"],
        &["-g", "-t", "rfc6962", "-l", "1", "r70k", "a"],
        &["-g", "/dev/null"],
        &["-g", "-t", "plain", "/dev/null"],
        &["-t", "merkle", "-l", "1", "r70k"],
        &["-t", "rfc6962", "-l", "18446744073709551615", "a"],
        &["-t", "merkle", "-l", "18446744073709551616", "a"],
        &["-p", "18446744073709551616", "a"],
        &["-p", "-1", "a"],
        &["-p", "", "a"],
        &["-a", "", "a"],
        &["-a"],
        &["-t", "", "a"],
        &["-l", "", "a"],
        &["--", "-x"],
        &["-x"],
        &["-", "-", "-t", "plain"],
        &["--verbose", "--benchmark", "-", "empty", "missing"],
        &["--no-names", "-g", "a"],
        &["", "a"],
        &["/dev/zero/x"],
    ]
    .iter()
    .map(|args| args.iter().map(OsStr::new).collect())
    .collect();
    let non_utf8: Vec<Vec<&OsStr>> = vec![
        vec![OsStr::new("-a"), invalid_utf8],
        vec![OsStr::new("-t"), invalid_utf8],
        vec![OsStr::new("-l"), invalid_utf8],
        vec![OsStr::new("-p"), invalid_utf8],
        vec![invalid_utf8],
    ];
    for algorithm in [
        "md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake3", "xxh3", "xxh128",
    ] {
        for layout in ["mtsum", "plain", "merkle", "rfc6962"] {
            let r = run(
                dir.path(),
                ["-a", algorithm, "-t", layout, "empty", "a", "r70k"],
            );
            r.assert_lines_ok(3);
        }
    }
    for args in cases.iter().chain(&non_utf8) {
        let r = run_stdin(dir.path(), args, b"stdin\n");
        assert!(
            matches!(r.code, Some(0..=2)),
            "{args:?}: exit {:?}\n{}",
            r.code,
            r.stderr()
        );
        for line in r.stderr().lines().filter(|l| l.starts_with("mtsum")) {
            assert!(line.starts_with("mtsum: "), "{args:?}: {line}");
        }
    }
}

#[test]
fn too_many_processors_for_the_system_is_an_error_not_a_panic() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    let expected = line_of(dir.path(), &[], "a");
    // A limit of 32 processes for an unprivileged user (root ignores it) makes thread creation
    // fail after a few workers, the way the system's thread limit does for larger -p, without
    // loading the machine. (An address-space limit did the same, but then an ordinary
    // allocation could fail too, at random, and abort the run: not what this test is about.)
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = StdCommand::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["prlimit", "--nproc=32:32", MTSUM, "-p", "1000", "a"])
        .current_dir(dir.path());
    let r = run_cmd(Command::from_std(cmd).timeout(TIMEOUT));
    if r.stderr().starts_with("setpriv:") || r.stderr().starts_with("prlimit:") {
        eprintln!(
            "note: not tested, setpriv/prlimit cannot run mtsum as user 65534: {}",
            r.stderr()
        );
        return;
    }
    // Either mtsum makes do with the workers it could start, or it says why it cannot.
    match r.code {
        Some(0) => r.assert(0, &expected, ""),
        Some(1 | 2) => {
            assert!(r.stdout.is_empty() || r.stdout() == expected);
            assert!(r.stderr().starts_with("mtsum: "), "{}", r.stderr());
            assert_eq!(r.stderr().lines().count(), 1, "{}", r.stderr());
        }
        other => panic!("exit {other:?}:\n{}", r.stderr()),
    }
}

#[test]
fn the_ranges_options_with_audit_or_check_name_the_option_given() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    for mode in ["--audit", "--check"] {
        for ranges in [&["--plan", "4"][..], &["--range", "0-1/1"], &["--combine"]] {
            let r = run(dir.path(), [&[mode][..], ranges, &["a"]].concat());
            r.assert_usage_error(&format!("'{mode}' cannot be used with '{}", ranges[0]));
            let other = if mode == "--audit" {
                "--check"
            } else {
                "--audit"
            };
            assert!(!r.stderr().contains(other), "{}", r.stderr());
        }
    }
}
