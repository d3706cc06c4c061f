//! Hash mode: walk the inputs, hash them on the engine, print one result each in order.

use std::os::unix::ffi::OsStringExt;

use mtsum::engine::{FileDigest, Sink, Task};
use mtsum::layout::{Encoding, Layout, Root};
use mtsum::source::{InputError, Target};
use mtsum::walk::{Walked, walk};
use mtsum::{Algorithm, graph, json, report, sumfile};

use crate::args::{Common, HashSettings, Output};
use crate::progress::totals;
use crate::session::{self, Printer, Status};

/// What comes back from the engine for each item of the walk.
enum Item {
    Input(Target),
    Skipped(Walked),
    Failed(Vec<u8>, InputError),
}

pub fn run(common: &Common, settings: &HashSettings) -> Status {
    let request = &settings.request;
    let (alg, layout) = (request.algorithm, request.layout);
    let settings_lines = common
        .figures
        .settings(alg, layout, common.engine.threads());
    session::tell(&settings_lines);
    let mut walked: Box<dyn Iterator<Item = Walked>> =
        Box::new(walk(common.targets.iter().cloned(), settings.recursion));
    // The bar needs totals for an ETA, so a run that shows one walks the tree first; a tree
    // of millions of files otherwise streams into the engine as it is walked.
    let (engine, printer) = session::start(common, || {
        let items: Vec<Walked> = walked.by_ref().collect();
        let counts = totals(&items);
        walked = Box::new(items.into_iter());
        counts
    });
    let results = Results {
        common,
        settings,
        printer: &printer,
    };
    let tasks = walked
        .take_while(|_| !printer.broken())
        .map(|walked| match walked {
            Walked::Input(target) => {
                Task::hash(target.clone(), request.clone(), Item::Input(target))
            }
            Walked::Error { path, error } => {
                Task::pass(Item::Failed(path.into_os_string().into_vec(), error))
            }
            skipped @ Walked::Skipped { .. } => Task::pass(Item::Skipped(skipped)),
        });
    engine.run_to(tasks, results);
    printer.finish()
}

/// `root` in the encoding `--base64` asks for (`None`: the layout's own).
pub fn encoded(root: Root, encoding: Option<Encoding>) -> Root {
    encoding.map_or(root, |e| root.with_encoding(e))
}

/// The line of a root as hash mode and `--combine` print it: a checksum line, or the value
/// alone (`--no-names`, [`sumfile::Format::Bare`]).
///
/// # Panics
/// For the outputs that are not one line per root (`--json`, `-g`).
pub fn root_line(
    output: Output,
    layout: Layout,
    alg: Algorithm,
    root: &Root,
    name: &[u8],
) -> Vec<u8> {
    match output {
        Output::Line(format, terminator) => {
            sumfile::format_line(format, terminator, layout, alg, root, name)
        }
        Output::Json | Output::Graph => unreachable!("not a root line"),
    }
}

/// Turns what the engine hands back into lines, in the order of the inputs.
struct Results<'a> {
    common: &'a Common,
    settings: &'a HashSettings,
    printer: &'a Printer,
}

impl Sink<Item> for Results<'_> {
    fn take(&mut self, item: Item, result: Option<Result<FileDigest, InputError>>) {
        self.on(item, result);
    }

    fn idle(&mut self) {
        self.printer.write_gathered();
    }
}

impl Results<'_> {
    fn on(&self, item: Item, result: Option<Result<FileDigest, InputError>>) {
        match (item, result) {
            (Item::Input(target), Some(Ok(digest))) => self.digest(&target, &digest),
            (Item::Input(target), Some(Err(error))) => {
                self.error(report::name_bytes(&target), &error)
            }
            (Item::Failed(name, error), _) => self.error(&name, &error),
            (Item::Skipped(Walked::Skipped { path, reason }), _) => {
                return self.printer.skipped(&path, &reason);
            }
            (Item::Input(_) | Item::Skipped(_), _) => unreachable!("inputs are hashed"),
        }
        self.printer.file_done();
    }

    fn digest(&self, target: &Target, digest: &FileDigest) {
        let name = report::name_bytes(target);
        let mut digest = digest.clone();
        digest.root = encoded(digest.root, self.settings.encoding);
        let digest = &digest;
        let request = &self.settings.request;
        let (layout, alg) = (request.layout, request.algorithm);
        let line = match self.settings.output {
            Output::Graph => {
                let leaves = digest.leaves.as_deref().expect("leaves kept for -g");
                graph::dot(request, digest.size, leaves, &target.display_name()).into_bytes()
            }
            Output::Json => json::digest(name, layout, alg, digest),
            output => root_line(output, layout, alg, &digest.root, name),
        };
        self.printer.print(&line);
        let figures = self.common.figures.of_input(name, digest);
        if !figures.is_empty() {
            self.printer.message(&figures);
        }
    }

    /// An input that failed: `mtsum: NAME: cause` on stderr, and with `--json` an error
    /// object on stdout too, so that a script reading the JSON sees every input.
    fn error(&self, name: &[u8], error: &InputError) {
        self.printer.fail();
        self.printer.message(&report::error_line(name, error));
        if self.settings.output == Output::Json {
            self.printer.print(&json::error(name, error));
        }
    }
}
