//! Where bytes come from: regular files and block devices (random access, known length; on
//! standard input, from where it stands) and streams (pipes, character devices).
//!
//! The engine reads every job through this module, so it is also where a file that changes
//! under our feet is noticed: a short read, or a size or modification time that differs after
//! hashing from what it was before, turns into [`InputError::Changed`] instead of a digest of
//! bytes that never existed together. A file whose reads end elsewhere than its size says
//! while its size and mtime hold still is one whose file system misreports the size:
//! [`InputError::SizeMisreported`], and its callers read it again as a stream
//! ([`SizedFile::to_stream`]).
//!
//! A sized file is read one of four ways ([`ReadMode`]); the digest never depends on which:
//! - `pread` (the default): positioned reads through the page cache into pooled buffers, with
//!   a sequential read-ahead hint;
//! - `O_DIRECT` (`--direct`): reads that bypass the page cache, for files larger than memory
//!   that should not evict what the user has cached. Offsets and lengths are aligned to what
//!   the file system asks (`statx`), a job that starts or ends between two blocks reads the
//!   whole blocks and hashes only its part, and where `O_DIRECT` is refused (tmpfs) the file is
//!   read with `RWF_DONTCACHE`, else through the cache, and the [`Fallback`] is reported;
//! - `RWF_DONTCACHE` (Linux 6.14 and later, on file systems that support it): buffered reads
//!   whose pages leave the cache once read;
//! - `mmap` (`--mmap`): the hasher reads windows of a few MiB mapped by the reader, saving the
//!   copy out of the page cache; a file truncated meanwhile is reported as changed instead of
//!   killing the process (see the `mmap` submodule).
//!
//! A remote object (`s3://`, `http(s)://`, the [`remote`] submodule) is a sized file too:
//! its positioned reads are served by range GETs, and every read mode is `pread` for it.
//!
//! # The map
//! One file per role; each imports only files listed before it, so the module has no import
//! cycle, and this file only declares them and re-exports their public names:
//! - `error`: [`InputError`], why one input could not be hashed, and [`os_message`];
//! - `stamp`: [`Mtime`] and [`Stamp`], what tells one version of a file from the next;
//! - `stdin`: standard input, claimed once per process ([`stdin()`], [`read_would_wait`]);
//! - `pread`: the positioned (and vectored) reads every buffered read goes through;
//! - `mmap`: mapped windows, and the SIGBUS guard for a file truncated while mapped;
//! - `buffer`: [`Buffer`]s to read into, the [`Chunk`]s handed to the hasher and the
//!   [`Pieces`] a chunk's bytes lie in;
//! - `mode`: [`ReadMode`]s, what each asks of the open file, and the [`Fallback`] when refused;
//! - `filesystems`: file systems that misreport sizes, whose files are read as streams;
//! - [`remote`]: objects named by URL, and the store that serves their range GETs;
//! - `target`: [`Target`], a path, standard input or a URL, as the user named it;
//! - `file`: [`Input`] and [`SizedFile`]: opening, and noticing a file that changed while read;
//! - `range`: the [`RangeReader`], one job's bytes as chunks in the file's read mode;
//! - `stream`: streams read chunk by chunk ([`read_stream_chunk`]) or held in memory
//!   ([`hold_stream`]).

mod buffer;
mod error;
mod file;
mod filesystems;
mod mmap;
mod mode;
mod pread;
mod range;
pub mod remote;
mod stamp;
mod stdin;
mod stream;
mod target;

pub use buffer::{Buffer, Chunk, Pieces};
pub use error::{InputError, MAX_HELD_STREAM, NoRoot, os_message};
pub use file::{Input, SizedFile, XattrValue, open_path};
pub(crate) use filesystems::FileSystems;
pub use mode::{Fallback, ReadMode};
pub use range::RangeReader;
pub use stamp::{Mtime, Stamp};
pub(crate) use stdin::claim_stdin;
pub use stdin::{claim_stdin_file, read_would_wait, stdin, stdin_file};
pub use stream::{hold_stream, read_stream_chunk};
pub use target::Target;
