//! The `mtsum` command's output channels: standard output closed, full or late, standard
//! error for `--verbose` and `--benchmark`, help, and the progress bar (see `cli.rs` for the
//! conventions).

mod common;

use common::cli::*;
use common::run::*;
use common::{MTSUM, skip, tempdir, wait_until, write_file};
use std::fs::{self};
use std::path::Path;
use std::process::Command as StdCommand;

use predicates::prelude::*;

// ---------------------------------------------------------------------------------------------
// Output channels
// ---------------------------------------------------------------------------------------------

#[test]
fn closed_stdout_ends_quietly_by_sigpipe_like_coreutils() {
    let dir = tempdir();
    // 2000 lines of 128 hex digits: far more than a pipe buffer plus what `head` reads at
    // once, so mtsum is certain to write into the closed pipe.
    let names: Vec<String> = (0..2000).map(|i| format!("f{i:04}")).collect();
    for (i, name) in names.iter().enumerate() {
        write_file(dir.path(), name, format!("{i}\n").as_bytes());
    }
    let first = line_of(dir.path(), &["-a", "sha512"], &names[0]);
    // No pipefail in sh: mtsum's own status and stderr are saved to files.
    let script = r#"{ "$0" -a sha512 "$@" 2>stderr.txt; echo $? >status.txt; } | head -n 1"#;
    let out = StdCommand::new("sh")
        .args(["-c", script, MTSUM])
        .args(&names)
        .current_dir(dir.path())
        .output()
        .expect("sh starts");
    assert!(out.status.success(), "sh: {out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), first);
    let stderr = fs::read_to_string(dir.path().join("stderr.txt")).unwrap();
    assert_eq!(stderr, "", "mtsum wrote to stderr after stdout closed");
    let status = fs::read_to_string(dir.path().join("status.txt")).unwrap();
    // 128 + SIGPIPE: killed by the default action of SIGPIPE, as sha256sum is.
    assert_eq!(status.trim(), (128 + libc::SIGPIPE).to_string());
}

#[test]
fn results_are_written_while_a_later_input_waits_for_its_writer() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    write_file(dir.path(), "b", b"b");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    write_file(dir.path(), "fifo bytes", b"fifo");
    let fifo_digest = digest_of(dir.path(), &["-t", "plain"], "fifo bytes");
    let [a, b] = ["a", "b"].map(|name| line_of(dir.path(), &["-t", "plain"], name));
    let expected = [a, format!("{fifo_digest}  fifo\n"), b];
    let run = Background::start(dir.path(), ["-t", "plain", "a", "fifo", "b"], b"");
    // Into a file, gathered: still written while mtsum waits for the FIFO's writer, as
    // sha256sum has written it by then.
    wait_until("a's line is written", || run.stdout() == expected[0]);
    let writer = FifoWriter::start(&fifo, b"fifo".to_vec());
    let r = run.wait();
    writer.finish();
    r.assert(0, &expected.concat(), "");
}

#[test]
fn check_writes_each_verdict_while_a_sum_file_on_a_pipe_waits_for_its_next_line() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    write_file(dir.path(), "b", b"b");
    let [a, b] = ["a", "b"].map(|name| line_of(dir.path(), &["-t", "plain"], name));
    let (b_start, b_end) = b.split_at(b.len() / 2);
    // The first line and half of the next, as a writer whose output is block-buffered
    // leaves them.
    let mut run = Background::start(
        dir.path(),
        ["-c", "-t", "plain", "-"],
        (a + b_start).as_bytes(),
    );
    // Into a file, gathered: still written while mtsum waits for the rest, as
    // `sha256sum -c` has written it by then.
    wait_until("a's verdict is written", || run.stdout() == "a: OK\n");
    run.write_stdin(b_end.as_bytes());
    run.wait().assert(0, "a: OK\nb: OK\n", "");
}

