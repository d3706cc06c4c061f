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

mod mmap;
pub mod remote;

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::num::NonZeroUsize;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

/// Why one input could not be hashed. The message is the part after `mtsum: NAME: `.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The operating system refused or failed (no such file, permission denied, I/O error).
    #[error("{}", os_message(.0))]
    Io(#[from] io::Error),
    /// A directory was named without asking for recursion.
    #[error("Is a directory")]
    IsADirectory,
    /// A [`Target::File`] (or a file being audited) that is not a regular file: the walk found
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
    #[error(
        "holds {} bytes than the {size} its file system reports; hash it as a stream instead: mtsum - < FILE",
        if *more { "more" } else { "fewer" }
    )]
    SizeMisreported { size: u64, more: bool },
    /// A pipe, a character device or a file whose size the file system does not report (procfs,
    /// sysfs) longer than [`MAX_HELD_STREAM`] met a layout that must know the length before it
    /// starts.
    #[error(
        "cannot hash a stream of more than {MIB} MiB with the {0} layout (its tree needs the length up front, and a pipe or a /proc or /sys file does not tell it); save it to a file first, or use -t plain, merkle or rfc6962",
        MIB = MAX_HELD_STREAM >> 20
    )]
    StreamNeedsLength(&'static str),
    /// `-g` on a stream of a fixed-leaf layout, whose leaves are not kept.
    #[error("cannot draw the tree of a stream; save it to a file first")]
    GraphOfStream,
    /// The layout has no root for this input (an empty file in BitTorrent v2, more than
    /// 10 000 parts for S3).
    #[error("{0}")]
    NoRoot(#[from] crate::layout::NoRoot),
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

/// An I/O error as coreutils prints it: `No such file or directory`, without Rust's
/// ` (os error 2)` suffix.
pub fn os_message(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) if e.raw_os_error().is_some() => text[..i].to_string(),
        _ => text,
    }
}

/// Standard input as a file of its own (a duplicate of its descriptor), to read it through:
/// every read error is reported, where `io::stdin()` reads a descriptor failing with EBADF as
/// empty (the `mtsum` command keeps a standard input that was closed at start-up failing so,
/// as coreutils finds it), and nothing is kept in a buffer of `io::stdin()`'s.
pub fn stdin_file() -> io::Result<File> {
    use std::os::fd::AsFd;
    Ok(File::from(io::stdin().as_fd().try_clone_to_owned()?))
}

/// Claims standard input, which is read once front to back as coreutils reads it: the first
/// claim in the process gets its bytes, every later one finds it at its end, as if it came
/// after the first had read it all. Handing each use standard input itself instead would let
/// two workers read the one stream at once, each hashing whichever bytes it happened to get
/// (`mtsum - -`). The claim is process-wide because file descriptor 0 is; callers that open
/// uses on several threads claim in the order of the uses (the engine does it as it takes
/// tasks), not in the order the threads get to them.
pub(crate) fn claim_stdin() -> bool {
    static CLAIMED: AtomicBool = AtomicBool::new(false);
    !CLAIMED.swap(true, Ordering::Relaxed)
}

/// Standard input to read as a stream, claimed ([`claim_stdin`]): its bytes the first time
/// in the process, nothing after that.
pub fn stdin() -> io::Result<Box<dyn Read + Send>> {
    Ok(match claim_stdin_file()? {
        Some(file) => Box::new(file),
        None => Box::new(io::empty()),
    })
}

/// [`stdin`] as a file, for a reader that needs the descriptor (to ask whether a read would
/// wait, [`read_would_wait`]); `None` when it was claimed before: it is at its end.
pub fn claim_stdin_file() -> io::Result<Option<File>> {
    match claim_stdin() {
        true => stdin_file().map(Some),
        false => Ok(None),
    }
}

/// Whether a read of `file` would wait: a pipe, FIFO, terminal or socket with no byte to read
/// yet and a writer still there. A regular file never waits. An error of `poll` says no: the
/// read then reports it, or waits as it would have.
pub fn read_would_wait(file: &File) -> bool {
    let mut fd = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll reads and writes the one pollfd we own, for the length we give; a timeout
    // of 0 returns at once.
    unsafe { libc::poll(&mut fd, 1, 0) == 0 }
}

/// What the user asked to hash: a path, or standard input (`-`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A path named by the user: whatever it is, it is opened as `sha256sum` opens it, so a
    /// FIFO is read once some process writes to it.
    Path(PathBuf),
    /// A path that must be a regular file, as the walk found it below a directory: it is
    /// opened without waiting, and anything else found there by then is refused with
    /// [`InputError::NotRegular`]. A FIFO put in its place would otherwise block the open
    /// until some process wrote to it, which may be never.
    File(PathBuf),
    Stdin,
    /// A remote object (`s3://BUCKET/KEY`, `http(s)://HOST/PATH`), or with `-r` a prefix.
    Url(remote::Url),
}

impl Target {
    /// `-` means standard input, as for every coreutils checksum tool; `s3://`, `http://`
    /// and `https://` name remote objects (with the options of
    /// [`remote::set_default_options`]); a URL that does not parse stays a path, which then
    /// does not exist.
    pub fn from_arg(arg: impl Into<PathBuf>) -> Target {
        let path = arg.into();
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
        if path.as_os_str() == "-" {
            Target::Stdin
        } else if remote::is_url(bytes)
            && let Some(url) = path.to_str().and_then(|text| remote::Url::parse(text).ok())
        {
            Target::Url(url)
        } else {
            Target::Path(path)
        }
    }

    /// The name to print: the path or URL as given, or `-`.
    pub fn display_name(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Target::Url(url) => url.as_str().into(),
            _ => match self.path() {
                Some(p) => p.to_string_lossy(),
                None => "-".into(),
            },
        }
    }

    /// The name to print as raw bytes: paths byte for byte, as coreutils prints them, even
    /// when they are not valid UTF-8.
    pub fn name_bytes(&self) -> &[u8] {
        match self {
            Target::Path(p) | Target::File(p) => p.as_os_str().as_encoded_bytes(),
            Target::Stdin => b"-",
            Target::Url(url) => url.as_str().as_bytes(),
        }
    }

    /// The local path, or `None` for standard input and remote objects.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Target::Path(p) | Target::File(p) => Some(p),
            Target::Stdin | Target::Url(_) => None,
        }
    }
}

/// A modification time as `stat` gives it: seconds since the epoch and nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mtime {
    pub sec: i64,
    /// Below 10⁹.
    pub nsec: u32,
}

impl Mtime {
    /// `None` when `nsec` is not below 10⁹.
    pub fn new(sec: i64, nsec: u32) -> Option<Mtime> {
        (nsec < 1_000_000_000).then_some(Mtime { sec, nsec })
    }

    /// The modification time of `meta`.
    pub fn of(meta: &std::fs::Metadata) -> Mtime {
        Mtime {
            sec: meta.mtime(),
            nsec: meta.mtime_nsec() as u32,
        }
    }

    /// Nanoseconds since the epoch.
    pub fn nanos(self) -> i128 {
        i128::from(self.sec) * 1_000_000_000 + i128::from(self.nsec)
    }
}

/// `SECONDS.NANOSECONDS` with nine digits after the point, as cshatag writes its timestamps
/// (`1700000000.000000042`; seconds may be negative, before 1970).
impl fmt::Display for Mtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}", self.sec, self.nsec)
    }
}

impl std::str::FromStr for Mtime {
    type Err = String;

    fn from_str(s: &str) -> Result<Mtime, String> {
        let bad = || format!("'{s}' is not a time SECONDS.NANOSECONDS");
        let (sec, nsec) = s.split_once('.').ok_or_else(bad)?;
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        if !digits(sec.strip_prefix('-').unwrap_or(sec)) || nsec.len() != 9 || !digits(nsec) {
            return Err(bad());
        }
        let sec = sec.parse().map_err(|_| bad())?;
        Mtime::new(sec, nsec.parse().map_err(|_| bad())?).ok_or_else(bad)
    }
}

/// The size and modification time of a file: what tells one version of a file from the next
/// without reading it. If either differs after hashing, the bytes we hashed may never have
/// existed together; if either differs from an audit record, the file was edited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stamp {
    /// Bytes.
    pub len: u64,
    pub mtime: Mtime,
}

impl Stamp {
    pub fn new(len: u64, mtime: Mtime) -> Stamp {
        Stamp { len, mtime }
    }

    /// The stamp of a regular file (for a block device `meta.len()` is 0: see
    /// [`SizedFile`], which measures it).
    pub fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp::new(meta.len(), Mtime::of(meta))
    }
}

/// How the bytes of a regular file or block device are read. Streams are always read with
/// `read`, whatever the mode. The digest does not depend on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReadMode {
    /// Positioned reads through the page cache.
    #[default]
    Pread,
    /// `O_DIRECT` reads around the page cache, aligned as the file system requires.
    Direct,
    /// Buffered reads with `RWF_DONTCACHE`: the pages leave the cache once read.
    DontCache,
    /// The hasher reads mapped windows of the file.
    Mmap,
}

impl ReadMode {
    fn from_u8(v: u8) -> ReadMode {
        match v {
            1 => ReadMode::Direct,
            2 => ReadMode::DontCache,
            3 => ReadMode::Mmap,
            _ => ReadMode::Pread,
        }
    }

    /// How the mode reads, for messages.
    fn describe(self) -> &'static str {
        match self {
            ReadMode::Pread => "read through the page cache",
            ReadMode::Direct => "O_DIRECT",
            ReadMode::DontCache => "RWF_DONTCACHE",
            ReadMode::Mmap => "mmap",
        }
    }
}

/// A read mode that one input could not use, and the one it was read with instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fallback {
    pub wanted: ReadMode,
    pub used: ReadMode,
    /// Why, as the system said it: `Invalid argument`.
    pub cause: String,
}

impl fmt::Display for Fallback {
    /// `O_DIRECT unavailable (Invalid argument); read through the page cache instead`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let used = match self.used {
            ReadMode::Pread => "read through the page cache".to_string(),
            other => format!("read with {}", other.describe()),
        };
        write!(
            f,
            "{} unavailable ({}); {used} instead",
            self.wanted.describe(),
            self.cause
        )
    }
}

