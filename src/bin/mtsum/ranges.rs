//! `--plan`, `--range`, `--combine`: one file hashed in ranges by separate commands (on other
//! machines, by GNU parallel, a batch system, ssh) and the ranges joined into the checksum line
//! that `mtsum FILE` prints. The work is the library's [`mtsum::range`]; here are the lines.
//!
//! A line of `--plan` is a range with the size it was planned for ([`PlannedRange`]), so that
//! `--range` fails every range of a file that has changed size since, not only the last.
//!
//! A partial line of `--range` is the library's line ([`Partial::to_line`]) followed by two
//! spaces and the file's name, as in a checksum line, so that `--combine` can print the name;
//! a name that a checksum line would escape (a newline, a backslash) is left out, and
//! `--combine` prints `-` for it.

use std::io::{self, Read};

use mtsum::engine::Engine;
use mtsum::layout::Encoding;
use mtsum::range::{self, Partial, Spec};
use mtsum::source::{Input, InputError, Target};
use mtsum::{report, sumfile};

use crate::args::{Common, Output, PlannedRange, RangeSettings, RangeStep};
use crate::hash;
use crate::session::{self, Printer, Status};

/// Why a step stopped: a bad parameter (status 2) or an input that failed (status 1), already
/// reported.
enum Stop {
    Usage,
    Input,
}

pub fn run(common: &Common, settings: &RangeSettings) -> Status {
    let (engine, printer) = session::start(common, || None);
    let done = match &settings.step {
        RangeStep::Plan(parts) => one_file(common, settings, &printer).and_then(|(_, spec)| {
            let plan = range::plan(spec, parts.get()).map_err(|e| usage(&printer, &e))?;
            let lines: String = plan
                .into_iter()
                .map(|bytes| {
                    let size = spec.size;
                    format!("{}\n", PlannedRange { bytes, size })
                })
                .collect();
            printer.print(lines.as_bytes());
            Ok(())
        }),
        RangeStep::Range(planned) => {
            one_file(common, settings, &printer).and_then(|(target, spec)| {
                hash_range(&engine, &printer, target, spec, planned.bytes.clone())
            })
        }
        RangeStep::Combine(output, encoding) => combine(common, (*output, *encoding), &printer),
    };
    if let Err(Stop::Input) = done {
        printer.fail();
    }
    match (printer.finish(), done) {
        (_, Err(Stop::Usage)) => Status::Usage,
        (status, _) => status,
    }
}

/// The one file of `--plan` and `--range`, and what it is hashed as.
fn one_file(
    common: &Common,
    settings: &RangeSettings,
    printer: &Printer,
) -> Result<(Target, Spec), Stop> {
    let [target] = &common.targets[..] else {
        let flag = match settings.step {
            RangeStep::Plan(_) => "--plan",
            _ => "--range",
        };
        printer.message(format!("mtsum: {flag} takes one file (try 'mtsum --help')\n").as_bytes());
        return Err(Stop::Usage);
    };
    // A range of standard input would need it twice, for its length and then for the range,
    // and it is read once per process (`source::claim_stdin`): a user names the file instead.
    if *target == Target::Stdin && matches!(settings.step, RangeStep::Range(_)) {
        printer.message(
            b"mtsum: --range needs a named file, not standard input (try 'mtsum --help')\n",
        );
        return Err(Stop::Usage);
    }
    let name = report::name_bytes(target);
    let size = match &settings.step {
        // The size the range was planned for: the engine fails a file of another length as
        // changed, whichever range it is (the file is opened there).
        RangeStep::Range(planned) => planned.size,
        _ => match Input::open(target) {
            Ok(Input::Sized(file)) => file.len(),
            Ok(Input::Stream(_)) => return Err(failed(printer, name, &InputError::RangeOfStream)),
            Err(e) => return Err(failed(printer, name, &e)),
        },
    };
    let spec = Spec {
        layout: settings.request.layout,
        algorithm: settings.request.algorithm,
        size,
    };
    Ok((target.clone(), spec))
}