#[test]
fn check_writes_the_verdicts_of_a_sum_file_while_the_next_waits_for_its_writer() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    write_file(dir.path(), "b", b"b");
    let [a, b] = ["a", "b"].map(|name| line_of(dir.path(), &["-t", "plain"], name));
    write_file(dir.path(), "SUMS", a.as_bytes());
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let run = Background::start(dir.path(), ["-c", "-t", "plain", "SUMS", "fifo"], b"");
    wait_until("a's verdict is written", || run.stdout() == "a: OK\n");
    let writer = FifoWriter::start(&fifo, b.into_bytes());
    let r = run.wait();
    writer.finish();
    r.assert(0, "a: OK\nb: OK\n", "");
}

/// Runs `mtsum ARGS` in `dir` with `redirection` applied by the shell (`<&-` closes
/// standard input: a test harness cannot close it otherwise).
fn run_redirected(dir: &Path, args: &[&str], redirection: &str) -> Run {
    let script = format!(r#""$0" "$@" {redirection}"#);
    let output = StdCommand::new("sh")
        .args(["-c", &script, MTSUM])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("sh starts");
    Run::from_output(output)
}

#[test]
fn standard_input_closed_at_start_is_a_bad_file_descriptor_and_the_others_are_still_hashed() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    let expected = line_of(dir.path(), &["-t", "plain"], "a");
    let r = run_redirected(dir.path(), &["-t", "plain", "-", "a"], "<&-");
    r.assert(1, &expected, &error_line("-", "Bad file descriptor"));
}

#[test]
fn standard_input_closed_at_start_fails_a_check_line_naming_it() {
    let dir = tempdir();
    write_file(
        dir.path(),
        "SUMS",
        format!("{SHA256_EMPTY}  -\n").as_bytes(),
    );
    let r = run_redirected(dir.path(), &["-t", "plain", "-c", "SUMS"], "<&-");
    assert_eq!(r.code, Some(1), "stderr: {}", r.stderr());
    assert_eq!(r.stdout(), "-: FAILED open or read\n");
    assert!(
        r.stderr()
            .starts_with(&error_line("-", "Bad file descriptor")),
        "{}",
        r.stderr()
    );
}

#[test]
fn standard_output_closed_at_start_is_a_write_error_with_status_1() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    let r = run_redirected(dir.path(), &["-t", "plain", "a"], ">&-");
    assert_eq!(r.code, Some(1), "stderr: {}", r.stderr());
    assert!(
        r.stderr()
            .starts_with("mtsum: standard output: Bad file descriptor"),
        "{}",
        r.stderr()
    );
    assert_eq!(r.stderr().lines().count(), 1, "{}", r.stderr());
}

#[test]
fn verbose_lines_go_to_stderr_and_stdout_stays_the_sum_list() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"hello\n");
    write_file(dir.path(), "b", &pattern(3 << 20));
    let clean = run(dir.path(), ["-p", "3", "a", "b"]);
    let r = run(dir.path(), ["-p", "3", "--verbose", "a", "b"]);
    assert_eq!((r.code, r.stdout()), (Some(0), clean.stdout()));
    for needle in [
        "Algorithm: sha256\n",
        "Number of processors: 3\n",
        "File size: 6 bytes\n",
        "File size: 3145728 bytes\n",
    ] {
        assert!(
            r.stderr().contains(needle),
            "no {needle:?} in:\n{}",
            r.stderr()
        );
    }
    let timing = predicate::str::is_match(r"(?m)^b: \d+\.\d\d s \(\d+\.\d\d GB/s\)$").unwrap();
    assert!(
        timing.eval(r.stderr()),
        "no timing line in:\n{}",
        r.stderr()
    );
}

#[test]
fn verbose_names_the_multi_buffer_kernel_and_none_when_forced_portable() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"hello\n");
    let kernel = mtsum::lanes::Kernel::multi_buffer(mtsum::Algorithm::Sha1);
    let expected = format!(
        "Multi-buffer kernel: {}\n",
        kernel.map_or("none", |k| k.name())
    );
    let r = run(dir.path(), ["--verbose", "-a", "sha1", "a"]);
    assert!(
        r.stderr().contains(&expected),
        "no {expected:?} in:\n{}",
        r.stderr()
    );
    let forced = run_cmd(
        mtsum(dir.path())
            .env(mtsum::lanes::FORCE_PORTABLE_VAR, "1")
            .args(["--verbose", "-a", "sha1", "a"]),
    );
    let stderr = forced.stderr();
    assert!(stderr.contains("Multi-buffer kernel: none\n"), "{stderr}");
}

