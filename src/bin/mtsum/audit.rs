//! Audit mode (`--audit`): one line `STATUS  NAME` per file on stdout (or a JSON object),
//! causes on stderr, a summary on stderr, and an exit status a cron job can act on: 0
//! nothing wrong, 1 corrupt or unreadable files (or records that could not be written), 2
//! usage or fatal error (no extended attributes, a manifest that cannot be read or written).

use std::io::Write;
use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

use mtsum::audit::repair::{self, RepairError};
use mtsum::audit::transfer;
use mtsum::audit::{self, Action, AuditError, Event, Operation, Options, Status, Store, Summary};
use mtsum::source::Target;
use mtsum::sumfile::{Terminator, labelled_line as line};
use mtsum::walk::walk;
use mtsum::{json, report};

use crate::args::{AuditSettings, Common, Transfer};
use crate::progress::totals;
use crate::session::{self, Printer, Status as Exit, count, human_bytes};

pub fn run(common: &Common, settings: &AuditSettings) -> Exit {
    if let Some(t) = &settings.transfer {
        return run_transfer(&settings.options, t);
    }
    if let Some((file, copy)) = &settings.repair {
        return run_repair(&settings.options, file, copy);
    }
    if common.targets.contains(&Target::Stdin) {
        session::tell("mtsum: --audit needs files or directories, not standard input\n");
        return Exit::Usage;
    }
    let options = &settings.options;
    // The library walks the paths itself, so the bar's totals cost a walk of their own; the
    // second walk runs from the directory cache, which is cheap next to hashing.
    let (_, printer) = session::start(common, || {
        totals(walk(common.targets.iter().cloned(), options.recursion))
    });
    // Lines are gathered as in hash mode and written once their batch is recorded
    // (`Event::Committed`): a write fails, and stops the audit, before the next batch.
    let mut options = options.clone();
    options.io.progress = Some(printer.progress_counter());
    let options = &options;
    let started = Instant::now();
    let events = Events {
        common,
        settings,
        printer: &printer,
    };
    let result = audit::audit(&common.targets, options, &mut |e| events.on(e));
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
            printer.message(&fatal_line(&e));
            fatal = true;
        }
    }
    let status = printer.finish();
    if fatal { Exit::Usage } else { status }
}

/// `mtsum: FILE: cause` for an error that stopped the run (`mtsum: cause` when it names no
/// file).
fn fatal_line(e: &AuditError) -> Vec<u8> {
    match e.path() {
        Some(path) => report::error_line(path.as_os_str().as_bytes(), e),
        None => format!("mtsum: {e}\n").into_bytes(),
    }
}

/// `--repair FILE --from COPY`: `repaired  FILE  (bytes …)` (with --dry-run `would repair`),
/// or `ok  FILE` when there was nothing to repair (`repaired  FILE` when only an interrupted
/// repair's mtime was left to put back); status 0, 1 when the file could not be
/// repaired (nothing was written then, unless it is still corrupt after writing), 2 when the
/// database cannot be used.
fn run_repair(options: &Options, file: &std::path::Path, copy: &std::path::Path) -> Exit {
    let name = file.as_os_str().as_bytes();
    match repair::repair(&options.store, file, copy, options.dry_run, &options.io) {
        Ok(done) => {
            let label = match (done.needed, done.written) {
                (false, _) => "ok",
                (true, true) => "repaired",
                (true, false) => "would repair",
            };
            let mut text = line(label, name, Terminator::Newline);
            if !done.ranges.is_empty() {
                text.pop();
                text.extend_from_slice(damaged_suffix(&done.ranges).as_bytes());
            }
            let _ = std::io::stdout().write_all(&text);
            Exit::Ok
        }
        Err(RepairError::Store(e)) => fatal_line_exit(&e),
        Err(e) => {
            let _ = std::io::stderr().write_all(&report::error_line(name, &e));
            Exit::InputFailed
        }
    }
}

fn fatal_line_exit(e: &AuditError) -> Exit {
    session::tell(fatal_line(e));
    Exit::Usage
}

/// `--export` and `--import`: status 0, 1 when lines or files were left out of an import, 2
/// when the store or the file cannot be used.
fn run_transfer(options: &Options, t: &Transfer) -> Exit {
    let store = &options.store;
    let fatal = fatal_line_exit;
    match t {
        Transfer::Export { file, format } => {
            let result = if file.as_os_str() == "-" {
                transfer::export(store, *format, &mut std::io::stdout().lock())
            } else {
                transfer::export_to_file(store, *format, file)
            };
            match result {
                Ok(n) => {
                    session::tell(format!("mtsum: {} exported\n", count(n, "record")));
                    Exit::Ok
                }
                Err(e) => fatal(&e),
            }
        }
        Transfer::Import { file, untagged } => {
            match transfer::import(store, file, untagged.as_ref(), options.dry_run) {
                Ok(imported) => {
                    for (name, why) in &imported.skipped {
                        session::tell(format!("mtsum: {}: {name}: {why}\n", file.display()));
                    }
                    session::tell(format!(
                        "mtsum: {} imported, {} left out{}\n",
                        count(imported.records, "record"),
                        imported.skipped.len(),
                        dry_run_note(options.dry_run)
                    ));
                    match imported.skipped.is_empty() {
                        true => Exit::Ok,
                        false => Exit::InputFailed,
                    }
                }
                Err(e) => fatal(&e),
            }
        }
    }
}

