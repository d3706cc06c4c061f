//! What each mode is given: the validated [`Config`], the [`Common`] settings of every mode
//! and one settings type per mode, in the library's types. The runners read these only.

use std::io::{self, IsTerminal};
use std::num::NonZeroUsize;
use std::path::PathBuf;

use mtsum::audit::{self, transfer::TransferFormat};
use mtsum::check::{CheckOptions, Untagged};
use mtsum::compare;
use mtsum::engine::{Engine, Request};
use mtsum::layout::Encoding;
use mtsum::report::Figures;
use mtsum::source::Target;
use mtsum::sumfile::{Format, Terminator};
use mtsum::walk::Recursion;

use super::values::PlannedRange;

/// Whether to show a bar: `--progress`, `--no-progress`, or when stderr is a terminal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum When {
    #[default]
    Auto,
    Always,
    Never,
}

impl When {
    pub(super) fn from_flags(progress: bool, no_progress: bool) -> When {
        match (progress, no_progress) {
            (_, true) => When::Never,
            (true, false) => When::Always,
            (false, false) => When::Auto,
        }
    }

    pub fn enabled(self) -> bool {
        match self {
            When::Always => true,
            When::Never => false,
            When::Auto => io::stderr().is_terminal(),
        }
    }
}

/// The command line, validated.
pub struct Config {
    pub common: Common,
    pub mode: Mode,
}

/// What one run of mtsum does, with the settings of that mode only.
pub enum Mode {
    /// Hash the inputs and print one result each.
    Hash(HashSettings),
    /// Verify the files listed in sum files.
    Check(CheckSettings),
    /// Audit files against their records.
    Audit(Box<AuditSettings>),
    /// `--plan`, `--range`, `--combine`: one file in ranges.
    Ranges(RangeSettings),
    /// `--stored`: what a store keeps about the objects below prefixes.
    Stored(StoredSettings),
    /// Compare two trees.
    Compare(CompareSettings),
}

/// `--stored`.
pub struct StoredSettings {
    /// `-z`: lines end with NUL.
    pub terminator: Terminator,
    /// `--json`: one object per value on stdout instead of sum lines.
    pub json: bool,
}

/// What every mode uses: the inputs, the engine that hashes them, and what goes to stderr.
pub struct Common {
    /// The PATHs (sum files with `-c`); standard input when there are none.
    pub targets: Vec<Target>,
    pub engine: Engine,
    pub progress: When,
    /// `--verbose` (the settings, every input's size, fallbacks and skipped files) and
    /// `--benchmark` (the time and throughput of every input).
    pub figures: Figures,
}

/// Hash mode.
pub struct HashSettings {
    pub request: Request,
    pub recursion: Recursion,
    pub output: Output,
    /// `--base64`: every digest in base64 instead of the layout's own encoding.
    pub encoding: Option<Encoding>,
}

/// `--plan`, `--range`, `--combine`.
pub struct RangeSettings {
    pub step: RangeStep,
    /// `-t`, `-l`, `-a` of `--plan` and `--range` (partials say what they are).
    pub request: Request,
}

/// Which of the three steps of one file in ranges a run does.
pub enum RangeStep {
    /// Print at most this many ranges of the file.
    Plan(NonZeroUsize),
    /// Hash one range of the file, planned at its size, into a partial line.
    Range(PlannedRange),
    /// Read partial lines, print the root line as hash mode does (`Line` or `BareDigest`,
    /// in `--base64` where asked).
    Combine(Output, Option<Encoding>),
}

/// How hash results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Line(Format, Terminator),
    Json,
    Graph,
}

/// `-c`.
pub struct CheckSettings {
    pub options: CheckOptions,
}

/// `--compare`.
pub struct CompareSettings {
    pub local: Target,
    pub remote: Target,
    pub options: compare::Options,
    /// `--quiet`: no `ok` lines.
    pub quiet: bool,
    /// `--json`: one object per name and a summary object on stdout.
    pub json: bool,
}

/// `--export` or `--import` instead of an audit.
pub enum Transfer {
    Export {
        file: PathBuf,
        format: TransferFormat,
    },
    Import {
        file: PathBuf,
        /// How untagged lines read; `None` (no `-t`) refuses them.
        untagged: Option<Untagged>,
    },
}

/// `--audit`.
pub struct AuditSettings {
    pub options: audit::Options,
    /// Move records instead of auditing.
    pub transfer: Option<Transfer>,
    /// `--repair FILE --from COPY` instead of auditing.
    pub repair: Option<(PathBuf, PathBuf)>,
    /// `--quiet`: no `ok` lines.
    pub quiet: bool,
    /// `--json`: one object per file and a summary object on stdout.
    pub json: bool,
}
