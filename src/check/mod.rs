//! `-c`: verify the files listed in sum files, with the messages and exit status of
//! coreutils' `sha256sum -c`, so that scripts written for one work with the other.
//!
//! The lines of all sum files become one stream of [`Task`]s for the [`Engine`], so files are
//! verified in parallel, while verdicts come out in the order of the lines. Lines that are not
//! checksum lines, and the end of each sum file, travel in the same stream as pass-through
//! tasks: each sum file's summary is printed right after its last verdict, as coreutils does.
//!
//! Standard input is read once, front to back, as coreutils reads it: the first use (a sum
//! file `-`, or a line naming `-`) gets its bytes, and a later use finds it at its end
//! ([`source::stdin`], which the engine claims for a line naming `-` as
//! it takes the line, in order, so that a sum file `-` read later gets nothing rather than
//! racing the worker that hashes it).

use std::cell::Cell;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::num::NonZeroUsize;
use std::os::unix::ffi::OsStringExt;

use crate::algorithm::Algorithm;
use crate::engine::{Engine, FileDigest, Request, Sink, Task};
use crate::json;
use crate::layout::{Layout, Root};
use crate::report::{self, Figures, error_line};
use crate::source::{self, InputError, Target};
use crate::sumfile::{self, Parser, Terminator};
use crate::tries::Tries;

pub mod verdict;

pub use verdict::{LineStatus, LineVerdict};

/// How much `-c` prints. [`Output::Json`] has every line whatever it says; the warnings
/// on `err` follow it in both outputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verbosity {
    /// A verdict for every line (`NAME: OK` too), and the warnings.
    #[default]
    All,
    /// `--quiet`: no `OK` lines.
    Quiet,
    /// `--status`: nothing on stdout and no warnings; only the exit status says it.
    Status,
}

/// How `-c` writes its verdicts on stdout; stderr gets the same messages either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Output {
    /// What `sha256sum -c` prints: `NAME: OK`, `NAME: FAILED`, `NAME: FAILED open or read`.
    #[default]
    Text,
    /// `--json`: an object for every checksum line and every improperly formatted line, in
    /// the order of the lines, and a summary object after each sum file
    /// ([`json::check_line`], [`json::improper_line`], [`json::check_summary`]). Scripts get
    /// every line whatever `--quiet` and `--ignore-missing` say, as an audit's JSON has every
    /// file: those options change only the messages and the exit status.
    Json,
}

/// What untagged lines (`HEX  NAME`) are checked with; tagged lines say it themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Untagged {
    pub layout: Layout,
    /// `None`: chosen by the digest's length, SHA-256 or MD5 where the length is shared
    /// (with BLAKE3 and XXH128), as `sha256sum` and `md5sum` files are the common case; never
    /// a CRC.
    pub algorithm: Option<Algorithm>,
    /// `--part-size auto`: an untagged line is tried with each size the layout guesses
    /// ([`Layout::size_guesses`]: S3's part sizes), all in one read of the file, and the
    /// verdict says which matched.
    pub auto_part_size: bool,
}

impl Untagged {
    /// The layout and algorithm for an untagged digest of `len` bytes; `None` when no
    /// algorithm fits, which makes the line improperly formatted.
    pub fn spec(&self, len: usize) -> Option<(Layout, Algorithm)> {
        let alg = match self.algorithm {
            Some(alg) => alg,
            None => {
                // A CRC shares its length with XXH3 (CRC-64) or another CRC (CRC-32, CRC-32C):
                // it is checked only when asked for with -a or a tag.
                let fits: Vec<Algorithm> = sumfile::algorithms_with_digest_len(len)
                    .into_iter()
                    .filter(|a| !a.is_crc())
                    .collect();
                [Algorithm::Sha256, Algorithm::Md5]
                    .into_iter()
                    .find(|a| fits.contains(a))
                    .or_else(|| (fits.len() == 1).then(|| fits[0]))?
            }
        };
        (alg.digest_len() == len).then_some((self.layout, alg))
    }

