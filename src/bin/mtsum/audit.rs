//! Audit mode (`--audit`): one line `STATUS  NAME` per file on stdout (or a JSON object),
//! causes on stderr, a summary on stderr, and an exit status a cron job can act on: 0
//! nothing wrong, 1 corrupt or unreadable files (or records that could not be written), 2
//! usage or fatal error (no extended attributes, a manifest that cannot be read or written).

use std::io::{self, Write};
use std::time::{Duration, Instant};

use std::path::PathBuf;

use mtsum::audit::transfer::{self, TransferFormat};
use mtsum::audit::{
    self, Action, AuditError, Event, Operation, Options, Prior, Status, Store, Summary,
};
use mtsum::check::Untagged;
use mtsum::source::Target;
use mtsum::walk::walk;
use mtsum::{report, sumfile};

use crate::Status as Exit;
use crate::args::Config;
use crate::progress::{Progress, totals};

/// `--export` or `--import` instead of an audit.
pub enum Transfer {
    Export {
        file: PathBuf,
        format: TransferFormat,
    },
    Import {
        file: PathBuf,
        untagged: Untagged,
    },
}

/// What `--audit` was asked to do, validated.
pub struct Settings {
    /// Move records instead of auditing.
    pub transfer: Option<Transfer>,
    pub options: Options,
    /// `--quiet`: no `ok` lines.
    pub quiet: bool,
    /// `--json`: one object per file and a summary object on stdout.
    pub json: bool,
}

