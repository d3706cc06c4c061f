//! The `mtsum` command: parses arguments, hands the work to the library, prints, and maps
//! what happened to an exit code. Nothing here knows how hashing works.

use std::ffi::OsString;
use std::io::{self, Write};
use std::num::NonZeroUsize;
use std::process::ExitCode;

use clap::Parser;
use mtsum::engine::{Engine, Request};
use mtsum::layout::LayoutError;
use mtsum::source::Target;
use mtsum::sumfile::{self, Format, Terminator};
use mtsum::{Algorithm, Layout, LeafSize, graph, report};

/// Exit statuses, as coreutils and ripgrep use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// Every input was hashed.
    Ok = 0,
    /// At least one input could not be hashed; the others were.
    InputFailed = 1,
    /// The command line was wrong; nothing was hashed.
    Usage = 2,
}

/// Checksums of huge files as Merkle trees, hashed on every core.
///
/// Prints one line per PATH, `DIGEST  NAME`, as sha256sum does. With no PATH, or when PATH
/// is -, reads standard input. Messages (--verbose, --benchmark, errors) go to stderr.
#[derive(Parser, Debug)]
#[command(name = "mtsum", version, disable_version_flag = true)]
struct Args {
    /// Files to hash (regular files, block devices, pipes; - for standard input).
    #[arg(value_name = "PATH")]
    paths: Vec<OsString>,

    /// Number of worker threads [default: the number of available cores].
    #[arg(short = 'p', value_name = "processors", value_parser = parse_processors)]
    processors: Option<NonZeroUsize>,

    /// Hash algorithm: md5, sha1, sha224, sha256, sha384, sha512, blake3, xxh3, xxh128.
    #[arg(short = 'a', value_name = "algorithm", default_value = "sha256")]
    algorithm: Algorithm,

    /// Tree layout: mtsum (C++ mtsum 1.1.0), plain (what sha256sum prints), merkle, rfc6962.
    #[arg(short = 't', long = "tree", value_name = "LAYOUT", default_value = "mtsum",
          value_parser = parse_layout_name)]
    tree: String,

    /// Leaf size of the merkle and rfc6962 layouts: 64, 4K, 1M, 1MiB, ... [default: 1M].
    #[arg(short = 'l', long = "leaf-size", value_name = "SIZE")]
    leaf_size: Option<LeafSize>,

    /// Print the tree as a Graphviz DOT graph instead of the checksum line.
    #[arg(short = 'g')]
    graph: bool,

    /// Print only the digest, without the name (as C++ mtsum does).
    #[arg(long = "no-names")]
    no_names: bool,

    /// Print the time and throughput of every input on stderr.
    #[arg(long)]
    benchmark: bool,

    /// Print the algorithm, the processors, every input's size, time and throughput on stderr.
    #[arg(long)]
    verbose: bool,

    /// Print version information.
    #[arg(short = 'V', long = "version", short_alias = 'v', action = clap::ArgAction::Version)]
    version: (),
}

fn parse_layout_name(s: &str) -> Result<String, LayoutError> {
    Layout::from_name(s, None).map(|_| s.to_string())
}

/// More workers than this is a typo, not a machine: each one holds a few MiB of buffers.
const MAX_PROCESSORS: usize = 1024;

fn parse_processors(s: &str) -> Result<NonZeroUsize, String> {
    let n: usize = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of processors"))?;
    if n > MAX_PROCESSORS {
        return Err(format!("at most {MAX_PROCESSORS} processors"));
    }
    NonZeroUsize::new(n).ok_or_else(|| "the number of processors must be at least 1".to_string())
}

/// The command line, validated: nothing below sees an impossible combination.
struct Config {
    request: Request,
    engine: Engine,
    targets: Vec<Target>,
    no_names: bool,
    benchmark: bool,
    verbose: bool,
}

impl Config {
    fn from_args(args: Args) -> Result<Config, LayoutError> {
        let layout = Layout::from_name(&args.tree, args.leaf_size)?;
        let engine = args.processors.map(Engine::new).unwrap_or_default();
        let mut targets: Vec<Target> = args.paths.into_iter().map(Target::from_arg).collect();
        if targets.is_empty() {
            targets.push(Target::Stdin);
        }
        Ok(Config {
            request: Request {
                layout,
                algorithm: args.algorithm,
                keep_leaves: args.graph,
            },
            engine,
            targets,
            no_names: args.no_names,
            benchmark: args.benchmark,
            verbose: args.verbose,
        })
    }
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
    ExitCode::from(run(&config) as u8)
}

/// Help and version go to stdout with status 0; anything else wrong with the command line is
/// one line `mtsum: cause` on stderr and status 2.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.exit();
    }
    let text = e.to_string();
    let cause = text.lines().next().unwrap_or_default();
    let cause = cause.strip_prefix("error: ").unwrap_or(cause);
    eprintln!("mtsum: {cause} (try 'mtsum --help')");
    ExitCode::from(Status::Usage as u8)
}

fn run(config: &Config) -> Status {
    let request = &config.request;
    if config.verbose {
        eprintln!("Algorithm: {}", request.algorithm);
        eprintln!("Layout: {}", request.layout);
        eprintln!("Number of processors: {}", config.engine.threads());
    }
    let mut status = Status::Ok;
    let mut stdout = io::stdout().lock();
    config
        .engine
        .hash_all(request, config.targets.iter().cloned(), |target, result| {
            let name = report::name_bytes(&target);
            let digest = match result {
                Ok(d) => d,
                Err(e) => {
                    let line = report::error_line(name, &e);
                    let _ = io::stderr().write_all(&line);
                    status = Status::InputFailed;
                    return;
                }
            };
            let out = if let Some(leaves) = &digest.leaves {
                graph::dot(request, digest.size, leaves, &target.display_name()).into_bytes()
            } else if config.no_names {
                format!("{}\n", digest.root).into_bytes()
            } else {
                sumfile::format_line(
                    Format::Gnu,
                    Terminator::Newline,
                    request.layout,
                    request.algorithm,
                    &digest.root,
                    name,
                )
            };
            if let Err(e) = report::write_whole(&mut stdout, &out) {
                eprintln!("mtsum: standard output: {e}");
                std::process::exit(Status::InputFailed as i32);
            }
            if config.verbose {
                eprintln!("File size: {} bytes", digest.size);
            }
            if config.verbose || config.benchmark {
                eprintln!("{}", report::timing_line(digest.size, digest.elapsed));
            }
        });
    status
}
