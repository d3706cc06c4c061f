//! The `mtsum` command as a user meets it: the real binary, run in a temporary directory.
//!
//! Every test asserts the three things a script sees: standard output (the sum list, byte for
//! byte), standard error (`mtsum: NAME: cause`, one line per failed input) and the exit status
//! (0 all fine, 1 some input failed while the others were still printed, 2 usage error).
//! Every run also checks that nothing panicked.
//!
//! Tests that need something the machine may not offer (coreutils, a non-root user, a loop
//! device) print why they skipped and pass, so that the suite runs anywhere.

mod common;

use common::{MTSUM, is_root, mtsum_unprivileged, skip, tempdir, wait_until};
use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use assert_cmd::Command;
use predicates::prelude::*;

/// No run may take this long; a hang (a FIFO nobody opens, a deadlock) fails instead.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The C++ mtsum 1.1.0 root (SHA-256) of the empty file: a root over two empty leaves.
const MTSUM_SHA256_EMPTY: &str = "08275fa3607b9fbefda10a3972b9f05f7c1bc392d1d68f5fd9d58ac9ff384cba";
/// The C++ mtsum 1.1.0 root (SHA-256) of the one-byte file `00`.
const MTSUM_SHA256_ONE_ZERO_BYTE: &str =
    "2b3ebdff3c96d68d3dae25067215e47edea6f49440b187d3d0c24a692984a6aa";
/// `sha256sum` of nothing.
const SHA256_EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// `sha256sum` of `hello\n`.
const SHA256_HELLO: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

/// The stream hint every stream-refusing layout must give.
const STREAM_HINT: &str = "save it to a file first, or use -t plain, merkle or rfc6962";
/// One byte more than the mtsum layout holds of a stream to learn its length (64 MiB).
const LONGER_THAN_HELD: usize = (64 << 20) + 1;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// What one run of mtsum produced, already checked for a panic.
struct Run {
    stdout: Vec<u8>,
    stderr: String,
    /// `None` when a signal ended the process.
    code: Option<i32>,
}

impl Run {
    fn from_output(output: Output) -> Run {
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            !stderr.contains("panicked"),
            "mtsum panicked ({:?}):\n{stderr}",
            output.status
        );
        Run {
            stdout: output.stdout,
            stderr,
            code: output.status.code(),
        }
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Asserts the whole outcome at once, so that a failure shows all three.
    fn assert(&self, code: i32, stdout: &str, stderr: &str) {
        assert_eq!(
            (self.code, self.stdout().as_str(), self.stderr.as_str()),
            (Some(code), stdout, stderr),
            "(exit code, stdout, stderr) differ"
        );
    }

    /// Asserts a usage error: exit 2, nothing hashed, and `needle` in the message.
    fn assert_usage_error(&self, needle: &str) {
        assert_eq!(self.code, Some(2), "stderr: {}", self.stderr);
        assert!(self.stdout.is_empty(), "stdout: {}", self.stdout());
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}:\n{}",
            self.stderr
        );
    }
}

/// `mtsum` run in `dir`, with empty standard input unless a test gives one.
fn mtsum(dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("mtsum").expect("the mtsum binary is built");
    cmd.current_dir(dir).timeout(TIMEOUT);
    cmd
}

/// Runs `mtsum ARGS` in `dir`.
fn run<S: AsRef<OsStr>>(dir: &Path, args: impl IntoIterator<Item = S>) -> Run {
    run_cmd(mtsum(dir).args(args))
}

fn run_cmd(cmd: &mut Command) -> Run {
    Run::from_output(cmd.output().expect("mtsum starts"))
}

/// Runs `mtsum ARGS` in `dir` with `input` on standard input.
fn run_stdin<S: AsRef<OsStr>>(dir: &Path, args: impl IntoIterator<Item = S>, input: &[u8]) -> Run {
    run_cmd(mtsum(dir).args(args).write_stdin(input))
}

/// The single line `mtsum ARGS NAME` prints for an input that hashes fine.
fn line_of(dir: &Path, args: &[&str], name: &str) -> String {
    let r = run(dir, args.iter().copied().chain([name]));
    assert_eq!((r.code, r.stderr.as_str()), (Some(0), ""), "hashing {name}");
    r.stdout()
}

/// The bare digest `mtsum ARGS --no-names PATH` prints.
fn digest_of(dir: &Path, args: &[&str], path: &str) -> String {
    let line = line_of(dir, &[args, &["--no-names"]].concat(), path);
    line.trim_end().to_string()
}

/// `mtsum: NAME: cause\n`, the one line a failed input gets.
fn error_line(name: &str, cause: &str) -> String {
    format!("mtsum: {name}: {cause}\n")
}

/// Bytes `i mod 251` — the "mod251" pattern of the C++ reference vectors: no period that a
/// power-of-two leaf could hide.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

fn write(dir: &Path, name: impl AsRef<Path>, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, bytes).expect("write a test file");
    path
}