pub fn run(config: &Config, settings: &Settings) -> Exit {
    if let Some(t) = &settings.transfer {
        return run_transfer(&settings.options.store, t);
    }
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
    let mut options = options.clone();
    options.io.progress = Some(progress.counter());
    let options = &options;
    let started = Instant::now();
    let mut printer = Printer {
        config,
        settings,
        progress: &progress,
        stdout: io::stdout().lock(),
        files_done: 0,
        files_total,
    };
    let result = audit::audit(&config.targets, options, &mut |e| printer.on(e));
    drop(printer);
    progress.finish();
    match result {
        Ok(summary) => {
            let elapsed = started.elapsed();
            if settings.json {
                let json = summary_json(&summary, options, elapsed);
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
        Err(e) => fatal(&e),
    }
}

/// Reports an error that stopped the run: status 2.
fn fatal(e: &AuditError) -> Exit {
    match e.path() {
        Some(path) => {
            let name = report::name_bytes(&Target::Path(path.to_path_buf())).to_vec();
            let _ = io::stderr().write_all(&report::error_line(&name, e));
        }
        None => eprintln!("mtsum: {e}"),
    }
    Exit::Usage
}

/// `--export` and `--import`: status 0, 1 when lines or files were left out of an import, 2
/// when the store or the file cannot be used.
fn run_transfer(store: &Store, t: &Transfer) -> Exit {
    match t {
        Transfer::Export { file, format } => {
            let result = if file.as_os_str() == "-" {
                transfer::export(store, *format, &mut io::stdout().lock())
            } else {
                let mut buffer = Vec::new();
                transfer::export(store, *format, &mut buffer).and_then(|n| {
                    audit::manifest::write_atomically(file, |out| out.write_all(&buffer))
                        .map(|()| n)
                        .map_err(|e| {
                            let e = mtsum::source::InputError::Io(e);
                            AuditError::Unsupported(format!("{}: {e}", file.display()))
                        })
                })
            };
            match result {
                Ok(n) => {
                    eprintln!("mtsum: {n} records exported");
                    Exit::Ok
                }
                Err(e) => fatal(&e),
            }
        }
        Transfer::Import { file, untagged } => match transfer::import(store, file, untagged) {
            Ok(imported) => {
                for (name, why) in &imported.skipped {
                    eprintln!("mtsum: {}: {name}: {why}", file.display());
                }
                eprintln!(
                    "mtsum: {} records imported, {} left out",
                    imported.records,
                    imported.skipped.len()
                );
                if imported.skipped.is_empty() {
                    Exit::Ok
                } else {
                    Exit::InputFailed
                }
            }
            Err(e) => fatal(&e),
        },
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
                    self.stdout(&verdict_json(&name, v));
                } else if !(self.settings.quiet && v.status == Status::Ok) {
                    self.stdout(&line(v.status.name(), &name));
                }
            }
            Event::Forgotten { path, error } => {
                let name = report::name_bytes(&Target::Path(path.to_path_buf())).to_vec();
                if let Some(e) = error {
                    let cause = format!("cannot remove the record: {e}");
                    self.stderr(&report::error_line(&name, &cause));
                }
                if self.settings.json {
                    let mut object = sumfile::json_path(&name);
                    object.insert("action".into(), Action::Forgotten.name().into());
                    if let Some(e) = error {
                        object.insert("action_error".into(), e.to_string().into());
                    }
                    self.stdout(&sumfile::json_bytes(object));
                } else if error.is_none() {
                    self.stdout(&line("forgotten", &name));
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

/// `STATUS  NAME`, the name escaped as in sum files (a line starting with `\` holds an escaped
/// name), so that one line is always one file.
fn line(status: &str, name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(status.len() + name.len() + 4);
    if sumfile::needs_escape(name) {
        out.push(b'\\');
    }
    out.extend_from_slice(status.as_bytes());
    out.extend_from_slice(b"  ");
    out.extend_from_slice(&sumfile::escape_name(name));
    out.push(b'\n');
    out
}

/// One `--json` object: path, status, the file now (size, mtime, layout, algorithm, digest),
/// the record before (record, expected, recorded_size, recorded_mtime), action, errors.
/// Times are strings `SECONDS.NANOSECONDS`: a JSON number would lose the nanoseconds.
fn verdict_json(name: &[u8], v: &audit::Verdict) -> Vec<u8> {
    let mut o = sumfile::json_path(name);
    o.insert("status".into(), v.status.name().into());
    if let Some(stamp) = v.state {
        o.insert("size".into(), stamp.len.into());
        o.insert("mtime".into(), stamp.mtime.to_string().into());
    }
    if let Some(r) = &v.current {
        o.insert("layout".into(), r.layout.name().into());
        let leaf = r.layout.leaf_size().map(|l| l.get());
        o.insert("leaf_size".into(), leaf.into());
        o.insert("algorithm".into(), r.algorithm.name().into());
        o.insert("digest".into(), r.digest.to_hex().into());
    }
    match &v.prior {
        Prior::None => {}
        Prior::Record(r) => {
            o.insert("record".into(), r.tag().into());
            o.insert("expected".into(), r.digest.to_hex().into());
            o.insert("recorded_size".into(), r.stamp.len.into());
            o.insert("recorded_mtime".into(), r.stamp.mtime.to_string().into());
        }
        Prior::Cshatag { mtime, digest } => {
            o.insert("record".into(), "cshatag".into());
            o.insert("expected".into(), digest.to_hex().into());
            o.insert("recorded_mtime".into(), mtime.to_string().into());
        }
        Prior::Unusable(_) => {
            o.insert("record".into(), "unusable".into());
        }
    }
    o.insert("action".into(), v.action.name().into());
    if let Some(e) = &v.error {
        o.insert("error".into(), e.to_string().into());
    }
    if let Some(e) = &v.action_error {
        o.insert("action_error".into(), e.to_string().into());
    }
    sumfile::json_bytes(o)
}

/// The last `--json` object: `{"summary":{"files":…,"ok":…,…,"recorded":…,…}}`.
fn summary_json(s: &Summary, options: &Options, elapsed: Duration) -> Vec<u8> {
    let mut o = serde_json::Map::new();
    o.insert("files".into(), s.files().into());
    for status in Status::ALL {
        o.insert(status.name().into(), s.count(status).into());
    }
    for action in Action::ALL {
        o.insert(action.name().into(), s.actions(action).into());
    }
    o.insert("action_errors".into(), s.action_errors.into());
    o.insert("bytes".into(), s.bytes.into());
    o.insert("not_due".into(), s.not_due.into());
    o.insert("deferred".into(), s.deferred.into());
    o.insert("seconds".into(), elapsed.as_secs_f64().into());
    o.insert("dry_run".into(), options.dry_run.into());
    o.insert("clean".into(), s.is_clean().into());
    let mut outer = serde_json::Map::new();
    outer.insert("summary".into(), o.into());
    sumfile::json_bytes(outer)
}

/// The summary for stderr: what was audited, one line per class, what was written, and what
/// to do about the classes that need a decision.
fn summary_text(s: &Summary, options: &Options, elapsed: Duration) -> String {
    let store = match &options.store {
        Store::Xattr => "extended attributes".to_string(),
        Store::Manifest(p) => format!("manifest {}", p.display()),
        Store::Database(p) => format!("database {}", p.display()),
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
    let seconds = elapsed.as_secs_f64();
    let rate = s.bytes as f64 / seconds.max(1e-9);
    let mut out = format!(
        "mtsum: audit of {} files ({}) in {seconds:.2} s ({}/s), records in {store}\n",
        s.files(),
        human_bytes(s.bytes),
        human_bytes(rate as u64),
    );
    if s.not_due > 0 {
        out.push_str(&format!(
            "mtsum: {} files not due (verified within --max-age)\n",
            s.not_due
        ));
    }
    if s.deferred > 0 {
        out.push_str(&format!(
            "mtsum: {} files left for the next run (--time-budget ran out)\n",
            s.deferred
        ));
    }
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
    fn a_line_is_status_two_spaces_and_the_name_escaped_as_in_sum_files() {
        assert_eq!(line("ok", b"a b"), b"ok  a b\n");
        assert_eq!(line("corrupt", b"x\ny"), b"\\corrupt  x\\ny\n");
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human_bytes(5), "5 bytes");
        assert_eq!(human_bytes(640 << 20), "640.0 MiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