/// An opened input.
pub enum Input {
    /// Random access with a length known up front: a regular file or a block device.
    Sized(SizedFile),
    /// Bytes that can only be read once, front to back.
    Stream(Box<dyn Read + Send>),
}

/// A regular file or block device opened for positioned reads: its bytes from `start` to its
/// end, which are offsets `0..len()` of its reads.
pub struct SizedFile {
    file: Backing,
    stamp: Stamp,
    /// Where its bytes start in the file: 0, but for standard input redirected from a file
    /// that something has read from (`(head -c 10; mtsum) < file`), whose bytes are, as for
    /// coreutils, those from where it stands. At most the file's length. Reads and their
    /// alignment (`O_DIRECT` blocks, mapped pages) work on offsets in the file; only the
    /// offsets that callers see are shifted.
    start: u64,
    is_block_device: bool,
    /// The [`ReadMode`] in use (as `u8`): the one asked for until it fails, then its fallback.
    mode: AtomicU8,
    /// With `O_DIRECT`: the alignment of offsets and lengths, a power of two.
    align: u64,
    fallback: OnceLock<Fallback>,
    /// What the reads found past the length (an [`End`] as `u8`).
    end: AtomicU8,
}

/// What a sized file's positioned reads read.
enum Backing {
    File(File),
    #[cfg(feature = "remote")]
    Remote(remote::Object),
}

impl Backing {
    /// The local file, for what only a file has (read modes, `fstat`, a descriptor):
    /// a remote object is always read with `pread` and never reaches those paths.
    fn local(&self) -> io::Result<&File> {
        match self {
            Backing::File(file) => Ok(file),
            #[cfg(feature = "remote")]
            Backing::Remote(_) => Err(io::Error::from(io::ErrorKind::Unsupported)),
        }
    }
}

/// What the reads of a sized file found at its length: whether the file really ends there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum End {
    /// No read has looked past the length yet.
    Unknown,
    /// A read that asked for bytes past the length got none.
    Seen,
    /// A read got bytes past the length.
    Beyond,
}

impl Input {
    /// Opens standard input, claimed ([`claim_stdin`]): as a file when it is one (`< file`),
    /// its bytes from where it stands, as a stream otherwise, and as an empty stream after
    /// the first claim in the process.
    pub fn stdin() -> Result<Input, InputError> {
        Input::open(&Target::Stdin)
    }

    /// Opens `target` for reads through the page cache: a regular file or block device
    /// becomes [`Input::Sized`]; a FIFO, character device or socket becomes a stream; a
    /// directory is an error.
    pub fn open(target: &Target) -> Result<Input, InputError> {
        Input::open_with(target, ReadMode::Pread)
    }

    /// Opens `target` as [`Input::open`] does, to be read with `mode` if it is sized. A mode
    /// that the file refuses falls back (see [`SizedFile::fallback`]); it is never an error.
    pub fn open_with(target: &Target, mode: ReadMode) -> Result<Input, InputError> {
        Input::open_with_known(target, mode, &mut FileSystems::default(), &mut || {})
    }

    /// Opens `target` as [`Input::open_with`] does, asking what its file system is only if it
    /// is not the one `known` last met: one `fstatfs` per file system instead of one per file
    /// for whoever opens many files. `before_waiting` is called before waiting for a FIFO's
    /// writer (see [`open_for_reading`]).
    pub(crate) fn open_with_known(
        target: &Target,
        mode: ReadMode,
        known: &mut FileSystems,
        before_waiting: &mut dyn FnMut(),
    ) -> Result<Input, InputError> {
        let (file, meta) = match target {
            Target::Stdin => return Input::open_stdin(claim_stdin(), mode, known),
            Target::Path(p) => open_for_reading(p, false, before_waiting)?,
            Target::File(p) => open_for_reading(p, true, before_waiting)?,
            Target::Url(url) => return remote::open(url),
        };
        Input::from_open(file, &meta, mode, false, known)
    }

    /// Opens standard input if `claimed` ([`claim_stdin`], which the engine does apart, in
    /// the order of its tasks), to be read with `mode` if it is sized; an empty stream if not.
    ///
    /// Redirected from a file (`mtsum < file`), standard input is hashed as that file is, by
    /// positioned reads, from where it stands to its end: the bytes coreutils would read
    /// (after `head -c 10` read some, the rest), with no stream limit for a layout that needs
    /// the length. Anything else (a pipe) is read as a stream.
    pub(crate) fn open_stdin(
        claimed: bool,
        mode: ReadMode,
        known: &mut FileSystems,
    ) -> Result<Input, InputError> {
        if !claimed {
            return Ok(Input::Stream(Box::new(io::empty())));
        }
        let file = stdin_file()?;
        refuse_write_only(&file)?;
        let meta = file.metadata()?;
        Input::from_open(file, &meta, mode, true, known)
    }

    /// The input that `file`, open with metadata `meta`, makes; `stdin` if it is standard
    /// input, whose bytes are those from where it stands.
    fn from_open(
        file: File,
        meta: &std::fs::Metadata,
        mode: ReadMode,
        stdin: bool,
        known: &mut FileSystems,
    ) -> Result<Input, InputError> {
        let ft = meta.file_type();
        if ft.is_dir() {
            return Err(InputError::IsADirectory);
        }
        // A file whose size the file system does not report truly (procfs, sysfs, ...) is read
        // as a stream, to its end, as coreutils reads it: sized reads would stop at `st_size`
        // and print the digest of other bytes than the file's.
        if ft.is_file() && size_is_unreported(&file, meta, known) {
            return Ok(Input::Stream(Box::new(file)));
        }
        if !ft.is_file() && !ft.is_block_device() {
            return Ok(Input::Stream(Box::new(file)));
        }
        let is_block_device = ft.is_block_device();
        // Where standard input stands, before seeking to a block device's end moves it.
        let stdin_at = match stdin {
            true => Some(io::Seek::stream_position(&mut &file)?),
            false => None,
        };
        // `stat` says 0 for a block device; its size is where seeking to the end lands.
        let len = if is_block_device {
            io::Seek::seek(&mut &file, io::SeekFrom::End(0))?
        } else {
            meta.len()
        };
        // An empty file was read at its end by `size_is_unreported`; a block device ends
        // where seeking to the end landed.
        let end = match is_block_device || len == 0 {
            true => End::Seen,
            false => End::Unknown,
        };
        let start = match stdin_at {
            None => 0,
            // Standard input is left at the end, where coreutils, which reads it, leaves it:
            // `(mtsum; cat) < file` gives `cat` nothing, as with `sha256sum`. Positioned reads
            // do not move it, so it is moved here, once, and left alone if it stood past the
            // end (where nothing is read).
            Some(at) => {
                io::Seek::seek(&mut &file, io::SeekFrom::Start(at.max(len)))?;
                at.min(len)
            }
        };
        let stamp = Stamp::new(len, Mtime::of(meta));
        let sized = SizedFile::new(file, stamp, start, is_block_device, end);
        Ok(Input::Sized(sized.with_mode(mode, stdin_at.is_some())))
    }
}

/// Fails with `EBADF`, as a read would, when `file` is open for writing only: standard input
/// redirected so (`mtsum 0> file`, `0>> file`). coreutils' first read says so; positioned
/// reads of an empty file, or of one standing at its end, make no read, and would print the
/// digest of no bytes for an input that cannot be read at all.
fn refuse_write_only(file: &File) -> io::Result<()> {
    // SAFETY: fcntl on our own open descriptor with integer arguments.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    match flags {
        -1 => Err(io::Error::last_os_error()),
        f if f & libc::O_ACCMODE == libc::O_WRONLY => {
            Err(io::Error::from_raw_os_error(libc::EBADF))
        }
        _ => Ok(()),
    }
}

/// Opens `path` to read, and its metadata. Opening a FIFO waits for a writer, for as long as
/// that takes (as `cat fifo` does); so may opening a file another process holds a lease on.
/// Then `before_waiting` is called first, so that a caller holding finished results (a
/// reader's batch of small files) hands them on instead of keeping them while it waits.
///
/// With `regular_only` (a file the walk found: it may have been replaced by a FIFO since,
/// whose writer may never come), anything but a regular file is refused instead.
///
/// The file is opened without waiting (`O_NONBLOCK`), which costs nothing more: Linux ignores
/// the flag when reading regular files and block devices, so it stays on them (turning it off
/// was two more system calls a file, 15 % of the CPU time of 20 000 files of a few bytes); a
/// stream gets blocking reads. A FIFO is waited for on the descriptor already open, not
/// opened again: a writer let in by the first open could otherwise write, close and leave
/// before a second open, which would then wait for a writer that never comes.
fn open_for_reading(
    path: &Path,
    regular_only: bool,
    before_waiting: &mut dyn FnMut(),
) -> Result<(File, std::fs::Metadata), InputError> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    let file = match opened {
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => {
            before_waiting();
            File::open(path)?
        }
        opened => opened?,
    };
    let meta = file.metadata()?;
    let ft = meta.file_type();
    if ft.is_file() {
        return Ok((file, meta));
    }
    if regular_only {
        return Err(InputError::NotRegular);
    }
    if ft.is_block_device() || ft.is_dir() {
        return Ok((file, meta));
    }
    if ft.is_fifo() {
        before_waiting();
        wait_for_writer(&file)?;
    }
    set_status_flag(&file, libc::O_NONBLOCK, false)?;
    Ok((file, meta))
}

