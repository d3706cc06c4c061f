//! The `mtsum` command: parses arguments, hands the work to the library, prints, and maps
//! what happened to an exit code. Nothing here knows how hashing works.
//!
//! The modules depend one way, so that a mode can be read (and a flag added) without the
//! others: `main` → the mode runners (`hash`, `check`, `audit`, `ranges`, `stored`,
//! `compare`) and `generate` (`--version`, the man page, the completions) → `session`
//! (start-up, printing, exit status) and `progress` → `args` (the command line, validated
//! into common and per-mode settings) → the library.

mod args;
mod audit;
mod check;
mod compare;
mod generate;
mod hash;
mod progress;
mod ranges;
mod session;
mod stdio;
mod stored;

use std::process::ExitCode;

use args::{EarlyExit, Mode};
use session::Status;

fn main() -> ExitCode {
    // Die quietly on a closed pipe (`mtsum * | head`), as coreutils does.
    // SAFETY: restoring the default action of a signal has no preconditions; it happens
    // before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let config = match args::parse() {
        Ok(config) => config,
        Err(EarlyExit::Show(text)) => return ExitCode::from(session::print_text(&text) as u8),
        Err(EarlyExit::Version) => {
            return ExitCode::from(session::print_text(&generate::version()) as u8);
        }
        Err(EarlyExit::Generate(kind)) => {
            return ExitCode::from(session::print_text(&generate::render(kind)) as u8);
        }
        Err(EarlyExit::Usage(message)) => {
            session::tell(format!("mtsum: {message}\n"));
            return ExitCode::from(Status::Usage as u8);
        }
    };
    let common = &config.common;
    let status = match &config.mode {
        Mode::Hash(settings) => hash::run(common, settings),
        Mode::Check(settings) => check::run(common, settings),
        Mode::Audit(settings) => audit::run(common, settings),
        Mode::Ranges(settings) => ranges::run(common, settings),
        Mode::Stored(settings) => stored::run(common, settings),
        Mode::Compare(settings) => compare::run(common, settings),
    };
    ExitCode::from(status as u8)
}
