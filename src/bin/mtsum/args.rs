//! The command line: parsed by clap into [`Args`], then converted into a [`Config`] — the
//! [`Common`] settings and one settings type per mode — so that the rest of the program never
//! sees an impossible combination (as ripgrep does).
//!
//! A flag of one mode is a field of [`Args`] (with clap's `requires`/`conflicts_with` saying
//! where it is allowed) and a line in that mode's conversion (`HashSettings::from_args`, ...);
//! nothing else changes. The modes' runners read only their settings and [`Common`].

use std::ffi::OsString;
use std::io::{self, IsTerminal};
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use mtsum::audit::plan::IoPriority;
use mtsum::audit::transfer::TransferFormat;
use mtsum::audit::{self, Operation, Resolution, Store};
use mtsum::check::{self, CheckOptions, Untagged, Verbosity};
use mtsum::compare;
use mtsum::engine::{Engine, Request};
use mtsum::layout::{Encoding, LayoutError, LeafSizeError, PartSize};
use mtsum::report::Figures;
use mtsum::source::{ReadMode, Target, remote};
use mtsum::sumfile::{Format, Terminator};
use mtsum::walk::Recursion;
use mtsum::{Algorithm, Layout, LeafSize};

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

/// Checksums of huge files as Merkle trees, hashed on every core.
///
/// Prints one line per file, `DIGEST  NAME`, as sha256sum does. With no PATH, or when PATH
/// is -, reads standard input. Messages (--verbose, --benchmark, errors) go to stderr.
/// Exit status: 0 all good, 1 some input failed (or did not check out), 2 usage error.
#[derive(Parser, Debug)]
#[command(
    name = "mtsum",
    version,
    disable_version_flag = true,
    max_term_width = 100,
    // As getopt_long in coreutils: a repeated flag is fine, a long option may be abbreviated.
    args_override_self = true,
    infer_long_args = true,
    group(clap::ArgGroup::new("verify").args(["check", "audit", "compare"])),
    group(clap::ArgGroup::new("records").args(["audit", "repair"]).multiple(true)),
    group(clap::ArgGroup::new("ranges").args(["plan", "range", "combine"]))
)]
pub struct Args {
    /// Files to hash (- for standard input; s3://BUCKET/KEY and http(s)://HOST/PATH for
    /// remote objects, with -r s3://BUCKET/PREFIX/ for the objects below a prefix), or with -c
    /// the sum files to check.
    #[arg(value_name = "PATH")]
    paths: Vec<OsString>,

    /// Number of worker threads [default: the number of available cores].
    #[arg(short = 'p', value_name = "processors", value_parser = parse_processors)]
    processors: Option<NonZeroUsize>,

