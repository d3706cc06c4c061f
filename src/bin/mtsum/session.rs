//! What every mode does around its own work: count the inputs for the bar's ETA, start the
//! progress bar, build the engine that feeds it ([`start`]), then print results above the bar
//! and remember what went wrong for the exit status ([`Printer`]). One place for it, so that
//! every mode finishes its bar and treats a failing standard output alike.

use std::cell::{Cell, RefCell};
use std::fmt::Display;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use mtsum::engine::Engine;
use mtsum::report;

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
    let printer = Printer {
        progress,
        stdout: RefCell::new(io::stdout().lock()),
        verbose: common.verbose,
        status: Cell::new(Status::Ok),
        broken: Cell::new(false),
        files_done: Cell::new(0),
        files_total: Cell::new(files),
    };
    (engine, printer)
}

/// Prints a run's results on stdout and its messages on stderr, above the progress bar, and
/// keeps the exit status. Shared (`&self`) so that a mode's sink can print while the task
/// stream it feeds the engine asks [`Printer::broken`].
///
/// A closed pipe (`mtsum * | head`) never reaches it: SIGPIPE ends the process quietly, as in
/// coreutils. Any other failing stdout (a full disk) would fail every later line too, so the
/// first failure is reported once, `mtsum: standard output: cause`, the status becomes 1, and
/// nothing more is printed; the mode stops feeding work where it can.
pub struct Printer {
    progress: Progress,
    stdout: RefCell<io::StdoutLock<'static>>,
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

    /// Writes a message to stderr. A failing stderr has nowhere to be reported.
    pub fn message(&self, bytes: &[u8]) {
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
            self.message(format!("mtsum: standard output: {error}\n").as_bytes());
            self.broken.set(true);
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

    /// Removes the bar; returns the exit status.
    pub fn finish(self) -> Status {
        self.progress.finish();
        self.status.get()
    }

    fn write_stdout(&self, bytes: &[u8]) -> io::Result<()> {
        self.progress.write(&mut *self.stdout.borrow_mut(), bytes)
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
        // Every write is flushed already: a line must not wait behind the bar.
        Ok(())
    }
}

impl Write for Stderr<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.progress.write(&mut io::stderr(), buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