/// Waits until the FIFO open on `file` has bytes to read or a writer came and left (its end):
/// what a blocking open and the first read would wait for. A blocking read alone would not
/// wait: with no writer yet it finds the end at once.
fn wait_for_writer(file: &File) -> io::Result<()> {
    let mut fd = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: poll reads and writes the one pollfd we own, for the length we give.
        if unsafe { libc::poll(&mut fd, 1, -1) } >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Whether `file`, a regular file of `meta`, may hold other than `st_size` bytes: it lives
/// on a file system known to make sizes up (procfs and sysfs say 0 or 4096 whatever the
/// content), or it claims to be empty yet a read finds a byte (some FUSE and network file
/// systems). A file that really is empty is not one of them, and keeps the sized path.
fn size_is_unreported(file: &File, meta: &std::fs::Metadata, known: &mut FileSystems) -> bool {
    if known.makes_sizes_up(file, meta.dev()) {
        return true;
    }
    let mut byte = [0u8; 1];
    meta.len() == 0
        && matches!(
            std::os::unix::fs::FileExt::read_at(file, &mut byte, 0),
            Ok(1)
        )
}

/// Whether the file systems met so far make file sizes up, by device, so that opening many
/// files asks the kernel once per file system. A device number names one file system only
/// while it stays mounted: keep one of these for a run over many files, not for the life of
/// a process.
#[derive(Debug, Default)]
pub(crate) struct FileSystems {
    /// The last device asked about, and the answer.
    last: Option<(u64, bool)>,
}

impl FileSystems {
    /// Whether `file`, on device `dev`, lives on a file system known to make sizes up.
    // The magic numbers and `f_type` are `c_long` on some targets and `c_uint` on others.
    #[allow(clippy::unnecessary_cast)]
    fn makes_sizes_up(&mut self, file: &File, dev: u64) -> bool {
        const PSEUDO: [i64; 7] = [
            libc::PROC_SUPER_MAGIC as i64,
            libc::SYSFS_MAGIC as i64,
            libc::DEBUGFS_MAGIC as i64,
            libc::TRACEFS_MAGIC as i64,
            libc::SECURITYFS_MAGIC as i64,
            libc::CGROUP2_SUPER_MAGIC as i64,
            0x6265_6570, // configfs: CONFIGFS_MAGIC, which libc does not name
        ];
        if let Some((last, pseudo)) = self.last
            && last == dev
        {
            return pseudo;
        }
        // SAFETY: fstatfs writes into the zeroed struct we own; the descriptor is open.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } != 0 {
            return false;
        }
        let pseudo = PSEUDO.contains(&(st.f_type as i64));
        self.last = Some((dev, pseudo));
        pseudo
    }
}

/// Tells the kernel how we read: front to back (`POSIX_FADV_SEQUENTIAL`, so that it reads
/// ahead aggressively), or with no read-ahead at all (`POSIX_FADV_RANDOM`). The advice holds
/// for our open file only.
fn advise(file: &File, advice: libc::c_int) {
    // SAFETY: posix_fadvise only reads its integer arguments; the descriptor is open for the
    // duration of the call. A failure merely means no hint, so the result is ignored.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, advice);
    }
}

/// The longest file read through the cache without the sequential hint of [`advise`]: the
/// engine reads at least 128 KiB per call, so the hint could help only its second read, and
/// skipping it saves a system call per small file (many small files: 20 000 fewer calls).
const UNADVISED_LEN: u64 = 128 << 10;

/// Where the buffers of the pool start: a page, which satisfies every `O_DIRECT` memory
/// alignment Linux asks for (`stx_dio_mem_align` is at most the logical block size).
const BUFFER_ALIGN: usize = 4096;

/// The alignment of `O_DIRECT` offsets and lengths when `statx` does not say (before Linux
/// 6.1): the largest logical block size of common disks.
const DEFAULT_DIRECT_ALIGN: u64 = 4096;

/// The alignment `O_DIRECT` needs for offsets and lengths on `file`, or why it cannot be used.
fn direct_alignment(file: &File) -> Result<u64, String> {
    // SAFETY: statx writes into the zeroed struct we own; the empty path with AT_EMPTY_PATH
    // names the open descriptor itself.
    let (rc, stx) = unsafe {
        let mut stx: libc::statx = std::mem::zeroed();
        let rc = libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN | libc::STATX_DIO_READ_ALIGN,
            &mut stx,
        );
        (rc, stx)
    };
    if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 {
        return Ok(DEFAULT_DIRECT_ALIGN);
    }
    if stx.stx_dio_offset_align == 0 {
        return Err("not supported by the file system".into());
    }
    if stx.stx_dio_mem_align as usize > BUFFER_ALIGN {
        return Err(format!(
            "it needs buffers aligned to {} bytes",
            stx.stx_dio_mem_align
        ));
    }
    // Reads may be allowed a finer alignment than writes (Linux 6.14, XFS).
    let align =
        if stx.stx_mask & libc::STATX_DIO_READ_ALIGN != 0 && stx.stx_dio_read_offset_align != 0 {
            stx.stx_dio_read_offset_align
        } else {
            stx.stx_dio_offset_align
        };
    match u64::from(align) {
        a if a.is_power_of_two() => Ok(a),
        a => Err(format!("unusual alignment of {a} bytes")),
    }
}

/// Turns `O_DIRECT` on for an open file; Linux refuses it with `EINVAL` where the file system
/// cannot (tmpfs).
fn set_direct(file: &File, on: bool) -> io::Result<()> {
    set_status_flag(file, libc::O_DIRECT, on)
}

/// Turns the file status flag `flag` (`O_DIRECT`, `O_NONBLOCK`) on or off for an open file.
fn set_status_flag(file: &File, flag: libc::c_int, on: bool) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on our own open descriptor with integer arguments.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        let flags = if on { flags | flag } else { flags & !flag };
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether the file takes `RWF_DONTCACHE` reads: it is asked with a one-byte read.
fn supports_dontcache(file: &File) -> Result<(), String> {
    let mut byte = [0u8];
    match preadv2(
        file,
        &mut [io::IoSliceMut::new(&mut byte)],
        0,
        libc::RWF_DONTCACHE,
    ) {
        Ok(_) => Ok(()),
        Err(e) => Err(os_message(&e)),
    }
}

