//! The flags as clap parses them: one field of [`Args`] per flag, with its help text (from
//! which `--help`, the man page and the completions are made) and where it is allowed.

use std::ffi::OsString;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use mtsum::audit::plan::IoPriority;
use mtsum::audit::{self, Resolution};
use mtsum::{Algorithm, LeafSize};

use super::values::{
    Offered, PartSizeArg, PlannedRange, parse_connections, parse_layout_name, parse_part_size,
    parse_processors, parse_ranges, parse_readers,
};

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
    pub(super) paths: Vec<OsString>,

    /// Number of worker threads [default: the number of available cores].
    #[arg(short = 'p', value_name = "processors", value_parser = parse_processors)]
    pub(super) processors: Option<NonZeroUsize>,

    /// Hash algorithm: md5, sha1, sha224, sha256, sha384, sha512, blake3, xxh3, xxh128, and
    /// the CRCs crc32, crc32c, crc64nvme (with -t plain; crc32 and crc32c also with -t s3,
    /// which has no composite crc64nvme) [default: sha256; md5 with -t s3].
    #[arg(short = 'a', value_name = "algorithm", hide_possible_values = true,
          value_parser = Offered::new(Algorithm::ALL.map(Algorithm::name), str::parse::<Algorithm>))]
    pub(super) algorithm: Option<Algorithm>,

    /// Tree layout: mtsum (C++ mtsum 1.1.0), plain (what sha256sum prints), merkle, rfc6962;
    /// the values storage systems report: s3 (multipart ETag, composite checksums), glacier
    /// (tree hash), dropbox (content_hash), btv2 (BitTorrent v2 pieces root) [default: mtsum].
    #[arg(short = 't', long = "tree", value_name = "LAYOUT", hide_possible_values = true,
          value_parser = Offered::new(mtsum::layout::NAMES, parse_layout_name))]
    pub(super) tree: Option<String>,

    /// Leaf size of the merkle and rfc6962 layouts: 64, 4K, 1M, 1MiB, ... [default: 1M].
    #[arg(short = 'l', long = "leaf-size", value_name = "SIZE")]
    pub(super) leaf_size: Option<LeafSize>,

    /// Part size of the s3 layout, 5M to 5G [default: 8M, the AWS CLI's]; with -c, auto tries
    /// the sizes of common clients and those the part count allows, and says which matched.
    /// Parts of different sizes are listed in order, run-length: 5M,7M,5M,1 or 8Mx100,3M.
    #[arg(long = "part-size", value_name = "SIZE|LIST|auto", value_parser = parse_part_size)]
    pub(super) part_size: Option<PartSizeArg>,

    /// Print digests in base64 (of the big-endian bytes), as S3, GCS and Azure headers show
    /// them; -c reads either encoding.
    #[arg(long, conflicts_with_all = ["check", "graph", "audit"])]
    pub(super) base64: bool,

    /// Hash the files below directories, in bytewise order of their paths.
    #[arg(short = 'r', long, conflicts_with = "check")]
    pub(super) recursive: bool,

    /// With -r, follow symbolic links met in directories (loops are detected).
    #[arg(short = 'L', long = "follow", requires = "recursive")]
    pub(super) follow: bool,

    /// BSD-style lines, `TAG (NAME) = DIGEST`; the tag names layout and algorithm.
    #[arg(long, conflicts_with_all = ["check", "json", "graph", "no_names"])]
    pub(super) tag: bool,

    /// End each line (each bare digest with --no-names) with NUL instead of newline, and do
    /// not escape names.
    #[arg(short = 'z', long = "zero", conflicts_with_all = ["check", "json", "graph"])]
    pub(super) zero: bool,

    /// One JSON object per input: path, size, layout, leaf_size, algorithm, digest, seconds
    /// (or path and error). With -c: one per line of the sum files (path, status, expected,
    /// digest, sumfile, line, ...), then a summary per sum file; not with --status.
    #[arg(long, conflicts_with_all = ["graph", "no_names"])]
    pub(super) json: bool,

    /// Print the tree as a Graphviz DOT graph instead of the checksum line.
    #[arg(short = 'g', conflicts_with = "check")]
    pub(super) graph: bool,

    /// Print only the digest, without the name (as C++ mtsum does).
    #[arg(long = "no-names", conflicts_with = "check")]
    pub(super) no_names: bool,

    /// Read checksum lines from the PATHs and verify the files they list.
    #[arg(short = 'c', long)]
    pub(super) check: bool,

    /// With -c: do not print OK for each verified file (with --audit and --compare: no ok
    /// lines).
    #[arg(long, requires = "verify", overrides_with_all = ["status", "warn"])]
    pub(super) quiet: bool,

    /// With -c: print nothing; the exit status tells.
    #[arg(long, requires = "check", overrides_with_all = ["quiet", "warn"], conflicts_with = "json")]
    pub(super) status: bool,

    /// With -c: improperly formatted lines fail the check.
    #[arg(long, requires = "check")]
    pub(super) strict: bool,

    /// With -c: warn about improperly formatted lines.
    #[arg(short = 'w', long, requires = "check", overrides_with_all = ["quiet", "status"])]
    pub(super) warn: bool,

    /// With -c: do not fail or report listed files that are missing.
    #[arg(long = "ignore-missing", requires = "check")]
    pub(super) ignore_missing: bool,

    /// Show a progress bar on stderr at once, even when it is not a terminal, and leave its
    /// last state there however short the run.
    #[arg(long, overrides_with = "no_progress")]
    pub(super) progress: bool,

    /// Never show a progress bar (by default it shows on a terminal, after a second).
    #[arg(long = "no-progress", overrides_with = "progress")]
    pub(super) no_progress: bool,

    /// Print the time and throughput of every input (with -c: of every file checked) on
    /// stderr.
    #[arg(long)]
    pub(super) benchmark: bool,

    /// Also print the algorithm, processors, every input's size, and skipped files on stderr
    /// (with -c: the algorithm and layout of the lines, and every checked file's size).
    #[arg(long)]
    pub(super) verbose: bool,

    /// Read files with O_DIRECT, around the page cache (for files larger than memory); where
    /// the file system refuses it, read them uncached or normally (--verbose says so).
    #[arg(long, conflicts_with = "mmap")]
    pub(super) direct: bool,

    /// Hash files straight from memory maps instead of reading them (saves a copy on cached
    /// files; a file truncated meanwhile is reported as changed).
    #[arg(long)]
    pub(super) mmap: bool,

    /// Remote objects: range GETs in flight at once, and ranges of 8 MiB held ahead of the
    /// hashing (memory: about N x 8 MiB of ranges, more for the jobs a tree reads at once) [default: 16].
    #[arg(long, value_name = "N", value_parser = parse_connections)]
    pub(super) connections: Option<NonZeroUsize>,

    /// The S3 API endpoint for s3:// operands (MinIO, Ceph, R2, GCS ...) [default:
    /// $AWS_ENDPOINT_URL, the profile's endpoint_url, else AWS].
    #[arg(long = "endpoint-url", value_name = "URL")]
    pub(super) endpoint_url: Option<String>,

    /// Send unsigned requests to S3 (public buckets), as the AWS CLI's --no-sign-request.
    #[arg(long = "no-sign-request")]
    pub(super) no_sign_request: bool,

    /// The profile of ~/.aws/config and ~/.aws/credentials to take credentials, region and
    /// endpoint from [default: $AWS_PROFILE, else default].
    #[arg(long, value_name = "NAME")]
    pub(super) profile: Option<String>,

    /// The certificate authorities (PEM) to check https:// servers against, instead of the
    /// system's, as the AWS CLI's --ca-bundle [default: $AWS_CA_BUNDLE, the profile's
    /// ca_bundle].
    #[arg(long = "ca-bundle", value_name = "FILE")]
    pub(super) ca_bundle: Option<PathBuf>,

    /// S3 URLs: path (ENDPOINT/BUCKET/KEY) or virtual (BUCKET.ENDPOINT/KEY) [default:
    /// virtual on AWS, path with --endpoint-url].
    #[arg(long = "addressing-style", value_name = "STYLE", value_parser = ["auto", "path", "virtual"])]
    pub(super) addressing_style: Option<String>,

    /// Audit the files: record the digest, size and mtime of files without a record, and
    /// print STATUS  NAME for the others, STATUS one of ok, corrupt, repaired, modified, new,
    /// missing, changed, unreadable; a summary on stderr. Exit status 1 for corrupt or
    /// unreadable files. Records live in the extended attribute user.mtsum unless --manifest
    /// or --db is given; new records are plain blake3 unless -a/-t say otherwise.
    #[arg(long, conflicts_with_all = ["tag", "zero", "graph", "no_names", "benchmark"])]
    pub(super) audit: bool,

    /// Compare the tree at the first PATH (a directory) with the one at the second (an
    /// s3://BUCKET/PREFIX/ or a directory): one line STATUS  NAME per file, STATUS one of ok,
    /// differs, only-local, only-remote, unverified (nothing the store reports vouches for
    /// the bytes), unreadable; a summary on stderr. Objects are checked against the values the
    /// store reports (a checksum, the ETag with its part size), reading the local files only;
    /// two directories are hashed alike (-t plain -a blake3 unless -t/-a say). Exit status 1
    /// if anything is not ok.
    #[arg(long, conflicts_with_all = ["tag", "zero", "graph", "no_names", "base64", "benchmark"])]
    pub(super) compare: bool,

    /// With --compare: report only what the first tree holds and the second lacks or holds
    /// otherwise, not the names only the second has.
    #[arg(long = "one-way", requires = "compare")]
    pub(super) one_way: bool,

    /// With --compare: take files of equal size for equal, reading nothing.
    #[arg(long = "size-only", requires = "compare")]
    pub(super) size_only: bool,

    /// With --compare: read the bytes of the objects no stored value vouches for, instead of
    /// calling them unverified; =all reads every object's bytes, trusting no stored value.
    #[arg(long = "read-remote", value_name = "all", requires = "compare", num_args = 0..=1, require_equals = true, default_missing_value = "unverified", value_parser = ["unverified", "all"])]
    pub(super) read_remote: Option<String>,

    /// With --audit: keep the records in this manifest file instead of extended attributes.
    #[arg(long, value_name = "FILE", requires = "audit")]
    pub(super) manifest: Option<PathBuf>,

    /// With --audit: keep the records in this SQLite database (any number of trees; progress
    /// committed as the audit goes; two audits of one database are refused).
    #[arg(
        long,
        value_name = "FILE",
        requires = "records",
        conflicts_with = "manifest"
    )]
    pub(super) db: Option<PathBuf>,

    /// Repair the corrupt FILE from a copy (--from), leaf by leaf as the database's leaf
    /// digests locate the damage; every leaf of the copy is checked before a byte is
    /// written, nothing is written if one is bad. Needs --db.
    #[arg(long, value_name = "FILE", requires_all = ["from", "db"], conflicts_with_all = ["check", "export", "import", "forget", "update", "fix", "migrate", "json"])]
    pub(super) repair: Option<PathBuf>,

    /// With --repair: the copy to take the damaged ranges from.
    #[arg(long, value_name = "COPY", requires = "repair")]
    pub(super) from: Option<PathBuf>,

    /// With --audit --db: repair corrupt files from the copies in DIR, which mirrors each
    /// PATH (DIR/x for PATH/x).
    #[arg(long = "repair-from", value_name = "DIR", requires_all = ["audit", "db"])]
    pub(super) repair_from: Option<PathBuf>,

    /// With --audit: refresh the records of modified files, drop those of missing files.
    #[arg(long, requires = "audit")]
    pub(super) update: bool,

    /// With --audit: accept the content of corrupt files as it is now (and replace damaged
    /// records).
    #[arg(long, requires = "audit")]
    pub(super) fix: bool,

    /// With --audit: remove the records of the files (below the paths, with a manifest)
    /// instead of auditing them.
    #[arg(long, requires = "audit", conflicts_with_all = ["update", "fix"])]
    pub(super) forget: bool,

    /// With --audit: write the records of the --db or --manifest store to FILE (- for
    /// standard output) as a manifest, or with --export-as sums as tagged checksum lines
    /// for -c; audit nothing.
    #[arg(long, value_name = "FILE", requires = "audit", conflicts_with_all = ["update", "fix", "forget", "import"])]
    pub(super) export: Option<PathBuf>,

    /// With --export: manifest [default] or sums.
    #[arg(long = "export-as", value_name = "FORMAT", requires = "export", value_parser = ["manifest", "sums"])]
    pub(super) export_as: Option<String>,

    /// With --audit: read the records of a manifest or of a sum file (whose files get the
    /// size and mtime they have now; untagged lines need -t, -t plain for sha256sum files)
    /// into the store; audit nothing.
    #[arg(long, value_name = "FILE", requires = "audit", conflicts_with_all = ["update", "fix", "forget"])]
    pub(super) import: Option<PathBuf>,

    /// With --audit: audit only files not verified within DURATION (90s, 12h, 30d); with
    /// --db or extended attributes (which then carry the time), not --manifest. The others
    /// get no line; the summary counts them as not due.
    #[arg(long = "max-age", value_name = "DURATION", requires = "audit", value_parser = audit::parse_duration)]
    pub(super) max_age: Option<Duration>,

    /// With --audit: stop handing out files after DURATION, least recently verified first,
    /// so that the next run goes on where this one stopped; not with --manifest.
    #[arg(long = "time-budget", value_name = "DURATION", requires = "audit", value_parser = audit::parse_duration)]
    pub(super) time_budget: Option<Duration>,

    /// With --audit: files that check out and whose record has another algorithm or layout
    /// than -a/-t get a new record with those, computed from the same read.
    #[arg(long, requires = "audit")]
    pub(super) migrate: bool,

    /// With --audit: files read at once [default: -p, else the number of cores].
    #[arg(long, value_name = "N", requires = "audit", value_parser = parse_readers)]
    pub(super) readers: Option<NonZeroUsize>,

    /// With --audit: read at most RATE bytes per second on average (20M, 100M: binary
    /// units).
    #[arg(long = "limit-rate", value_name = "RATE", requires = "audit", value_parser = audit::parse_rate)]
    pub(super) limit_rate: Option<u64>,

    /// With --audit: the readers' I/O priority, as ionice names it: idle [default: only when
    /// no one else wants the disk], best-effort, best-effort:0 to 7, none (unchanged).
    #[arg(long = "io-priority", value_name = "CLASS", requires = "records")]
    pub(super) io_priority: Option<IoPriority>,

    /// With --audit: report what would be done, write no record.
    #[arg(long = "dry-run", requires = "records")]
    pub(super) dry_run: bool,

    /// With --audit: modification times closer than this are equal: ns [default], 100ns
    /// (SMB), us, ms, s, 2s (FAT).
    #[arg(long = "mtime-resolution", value_name = "RES", requires = "audit")]
    pub(super) mtime_resolution: Option<Resolution>,

    /// Print at most N byte ranges START-END/SIZE of the file (SIZE: its length), about equal
    /// and on subtree boundaries, to hash apart with --range and join with --combine.
    #[arg(long, value_name = "N", value_parser = parse_ranges, conflicts_with_all = ["check", "audit", "recursive", "graph", "json", "tag", "zero", "no_names", "base64"])]
    pub(super) plan: Option<NonZeroUsize>,

    /// Hash bytes START-END of the file, a line of --plan, and print a partial line; a file
    /// whose length is no longer SIZE has changed and fails.
    #[arg(long, value_name = "START-END/SIZE", value_parser = PlannedRange::parse, conflicts_with_all = ["check", "audit", "recursive", "graph", "json", "tag", "zero", "no_names", "base64"])]
    pub(super) range: Option<PlannedRange>,

    /// Read partial lines (of --range) from the PATHs and print the file's checksum line.
    /// The partials say what the file was hashed as: -a, -t, -l, --part-size are refused.
    // One rule for the three steps: an option that would change nothing is refused rather than
    // ignored, so that `--combine -t merkle` is not taken for a check that the partials are
    // merkle's. The printing options of hash mode that a root line has are allowed.
    #[arg(long, conflicts_with_all = ["check", "audit", "recursive", "graph", "json", "algorithm", "tree", "leaf_size", "part_size"])]
    pub(super) combine: bool,

    /// Print, without reading any object's bytes, a sum file of the values the store keeps
    /// for each object below the s3://BUCKET/PREFIX/ operands (its ETag and checksums, with
    /// the part size the store tells), names relative to the prefix: `mtsum -c` in a local
    /// copy checks it. A value that checks nothing (an SSE-KMS ETag) is a # comment. With
    /// --json, one object per value: path, url, size, source, layout, leaf_size, algorithm,
    /// expected (or value and why; path, url and error for an object the store refused).
    #[arg(long, conflicts_with_all = ["check", "audit", "recursive", "graph", "tag", "no_names", "base64", "algorithm", "tree", "leaf_size", "part_size", "plan", "range", "combine"])]
    pub(super) stored: bool,

    /// With --stored and --compare: ask the store each part's size (a HEAD per part) of
    /// every object of 4 parts or more whose first part is over 5 MiB, where parts of
    /// different sizes in the middle would go unseen; elsewhere the first and last parts tell.
    /// (--compare asks them anyway of such an object whose value did not match.)
    #[arg(long = "every-part")]
    pub(super) every_part: bool,

    /// Print the version and the SIMD kernels this CPU runs (within MTSUM_SIMD).
    #[arg(short = 'V', long = "version", visible_short_alias = 'v', action = clap::ArgAction::Version)]
    pub(super) version: (),

    /// Print the man page or a shell completion, made from these options, and exit.
    #[arg(long, value_name = "KIND", exclusive = true)]
    pub(super) generate: Option<GenerateKind>,
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