#[test]
fn benchmark_lines_go_to_stderr_and_stdout_stays_the_sum_list() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"hello\n");
    write_file(dir.path(), "b", &pattern(3 << 20));
    let clean = run(dir.path(), ["a", "b"]);
    let r = run(dir.path(), ["--benchmark", "a", "b"]);
    assert_eq!((r.code, r.stdout()), (Some(0), clean.stdout()));
    // One timing line per file, after its name.
    let timing = |name| format!(r"{name}: \d+\.\d\d s \(\d+\.\d\d GB/s\)\n");
    let lines = predicate::str::is_match(format!("^{}{}$", timing("a"), timing("b"))).unwrap();
    assert!(lines.eval(r.stderr()), "{}", r.stderr());
}

/// A sum file of two lines that name different settings: `a` untagged (`-t plain` sha256),
/// `b` (3 MiB) tagged MD5. Returns the directory and the verdicts `-c` prints.
fn sums_of_two_kinds() -> (tempfile::TempDir, String) {
    let dir = tempdir();
    write_file(dir.path(), "a", b"hello\n");
    write_file(dir.path(), "b", &pattern(3 << 20));
    let a = line_of(dir.path(), &["-t", "plain"], "a");
    let b = line_of(dir.path(), &["-t", "plain", "--tag", "-a", "md5"], "b");
    write_file(dir.path(), "SUMS", (a + &b).as_bytes());
    (dir, "a: OK\nb: OK\n".to_string())
}

#[test]
fn check_verbose_prints_the_settings_of_each_kind_of_line_and_each_files_size_on_stderr() {
    let (dir, verdicts) = sums_of_two_kinds();
    let clean = run(dir.path(), ["-c", "-t", "plain", "-p", "3", "SUMS"]);
    clean.assert(0, &verdicts, "");
    let r = run(
        dir.path(),
        ["-c", "-t", "plain", "-p", "3", "--verbose", "SUMS"],
    );
    assert_eq!((r.code, &r.stdout), (Some(0), &clean.stdout));
    let settings = |alg: mtsum::Algorithm| {
        let kernel = mtsum::lanes::Kernel::multi_buffer(alg);
        format!(
            "Algorithm: {alg}\nLayout: plain\nNumber of processors: 3\n\
             Multi-buffer kernel: {}\n",
            kernel.map_or("none", |k| k.name())
        )
    };
    let timing = r"\d+\.\d\d s \(\d+\.\d\d GB/s\)\n";
    let a = format!(
        "{}File size: 6 bytes\na: {timing}",
        regex_escape(&settings(mtsum::Algorithm::Sha256))
    );
    let b = format!(
        "{}File size: 3145728 bytes\nb: {timing}",
        regex_escape(&settings(mtsum::Algorithm::Md5))
    );
    let expected = predicate::str::is_match(format!("^{a}{b}$")).unwrap();
    assert!(
        expected.eval(r.stderr()),
        "unexpected stderr:\n{}",
        r.stderr()
    );
}

#[test]
fn check_benchmark_prints_each_files_time_on_stderr_and_the_same_verdicts() {
    let (dir, verdicts) = sums_of_two_kinds();
    let r = run(dir.path(), ["-c", "-t", "plain", "--benchmark", "SUMS"]);
    assert_eq!((r.code, r.stdout()), (Some(0), verdicts.as_str()));
    let timing = |name| format!(r"{name}: \d+\.\d\d s \(\d+\.\d\d GB/s\)\n");
    let lines = predicate::str::is_match(format!("^{}{}$", timing("a"), timing("b"))).unwrap();
    assert!(
        lines.eval(r.stderr()),
        "one timing line per file:\n{}",
        r.stderr()
    );
    // Asked for explicitly, they stay when the verdicts are quiet.
    let quiet = run(
        dir.path(),
        ["-c", "-t", "plain", "--benchmark", "--quiet", "SUMS"],
    );
    assert_eq!((quiet.code, quiet.stdout()), (Some(0), ""));
    assert_eq!(quiet.stderr().lines().count(), 2, "{}", quiet.stderr());
}