    /// Hash algorithm: md5, sha1, sha224, sha256, sha384, sha512, blake3, xxh3, xxh128, and
    /// the CRCs crc32, crc32c, crc64nvme (with -t plain; crc32 and crc32c also with -t s3,
    /// which has no composite crc64nvme) [default: sha256; md5 with -t s3].
    #[arg(short = 'a', value_name = "algorithm", hide_possible_values = true,
          value_parser = Offered::new(Algorithm::ALL.map(Algorithm::name), str::parse::<Algorithm>))]
    algorithm: Option<Algorithm>,

    /// Tree layout: mtsum (C++ mtsum 1.1.0), plain (what sha256sum prints), merkle, rfc6962;
    /// the values storage systems report: s3 (multipart ETag, composite checksums), glacier
    /// (tree hash), dropbox (content_hash), btv2 (BitTorrent v2 pieces root) [default: mtsum].
    #[arg(short = 't', long = "tree", value_name = "LAYOUT", hide_possible_values = true,
          value_parser = Offered::new(mtsum::layout::NAMES, parse_layout_name))]
    tree: Option<String>,

    /// Leaf size of the merkle and rfc6962 layouts: 64, 4K, 1M, 1MiB, ... [default: 1M].
    #[arg(short = 'l', long = "leaf-size", value_name = "SIZE")]
    leaf_size: Option<LeafSize>,

    /// Part size of the s3 layout, 5M to 5G [default: 8M, the AWS CLI's]; with -c, auto tries
    /// the sizes of common clients and those the part count allows, and says which matched.
    #[arg(long = "part-size", value_name = "SIZE|auto", value_parser = parse_part_size)]
    part_size: Option<PartSizeArg>,

    /// Print digests in base64 (of the big-endian bytes), as S3, GCS and Azure headers show
    /// them; -c reads either encoding.
    #[arg(long, conflicts_with_all = ["check", "graph", "audit"])]
    base64: bool,

    /// Hash the files below directories, in bytewise order of their paths.
    #[arg(short = 'r', long, conflicts_with = "check")]
    recursive: bool,

    /// With -r, follow symbolic links met in directories (loops are detected).
    #[arg(short = 'L', long = "follow", requires = "recursive")]
    follow: bool,

    /// BSD-style lines, `TAG (NAME) = DIGEST`; the tag names layout and algorithm.
    #[arg(long, conflicts_with_all = ["check", "json", "graph", "no_names"])]
    tag: bool,

    /// End each line (each bare digest with --no-names) with NUL instead of newline, and do
    /// not escape names.
    #[arg(short = 'z', long = "zero", conflicts_with_all = ["check", "json", "graph"])]
    zero: bool,

    /// One JSON object per input: path, size, layout, leaf_size, algorithm, digest, seconds
    /// (or path and error). With -c: one per line of the sum files (path, status, expected,
    /// digest, sumfile, line, ...), then a summary per sum file; not with --status.
    #[arg(long, conflicts_with_all = ["graph", "no_names"])]
    json: bool,

    /// Print the tree as a Graphviz DOT graph instead of the checksum line.
    #[arg(short = 'g', conflicts_with = "check")]
    graph: bool,

    /// Print only the digest, without the name (as C++ mtsum does).
    #[arg(long = "no-names", conflicts_with = "check")]
    no_names: bool,

    /// Read checksum lines from the PATHs and verify the files they list.
    #[arg(short = 'c', long)]
    check: bool,

    /// With -c: do not print OK for each verified file (with --audit and --compare: no ok
    /// lines).
    #[arg(long, requires = "verify", overrides_with_all = ["status", "warn"])]
    quiet: bool,

    /// With -c: print nothing; the exit status tells.
    #[arg(long, requires = "check", overrides_with_all = ["quiet", "warn"], conflicts_with = "json")]
    status: bool,

    /// With -c: improperly formatted lines fail the check.
    #[arg(long, requires = "check")]
    strict: bool,

    /// With -c: warn about improperly formatted lines.
    #[arg(short = 'w', long, requires = "check", overrides_with_all = ["quiet", "status"])]
    warn: bool,

    /// With -c: do not fail or report listed files that are missing.
    #[arg(long = "ignore-missing", requires = "check")]
    ignore_missing: bool,

    /// Show a progress bar on stderr at once, even when it is not a terminal, and leave its
    /// last state there however short the run.
    #[arg(long, overrides_with = "no_progress")]
    progress: bool,

    /// Never show a progress bar (by default it shows on a terminal, after a second).
    #[arg(long = "no-progress", overrides_with = "progress")]
    no_progress: bool,

    /// Print the time and throughput of every input (with -c: of every file checked) on
    /// stderr.
    #[arg(long)]
    benchmark: bool,

    /// Also print the algorithm, processors, every input's size, and skipped files on stderr
    /// (with -c: the algorithm and layout of the lines, and every checked file's size).
    #[arg(long)]
    verbose: bool,

    /// Read files with O_DIRECT, around the page cache (for files larger than memory); where
    /// the file system refuses it, read them uncached or normally (--verbose says so).
    #[arg(long, conflicts_with = "mmap")]
    direct: bool,

    /// Hash files straight from memory maps instead of reading them (saves a copy on cached
    /// files; a file truncated meanwhile is reported as changed).
    #[arg(long)]
    mmap: bool,

    /// Remote objects: range GETs in flight at once, and ranges of 8 MiB held ahead of the
    /// hashing (memory: about N x 8 MiB of ranges, more for the jobs a tree reads at once) [default: 16].
    #[arg(long, value_name = "N", value_parser = parse_connections)]
    connections: Option<NonZeroUsize>,

    /// The S3 API endpoint for s3:// operands (MinIO, Ceph, R2, GCS ...) [default:
    /// $AWS_ENDPOINT_URL, the profile's endpoint_url, else AWS].
    #[arg(long = "endpoint-url", value_name = "URL")]
    endpoint_url: Option<String>,

    /// Send unsigned requests to S3 (public buckets), as the AWS CLI's --no-sign-request.
    #[arg(long = "no-sign-request")]
    no_sign_request: bool,

    /// The profile of ~/.aws/config and ~/.aws/credentials to take credentials, region and
    /// endpoint from [default: $AWS_PROFILE, else default].
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,

    /// The certificate authorities (PEM) to check https:// servers against, instead of the
    /// system's, as the AWS CLI's --ca-bundle [default: $AWS_CA_BUNDLE, the profile's
    /// ca_bundle].
    #[arg(long = "ca-bundle", value_name = "FILE")]
    ca_bundle: Option<PathBuf>,

    /// S3 URLs: path (ENDPOINT/BUCKET/KEY) or virtual (BUCKET.ENDPOINT/KEY) [default:
    /// virtual on AWS, path with --endpoint-url].
    #[arg(long = "addressing-style", value_name = "STYLE", value_parser = ["auto", "path", "virtual"])]
    addressing_style: Option<String>,

    /// Audit the files: record the digest, size and mtime of files without a record, and
    /// print STATUS  NAME for the others, STATUS one of ok, corrupt, repaired, modified, new,
    /// missing, changed, unreadable; a summary on stderr. Exit status 1 for corrupt or
    /// unreadable files. Records live in the extended attribute user.mtsum unless --manifest
    /// or --db is given; new records are plain blake3 unless -a/-t say otherwise.
    #[arg(long, conflicts_with_all = ["tag", "zero", "graph", "no_names", "benchmark"])]
    audit: bool,

    /// Compare the tree at the first PATH (a directory) with the one at the second (an
    /// s3://BUCKET/PREFIX/ or a directory): one line STATUS  NAME per file, STATUS one of ok,
    /// differs, only-local, only-remote, unverified (nothing the store reports vouches for
    /// the bytes), unreadable; a summary on stderr. Objects are checked against the values the
    /// store reports (a checksum, the ETag with its part size), reading the local files only;
    /// two directories are hashed alike (-t plain -a blake3 unless -t/-a say). Exit status 1
    /// if anything is not ok.
    #[arg(long, conflicts_with_all = ["tag", "zero", "graph", "no_names", "base64", "benchmark"])]
    compare: bool,

    /// With --compare: report only what the first tree holds and the second lacks or holds
    /// otherwise, not the names only the second has.
    #[arg(long = "one-way", requires = "compare")]
    one_way: bool,

    /// With --compare: take files of equal size for equal, reading nothing.
    #[arg(long = "size-only", requires = "compare")]
    size_only: bool,

    /// With --compare: read the bytes of the objects no stored value vouches for, instead of
    /// calling them unverified; =all reads every object's bytes, trusting no stored value.
    #[arg(long = "read-remote", value_name = "all", requires = "compare", num_args = 0..=1, require_equals = true, default_missing_value = "unverified", value_parser = ["unverified", "all"])]
    read_remote: Option<String>,

    /// With --audit: keep the records in this manifest file instead of extended attributes.
    #[arg(long, value_name = "FILE", requires = "audit")]
    manifest: Option<PathBuf>,

    /// With --audit: keep the records in this SQLite database (any number of trees; progress
    /// committed as the audit goes; two audits of one database are refused).
    #[arg(
        long,
        value_name = "FILE",
        requires = "records",
        conflicts_with = "manifest"
    )]
    db: Option<PathBuf>,

    /// Repair the corrupt FILE from a copy (--from), leaf by leaf as the database's leaf
    /// digests locate the damage; every leaf of the copy is checked before a byte is
    /// written, nothing is written if one is bad. Needs --db.
    #[arg(long, value_name = "FILE", requires_all = ["from", "db"], conflicts_with_all = ["check", "export", "import", "forget", "update", "fix", "migrate", "json"])]
    repair: Option<PathBuf>,

    /// With --repair: the copy to take the damaged ranges from.
    #[arg(long, value_name = "COPY", requires = "repair")]
    from: Option<PathBuf>,

    /// With --audit --db: repair corrupt files from the copies in DIR, which mirrors each
    /// PATH (DIR/x for PATH/x).
    #[arg(long = "repair-from", value_name = "DIR", requires_all = ["audit", "db"])]
    repair_from: Option<PathBuf>,

    /// With --audit: refresh the records of modified files, drop those of missing files.
    #[arg(long, requires = "audit")]
    update: bool,

    /// With --audit: accept the content of corrupt files as it is now (and replace damaged
    /// records).
    #[arg(long, requires = "audit")]
    fix: bool,

    /// With --audit: remove the records of the files (below the paths, with a manifest)
    /// instead of auditing them.
    #[arg(long, requires = "audit", conflicts_with_all = ["update", "fix"])]
    forget: bool,

    /// With --audit: write the records of the --db or --manifest store to FILE (- for
    /// standard output) as a manifest, or with --export-as sums as tagged checksum lines
    /// for -c; audit nothing.
    #[arg(long, value_name = "FILE", requires = "audit", conflicts_with_all = ["update", "fix", "forget", "import"])]
    export: Option<PathBuf>,

    /// With --export: manifest [default] or sums.
    #[arg(long = "export-as", value_name = "FORMAT", requires = "export", value_parser = ["manifest", "sums"])]
    export_as: Option<String>,

    /// With --audit: read the records of a manifest or of a sum file (whose files get the
    /// size and mtime they have now; untagged lines need -t, -t plain for sha256sum files)
    /// into the store; audit nothing.
    #[arg(long, value_name = "FILE", requires = "audit", conflicts_with_all = ["update", "fix", "forget"])]
    import: Option<PathBuf>,

    /// With --audit: audit only files not verified within DURATION (90s, 12h, 30d); with
    /// --db or extended attributes (which then carry the time), not --manifest. The others
    /// get no line; the summary counts them as not due.
    #[arg(long = "max-age", value_name = "DURATION", requires = "audit", value_parser = audit::parse_duration)]
    max_age: Option<Duration>,

    /// With --audit: stop handing out files after DURATION, least recently verified first,
    /// so that the next run goes on where this one stopped; not with --manifest.
    #[arg(long = "time-budget", value_name = "DURATION", requires = "audit", value_parser = audit::parse_duration)]
    time_budget: Option<Duration>,

    /// With --audit: files that check out and whose record has another algorithm or layout
    /// than -a/-t get a new record with those, computed from the same read.
    #[arg(long, requires = "audit")]
    migrate: bool,

    /// With --audit: files read at once [default: -p, else the number of cores].
    #[arg(long, value_name = "N", requires = "audit", value_parser = parse_readers)]
    readers: Option<NonZeroUsize>,

    /// With --audit: read at most RATE bytes per second on average (20M, 100M: binary
    /// units).
    #[arg(long = "limit-rate", value_name = "RATE", requires = "audit", value_parser = audit::parse_rate)]
    limit_rate: Option<u64>,

    /// With --audit: the readers' I/O priority, as ionice names it: idle [default: only when
    /// no one else wants the disk], best-effort, best-effort:0 to 7, none (unchanged).
    #[arg(long = "io-priority", value_name = "CLASS", requires = "records")]
    io_priority: Option<IoPriority>,

    /// With --audit: report what would be done, write no record.
    #[arg(long = "dry-run", requires = "records")]
    dry_run: bool,

    /// With --audit: modification times closer than this are equal: ns [default], 100ns
    /// (SMB), us, ms, s, 2s (FAT).
    #[arg(long = "mtime-resolution", value_name = "RES", requires = "audit")]
    mtime_resolution: Option<Resolution>,

    /// Print at most N byte ranges START-END/SIZE of the file (SIZE: its length), about equal
    /// and on subtree boundaries, to hash apart with --range and join with --combine.
    #[arg(long, value_name = "N", value_parser = parse_ranges, conflicts_with_all = ["check", "audit", "recursive", "graph", "json", "tag", "zero", "no_names", "base64"])]
    plan: Option<NonZeroUsize>,

    /// Hash bytes START-END of the file, a line of --plan, and print a partial line; a file
    /// whose length is no longer SIZE has changed and fails.
    #[arg(long, value_name = "START-END/SIZE", value_parser = PlannedRange::parse, conflicts_with_all = ["check", "audit", "recursive", "graph", "json", "tag", "zero", "no_names", "base64"])]
    range: Option<PlannedRange>,

    /// Read partial lines (of --range) from the PATHs and print the file's checksum line.
    /// The partials say what the file was hashed as: -a, -t, -l, --part-size are refused.
    // One rule for the three steps: an option that would change nothing is refused rather than
    // ignored, so that `--combine -t merkle` is not taken for a check that the partials are
    // merkle's. The printing options of hash mode that a root line has are allowed.
    #[arg(long, conflicts_with_all = ["check", "audit", "recursive", "graph", "json", "algorithm", "tree", "leaf_size", "part_size"])]
    combine: bool,

    /// Print, without reading any object's bytes, a sum file of the values the store keeps
    /// for each object below the s3://BUCKET/PREFIX/ operands (its ETag and checksums, with
    /// the part size the store tells), names relative to the prefix: `mtsum -c` in a local
    /// copy checks it. A value that checks nothing (an SSE-KMS ETag) is a # comment.
    #[arg(long, conflicts_with_all = ["check", "audit", "recursive", "graph", "json", "tag", "no_names", "base64", "algorithm", "tree", "leaf_size", "part_size", "plan", "range", "combine"])]
    stored: bool,

    /// Print the version and the SIMD kernels this CPU runs (within MTSUM_SIMD).
    #[arg(short = 'V', long = "version", visible_short_alias = 'v', action = clap::ArgAction::Version)]
    version: (),

    /// Print the man page or a shell completion, made from these options, and exit.
    #[arg(long, value_name = "KIND", exclusive = true)]
    generate: Option<GenerateKind>,
}

