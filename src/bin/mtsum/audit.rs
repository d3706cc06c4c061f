//! Audit mode (`--audit`): one line `STATUS  NAME` per file on stdout (or a JSON object),
//! causes on stderr, a summary on stderr, and an exit status a cron job can act on: 0
//! nothing wrong, 1 corrupt or unreadable files (or records that could not be written), 2
//! usage or fatal error (no extended attributes, a manifest that cannot be read or written).

use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

use mtsum::audit::{self, Action, Event, Operation, Options, Status, Store, Summary};
use mtsum::source::Target;
use mtsum::sumfile::{Terminator, labelled_line as line};
use mtsum::walk::walk;
use mtsum::{json, report};

use crate::args::{AuditSettings, Common};
use crate::progress::totals;
use crate::session::{self, Printer, Status as Exit};

pub fn run(common: &Common, settings: &AuditSettings) -> Exit {
    if common.targets.contains(&Target::Stdin) {
        eprintln!("mtsum: --audit needs files or directories, not standard input");
        return Exit::Usage;
    }
    let options = &settings.options;
    // The library walks the paths itself, so the bar's totals cost a walk of their own; the
    // second walk runs from the directory cache, which is cheap next to hashing.
    let (engine, printer) = session::start(common, || {
        Some(totals(walk(
            common.targets.iter().cloned(),
            options.recursion,
        )))
    });
    let started = Instant::now();
    let events = Events {
        common,
        settings,
        printer: &printer,
    };
    let result = audit::audit(&engine, &common.targets, options, &mut |e| events.on(e));
    let elapsed = started.elapsed();
    let mut fatal = false;
    match result {
        // Nothing more can be printed; the status says so already.
        _ if printer.broken() => {}
        Ok(summary) => {
            if settings.json {
                printer.print(&json::audit_summary(&summary, options.dry_run, elapsed));
            }
            printer.message(summary_text(&summary, options, elapsed).as_bytes());
            if !summary.is_clean() {
                printer.fail();
            }
        }
        Err(e) => {
            printer.message(&report::error_line(e.path().as_os_str().as_bytes(), &e));
            fatal = true;
        }
    }
    let status = printer.finish();
    if fatal { Exit::Usage } else { status }
}

/// Prints the audit's events as they come.
struct Events<'a> {
    common: &'a Common,
    settings: &'a AuditSettings,
    printer: &'a Printer,
}

impl Events<'_> {
    fn on(&self, event: Event) {
        let printer = self.printer;
        match event {
            Event::Verdict(v) => {
                let name = v.path.as_os_str().as_bytes();
                if let Some(e) = &v.error
                    && (v.status == Status::Unreadable || self.common.verbose)
                {
                    printer.message(&report::error_line(name, e));
                }
                if let Some(e) = &v.action_error {
                    let cause = format!("cannot {} the record: {e}", verb(v.action));
                    printer.message(&report::error_line(name, &cause));
                }
                if self.settings.json {
                    printer.print(&json::verdict(name, v));
                } else if !(self.settings.quiet && v.status == Status::Ok) {
                    printer.print(&line(v.status.name(), name, Terminator::Newline));
                }
            }
            Event::Forgotten { path, error } => {
                let name = path.as_os_str().as_bytes();
                if let Some(e) = error {
                    let cause = format!("cannot remove the record: {e}");
                    printer.message(&report::error_line(name, &cause));
                }
                if self.settings.json {
                    let error = error.map(|e| e as &dyn std::fmt::Display);
                    printer.print(&json::forgotten(name, error));
                } else if error.is_none() {
                    let forgotten = Action::Forgotten.name();
                    printer.print(&line(forgotten, name, Terminator::Newline));
                }
            }
            Event::Skipped { path, reason } => return printer.skipped(path, &reason),
        }
        printer.file_done();
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
