//! Opened inputs: a sized file (a regular file, a block device or a remote object, read at
//! offsets, whose changes while it is read are noticed) or a stream.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

use super::buffer::Buffer;
use super::error::{InputError, os_message};
use super::filesystems::{FileSystems, size_is_unreported};
use super::mode::{
    Fallback, ReadMode, UNADVISED_LEN, advise, direct_alignment, set_direct, set_status_flag,
    supports_dontcache,
};
use super::pread::read_full;
use super::remote;
use super::stamp::{Mtime, Stamp};
use super::stdin::{claim_stdin, refuse_write_only, stdin_file};
use super::target::Target;

/// An opened input.
pub enum Input {
    /// Random access with a length known up front: a regular file or a block device.
    Sized(SizedFile),
    /// Bytes that can only be read once, front to back.
    Stream(Box<dyn Read + Send>),
}

/// The value of an extended attribute read from an open file ([`SizedFile::xattr`]), held in
/// place: read by a reader thread for another (an audit's record), it would otherwise be an
/// allocation freed on another thread, which glibc's per-thread arenas make dear (a verify of
/// 20 000 small files: 2–3 % of the readers' samples in `malloc` and `free`, 1 % more CPU).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct XattrValue {
    len: u8,
    bytes: [u8; XattrValue::CAPACITY],
}

impl XattrValue {
    /// The longest value held: an audit's record takes at most 111 bytes.
    pub const CAPACITY: usize = 128;

    /// The value's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for XattrValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("XattrValue").field(&self.as_bytes()).finish()
    }
}

/// A regular file or block device opened for positioned reads: its bytes from `start` to its
/// end, which are offsets `0..len()` of its reads.
pub struct SizedFile {
    pub(super) file: Backing,
    pub(super) stamp: Stamp,
    /// Where its bytes start in the file: 0, but for standard input redirected from a file
    /// that something has read from (`(head -c 10; mtsum) < file`), whose bytes are, as for
    /// coreutils, those from where it stands. At most the file's length. Reads and their
    /// alignment (`O_DIRECT` blocks, mapped pages) work on offsets in the file; only the
    /// offsets that callers see are shifted.
    pub(super) start: u64,
    pub(super) is_block_device: bool,
    /// The [`ReadMode`] in use (as `u8`): the one asked for until it fails, then its fallback.
    pub(super) mode: AtomicU8,
    /// With `O_DIRECT`: the alignment of offsets and lengths, a power of two.
    pub(super) align: u64,
    pub(super) fallback: OnceLock<Fallback>,
    /// What the reads found past the length (an [`End`] as `u8`).
    pub(super) end: AtomicU8,
}

/// What a sized file's positioned reads read.
pub(super) enum Backing {
    File(File),
    #[cfg(feature = "remote")]
    Remote(remote::Object),
}

impl Backing {
    /// The local file, for what only a file has (read modes, `fstat`, a descriptor):
    /// a remote object is always read with `pread` and never reaches those paths.
    pub(super) fn local(&self) -> io::Result<&File> {
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
pub(super) enum End {
    /// No read has looked past the length yet.
    Unknown,
    /// A read that asked for bytes past the length got none.
    Seen,
    /// A read got bytes past the length.
    Beyond,
}

impl Input {
    /// Opens standard input, claimed (`claim_stdin`, once per process): as a file when it is one (`< file`),
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
            Target::Url(url) => return Ok(Input::Sized(SizedFile::remote(remote::open(url)?))),
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

impl SizedFile {
    /// A file read with `pread` until [`SizedFile::with_mode`] says otherwise.
    pub(super) fn new(
        file: File,
        stamp: Stamp,
        start: u64,
        is_block_device: bool,
        end: End,
    ) -> SizedFile {
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

    /// Without the `remote` feature no object opens ([`remote::Object`] has no value).
    #[cfg(not(feature = "remote"))]
    pub(crate) fn remote(object: remote::Object) -> SizedFile {
        match object {}
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
    pub(super) fn fall_back(&self, wanted: ReadMode, cause: String) -> ReadMode {
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

    /// The size and modification time when the file was opened (of a block device, its
    /// size and the mtime of its node; of a remote object, its length and no time).
    pub fn stamp(&self) -> Stamp {
        self.stamp
    }

    /// The extended attribute `name` of the opened file (`None`: it has none), read on its
    /// descriptor: no lookup of its path again. A value longer than
    /// [`XattrValue::CAPACITY`] is an error (`ERANGE`), as is a remote object, which has none.
    pub fn xattr(&self, name: &str) -> io::Result<Option<XattrValue>> {
        let fd = self.file.local()?.as_raw_fd();
        // The name as C wants it, without an allocation.
        let mut c_name = [0u8; 256];
        if name.len() >= c_name.len() || name.contains('\0') {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        c_name[..name.len()].copy_from_slice(name.as_bytes());
        let mut value = XattrValue {
            len: 0,
            bytes: [0; XattrValue::CAPACITY],
        };
        // SAFETY: `c_name` is NUL-terminated (zeroed past the name, which holds no NUL), and
        // the kernel writes at most `bytes.len()` bytes into `bytes`, which outlives the call.
        let read = unsafe {
            libc::fgetxattr(
                fd,
                c_name.as_ptr().cast(),
                value.bytes.as_mut_ptr().cast(),
                value.bytes.len(),
            )
        };
        match read {
            -1 => match io::Error::last_os_error() {
                e if e.raw_os_error() == Some(libc::ENODATA) => Ok(None),
                e => Err(e),
            },
            len => {
                value.len = len as u8;
                Ok(Some(value))
            }
        }
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

    /// Fails with [`InputError::Changed`] if the size or modification time is no longer what
    /// it was when the file was opened, or with [`InputError::SizeMisreported`] if they did
    /// not move but the file holds bytes past its length. Call it after the last byte was
    /// read.
    ///
    /// The read of the last byte asks for one more where it can ([`RangeReader`](super::RangeReader)): then this
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
    pub(super) fn check_end(&self) -> Result<(), InputError> {
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
    pub(super) fn ended_early(&self) -> InputError {
        match self.check_stamp() {
            Err(e) => e,
            Ok(()) => InputError::SizeMisreported {
                size: self.stamp.len,
                more: false,
            },
        }
    }

    pub(super) fn end(&self) -> End {
        match self.end.load(Ordering::Relaxed) {
            1 => End::Seen,
            2 => End::Beyond,
            _ => End::Unknown,
        }
    }

    /// Records what a read that asked for bytes past the length found: `beyond` if it got
    /// some. Once beyond, always beyond.
    pub(super) fn saw_end(&self, beyond: bool) {
        let end = if beyond { End::Beyond } else { End::Seen };
        self.end.fetch_max(end as u8, Ordering::Relaxed);
    }

    /// Reads at the length, as the file's read mode allows (`O_DIRECT`: the aligned block
    /// that holds it), and records whether there were bytes.
    pub(super) fn look_past_end(&self) -> Result<(), InputError> {
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
        let Ok(file) = self.file.local() else {
            // A remote object: every range GET was guarded by the version it was opened at.
            return Ok(());
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

/// Opens `path` as [`Input::open`] does.
pub fn open_path(path: &Path) -> Result<Input, InputError> {
    Input::open(&Target::Path(path.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            open_path(dir.path()),
            Err(InputError::IsADirectory)
        ));
    }
}