/// One `preadv2` call into `bufs`, filled in order; `flags` 0 is a plain `preadv` (`pread`
/// for one buffer).
fn preadv2(
    file: &File,
    bufs: &mut [io::IoSliceMut<'_>],
    offset: u64,
    flags: libc::c_int,
) -> io::Result<usize> {
    if let ([buf], 0) = (&mut *bufs, flags) {
        return file.read_at(buf, offset);
    }
    let offset =
        libc::off_t::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let count = libc::c_int::try_from(bufs.len().min(IOV_MAX)).expect("IOV_MAX fits");
    // SAFETY: `IoSliceMut` is ABI-compatible with `iovec` on Unix; the slices are borrowed
    // mutably for the call, and `count` is at most their number.
    let n = unsafe {
        let iov = bufs.as_ptr().cast::<libc::iovec>();
        if flags == 0 {
            libc::preadv(file.as_raw_fd(), iov, count, offset)
        } else {
            libc::preadv2(file.as_raw_fd(), iov, count, offset, flags)
        }
    };
    match n {
        n if n >= 0 => Ok(n as usize),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Reads into `buf` from `offset` until it holds at least `need` bytes or the file ends, and
/// returns the bytes read, which may be up to `buf.len()`. With `direct`, a read that ends off
/// a block boundary is the end of the file: the next read would start unaligned.
fn read_full(
    file: &File,
    buf: &mut [u8],
    need: usize,
    offset: u64,
    flags: libc::c_int,
    direct: Option<u64>,
) -> io::Result<usize> {
    read_full_vectored(
        file,
        &mut [io::IoSliceMut::new(buf)],
        need,
        offset,
        flags,
        direct,
    )
}

/// [`read_full`] into the places of `bufs`, the file's bytes filling one after another: the
/// pieces of a spread chunk, the chunks of readers that follow one another.
fn read_full_vectored(
    file: &File,
    mut bufs: &mut [io::IoSliceMut<'_>],
    need: usize,
    offset: u64,
    flags: libc::c_int,
    direct: Option<u64>,
) -> io::Result<usize> {
    let mut got = 0;
    while got < need && !bufs.is_empty() {
        match preadv2(file, bufs, offset + got as u64, flags) {
            Ok(0) => break,
            Ok(n) => {
                got += n;
                io::IoSliceMut::advance_slices(&mut bufs, n);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        if direct.is_some_and(|a| !(got as u64).is_multiple_of(a)) {
            break;
        }
    }
    Ok(got)
}

/// The most iovecs Linux takes in one vectored read (`UIO_MAXIOV`): a chunk of more pieces
/// is read contiguous.
const IOV_MAX: usize = 1024;

/// How a read lays the file's bytes out in its buffer: pieces of `piece` bytes, each starting
/// `stride` bytes after the one before. Contiguous when the two are equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Spacing {
    piece: usize,
    stride: usize,
}

impl Spacing {
    /// `len` bytes side by side, as one piece.
    fn contiguous(len: usize) -> Spacing {
        let piece = len.max(1);
        Spacing {
            piece,
            stride: piece,
        }
    }

    /// Pieces of `piece` bytes one cache line further apart than their length, rounded up to
    /// a line: successive pieces start on successive lines of a page (see
    /// [`RangeReader::spread`]).
    fn spread(piece: NonZeroUsize) -> Spacing {
        let piece = piece.get();
        Spacing {
            piece,
            stride: piece.next_multiple_of(CACHE_LINE) + CACHE_LINE,
        }
    }

    /// The pieces that `len` bytes make, the last one shorter if need be.
    fn count(self, len: usize) -> usize {
        len.div_ceil(self.piece)
    }

    /// The bytes of buffer that `len` bytes take: from the first piece's start to the last
    /// one's end.
    fn span(self, len: usize) -> usize {
        match self.count(len) {
            0 => 0,
            n => (n - 1) * self.stride + (len - (n - 1) * self.piece),
        }
    }

    /// The places in `buf` of `need` bytes laid out in pieces, and of `extra` bytes more
    /// right after the last piece (a file's last read asks for one more): one slice per
    /// piece, to read into with one vectored read.
    fn slices(self, buf: &mut [u8], need: usize, extra: usize) -> Vec<io::IoSliceMut<'_>> {
        let count = self.count(need).max(1);
        let mut slices = Vec::with_capacity(count);
        let mut rest = buf;
        for k in 0..count {
            if k + 1 == count {
                slices.push(io::IoSliceMut::new(
                    &mut rest[..need + extra - k * self.piece],
                ));
                break;
            }
            let (place, after) = std::mem::take(&mut rest).split_at_mut(self.stride);
            slices.push(io::IoSliceMut::new(&mut place[..self.piece]));
            rest = after;
        }
        slices
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

/// Reads `stream` to its end into memory and returns its bytes as a sized file, read with
/// `pread` (so that a layout that needs the length hashes them as a file of that length);
/// `None` if it holds more than `limit` bytes (those read are dropped: a stream cannot give
/// them twice).
pub fn hold_stream(stream: &mut dyn Read, limit: u64) -> Result<Option<SizedFile>, InputError> {
    // An anonymous file in memory, which `SizedFile` reads like any other.
    // SAFETY: memfd_create reads the NUL-terminated name and returns a new descriptor or -1.
    let fd = unsafe { libc::memfd_create(c"mtsum-stream".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error().into());
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    let mut file = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let (mut held, mut buffer) = (0u64, Buffer::new());
    loop {
        let chunk = read_stream_chunk(stream, buffer, MAX_STREAM_READ).map_err(|(_, e)| e)?;
        if chunk.is_empty() {
            break;
        }
        held += chunk.len() as u64;
        if held > limit {
            return Ok(None);
        }
        for piece in chunk.pieces().iter() {
            io::Write::write_all(&mut file, piece)?;
        }
        buffer = chunk.finish().0;
    }
    let stamp = Stamp::new(held, Mtime::of(&file.metadata()?));
    Ok(Some(SizedFile::new(file, stamp, 0, false, End::Seen)))
}

impl SizedFile {
    /// A file read with `pread` until [`SizedFile::with_mode`] says otherwise.
    fn new(file: File, stamp: Stamp, start: u64, is_block_device: bool, end: End) -> SizedFile {
        SizedFile {
            file: Backing::File(file),
            stamp,
            start,
            is_block_device,
            mode: AtomicU8::new(ReadMode::Pread as u8),
            align: 1,
            fallback: OnceLock::new(),
            end: AtomicU8::new(end as u8),
        }
    }

    /// A remote object, read with `pread` (range GETs guarded by its version, which stands
    /// for the stamp) and never past its length.
    #[cfg(feature = "remote")]
    pub(crate) fn remote(object: remote::Object) -> SizedFile {
        SizedFile {
            stamp: Stamp::new(object.len(), Mtime { sec: 0, nsec: 0 }),
            file: Backing::Remote(object),
            start: 0,
            is_block_device: false,
            mode: AtomicU8::new(ReadMode::Pread as u8),
            align: 1,
            fallback: OnceLock::new(),
            end: AtomicU8::new(End::Seen as u8),
        }
    }

    /// For a remote object, its version ([`remote::version_of`]): what another process
    /// opens it at with [`remote::Url::expecting`]. `None` for a file.
    pub fn remote_version(&self) -> Option<u64> {
        match &self.file {
            Backing::File(_) => None,
            #[cfg(feature = "remote")]
            Backing::Remote(object) => Some(object.version()),
        }
    }

    /// Switches to `wanted`, or to its fallback when the file refuses it. A `shared` open
    /// file (standard input, handed over by another process, which may read it too) refuses
    /// `O_DIRECT`: the flag is the open file's, and would change that process's reads too.
    fn with_mode(mut self, wanted: ReadMode, shared: bool) -> SizedFile {
        let Ok(file) = self.file.local() else {
            return self;
        };
        let direct = || match shared {
            true => Err("standard input is an open file shared with other processes".into()),
            false => direct_alignment(file).and_then(|align| {
                set_direct(file, true)
                    .map(|()| align)
                    .map_err(|e| os_message(&e))
            }),
        };
        let used = match wanted {
            ReadMode::Pread | ReadMode::Mmap => wanted,
            ReadMode::Direct => match direct() {
                Ok(align) => {
                    self.align = align;
                    ReadMode::Direct
                }
                Err(cause) => self.fall_back(wanted, cause),
            },
            ReadMode::DontCache => match supports_dontcache(file) {
                Ok(()) => ReadMode::DontCache,
                Err(cause) => self.fall_back(wanted, cause),
            },
        };
        self.mode.store(used as u8, Ordering::Relaxed);
        match used {
            // A file that a read or two take whole leaves nothing to read ahead: no call.
            ReadMode::Pread if self.len() <= UNADVISED_LEN => {}
            ReadMode::Pread | ReadMode::Mmap => advise(file, libc::POSIX_FADV_SEQUENTIAL),
            // Read-ahead at the end of one job fills the start of the next, which another
            // worker may have read already: those pages would stay cached for good. Measured
            // on a cold 4 GiB file, `-p 2` tree: 7–10 % of the file left cached with
            // read-ahead, nothing without.
            ReadMode::DontCache => advise(file, libc::POSIX_FADV_RANDOM),
            ReadMode::Direct => {}
        }
        self
    }

    /// Records that `wanted` could not be used, and returns the mode used instead: for
    /// `O_DIRECT`, `RWF_DONTCACHE` if the file takes it (it also keeps the cache clean), else
    /// ordinary reads.
    fn fall_back(&self, wanted: ReadMode, cause: String) -> ReadMode {
        let used = match wanted {
            ReadMode::Direct
                if self
                    .file
                    .local()
                    .is_ok_and(|f| supports_dontcache(f).is_ok()) =>
            {
                ReadMode::DontCache
            }
            _ => ReadMode::Pread,
        };
        let _ = self.fallback.set(Fallback {
            wanted,
            used,
            cause,
        });
        self.mode.store(used as u8, Ordering::Relaxed);
        used
    }

    /// The length at the time the file was opened (of its bytes from where standard input
    /// stood, for standard input).
    pub fn len(&self) -> u64 {
        self.stamp.len - self.start
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How the file is being read.
    pub fn read_mode(&self) -> ReadMode {
        ReadMode::from_u8(self.mode.load(Ordering::Relaxed))
    }

    /// The read mode asked for that the file refused, if it did, and what replaced it.
    pub fn fallback(&self) -> Option<&Fallback> {
        self.fallback.get()
    }

    /// Fills `buf` from `offset` through the page cache; a file that ends before `buf` is
    /// full has shrunk since it was opened.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<(), InputError> {
        let offset = self.start + offset;
        #[cfg(feature = "remote")]
        if let Backing::Remote(object) = &self.file {
            let need = buf.len();
            return object.read_at(&mut [io::IoSliceMut::new(buf)], need, offset);
        }
        self.file.local()?.read_exact_at(buf, offset).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                InputError::Changed
            } else {
                InputError::Io(e)
            }
        })
    }

    /// A reader of the bytes `range` as chunks of about `chunk_size` bytes, in the file's
    /// read mode.
    pub fn range_reader(&self, range: Range<u64>, chunk_size: usize) -> RangeReader<'_> {
        RangeReader {
            file: self,
            pos: self.start + range.start,
            end: self.start + range.end,
            chunk: chunk_size.max(1),
            place: Place::Aligned,
        }
    }

    /// Fails with [`InputError::Changed`] if the size or modification time is no longer what
    /// it was when the file was opened, or with [`InputError::SizeMisreported`] if they did
    /// not move but the file holds bytes past its length. Call it after the last byte was
    /// read.
    ///
    /// The read of the last byte asks for one more where it can ([`RangeReader`]): then this
    /// costs one `fstat`, as before. Only a file whose end no read has looked past (read with
    /// `mmap`, or with `O_DIRECT` to a length on a block boundary) costs one more read here.
    pub fn check_unchanged(&self) -> Result<(), InputError> {
        // Past the end first, the stamp after: a file that grew meanwhile is `Changed`.
        if self.end() == End::Unknown {
            self.look_past_end()?;
        }
        self.check_stamp()?;
        self.check_end()
    }

    /// The file from its first byte (for standard input, where it stood) to its end as a
    /// stream, whatever its length said: what a file found [`InputError::SizeMisreported`] is
    /// read as instead. Call it once every read of the file is done: it shares the descriptor
    /// (and turns `O_DIRECT` off).
    pub fn to_stream(&self) -> Result<Box<dyn Read + Send>, InputError> {
        let file = self.file.local()?.try_clone()?;
        if self.read_mode() == ReadMode::Direct {
            set_direct(&file, false)?;
        }
        io::Seek::seek(&mut &file, io::SeekFrom::Start(self.start))?;
        Ok(Box::new(file))
    }

    /// Fails with [`InputError::SizeMisreported`] if a read found bytes past the length.
    fn check_end(&self) -> Result<(), InputError> {
        match self.end() {
            End::Beyond => Err(InputError::SizeMisreported {
                size: self.stamp.len,
                more: true,
            }),
            End::Seen | End::Unknown => Ok(()),
        }
    }

    /// Why a read ended before the length: the file shrank ([`InputError::Changed`]), or,
    /// its size and mtime unmoved, it never held that many bytes (a file system that reports
    /// 4096 bytes for a 20-byte file, as sysfs does).
    fn ended_early(&self) -> InputError {
        match self.check_stamp() {
            Err(e) => e,
            Ok(()) => InputError::SizeMisreported {
                size: self.stamp.len,
                more: false,
            },
        }
    }

    fn end(&self) -> End {
        match self.end.load(Ordering::Relaxed) {
            1 => End::Seen,
            2 => End::Beyond,
            _ => End::Unknown,
        }
    }

    /// Records what a read that asked for bytes past the length found: `beyond` if it got
    /// some. Once beyond, always beyond.
    fn saw_end(&self, beyond: bool) {
        let end = if beyond { End::Beyond } else { End::Seen };
        self.end.fetch_max(end as u8, Ordering::Relaxed);
    }

    /// Reads at the length, as the file's read mode allows (`O_DIRECT`: the aligned block
    /// that holds it), and records whether there were bytes.
    fn look_past_end(&self) -> Result<(), InputError> {
        let len = self.stamp.len;
        let (base, direct) = match self.read_mode() {
            ReadMode::Direct => (len - len % self.align, Some(self.align)),
            _ => (len, None),
        };
        // One byte past the length, or the whole block that holds it.
        let want = direct.map_or(1, |a| a as usize);
        let mut buffer = Buffer::new();
        let buf = buffer.get_mut(want)?;
        let got = read_full(self.file.local()?, buf, want, base, 0, direct)?;
        self.saw_end(got > (len - base) as usize);
        Ok(())
    }

    /// Fails with [`InputError::Changed`] if the size or modification time is no longer what
    /// it was when the file was opened.
    fn check_stamp(&self) -> Result<(), InputError> {
        let file = match &self.file {
            Backing::File(file) => file,
            // Every range GET was guarded by the version the object was opened at.
            #[cfg(feature = "remote")]
            Backing::Remote(_) => return Ok(()),
        };
        let meta = file.metadata()?;
        let len = if self.is_block_device {
            io::Seek::seek(&mut &*file, io::SeekFrom::End(0))?
        } else {
            meta.len()
        };
        if Stamp::new(len, Mtime::of(&meta)) != self.stamp {
            return Err(InputError::Changed);
        }
        Ok(())
    }
}

/// How many cache lines apart the buffered reads of successive buffers start past their page
/// boundary, cycling over a page: 64 lines of 64 bytes, every set of an L1 cache of 32 KiB,
/// 8 ways. Each lane of a multi-buffer kernel hashes from its own buffer; had they all started
/// on a page boundary, every lane's row of a block would fall in the same sets of L1, 32
/// lanes bringing their rows into the same two sets of 8 ways at every block and each row
/// coming again from L2 (see `docs/performance.md`, "MD5 lanes 4 KiB apart on Zen 4"). A
/// worker's pool holds two rounds of the widest lane set, 64 buffers: made one after the
/// other, they start at 64 different lines, so the lanes' rows spread over every set.
/// On Zen 4, `mtsum -p 2 -a md5`, cached file, process CPU, medians of 7 interleaved runs:
/// 4 GiB (32 lanes) 961 → 904 ms, with the AVX2 kernel 1300 → 985; 2 GiB (16 lanes)
/// 580 → 528; `-p 1`, 4 GiB, 1052 → 945; SHA-256, SHA-512 and `-r` level.
/// `O_DIRECT` reads keep the page boundary (the memory alignment it requires); mapped windows
/// are the page cache's own pages.
const STAGGER_LINES: usize = 64;

/// The size of a cache line, the step of the stagger.
const CACHE_LINE: usize = 64;

/// The stagger of the next buffer made, in lines (see [`STAGGER_LINES`]).
static NEXT_STAGGER: AtomicUsize = AtomicUsize::new(0);

/// Memory to read into, handed from reader to hasher and back. It starts on a page boundary
/// (as `O_DIRECT` requires) and is allocated, fallibly, when first needed: a worker that only
/// maps windows, or only meets small files, never allocates its full share. Buffered reads
/// for a lane start a few cache lines past the boundary ([`RangeReader::staggered`]).
pub struct Buffer {
    storage: Vec<u8>,
    /// Where buffered reads for a lane start past the page boundary: a number of cache
    /// lines, a different one for each buffer of a pool (see [`STAGGER_LINES`]).
    lead: usize,
}

impl Default for Buffer {
    fn default() -> Buffer {
        let line = NEXT_STAGGER.fetch_add(1, Ordering::Relaxed) % STAGGER_LINES;
        Buffer {
            storage: Vec::new(),
            lead: line * CACHE_LINE,
        }
    }
}

impl Buffer {
    /// An empty buffer; it allocates on first use.
    pub fn new() -> Buffer {
        Buffer::default()
    }

    fn aligned_start(&self) -> usize {
        self.storage.as_ptr().align_offset(BUFFER_ALIGN)
    }

    /// The first `len` bytes, page-aligned, growing the buffer if needed. A buffer grown for
    /// `len` bytes has room for `len + 1` (it holds `BUFFER_ALIGN` more, and starts less than
    /// that before its aligned start): the extra byte of a file's last read costs no memory.
    fn get_mut(&mut self, len: usize) -> io::Result<&mut [u8]> {
        if self.storage.is_empty() || self.storage.len() - self.aligned_start() < len {
            let mut storage = Vec::new();
            storage
                .try_reserve_exact(len + BUFFER_ALIGN)
                .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
            storage.resize(len + BUFFER_ALIGN, 0);
            self.storage = storage;
        }
        let start = self.aligned_start();
        Ok(&mut self.storage[start..start + len])
    }
}

/// Bytes ready to hash: part of a buffer that was read into, or a mapped window.
pub struct Chunk {
    buffer: Buffer,
    bytes: Bytes,
}

enum Bytes {
    /// `len` bytes laid out by `spacing` from `start` in the buffer's aligned memory.
    Read {
        start: usize,
        len: usize,
        spacing: Spacing,
    },
    Mapped(mmap::Window),
}

impl Bytes {
    /// The bytes `range` of the buffer's aligned memory, side by side.
    fn contiguous(range: Range<usize>) -> Bytes {
        Bytes::Read {
            start: range.start,
            len: range.len(),
            spacing: Spacing::contiguous(range.len()),
        }
    }
}

impl Chunk {
    /// The bytes to hash, where they lie: side by side (one piece), or the leaves of a
    /// spread read ([`RangeReader::spread`]) a cache line further apart than their length.
    pub fn pieces(&self) -> Pieces<'_> {
        match &self.bytes {
            &Bytes::Read {
                start,
                len,
                spacing,
            } => {
                let at = self.buffer.aligned_start() + start;
                Pieces {
                    span: &self.buffer.storage[at..at + spacing.span(len)],
                    len,
                    spacing,
                }
            }
            Bytes::Mapped(window) => Pieces::contiguous(window.bytes()),
        }
    }

    /// The bytes to hash if they lie side by side, as those of every chunk do but a spread
    /// read's.
    pub fn contiguous(&self) -> Option<&[u8]> {
        self.pieces().contiguous_bytes()
    }

    /// How many bytes of the input the chunk holds.
    pub fn len(&self) -> usize {
        self.pieces().len()
    }

    /// Whether the chunk holds no byte: a stream's end.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Gives the buffer back for the next read, with [`InputError::Changed`] if the bytes
    /// just hashed were not the file's (a mapped page beyond its end, see the `mmap` module).
    pub fn finish(self) -> (Buffer, Result<(), InputError>) {
        let ok = match &self.bytes {
            Bytes::Mapped(window) if window.faulted() => Err(InputError::Changed),
            _ => Ok(()),
        };
        (self.buffer, ok)
    }
}

/// A chunk's bytes where they lie in memory: `len` bytes in pieces of
/// [`Pieces::piece_len`] bytes, each starting [`Pieces::stride`] bytes after the one before,
/// the last one shorter if need be. Bytes side by side are one piece. Whatever the layout,
/// feeding [`Pieces::iter`] in order to a hasher hashes the chunk; only a hasher of equal
/// messages (a chunk's leaves, in SIMD lanes) has a use for the stride.
#[derive(Clone, Copy, Debug)]
pub struct Pieces<'a> {
    /// From the first piece's start to the last one's end.
    span: &'a [u8],
    len: usize,
    spacing: Spacing,
}

impl<'a> Pieces<'a> {
    /// `bytes`, as one piece.
    pub fn contiguous(bytes: &'a [u8]) -> Pieces<'a> {
        Pieces {
            span: bytes,
            len: bytes.len(),
            spacing: Spacing::contiguous(bytes.len()),
        }
    }

    /// `len` bytes in pieces of `piece` bytes laid out in `span`, piece `i` at
    /// `span[i * stride ..]` (the last one shorter if need be, ending `span`): what a caller
    /// that reads leaves into places of its own hands to
    /// [`JobHasher::update_pieces`](crate::layout::JobHasher::update_pieces). `None` if
    /// `piece` is 0, `stride` less than `piece`, or `span` not the length the pieces take.
    pub fn spread(span: &'a [u8], len: usize, piece: usize, stride: usize) -> Option<Pieces<'a>> {
        let spacing = Spacing { piece, stride };
        (piece > 0 && stride >= piece && span.len() == spacing.span(len)).then_some(Pieces {
            span,
            len,
            spacing,
        })
    }

    /// The bytes of the input they hold.
    pub fn len(self) -> usize {
        self.len
    }

    /// Whether they hold no byte.
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// The length of every piece but the last, which may be shorter.
    pub fn piece_len(self) -> usize {
        self.spacing.piece
    }

    /// How far apart two successive pieces start, at least [`Pieces::piece_len`].
    pub fn stride(self) -> usize {
        self.spacing.stride
    }

    /// The pieces of [`Pieces::piece_len`] bytes: all of them, or all but a shorter last.
    pub fn whole(self) -> usize {
        self.len / self.spacing.piece
    }

    /// The memory from the first piece's start to the last one's end: piece `i` is its bytes
    /// `i * stride ..`, of `piece_len` bytes (the last to the end).
    pub fn span(self) -> &'a [u8] {
        self.span
    }

    /// The bytes if they lie side by side (at most one piece).
    pub fn contiguous_bytes(self) -> Option<&'a [u8]> {
        (self.spacing.count(self.len) <= 1).then_some(self.span)
    }

    /// The pieces in order.
    pub fn iter(self) -> impl Iterator<Item = &'a [u8]> {
        let Spacing { piece, stride } = self.spacing;
        (0..self.spacing.count(self.len)).map(move |i| {
            let start = i * stride;
            &self.span[start..start + piece.min(self.len - i * piece)]
        })
    }
}

