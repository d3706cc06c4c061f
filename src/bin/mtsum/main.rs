//! The `mtsum` command: parses arguments, hands the work to the library, prints, and maps
//! what happened to an exit code. Nothing here knows how hashing works.

mod args;
mod audit;
mod hash;
mod progress;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use args::{Args, Config, Mode};
use progress::{Above, Progress};

/// Exit statuses, as coreutils and ripgrep use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Every input was hashed (or checked out).
    Ok = 0,
    /// At least one input could not be hashed or did not check out; the others were done.
    InputFailed = 1,
    /// The command line was wrong; nothing was done.
    Usage = 2,
}

fn main() -> ExitCode {
    // Die quietly on a closed pipe (`mtsum * | head`), as coreutils does.
    // SAFETY: restoring the default action of a signal has no preconditions; it happens
    // before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) => return usage_error(e),
    };
    let config = match Config::from_args(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mtsum: {e}");
            return ExitCode::from(Status::Usage as u8);
        }
    };
    let status = match &config.mode {
        Mode::Hash {
            request,
            recursion,
            output,
            encoding,
        } => hash::run(&config, request, *recursion, *output, *encoding),
        Mode::Audit(settings) => audit::run(&config, settings),
        Mode::Check(options) => {
            let progress = Progress::start(config.progress, None);
            let engine = config.engine.clone().with_progress(progress.counter());
            let mut out = Above {
                progress: &progress,
                inner: io::stdout().lock(),
            };
            let mut err = Above {
                progress: &progress,
                inner: io::stderr(),
            };
            let targets = config.targets.clone();
            let status = match mtsum::check::check(&engine, targets, options, &mut out, &mut err) {
                Ok(true) => Status::Ok,
                Ok(false) => Status::InputFailed,
                Err(e) => {
                    let _ = writeln!(err, "mtsum: standard output: {e}");
                    Status::InputFailed
                }
            };
            progress.finish();
            status
        }
    };
    ExitCode::from(status as u8)
}

/// Help and version go to stdout with status 0; anything else wrong with the command line is
/// one line `mtsum: cause` on stderr and status 2.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.exit();
    }
    let text = e.to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // "the following required arguments were not provided:" names them on the next line.
    let cause = match (first.ends_with(':'), lines.next()) {
        (true, Some(next)) => format!("{first} {}", next.trim()),
        _ => first.to_string(),
    };
    eprintln!("mtsum: {cause} (try 'mtsum --help')");
    ExitCode::from(Status::Usage as u8)
}
