//! Streams (pipes, character devices, files whose size is not told): read chunk by chunk, or
//! held in memory for a layout that needs the length up front.

use std::fs::File;
use std::io::{self, Read};

use super::buffer::{Buffer, Bytes, Chunk};
use super::error::InputError;
use super::file::{End, SizedFile};
use super::stamp::{Mtime, Stamp};

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
