//! A progress bar on stderr (bytes, files, throughput, ETA) while a long run is under way.
//!
//! The engine only adds hashed bytes to a counter; a ticker thread turns the counter into the
//! bar, so hashing never waits for the terminal. Output lines go through [`Progress::write`]
//! so that they are printed above the bar instead of through it.

use std::borrow::Borrow;
use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use console::Term;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mtsum::walk::Walked;

use crate::args::When;

/// A bar that appears only when the work lasts more than a moment, or at once and to the end
/// with `--progress`.
pub struct Progress {
    bar: Option<ProgressBar>,
    when: When,
    counter: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    ticker: Option<thread::JoinHandle<()>>,
}

/// How long a run may take before the bar appears: a quick run stays clean.
const SHOW_AFTER: Duration = Duration::from_secs(1);

impl Progress {
    /// Starts the bar (if `when` says so) for `total_bytes`, where known.
    pub fn start(when: When, total_bytes: Option<u64>) -> Progress {
        let counter = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        if !when.enabled() {
            return Progress {
                bar: None,
                when,
                counter,
                stop,
                ticker: None,
            };
        }
        let bar = ProgressBar::with_draw_target(total_bytes, ProgressDrawTarget::hidden());
        let template = if total_bytes.is_some() {
            "{bytes}/{total_bytes} [{wide_bar}] {binary_bytes_per_sec}, ETA {eta} {msg}"
        } else {
            "{spinner} {bytes} hashed, {binary_bytes_per_sec} {msg}"
        };
        bar.set_style(
            ProgressStyle::with_template(template)
                .expect("a valid template")
                .progress_chars("=> "),
        );
        bar.set_length(total_bytes.unwrap_or(0));
        // Asked for, the bar is drawn from the start: a run shorter than the delay still
        // shows one, and `finish` leaves its last state.
        if when == When::Always {
            bar.set_draw_target(draw_target(when));
        }
        let ticker = {
            let (bar, counter, stop) = (bar.clone(), counter.clone(), stop.clone());
            thread::spawn(move || {
                let mut waited = Duration::ZERO;
                let tick = Duration::from_millis(100);
                while !stop.load(Ordering::Relaxed) {
                    thread::sleep(tick);
                    waited += tick;
                    if waited == SHOW_AFTER && when != When::Always {
                        bar.set_draw_target(draw_target(when));
                    }
                    bar.set_position(counter.load(Ordering::Relaxed));
                }
            })
        };
        Progress {
            bar: Some(bar),
            when,
            counter,
            stop,
            ticker: Some(ticker),
        }
    }

    /// Whether a bar may show.
    pub fn has_bar(&self) -> bool {
        self.bar.is_some()
    }

    /// The counter to hand to the engine.
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.counter.clone()
    }

    /// Notes that `done` of `total` files are finished.
    pub fn files(&self, done: u64, total: Option<u64>) {
        if let Some(bar) = &self.bar {
            match total {
                Some(total) => bar.set_message(format!("· {done}/{total} files")),
                None => bar.set_message(format!("· {done} files")),
            }
        }
    }

    /// Takes `bytes` that will not be read off the total.
    pub fn not_read(&self, bytes: u64) {
        if let Some(bar) = &self.bar
            && let Some(total) = bar.length()
        {
            bar.set_length(total.saturating_sub(bytes));
        }
    }

    /// Writes `bytes` to `out`, on the bar's terminal, with the bar out of the way.
    pub fn write(&self, out: &mut dyn Write, bytes: &[u8]) -> io::Result<()> {
        match &self.bar {
            Some(bar) => bar.suspend(|| write_flushed(out, bytes)),
            None => write_flushed(out, bytes),
        }
    }

    /// Removes the bar; one asked for with `--progress` is left in its final state (all
    /// bytes, files and the throughput), so that it shows however short the run was.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        if let Some(bar) = &self.bar {
            match self.when {
                When::Always => {
                    bar.set_position(self.counter.load(Ordering::Relaxed));
                    bar.abandon();
                    // The line is left for the user to read: end it.
                    let _ = io::stderr().write_all(b"\n");
                }
                When::Auto | When::Never => bar.finish_and_clear(),
            }
        }
    }
}

/// Writes `bytes` to `out` at once.
pub fn write_flushed(out: &mut dyn Write, bytes: &[u8]) -> io::Result<()> {
    out.write_all(bytes)?;
    out.flush()
}

/// Where the bar is drawn once it shows: stderr. indicatif hides a bar on a stderr that is
/// not a terminal (or on `TERM=dumb`), which is right for the bar shown by default; asked
/// for with `--progress`, it is drawn there anyway, through a target indicatif does not hide.
fn draw_target(when: When) -> ProgressDrawTarget {
    match when {
        When::Always => {
            ProgressDrawTarget::term_like_with_hz(Box::new(Term::buffered_stderr()), 20)
        }
        When::Auto | When::Never => ProgressDrawTarget::stderr(),
    }
}

/// Bytes and files of the walked items, the totals of a bar; `None` when the size of one of
/// them is unknown before it is read (standard input, a FIFO, a device), since a total that
/// leaves it out would show a bar finished while it is still being read. Items that cannot
/// be hashed (missing, a directory) count for nothing: they fail at once.
pub fn totals<W: Borrow<Walked>>(items: impl IntoIterator<Item = W>) -> Option<(u64, u64)> {
    let mut counts = (0, 0);
    for item in items {
        let metadata = match item.borrow() {
            Walked::Input(target) => match target.path() {
                Some(p) => std::fs::metadata(p),
                None => return None,
            },
            Walked::Error { .. } | Walked::Skipped { .. } => continue,
        };
        match metadata {
            Ok(m) if m.is_file() => counts = (counts.0 + m.len(), counts.1 + 1),
            Ok(m) if !m.is_dir() => return None,
            _ => {}
        }
    }
    Some(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_not_read_leave_the_total() {
        let progress = Progress::start(When::Always, Some(1000));
        progress.not_read(300);
        progress.not_read(800);
        let bar = progress.bar.as_ref().expect("a bar");
        assert_eq!(bar.length(), Some(0));
        progress.finish();
        let progress = Progress::start(When::Always, Some(1000));
        progress.not_read(300);
        let bar = progress.bar.as_ref().expect("a bar");
        assert_eq!(bar.length(), Some(700));
        progress.finish();
    }
}
