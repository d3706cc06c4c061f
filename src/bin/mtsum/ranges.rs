//! `--plan`, `--range`, `--combine`: one file hashed in ranges by separate commands (on other
//! machines, by GNU parallel, a batch system, ssh) and the ranges joined into the checksum line
//! that `mtsum FILE` prints. The work is the library's [`mtsum::range`]; here are the lines.
//!
//! A partial line of `--range` is the library's line ([`Partial::to_line`]) followed by two
//! spaces and the file's name, as in a checksum line, so that `--combine` can print the name;
//! a name that a checksum line would escape (a newline, a backslash) is left out, and
//! `--combine` prints `-` for it.

use std::io::{self, Read, Write};
use std::num::NonZeroUsize;
use std::ops::Range;

use mtsum::engine::Request;
use mtsum::range::{self, Partial, Spec};
use mtsum::source::{Input, InputError, Target};
use mtsum::{report, sumfile};

use crate::Status;
use crate::args::{Config, Output};

/// Which of the three steps a run does.
pub enum Step {
    /// Print at most this many ranges of the file.
    Plan(NonZeroUsize),
    /// Hash one range of the file into a partial line.
    Range(Range<u64>),
    /// Read partial lines, print the root line as hash mode does.
    Combine(Output),
}

pub fn run(config: &Config, step: &Step, request: &Request) -> Status {
    let mut out = Vec::new();
    let status = match step {
        Step::Plan(parts) => one_file(config, step, request).and_then(|(_, spec)| {
            let plan = range::plan(spec, parts.get()).map_err(usage)?;
            for r in plan {
                out.extend_from_slice(format!("{}-{}\n", r.start, r.end).as_bytes());
            }
            Ok(())
        }),
        Step::Range(bytes) => one_file(config, step, request).and_then(|(target, spec)| {
            let name = report::name_bytes(&target).to_vec();
            let partial = range::hash_range(&config.engine, target, spec, bytes.clone())
                .map_err(|e| failed(&name, &e, Status::Usage))?
                .map_err(|e| failed(&name, &e, Status::InputFailed))?;
            out.extend_from_slice(partial.to_line().as_bytes());
            if !sumfile::needs_escape(&name) {
                out.extend_from_slice(b"  ");
                out.extend_from_slice(&name);
            }
            out.push(b'\n');
            Ok(())
        }),
        Step::Combine(output) => combine(config, *output, &mut out),
    };
    let status = status.err().unwrap_or(Status::Ok);
    if let Err(e) = report::write_whole(&mut io::stdout().lock(), &out) {
        eprintln!("mtsum: standard output: {e}");
        return Status::InputFailed;
    }
    status
}

/// The one file of `--plan` and `--range`, and what it is hashed as.
fn one_file(config: &Config, step: &Step, request: &Request) -> Result<(Target, Spec), Status> {
    let flag = match step {
        Step::Plan(_) => "--plan",
        _ => "--range",
    };
    let [target] = &config.targets[..] else {
        eprintln!("mtsum: {flag} takes one file (try 'mtsum --help')");
        return Err(Status::Usage);
    };
    let name = report::name_bytes(target);
    let size = match Input::open(target) {
        Ok(Input::Sized(file)) => file.len(),
        Ok(Input::Stream(_)) => {
            return Err(failed(
                name,
                &InputError::RangeOfStream,
                Status::InputFailed,
            ));
        }
        Err(e) => return Err(failed(name, &e, Status::InputFailed)),
    };
    let spec = Spec {
        layout: request.layout,
        algorithm: request.algorithm,
        size,
    };
    Ok((target.clone(), spec))
}

/// `--combine`: every partial line of every PATH, then the root line.
fn combine(config: &Config, output: Output, out: &mut Vec<u8>) -> Result<(), Status> {
    let mut partials: Vec<(Partial, Vec<u8>)> = Vec::new();
    let mut status = Ok(());
    for target in &config.targets {
        let source = report::name_bytes(target);
        let text = match read(target) {
            Ok(text) => text,
            Err(e) => {
                status = Err(failed(source, &InputError::Io(e), Status::InputFailed));
                continue;
            }
        };
        for line in text
            .split(|&b| b == b'\n')
            .filter(|l| !l.trim_ascii().is_empty())
        {
            let (partial, name) = split_name(line);
            match Partial::from_line(&String::from_utf8_lossy(partial)) {
                Ok(p) => partials.push((p, name.to_vec())),
                Err(e) => status = Err(failed(source, &e, Status::InputFailed)),
            }
        }
    }
    status?;
    let first = partials.iter().min_by_key(|(p, _)| p.range.start);
    let name = first.map_or(b"-".to_vec(), |(_, name)| name.clone());
    let spec = first.map(|(p, _)| p.spec);
    let root = range::combine(partials.into_iter().map(|(p, _)| p)).map_err(|e| {
        eprintln!("mtsum: {e}");
        Status::InputFailed
    })?;
    // The partials say what they are; -a and -t do not apply.
    let spec = spec.expect("combine refuses no partials");
    let line = match output {
        Output::BareDigest => format!("{root}\n").into_bytes(),
        Output::Line(format, terminator) => sumfile::format_line(
            format,
            terminator,
            spec.layout,
            spec.algorithm,
            &root,
            &name,
        ),
        Output::Json | Output::Graph => unreachable!("refused with --combine"),
    };
    out.extend_from_slice(&line);
    Ok(())
}

/// A partial line and the name after its two spaces (empty when there is none).
fn split_name(line: &[u8]) -> (&[u8], &[u8]) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match line.windows(2).position(|w| w == b"  ") {
        Some(i) => (&line[..i], &line[i + 2..]),
        None => (line, b"-"),
    }
}

fn read(target: &Target) -> io::Result<Vec<u8>> {
    match target {
        Target::Path(path) => std::fs::read(path),
        Target::Stdin => {
            let mut text = Vec::new();
            io::stdin().lock().read_to_end(&mut text)?;
            Ok(text)
        }
    }
}

/// Prints `mtsum: NAME: cause` and returns `status`.
fn failed(name: &[u8], cause: &dyn std::fmt::Display, status: Status) -> Status {
    let _ = io::stderr().write_all(&report::error_line(name, cause));
    status
}

/// Prints `mtsum: cause` for a bad parameter and returns the usage status.
fn usage(cause: impl std::fmt::Display) -> Status {
    eprintln!("mtsum: {cause}");
    Status::Usage
}
