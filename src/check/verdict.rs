//! The verdict on one checksum line ([`LineVerdict`]): what `-c` decided, in a module of its
//! own so that the writers of both outputs take it, the text lines in the parent module and
//! `-c --json`'s objects in [`crate::json`], while the parent calls those writers: neither
//! imports the other back.

use crate::algorithm::Algorithm;
use crate::engine::FileDigest;
use crate::layout::{Layout, Root};
use crate::source::InputError;

/// What became of one checksum line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineStatus {
    /// The file's value is the line's.
    Ok,
    /// The file's value differs (`NAME: FAILED`).
    Failed,
    /// The file does not exist (`NAME: FAILED open or read`, unless `--ignore-missing`).
    Missing,
    /// The file exists but could not be hashed (`NAME: FAILED open or read`).
    Unreadable,
}

impl LineStatus {
    /// The name JSON gives it.
    pub fn name(self) -> &'static str {
        match self {
            LineStatus::Ok => "ok",
            LineStatus::Failed => "failed",
            LineStatus::Missing => "missing",
            LineStatus::Unreadable => "unreadable",
        }
    }
}

/// The verdict on one checksum line: decided in one place, then written as text or as JSON
/// (`Output`).
#[derive(Debug)]
pub struct LineVerdict<'a> {
    /// The file's name as the line gives it.
    pub name: &'a [u8],
    /// The sum file as named on the command line (`-`: standard input).
    pub sum_file: &'a [u8],
    /// The line's number in the sum file, from 1.
    pub line: u64,
    pub status: LineStatus,
    /// What the file was checked with: with `--part-size auto`, the part size that matched,
    /// else the first one that hashed the file.
    pub layout: Layout,
    pub algorithm: Algorithm,
    /// The value the line holds, in its encoding.
    pub expected: Root,
    /// What the file gave (with `--part-size auto`, the value under the size of `layout`,
    /// from the one read that tried every size); `None` when it could not be read.
    pub digest: Option<FileDigest>,
    /// Why the file could not be read.
    pub error: Option<InputError>,
    /// With `--part-size auto`: how many part sizes hashed the file.
    pub sizes_tried: Option<usize>,
}