    /// For an untagged value of `len` bytes that only CRCs have (which are checked only when
    /// `-a` names one, see [`Untagged::spec`]): the `-a` choices it may be, `crc32 or crc32c`.
    fn crc_hint(&self, len: usize) -> Option<String> {
        let fits = sumfile::algorithms_with_digest_len(len);
        let only_crcs = !fits.is_empty() && fits.iter().all(|a| a.is_crc());
        (self.algorithm.is_none() && only_crcs).then(|| {
            let names: Vec<&str> = fits.iter().map(|a| a.name()).collect();
            names.join(" or ")
        })
    }

    /// The word `--warn` uses for a checksum line: `SHA256`, `MTSUM-SHA256`.
    fn tag(&self) -> String {
        let alg = self.algorithm.unwrap_or(self.layout.default_algorithm());
        sumfile::tag(self.layout, alg)
    }
}

/// Everything `-c` needs besides the sum files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckOptions {
    pub untagged: Untagged,
    /// `--ignore-missing`: a listed file that does not exist is neither reported nor failed.
    pub ignore_missing: bool,
    /// `--strict`: an improperly formatted line fails the check.
    pub strict: bool,
    /// `--warn`: say which lines are improperly formatted.
    pub warn: bool,
    pub verbosity: Verbosity,
    pub output: Output,
    /// `--verbose`, `--benchmark`: for every file checked, its size and time on `err`, as
    /// hash mode prints them for every input (whatever the verbosity: they were asked for);
    /// the settings before the first line and again when a line has others.
    pub figures: Figures,
    /// The untagged layout is a default the user did not choose: when every untagged line
    /// fails, say which layout they were checked with, since `sha256sum` files need
    /// `-t plain`.
    pub hint_untagged_layout: bool,
}

