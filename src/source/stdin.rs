//! Standard input: claimed once per process, read as a file of its own, and asked whether a
//! read would wait.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// Standard input to read as a stream, claimed (`claim_stdin`): its bytes the first time
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

/// Fails with `EBADF`, as a read would, when `file` is open for writing only: standard input
/// redirected so (`mtsum 0> file`, `0>> file`). coreutils' first read says so; positioned
/// reads of an empty file, or of one standing at its end, make no read, and would print the
/// digest of no bytes for an input that cannot be read at all.
pub(super) fn refuse_write_only(file: &File) -> io::Result<()> {
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