/// Whether `program` can be started at all.
fn have(program: &str) -> bool {
    StdCommand::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

fn mkfifo(path: &Path) {
    let status = StdCommand::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A producer writing into a FIFO from another thread, as `producer > fifo` would.
///
/// The writer opens the FIFO without blocking and retries until mtsum has opened it for
/// reading, so that a test whose mtsum never opens the FIFO fails on its assertions instead of
/// hanging in `open`.
struct FifoWriter {
    stop: Arc<AtomicBool>,
    thread: thread::JoinHandle<()>,
}

impl FifoWriter {
    fn start(path: &Path, data: Vec<u8>) -> FifoWriter {
        let stop = Arc::new(AtomicBool::new(false));
        let (path, flag) = (path.to_owned(), stop.clone());
        let thread = thread::spawn(move || {
            let file = loop {
                match OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&path)
                {
                    Ok(f) => break f,
                    // ENXIO: no reader yet.
                    Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {}
                    Err(e) => panic!("opening the FIFO: {e}"),
                }
                if flag.load(Ordering::Relaxed) {
                    return;
                }
                thread::sleep(Duration::from_millis(2));
            };
            set_blocking(&file);
            // EPIPE when mtsum refuses the stream and closes it unread: that is the point.
            let _ = (&file).write_all(&data);
        });
        FifoWriter { stop, thread }
    }

    /// Waits for the writer, which gives up if nobody opened the FIFO.
    fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the FIFO writer does not panic");
    }
}

/// mtsum running in the background, its standard output and error going to files that a test
/// reads as they grow, and its standard input (if [`Background::start`] is given none) a pipe
/// held open until [`Background::close_stdin`].
struct Background {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    out: PathBuf,
    err: PathBuf,
}

impl Background {
    /// Starts `mtsum ARGS` in `dir`, first writing `input` into its standard input.
    fn start<S: AsRef<OsStr>>(
        dir: &Path,
        args: impl IntoIterator<Item = S>,
        input: &[u8],
    ) -> Background {
        let out = dir.join("background.out");
        Background::start_to(dir, args, input, File::create(&out).unwrap())
    }

    /// [`Background::start`] with standard output going to `stdout` (then
    /// [`Background::stdout`] reads nothing).
    fn start_to<S: AsRef<OsStr>>(
        dir: &Path,
        args: impl IntoIterator<Item = S>,
        input: &[u8],
        stdout: File,
    ) -> Background {
        let (out, err) = (dir.join("background.out"), dir.join("background.err"));
        // Read by `stdout` and `wait` whether mtsum writes to it or not.
        let _ = OpenOptions::new().create(true).append(true).open(&out);
        let mut child = StdCommand::new(MTSUM)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(File::create(&err).unwrap())
            .spawn()
            .expect("mtsum starts");
        let mut stdin = child.stdin.take().expect("a pipe");
        stdin.write_all(input).expect("mtsum reads its input");
        Background {
            child,
            stdin: Some(stdin),
            out,
            err,
        }
    }

    fn stdout(&self) -> String {
        fs::read_to_string(&self.out).unwrap()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&fs::read(&self.err).unwrap()).into_owned()
    }

    /// Writes more into mtsum's standard input.
    fn write_stdin(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("standard input still open");
        stdin.write_all(bytes).expect("mtsum reads its input");
    }

    /// Whether mtsum has ended (its standard input may still be open).
    fn has_ended(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Ends mtsum's standard input, so that it can finish.
    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits (at most [`TIMEOUT`]) for mtsum to end; what it printed.
    fn wait(mut self) -> Run {
        self.close_stdin();
        let deadline = std::time::Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("mtsum did not end");
            }
            thread::sleep(Duration::from_millis(10));
        };
        Run::from_output(Output {
            status,
            stdout: fs::read(&self.out).unwrap(),
            stderr: fs::read(&self.err).unwrap(),
        })
    }
}

impl Drop for Background {
    /// A test that failed while mtsum runs leaves no process behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn set_blocking(file: &File) {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own, with integer arguments only.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        assert!(flags >= 0, "F_GETFL");
        assert!(libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) >= 0);
    }
}

// ---------------------------------------------------------------------------------------------
// Normal use
// ---------------------------------------------------------------------------------------------

#[test]
fn a_file_prints_its_digest_two_spaces_and_its_name() {
    let dir = tempdir();
    write(dir.path(), "one", &[0]);
    run(dir.path(), ["one"]).assert(0, &format!("{MTSUM_SHA256_ONE_ZERO_BYTE}  one\n"), "");
}

#[test]
fn no_names_prints_the_bare_digest() {
    let dir = tempdir();
    write(dir.path(), "one", &[0]);
    run(dir.path(), ["--no-names", "one"]).assert(
        0,
        &format!("{MTSUM_SHA256_ONE_ZERO_BYTE}\n"),
        "",
    );
}

