//! What every mode does around its own work: count the inputs for the bar's ETA, start the
//! progress bar, build the engine that feeds it ([`start`]), then print results above the bar
//! and remember what went wrong for the exit status ([`Printer`]). One place for it, so that
//! every mode finishes its bar and treats a failing standard output alike.

use std::cell::{Cell, RefCell};
use std::fmt::Display;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use mtsum::engine::Engine;
use mtsum::report;
use mtsum::source::os_message;

use crate::args::Common;
use crate::progress::{self, Progress};
use crate::stdio;

/// Exit statuses, as coreutils and ripgrep use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Every input was hashed (or checked out).
    Ok = 0,
    /// At least one input could not be hashed or did not check out; the others were done.
    InputFailed = 1,
    /// The command line was wrong, or the run could not start; nothing was done.
    Usage = 2,
}

/// Starts a mode's run: the bar (with totals from `count`, which is called only when a bar
/// may show, since counting can mean walking a tree twice; `None` when the mode cannot
/// count), the engine reporting to it, and the printer above it.
pub fn start(common: &Common, count: impl FnOnce() -> Option<(u64, u64)>) -> (Engine, Printer) {
    let (bytes, files) = match common.progress.enabled() {
        true => count().unzip(),
        false => (None, None),
    };
    let progress = Progress::start(common.progress, bytes);
    let engine = common.engine.clone().with_progress(progress.counter());
    let stdout = io::stdout();
    let printer = Printer {
        line_by_line: stdout.is_terminal(),
        below_bar: progress.has_bar() && stdout_is_the_bars_terminal(),
        progress,
        stdout: RefCell::new(BufWriter::with_capacity(OUTPUT_BUFFER, stdout.lock())),
        verbose: common.figures.verbose,
        status: Cell::new(Status::Ok),
        broken: Cell::new(false),
        files_done: Cell::new(0),
        files_total: Cell::new(files),
    };
    (engine, printer)
}

/// Whether stdout is the terminal the bar is drawn on (stderr's), so that a line written
/// there would run through the bar. Anywhere else (a file, a pipe, another terminal) its
/// lines are written without touching the bar, which redraws at its own rate.
fn stdout_is_the_bars_terminal() -> bool {
    use std::os::fd::{AsFd, BorrowedFd};
    use std::os::unix::fs::MetadataExt;
    let device = |fd: BorrowedFd| {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        file.metadata().ok().map(|m| m.rdev())
    };
    let (stdout, stderr) = (io::stdout(), io::stderr());
    stdout.is_terminal() && stderr.is_terminal() && device(stdout.as_fd()) == device(stderr.as_fd())
}

/// Bytes of results gathered before one write to a pipe or file: one system call per some
/// 600 lines of sha256 digests instead of one per line (20 000 files: 20 000 writes before).
const OUTPUT_BUFFER: usize = 64 << 10;

/// Prints a run's results on stdout and its messages on stderr, above the progress bar, and
/// keeps the exit status. Shared (`&self`) so that a mode's sink can print while the task
/// stream it feeds the engine asks [`Printer::broken`].
///
/// A closed pipe (`mtsum * | head`) never reaches it: SIGPIPE ends the process quietly, as in
/// coreutils. Any other failing stdout (a full disk) would fail every later line too, so the
/// first failure is reported once, `mtsum: standard output: cause`, the status becomes 1, and
/// nothing more is printed; the mode stops feeding work where it can.
///
/// Results go to a terminal line by line (with the bar out of the way when it is on the same
/// terminal); to a pipe or a file they are gathered, as coreutils does, and written before
/// every message on stderr, so that a message still follows the results before it, and
/// whenever the engine waits ([`Printer::write_gathered`]).
pub struct Printer {
    progress: Progress,
    stdout: RefCell<BufWriter<io::StdoutLock<'static>>>,
    /// Whether every result is flushed as it is printed.
    line_by_line: bool,
    /// Whether stdout is the terminal the bar is on: each result is written with the bar
    /// out of the way.
    below_bar: bool,
    verbose: bool,
    status: Cell<Status>,
    broken: Cell<bool>,
    files_done: Cell<u64>,
    files_total: Cell<Option<u64>>,
}

