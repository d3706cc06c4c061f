//! From the parsed flags to the settings: the checks that need more than one flag (a layout
//! and its algorithm, URLs, the operands of `--stored` and `--compare`), then the settings of
//! the one mode the flags ask for, each in its own `from_args`.

use mtsum::audit::transfer::TransferFormat;
use mtsum::audit::{self, Operation, Store};
use mtsum::check::{self, CheckOptions, Untagged, Verbosity};
use mtsum::compare;
use mtsum::engine::{Engine, Request};
use mtsum::layout::Encoding;
use mtsum::report::Figures;
use mtsum::source::{ReadMode, Target, remote};
use mtsum::sumfile::{Format, Terminator};
use mtsum::walk::Recursion;
use mtsum::{Layout, LeafSize};

use super::parser::Args;
use super::settings::{
    AuditSettings, CheckSettings, Common, CompareSettings, Config, HashSettings, Mode, Output,
    RangeSettings, RangeStep, StoredSettings, Transfer, When,
};
use super::values::PartSizeArg;

impl Config {
    pub(super) fn from_args(args: Args) -> Result<Config, String> {
        // Checked in every mode, so that a wrong -t/-l is an error whatever else is asked.
        let layout = args.layout()?;
        if args.every_part && !(args.stored || args.compare) {
            return Err("--every-part applies to --stored and --compare".into());
        }
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
                json: args.json,
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
            // An audit record keeps one part size, and a range's partial line names its
            // layout by one too.
            Some(PartSizeArg::Parts(_))
                if self.audit
                    || self.repair.is_some()
                    || self.export.is_some()
                    || self.import.is_some()
                    || self.plan.is_some()
                    || self.range.is_some() =>
            {
                return Err(
                    "--part-size with a list of parts applies to hashing, -c and --compare".into(),
                );
            }
            Some(PartSizeArg::Parts(_)) | Some(PartSizeArg::Auto) | None => None,
        };
        let size = self.leaf_size.or(part);
        let layout = match self.part_size {
            Some(PartSizeArg::Parts(parts)) => Layout::S3Parts(parts),
            _ => Layout::from_name(tree, size).map_err(|e| e.to_string())?,
        };
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
            every_part: self.every_part,
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

/// Whether untagged lines (`HEX  NAME`) are read with a layout the user did not choose, and
/// not `plain`: lines written by `sha256sum` then read as another layout's values, which
/// `-c` and `--import` say.
fn untagged_layout_unchosen(args: &Args, layout: Layout) -> bool {
    args.tree.is_none() && layout != Layout::Plain
}
