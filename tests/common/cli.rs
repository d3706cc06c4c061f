//! Helpers of the command-line tests (`tests/cli*.rs`): the values they expect, and the files,
//! FIFOs and background runs they feed the real binary (run as [`super::run`] runs it).

#![allow(dead_code)]

use super::run::{Run, TIMEOUT, run};
use super::{MTSUM, feed};
use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

/// The C++ mtsum 1.1.0 root (SHA-256) of the empty file: a root over two empty leaves.
pub const MTSUM_SHA256_EMPTY: &str =
    "08275fa3607b9fbefda10a3972b9f05f7c1bc392d1d68f5fd9d58ac9ff384cba";
/// The C++ mtsum 1.1.0 root (SHA-256) of the one-byte file `00`.
pub const MTSUM_SHA256_ONE_ZERO_BYTE: &str =
    "2b3ebdff3c96d68d3dae25067215e47edea6f49440b187d3d0c24a692984a6aa";
/// `sha256sum` of nothing.
pub const SHA256_EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// `sha256sum` of `hello\n`.
pub const SHA256_HELLO: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

/// The stream hint every stream-refusing layout must give.
pub const STREAM_HINT: &str = "save it to a file first, or use -t plain, merkle or rfc6962";
/// One byte more than the mtsum layout holds of a stream to learn its length (64 MiB).
pub const LONGER_THAN_HELD: usize = (64 << 20) + 1;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The single line `mtsum ARGS NAME` prints for an input that hashes fine.
pub fn line_of(dir: &Path, args: &[&str], name: &str) -> String {
    let r = run(dir, args.iter().copied().chain([name]));
    assert_eq!((r.code, r.stderr()), (Some(0), ""), "hashing {name}");
    r.stdout().to_string()
}

/// The bare digest `mtsum ARGS --no-names PATH` prints.
pub fn digest_of(dir: &Path, args: &[&str], path: &str) -> String {
    let line = line_of(dir, &[args, &["--no-names"]].concat(), path);
    line.trim_end().to_string()
}

/// `mtsum: NAME: cause\n`, the one line a failed input gets.
pub fn error_line(name: &str, cause: &str) -> String {
    format!("mtsum: {name}: {cause}\n")
}

/// Bytes `i mod 251` — the "mod251" pattern of the C++ reference vectors: no period that a
/// power-of-two leaf could hide.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

pub fn mkfifo(path: &Path) {
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
pub struct FifoWriter {
    pub stop: Arc<AtomicBool>,
    pub thread: thread::JoinHandle<()>,
}

impl FifoWriter {
    pub fn start(path: &Path, data: Vec<u8>) -> FifoWriter {
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
            feed(&file, &data);
        });
        FifoWriter { stop, thread }
    }

    /// Waits for the writer, which gives up if nobody opened the FIFO.
    pub fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the FIFO writer does not panic");
    }
}

/// mtsum running in the background, its standard output and error going to files that a test
/// reads as they grow, and its standard input (if [`Background::start`] is given none) a pipe
/// held open until [`Background::close_stdin`].
pub struct Background {
    pub child: std::process::Child,
    pub stdin: Option<std::process::ChildStdin>,
    pub out: PathBuf,
    pub err: PathBuf,
}

impl Background {
    /// Starts `mtsum ARGS` in `dir`, first writing `input` into its standard input.
    pub fn start<S: AsRef<OsStr>>(
        dir: &Path,
        args: impl IntoIterator<Item = S>,
        input: &[u8],
    ) -> Background {
        let out = dir.join("background.out");
        Background::start_to(dir, args, input, File::create(&out).unwrap())
    }

    /// [`Background::start`] with standard output going to `stdout` (then
    /// [`Background::stdout`] reads nothing).
    pub fn start_to<S: AsRef<OsStr>>(
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
        feed(&mut stdin, input);
        Background {
            child,
            stdin: Some(stdin),
            out,
            err,
        }
    }

    pub fn stdout(&self) -> String {
        fs::read_to_string(&self.out).unwrap()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&fs::read(&self.err).unwrap()).into_owned()
    }

    /// Writes more into mtsum's standard input.
    pub fn write_stdin(&mut self, bytes: &[u8]) {
        feed(
            self.stdin.as_mut().expect("standard input still open"),
            bytes,
        );
    }

    /// Whether mtsum has ended (its standard input may still be open).
    pub fn has_ended(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Ends mtsum's standard input, so that it can finish.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits (at most [`TIMEOUT`]) for mtsum to end; what it printed.
    pub fn wait(mut self) -> Run {
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

pub fn set_blocking(file: &File) {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own, with integer arguments only.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        assert!(flags >= 0, "F_GETFL");
        assert!(libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) >= 0);
    }
}
