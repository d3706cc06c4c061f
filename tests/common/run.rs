//! Running the real binary (and the tools `-c` is compared with): what one run produced, as one
//! [`Run`] for the tests of every mode, checked for a panic, with the assertions they make of
//! it.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use assert_cmd::Command;

/// No run may take this long; a hang (a FIFO nobody opens, a deadlock) fails instead.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// What one run of a program produced, already checked for a panic: the bytes it wrote (which
/// `-c` compares with coreutils' byte for byte, names that are not UTF-8 included) and the
/// same as text, invalid UTF-8 replaced, for the assertions that read lines.
#[derive(Clone, Debug)]
pub struct Run {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// `None` when a signal ended the process.
    pub code: Option<i32>,
    stdout_text: String,
    stderr_text: String,
}

impl Run {
    pub fn from_output(output: Output) -> Run {
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        let run = Run {
            stdout_text: text(&output.stdout),
            stderr_text: text(&output.stderr),
            stdout: output.stdout,
            stderr: output.stderr,
            code: output.status.code(),
        };
        assert!(
            !run.stderr_text.contains("panicked"),
            "the program panicked ({:?}):\n{}",
            output.status,
            run.stderr_text
        );
        run
    }

    /// Standard output as text.
    pub fn stdout(&self) -> &str {
        &self.stdout_text
    }

    /// Standard error as text.
    pub fn stderr(&self) -> &str {
        &self.stderr_text
    }

    /// Asserts the whole outcome at once, so that a failure shows all three.
    pub fn assert(&self, code: i32, stdout: &str, stderr: &str) {
        assert_eq!(
            (self.code, self.stdout(), self.stderr()),
            (Some(code), stdout, stderr),
            "(exit code, stdout, stderr) differ"
        );
    }

    /// Asserts a usage error told on one `mtsum: ` line, exit 2 and nothing hashed; `args`
    /// name the run in a failure.
    pub fn assert_one_usage_line(&self, args: &[&str]) {
        assert_eq!(self.code, Some(2), "{args:?}: {}", self.stderr());
        assert!(self.stdout.is_empty(), "{args:?}: stdout {}", self.stdout());
        assert!(
            self.stderr().starts_with("mtsum: ") && self.stderr().lines().count() == 1,
            "{args:?}: not one `mtsum: ` line:\n{}",
            self.stderr()
        );
    }

    /// Asserts a usage error: exit 2, nothing hashed, and `needle` in the message.
    pub fn assert_usage_error(&self, needle: &str) {
        assert_eq!(self.code, Some(2), "stderr: {}", self.stderr());
        assert!(self.stdout.is_empty(), "stdout: {}", self.stdout());
        assert!(
            self.stderr().contains(needle),
            "stderr lacks {needle:?}:\n{}",
            self.stderr()
        );
    }

    /// Asserts success with `n` checksum lines.
    pub fn assert_lines_ok(&self, n: usize) {
        assert_eq!((self.code, self.stderr()), (Some(0), ""));
        assert_eq!(self.stdout().lines().count(), n, "{}", self.stdout());
    }

    /// `(status, name)` of each line `STATUS  NAME` (of `--audit`, `--compare`), in order (the
    /// name with whatever follows it, such as a corrupt file's damaged ranges).
    pub fn verdicts(&self) -> Vec<(String, String)> {
        self.stdout()
            .lines()
            .map(|l| {
                let (status, name) = l.split_once("  ").expect("STATUS  NAME");
                (status.to_string(), name.to_string())
            })
            .collect()
    }

    /// The status of each name.
    pub fn by_name(&self) -> BTreeMap<String, String> {
        self.verdicts().into_iter().map(|(s, n)| (n, s)).collect()
    }
}

/// `mtsum` run in `dir`, with empty standard input unless a test gives one.
pub fn mtsum(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("mtsum").expect("the mtsum binary is built");
    cmd.current_dir(dir);
    cmd
}

/// Runs `mtsum ARGS` in `dir`.
pub fn run<S: AsRef<OsStr>>(dir: &Path, args: impl IntoIterator<Item = S>) -> Run {
    run_cmd(mtsum(dir).args(args))
}

/// Runs `mtsum ARGS` in `dir` with `input` on standard input. A write that fails because mtsum
/// stopped reading early is no failure here, as with [`feed`](super::feed): `assert_cmd`
/// ignores it.
pub fn run_stdin<S: AsRef<OsStr>>(
    dir: &Path,
    args: impl IntoIterator<Item = S>,
    input: &[u8],
) -> Run {
    run_cmd(mtsum(dir).args(args).write_stdin(input))
}

/// Runs `cmd`, for at most [`TIMEOUT`].
pub fn run_cmd(cmd: &mut Command) -> Run {
    Run::from_output(cmd.timeout(TIMEOUT).output().expect("the program starts"))
}
