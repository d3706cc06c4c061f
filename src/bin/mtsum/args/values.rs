//! How the value of one flag is read: the parsers clap calls (`value_parser = ...`) and the
//! types they give, each with a message that names the flag's own words.

use std::num::NonZeroUsize;

use mtsum::layout::{LayoutError, LeafSizeError, PartList, PartSize};
use mtsum::{Layout, LeafSize};

pub(super) fn parse_layout_name(s: &str) -> Result<String, LayoutError> {
    Layout::from_name(s, None).map(|_| s.to_string())
}

/// The parser of a flag that takes one of a few names (`-a`, `-t`): `parse` decides, so that
/// its other spellings (`SHA-256`) and its message listing the names stay, and `names` are
/// offered to the shell completions of `--generate` (`mtsum -t <TAB>`). The flags hide them
/// from `--help`, whose text lists them already.
pub(super) struct Offered<T, E> {
    names: Vec<&'static str>,
    parse: fn(&str) -> Result<T, E>,
}

impl<T, E> Offered<T, E> {
    pub(super) fn new(
        names: impl IntoIterator<Item = &'static str>,
        parse: fn(&str) -> Result<T, E>,
    ) -> Self {
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

/// `--part-size`: a size, a list of parts, or `auto` (with -c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartSizeArg {
    Size(PartSize),
    /// Each part's size, for an upload whose parts differ.
    Parts(PartList),
    Auto,
}

pub(super) fn parse_part_size(s: &str) -> Result<PartSizeArg, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(PartSizeArg::Auto);
    }
    if PartList::is_list(s) {
        return s.parse().map(PartSizeArg::Parts);
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

pub(super) fn parse_processors(s: &str) -> Result<NonZeroUsize, String> {
    parse_workers(s, "processors")
}

/// `--readers N`: as `-p`, in the flag's own word.
pub(super) fn parse_readers(s: &str) -> Result<NonZeroUsize, String> {
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
pub(super) fn parse_connections(s: &str) -> Result<NonZeroUsize, String> {
    parse_count(s, "connections")
}

/// `--plan N`.
pub(super) fn parse_ranges(s: &str) -> Result<NonZeroUsize, String> {
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
    pub(super) fn parse(s: &str) -> Result<PlannedRange, String> {
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