/// What `--generate` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GenerateKind {
    /// The man page, in roff (`man -l -` shows it).
    Man,
    /// The bash completion, for bash-completion's completions/mtsum.
    CompleteBash,
    /// The zsh completion, as _mtsum in a directory of $fpath.
    CompleteZsh,
    /// The fish completion, for vendor_completions.d/mtsum.fish.
    CompleteFish,
    /// The PowerShell completion, to dot-source from $PROFILE.
    CompletePowershell,
}

fn parse_layout_name(s: &str) -> Result<String, LayoutError> {
    Layout::from_name(s, None).map(|_| s.to_string())
}

/// The parser of a flag that takes one of a few names (`-a`, `-t`): `parse` decides, so that
/// its other spellings (`SHA-256`) and its message listing the names stay, and `names` are
/// offered to the shell completions of `--generate` (`mtsum -t <TAB>`). The flags hide them
/// from `--help`, whose text lists them already.
struct Offered<T, E> {
    names: Vec<&'static str>,
    parse: fn(&str) -> Result<T, E>,
}

impl<T, E> Offered<T, E> {
    fn new(names: impl IntoIterator<Item = &'static str>, parse: fn(&str) -> Result<T, E>) -> Self {
        let names = names.into_iter().collect();
        Offered { names, parse }
    }
}

