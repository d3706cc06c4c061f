//! `--compare LOCAL REMOTE`: one line `STATUS  NAME` per name on stdout (or a JSON object),
//! causes on stderr, a summary on stderr, and the exit status of `-c`: 0 every name ok, 1
//! anything else (a difference, a name on one side only, an unverified or unreadable one, a
//! root that cannot be listed), 2 usage.

use std::ops::ControlFlow;

use mtsum::compare::{self, Record, Status, Summary};
use mtsum::sumfile::{Terminator, labelled_line};
use mtsum::{json, report};

use crate::args::{Common, CompareSettings};
use crate::session::{self, Printer, Status as Exit, count, human_bytes};

pub fn run(common: &Common, settings: &CompareSettings) -> Exit {
    // What is compared is known only once both sides are listed.
    let (engine, printer) = session::start(common, || None);
    let (local, remote) = (&settings.local, &settings.remote);
    let result = compare::compare(&engine, local, remote, &settings.options, &mut |r| {
        print(&printer, settings, r);
        match printer.broken() {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    });
    match result {
        _ if printer.broken() => {}
        Ok(summary) => {
            if settings.json {
                printer.print(&json::compare_summary(&summary));
            }
            printer.message(summary_text(&summary, settings).as_bytes());
            if !summary.is_clean() {
                printer.fail();
            }
        }
        Err(e) => {
            printer.message(&report::error_line(&e.root, &e.cause));
            printer.fail();
        }
    }
    printer.finish()
}

fn print(printer: &Printer, settings: &CompareSettings, r: &Record) {
    if let Some((side, e)) = &r.error {
        printer.message(&report::error_line(side, e));
    }
    if settings.json {
        printer.print(&json::compare_record(r));
    } else if !(settings.quiet && r.status == Status::Ok) {
        let mut line = labelled_line(r.status.name(), &r.name, Terminator::Newline);
        if let Some(why) = &r.why {
            line.pop();
            line.extend_from_slice(format!("  ({why})\n").as_bytes());
        }
        printer.print(&line);
    }
    printer.file_done();
}

/// The summary for stderr: how many names, the count of each status there was, how many
/// were decided by the store's values alone, and what to do about the unverified ones.
fn summary_text(s: &Summary, settings: &CompareSettings) -> String {
    let seconds = s.elapsed.as_secs_f64();
    let statuses: Vec<String> = Status::ALL
        .into_iter()
        .filter(|status| s.count(*status) > 0)
        .map(|status| format!("{} {}", s.count(status), status.name()))
        .collect();
    let statuses = match statuses.is_empty() {
        true => "nothing on either side".to_string(),
        false => statuses.join(", "),
    };
    let mut out = format!(
        "mtsum: compared {} in {seconds:.2} s ({} hashed): {statuses}\n",
        count(s.names(), "name"),
        human_bytes(s.bytes),
    );
    let remote = [&settings.local, &settings.remote]
        .iter()
        .any(|t| matches!(t, mtsum::source::Target::Url(_)));
    if remote {
        out.push_str(&format!(
            "mtsum: {} by the values the store reports (no remote byte read), {} by reading \
             both sides\n",
            s.by_stored, s.by_read
        ));
    }
    let unverified = s.count(Status::Unverified);
    if unverified > 0 {
        let read = match settings.options.read_remote {
            compare::ReadRemote::Never => "; --read-remote reads their bytes",
            _ => "",
        };
        out.push_str(&format!(
            "mtsum: {} unverified: no value the store reports vouches for the bytes{read}\n",
            count(unverified, "name")
        ));
    }
    // What a size-only run could not see.
    if settings.options.size_only && s.count(Status::Ok) > 0 {
        out.push_str("mtsum: --size-only: files of equal size were taken for equal\n");
    }
    out
}
