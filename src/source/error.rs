//! Why one input could not be hashed ([`InputError`]), and I/O errors worded as coreutils
//! words them.

use std::fmt;
use std::io;

use crate::dialect::{Dialect, Setting, Worded};
use crate::size::LeafSize;

/// Why one input could not be hashed. The message is the part after `mtsum: NAME: `.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The operating system refused or failed (no such file, permission denied, I/O error).
    #[error("{}", os_message(.0))]
    Io(#[from] io::Error),
    /// A directory was named without asking for recursion.
    #[error("Is a directory")]
    IsADirectory,
    /// A [`Target::File`](super::Target::File) (or a file being audited) that is not a regular file: the walk found
    /// one, and something else took its place before it was opened.
    #[error("not a regular file")]
    NotRegular,
    /// The size or modification time moved while the file was read, or the file ended early.
    #[error("changed while being read")]
    Changed,
    /// A regular file held `more` or fewer bytes than its size said, though neither its size
    /// nor its modification time moved: its file system misreports the size (some network and
    /// FUSE file systems), and a digest of its first `size` bytes would be of other bytes
    /// than the file's.
    #[error("{}", self.in_dialect(Dialect::Cli))]
    SizeMisreported { size: u64, more: bool },
    /// A pipe, a character device or a file whose size the file system does not report (procfs,
    /// sysfs) longer than [`MAX_HELD_STREAM`] met a layout that must know the length before it
    /// starts.
    #[error("{}", self.in_dialect(Dialect::Cli))]
    StreamNeedsLength(&'static str),
    /// `-g` on a stream of a fixed-leaf layout, whose leaves are not kept.
    #[error("cannot draw the tree of a stream; save it to a file first")]
    GraphOfStream,
    /// The layout has no root for this input (an empty file in BitTorrent v2, more than
    /// 10 000 parts for S3).
    #[error("{0}")]
    NoRoot(#[from] NoRoot),
    /// `-g` on a tree too large to draw.
    #[error(
        "the tree has {leaves} leaves, more than the {max} a graph can show; use a larger --leaf-size"
    )]
    TooManyLeaves { leaves: usize, max: usize },
    /// A range of a pipe or character device, whose bytes cannot be read from an offset.
    #[error("cannot hash a range of a stream; save it to a file first")]
    RangeOfStream,
    /// A remote object could not be had: the store's reason (no such object, access denied,
    /// a range that kept failing ...), or a prefix named without `-r`.
    #[error("{0}")]
    Remote(String),
    /// The engine's cancel flag was set ([`Engine::with_cancel`](crate::engine::Engine::with_cancel))
    /// before the input was all read.
    #[error("interrupted")]
    Interrupted,
}

/// The messages that suggest a setting, in the words of the front end that asked; every
/// other message is the `Display` of its variant.
impl Worded for InputError {
    fn write_in(&self, f: &mut fmt::Formatter<'_>, dialect: Dialect) -> fmt::Result {
        match self {
            InputError::SizeMisreported { size, more } => write!(
                f,
                "holds {} bytes than the {size} its file system reports; hash it as a stream instead: {}",
                if *more { "more" } else { "fewer" },
                dialect.name(Setting::Stream)
            ),
            InputError::StreamNeedsLength(layout) => write!(
                f,
                "cannot hash a stream of more than {} MiB with the {layout} layout (its tree needs the length up front, and a pipe or a /proc or /sys file does not tell it); save it to a file first, or use {}",
                MAX_HELD_STREAM >> 20,
                dialect.name(Setting::Layout(&["plain", "merkle", "rfc6962"]))
            ),
            InputError::NoRoot(e) => e.write_in(f, dialect),
            other => fmt::Display::fmt(other, f),
        }
    }
}

/// An I/O error as coreutils prints it: `No such file or directory`, without Rust's
/// ` (os error 2)` suffix.
pub fn os_message(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) if e.raw_os_error().is_some() => text[..i].to_string(),
        _ => text,
    }
}

/// The most bytes of a stream held in memory to hash it with a layout whose tree needs the
/// length up front (`mtsum`): the pipes and /proc or /sys files such a layout is asked to
/// hash are small (a /proc file rarely holds more than some KiB), while the few that are not
/// (`/proc/kcore`, a disk image piped in) could hold more than the machine's memory. 64 MiB
/// is a small part of any machine that hashes files; the engine opens no input while the
/// streams it holds reach it, so it never holds more than twice that beyond its buffer pool
/// (the audit: one per reader).
pub const MAX_HELD_STREAM: u64 = 64 << 20;

/// Why a stream has no root: a layout gives none to this input. It lives beside
/// [`InputError`], which carries it, so that reading needs nothing of the layouts that
/// raise it (`mtsum::layout::NoRoot` names it too).
/// The advice names the part size in the words of the front end that asked ([`Worded`]);
/// `Display` is the command line's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoRoot {
    /// BitTorrent v2 gives an empty file no pieces root (BEP 52); inventing one would print a
    /// value no torrent holds.
    EmptyFile(&'static str),
    /// S3 refuses an upload of more than 10 000 parts, so no such value exists.
    TooManyParts {
        parts: u64,
        part_size: LeafSize,
        suggestion: LeafSize,
    },
}

impl Worded for NoRoot {
    fn write_in(&self, f: &mut fmt::Formatter<'_>, dialect: Dialect) -> fmt::Result {
        match self {
            NoRoot::EmptyFile(layout) => {
                write!(f, "an empty file has no {layout} pieces root (BEP 52)")
            }
            NoRoot::TooManyParts {
                parts,
                part_size,
                suggestion,
            } => write!(
                f,
                "{parts} parts of {part_size}, more than S3's 10000; use {} (what the AWS CLI would choose)",
                dialect.name(Setting::PartSize(Some(suggestion)))
            ),
        }
    }
}

impl fmt::Display for NoRoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_in(f, Dialect::Cli)
    }
}

impl std::error::Error for NoRoot {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_read_like_coreutils() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(InputError::Io(e).to_string(), "No such file or directory");
    }
}