// Not derived: a derive would ask `T` and `E` to be `Clone`, where only the `fn` is copied.
impl<T, E> Clone for Offered<T, E> {
    fn clone(&self) -> Self {
        let names = self.names.clone();
        Offered {
            names,
            parse: self.parse,
        }
    }
}

impl<T, E> clap::builder::TypedValueParser for Offered<T, E>
where
    T: Clone + Send + Sync + 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let parse = self.parse;
        clap::builder::StringValueParser::new()
            .try_map(move |s| parse(&s))
            .parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let names = self.names.iter().copied();
        Some(Box::new(names.map(clap::builder::PossibleValue::new)))
    }
}

/// `--part-size`: a size, or `auto` (with -c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartSizeArg {
    Size(PartSize),
    Auto,
}

fn parse_part_size(s: &str) -> Result<PartSizeArg, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(PartSizeArg::Auto);
    }
    let size = match LeafSize::parse_as(s, "part size") {
        Ok(size) => size,
        // "At least 1 byte" is true of leaves; parts are larger.
        Err(LeafSizeError::Zero(..)) => {
            return Err(format!(
                "invalid part size '{s}': S3 parts are at least 5 MiB"
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    PartSize::try_from(size)
        .map(PartSizeArg::Size)
        .map_err(|e| e.to_string())
}

/// More workers than this is a typo, not a machine: each one holds a few MiB of buffers.
const MAX_PROCESSORS: usize = 1024;

/// Whether untagged lines (`HEX  NAME`) are read with a layout the user did not choose, and
/// not `plain`: lines written by `sha256sum` then read as another layout's values, which
/// `-c` and `--import` say.
fn untagged_layout_unchosen(args: &Args, layout: Layout) -> bool {
    args.tree.is_none() && layout != Layout::Plain
}

fn parse_processors(s: &str) -> Result<NonZeroUsize, String> {
    parse_workers(s, "processors")
}

/// `--readers N`: as `-p`, in the flag's own word.
fn parse_readers(s: &str) -> Result<NonZeroUsize, String> {
    parse_workers(s, "readers")
}

/// A count of threads, `what` of them, from 1 to [`MAX_PROCESSORS`].
fn parse_workers(s: &str, what: &str) -> Result<NonZeroUsize, String> {
    let n = parse_count(s, what)?;
    if n.get() > MAX_PROCESSORS {
        return Err(format!("at most {MAX_PROCESSORS} {what}"));
    }
    Ok(n)
}

/// `--connections N`.
fn parse_connections(s: &str) -> Result<NonZeroUsize, String> {
    parse_count(s, "connections")
}

/// `--plan N`.
fn parse_ranges(s: &str) -> Result<NonZeroUsize, String> {
    parse_count(s, "ranges")
}

/// A count of `what` that must be at least 1, with a message that says what it counts
/// (clap's own for `NonZeroUsize` speaks of types).
fn parse_count(s: &str, what: &str) -> Result<NonZeroUsize, String> {
    let n: usize = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of {what}"))?;
    NonZeroUsize::new(n).ok_or_else(|| format!("the number of {what} must be at least 1"))
}

/// A line of `--plan`, which `--range` takes: `START-END/SIZE`, the bytes `START..END` (end
/// exclusive) of a file planned at `SIZE` bytes. The size travels with the range because the
/// separate commands of one file may run long apart: a range hashed from a file that has
/// since grown or shrunk would be a subtree of another tree, and only the planned size tells
/// (the partial line then carries it, so `--combine` refuses a mix). `/SIZE` as in HTTP's
/// `Content-Range: bytes 0-499/1234`, and one word, for `xargs` and GNU parallel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedRange {
    pub bytes: std::ops::Range<u64>,
    pub size: u64,
}

impl PlannedRange {
    fn parse(s: &str) -> Result<PlannedRange, String> {
        let bad = || format!("'{s}' is not a line of --plan: START-END/SIZE");
        let (range, size) = s.split_once('/').ok_or_else(bad)?;
        let (start, end) = range.split_once('-').ok_or_else(bad)?;
        let number = |n: &str| n.parse::<u64>().map_err(|_| bad());
        Ok(PlannedRange {
            bytes: number(start)?..number(end)?,
            size: number(size)?,
        })
    }
}

impl std::fmt::Display for PlannedRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let std::ops::Range { start, end } = self.bytes;
        write!(f, "{start}-{end}/{}", self.size)
    }
}