#[test]
fn zero_ends_each_bare_digest_with_nul() {
    let dir = tempdir();
    write(dir.path(), "one", &[0]);
    write(dir.path(), "empty", b"");
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
    write(dir.path(), "one", &[0]);
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
    write(dir.path(), "a", b"a");
    // A mismatch for stdout, then missing files and the warnings for stderr: after the
    // stdout error nothing more is said, as in hash mode and the audit.
    let mut sums = format!("{}  a\n", "0".repeat(64));
    for i in 0..100 {
        sums += &format!("{}  gone-{i}\n", "0".repeat(64));
    }
    write(dir.path(), "sums", sums.as_bytes());
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
    write(dir.path(), "a", b"a");
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
    write(dir.path(), "a", b"a");
    let a = line_of(dir.path(), &["-t", "plain"], "a");
    // The junk line's warning goes first, to the full stderr; the verdict still comes,
    // and the status says that a message was lost, as `sha256sum -c --warn` does.
    write(dir.path(), "sums", format!("junk\n{a}").as_bytes());
    let out = StdCommand::new(MTSUM)
        .args(["-t", "plain", "-c", "--warn", "sums"])
        .current_dir(dir.path())
        .stderr(full)
        .output()
        .expect("mtsum starts");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a: OK\n");
    assert_eq!(out.status.code(), Some(1));
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
        assert_eq!(out.status.code(), Some(2), "{args:?}: not a panic (101)");
    }
}

#[test]
fn verbose_hashing_prints_its_lines_when_standard_error_fails() {
    let full = match dev_full() {
        Ok(full) => full,
        Err(why) => return skip("verbose_hashing_when_stderr_fails", &why),
    };
    let dir = tempdir();
    write(dir.path(), "a", b"a");
    let a = line_of(dir.path(), &["-t", "plain"], "a");
    let out = StdCommand::new(MTSUM)
        .args(["-t", "plain", "--verbose", "a"])
        .current_dir(dir.path())
        .stderr(full)
        .output()
        .expect("mtsum starts");
    assert_eq!(String::from_utf8_lossy(&out.stdout), a);
    let code = out.status.code();
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
    write(dir.path(), "zeta", &pattern(9 << 20));
    write(dir.path(), "alpha", b"alpha\n");
    write(dir.path(), "mid", b"");
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
        write(dir.path(), name, data);
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
        assert_eq!((ours.code, ours.stderr.as_str()), (Some(0), ""), "-a {alg}");
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
    write(dir.path(), "empty", b"");
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
    write(dir.path(), "hello", b"hello\n");
    let expected = digest_of(dir.path(), &[], "hello");
    let r = run_stdin(dir.path(), ["-"], b"hello\n");
    r.assert(0, &format!("{expected}  -\n"), "");
}

#[test]
fn mtsum_layout_on_standard_input_longer_than_it_holds_fails_with_the_stream_hint() {
    let dir = tempdir();
    write(dir.path(), "empty", b"");
    let r = run_stdin(dir.path(), ["-", "empty"], &vec![0; LONGER_THAN_HELD]);
    assert_eq!(r.code, Some(1));
    assert_eq!(r.stdout(), format!("{MTSUM_SHA256_EMPTY}  empty\n"));
    assert!(r.stderr.starts_with("mtsum: -: "), "{}", r.stderr);
    assert!(r.stderr.contains(STREAM_HINT), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
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
    let path = write(dir.path(), "big", &pattern(LONGER_THAN_HELD));
    let digest = digest_of(dir.path(), &[], "big");
    let r = run_with_stdin_file(dir.path(), &[], File::open(&path).unwrap());
    r.assert(0, &format!("{digest}  -\n"), "");
}

#[test]
fn standard_input_redirected_from_a_file_is_hashed_from_where_it_stands() {
    let dir = tempdir();
    let data = pattern(100_000);
    let path = write(dir.path(), "data", &data);
    write(dir.path(), "rest", &data[10..]);
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
    let path = write(dir.path(), "data", &data);
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
    let path = write(dir.path(), "data", &pattern(100));
    let r = run_with_stdin_file(dir.path(), &["-t", "plain"], opened_at(&path, 200));
    r.assert(0, &format!("{SHA256_EMPTY}  -\n"), "");
}

#[test]
fn standard_input_open_for_writing_only_is_a_bad_file_descriptor_even_with_nothing_to_read() {
    // `mtsum 0> empty` or `0>> data`: sha256sum's read fails, so there is no digest of it,
    // although an empty file, or one standing at its end, needs no read to learn its bytes.
    let dir = tempdir();
    let empty = write(dir.path(), "empty", b"");
    let data = write(dir.path(), "data", &pattern(100));
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
            assert_eq!(r.stderr, error_line("-", "Bad file descriptor"), "{what}");
        }
        let r = run_with_stdin_file(dir.path(), &["--plan", "2", "-"], write_only(path, at));
        assert_eq!(r.stderr, error_line("-", "Bad file descriptor"), "{path:?}");
    }
}

#[test]
fn standard_input_named_twice_from_a_file_at_an_offset_gives_the_rest_then_nothing() {
    let dir = tempdir();
    let data = pattern(100_000);
    let path = write(dir.path(), "data", &data);
    write(dir.path(), "rest", &data[10..]);
    let rest = digest_of(dir.path(), &[], "rest");
    let r = run_with_stdin_file(dir.path(), &["-", "-"], opened_at(&path, 10));
    r.assert(0, &format!("{rest}  -\n{MTSUM_SHA256_EMPTY}  -\n"), "");
}