/// `text` matched literally in a regular expression.
fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c.is_ascii_punctuation() {
            true => vec!['\\', c],
            false => vec![c],
        })
        .collect()
}

#[test]
fn help_prints_usage_and_exits_0() {
    let dir = tempdir();
    for flag in ["-h", "--help"] {
        let r = run(dir.path(), [flag]);
        assert_eq!((r.code, r.stderr()), (Some(0), ""), "{flag}");
        let out = r.stdout();
        assert!(out.contains("Usage: mtsum"), "{flag}:\n{out}");
        for option in [
            "-p",
            "-a",
            "--tree",
            "--leaf-size",
            "--no-names",
            "--verbose",
        ] {
            assert!(out.contains(option), "{flag} does not mention {option}");
        }
        // -v works as it does in C++ mtsum; help says so.
        assert!(
            out.contains("--version") && out.contains("-v]"),
            "{flag}:\n{out}"
        );
    }
}

#[test]
fn help_and_version_on_a_failing_standard_output_are_a_write_error_with_status_1() {
    // As `sha256sum --help > /dev/full`: the text did not get there.
    let dir = tempdir();
    let mut cases = vec![(">&-", "Bad file descriptor")];
    match Path::new("/dev/full").exists() {
        true => cases.push(("> /dev/full", "No space left on device")),
        false => skip(
            "help_and_version_on_/dev/full",
            "this system has no /dev/full",
        ),
    }
    for (redirection, cause) in cases {
        for flag in ["--help", "--version"] {
            let r = run_redirected(dir.path(), &[flag], redirection);
            let line = format!("mtsum: standard output: {cause}\n");
            assert_eq!(
                (r.code, r.stderr()),
                (Some(1), &*line),
                "{flag} {redirection}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Progress bar
// ---------------------------------------------------------------------------------------------

#[test]
fn progress_flag_shows_the_bar_on_a_stderr_that_is_not_a_terminal() {
    let dir = tempdir();
    let run = Background::start(dir.path(), ["--progress", "-t", "plain"], &[0; 1000]);
    // The bar shows after a second, while standard input is still open.
    wait_until("the bar shows", || !run.stderr().is_empty());
    let r = run.wait();
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr());
    let digest = "541b3e9daa09b20bf85fa273e5cbd3e80185aa4ec298e765db87742b70138a53";
    assert_eq!(r.stdout(), format!("{digest}  -\n"));
}

#[test]
fn progress_bar_of_standard_input_is_a_spinner_without_a_total() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    let mut run = Background::start(dir.path(), ["--progress", "-t", "plain", "a", "-"], b"b");
    wait_until("the bar shows", || !run.stderr().is_empty());
    run.close_stdin();
    let r = run.wait();
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr());
    assert!(r.stderr().contains(" hashed, "), "{}", r.stderr());
    // Not a known total of 1 byte and 1 file, of which 2 bytes and 2 files were then done.
    assert!(!r.stderr().contains("/1 B "), "{}", r.stderr());
    assert!(!r.stderr().contains("/1 files"), "{}", r.stderr());
}

#[test]
fn progress_bar_is_not_redrawn_for_each_result_going_elsewhere_than_its_terminal() {
    let dir = tempdir();
    let names: Vec<String> = (0..2000).map(|i| format!("f{i:04}")).collect();
    for name in &names {
        write_file(dir.path(), name, name.as_bytes());
    }
    // Standard input first: every file's line is printed after the bar shows.
    let options = ["--progress", "-t", "plain", "-"];
    let args = options
        .iter()
        .map(|s| s.to_string())
        .chain(names.iter().cloned());
    let run = Background::start(dir.path(), args, b"");
    wait_until("the bar shows", || !run.stderr().is_empty());
    let r = run.wait();
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr());
    assert_eq!(r.stdout().lines().count(), 2001);
    // The bar redraws at its own rate (at most 20 times a second), not once per line.
    let redraws = r.stderr().matches(" files").count();
    assert!(
        redraws < names.len(),
        "{redraws} redraws for {} lines",
        names.len()
    );
}