/// Prints the audit's events as they come.
struct Events<'a> {
    common: &'a Common,
    settings: &'a AuditSettings,
    printer: &'a Printer,
}

impl Events<'_> {
    /// Prints `event`; stops the audit once stdout has failed, as the hash mode stops
    /// hashing: no verdict could be shown any more, so none is recorded either.
    fn on(&self, event: Event) -> ControlFlow<()> {
        self.print(event);
        match self.printer.broken() {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    }

    fn print(&self, event: Event) {
        let printer = self.printer;
        match event {
            Event::Verdict(v) => {
                let name = v.path.as_os_str().as_bytes();
                if let Some(e) = &v.error
                    && (v.status.is_problem() || self.common.figures.verbose)
                {
                    printer.message(&report::error_line(name, e));
                }
                if let Some(e) = &v.action_error {
                    let cause = format!("cannot {} the record: {e}", verb(v.action));
                    printer.message(&report::error_line(name, &cause));
                }
                if let Some(e) = &v.repair_error {
                    let cause = format!("cannot repair: {e}");
                    printer.message(&report::error_line(name, &cause));
                }
                if self.settings.json {
                    printer.print(&json::verdict(name, v));
                } else if !(self.settings.quiet && v.status == Status::Ok) {
                    let label = label(v);
                    let mut text = line(label, name, Terminator::Newline);
                    if let Some(damaged) = v.damaged.as_ref().filter(|d| !d.is_empty()) {
                        text.pop();
                        text.extend_from_slice(damaged_suffix(damaged).as_bytes());
                    }
                    printer.print(&text);
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
            Event::Committed => return printer.write_gathered(),
            Event::Skipped { path, reason } => return printer.skipped(path, &reason),
            Event::Postponed { size, .. } => return printer.not_read(size),
        }
        printer.file_done();
    }
}

/// The word a verdict's line starts with: its status, but where the record changed for a
/// file that checks out, what was done (`migrated`, `converted`), and a repair that a dry
/// run only checked (`would repair`), as `--repair` says it.
fn label(v: &audit::Verdict) -> &'static str {
    match (v.action, v.status) {
        (Action::Repaired, Status::Corrupt) => "would repair",
        (Action::Migrated | Action::Converted, Status::Ok) => v.action.name(),
        _ => v.status.name(),
    }
}

/// `  (bytes 41943040-42008576, …)\n`: where a corrupt file differs, each range `START-END`
/// with its end exclusive, as every byte range mtsum prints or takes is (`--plan`, `--range`,
/// JSON's `damaged`): one convention, so a range copied from one place means the same bytes
/// in another, and its length is `END - START`.
fn damaged_suffix(damaged: &[std::ops::Range<u64>]) -> String {
    let ranges: Vec<String> = damaged
        .iter()
        .map(|r| format!("{}-{}", r.start, r.end))
        .collect();
    format!("  (bytes {})\n", ranges.join(", "))
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
        Store::Database(p) => format!("database {}", p.display()),
    };
    let dry_run = dry_run_note(options.dry_run);
    if options.operation == Operation::Forget {
        let mut out = format!(
            "mtsum: {} forgotten in {store}{dry_run}\n",
            count(s.actions(Action::Forgotten), "record")
        );
        if s.count(Status::Unreadable) > 0 {
            let n = s.count(Status::Unreadable);
            out.push_str(&format!("mtsum: {} unreadable\n", count(n, "file")));
        }
        return out;
    }
    let seconds = elapsed.as_secs_f64();
    let rate = s.bytes as f64 / seconds.max(1e-9);
    let mut out = format!(
        "mtsum: audit of {} ({}) in {seconds:.2} s ({}/s), records in {store}\n",
        count(s.files(), "file"),
        human_bytes(s.bytes),
        human_bytes(rate as u64),
    );
    if s.not_due > 0 {
        out.push_str(&format!(
            "mtsum: {} not due (verified within --max-age)\n",
            count(s.not_due, "file")
        ));
    }
    if s.deferred > 0 {
        out.push_str(&format!(
            "mtsum: {} left for the next run (--time-budget ran out)\n",
            count(s.deferred, "file")
        ));
    }
    if s.no_value > 0 {
        let why = mtsum::layout::NoRoot::EmptyFile(options.layout.name());
        out.push_str(&format!(
            "mtsum: {} not recorded: {why}\n",
            count(s.no_value, "empty file")
        ));
    }
    let hint = |status: Status| match status {
        Status::Corrupt => {
            "same size and mtime, different content: restore from a backup (--fix accepts the content)"
        }
        Status::Repaired => "damaged, and put back from the copies: they check out now",
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
            "mtsum: {} could not be written\n",
            count(s.action_errors, "record")
        ));
    }
    out
}

/// What ends a summary line of a dry run.
fn dry_run_note(dry_run: bool) -> &'static str {
    match dry_run {
        true => " (dry run: nothing was written)",
        false => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damaged_ranges_print_with_exclusive_ends() {
        assert_eq!(
            damaged_suffix(&[0..65536, 131072..131073]),
            "  (bytes 0-65536, 131072-131073)\n"
        );
    }
}
