//! Hash mode: walk the inputs, hash them on the engine, print one result each in order.

use std::io::{self, Write};

use mtsum::engine::{FileDigest, Request, Task};
use mtsum::source::{InputError, Target};
use mtsum::walk::{Recursion, Walked, walk};
use mtsum::{graph, report, sumfile};

use crate::Status;
use crate::args::{Config, Output};

/// What comes back from the engine for each item of the walk.
enum Item {
    Input(Target),
    Skipped(Walked),
    Failed(Vec<u8>, InputError),
}

pub fn run(config: &Config, request: &Request, recursion: Recursion, output: Output) -> Status {
    if config.verbose {
        eprintln!("Algorithm: {}", request.algorithm);
        eprintln!("Layout: {}", request.layout);
        eprintln!("Number of processors: {}", config.engine.threads());
    }
    let tasks = walk(config.targets.iter().cloned(), recursion).map(|walked| match walked {
        Walked::Input(target) => Task::hash(target.clone(), *request, Item::Input(target)),
        Walked::Error { path, error } => {
            let name = report::name_bytes(&Target::Path(path)).to_vec();
            Task::pass(Item::Failed(name, error))
        }
        skipped @ Walked::Skipped { .. } => Task::pass(Item::Skipped(skipped)),
    });
    let mut status = Status::Ok;
    let mut stdout = io::stdout().lock();
    config.engine.run(tasks, |item, result| {
        let (target, result) = match (item, result) {
            (Item::Input(target), Some(result)) => (target, result),
            (Item::Failed(name, error), _) => {
                status = Status::InputFailed;
                return print_error(&name, &error, output, &mut stdout);
            }
            (Item::Skipped(Walked::Skipped { path, reason }), _) => {
                if config.verbose {
                    let name = report::name_bytes(&Target::Path(path)).to_vec();
                    let _ = io::stderr().write_all(&report::error_line(&name, &reason));
                }
                return;
            }
            _ => unreachable!("inputs are hashed, notes are not"),
        };
        let name = report::name_bytes(&target);
        match result {
            Ok(digest) => print_digest(config, request, output, &target, &digest, &mut stdout),
            Err(error) => {
                status = Status::InputFailed;
                print_error(name, &error, output, &mut stdout);
            }
        }
    });
    status
}

fn print_digest(
    config: &Config,
    request: &Request,
    output: Output,
    target: &Target,
    digest: &FileDigest,
    stdout: &mut impl Write,
) {
    let name = report::name_bytes(target);
    let (layout, alg) = (request.layout, request.algorithm);
    let line = match output {
        Output::Graph => {
            let leaves = digest.leaves.as_deref().expect("leaves kept for -g");
            graph::dot(request, digest.size, leaves, &target.display_name()).into_bytes()
        }
        Output::BareDigest => format!("{}\n", digest.root).into_bytes(),
        Output::Json => sumfile::json_line(name, layout, alg, digest),
        Output::Line(format, terminator) => {
            sumfile::format_line(format, terminator, layout, alg, &digest.root, name)
        }
    };
    write_out(stdout, &line);
    if config.verbose {
        eprintln!("File size: {} bytes", digest.size);
    }
    if config.verbose || config.benchmark {
        eprintln!("{}", report::timing_line(digest.size, digest.elapsed));
    }
}

/// An input that failed: `mtsum: NAME: cause` on stderr, and with `--json` an error object
/// on stdout too, so that a script reading the JSON sees every input.
fn print_error(name: &[u8], error: &InputError, output: Output, stdout: &mut impl Write) {
    let _ = io::stderr().write_all(&report::error_line(name, error));
    if output == Output::Json {
        write_out(stdout, &sumfile::json_error_line(name, error));
    }
}

/// Writes one whole result; a failing stdout (a full disk) ends the run, as it would end
/// every later line too.
fn write_out(stdout: &mut impl Write, bytes: &[u8]) {
    if let Err(e) = report::write_whole(stdout, bytes) {
        eprintln!("mtsum: standard output: {e}");
        std::process::exit(Status::InputFailed as i32);
    }
}
