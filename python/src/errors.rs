//! The library's errors as Python exceptions, with the messages the command line prints.
//!
//! The CLI says `mtsum: NAME: cause` for an input it cannot hash; the exception's message is
//! the same line without `mtsum: ` (the name quoted as coreutils quotes it). The exception
//! type is the one Python raises for the same cause (`FileNotFoundError`, `PermissionError`,
//! `IsADirectoryError`, ...), with `errno` set where the system gave one. `filename` is left
//! unset: CPython would then print `[Errno 2] No such file or directory: 'x'` instead of the
//! CLI's message.

use std::io;
use std::path::Path;

use mtsum::report;
use mtsum::source::{InputError, Target};
use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyIsADirectoryError, PyNotADirectoryError, PyOSError,
    PyPermissionError, PyValueError,
};
use pyo3::prelude::*;

pyo3::import_exception!(io, UnsupportedOperation);

/// `NAME: cause`: the CLI's error line without its `mtsum: ` prefix and line end.
pub fn message(path: &Path, cause: &dyn std::fmt::Display) -> String {
    let target = Target::Path(path.to_path_buf());
    let line = report::error_line(report::name_bytes(&target), cause);
    let line = String::from_utf8_lossy(&line);
    let line = line.strip_prefix("mtsum: ").unwrap_or(&line);
    line.trim_end_matches('\n').to_string()
}

/// The exception for an input that could not be hashed.
pub fn input_error(py: Python<'_>, path: &Path, error: &InputError) -> PyErr {
    let text = message(path, error);
    let (err, errno) = match error {
        InputError::Io(e) => (os_error(e.kind(), text), e.raw_os_error()),
        InputError::IsADirectory => (PyIsADirectoryError::new_err(text), Some(libc::EISDIR)),
        // A FIFO given to the mtsum layout: the operation is unsupported for this input, which
        // `io.UnsupportedOperation` (an `OSError` and a `ValueError`) says.
        InputError::StreamNeedsLength(_) => (UnsupportedOperation::new_err(text), None),
        // The layout has no value for this input (an empty file with btv2, more than 10 000
        // parts for s3): nothing failed in the system, the input has no such digest, as
        // `Hasher.digest()` says (ValueError) of the same bytes.
        InputError::NoRoot(_) => (PyValueError::new_err(text), None),
        _ => (PyOSError::new_err(text), None),
    };
    with_errno(py, err, errno)
}

/// `err` with its `errno` attribute set. Setting `errno` alone keeps the message as it is
/// (CPython formats `[Errno N]` only with `strerror` or `filename` set too).
fn with_errno(py: Python<'_>, err: PyErr, errno: Option<i32>) -> PyErr {
    if let Some(errno) = errno {
        let _ = err.value(py).setattr("errno", errno);
    }
    err
}

fn os_error(kind: io::ErrorKind, text: String) -> PyErr {
    match kind {
        io::ErrorKind::NotFound => PyFileNotFoundError::new_err(text),
        io::ErrorKind::PermissionDenied => PyPermissionError::new_err(text),
        io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(text),
        io::ErrorKind::NotADirectory => PyNotADirectoryError::new_err(text),
        io::ErrorKind::AlreadyExists => PyFileExistsError::new_err(text),
        _ => PyOSError::new_err(text),
    }
}

/// An I/O error of the binding itself (a spool file), without a name.
pub fn io_error(py: Python<'_>, e: io::Error) -> PyErr {
    let (kind, errno) = (e.kind(), e.raw_os_error());
    with_errno(py, os_error(kind, InputError::Io(e).to_string()), errno)
}

/// Bad parameters: an unknown algorithm or layout, a leaf size of 0, a range off the plan,
/// partials that do not combine.
pub fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}