/// The most bytes asked of a stream in one `read` (see [`read_stream_chunk`]).
const MAX_STREAM_READ: usize = 1 << 20;

/// Reads the next chunk of a stream, of at most `chunk_size` bytes; an empty chunk means the
/// stream ended. On failure the buffer comes back with the error.
pub fn read_stream_chunk(
    reader: &mut dyn Read,
    mut buffer: Buffer,
    chunk_size: usize,
) -> Result<Chunk, (Buffer, InputError)> {
    // procfs's sysctl files allocate a kernel buffer of the size asked for and refuse large
    // ones (ENOMEM at 4 MiB), so a stream is read in at most 1 MiB per call, like a pipe.
    let result = buffer
        .get_mut(chunk_size.clamp(1, MAX_STREAM_READ))
        .and_then(|buf| {
            loop {
                match reader.read(buf) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => break other,
                }
            }
        });
    match result {
        Ok(n) => Ok(Chunk {
            buffer,
            bytes: Bytes::contiguous(0..n),
        }),
        Err(e) => Err((buffer, e.into())),
    }
}

/// Reads the bytes of one job of a sized file as a sequence of [`Chunk`]s.
pub struct RangeReader<'a> {
    file: &'a SizedFile,
    /// The next byte to deliver and the end of the range, as offsets in the file (the
    /// range's own plus the file's `start`), which is what reads and their alignment need.
    pos: u64,
    end: u64,
    chunk: usize,
    /// Where buffered reads put the bytes in the buffer.
    place: Place,
}