/// Whether to show a bar: `--progress`, `--no-progress`, or when stderr is a terminal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum When {
    #[default]
    Auto,
    Always,
    Never,
}

impl When {
    fn from_flags(progress: bool, no_progress: bool) -> When {
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

impl Config {
    fn from_args(args: Args) -> Result<Config, String> {
        // Checked in every mode, so that a wrong -t/-l is an error whatever else is asked.
        let layout = args.layout()?;
        args.check_urls()?;
        // Before any target is made: operands, and the names in sum files (-c), take them.
        remote::set_default_options(args.remote_options());
        let mode = if args.stored {
            args.check_prefixes()?;
            Mode::Stored(StoredSettings {
                terminator: match args.zero {
                    true => Terminator::Nul,
                    false => Terminator::Newline,
                },
            })
        } else if args.plan.is_some() || args.range.is_some() || args.combine {
            Mode::Ranges(RangeSettings::from_args(&args, layout))
        } else if args.audit || args.repair.is_some() {
            Mode::Audit(Box::new(AuditSettings::from_args(&args, layout)))
        } else if args.check {
            Mode::Check(CheckSettings::from_args(&args, layout))
        } else if args.compare {
            Mode::Compare(CompareSettings::from_args(&args, layout)?)
        } else {
            Mode::Hash(HashSettings::from_args(&args, layout))
        };
        let common = Common::from_args(args);
        Ok(Config { common, mode })
    }
}

impl Args {
    /// `-t`, `-l` and `--part-size`; the mtsum layout unless `-t` says otherwise. An algorithm
    /// the layout is not defined with (a CRC in a tree, MD5 for Glacier) and `-g` of a layout
    /// that is not a binary tree are refused here.
    fn layout(&self) -> Result<Layout, String> {
        let tree = self.tree.as_deref().unwrap_or("mtsum");
        let is_s3 = tree.eq_ignore_ascii_case("s3");
        if is_s3 && self.leaf_size.is_some() {
            return Err("-t s3 has a part size (--part-size), not a leaf size (-l)".into());
        }
        let part = match self.part_size {
            Some(_) if !is_s3 => return Err("--part-size applies to -t s3 only".into()),
            Some(PartSizeArg::Auto) if !self.check => {
                return Err("--part-size auto applies to -c only".into());
            }
            Some(PartSizeArg::Size(p)) => Some(LeafSize::from(p)),
            Some(PartSizeArg::Auto) | None => None,
        };
        let size = self.leaf_size.or(part);
        let layout = Layout::from_name(tree, size).map_err(|e| e.to_string())?;
        if let Some(alg) = self.algorithm {
            layout.check_algorithm(alg).map_err(|e| e.to_string())?;
        }
        if self.graph && !layout.is_binary_tree() {
            let name = layout.name();
            return Err(format!(
                "-g draws binary trees; the {name} layout is not one"
            ));
        }
        Ok(layout)
    }

    /// `--verbose` and `--benchmark`, for every mode.
    fn figures(&self) -> Figures {
        Figures {
            verbose: self.verbose,
            benchmark: self.benchmark,
        }
    }

    fn recursion(&self) -> Recursion {
        Recursion::from_flags(self.recursive, self.follow)
    }

    /// How remote operands are reached: the command line's options over the defaults.
    fn remote_options(&self) -> remote::Options {
        remote::Options {
            connections: self
                .connections
                .unwrap_or(remote::Options::DEFAULT_CONNECTIONS),
            endpoint_url: self.endpoint_url.clone(),
            no_sign_request: self.no_sign_request,
            profile: self.profile.clone(),
            ca_bundle: self.ca_bundle.clone(),
            addressing: match self.addressing_style.as_deref() {
                Some("path") => remote::Addressing::Path,
                Some("virtual") => remote::Addressing::Virtual,
                _ => remote::Addressing::Auto,
            },
            ..remote::Options::default()
        }
    }

    /// Refuses an operand that starts like a URL but is none (`s3:///key`): a usage error,
    /// not a file that is not found.
    fn check_urls(&self) -> Result<(), String> {
        let urls = self
            .paths
            .iter()
            .filter(|p| remote::is_url(p.as_encoded_bytes()));
        for url in urls {
            let text = url.to_str().ok_or("a URL must be UTF-8")?;
            remote::Url::parse(text)?;
        }
        Ok(())
    }

    /// `--stored` reads prefixes of buckets: at least one, and nothing else.
    fn check_prefixes(&self) -> Result<(), String> {
        let wanted = "--stored reads prefixes of buckets: s3://BUCKET/PREFIX/ (ending with /)";
        if self.paths.is_empty() {
            return Err(wanted.into());
        }
        for path in &self.paths {
            let url = path.to_str().and_then(|p| remote::Url::parse(p).ok());
            if !url.is_some_and(|u| u.is_prefix()) {
                return Err(format!("{}: {wanted}", path.to_string_lossy()));
            }
        }
        Ok(())
    }

    fn read_mode(&self) -> ReadMode {
        match (self.direct, self.mmap) {
            (true, _) => ReadMode::Direct,
            (false, true) => ReadMode::Mmap,
            (false, false) => ReadMode::Pread,
        }
    }
}

impl Common {
    fn from_args(args: Args) -> Common {
        let (read_mode, figures) = (args.read_mode(), args.figures());
        let engine = args
            .processors
            .map(Engine::new)
            .unwrap_or_default()
            .with_read_mode(read_mode);
        let mut targets: Vec<Target> = args.paths.into_iter().map(Target::from_arg).collect();
        if targets.is_empty() {
            targets.push(Target::Stdin);
        }
        let quiet = args.quiet || args.status;
        Common {
            targets,
            engine,
            progress: When::from_flags(args.progress, args.no_progress || quiet),
            figures,
        }
    }
}

impl Args {
    /// `--base64`: every digest in base64 instead of the layout's own encoding.
    fn encoding(&self) -> Option<Encoding> {
        self.base64.then_some(Encoding::Base64)
    }
}

impl Output {
    /// A root line as hash mode and `--combine` print it: `--no-names`, `--tag`, `-z` (and
    /// `--base64`, [`Args::encoding`]).
    fn line(args: &Args) -> Output {
        let terminator = match args.zero {
            true => Terminator::Nul,
            false => Terminator::Newline,
        };
        if args.no_names {
            Output::Line(Format::Bare, terminator)
        } else if args.tag {
            Output::Line(Format::Tag, terminator)
        } else {
            Output::Line(Format::Gnu, terminator)
        }
    }
}

impl RangeSettings {
    fn from_args(args: &Args, layout: Layout) -> RangeSettings {
        let step = match (args.plan, &args.range) {
            (Some(parts), _) => RangeStep::Plan(parts),
            (_, Some(range)) => RangeStep::Range(range.clone()),
            (None, None) => RangeStep::Combine(Output::line(args), args.encoding()),
        };
        let algorithm = args.algorithm.unwrap_or(layout.default_algorithm());
        RangeSettings {
            step,
            request: Request::new(layout, algorithm),
        }
    }
}

impl HashSettings {
    fn from_args(args: &Args, layout: Layout) -> HashSettings {
        let output = if args.graph {
            Output::Graph
        } else if args.json {
            Output::Json
        } else {
            Output::line(args)
        };
        HashSettings {
            request: Request {
                keep_leaves: args.graph,
                ..Request::new(layout, args.algorithm.unwrap_or(layout.default_algorithm()))
            },
            recursion: args.recursion(),
            output,
            encoding: args.encoding(),
        }
    }
}

impl CheckSettings {
    fn from_args(args: &Args, layout: Layout) -> CheckSettings {
        let verbosity = match (args.status, args.quiet) {
            (true, _) => Verbosity::Status,
            (false, true) => Verbosity::Quiet,
            (false, false) => Verbosity::All,
        };
        let options = CheckOptions {
            untagged: Untagged {
                layout,
                algorithm: args.algorithm,
                auto_part_size: args.part_size == Some(PartSizeArg::Auto),
            },
            ignore_missing: args.ignore_missing,
            strict: args.strict,
            warn: args.warn,
            hint_untagged_layout: untagged_layout_unchosen(args, layout),
            verbosity,
            output: match args.json {
                true => check::Output::Json,
                false => check::Output::Text,
            },
            figures: args.figures(),
        };
        CheckSettings { options }
    }
}

impl CompareSettings {
    fn from_args(args: &Args, layout: Layout) -> Result<CompareSettings, String> {
        let [local, remote] = &args.paths[..] else {
            return Err("--compare takes two paths: LOCAL REMOTE (try 'mtsum --help')".into());
        };
        let mut options = compare::Options::default();
        // Both sides' bytes are hashed alike: plain BLAKE3 unless -t or -a say otherwise.
        if args.tree.is_some() {
            options.request.layout = layout;
            options.request.algorithm = layout.default_algorithm();
        }
        if let Some(alg) = args.algorithm {
            options.request.algorithm = alg;
        }
        options.read_remote = match args.read_remote.as_deref() {
            None => compare::ReadRemote::Never,
            Some("all") => compare::ReadRemote::All,
            Some(_) => compare::ReadRemote::Unverified,
        };
        options.one_way = args.one_way;
        options.size_only = args.size_only;
        options.recursion = Recursion::from_flags(true, args.follow);
        Ok(CompareSettings {
            local: Target::from_arg(local),
            remote: Target::from_arg(remote),
            options,
            quiet: args.quiet,
            json: args.json,
        })
    }
}

impl AuditSettings {
    fn from_args(args: &Args, layout: Layout) -> AuditSettings {
        let store = match (&args.manifest, &args.db) {
            (Some(path), _) => Store::Manifest(path.clone()),
            (None, Some(path)) => Store::Database(path.clone()),
            (None, None) => Store::Xattr,
        };
        let mut options = audit::Options::new(store);
        options.operation = match args.forget {
            true => Operation::Forget,
            false => Operation::Audit {
                update: args.update,
                fix: args.fix,
            },
        };
        options.recursion = args.recursion();
        // New records are plain BLAKE3 (the library's default) unless -t/-a say otherwise.
        if args.tree.is_some() {
            options.layout = layout;
        }
        options.algorithm = args.algorithm.unwrap_or(options.algorithm);
        // A storage layout asked for without -a gets its own algorithm, not the default.
        if options.layout.check_algorithm(options.algorithm).is_err() {
            options.algorithm = options.layout.default_algorithm();
        }
        options.resolution = args.mtime_resolution.unwrap_or_default();
        options.dry_run = args.dry_run;
        options.max_age = args.max_age;
        options.time_budget = args.time_budget;
        options.migrate = args.migrate;
        options.io.readers = args.readers.or(args.processors);
        options.io.read_mode = args.read_mode();
        options.io.rate_limit = args.limit_rate;
        options.io.priority = args.io_priority.unwrap_or_default();
        let transfer = match (&args.export, &args.import) {
            (Some(file), _) => Some(Transfer::Export {
                file: file.clone(),
                format: match args.export_as.as_deref() {
                    Some("sums") => TransferFormat::SumFile,
                    _ => TransferFormat::Manifest,
                },
            }),
            (None, Some(file)) => Some(Transfer::Import {
                file: file.clone(),
                // Only where -t says what untagged lines are: a guess that is wrong would
                // make every file corrupt at the next audit.
                untagged: args.tree.is_some().then_some(Untagged {
                    layout,
                    algorithm: args.algorithm,
                    // An import records one value per file; it cannot try several.
                    auto_part_size: false,
                }),
            }),
            (None, None) => None,
        };
        options.repair_from = args.repair_from.clone();
        AuditSettings {
            transfer,
            repair: args.repair.clone().zip(args.from.clone()),
            options,
            quiet: args.quiet,
            json: args.json,
        }
    }
}