/// Verifies every file listed in `sum_files` (`Target::Stdin` for `-`), printing verdicts to
/// `out` and diagnostics to `err`. Returns whether everything checked out: every sum file had
/// a properly formatted line, no digest differed, no listed file was unreadable, and (with
/// `--strict`) no line was improper. A write to `out` or `err` that fails ends the check
/// (no more lines are read; the files under way are finished unreported) with that error.
pub fn check(
    engine: &Engine,
    sum_files: Vec<Target>,
    options: &CheckOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<bool> {
    let names: Vec<Vec<u8>> = sum_files
        .iter()
        .map(|t| report::name_bytes(t).to_vec())
        .collect();
    let out_failed = Cell::new(false);
    let lines = Lines {
        files: sum_files.into_iter().enumerate().collect(),
        current: None,
        parser: Parser::new(Terminator::Newline),
        untagged: options.untagged,
        queue: VecDeque::new(),
        paused: false,
        out_failed: &out_failed,
    };
    let mut verdicts = Verdicts {
        options,
        names: &names,
        tally: Tally::default(),
        all_ok: true,
        out,
        err,
        io_error: None,
        out_failed: &out_failed,
        untagged_mismatches: 0,
        untagged_multipart_mismatches: 0,
        untagged_matches: 0,
        untagged_implied: [(0, 0); IMPLIED_NOTES.len()],
        processors: engine.threads(),
        settings_shown: None,
    };
    engine.run_to(lines, &mut verdicts);
    if let Some(e) = verdicts.io_error {
        return Err(e);
    }
    // Sums of another layout fail on every line; a corrupted file fails alone.
    let n = verdicts.untagged_mismatches;
    let all_failed = n > 0 && verdicts.untagged_matches == 0;
    let layout_hint = options.hint_untagged_layout && all_failed;
    if layout_hint && options.verbosity != Verbosity::Status {
        let layout = options.untagged.layout;
        let (lines, were) = if n == 1 {
            ("line", "was")
        } else {
            ("lines", "were")
        };
        // A part count after the value (`…-3`) is S3's: -t plain would fail it too.
        let advice = match verdicts.untagged_multipart_mismatches {
            0 => {
                "use -t plain for sums written by sha256sum or md5sum (with -a blake3 for \
                  b3sum's, -a xxh128 for xxhsum -H128's)"
            }
            _ => {
                "use -t s3 for S3 values (a part count after a dash), with --part-size auto \
                  if their part size is not known"
            }
        };
        writeln!(
            verdicts.err,
            "mtsum: note: untagged {lines} {were} checked with the {layout} layout; {advice}"
        )?;
    }
    for (implied, (failed, ok)) in IMPLIED_NOTES.iter().zip(verdicts.untagged_implied) {
        let layout = options.untagged.layout;
        // The layout's hint already names the -a to add with -t plain.
        let other_fits = match implied.other {
            Some(other) => !layout_hint && layout.check_algorithm(other).is_ok(),
            None => true,
        };
        if failed > 0 && ok == 0 && other_fits && options.verbosity != Verbosity::Status {
            writeln!(verdicts.err, "mtsum: note: {}", implied.note)?;
        }
    }
    Ok(verdicts.all_ok)
}

/// An algorithm that the length of an untagged value implies although another one has values
/// of that length too, and what the note says when every such value fails: the lines of
/// `b3sum`, `xxhsum -H128` and `xxhsum` (XXH64) otherwise fail like corrupt files, whatever
/// `-t` says, with nothing to tell the user that `-a` is missing.
struct ImpliedNote {
    implied: Algorithm,
    /// The other algorithm the note suggests, if mtsum has it: no note where the layout does
    /// not take it (`-t s3` has no BLAKE3).
    other: Option<Algorithm>,
    note: &'static str,
}

const IMPLIED_NOTES: [ImpliedNote; 3] = [
    ImpliedNote {
        implied: Algorithm::Xxh3,
        other: None,
        note: "untagged 64-bit values were checked as XXH3; xxhsum writes XXH64 by default, \
               which mtsum does not compute (xxhsum -H3 writes XXH3)",
    },
    ImpliedNote {
        implied: Algorithm::Sha256,
        other: Some(Algorithm::Blake3),
        note: "untagged 256-bit values were checked as SHA-256; for sums written by b3sum, \
               add -a blake3",
    },
    ImpliedNote {
        implied: Algorithm::Md5,
        other: Some(Algorithm::Xxh128),
        note: "untagged 128-bit values were checked as MD5; for sums written by xxhsum -H128, \
               add -a xxh128",
    },
];

/// How a sum file named `name` on the command line (`-`: standard input; a file named `-`
/// is `./-` there) is named in messages.
fn message_name(name: &[u8]) -> &[u8] {
    match name {
        b"-" => b"standard input",
        name => name,
    }
}

/// What travels through the engine for each line of a sum file.
enum Item {
    /// A checksum line: `name` is hashed and compared with `expected`.
    Line {
        /// Where the line is: its sum file, and its number there (1-based).
        file: usize,
        line: u64,
        name: Vec<u8>,
        /// Boxed: a root is large (a digest, and for S3 the digest of its one part).
        expected: Box<Root>,
        /// The layout and algorithm the line is checked with.
        spec: (Layout, Algorithm),
        tagged: bool,
        /// With `--part-size auto`: the part sizes the read tries (`spec` is the first).
        tries: Option<Box<Tries>>,
    },
    /// Line `line` (1-based) of sum file `file` is not a checksum line; `crc`: it would be
    /// one of these CRCs, named with `-a` ([`Untagged::crc_hint`]).
    Improper {
        file: usize,
        line: u64,
        crc: Option<String>,
    },
    /// Sum file `file` could not be opened (`error`), or failed while being read (`None`:
    /// coreutils then says only `read error`).
    Unreadable {
        file: usize,
        error: Option<io::Error>,
    },
    /// The last line of sum file `file` has passed.
    End { file: usize },
}

/// The sizes to try for a line of `(layout, alg)` whose value is `expected`, for the file or
/// object `target` (none for standard input or an input that cannot be read, which is then
/// hashed once and reported as usual). An object's size takes a `HEAD`, made only for S3's
/// layout, the one that guesses sizes.
fn size_guesses(
    (layout, alg): (Layout, Algorithm),
    target: &Target,
    expected: &Root,
) -> Option<Tries> {
    let size = match target {
        Target::Url(_) if !matches!(layout, Layout::S3(_)) => return None,
        Target::Url(_) => match source::Input::open(target) {
            Ok(source::Input::Sized(object)) => object.len(),
            _ => return None,
        },
        _ => target.path().map(std::fs::metadata)?.ok()?.len(),
    };
    Tries::guessed(layout, alg, size, *expected)
}

/// A sum file being read.
struct SumFile {
    index: usize,
    reader: BufReader<File>,
    /// The start of a line whose end is still to be read.
    partial: Vec<u8>,
    /// Lines read so far.
    lines: u64,
    /// Standard input: a line naming `-` cannot be checked then.
    is_stdin: bool,
}

/// What a read of a sum file gave.
enum LineRead {
    /// A line, with its `\n` (the last one may have none).
    Line(Vec<u8>),
    /// Nothing yet: the next read would wait for the writer of a pipe.
    Wait,
    End,
}

impl SumFile {
    /// The next line, or [`LineRead::Wait`] instead of a read that would wait, unless
    /// `may_wait` (the engine has been told, [`Task::pause`]). A line of which only a part
    /// came is kept until the rest comes, with a wait between if need be.
    fn read_line(&mut self, mut may_wait: bool) -> io::Result<LineRead> {
        loop {
            if self.reader.buffer().is_empty()
                && !may_wait
                && source::read_would_wait(self.reader.get_ref())
            {
                return Ok(LineRead::Wait);
            }
            let bytes = match self.reader.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            may_wait = false;
            if bytes.is_empty() {
                return Ok(match self.partial.is_empty() {
                    true => LineRead::End,
                    false => LineRead::Line(std::mem::take(&mut self.partial)),
                });
            }
            let end = bytes.iter().position(|&b| b == b'\n');
            let len = end.map_or(bytes.len(), |i| i + 1);
            self.partial.extend_from_slice(&bytes[..len]);
            self.reader.consume(len);
            if end.is_some() {
                return Ok(LineRead::Line(std::mem::take(&mut self.partial)));
            }
        }
    }
}

/// The lines of the sum files as tasks, read one at a time as the engine asks for them.
///
/// The engine asks for tasks on the thread that prints its results, ahead of the workers:
/// while a read here waits, no verdict is printed, not even of lines checked long before. So
/// before a read or an open that would wait (a sum file written to a pipe line by line, a
/// FIFO without a writer yet), the engine gets a pause instead ([`Task::pause`]), and the
/// verdicts of the lines before are printed while the writer takes its time, as
/// `sha256sum -c` prints them. A sum file that can be read at once (a regular file, a pipe
/// that keeps up) gets none, so that its verdicts stay gathered into large writes.
struct Lines<'a> {
    files: VecDeque<(usize, Target)>,
    /// The sum file being read.
    current: Option<SumFile>,
    parser: Parser,
    untagged: Untagged,
    queue: VecDeque<Task<Item>>,
    /// The last task was a pause: the next read or open may wait.
    paused: bool,
    /// Set once writing a verdict failed ([`Verdicts::io_error`]): every later one would fail
    /// too, so no more lines are read and no more files hashed, as hash mode stops.
    out_failed: &'a Cell<bool>,
}

