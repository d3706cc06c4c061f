//! Hash mode: walk the inputs, hash them on the engine, print one result each in order.

use std::io;

use mtsum::engine::{FileDigest, Request, Task};
use mtsum::layout::Encoding;
use mtsum::source::{InputError, Target};
use mtsum::walk::{Recursion, Walked, walk};
use mtsum::{graph, report, sumfile};

use crate::Status;
use crate::args::{Config, Output};
use crate::progress::{Progress, totals};

/// What comes back from the engine for each item of the walk.
enum Item {
    Input(Target),
    Skipped(Walked),
    Failed(Vec<u8>, InputError),
}

/// Prints results as they come, above the progress bar.
struct Printer<'a> {
    config: &'a Config,
    request: &'a Request,
    output: Output,
    /// `--base64`, or the layout's own encoding.
    encoding: Option<Encoding>,
    progress: &'a Progress,
    stdout: io::StdoutLock<'static>,
    status: Status,
    files_done: u64,
    files_total: Option<u64>,
}

pub fn run(
    config: &Config,
    request: &Request,
    recursion: Recursion,
    output: Output,
    encoding: Option<Encoding>,
) -> Status {
    if config.verbose {
        eprintln!("Algorithm: {}", request.algorithm);
        eprintln!("Layout: {}", request.layout);
        eprintln!("Number of processors: {}", config.engine.threads());
        // Which SIMD kernel hashes several leaves or files at once, if the algorithm has one
        // on this CPU (one big file with `plain` is still hashed as one stream).
        let kernel = mtsum::lanes::Kernel::multi_buffer(request.algorithm);
        eprintln!(
            "Multi-buffer kernel: {}",
            kernel.map_or("none", |k| k.name())
        );
    }
    let walked = walk(config.targets.iter().cloned(), recursion);
    // The bar needs totals for an ETA, so a run that shows one walks the tree first; a tree
    // of millions of files otherwise streams into the engine as it is walked.
    let (progress, files_total, walked): (_, _, Box<dyn Iterator<Item = Walked>>) =
        if config.progress.enabled() {
            let items: Vec<Walked> = walked.collect();
            let (bytes, files) = totals(&items);
            let progress = Progress::start(config.progress, Some(bytes));
            (progress, Some(files), Box::new(items.into_iter()))
        } else {
            (
                Progress::start(config.progress, None),
                None,
                Box::new(walked),
            )
        };
    let engine = config.engine.clone().with_progress(progress.counter());
    let mut printer = Printer {
        config,
        request,
        output,
        encoding,
        progress: &progress,
        stdout: io::stdout().lock(),
        status: Status::Ok,
        files_done: 0,
        files_total,
    };
    let tasks = walked.map(|walked| match walked {
        Walked::Input(target) => Task::hash(target.clone(), *request, Item::Input(target)),
        Walked::Error { path, error } => {
            let name = report::name_bytes(&Target::Path(path)).to_vec();
            Task::pass(Item::Failed(name, error))
        }
        skipped @ Walked::Skipped { .. } => Task::pass(Item::Skipped(skipped)),
    });
    engine.run(tasks, |item, result| printer.on(item, result));
    let status = printer.status;
    progress.finish();
    status
}

impl Printer<'_> {
    fn on(&mut self, item: Item, result: Option<Result<FileDigest, InputError>>) {
        match (item, result) {
            (Item::Input(target), Some(Ok(digest))) => self.digest(&target, &digest),
            (Item::Input(target), Some(Err(error))) => {
                self.error(report::name_bytes(&target), &error)
            }
            (Item::Failed(name, error), _) => self.error(&name, &error),
            (Item::Skipped(Walked::Skipped { path, reason }), _) => {
                if self.config.verbose {
                    let name = report::name_bytes(&Target::Path(path)).to_vec();
                    self.stderr(&report::error_line(&name, &reason));
                }
                return;
            }
            (Item::Input(_) | Item::Skipped(_), _) => unreachable!("inputs are hashed"),
        }
        self.files_done += 1;
        self.progress.files(self.files_done, self.files_total);
    }

    fn digest(&mut self, target: &Target, digest: &FileDigest) {
        let name = report::name_bytes(target);
        let mut digest = digest.clone();
        if let Some(encoding) = self.encoding {
            digest.root = digest.root.with_encoding(encoding);
        }
        let digest = &digest;
        let (layout, alg) = (self.request.layout, self.request.algorithm);
        let line = match self.output {
            Output::Graph => {
                let leaves = digest.leaves.as_deref().expect("leaves kept for -g");
                graph::dot(self.request, digest.size, leaves, &target.display_name()).into_bytes()
            }
            Output::BareDigest => format!("{}\n", digest.root).into_bytes(),
            Output::Json => sumfile::json_line(name, layout, alg, digest),
            Output::Line(format, terminator) => {
                sumfile::format_line(format, terminator, layout, alg, &digest.root, name)
            }
        };
        self.stdout(&line);
        if self.config.verbose {
            if let Some(fallback) = &digest.fallback {
                self.stderr(&report::error_line(name, fallback));
            }
            self.stderr(format!("File size: {} bytes\n", digest.size).as_bytes());
        }
        if self.config.verbose || self.config.benchmark {
            let timing = report::timing_line(digest.size, digest.elapsed);
            self.stderr(format!("{timing}\n").as_bytes());
        }
    }

    /// An input that failed: `mtsum: NAME: cause` on stderr, and with `--json` an error
    /// object on stdout too, so that a script reading the JSON sees every input.
    fn error(&mut self, name: &[u8], error: &InputError) {
        self.status = Status::InputFailed;
        self.stderr(&report::error_line(name, error));
        if self.output == Output::Json {
            self.stdout(&sumfile::json_error_line(name, error));
        }
    }

    /// Writes one whole result; a failing stdout (a full disk) ends the run, as it would end
    /// every later line too.
    fn stdout(&mut self, bytes: &[u8]) {
        if let Err(e) = self.progress.write(&mut self.stdout, bytes) {
            eprintln!("mtsum: standard output: {e}");
            std::process::exit(Status::InputFailed as i32);
        }
    }

    fn stderr(&self, bytes: &[u8]) {
        let _ = self.progress.write(&mut io::stderr(), bytes);
    }
}
