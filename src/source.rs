//! Where bytes come from: regular files and block devices (random access, known length) and
//! streams (pipes, character devices, standard input).
//!
//! The engine reads every job through this module, so it is also where a file that changes
//! under our feet is noticed: a short read, or a size or modification time that differs after
//! hashing from what it was before, turns into [`InputError::Changed`] instead of a digest of
//! bytes that never existed together.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Why one input could not be hashed. The message is the part after `mtsum: NAME: `.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The operating system refused or failed (no such file, permission denied, I/O error).
    #[error("{}", os_message(.0))]
    Io(#[from] io::Error),
    /// A directory was named without asking for recursion.
    #[error("Is a directory")]
    IsADirectory,
    /// The size or modification time moved while the file was read, or the file ended early.
    #[error("changed while being read")]
    Changed,
    /// A pipe or character device met a layout that must know the length before it starts.
    #[error(
        "cannot hash a stream with the {0} layout (its tree needs the length up front); use -t plain, merkle or rfc6962 for streams"
    )]
    StreamNeedsLength(&'static str),
    /// `-g` on a stream of a fixed-leaf layout, whose leaves are not kept.
    #[error("cannot draw the tree of a stream; save it to a file first")]
    GraphOfStream,
    /// `-g` on a tree too large to draw.
    #[error(
        "the tree has {leaves} leaves, more than the {max} a graph can show; use a larger --leaf-size"
    )]
    TooManyLeaves { leaves: usize, max: usize },
}

/// An I/O error as coreutils prints it: `No such file or directory`, without Rust's
/// ` (os error 2)` suffix.
fn os_message(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) if e.raw_os_error().is_some() => text[..i].to_string(),
        _ => text,
    }
}

/// What the user asked to hash: a path, or standard input (`-`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Path(PathBuf),
    Stdin,
}

impl Target {
    /// `-` means standard input, as for every coreutils checksum tool.
    pub fn from_arg(arg: impl Into<PathBuf>) -> Target {
        let path = arg.into();
        if path.as_os_str() == "-" {
            Target::Stdin
        } else {
            Target::Path(path)
        }
    }

    /// The name to print: the path as given, or `-`.
    pub fn display_name(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Target::Path(p) => p.to_string_lossy(),
            Target::Stdin => "-".into(),
        }
    }
}

/// The size and modification time of a file; if either differs after hashing, the bytes we
/// hashed may never have existed together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub len: u64,
    pub mtime_sec: i64,
    pub mtime_nsec: i64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata, len: u64) -> Stamp {
        Stamp {
            len,
            mtime_sec: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
        }
    }
}

/// An opened input.
pub enum Input {
    /// Random access with a length known up front: a regular file or a block device.
    Sized(SizedFile),
    /// Bytes that can only be read once, front to back.
    Stream(Box<dyn Read + Send>),
}

/// A regular file or block device opened for positioned reads.
pub struct SizedFile {
    file: File,
    stamp: Stamp,
    is_block_device: bool,
}

impl Input {
    /// Opens standard input as a stream.
    pub fn stdin() -> Input {
        Input::Stream(Box::new(io::stdin()))
    }

    /// Opens `target`: a regular file or block device becomes [`Input::Sized`]; a FIFO,
    /// character device or socket becomes a stream; a directory is an error.
    pub fn open(target: &Target) -> Result<Input, InputError> {
        let path = match target {
            Target::Stdin => return Ok(Input::stdin()),
            Target::Path(p) => p,
        };
        let file = File::open(path)?;
        let meta = file.metadata()?;
        let ft = meta.file_type();
        if ft.is_dir() {
            return Err(InputError::IsADirectory);
        }
        if ft.is_file() || ft.is_block_device() {
            let is_block_device = ft.is_block_device();
            // `stat` says 0 for a block device; its size is where seeking to the end lands.
            let len = if is_block_device {
                io::Seek::seek(&mut &file, io::SeekFrom::End(0))?
            } else {
                meta.len()
            };
            advise_sequential(&file);
            return Ok(Input::Sized(SizedFile {
                stamp: Stamp::of(&meta, len),
                file,
                is_block_device,
            }));
        }
        Ok(Input::Stream(Box::new(file)))
    }
}

/// Tells the kernel we read front to back, so that it reads ahead aggressively.
fn advise_sequential(file: &File) {
    // SAFETY: posix_fadvise only reads its integer arguments; the descriptor is open for the
    // duration of the call. A failure merely means no hint, so the result is ignored.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL);
    }
}

impl SizedFile {
    /// The length at the time the file was opened.
    pub fn len(&self) -> u64 {
        self.stamp.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.stamp.len == 0
    }

    /// Fills `buf` from `offset`; a file that ends before `buf` is full has shrunk since it
    /// was opened.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<(), InputError> {
        self.file.read_exact_at(buf, offset).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                InputError::Changed
            } else {
                InputError::Io(e)
            }
        })
    }

    /// Fails with [`InputError::Changed`] if the size or modification time is no longer what
    /// it was when the file was opened. Call it after the last byte was read.
    pub fn check_unchanged(&self) -> Result<(), InputError> {
        let meta = self.file.metadata()?;
        let len = if self.is_block_device {
            io::Seek::seek(&mut &self.file, io::SeekFrom::End(0))?
        } else {
            meta.len()
        };
        if Stamp::of(&meta, len) != self.stamp {
            return Err(InputError::Changed);
        }
        Ok(())
    }
}

/// Opens `path` as [`Input::open`] does.
pub fn open_path(path: &Path) -> Result<Input, InputError> {
    Input::open(&Target::Path(path.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_read_like_coreutils() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(InputError::Io(e).to_string(), "No such file or directory");
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            open_path(dir.path()),
            Err(InputError::IsADirectory)
        ));
    }

    #[test]
    fn dash_is_standard_input() {
        assert_eq!(Target::from_arg("-"), Target::Stdin);
        assert_eq!(Target::from_arg("./-"), Target::Path("./-".into()));
    }
}