impl Iterator for Lines<'_> {
    type Item = Task<Item>;

    fn next(&mut self) -> Option<Task<Item>> {
        loop {
            if self.out_failed.get() {
                return None;
            }
            if let Some(task) = self.queue.pop_front() {
                return Some(task);
            }
            let may_wait = std::mem::take(&mut self.paused);
            let Some(current) = &mut self.current else {
                let (_, next) = self.files.front()?;
                if !may_wait && opening_waits(next) {
                    self.paused = true;
                    return Some(Task::pause());
                }
                let (index, target) = self.files.pop_front()?;
                match open_sum_file(&target) {
                    Ok(Some(file)) => {
                        let is_stdin = target == Target::Stdin;
                        self.current = Some(SumFile {
                            index,
                            reader: BufReader::new(file),
                            partial: Vec::new(),
                            lines: 0,
                            is_stdin,
                        });
                    }
                    Ok(None) => {
                        let file = index;
                        self.queue.push_back(Task::pass(Item::End { file }));
                    }
                    Err(error) => {
                        let file = index;
                        let error = Some(error);
                        self.queue
                            .push_back(Task::pass(Item::Unreadable { file, error }));
                        self.queue.push_back(Task::pass(Item::End { file }));
                    }
                }
                continue;
            };
            let file = current.index;
            match current.read_line(may_wait) {
                Ok(LineRead::Wait) => {
                    self.paused = true;
                    return Some(Task::pause());
                }
                Ok(LineRead::End) => {
                    self.current = None;
                    return Some(Task::pass(Item::End { file }));
                }
                Ok(LineRead::Line(line)) => {
                    current.lines += 1;
                    let (line_no, from_stdin) = (current.lines, current.is_stdin);
                    if let Some(task) = self.task(file, line_no, &line, from_stdin) {
                        return Some(task);
                    }
                }
                Err(_) => {
                    self.current = None;
                    self.queue.push_back(Task::pass(Item::End { file }));
                    let error = None;
                    return Some(Task::pass(Item::Unreadable { file, error }));
                }
            }
        }
    }
}