#[test]
fn check_lines_naming_standard_input_from_a_file_at_an_offset_check_the_rest() {
    let dir = tempdir();
    let data = pattern(100_000);
    let path = write(dir.path(), "data", &data);
    write(dir.path(), "rest", &data[10..]);
    let rest = digest_of(dir.path(), &[], "rest");
    write(dir.path(), "sums", format!("{rest}  -\n").as_bytes());
    let r = run_with_stdin_file(dir.path(), &["-c", "sums"], opened_at(&path, 10));
    r.assert(0, "-: OK\n", "");
    // The sum file itself on standard input, read from where it stands.
    let sums = write(
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
    write(dir.path(), "data", &data);
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
    write(dir.path(), "data", &data);
    write(dir.path(), "empty", b"");
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
// Bad input: one line on stderr, the other inputs still hashed
// ---------------------------------------------------------------------------------------------

#[test]
fn missing_file_is_no_such_file_and_the_others_are_still_hashed() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
    write(dir.path(), "b", b"b");
    let expected = line_of(dir.path(), &[], "a") + &line_of(dir.path(), &[], "b");
    run(dir.path(), ["a", "missing", "b"]).assert(
        1,
        &expected,
        &error_line("missing", "No such file or directory"),
    );
}

#[test]
fn directory_is_a_directory_and_the_others_are_still_hashed() {
    let dir = tempdir();
    fs::create_dir(dir.path().join("sub")).unwrap();
    write(dir.path(), "a", b"a");
    let expected = line_of(dir.path(), &[], "a");
    for layout in ["mtsum", "plain", "merkle", "rfc6962"] {
        let a = line_of(dir.path(), &["-t", layout], "a");
        run(dir.path(), ["-t", layout, "sub", "a"]).assert(
            1,
            &a,
            &error_line("sub", "Is a directory"),
        );
    }
    run(dir.path(), ["a", "sub"]).assert(1, &expected, &error_line("sub", "Is a directory"));
}

#[test]
fn standard_input_that_is_a_directory_is_reported() {
    let dir = tempdir();
    let output = StdCommand::new(MTSUM)
        .args(["-t", "plain"])
        .current_dir(dir.path())
        .stdin(File::open(dir.path()).unwrap())
        .output()
        .unwrap();
    Run::from_output(output).assert(1, "", &error_line("-", "Is a directory"));
}

#[test]
fn unreadable_file_is_permission_denied_and_the_others_are_still_hashed() {
    let cmd = match mtsum_unprivileged() {
        Ok(cmd) => cmd,
        Err(why) => return skip("unreadable_file_is_permission_denied", &why),
    };
    let dir = tempdir();
    // The unprivileged user must be able to enter the directory and read the other file.
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    write(dir.path(), "a", b"a");
    fs::set_permissions(dir.path().join("a"), fs::Permissions::from_mode(0o644)).unwrap();
    let secret = write(dir.path(), "secret", b"secret");
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o000)).unwrap();
    let expected = line_of(dir.path(), &[], "a");
    let mut cmd = Command::from_std(cmd);
    cmd.args(["secret", "a"])
        .current_dir(dir.path())
        .timeout(TIMEOUT);
    run_cmd(&mut cmd).assert(1, &expected, &error_line("secret", "Permission denied"));
}

#[test]
fn empty_file_has_the_digest_of_the_reference_tool() {
    let dir = tempdir();
    write(dir.path(), "empty", b"");
    let expected = [
        ("mtsum", MTSUM_SHA256_EMPTY),
        ("plain", SHA256_EMPTY),
        ("merkle", SHA256_EMPTY),
        ("rfc6962", SHA256_EMPTY),
    ];
    for (layout, digest) in expected {
        run(dir.path(), ["-t", layout, "empty"]).assert(0, &format!("{digest}  empty\n"), "");
    }
}

#[test]
fn fifo_is_streamed_for_stream_capable_layouts() {
    let dir = tempdir();
    let data = pattern((2 << 20) + 3);
    write(dir.path(), "data", &data);
    for layout in [
        &["-t", "plain"][..],
        &["-t", "merkle"],
        &["-t", "merkle", "-l", "64K"],
        &["-t", "rfc6962"],
        &["-t", "rfc6962", "-l", "1K"],
    ] {
        let digest = digest_of(dir.path(), layout, "data");
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let writer = FifoWriter::start(&fifo, data.clone());
        let r = run(dir.path(), [layout, &["fifo"]].concat());
        writer.finish();
        fs::remove_file(&fifo).unwrap();
        r.assert(0, &format!("{digest}  fifo\n"), "");
    }
}

