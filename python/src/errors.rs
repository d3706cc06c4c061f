//! The library's errors as Python exceptions.
//!
//! An input that cannot be hashed raises what `open()` raises for the same cause, with
//! `errno`, `strerror` and `filename` set as `open()` sets them (pipelines log `e.filename`):
//! `FileNotFoundError(2, 'No such file or directory', 'x')`. A cause the system gave no
//! `errno` for (`changed while being read`, a loop of links) is an `OSError` of
//! `mtsum._errors` with `strerror` and `filename` all the same, whose message is the
//! command's error line, `NAME: cause` (CPython would print `[Errno None]`). A `FileSum`'s
//! `error` is that line for every cause ([`message`]). Causes that suggest a setting name it
//! with Python's keywords ([`Dialect::Python`]).

use std::io;
use std::path::Path;

use mtsum::dialect::{Dialect, Worded};
use mtsum::report;
use mtsum::source::{InputError, Target};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

/// `NAME: cause`: the CLI's error line without its `mtsum: ` prefix and line end.
pub fn message(path: &Path, cause: &dyn std::fmt::Display) -> String {
    let target = Target::Path(path.to_path_buf());
    let line = report::error_line(report::name_bytes(&target), cause);
    let line = String::from_utf8_lossy(&line);
    let line = line.strip_prefix("mtsum: ").unwrap_or(&line);
    line.trim_end_matches('\n').to_string()
}

/// Why an input could not be hashed, in Python's words.
pub fn cause(error: &InputError) -> String {
    error.in_dialect(Dialect::Python).to_string()
}

/// The exception for an input at `path` that could not be hashed.
pub fn input_error(py: Python<'_>, path: &Path, error: &InputError) -> PyErr {
    let strerror = cause(error);
    let errno = match error {
        // A remote store's refusal has a kind but no errno: the errno of the kind, so that a
        // missing object is a FileNotFoundError as a missing file is.
        InputError::Io(e) => e.raw_os_error().or(match e.kind() {
            io::ErrorKind::NotFound => Some(libc::ENOENT),
            io::ErrorKind::PermissionDenied => Some(libc::EACCES),
            _ => None,
        }),
        InputError::IsADirectory => Some(libc::EISDIR),
        _ => None,
    };
    match (error, errno) {
        // OSError picks the subclass of the errno, as for open(): FileNotFoundError, ...
        (_, Some(errno)) => PyOSError::new_err((errno, strerror, path.as_os_str().to_os_string())),
        // The layout has no value for this input (an empty file with btv2, more than 10 000
        // parts for s3): nothing failed in the system, the input has no such digest, as
        // `Hasher.digest()` says (ValueError) of the same bytes.
        (InputError::NoRoot(_), None) => {
            let err = PyValueError::new_err(message(path, &strerror));
            let value = err.value(py);
            let _ = value.setattr("strerror", strerror);
            let _ = value.setattr("filename", path.as_os_str().to_os_string());
            err
        }
        // A FIFO given to the mtsum layout: the operation is unsupported for this input, which
        // `io.UnsupportedOperation` (an `OSError` and a `ValueError`) says.
        (InputError::StreamNeedsLength(_) | InputError::RangeOfStream, None) => {
            named(py, "UnsupportedOperation", &strerror, path)
        }
        (_, None) => named(py, "OSError", &strerror, path),
    }
}

/// An exception of `mtsum._errors` (`class_name`) without errno: `strerror` and `filename`
/// set, and the message `NAME: cause`.
pub fn named(py: Python<'_>, class_name: &str, strerror: &str, path: &Path) -> PyErr {
    let made = py
        .import("mtsum._errors")
        .and_then(|m| m.getattr(class_name))
        .and_then(|class| class.call1((py.None(), strerror, path.as_os_str().to_os_string())));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(e) => e,
    }
}

/// An I/O error of the binding itself (a thread that could not start), without a name.
pub fn io_error(e: io::Error) -> PyErr {
    let strerror = mtsum::source::os_message(&e);
    match e.raw_os_error() {
        Some(errno) => PyOSError::new_err((errno, strerror)),
        None => PyOSError::new_err(strerror),
    }
}

/// Bad parameters: an unknown algorithm or layout, a leaf size of 0, a range off the plan,
/// partials that do not combine.
pub fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A bad parameter whose message may suggest another, in Python's words.
pub fn worded_error(e: impl Worded) -> PyErr {
    value_error(e.in_dialect(Dialect::Python))
}