impl Lines<'_> {
    /// The task for one line; `None` for a blank line or a comment.
    fn task(
        &mut self,
        file: usize,
        line_no: u64,
        line: &[u8],
        from_stdin: bool,
    ) -> Option<Task<Item>> {
        let improper = || {
            Task::pass(Item::Improper {
                file,
                line: line_no,
                crc: None,
            })
        };
        let entry = match self.parser.parse_line(line) {
            Ok(None) => return None,
            Ok(Some(entry)) => entry,
            Err(_) => return Some(improper()),
        };
        let spec = entry
            .spec
            .or_else(|| self.untagged.spec(entry.expected.digest().as_bytes().len()));
        let Some((layout, alg)) = spec else {
            let crc = self
                .untagged
                .crc_hint(entry.expected.digest().as_bytes().len());
            return Some(Task::pass(Item::Improper {
                file,
                line: line_no,
                crc,
            }));
        };
        // Standard input cannot be both the sum file and a file listed in it.
        if from_stdin && entry.name == b"-" {
            return Some(improper());
        }
        let target = Target::from_arg(OsString::from_vec(entry.name.clone()));
        let tagged = entry.spec.is_some();
        let tries = match self.untagged.auto_part_size && !tagged {
            true => size_guesses((layout, alg), &target, &entry.expected),
            false => None,
        };
        let request = match &tries {
            Some(tries) => tries.request(),
            None => Request::new(layout, alg),
        };
        let item = Item::Line {
            file,
            line: line_no,
            name: entry.name,
            expected: Box::new(entry.expected),
            spec: (request.layout, alg),
            tagged,
            tries: tries.map(Box::new),
        };
        Some(Task::hash(target, request, item))
    }
}

/// Opens a sum file; `None` for standard input that a line naming `-` read before (it is
/// at its end).
fn open_sum_file(target: &Target) -> io::Result<Option<File>> {
    match target {
        Target::Stdin => source::claim_stdin_file(),
        Target::Path(p) | Target::File(p) => File::open(p).map(Some),
        Target::Url(_) => Err(io::Error::other("a sum file is read from a local file")),
    }
}

/// Whether opening the sum file `target` would wait: a FIFO waits for a writer.
fn opening_waits(target: &Target) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let path = target.path();
    path.and_then(|p| std::fs::metadata(p).ok())
        .is_some_and(|m| m.file_type().is_fifo())
}

/// Counts of one sum file, for its summary.
#[derive(Debug, Default)]
struct Tally {
    proper: u64,
    improper: u64,
    matched: u64,
    mismatched: u64,
    /// Listed files that exist but could not be read.
    unreadable: u64,
    /// Listed files that do not exist (neither reported nor failed with `--ignore-missing`).
    missing: u64,
    /// Why the sum file itself could not be read.
    failed: Option<String>,
    /// The CRCs an improper line's value may be, if it is one (said once, at the end).
    crc: Option<String>,
}

