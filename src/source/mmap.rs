//! Windows of a file mapped into memory, for the `--mmap` source, and the SIGBUS guard that
//! keeps a file truncated while mapped from killing the process.
//!
//! # Why windows
//! Mapping a whole 200 GB file would make the resident set grow towards the file's size (the
//! kernel keeps the pages mapped until memory gets tight), so the reader maps one window of a
//! few MiB at a time, has the kernel read it in (`MADV_POPULATE_READ`, in the reader thread, so
//! that the hasher never waits for a page fault), hands it to the hasher and unmaps it as soon
//! as it is hashed. Resident memory is therefore bounded by the windows in flight, as it is by
//! the buffers of the `pread` source.
//!
//! # What happens when the file shrinks
//! Reading a page of a mapping that lies beyond the end of the file raises SIGBUS, whose
//! default action kills the process without a word. The reader notices most truncations first:
//! `MADV_POPULATE_READ` fails with `EFAULT` instead of faulting, and the read becomes
//! [`InputError::Changed`](super::InputError::Changed). A truncation between that and the hash
//! is caught by a process-wide SIGBUS handler, installed the first time a window is mapped:
//!
//! - every live window is registered in a fixed table of slots (address and length), which the
//!   handler can search without locks or allocation;
//! - a fault inside a registered window maps an anonymous zero page over the faulting page
//!   (`mmap(MAP_FIXED)`, a plain system call, safe in a signal handler), marks the window as
//!   faulted and returns; the faulting instruction then reads zeros and the hash goes on;
//! - the hasher asks [`Window::faulted`] after hashing the window, and the engine reports the
//!   input as changed while being read instead of printing a digest of those zeros;
//! - any other SIGBUS (an address outside our windows, or a signal sent with `kill`) is not
//!   ours: the handler puts back the action that was there before (Rust's own handler, or the
//!   default) and lets the signal happen again, so it is handled as if we had never been here.
//!
//! Linux raises the same SIGBUS for a page it cannot read (an I/O error, a poisoned page), so
//! such a page is also reported as `changed while being read`, never hashed as zeros.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Windows that may be mapped at once, in the whole process: `-p` is at most 1024 and each
/// worker keeps a few windows in flight. A reader that finds no free slot reads that chunk with
/// `pread` instead ([`Window::map`] returns `None`).
const SLOTS: usize = 4096;

/// `start` of a slot being filled in: never a mapping address (those are page-aligned).
const RESERVED: usize = 1;

/// One registered window. `start` is 0 while the slot is free.
struct Slot {
    start: AtomicUsize,
    len: AtomicUsize,
    faulted: AtomicBool,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            start: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            faulted: AtomicBool::new(false),
        }
    }
}

static REGISTRY: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

/// Takes a free slot, or `None` when all are in use.
fn reserve() -> Option<&'static Slot> {
    REGISTRY.iter().find(|slot| {
        slot.start
            .compare_exchange(0, RESERVED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    })
}

/// The registered window holding `addr`, if any. Called from the signal handler: atomics only.
fn find(addr: usize) -> Option<&'static Slot> {
    REGISTRY.iter().find(|slot| {
        let start = slot.start.load(Ordering::Acquire);
        // A slot republished between the two loads can only hold a window that is mapped now
        // (the length is written before the start), so a match is always a live window.
        start > RESERVED && addr >= start && addr - start < slot.len.load(Ordering::Acquire)
    })
}

/// The system's page size.
pub(crate) fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    // SAFETY: sysconf only reads its argument.
    *PAGE.get_or_init(|| match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    })
}

/// The page size as the signal handler reads it (set before the handler is installed).
static HANDLER_PAGE: AtomicUsize = AtomicUsize::new(4096);

/// The SIGBUS action in force before ours, put back for a SIGBUS that is not ours.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// Installs the SIGBUS handler once per process.
fn install_guard() -> io::Result<()> {
    static INSTALLED: OnceLock<Result<(), i32>> = OnceLock::new();
    let result = INSTALLED.get_or_init(|| {
        HANDLER_PAGE.store(page_size(), Ordering::Relaxed);
        // SAFETY: the sigaction structs are plain data, zero is a valid value for each field,
        // and they outlive the calls. The previous action is stored before ours is installed,
        // so the handler always finds it.
        unsafe {
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, ptr::null(), &mut previous) != 0 {
                return Err(io::Error::last_os_error().raw_os_error().unwrap_or(0));
            }
            let _ = PREVIOUS.set(previous);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(libc::SIGBUS, &action, ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error().raw_os_error().unwrap_or(0));
            }
        }
        Ok(())
    });
    result.map_err(io::Error::from_raw_os_error)
}