/// Where a [`RangeReader`]'s buffered reads put the bytes in the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Side by side from the page boundary.
    Aligned,
    /// Side by side from [`Buffer::lead`] bytes past the page boundary.
    Staggered,
    /// In pieces of this many bytes, a cache line further apart than their length.
    Spread(NonZeroUsize),
}

impl RangeReader<'_> {
    /// Starts buffered reads a buffer's own number of cache lines past the page boundary (see
    /// `STAGGER_LINES`): for the chunks of a message that has a lane to itself, so that the
    /// lanes, each hashing from its own buffer, do not share L1 sets. Not for a chunk whose
    /// leaves fill the lanes: moving the whole chunk leaves them as far apart from each other
    /// as they were, so the lead buys nothing there, and leaves of 4 KiB would straddle two
    /// pages (`mtsum -p 1 -a md5 -t rfc6962 -l 4K`, 2 GiB, hashing thread's CPU, medians of
    /// 7, every read staggered: 315 → 354 ms; runs of one binary against itself differ by
    /// up to 5 % on this host). Such a chunk's leaves are separated from each other by
    /// [`RangeReader::spread`].
    pub fn staggered(mut self) -> Self {
        self.place = Place::Staggered;
        self
    }

    /// Reads each chunk (by `pread` or `RWF_DONTCACHE`) in pieces of `piece` bytes that start
    /// one cache line further apart than their length (rounded up to a line), with one
    /// `preadv2` and an iovec per piece: for a chunk of whole leaves that a multi-buffer
    /// kernel hashes side by side. Leaves a multiple of 4 KiB apart put every lane's row of a
    /// block into the same sets of L1 (on Zen 4, 8 ways of 4 KiB), each row coming again from
    /// L2; a line further apart each, they fall into successive sets. The same bytes are
    /// copied by the same number of calls; only their places change (see
    /// `docs/performance.md`, "Chunks of leaves read a line apart").
    ///
    /// A chunk of one piece, or of more pieces than a vectored read takes (1024), is read
    /// side by side; `O_DIRECT` reads and mapped windows are always side by side.
    pub fn spread(mut self, piece: NonZeroUsize) -> Self {
        self.place = Place::Spread(piece);
        self
    }

    /// Whether every byte of the range was delivered.
    pub fn is_done(&self) -> bool {
        self.pos >= self.end
    }

    /// The offset of the next byte to deliver (counted from the file's start, as the range).
    pub fn position(&self) -> u64 {
        self.pos - self.file.start
    }

    /// The next bytes of the range, read into `buffer` or mapped. On failure the buffer comes
    /// back with the error. Call only while [`RangeReader::is_done`] is false.
    pub fn next_chunk(&mut self, mut buffer: Buffer) -> Result<Chunk, (Buffer, InputError)> {
        debug_assert!(!self.is_done());
        let bytes = match self.file.read_mode() {
            ReadMode::Mmap => match self.map_next() {
                Ok(Some(window)) => Ok(Bytes::Mapped(window)),
                Ok(None) => self.read_next(&mut buffer, 0),
                Err(e) => Err(e),
            },
            ReadMode::Direct => self.read_direct(&mut buffer),
            ReadMode::DontCache => self.read_next(&mut buffer, libc::RWF_DONTCACHE),
            ReadMode::Pread => self.read_next(&mut buffer, 0),
        };
        match bytes {
            Ok(bytes) => Ok(Chunk { buffer, bytes }),
            Err(e) => Err((buffer, e)),
        }
    }

    /// Whether the chunk that ends at `stop` ends the file too (its length as opened).
    fn ends_file(&self, stop: u64) -> bool {
        stop == self.end && stop == self.file.stamp.len
    }

    /// The next chunks of `readers`, ranges of one file of which each but the last ends with
    /// this chunk where the next begins: the two halves of a small file, which the `mtsum`
    /// layout makes two leaves. Buffered reads fill them all with one `preadv`, one system
    /// call per file instead of one per leaf (a second `pread` into a second buffer cost a
    /// loop of `open`, `pread`, `close` over 20 000 small files about 0.5 µs per file on a
    /// 2-core EPYC; `mtsum -p 2 -a sha256 -r` over them took 3 % less CPU, md5 the same).
    /// Other read modes, readers that do not
    /// follow one another, and a read that fails or falls short (each reader then reports it
    /// as [`RangeReader::next_chunk`] does) read one reader after another. One result per
    /// reader, in order, each with its buffer.
    ///
    /// # Panics
    /// If there are not as many buffers as readers.
    pub fn next_chunks(
        readers: &mut [RangeReader<'_>],
        mut buffers: Vec<Buffer>,
    ) -> Vec<Result<Chunk, (Buffer, InputError)>> {
        assert_eq!(readers.len(), buffers.len(), "a buffer per reader");
        let flags = match readers.first().map(|r| r.file.read_mode()) {
            Some(ReadMode::Pread) => Some(0),
            Some(ReadMode::DontCache) => Some(libc::RWF_DONTCACHE),
            _ => None,
        };
        let follow = readers.windows(2).all(|w| {
            std::ptr::eq(w[0].file, w[1].file)
                && w[0].pos + w[0].next_len() as u64 == w[0].end
                && w[0].end == w[1].pos
        });
        if let Some(flags) = flags.filter(|_| follow && readers.len() <= IOV_MAX)
            && let Ok(bytes) = RangeReader::read_together(readers, &mut buffers, flags)
        {
            let chunks = bytes.into_iter().zip(buffers);
            return chunks
                .map(|(bytes, buffer)| Ok(Chunk { buffer, bytes }))
                .collect();
        }
        let chunks = readers.iter_mut().zip(buffers);
        chunks.map(|(r, buffer)| r.next_chunk(buffer)).collect()
    }

    /// The bytes of the next buffered read.
    fn next_len(&self) -> usize {
        (self.end - self.pos).min(self.chunk as u64) as usize
    }

    /// The next chunk by buffered reads (`pread`, or `preadv2` with `flags`).
    fn read_next(&mut self, buffer: &mut Buffer, flags: libc::c_int) -> Result<Bytes, InputError> {
        let mut bytes = RangeReader::read_together(
            std::slice::from_mut(self),
            std::slice::from_mut(buffer),
            flags,
        )?;
        Ok(bytes.pop().expect("one chunk"))
    }

    /// Where the next buffered read of `n` bytes goes in `buffer`: how far past its page
    /// boundary, and in what pieces.
    fn place_of(&self, buffer: &Buffer, n: usize) -> (usize, Spacing) {
        match self.place {
            Place::Aligned => (0, Spacing::contiguous(n)),
            Place::Staggered => (buffer.lead, Spacing::contiguous(n)),
            Place::Spread(piece) => match Spacing::spread(piece) {
                spread if (2..=IOV_MAX).contains(&spread.count(n)) => (0, spread),
                _ => (0, Spacing::contiguous(n)),
            },
        }
    }

    /// The next chunk of each of `readers`, which follow one another in one file (see
    /// [`RangeReader::next_chunks`]), into `buffers`, by buffered reads (`preadv`, or
    /// `preadv2` with `flags`) that fill them in turn, each laid out as its reader's place
    /// says. The file's last chunk asks for one byte more, at no cost: a file system that
    /// misreports the size gives it (see [`SizedFile::check_unchanged`]). No reader moves
    /// unless every chunk is whole.
    fn read_together(
        readers: &mut [RangeReader<'_>],
        buffers: &mut [Buffer],
        flags: libc::c_int,
    ) -> Result<Vec<Bytes>, InputError> {
        let last = readers.last().expect("a reader");
        let (file, start) = (last.file, readers[0].pos);
        let at_end = last.ends_file(last.pos + last.next_len() as u64);
        let (mut need, mut parts, mut slices) = (0, Vec::new(), Vec::new());
        for (i, (reader, buffer)) in readers.iter().zip(buffers.iter_mut()).enumerate() {
            let n = reader.next_len();
            let (lead, spacing) = reader.place_of(buffer, n);
            // The extra byte of the file's last read goes right after the last piece.
            let extra = usize::from(at_end && i + 1 == readers.len());
            let buf = &mut buffer.get_mut(lead + spacing.span(n) + extra)?[lead..];
            slices.extend(spacing.slices(buf, n, extra));
            parts.push(Bytes::Read {
                start: lead,
                len: n,
                spacing,
            });
            need += n;
        }
        let got = match &file.file {
            Backing::File(f) => read_full_vectored(f, &mut slices, need, start, flags, None)?,
            #[cfg(feature = "remote")]
            Backing::Remote(object) => object.read_at(&mut slices, need, start).map(|()| need)?,
        };
        if got < need {
            return Err(file.ended_early());
        }
        if at_end {
            file.saw_end(got > need);
        }
        for reader in readers.iter_mut() {
            reader.pos += reader.next_len() as u64;
        }
        Ok(parts)
    }

    /// The next chunk by `O_DIRECT`: whole aligned blocks from the block holding `pos`, of
    /// which the part inside the range is delivered. The last block of the file is read whole
    /// too; the kernel returns only the bytes up to the end of the file.
    fn read_direct(&mut self, buffer: &mut Buffer) -> Result<Bytes, InputError> {
        let align = self.file.align;
        let file = self.file.file.local()?;
        let base = self.pos - self.pos % align;
        let skew = (self.pos - base) as usize;
        let span = self.end.next_multiple_of(align) - base;
        let want = (self.chunk as u64).next_multiple_of(align).min(span) as usize;
        let stop = (self.end - base).min(want as u64) as usize;
        let buf = buffer.get_mut(want)?;
        let got = match read_full(file, buf, want, base, 0, Some(align)) {
            // A file system that took the flag but refuses the read itself.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                let _ = set_direct(file, false);
                let used = self.file.fall_back(ReadMode::Direct, os_message(&e));
                let flags = if used == ReadMode::DontCache {
                    libc::RWF_DONTCACHE
                } else {
                    0
                };
                read_full(file, buf, want, base, flags, None)?
            }
            other => other?,
        };
        if got < stop {
            return Err(self.file.ended_early());
        }
        // The file's last block is read whole: bytes past the length are beyond the end, a
        // read that stopped short of the block saw the end; one that filled it saw nothing.
        if self.ends_file(base + stop as u64) && (got > stop || got < want) {
            self.file.saw_end(got > stop);
        }
        self.pos = base + stop as u64;
        Ok(Bytes::contiguous(skew..stop))
    }

    /// Maps the next window; `None` when every guard slot is taken (the chunk is then read).
    fn map_next(&mut self) -> Result<Option<mmap::Window>, InputError> {
        let page = mmap::page_size() as u64;
        let base = self.pos - self.pos % page;
        let skew = (self.pos - base) as usize;
        let span = self.end.next_multiple_of(page) - base;
        let len = (self.chunk as u64).next_multiple_of(page).min(span) as usize;
        let stop = (self.end - base).min(len as u64) as usize;
        let window = match mmap::Window::map(self.file.file.local()?, base, len, skew..stop) {
            Ok(Some(window)) => window,
            Ok(None) => return Ok(None),
            // The file cannot be mapped (some special file systems): read it instead.
            Err(e) => {
                self.file.fall_back(ReadMode::Mmap, os_message(&e));
                return Ok(None);
            }
        };
        match window.populate() {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EFAULT) => return Err(InputError::Changed),
            Err(e) => return Err(e.into()),
        }
        self.pos = base + stop as u64;
        Ok(Some(window))
    }
}