/// `--range`: the partial line of `bytes` of the file, with its name.
fn hash_range(
    engine: &Engine,
    printer: &Printer,
    target: Target,
    spec: Spec,
    bytes: std::ops::Range<u64>,
) -> Result<(), Stop> {
    let name = report::name_bytes(&target).to_vec();
    let partial = match range::hash_range(engine, target, spec, bytes) {
        Err(e) => {
            printer.message(&report::error_line(&name, &e));
            return Err(Stop::Usage);
        }
        Ok(Err(e)) => return Err(failed(printer, &name, &e)),
        Ok(Ok(partial)) => partial,
    };
    let mut line = partial.to_line().into_bytes();
    if !sumfile::needs_escape(&name) {
        line.extend_from_slice(b"  ");
        line.extend_from_slice(&name);
    }
    line.push(b'\n');
    printer.print(&line);
    Ok(())
}

/// `--combine`: every partial line of every PATH, then the root line.
fn combine(
    common: &Common,
    (output, encoding): (Output, Option<Encoding>),
    printer: &Printer,
) -> Result<(), Stop> {
    let mut partials: Vec<(Partial, Vec<u8>)> = Vec::new();
    let mut done = Ok(());
    for target in &common.targets {
        let source = report::name_bytes(target);
        let text = match read(target) {
            Ok(text) => text,
            Err(e) => {
                done = Err(failed(printer, source, &InputError::Io(e)));
                continue;
            }
        };
        for line in text.split(|&b| b == b'\n') {
            if line.trim_ascii().is_empty() {
                continue;
            }
            let (partial, name) = split_name(line);
            match Partial::from_line(&String::from_utf8_lossy(partial)) {
                Ok(p) => partials.push((p, name.to_vec())),
                Err(e) => done = Err(failed(printer, source, &e)),
            }
        }
    }
    done?;
    // The name and what the file is hashed as come from the partials; -a and -t do not apply.
    let first = partials.iter().min_by_key(|(p, _)| p.range.start);
    let (name, spec) = match first {
        Some((p, name)) => (name.clone(), Some(p.spec)),
        None => (Vec::new(), None),
    };
    let root = range::combine(partials.into_iter().map(|(p, _)| p)).map_err(|e| {
        printer.message(format!("mtsum: {e}\n").as_bytes());
        Stop::Input
    })?;
    let spec = spec.expect("combine refuses an empty set");
    let root = hash::encoded(root, encoding);
    printer.print(&hash::root_line(
        output,
        spec.layout,
        spec.algorithm,
        &root,
        &name,
    ));
    Ok(())
}

/// A partial line and the name after its two spaces (`-` when there is none).
fn split_name(line: &[u8]) -> (&[u8], &[u8]) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match line.windows(2).position(|w| w == b"  ") {
        Some(i) => (&line[..i], &line[i + 2..]),
        None => (line, b"-"),
    }
}

fn read(target: &Target) -> io::Result<Vec<u8>> {
    match target {
        Target::Path(path) | Target::File(path) => std::fs::read(path),
        Target::Url(_) => Err(std::io::Error::other("a plan is read from a local file")),
        Target::Stdin => {
            let mut text = Vec::new();
            mtsum::source::stdin()?.read_to_end(&mut text)?;
            Ok(text)
        }
    }
}

/// Reports `mtsum: NAME: cause` for an input that failed.
fn failed(printer: &Printer, name: &[u8], cause: &dyn std::fmt::Display) -> Stop {
    printer.message(&report::error_line(name, cause));
    Stop::Input
}

/// Reports `mtsum: cause` for a bad parameter.
fn usage(printer: &Printer, cause: &dyn std::fmt::Display) -> Stop {
    printer.message(format!("mtsum: {cause}\n").as_bytes());
    Stop::Usage
}