/// The SIGBUS handler (see the module documentation). Async-signal-safe: it only loads and
/// stores atomics and makes the `mmap`, `sigaction` and `raise` system calls.
extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler; si_addr is the
    // faulting address for the fault codes (si_code > 0) and is only used for those.
    let (addr, code) = unsafe { ((*info).si_addr() as usize, (*info).si_code) };
    // SAFETY: errno is thread-local; it is saved and restored around our system calls so that
    // the interrupted code does not see it change.
    let errno = unsafe { *libc::__errno_location() };
    if let Some(slot) = find(addr).filter(|_| code > 0) {
        let page = addr & !(HANDLER_PAGE.load(Ordering::Relaxed) - 1);
        // SAFETY: the page lies inside a window this process mapped and still owns (it is
        // registered until just before it is unmapped, and only the thread reading it, which
        // is the one in this handler, unmaps it). Replacing it with a private zero page only
        // changes what that window reads.
        let zero = unsafe {
            libc::mmap(
                page as *mut libc::c_void,
                HANDLER_PAGE.load(Ordering::Relaxed),
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if zero != libc::MAP_FAILED {
            slot.faulted.store(true, Ordering::Relaxed);
            // SAFETY: see above.
            unsafe { *libc::__errno_location() = errno };
            return;
        }
    }
    // Not ours, or the page could not be replaced: whatever handled SIGBUS before handles it.
    // SAFETY: sigaction and raise are async-signal-safe; `previous` is a valid action.
    unsafe {
        match PREVIOUS.get() {
            Some(previous) => libc::sigaction(libc::SIGBUS, previous, ptr::null_mut()),
            None => {
                libc::signal(libc::SIGBUS, libc::SIG_DFL);
                0
            }
        };
        // A fault happens again when the handler returns; a signal sent by a process does not.
        if code <= 0 {
            libc::raise(libc::SIGBUS);
        }
        *libc::__errno_location() = errno;
    }
}

/// A read-only mapping of part of a file, registered with the SIGBUS guard, unmapped on drop.
pub(crate) struct Window {
    base: *mut u8,
    map_len: usize,
    /// The bytes to hash, relative to `base`.
    data: Range<usize>,
    slot: &'static Slot,
}

// SAFETY: a Window owns its mapping (nothing else unmaps it) and only hands out shared
// references to it, so moving it to the hasher thread is sound.
unsafe impl Send for Window {}

impl Window {
    /// Maps `len` bytes of `file` from `offset` (a multiple of the page size), of which `data`
    /// will be read. `None` when every guard slot is taken.
    pub(crate) fn map(
        file: &File,
        offset: u64,
        len: usize,
        data: Range<usize>,
    ) -> io::Result<Option<Window>> {
        debug_assert!(data.end <= len && len > 0);
        install_guard()?;
        let Some(slot) = reserve() else {
            return Ok(None);
        };
        let offset = libc::off_t::try_from(offset).map_err(|_| io::Error::other("offset"))?;
        // SAFETY: a fresh shared read-only mapping of an open file; the kernel picks the address.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                offset,
            )
        };
        if base == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            slot.start.store(0, Ordering::Release);
            return Err(e);
        }
        slot.faulted.store(false, Ordering::Relaxed);
        slot.len.store(len, Ordering::Release);
        slot.start.store(base as usize, Ordering::Release);
        Ok(Some(Window {
            base: base.cast(),
            map_len: len,
            data,
            slot,
        }))
    }

    /// Reads the window's pages in now, in the calling (reader) thread, so that hashing does
    /// not wait for page faults. `EFAULT` means that part of the window lies beyond the end of
    /// the file: it shrank.
    pub(crate) fn populate(&self) -> io::Result<()> {
        let advise = |advice| {
            // SAFETY: madvise on our own mapping only changes how the kernel pages it in.
            match unsafe { libc::madvise(self.base.cast(), self.map_len, advice) } {
                0 => Ok(()),
                _ => Err(io::Error::last_os_error()),
            }
        };
        let _ = advise(libc::MADV_SEQUENTIAL);
        match advise(libc::MADV_POPULATE_READ) {
            // Before Linux 5.14: ask for read-ahead instead; a fault will wait for the rest.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                let _ = advise(libc::MADV_WILLNEED);
                Ok(())
            }
            other => other,
        }
    }

    /// The bytes to hash.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `data` lies within the mapping, which lives as long as `self` and is
        // readable. A page beyond the end of the file (the file shrank after `populate`) does
        // not make this unsound: reading it raises SIGBUS, which the guard turns into a zero
        // page and a `faulted` flag. As with every mapping of a file (memmap2, b3sum), another
        // process writing to the file may change these bytes while they are hashed; the digest
        // is then of no use, and the engine's size and time check reports the change.
        unsafe { std::slice::from_raw_parts(self.base.add(self.data.start), self.data.len()) }
    }

    /// Whether reading the window hit a page beyond the end of the file (or an unreadable
    /// page): the bytes hashed were not the file's.
    pub(crate) fn faulted(&self) -> bool {
        self.slot.faulted.load(Ordering::Relaxed)
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // Unregistered before it is unmapped, so that the guard never claims an address that
        // another mapping may take next.
        self.slot.start.store(0, Ordering::Release);
        // SAFETY: the mapping was made by `map` with this length and is unmapped only here.
        unsafe {
            libc::munmap(self.base.cast(), self.map_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_window_reads_the_file_and_frees_its_slot() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[7u8; 10000]).unwrap();
        let w = Window::map(&file, 4096, 8192, 100..5904).unwrap().unwrap();
        w.populate().unwrap();
        assert!(w.bytes().iter().all(|&b| b == 7));
        assert_eq!(w.bytes().len(), 5804);
        let start = w.base as usize;
        assert!(find(start + 10).is_some());
        drop(w);
        assert!(find(start + 10).is_none());
    }

    #[test]
    fn a_page_beyond_the_end_reads_as_zeros_and_marks_the_window() {
        let page = page_size();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&vec![7u8; 3 * page]).unwrap();
        let w = Window::map(&file, 0, 3 * page, 0..3 * page)
            .unwrap()
            .unwrap();
        w.populate().unwrap();
        assert!(!w.faulted());
        file.set_len(page as u64).unwrap();
        // The truncation dropped the pages past the new end from the mapping; reading them
        // faults, and the guard answers with zeros.
        let sevens = w.bytes().iter().filter(|&&b| b == 7).count();
        assert!(w.faulted());
        assert_eq!(sevens, page);
    }
}