/// Prints verdicts and summaries in order, and keeps the overall result.
struct Verdicts<'a> {
    options: &'a CheckOptions,
    /// The sum files as named on the command line ([`message_name`] for messages).
    names: &'a [Vec<u8>],
    tally: Tally,
    all_ok: bool,
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    /// The first failure to write, returned by [`check`]; nothing is written after it.
    io_error: Option<io::Error>,
    /// Tells [`Lines`] that writing failed.
    out_failed: &'a Cell<bool>,
    /// Untagged lines whose digest differed or matched, for the hint about `-t`.
    untagged_mismatches: u64,
    /// Untagged lines whose digest differed and whose value has S3's part count: the hint
    /// names `-t s3` then.
    untagged_multipart_mismatches: u64,
    untagged_matches: u64,
    /// Per [`IMPLIED_NOTES`] entry, the untagged values checked with the algorithm their
    /// length implies that differed, and that matched.
    untagged_implied: [(u64, u64); IMPLIED_NOTES.len()],
    /// For the settings lines of `--verbose`.
    processors: NonZeroUsize,
    /// The layout and algorithm that the settings lines printed last name.
    settings_shown: Option<(Layout, Algorithm)>,
}

/// What hashing a line's file gave: with `--part-size auto`, under the size that matched.
struct Outcome {
    /// The layout the file was hashed with (see [`LineVerdict::layout`]).
    layout: Layout,
    matched: Result<bool, InputError>,
    digest: Option<FileDigest>,
    /// With `--part-size auto`: how many part sizes hashed the file (all in one read).
    tried: Option<usize>,
}

impl Sink<Item> for &mut Verdicts<'_> {
    fn take(&mut self, item: Item, result: Option<Result<FileDigest, InputError>>) {
        self.on(item, result);
    }

    /// Verdicts written to a buffer reach it while a later line's file blocks.
    fn idle(&mut self) {
        if self.io_error.is_none()
            && let Err(e) = self.out.flush()
        {
            self.write_failed(e);
        }
    }
}

