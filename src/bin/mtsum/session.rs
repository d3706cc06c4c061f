//! What every mode does around its own work: count the inputs for the bar's ETA, start the
//! progress bar, build the engine that feeds it ([`start`]), then print results above the bar
//! and remember what went wrong for the exit status ([`Printer`]). One place for it, so that
//! every mode finishes its bar and treats a failing standard output alike.

use std::cell::{Cell, RefCell};
use std::fmt::Display;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

use mtsum::engine::Engine;
use mtsum::report;
use mtsum::source::os_message;

use crate::args::Common;
use crate::progress::Progress;

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
        line_by_line: stdout.is_terminal() || progress.has_bar(),
        flushed: Cell::new(Instant::now()),
        progress,
        stdout: RefCell::new(BufWriter::with_capacity(OUTPUT_BUFFER, stdout.lock())),
        verbose: common.verbose,
        status: Cell::new(Status::Ok),
        broken: Cell::new(false),
        files_done: Cell::new(0),
        files_total: Cell::new(files),
    };
    (engine, printer)
}

/// Bytes of results gathered before one write to a pipe or file: one system call per some
/// 600 lines of sha256 digests instead of one per line (20 000 files: 20 000 writes before).
const OUTPUT_BUFFER: usize = 64 << 10;

/// The longest that gathered results wait for the buffer to fill.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Prints a run's results on stdout and its messages on stderr, above the progress bar, and
/// keeps the exit status. Shared (`&self`) so that a mode's sink can print while the task
/// stream it feeds the engine asks [`Printer::broken`].
///
/// A closed pipe (`mtsum * | head`) never reaches it: SIGPIPE ends the process quietly, as in
/// coreutils. Any other failing stdout (a full disk) would fail every later line too, so the
/// first failure is reported once, `mtsum: standard output: cause`, the status becomes 1, and
/// nothing more is printed; the mode stops feeding work where it can.
///
/// Results go to a terminal line by line, and so they do above a bar; to a pipe or a file
/// they are gathered, as coreutils does, and written before every message on stderr, so that
/// a message still follows the results before it.
pub struct Printer {
    progress: Progress,
    stdout: RefCell<BufWriter<io::StdoutLock<'static>>>,
    /// Whether every result is flushed as it is printed.
    line_by_line: bool,
    /// When gathered results were last written.
    flushed: Cell<Instant>,
    verbose: bool,
    status: Cell<Status>,
    broken: Cell<bool>,
    files_done: Cell<u64>,
    files_total: Cell<Option<u64>>,
}

impl Printer {
    /// Writes every result as it is printed, wherever stdout goes.
    pub fn flushing_each_result(mut self) -> Printer {
        self.line_by_line = true;
        self
    }

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
        if let Err(e) = self.flush_stdout() {
            self.stdout_failed(&e);
        }
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
            let line = format!("mtsum: standard output: {}\n", os_message(error));
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

    /// Writers for code that prints through `io::Write` (the library's `-c`): each write goes
    /// above the bar, and errors are returned, not recorded (see [`Printer::stdout_failed`]).
    pub fn writers(&self) -> (Stdout<'_>, Stderr<'_>) {
        (Stdout(self), Stderr(self))
    }

    /// Writes the results still gathered and removes the bar; returns the exit status.
    pub fn finish(self) -> Status {
        if let Err(e) = self.flush_stdout() {
            self.stdout_failed(&e);
        }
        self.progress.finish();
        self.status.get()
    }

    fn write_stdout(&self, bytes: &[u8]) -> io::Result<()> {
        let mut stdout = self.stdout.borrow_mut();
        if self.line_by_line {
            return self.progress.write(&mut *stdout, bytes);
        }
        stdout.write_all(bytes)?;
        // A long run still shows how far it got, in a file or down a pipe.
        if self.flushed.get().elapsed() >= FLUSH_EVERY {
            stdout.flush()?;
            self.flushed.set(Instant::now());
        }
        Ok(())
    }

    /// Writes the results gathered so far; nothing once stdout failed.
    fn flush_stdout(&self) -> io::Result<()> {
        match self.broken() {
            true => Ok(()),
            false => self.stdout.borrow_mut().flush(),
        }
    }
}

/// Standard output above the bar; see [`Printer::writers`].
pub struct Stdout<'p>(&'p Printer);

/// Standard error above the bar; see [`Printer::writers`].
pub struct Stderr<'p>(&'p Printer);

impl Write for Stdout<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write_stdout(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush_stdout()
    }
}

impl Write for Stderr<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // After the results before it, as coreutils' `error` flushes stdout first.
        if let Err(e) = self.0.flush_stdout() {
            self.0.stdout_failed(&e);
        }
        self.0.progress.write(&mut io::stderr(), buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