#[test]
fn fifo_with_mtsum_layout_hashes_like_a_file_of_its_bytes() {
    let dir = tempdir();
    let data = pattern((1 << 20) + 3);
    write(dir.path(), "data", &data);
    let digest = digest_of(dir.path(), &[], "data");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let writer = FifoWriter::start(&fifo, data);
    let r = run(dir.path(), ["fifo"]);
    writer.finish();
    r.assert(0, &format!("{digest}  fifo\n"), "");
}

#[test]
fn fifo_with_mtsum_layout_longer_than_it_holds_is_a_stream_error_and_the_others_are_hashed() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let expected = line_of(dir.path(), &[], "a");
    let writer = FifoWriter::start(&fifo, pattern(LONGER_THAN_HELD));
    let r = run(dir.path(), ["fifo", "a"]);
    writer.finish();
    assert_eq!(r.code, Some(1), "stderr: {}", r.stderr);
    assert_eq!(r.stdout(), expected);
    assert!(r.stderr.starts_with("mtsum: fifo: "), "{}", r.stderr);
    assert!(r.stderr.contains(STREAM_HINT), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

#[test]
fn dev_null_hashes_as_nothing_for_stream_capable_layouts() {
    let dir = tempdir();
    for layout in ["plain", "merkle", "rfc6962"] {
        run(dir.path(), ["-t", layout, "/dev/null"]).assert(
            0,
            &format!("{SHA256_EMPTY}  /dev/null\n"),
            "",
        );
    }
}

#[test]
fn dev_null_with_mtsum_layout_is_the_empty_files_tree_and_dev_zero_a_stream_error() {
    let dir = tempdir();
    run(dir.path(), ["/dev/null"]).assert(0, &format!("{MTSUM_SHA256_EMPTY}  /dev/null\n"), "");
    let r = run(dir.path(), ["/dev/zero"]);
    assert_eq!((r.code, r.stdout.as_slice()), (Some(1), &b""[..]));
    assert!(r.stderr.starts_with("mtsum: /dev/zero: "), "{}", r.stderr);
    assert!(r.stderr.contains(STREAM_HINT), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

/// A loop device attached to a file, detached again when dropped.
struct LoopDevice(PathBuf);

impl LoopDevice {
    fn attach(file: &Path) -> Result<LoopDevice, String> {
        if !is_root() {
            return Err("attaching a loop device needs root".into());
        }
        let out = StdCommand::new("losetup")
            .args(["-f", "--show"])
            .arg(file)
            .output()
            .map_err(|e| format!("losetup: {e}"))?;
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr);
            return Err(format!("losetup -f --show failed: {}", why.trim()));
        }
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let dev = LoopDevice(PathBuf::from(dev));
        File::open(&dev.0).map_err(|e| format!("{} is not readable: {e}", dev.0.display()))?;
        Ok(dev)
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = StdCommand::new("losetup").arg("-d").arg(&self.0).status();
    }
}

#[test]
fn block_device_is_hashed_by_its_seekable_size_not_its_stat_size() {
    let dir = tempdir();
    // A multiple of the 512-byte sector, more than one default merkle leaf, not a power of two.
    let data = pattern((3 << 20) + 7 * 512);
    write(dir.path(), "image", &data);
    let device = match LoopDevice::attach(&dir.path().join("image")) {
        Ok(d) => d,
        Err(why) => return skip("block_device_is_hashed_by_its_seekable_size", &why),
    };
    let dev = device.0.to_str().expect("a UTF-8 device path").to_string();
    assert_eq!(
        fs::metadata(&dev).unwrap().len(),
        0,
        "stat says 0 for a block device"
    );
    for layout in [
        &[][..],
        &["-t", "plain"],
        &["-t", "merkle"],
        &["-t", "rfc6962"],
    ] {
        let from_file = digest_of(dir.path(), layout, "image");
        run(dir.path(), [layout, &[dev.as_str()]].concat()).assert(
            0,
            &format!("{from_file}  {dev}\n"),
            "",
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Usage errors: exit 2, nothing hashed
// ---------------------------------------------------------------------------------------------

#[test]
fn zero_processors_is_a_usage_error() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
    run(dir.path(), ["-p", "0", "a"]).assert_usage_error("at least 1");
}

#[test]
fn non_numeric_processors_is_a_usage_error() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
    run(dir.path(), ["-p", "abc", "a"]).assert_usage_error("'abc' is not a number of processors");
}

#[test]
fn unknown_algorithm_is_a_usage_error_listing_the_algorithms() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
    let r = run(dir.path(), ["-a", "sha3", "a"]);
    r.assert_usage_error("sha3");
    for alg in [
        "md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake3", "xxh3", "xxh128",
    ] {
        assert!(r.stderr.contains(alg), "{alg} not listed:\n{}", r.stderr);
    }
}

#[test]
fn unknown_layout_is_a_usage_error_listing_the_layouts() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
    let r = run(dir.path(), ["-t", "sha256tree", "a"]);
    r.assert_usage_error("sha256tree");
    for layout in ["mtsum", "plain", "merkle", "rfc6962"] {
        assert!(
            r.stderr.contains(layout),
            "{layout} not listed:\n{}",
            r.stderr
        );
    }
}

