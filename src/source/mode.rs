//! Read modes: how the bytes of a sized file are read (`pread`, `O_DIRECT`, `RWF_DONTCACHE`,
//! `mmap`), what each asks of the open file, and the fallback when a file refuses one.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use super::buffer::BUFFER_ALIGN;
use super::error::os_message;
use super::pread::preadv2;

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
    pub(super) fn from_u8(v: u8) -> ReadMode {
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

/// Tells the kernel how we read: front to back (`POSIX_FADV_SEQUENTIAL`, so that it reads
/// ahead aggressively), or with no read-ahead at all (`POSIX_FADV_RANDOM`). The advice holds
/// for our open file only.
pub(super) fn advise(file: &File, advice: libc::c_int) {
    // SAFETY: posix_fadvise only reads its integer arguments; the descriptor is open for the
    // duration of the call. A failure merely means no hint, so the result is ignored.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, advice);
    }
}

/// The longest file read through the cache without the sequential hint of [`advise`]: the
/// engine reads at least 128 KiB per call, so the hint could help only its second read, and
/// skipping it saves a system call per small file (many small files: 20 000 fewer calls).
pub(super) const UNADVISED_LEN: u64 = 128 << 10;

/// The alignment of `O_DIRECT` offsets and lengths when `statx` does not say (before Linux
/// 6.1): the largest logical block size of common disks.
const DEFAULT_DIRECT_ALIGN: u64 = 4096;

/// The alignment `O_DIRECT` needs for offsets and lengths on `file`, or why it cannot be used.
pub(super) fn direct_alignment(file: &File) -> Result<u64, String> {
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
pub(super) fn set_direct(file: &File, on: bool) -> io::Result<()> {
    set_status_flag(file, libc::O_DIRECT, on)
}

/// Turns the file status flag `flag` (`O_DIRECT`, `O_NONBLOCK`) on or off for an open file.
pub(super) fn set_status_flag(file: &File, flag: libc::c_int, on: bool) -> io::Result<()> {
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
pub(super) fn supports_dontcache(file: &File) -> Result<(), String> {
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
