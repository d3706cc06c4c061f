//! Standard input and output that were closed when mtsum started (`mtsum <&-`, `mtsum >&-`)
//! stay unusable, as coreutils finds them: reading `-` fails with "Bad file descriptor", and so
//! does writing the results, instead of hashing nothing or printing into nothing.
//!
//! Rust's runtime opens `/dev/null` on descriptors 0 to 2 that are closed before `main` (so
//! that a file opened later never becomes "standard output" by accident), and leaves no
//! trace that it did. So the check runs before the runtime: from the `.init_array` section,
//! which the C start-up code runs before it calls the `main` that starts Rust's runtime.
//!
//! A closed standard input gets `/dev/null` opened write-only: the number stays taken, for
//! the reason Rust takes it, and every read fails with EBADF as on a closed descriptor (the
//! library reads standard input through [`mtsum::source::stdin_file`], which reports it).
//! A closed standard output is recorded ([`stdout_was_closed`]) and left to Rust: its
//! `io::stdout()` takes EBADF for success, so the printer asks. Standard error is left alone:
//! a failure there has nowhere to be reported.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether descriptor 1 was closed when mtsum started.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether standard output was closed when mtsum started: every write to it fails.
pub fn stdout_was_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Runs [`keep_closed_stdio_failing`] at start-up, before Rust's runtime (as the `ctor`
/// crate does it; one function does not warrant the dependency).
#[cfg(any(target_os = "linux", target_os = "android"))]
#[used]
#[unsafe(link_section = ".init_array")]
static KEEP_CLOSED_STDIO_FAILING: extern "C" fn() = keep_closed_stdio_failing;

/// Keeps a standard input closed at start-up failing, and notes a closed standard output.
extern "C" fn keep_closed_stdio_failing() {
    // SAFETY: fcntl, open, dup2 and close take integers and a NUL-terminated constant string;
    // they only touch the descriptor table, which nothing else uses yet (no other thread
    // exists before `main`). The C library is initialised before `.init_array` runs.
    unsafe {
        if libc::fcntl(1, libc::F_GETFD) == -1 {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
        if libc::fcntl(0, libc::F_GETFD) != -1 {
            return;
        }
        // The lowest free descriptor, so 0; none at all (no /dev/null) leaves 0 to Rust,
        // which then aborts as it would have.
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if null > 0 {
            libc::dup2(null, 0);
            libc::close(null);
        }
    }
}