#[test]
fn zero_leaf_size_is_a_usage_error() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
    for layout in ["merkle", "rfc6962"] {
        run(dir.path(), ["-t", layout, "-l", "0", "a"]).assert_usage_error("at least 1 byte");
    }
}

#[test]
fn malformed_leaf_size_is_a_usage_error() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
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
    write(dir.path(), "a", b"a");
    for layout in [
        &["-l", "4K"][..],
        &["-t", "mtsum", "-l", "4K"],
        &["-t", "plain", "-l", "1M"],
    ] {
        let r = run(dir.path(), [layout, &["a"]].concat());
        r.assert_usage_error("leaf size");
        assert!(r.stderr.contains("merkle and rfc6962"), "{}", r.stderr);
    }
}

#[test]
fn usage_errors_are_one_line_starting_with_mtsum() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
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
        let r = run(dir.path(), [args, &["a"]].concat());
        assert_eq!(r.code, Some(2), "{args:?}");
        assert!(r.stdout.is_empty(), "{args:?}");
        assert!(
            r.stderr.starts_with("mtsum: ") && r.stderr.lines().count() == 1,
            "{args:?}: not one `mtsum: ` line:\n{}",
            r.stderr
        );
    }
}

#[test]
fn options_that_would_be_ignored_are_usage_errors() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
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
// Files that change while they are hashed
// ---------------------------------------------------------------------------------------------

/// Size of the file that changes under mtsum: 128 MiB, sparse so that it costs no disk.
///
/// Determinism: the file changes continuously from before mtsum starts until after it exits,
/// so the test only needs some change to land between mtsum's open and its final check.
/// `-p 1 -a sha512` over 128 MiB keeps that window at about half a second here, while a
/// change lands every few microseconds (growth) or every millisecond (truncation); the test
/// could only fail if the changing process got no CPU for the whole window.
const CHANGING_SIZE: u64 = 128 << 20;
const SLOW_HASH: [&str; 4] = ["-p", "1", "-a", "sha512"];

#[test]
fn file_growing_while_hashed_is_changed_while_being_read_and_the_others_are_still_hashed() {
    let dir = tempdir();
    write(dir.path(), "before", b"before");
    write(dir.path(), "after", b"after");
    let growing = dir.path().join("growing");
    File::create(&growing)
        .unwrap()
        .set_len(CHANGING_SIZE)
        .unwrap();
    let expected =
        line_of(dir.path(), &SLOW_HASH, "before") + &line_of(dir.path(), &SLOW_HASH, "after");

    // `printf` is a shell builtin: the loop appends without forking.
    let mut appender = StdCommand::new("sh")
        .args(["-c", r#"while :; do printf x >> "$0"; done"#])
        .arg(&growing)
        .spawn()
        .expect("sh starts");
    wait_until("the file grows", || {
        fs::metadata(&growing).unwrap().len() > CHANGING_SIZE
    });
    let r = run(
        dir.path(),
        [&SLOW_HASH[..], &["before", "growing", "after"]].concat(),
    );
    appender.kill().unwrap();
    appender.wait().unwrap();

    r.assert(
        1,
        &expected,
        &error_line("growing", "changed while being read"),
    );
}

#[test]
fn file_truncated_while_hashed_is_changed_while_being_read_and_the_others_are_still_hashed() {
    let dir = tempdir();
    write(dir.path(), "before", b"before");
    write(dir.path(), "after", b"after");
    let path = dir.path().join("shrinking");
    let file = File::create(&path).unwrap();
    file.set_len(CHANGING_SIZE).unwrap();
    let expected =
        line_of(dir.path(), &SLOW_HASH, "before") + &line_of(dir.path(), &SLOW_HASH, "after");

    // Cut the file to half and back, over and over: a read past the cut ends early, and a read
    // that missed the cut still sees another size or modification time at the end.
    let stop = Arc::new(AtomicBool::new(false));
    let truncations = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let truncator = {
        let (stop, truncations) = (stop.clone(), truncations.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                file.set_len(CHANGING_SIZE / 2).unwrap();
                file.set_len(CHANGING_SIZE).unwrap();
                truncations.fetch_add(1, Ordering::Relaxed);
                thread::sleep(Duration::from_micros(500));
            }
        })
    };
    wait_until("the file was cut", || {
        truncations.load(Ordering::Relaxed) > 0
    });
    let r = run(
        dir.path(),
        [&SLOW_HASH[..], &["before", "shrinking", "after"]].concat(),
    );
    stop.store(true, Ordering::Relaxed);
    truncator.join().unwrap();

    r.assert(
        1,
        &expected,
        &error_line("shrinking", "changed while being read"),
    );
}

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
        write(dir.path(), name, format!("{i}\n").as_bytes());
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
    write(dir.path(), "a", b"a");
    write(dir.path(), "b", b"b");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    write(dir.path(), "fifo bytes", b"fifo");
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
    write(dir.path(), "a", b"a");
    write(dir.path(), "b", b"b");
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
    write(dir.path(), "a", b"a");
    write(dir.path(), "b", b"b");
    let [a, b] = ["a", "b"].map(|name| line_of(dir.path(), &["-t", "plain"], name));
    write(dir.path(), "SUMS", a.as_bytes());
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
    write(dir.path(), "a", b"a");
    let expected = line_of(dir.path(), &["-t", "plain"], "a");
    let r = run_redirected(dir.path(), &["-t", "plain", "-", "a"], "<&-");
    r.assert(1, &expected, &error_line("-", "Bad file descriptor"));
}

