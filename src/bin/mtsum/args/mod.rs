//! The command line: parsed by clap into [`Args`](parser::Args) (`parser.rs`, with the
//! readers of single values in `values.rs`), then converted (`convert.rs`) into a [`Config`]
//! — the [`Common`] settings and one settings type per mode (`settings.rs`) — so that the rest
//! of the program never sees an impossible combination (as ripgrep does).
//!
//! A flag of one mode is a field of `Args` (with clap's `requires`/`conflicts_with` saying
//! where it is allowed) and a line in that mode's conversion (`HashSettings::from_args`, ...);
//! nothing else changes. The modes' runners read only their settings and [`Common`].
//!
//! The files depend one way: `mod.rs` → `convert` → `parser` and `settings` → `values`.

mod convert;
mod parser;
mod settings;
mod values;

use clap::Parser;

pub use parser::{Args, GenerateKind};
pub use settings::{
    AuditSettings, CheckSettings, Common, CompareSettings, Config, HashSettings, Mode, Output,
    RangeSettings, RangeStep, StoredSettings, Transfer, When,
};
pub use values::PlannedRange;

/// Why the command line gives the modes nothing to do.
pub enum EarlyExit {
    /// `--help`: this text goes to stdout, with status 0 if it gets there.
    Show(String),
    /// `--version`, whose line names the kernels this CPU runs: the library, not the parser,
    /// knows them.
    Version,
    /// `--generate KIND`: the man page or a shell completion, made from this parser.
    Generate(GenerateKind),
    /// A wrong command line: the message, one line, as `mtsum: cause (try 'mtsum --help')`
    /// or `mtsum: cause`, with status 2.
    Usage(String),
}

/// Parses the command line.
pub fn parse() -> Result<Config, EarlyExit> {
    let args = Args::try_parse().map_err(clap_early_exit)?;
    if let Some(kind) = args.generate {
        return Err(EarlyExit::Generate(kind));
    }
    // The library falls back to the portable kernels on a cap it cannot read; the command
    // says so instead, before any work.
    mtsum::lanes::Isa::cap_from_env().map_err(|e| EarlyExit::Usage(e.to_string()))?;
    Config::from_args(args).map_err(|e| EarlyExit::Usage(e.to_string()))
}

/// What a clap error stops for: help and version are no errors, but text for stdout (printed
/// by the caller, which reports a stdout that fails, where clap would exit 0 regardless); an
/// error is its one-line cause, with a pointer to `--help`.
fn clap_early_exit(e: clap::Error) -> EarlyExit {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp => return EarlyExit::Show(e.to_string()),
        ErrorKind::DisplayVersion => return EarlyExit::Version,
        _ => {}
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
    EarlyExit::Usage(format!("{cause} (try 'mtsum --help')"))
}