impl Printer {
    /// Bytes read so far, counted by whoever reads them (the audit's own readers).
    pub fn progress_counter(&self) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
        self.progress.counter()
    }

    /// Writes one whole result to stdout.
    pub fn print(&self, bytes: &[u8]) {
        if self.broken() {
            return;
        }
        if let Err(e) = self.write_stdout(bytes) {
            self.stdout_failed(&e);
        }
    }

    /// Writes a message to stderr, after the results printed so far. A failing stderr has
    /// nowhere to be reported.
    pub fn message(&self, bytes: &[u8]) {
        self.write_gathered();
        if !self.broken() {
            let _ = self.progress.write(&mut io::stderr(), bytes);
        }
    }

    /// With `--verbose`, says why a path met in a directory was passed over.
    pub fn skipped(&self, path: &Path, reason: &dyn Display) {
        if self.verbose {
            self.message(&report::error_line(path.as_os_str().as_bytes(), reason));
        }
    }

    /// Notes that an input failed: the run goes on and ends with status 1.
    pub fn fail(&self) {
        self.status.set(Status::InputFailed);
    }

    /// Reports a failing stdout, once; nothing is printed afterwards.
    pub fn stdout_failed(&self, error: &io::Error) {
        if !self.broken() {
            self.broken.set(true);
            let line = stdout_error_line(error);
            let _ = self.progress.write(&mut io::stderr(), line.as_bytes());
        }
        self.fail();
    }

    /// Whether stdout failed: no result can be printed any more, so there is no point in
    /// computing more.
    pub fn broken(&self) -> bool {
        self.broken.get()
    }

    /// Counts one more input done, for the bar.
    pub fn file_done(&self) {
        let done = self.files_done.get() + 1;
        self.files_done.set(done);
        self.progress.files(done, self.files_total.get());
    }

    /// Takes an input of `bytes` that was counted but will not be read (an audit's file not
    /// due) off the bar's totals, so that the bar still reaches its end.
    pub fn not_read(&self, bytes: u64) {
        let total = self.files_total.get().map(|n| n.saturating_sub(1));
        self.files_total.set(total);
        self.progress.not_read(bytes);
        self.progress.files(self.files_done.get(), total);
    }

    /// Writes the results gathered so far, as when the engine waits for the next one (see
    /// [`mtsum::engine::Sink::idle`]): none waits unwritten for a later input that blocks.
    pub fn write_gathered(&self) {
        if let Err(e) = self.flush_stdout() {
            self.stdout_failed(&e);
        }
    }

    /// Writers for code that prints through `io::Write` (the library's `-c`): each write goes
    /// above the bar, and errors are returned, not recorded (see [`Printer::stdout_failed`]).
    pub fn writers(&self) -> (Stdout<'_>, Stderr<'_>) {
        (Stdout(self), Stderr(self))
    }

    /// Writes the results still gathered and removes the bar; returns the exit status.
    pub fn finish(self) -> Status {
        self.write_gathered();
        self.progress.finish();
        self.status.get()
    }

    fn write_stdout(&self, bytes: &[u8]) -> io::Result<()> {
        stdout_open()?;
        let mut stdout = self.stdout.borrow_mut();
        if self.below_bar {
            return self.progress.write(&mut *stdout, bytes);
        }
        if self.line_by_line {
            return progress::write_flushed(&mut *stdout, bytes);
        }
        stdout.write_all(bytes)
    }

    /// Writes the results gathered so far; nothing once stdout failed.
    fn flush_stdout(&self) -> io::Result<()> {
        match self.broken() {
            true => Ok(()),
            false => self.stdout.borrow_mut().flush(),
        }
    }
}

/// Writes `text` (`--help`, `--version`) to stdout, as a mode's results are written: a stdout
/// that fails (`mtsum --help > /dev/full`, or closed) is reported and gives status 1, as
/// coreutils' `--help` and `--version` do.
pub fn print_text(text: &str) -> Status {
    let written = stdout_open().and_then(|()| {
        let mut stdout = io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()
    });
    match written {
        Ok(()) => Status::Ok,
        Err(e) => {
            tell(stdout_error_line(&e));
            Status::InputFailed
        }
    }
}

/// Writes `text` to stderr, outside a run's [`Printer`]. A stderr that fails (`2>/dev/full`)
/// is no reason to stop, and the status tells what happened: `eprint!` would panic instead.
pub fn tell(text: impl AsRef<[u8]>) {
    let _ = io::stderr().write_all(text.as_ref());
}

/// Fails with `EBADF` when stdout was closed at start-up: Rust's runtime put `/dev/null` there,
/// which would take every write (see [`stdio`]).
fn stdout_open() -> io::Result<()> {
    match stdio::stdout_was_closed() {
        true => Err(io::Error::from_raw_os_error(libc::EBADF)),
        false => Ok(()),
    }
}

/// The message of a failing stdout: `mtsum: standard output: cause`.
fn stdout_error_line(error: &io::Error) -> String {
    format!("mtsum: standard output: {}\n", os_message(error))
}

/// Standard output above the bar; see [`Printer::writers`].
pub struct Stdout<'p>(&'p Printer);

/// Standard error above the bar; see [`Printer::writers`].
pub struct Stderr<'p>(&'p Printer);

impl Write for Stdout<'_> {
    /// Fails once stdout failed (the failure may have been met by a flush before a message
    /// on stderr), so that the writer stops as every mode does.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.0.broken() {
            return Err(io::Error::other("standard output failed before"));
        }
        self.0.write_stdout(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush_stdout()
    }
}

impl Write for Stderr<'_> {
    /// Writes nothing once stdout failed, as [`Printer::message`]. A failing stderr has
    /// nowhere to be reported and does not stop the results on stdout; it ends the run with
    /// status 1, as in coreutils.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // After the results before it, as coreutils' `error` flushes stdout first.
        self.0.write_gathered();
        if !self.0.broken() && self.0.progress.write(&mut io::stderr(), buf).is_err() {
            self.0.fail();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `n` of `noun`, in the plural but for one: "1 file", "2 files".
pub fn count(n: u64, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        _ => format!("{n} {noun}s"),
    }
}

pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return count(bytes, "byte");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human_bytes(5), "5 bytes");
        assert_eq!(human_bytes(640 << 20), "640.0 MiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