#[test]
fn standard_input_closed_at_start_fails_a_check_line_naming_it() {
    let dir = tempdir();
    write(
        dir.path(),
        "SUMS",
        format!("{SHA256_EMPTY}  -\n").as_bytes(),
    );
    let r = run_redirected(dir.path(), &["-t", "plain", "-c", "SUMS"], "<&-");
    assert_eq!(r.code, Some(1), "stderr: {}", r.stderr);
    assert_eq!(r.stdout(), "-: FAILED open or read\n");
    assert!(
        r.stderr
            .starts_with(&error_line("-", "Bad file descriptor")),
        "{}",
        r.stderr
    );
}

#[test]
fn standard_output_closed_at_start_is_a_write_error_with_status_1() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
    let r = run_redirected(dir.path(), &["-t", "plain", "a"], ">&-");
    assert_eq!(r.code, Some(1), "stderr: {}", r.stderr);
    assert!(
        r.stderr
            .starts_with("mtsum: standard output: Bad file descriptor"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

#[test]
fn verbose_lines_go_to_stderr_and_stdout_stays_the_sum_list() {
    let dir = tempdir();
    write(dir.path(), "a", b"hello\n");
    write(dir.path(), "b", &pattern(3 << 20));
    let clean = run(dir.path(), ["-p", "3", "a", "b"]);
    let r = run(dir.path(), ["-p", "3", "--verbose", "a", "b"]);
    assert_eq!((r.code, r.stdout()), (Some(0), clean.stdout()));
    for needle in [
        "Algorithm: sha256\n",
        "Number of processors: 3\n",
        "File size: 6 bytes\n",
        "File size: 3145728 bytes\n",
    ] {
        assert!(r.stderr.contains(needle), "no {needle:?} in:\n{}", r.stderr);
    }
    let timing = predicate::str::is_match(r"(?m)^b: \d+\.\d\d s \(\d+\.\d\d GB/s\)$").unwrap();
    assert!(timing.eval(&r.stderr), "no timing line in:\n{}", r.stderr);
}

#[test]
fn verbose_names_the_multi_buffer_kernel_and_none_when_forced_portable() {
    let dir = tempdir();
    write(dir.path(), "a", b"hello\n");
    let kernel = mtsum::lanes::Kernel::multi_buffer(mtsum::Algorithm::Sha1);
    let expected = format!(
        "Multi-buffer kernel: {}\n",
        kernel.map_or("none", |k| k.name())
    );
    let r = run(dir.path(), ["--verbose", "-a", "sha1", "a"]);
    assert!(
        r.stderr.contains(&expected),
        "no {expected:?} in:\n{}",
        r.stderr
    );
    let forced = StdCommand::new(MTSUM)
        .current_dir(dir.path())
        .env(mtsum::lanes::FORCE_PORTABLE_VAR, "1")
        .args(["--verbose", "-a", "sha1", "a"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&forced.stderr);
    assert!(stderr.contains("Multi-buffer kernel: none\n"), "{stderr}");
}

#[test]
fn benchmark_lines_go_to_stderr_and_stdout_stays_the_sum_list() {
    let dir = tempdir();
    write(dir.path(), "a", b"hello\n");
    write(dir.path(), "b", &pattern(3 << 20));
    let clean = run(dir.path(), ["a", "b"]);
    let r = run(dir.path(), ["--benchmark", "a", "b"]);
    assert_eq!((r.code, r.stdout()), (Some(0), clean.stdout()));
    // One timing line per file, after its name.
    let timing = |name| format!(r"{name}: \d+\.\d\d s \(\d+\.\d\d GB/s\)\n");
    let lines = predicate::str::is_match(format!("^{}{}$", timing("a"), timing("b"))).unwrap();
    assert!(lines.eval(&r.stderr), "{}", r.stderr);
}

/// A sum file of two lines that name different settings: `a` untagged (`-t plain` sha256),
/// `b` (3 MiB) tagged MD5. Returns the directory and the verdicts `-c` prints.
fn sums_of_two_kinds() -> (tempfile::TempDir, String) {
    let dir = tempdir();
    write(dir.path(), "a", b"hello\n");
    write(dir.path(), "b", &pattern(3 << 20));
    let a = line_of(dir.path(), &["-t", "plain"], "a");
    let b = line_of(dir.path(), &["-t", "plain", "--tag", "-a", "md5"], "b");
    write(dir.path(), "SUMS", (a + &b).as_bytes());
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
    assert!(expected.eval(&r.stderr), "unexpected stderr:\n{}", r.stderr);
}

#[test]
fn check_benchmark_prints_each_files_time_on_stderr_and_the_same_verdicts() {
    let (dir, verdicts) = sums_of_two_kinds();
    let r = run(dir.path(), ["-c", "-t", "plain", "--benchmark", "SUMS"]);
    assert_eq!((r.code, r.stdout()), (Some(0), verdicts));
    let timing = |name| format!(r"{name}: \d+\.\d\d s \(\d+\.\d\d GB/s\)\n");
    let lines = predicate::str::is_match(format!("^{}{}$", timing("a"), timing("b"))).unwrap();
    assert!(
        lines.eval(&r.stderr),
        "one timing line per file:\n{}",
        r.stderr
    );
    // Asked for explicitly, they stay when the verdicts are quiet.
    let quiet = run(
        dir.path(),
        ["-c", "-t", "plain", "--benchmark", "--quiet", "SUMS"],
    );
    assert_eq!((quiet.code, quiet.stdout()), (Some(0), String::new()));
    assert_eq!(quiet.stderr.lines().count(), 2, "{}", quiet.stderr);
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
        assert_eq!((r.code, r.stderr.as_str()), (Some(0), ""), "{flag}");
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
                (r.code, r.stderr.as_str()),
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
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    let digest = "541b3e9daa09b20bf85fa273e5cbd3e80185aa4ec298e765db87742b70138a53";
    assert_eq!(r.stdout(), format!("{digest}  -\n"));
}

#[test]
fn progress_bar_of_standard_input_is_a_spinner_without_a_total() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
    let mut run = Background::start(dir.path(), ["--progress", "-t", "plain", "a", "-"], b"b");
    wait_until("the bar shows", || !run.stderr().is_empty());
    run.close_stdin();
    let r = run.wait();
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    assert!(r.stderr.contains(" hashed, "), "{}", r.stderr);
    // Not a known total of 1 byte and 1 file, of which 2 bytes and 2 files were then done.
    assert!(!r.stderr.contains("/1 B "), "{}", r.stderr);
    assert!(!r.stderr.contains("/1 files"), "{}", r.stderr);
}

#[test]
fn progress_bar_is_not_redrawn_for_each_result_going_elsewhere_than_its_terminal() {
    let dir = tempdir();
    let names: Vec<String> = (0..2000).map(|i| format!("f{i:04}")).collect();
    for name in &names {
        write(dir.path(), name, name.as_bytes());
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
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    assert_eq!(r.stdout().lines().count(), 2001);
    // The bar redraws at its own rate (at most 20 times a second), not once per line.
    let redraws = r.stderr.matches(" files").count();
    assert!(
        redraws < names.len(),
        "{redraws} redraws for {} lines",
        names.len()
    );
}

// ---------------------------------------------------------------------------------------------
// No input may cause a panic
// ---------------------------------------------------------------------------------------------

#[test]
fn odd_arguments_and_inputs_never_panic() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
    write(dir.path(), "empty", b"");
    // More leaves of one byte than a graph may show.
    write(dir.path(), "r70k", &pattern(70_000));
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
            r.stderr
        );
        for line in r.stderr.lines().filter(|l| l.starts_with("mtsum")) {
            assert!(line.starts_with("mtsum: "), "{args:?}: {line}");
        }
    }
}