/// Opens `path` as [`Input::open`] does.
pub fn open_path(path: &Path) -> Result<Input, InputError> {
    Input::open(&Target::Path(path.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn mtimes_read_and_print_as_cshatag_writes_them() {
        assert_eq!(
            Mtime::new(1_700_000_000, 42).unwrap().to_string(),
            "1700000000.000000042"
        );
        assert_eq!(
            "0000000001.000000042".parse(),
            Mtime::new(1, 42).ok_or(String::new())
        );
        assert_eq!(
            "-1.500000000".parse(),
            Mtime::new(-1, 500_000_000).ok_or(String::new())
        );
        for bad in [
            "1",
            "1.5",
            "1.0000000000",
            "a.000000000",
            "1.-00000000",
            ".000000000",
        ] {
            assert!(bad.parse::<Mtime>().is_err(), "{bad}");
        }
    }

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

    /// `data` in a file opened to be read with `mode`, as if its file system said it held
    /// `claimed` bytes.
    fn sized(dir: &Path, data: &[u8], claimed: u64, mode: ReadMode) -> SizedFile {
        let path = dir.join(format!("f{}-{claimed}-{mode:?}", data.len()));
        std::fs::write(&path, data).unwrap();
        let Input::Sized(mut file) = Input::open_with(&Target::Path(path), mode).unwrap() else {
            panic!("a regular file is sized");
        };
        file.stamp.len = claimed;
        file
    }

    /// Every byte of `0..file.len()` as the readers deliver them, `chunk` at a time.
    fn read_all(file: &SizedFile, chunk: usize) -> Vec<u8> {
        let mut reader = file.range_reader(0..file.len(), chunk);
        let (mut out, mut buffer) = (Vec::new(), Buffer::new());
        while !reader.is_done() {
            let chunk = reader.next_chunk(buffer).map_err(|(_, e)| e).unwrap();
            out.extend_from_slice(chunk.contiguous().unwrap());
            let (back, ok) = chunk.finish();
            ok.unwrap();
            buffer = back;
        }
        out
    }

    const MODES: [ReadMode; 4] = [
        ReadMode::Pread,
        ReadMode::Direct,
        ReadMode::DontCache,
        ReadMode::Mmap,
    ];

    #[test]
    fn bytes_past_the_reported_size_are_found_in_every_read_mode() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3 * 8192 + 100).map(|i| (i % 251) as u8).collect();
        for mode in MODES {
            for claimed in [1u64, 100, 4095, 4096, 4097, 8192, 3 * 8192 + 99] {
                for chunk in [4096, 8192, 1 << 20] {
                    let file = sized(dir.path(), &data, claimed, mode);
                    assert_eq!(read_all(&file, chunk), data[..claimed as usize]);
                    // What `check_unchanged` does before its stamp check, which this file
                    // fails (its real size is not the one claimed).
                    if file.end() == End::Unknown {
                        file.look_past_end().unwrap();
                    }
                    assert!(
                        matches!(
                            file.check_end(),
                            Err(InputError::SizeMisreported { size, more: true }) if size == claimed
                        ),
                        "{mode:?} {claimed} {chunk}"
                    );
                    // Read again as a stream, it gives every byte.
                    let mut all = Vec::new();
                    file.to_stream().unwrap().read_to_end(&mut all).unwrap();
                    assert_eq!(all, data, "{mode:?} {claimed} {chunk}");
                }
            }
        }
    }

    #[test]
    fn staggered_reads_start_on_different_lines_of_a_page_and_deliver_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3 * 8192 + 100).map(|i| (i % 251) as u8).collect();
        for mode in MODES {
            let file = sized(dir.path(), &data, data.len() as u64, mode);
            let mut starts = HashSet::new();
            for chunk in [4096, 8192, 1 << 20] {
                let mut reader = file.range_reader(0..file.len(), chunk).staggered();
                let mut out = Vec::new();
                // A fresh buffer per chunk, as a lane set's chunks each have their own.
                while !reader.is_done() {
                    let got = reader
                        .next_chunk(Buffer::new())
                        .map_err(|(_, e)| e)
                        .unwrap();
                    let bytes = got.contiguous().unwrap();
                    let start = bytes.as_ptr() as usize % BUFFER_ALIGN;
                    out.extend_from_slice(bytes);
                    got.finish().1.unwrap();
                    match file.read_mode() {
                        // The chunk starts on a block boundary of the file, so its start in
                        // memory is the page boundary: what `O_DIRECT` requires.
                        ReadMode::Direct => assert_eq!(start, 0, "{mode:?} {chunk}"),
                        ReadMode::Mmap => {}
                        ReadMode::Pread | ReadMode::DontCache => {
                            assert_eq!(start % CACHE_LINE, 0, "{mode:?} {chunk}");
                            starts.insert(start);
                        }
                    }
                }
                assert_eq!(out, data, "{mode:?} {chunk}");
            }
            // Twelve buffers made one after another: tests running beside this one may take
            // lines in between, but not so that all twelve start on the same one.
            if matches!(file.read_mode(), ReadMode::Pread | ReadMode::DontCache) {
                assert!(starts.len() > 1, "{mode:?}: {starts:?}");
            }
        }
    }

    /// Readers of ranges that follow one another, read together: each gets its own bytes in
    /// its own buffer, in every read mode and whether or not its range fits one chunk; the
    /// last sees the end of the file (or the bytes past a misreported size), and a file
    /// shorter than its size fails where its bytes run out.
    #[test]
    fn readers_that_follow_one_another_each_get_their_own_bytes() {
        let dir = tempfile::tempdir().unwrap();
        for len in [2usize, 3, 4097, 3 * 8192 + 100] {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            // As the file system reports it: true, one byte short, ten bytes long.
            for claimed in [len as u64, len as u64 - 1, len as u64 + 10] {
                for mode in MODES {
                    for (pieces, chunk) in [(2, 1 << 20), (3, 1 << 20), (2, 4096)] {
                        let file = sized(dir.path(), &data, claimed, mode);
                        let cuts: Vec<u64> = (0..=pieces).map(|i| i * claimed / pieces).collect();
                        let mut readers: Vec<_> = cuts
                            .windows(2)
                            .map(|w| file.range_reader(w[0]..w[1], chunk).staggered())
                            .collect();
                        let buffers = (0..pieces).map(|_| Buffer::new()).collect();
                        let chunks = RangeReader::next_chunks(&mut readers, buffers);
                        let what = format!("{len} {claimed} {mode:?} {pieces} {chunk}");
                        for ((result, reader), w) in
                            chunks.into_iter().zip(&readers).zip(cuts.windows(2))
                        {
                            let (start, stop) = (w[0] as usize, w[1] as usize);
                            // Buffered reads are a chunk long; O_DIRECT and mapped windows
                            // end on a block or a page.
                            let reach = stop.min(start + chunk);
                            let exact = matches!(mode, ReadMode::Pread | ReadMode::DontCache);
                            match result {
                                Ok(got) => {
                                    let bytes = got
                                        .contiguous()
                                        .expect("a staggered chunk is side by side");
                                    let end = start + bytes.len();
                                    assert!(!exact || end == reach, "{what}");
                                    assert_eq!(reader.position(), end as u64, "{what}");
                                    // A mapped page holds zeros past the end; the stamp check
                                    // after hashing finds the file changed.
                                    if end <= len {
                                        assert!(bytes == &data[start..end], "{what}");
                                    } else {
                                        assert_eq!(mode, ReadMode::Mmap, "{what}");
                                    }
                                }
                                Err((_, InputError::Changed)) => assert!(reach > len, "{what}"),
                                Err((_, e)) => panic!("{e}: {what}"),
                            }
                        }
                        let last_fits = claimed - cuts[pieces as usize - 1] <= chunk as u64;
                        let buffered = matches!(mode, ReadMode::Pread | ReadMode::DontCache);
                        if buffered && last_fits && claimed < len as u64 {
                            assert_eq!(file.end(), End::Beyond, "{what}");
                        }
                        if buffered && last_fits && claimed == len as u64 {
                            assert_eq!(file.end(), End::Seen, "{what}");
                        }
                    }
                }
            }
        }
    }

    /// The bytes of `0..file.len()` as a reader spread in pieces of `piece` bytes delivers
    /// them, `chunk` at a time, checking where each chunk's pieces lie.
    fn read_spread(file: &SizedFile, chunk: usize, piece: usize) -> Result<Vec<u8>, InputError> {
        let piece_size = NonZeroUsize::new(piece).unwrap();
        let mut reader = file.range_reader(0..file.len(), chunk).spread(piece_size);
        let (mut out, mut buffer) = (Vec::new(), Buffer::new());
        while !reader.is_done() {
            let got = reader.next_chunk(buffer).map_err(|(_, e)| e)?;
            let pieces = got.pieces();
            let count = pieces.iter().count();
            let mode = file.read_mode();
            let spread = match mode {
                ReadMode::Pread | ReadMode::DontCache => (2..=IOV_MAX).contains(&count),
                ReadMode::Direct => false,
                // A window is side by side; a chunk read because every guard slot was taken
                // (by tests running beside this one) is a buffered read, spread.
                ReadMode::Mmap => pieces.stride() != pieces.piece_len(),
            };
            if spread {
                // A line more than the piece, rounded up to a line: successive lines.
                let stride = piece.next_multiple_of(64) + 64;
                assert_eq!((pieces.piece_len(), pieces.stride()), (piece, stride));
                assert!(got.contiguous().is_none(), "{mode:?} {chunk} {piece}");
                let base = pieces.span().as_ptr() as usize;
                for (i, p) in pieces.iter().enumerate() {
                    assert_eq!(p.as_ptr() as usize - base, i * stride, "{mode:?} {i}");
                    assert!(p.len() == piece || i == count - 1 && p.len() < piece);
                }
                assert_eq!(pieces.whole(), got.len() / piece);
            } else {
                assert!(count <= 1, "{mode:?} {chunk} {piece}: {count} pieces");
                assert!(got.contiguous().is_some());
            }
            assert_eq!(pieces.iter().map(<[u8]>::len).sum::<usize>(), got.len());
            for p in pieces.iter() {
                out.extend_from_slice(p);
            }
            let (back, ok) = got.finish();
            ok?;
            buffer = back;
        }
        Ok(out)
    }

    #[test]
    fn spread_reads_deliver_the_bytes_in_pieces_a_line_further_apart_than_their_length() {
        let dir = tempfile::tempdir().unwrap();
        for mode in MODES {
            for piece in [64usize, 1000, 4096] {
                // Chunks of 1, 2 and 5 pieces; files of a piece or less, a last piece shorter
                // than the others, and a last chunk at the file's end, shorter or whole.
                for per_chunk in [1, 2, 5] {
                    let chunk = per_chunk * piece;
                    let lens = [
                        1,
                        piece - 1,
                        piece,
                        piece + 1,
                        chunk - 1,
                        chunk,
                        chunk + 1,
                        2 * chunk + piece / 2,
                        3 * chunk,
                    ];
                    for len in lens {
                        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
                        let file = sized(dir.path(), &data, len as u64, mode);
                        let got = read_spread(&file, chunk, piece).unwrap();
                        assert!(got == data, "{mode:?} {piece} {chunk} {len}");
                        // The last read asked for a byte more, and found none.
                        if matches!(file.read_mode(), ReadMode::Pread | ReadMode::DontCache) {
                            assert_eq!(file.end(), End::Seen, "{mode:?} {piece} {chunk} {len}");
                        }
                        file.check_unchanged().unwrap();
                    }
                }
            }
        }
    }

    #[test]
    fn spread_reads_find_bytes_past_the_size_and_a_file_that_ends_early() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..5 * 4096 + 100).map(|i| (i % 251) as u8).collect();
        for mode in MODES {
            // More bytes than claimed: the last read's extra byte, after the last piece.
            for claimed in [4096u64, 4097, 3 * 4096, 5 * 4096 - 1] {
                let file = sized(dir.path(), &data, claimed, mode);
                let got = read_spread(&file, 4 * 4096, 4096).unwrap();
                assert_eq!(got, data[..claimed as usize], "{mode:?} {claimed}");
                if file.end() == End::Unknown {
                    file.look_past_end().unwrap();
                }
                assert!(
                    matches!(
                        file.check_end(),
                        Err(InputError::SizeMisreported { more: true, .. })
                    ),
                    "{mode:?} {claimed}"
                );
            }
            // Fewer: a read that ends early. (The file's real size is not the stamp's here,
            // so it reads as changed.)
            let claimed = data.len() as u64 + 5000;
            let file = sized(dir.path(), &data, claimed, mode);
            assert!(
                matches!(read_spread(&file, 4 * 4096, 4096), Err(InputError::Changed)),
                "{mode:?}"
            );
        }
    }

    #[test]
    fn a_chunk_of_more_pieces_than_a_vectored_read_takes_is_read_side_by_side() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..(IOV_MAX + 1) * 64 * 2)
            .map(|i| (i % 251) as u8)
            .collect();
        for mode in [ReadMode::Pread, ReadMode::DontCache] {
            let file = sized(dir.path(), &data, data.len() as u64, mode);
            // `read_spread` checks that chunks of more than `IOV_MAX` pieces are one.
            for chunk in [IOV_MAX * 64, (IOV_MAX + 1) * 64] {
                assert_eq!(read_spread(&file, chunk, 64).unwrap(), data, "{mode:?}");
            }
        }
    }

    #[test]
    fn the_last_read_sees_the_end_of_a_file_read_through_the_cache_at_no_extra_cost() {
        let dir = tempfile::tempdir().unwrap();
        for len in [1usize, 4095, 4096, 4097, 8192, 3 * 8192 + 100] {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            for mode in MODES {
                for chunk in [4096, 8192, 1 << 20] {
                    let file = sized(dir.path(), &data, len as u64, mode);
                    assert_eq!(read_all(&file, chunk), data);
                    // The reads themselves looked past the end, so `check_unchanged` needs
                    // no read of its own (mmap has no such read; O_DIRECT not on a block
                    // boundary).
                    let seen = match file.read_mode() {
                        ReadMode::Pread | ReadMode::DontCache => true,
                        ReadMode::Direct => !(len as u64).is_multiple_of(file.align),
                        ReadMode::Mmap => false,
                    };
                    assert_eq!(file.end() == End::Seen, seen, "{mode:?} {len} {chunk}");
                    file.check_unchanged().unwrap();
                    assert_eq!(file.end(), End::Seen);
                }
            }
        }
    }

    #[test]
    fn a_file_that_grows_while_read_is_changed_not_longer_than_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let data = vec![7u8; 10_000];
        for mode in MODES {
            let file = sized(dir.path(), &data, data.len() as u64, mode);
            let path = dir.path().join(format!("f10000-10000-{mode:?}"));
            let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
            let mut appender = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            io::Write::write_all(&mut appender, b"more").unwrap();
            appender.set_modified(mtime).unwrap();
            assert_eq!(read_all(&file, 4096), data);
            assert!(
                matches!(file.check_unchanged(), Err(InputError::Changed)),
                "{mode:?}"
            );
        }
    }

    /// A file read from an offset (standard input after something read from it) gives its
    /// bytes from there in every read mode, from offsets on and off blocks and pages, sees
    /// its end, and reads as a stream from there too.
    #[test]
    fn a_file_read_from_an_offset_gives_its_bytes_from_there_in_every_read_mode() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3 * 8192 + 100).map(|i| (i % 251) as u8).collect();
        for start in [1, 4095, 4096, 5000, data.len() - 1, data.len()] {
            for mode in MODES {
                for chunk in [4096, 8192, 1 << 20] {
                    let what = format!("{start} {mode:?} {chunk}");
                    let mut file = sized(dir.path(), &data, data.len() as u64, mode);
                    file.start = start as u64;
                    assert_eq!(file.len(), (data.len() - start) as u64, "{what}");
                    assert!(read_all(&file, chunk) == data[start..], "{what}");
                    file.check_unchanged().unwrap();
                    assert_eq!(file.end(), End::Seen, "{what}");
                    let mut reader = file.range_reader(0..file.len(), chunk);
                    while !reader.is_done() {
                        let got = reader.next_chunk(Buffer::new()).map_err(|(_, e)| e);
                        got.unwrap().finish().1.unwrap();
                    }
                    assert_eq!(reader.position(), file.len(), "{what}");
                    // Not on a file with `O_DIRECT` on, which refuses reads off its blocks.
                    if file.read_mode() != ReadMode::Direct {
                        let mut head = vec![0; file.len().min(10) as usize];
                        file.read_exact_at(&mut head, 0).unwrap();
                        assert!(head == data[start..start + head.len()], "{what}");
                    }
                    let mut streamed = Vec::new();
                    file.to_stream()
                        .unwrap()
                        .read_to_end(&mut streamed)
                        .unwrap();
                    assert!(streamed == data[start..], "{what}");
                }
            }
        }
    }

    #[test]
    fn dash_is_standard_input() {
        assert_eq!(Target::from_arg("-"), Target::Stdin);
        assert_eq!(Target::from_arg("./-"), Target::Path("./-".into()));
    }

    #[test]
    fn file_systems_known_from_one_file_still_tell_a_pseudo_file_from_a_regular_one() {
        let dir = tempfile::tempdir().unwrap();
        let regular = dir.path().join("f");
        std::fs::write(&regular, b"bytes").unwrap();
        let pseudo = Path::new("/proc/self/status");
        if !pseudo.exists() {
            return eprintln!("SKIPPED: no /proc");
        }
        let mut known = FileSystems::default();
        for path in [&*regular, pseudo, pseudo, &regular, &regular, pseudo] {
            let target = Target::Path(path.to_path_buf());
            let input =
                Input::open_with_known(&target, ReadMode::Pread, &mut known, &mut || {}).unwrap();
            let streamed = matches!(input, Input::Stream(_));
            assert_eq!(streamed, path == pseudo, "{}", path.display());
        }
    }
}