impl Verdicts<'_> {
    fn on(&mut self, item: Item, result: Option<Result<FileDigest, InputError>>) {
        if self.io_error.is_some() {
            return;
        }
        if let Err(e) = self.print(item, result) {
            self.write_failed(e);
        }
    }

    /// Keeps the first write error, and stops the reading of lines.
    fn write_failed(&mut self, e: io::Error) {
        self.io_error.get_or_insert(e);
        self.out_failed.set(true);
    }

    fn print(
        &mut self,
        item: Item,
        result: Option<Result<FileDigest, InputError>>,
    ) -> io::Result<()> {
        let names = self.names;
        let json = self.options.output == Output::Json;
        match item {
            Item::Line {
                file,
                line,
                name,
                expected,
                spec: (layout, alg),
                tagged,
                tries,
            } => {
                let tried = tries.as_ref().map(|t| t.layouts().len());
                let outcome = match (result.expect("a line is hashed"), tries) {
                    (Ok(mut digest), Some(tries)) => {
                        let found = tries.found(&digest);
                        digest.root = found.root;
                        Outcome {
                            layout: found.layout,
                            matched: Ok(found.matched),
                            digest: Some(digest),
                            tried,
                        }
                    }
                    (Ok(digest), None) => Outcome {
                        layout,
                        matched: Ok(layout.matches(alg, &digest.root, &expected)),
                        digest: Some(digest),
                        tried,
                    },
                    (Err(e), _) => Outcome {
                        layout,
                        matched: Err(e),
                        digest: None,
                        // None hashed the file.
                        tried: tried.map(|_| 0),
                    },
                };
                let status = match &outcome.matched {
                    Ok(true) => LineStatus::Ok,
                    Ok(false) => LineStatus::Failed,
                    Err(InputError::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
                        LineStatus::Missing
                    }
                    Err(_) => LineStatus::Unreadable,
                };
                let verdict = LineVerdict {
                    name: &name,
                    sum_file: &names[file],
                    line,
                    status,
                    layout: outcome.layout,
                    algorithm: alg,
                    expected: *expected,
                    digest: outcome.digest,
                    error: outcome.matched.err(),
                    sizes_tried: outcome.tried,
                };
                self.report(&verdict, tagged)?;
            }
            Item::Improper { file, line, crc } => {
                self.tally.improper += 1;
                let tag = self.options.untagged.tag();
                let mut cause = format!("improperly formatted {tag} checksum line");
                if let Some(crc) = &crc {
                    cause += &format!(" (a {crc} value needs -a)");
                }
                if self.options.warn {
                    let name = message_name(&names[file]);
                    self.err
                        .write_all(&error_line(name, &format!("{line}: {cause}")))?;
                }
                if json {
                    self.out
                        .write_all(&json::improper_line(&names[file], line, &cause))?;
                }
                self.tally.crc = self.tally.crc.take().or(crc);
            }
            Item::Unreadable { file, error } => {
                let cause = match error {
                    Some(error) => InputError::Io(error).to_string(),
                    None => "read error".to_string(),
                };
                let name = message_name(&names[file]);
                self.err.write_all(&error_line(name, &cause))?;
                self.tally.failed = Some(cause);
            }
            Item::End { file } => {
                let t = std::mem::take(&mut self.tally);
                let passed = self.passed(&t);
                self.summarise(file, &t)?;
                if json {
                    let counts = [
                        ("ok", t.matched),
                        ("failed", t.mismatched),
                        ("missing", t.missing),
                        ("unreadable", t.unreadable),
                        ("improper", t.improper),
                    ];
                    let problem = self.problem(&t);
                    let summary =
                        json::check_summary(&names[file], &counts, passed, problem.as_deref());
                    self.out.write_all(&summary)?;
                }
                self.all_ok &= passed;
            }
        }
        Ok(())
    }

    /// Counts a line's verdict and writes it: its messages on `err`, and its line on `out`,
    /// as text or as JSON.
    fn report(&mut self, v: &LineVerdict, tagged: bool) -> io::Result<()> {
        let implied = (!tagged && self.options.untagged.algorithm.is_none())
            .then(|| IMPLIED_NOTES.iter().position(|n| n.implied == v.algorithm))
            .flatten()
            .map(|i| &mut self.untagged_implied[i]);
        let t = &mut self.tally;
        t.proper += 1;
        match v.status {
            LineStatus::Ok => {
                t.matched += 1;
                self.untagged_matches += u64::from(!tagged);
                if let Some((_, ok)) = implied {
                    *ok += 1;
                }
            }
            LineStatus::Failed => {
                t.mismatched += 1;
                self.untagged_mismatches += u64::from(!tagged);
                if let Some((failed, _)) = implied {
                    *failed += 1;
                }
                let multipart = v.expected.parts().is_some();
                self.untagged_multipart_mismatches += u64::from(!tagged && multipart);
            }
            LineStatus::Missing => t.missing += 1,
            LineStatus::Unreadable => t.unreadable += 1,
        }
        let ignored = v.status == LineStatus::Missing && self.options.ignore_missing;
        if !ignored {
            self.show_settings((v.layout, v.algorithm))?;
            if let Some(e) = &v.error {
                self.err.write_all(&error_line(v.name, e))?;
            }
        }
        let line = match self.options.output {
            Output::Text if ignored => None,
            Output::Text => self.text_line(v),
            Output::Json => Some(json::check_line(v)),
        };
        if let Some(line) = line {
            self.out.write_all(&line)?;
        }
        if let Some(digest) = &v.digest {
            let figures = self.options.figures.of_input(v.name, digest);
            if !figures.is_empty() {
                self.err.write_all(&figures)?;
            }
        }
        Ok(())
    }

    /// A verdict as `sha256sum -c` prints it, where the verbosity shows it.
    fn text_line(&self, v: &LineVerdict) -> Option<Vec<u8>> {
        let verbosity = self.options.verbosity;
        let verdict = match (v.status, v.sizes_tried) {
            _ if verbosity == Verbosity::Status => return None,
            (LineStatus::Ok, _) if verbosity == Verbosity::Quiet => return None,
            // A value of one part (a single upload, or a multipart upload of one part) is the
            // same for every part size of at least the file's: naming the one that was tried
            // would say the upload used it.
            (LineStatus::Ok, Some(_)) => match (v.layout, &v.digest) {
                (Layout::S3(part), Some(d)) if part.parts(d.size) == 1 => {
                    ": OK (one part)\n".to_string()
                }
                _ => match v.layout.size_parameter() {
                    Some(size) => format!(": OK (--part-size {size})\n"),
                    None => ": OK\n".to_string(),
                },
            },
            (LineStatus::Ok, None) => ": OK\n".to_string(),
            (LineStatus::Failed, Some(tried)) if tried > 1 => {
                format!(": FAILED ({tried} part sizes tried)\n")
            }
            (LineStatus::Failed, _) => ": FAILED\n".to_string(),
            (LineStatus::Missing | LineStatus::Unreadable, _) => {
                ": FAILED open or read\n".to_string()
            }
        };
        let mut line = sumfile::verdict_name(v.name).into_owned();
        line.extend_from_slice(verdict.as_bytes());
        Some(line)
    }

    /// With `--verbose`, the settings lines before the verdict of a line checked with `spec`,
    /// unless the lines before them already name it: once for a sum file of one kind.
    fn show_settings(&mut self, spec: (Layout, Algorithm)) -> io::Result<()> {
        if self.settings_shown == Some(spec) {
            return Ok(());
        }
        self.settings_shown = Some(spec);
        let (layout, alg) = spec;
        let lines = self.options.figures.settings(alg, layout, self.processors);
        self.err.write_all(lines.as_bytes())
    }

    /// What failed a sum file as a whole, as its message says it: it could not be read, it
    /// held no checksum line, or (`--ignore-missing`) none of the files it lists was there.
    fn problem(&self, t: &Tally) -> Option<String> {
        if let Some(cause) = &t.failed {
            return Some(cause.clone());
        }
        if t.proper == 0 {
            let mut cause = String::from("no properly formatted checksum lines found");
            if let Some(crc) = &t.crc {
                cause += &format!(" (untagged CRC lines need -a: {crc})");
            }
            return Some(cause);
        }
        (self.options.ignore_missing && t.matched == 0).then(|| "no file was verified".into())
    }

    /// The warnings coreutils prints after each sum file.
    fn summarise(&mut self, file: usize, t: &Tally) -> io::Result<()> {
        if t.failed.is_some() {
            // Said when the read failed.
            return Ok(());
        }
        let problem = self.problem(t);
        if t.proper > 0 {
            if self.options.verbosity == Verbosity::Status {
                return Ok(());
            }
            let unread = t.unreadable
                + if self.options.ignore_missing {
                    0
                } else {
                    t.missing
                };
            let plural = |n: u64, one: &str, many: &str| {
                let text = if n == 1 { one } else { many };
                format!("mtsum: WARNING: {n} {text}\n")
            };
            let warnings = [
                (
                    t.improper,
                    "line is improperly formatted",
                    "lines are improperly formatted",
                ),
                (
                    unread,
                    "listed file could not be read",
                    "listed files could not be read",
                ),
                (
                    t.mismatched,
                    "computed checksum did NOT match",
                    "computed checksums did NOT match",
                ),
            ];
            for (n, one, many) in warnings {
                if n > 0 {
                    self.err.write_all(plural(n, one, many).as_bytes())?;
                }
            }
        }
        match problem {
            Some(cause) => {
                let name = message_name(&self.names[file]);
                self.err.write_all(&error_line(name, &cause))
            }
            None => Ok(()),
        }
    }

    fn passed(&self, t: &Tally) -> bool {
        self.problem(t).is_none()
            && t.mismatched == 0
            && t.unreadable == 0
            && (self.options.ignore_missing || t.missing == 0)
            && (!self.options.strict || t.improper == 0)
    }
}
