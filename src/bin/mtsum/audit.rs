//! Audit mode (`--audit`): one line `STATUS  NAME` per file on stdout (or a JSON object),
//! causes on stderr, a summary on stderr, and an exit status a cron job can act on: 0
//! nothing wrong, 1 corrupt or unreadable files (or records that could not be written), 2
//! usage or fatal error (no extended attributes, a manifest that cannot be read or written).

use std::io::{self, Write};
use std::time::{Duration, Instant};

use mtsum::audit::{self, Action, Event, Operation, Options, Status, Store, Summary};
use mtsum::source::Target;
use mtsum::sumfile::{Terminator, labelled_line as line};
use mtsum::walk::walk;
use mtsum::{json, report};

use crate::Status as Exit;
use crate::args::Config;
use crate::progress::{Progress, totals};

/// What `--audit` was asked to do, validated.
pub struct Settings {
    pub options: Options,
    /// `--quiet`: no `ok` lines.
    pub quiet: bool,
    /// `--json`: one object per file and a summary object on stdout.
    pub json: bool,
}

pub fn run(config: &Config, settings: &Settings) -> Exit {
    if config.targets.contains(&Target::Stdin) {
        eprintln!("mtsum: --audit needs files or directories, not standard input");
        return Exit::Usage;
    }
    let options = &settings.options;
    let (progress, files_total) = if config.progress.enabled() {
        let (bytes, files) = totals(walk(config.targets.iter().cloned(), options.recursion));
        (Progress::start(config.progress, Some(bytes)), Some(files))
    } else {
        (Progress::start(config.progress, None), None)
    };
    let engine = config.engine.clone().with_progress(progress.counter());
    let started = Instant::now();
    let mut printer = Printer {
        config,
        settings,
        progress: &progress,
        stdout: io::stdout().lock(),
        files_done: 0,
        files_total,
    };
    let result = audit::audit(&engine, &config.targets, options, &mut |e| printer.on(e));
    drop(printer);
    progress.finish();
    match result {
        Ok(summary) => {
            let elapsed = started.elapsed();
            if settings.json {
                let json = json::audit_summary(&summary, options.dry_run, elapsed);
                if let Err(e) = report::write_whole(&mut io::stdout(), &json) {
                    eprintln!("mtsum: standard output: {e}");
                    return Exit::InputFailed;
                }
            }
            eprint!("{}", summary_text(&summary, options, elapsed));
            if summary.is_clean() {
                Exit::Ok
            } else {
                Exit::InputFailed
            }
        }
        Err(e) => {
            let name = report::name_bytes(&Target::Path(e.path().to_path_buf())).to_vec();
            let _ = io::stderr().write_all(&report::error_line(&name, &e));
            Exit::Usage
        }
    }
}

/// Bytes and files below the targets, for the progress bar's ETA: the walk runs twice, the
/// second time from the directory cache, which is cheap next to hashing.
/// Prints events as they come, above the progress bar.
struct Printer<'a> {
    config: &'a Config,
    settings: &'a Settings,
    progress: &'a Progress,
    stdout: io::StdoutLock<'static>,
    files_done: u64,
    files_total: Option<u64>,
}

impl Printer<'_> {
    fn on(&mut self, event: Event) {
        match event {
            Event::Verdict(v) => {
                let name = report::name_bytes(&Target::Path(v.path.clone())).to_vec();
                if let Some(e) = &v.error
                    && (v.status == Status::Unreadable || self.config.verbose)
                {
                    self.stderr(&report::error_line(&name, e));
                }
                if let Some(e) = &v.action_error {
                    let cause = format!("cannot {} the record: {e}", verb(v.action));
                    self.stderr(&report::error_line(&name, &cause));
                }
                if self.settings.json {
                    self.stdout(&json::verdict(&name, v));
                } else if !(self.settings.quiet && v.status == Status::Ok) {
                    self.stdout(&line(v.status.name(), &name, Terminator::Newline));
                }
            }
            Event::Forgotten { path, error } => {
                let name = report::name_bytes(&Target::Path(path.to_path_buf())).to_vec();
                if let Some(e) = error {
                    let cause = format!("cannot remove the record: {e}");
                    self.stderr(&report::error_line(&name, &cause));
                }
                if self.settings.json {
                    let error = error.map(|e| e as &dyn std::fmt::Display);
                    self.stdout(&json::forgotten(&name, error));
                } else if error.is_none() {
                    self.stdout(&line(Action::Forgotten.name(), &name, Terminator::Newline));
                }
            }
            Event::Skipped { path, reason } => {
                if self.config.verbose {
                    let name = report::name_bytes(&Target::Path(path.to_path_buf())).to_vec();
                    self.stderr(&report::error_line(&name, &reason));
                }
                return;
            }
        }
        self.files_done += 1;
        self.progress.files(self.files_done, self.files_total);
    }

    /// Writes one whole line; a failing stdout ends the run, as it would end every later line.
    fn stdout(&mut self, bytes: &[u8]) {
        if let Err(e) = self.progress.write(&mut self.stdout, bytes) {
            eprintln!("mtsum: standard output: {e}");
            std::process::exit(Exit::InputFailed as i32);
        }
    }

    fn stderr(&self, bytes: &[u8]) {
        let _ = self.progress.write(&mut io::stderr(), bytes);
    }
}

fn verb(action: Action) -> &'static str {
    match action {
        Action::Removed | Action::Forgotten => "remove",
        _ => "write",
    }
}

/// The summary for stderr: what was audited, one line per class, what was written, and what
/// to do about the classes that need a decision.
fn summary_text(s: &Summary, options: &Options, elapsed: Duration) -> String {
    let store = match &options.store {
        Store::Xattr => "extended attributes".to_string(),
        Store::Manifest(p) => format!("manifest {}", p.display()),
    };
    let dry_run = match options.dry_run {
        true => " (dry run: nothing was written)",
        false => "",
    };
    if options.operation == Operation::Forget {
        let mut out = format!(
            "mtsum: {} records forgotten in {store}{dry_run}\n",
            s.actions(Action::Forgotten)
        );
        if s.count(Status::Unreadable) > 0 {
            let n = s.count(Status::Unreadable);
            out.push_str(&format!("mtsum: {n} files unreadable\n"));
        }
        return out;
    }
    let mut out = format!(
        "mtsum: audit of {} files ({}) in {:.2} s, records in {store}\n",
        s.files(),
        human_bytes(s.bytes),
        elapsed.as_secs_f64()
    );
    let hint = |status: Status| match status {
        Status::Corrupt => {
            "same size and mtime, different content: restore from a backup (--fix accepts the content)"
        }
        Status::Modified => "--update refreshes their records",
        Status::Missing => "--update drops their records",
        Status::Changed => "written to while audited: audit them again later",
        Status::Unreadable => "see the messages above",
        Status::Ok | Status::New => "",
    };
    for status in Status::ALL {
        let n = s.count(status);
        let hint = if n > 0 { hint(status) } else { "" };
        let line = format!("  {:<11}{n:>9}  {hint}", status.name());
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let written: Vec<String> = Action::ALL
        .into_iter()
        .filter(|a| *a != Action::Kept && s.actions(*a) > 0)
        .map(|a| format!("{} {}", s.actions(a), a.name()))
        .collect();
    let written = if written.is_empty() {
        "unchanged".to_string()
    } else {
        written.join(", ")
    };
    out.push_str(&format!("mtsum: records: {written}{dry_run}\n"));
    if s.action_errors > 0 {
        out.push_str(&format!(
            "mtsum: {} records could not be written\n",
            s.action_errors
        ));
    }
    out
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
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