impl Run {
    /// Asserts success with `n` checksum lines.
    fn assert_lines_ok(&self, n: usize) {
        assert_eq!((self.code, self.stderr.as_str()), (Some(0), ""));
        assert_eq!(self.stdout().lines().count(), n, "{}", self.stdout());
    }
}

#[test]
fn too_many_processors_for_the_system_is_an_error_not_a_panic() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
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
    if r.stderr.starts_with("setpriv:") || r.stderr.starts_with("prlimit:") {
        eprintln!(
            "note: not tested, setpriv/prlimit cannot run mtsum as user 65534: {}",
            r.stderr
        );
        return;
    }
    // Either mtsum makes do with the workers it could start, or it says why it cannot.
    match r.code {
        Some(0) => r.assert(0, &expected, ""),
        Some(1 | 2) => {
            assert!(r.stdout.is_empty() || r.stdout() == expected);
            assert!(r.stderr.starts_with("mtsum: "), "{}", r.stderr);
            assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        }
        other => panic!("exit {other:?}:\n{}", r.stderr),
    }
}

#[test]
fn the_ranges_options_with_audit_or_check_name_the_option_given() {
    let dir = tempdir();
    write(dir.path(), "a", b"a");
    for mode in ["--audit", "--check"] {
        for ranges in [&["--plan", "4"][..], &["--range", "0-1/1"], &["--combine"]] {
            let r = run(dir.path(), [&[mode][..], ranges, &["a"]].concat());
            r.assert_usage_error(&format!("'{mode}' cannot be used with '{}", ranges[0]));
            let other = if mode == "--audit" {
                "--check"
            } else {
                "--audit"
            };
            assert!(!r.stderr.contains(other), "{}", r.stderr);
        }
    }
}
