//! Positioned reads: the system calls every buffered read of a sized file goes through, into
//! one buffer or many (vectored), until the bytes asked for are in or the file ends.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

/// One `preadv2` call into `bufs`, filled in order; `flags` 0 is a plain `preadv` (`pread`
/// for one buffer).
pub(super) fn preadv2(
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
pub(super) fn read_full(
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
pub(super) fn read_full_vectored(
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
pub(super) const IOV_MAX: usize = 1024;
