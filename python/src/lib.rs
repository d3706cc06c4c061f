//! `mtsum._mtsum`: the Rust side of the Python package `mtsum`.
//!
//! Everything here is glue: parameters are parsed once into the library's types, the work runs
//! in the library with the GIL released (so that other Python threads run meanwhile, and two
//! threads hashing at once use two cores), and errors come back as Python exceptions with the
//! CLI's messages (see the module `errors`). The public Python API, its documentation and its
//! types are in `mtsum/__init__.py` (and the stubs of this module in `mtsum/_mtsum.pyi`).

mod buffer;
mod compare;
mod errors;
mod hasher;
mod storage;

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use mtsum::engine::{Engine, Request};
use mtsum::layout::{Encoding, LeafSizeError, PartList};
use mtsum::source::{Input, InputError, Target};
use mtsum::walk::{Recursion, Walked, walk};
use mtsum::{Algorithm, Layout, LeafSize, sumfile};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyString};

use buffer::Bytes;
use errors::{input_error, io_error, value_error, worded_error};
use mtsum::range::{self, Partial, Spec};

/// Below this many bytes `update` keeps the GIL: releasing and taking it back costs more than
/// hashing them (hashlib's threshold is 2 KiB).
const GIL_MIN_BYTES: usize = 4096;

/// More threads than this is a typo, not a machine (the CLI's `-p` has the same limit).
const MAX_THREADS: usize = 1024;

/// A leaf size as Python gives it: a number of bytes, or a string as `-l` takes it (`"4K"`).
/// An int out of range is a ValueError, as 0 is; anything else (a float, a bool: `True` is no
/// byte count) a TypeError of one line.
fn leaf_size(leaf: Option<&Bound<'_, PyAny>>) -> PyResult<Option<LeafSize>> {
    let Some(leaf) = leaf else { return Ok(None) };
    if let Ok(text) = leaf.cast::<PyString>() {
        return text.to_cow()?.parse().map(Some).map_err(value_error);
    }
    let Some(n) = index(leaf)? else {
        return Err(PyTypeError::new_err(format!(
            "leaf_size must be an int or a str such as \"4K\", not {}",
            type_name(leaf)
        )));
    };
    match n.extract::<u64>() {
        Ok(bytes) => LeafSize::new(bytes)
            .map(Some)
            .ok_or_else(|| value_error(LeafSizeError::Zero(n.to_string(), "leaf size"))),
        Err(_) => Err(value_error(LeafSizeError::Syntax(
            n.to_string(),
            "leaf size",
        ))),
    }
}

/// `obj` as a Python int if it is one or stands for one (`__index__`: a NumPy integer),
/// except a bool, which is no number here.
fn index<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if obj.is_instance_of::<PyBool>() || !obj.hasattr("__index__")? {
        return Ok(None);
    }
    obj.call_method0("__index__").map(Some)
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".into(), |n| n.to_string())
}

/// An int parameter named `name` that a `u64` holds: bytes, offsets, counts. A negative or
/// huge one is a ValueError, as 0 is where 0 is refused (pyo3 would raise OverflowError),
/// and one of another type (a float, a bool) a TypeError; each of one line.
fn unsigned(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<u64> {
    let Some(n) = index(obj)? else {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int, not {}",
            type_name(obj)
        )));
    };
    n.extract::<u64>().map_err(|e| {
        if e.is_instance_of::<PyOverflowError>(obj.py()) {
            PyValueError::new_err(format!("{name} must be from 0 to 2**64 - 1, not {n}"))
        } else {
            e
        }
    })
}

/// [`unsigned`] where a number is optional.
fn unsigned_opt(name: &str, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    obj.map(|obj| unsigned(name, obj)).transpose()
}

/// A path as Python gives it: a str, bytes (the name as the system has it, which need not be
/// UTF-8) or an `os.PathLike` of either, as `os.fsdecode` takes them. Every function that
/// takes a path takes it through here. A NUL byte is refused as `open()` refuses it: no
/// system call takes such a name, and the name the error would show is not the one given.
fn path(obj: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let os = obj.py().import("os")?;
    let path: PathBuf = os.getattr("fsdecode")?.call1((obj,))?.extract()?;
    if path.as_os_str().as_bytes().contains(&0) {
        return Err(PyValueError::new_err("embedded null byte"));
    }
    Ok(path)
}

/// The paths of an iterable of paths ([`path`]).
fn paths(obj: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    iterate(obj, "paths")?.map(|p| path(&p?)).collect()
}

/// The strings of an iterable of strings, such as partial lines.
fn strings(obj: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    iterate(obj, "strings")?.map(|s| s?.extract()).collect()
}

/// The items of an iterable of `what`. One str or bytes is refused: its items would be its
/// one-letter pieces, each taken as a path or a line of its own.
fn iterate<'py>(
    obj: &Bound<'py, PyAny>,
    what: &str,
) -> PyResult<impl Iterator<Item = PyResult<Bound<'py, PyAny>>> + use<'py>> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(format!(
            "expected an iterable of {what}, not one {}",
            type_name(obj)
        )));
    }
    obj.try_iter()
}

/// The layout and algorithm named by the keyword arguments every function takes. Without an
/// algorithm, the layout's default, as on the command line (md5 for `s3`, whose ETag it is).
fn parse_spec(
    algorithm: Option<&str>,
    layout: &str,
    leaf: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Layout, Algorithm)> {
    // Parts of different sizes, listed as --part-size lists them ("5M,7M,5M,1").
    let listed = leaf
        .and_then(|l| l.cast::<PyString>().ok())
        .map(|text| text.to_cow().map(|t| t.into_owned()))
        .transpose()?
        .filter(|text| PartList::is_list(text) && layout.eq_ignore_ascii_case("s3"));
    let layout = match listed {
        Some(text) => Layout::S3Parts(text.parse().map_err(PyValueError::new_err)?),
        None => Layout::from_name(layout, leaf_size(leaf)?).map_err(worded_error)?,
    };
    let algorithm: Algorithm = match algorithm {
        Some(name) => name.parse().map_err(value_error)?,
        None => layout.default_algorithm(),
    };
    layout.check_algorithm(algorithm).map_err(worded_error)?;
    Ok((layout, algorithm))
}

/// The number of threads asked for, or every available core.
fn thread_count(threads: Option<&Bound<'_, PyAny>>) -> PyResult<NonZeroUsize> {
    let at_least_one = || PyValueError::new_err("the number of threads must be at least 1");
    let Some(threads) = threads else {
        return Ok(std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN));
    };
    match unsigned("threads", threads) {
        Ok(n) if n > MAX_THREADS as u64 => Err(PyValueError::new_err(format!(
            "at most {MAX_THREADS} threads"
        ))),
        Ok(n) => NonZeroUsize::new(n as usize).ok_or_else(at_least_one),
        Err(e) if e.is_instance_of::<PyValueError>(threads.py()) => Err(at_least_one()),
        Err(e) => Err(e),
    }
}

/// The root digest of one file, as `mtsum` prints it (hex).
#[pyfunction]
#[pyo3(signature = (path, algorithm=None, layout="mtsum", leaf_size=None, threads=None, storage_options=None))]
fn file_digest(
    py: Python<'_>,
    #[pyo3(from_py_with = path)] path: PathBuf,
    algorithm: Option<&str>,
    layout: &str,
    leaf_size: Option<&Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
    storage_options: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let (layout, algorithm) = parse_spec(algorithm, layout, leaf_size)?;
    let engine = Engine::new(thread_count(threads)?);
    let request = Request::new(layout, algorithm);
    let target = storage::target(&path, &storage::options(storage_options)?)?;
    match interruptible(py, engine, move |engine| engine.hash(&request, target))? {
        Ok(digest) => Ok(digest.root.to_string()),
        Err(e) => Err(input_error(py, &path, &e)),
    }
}

/// How often a call waiting for its work looks for signals: Ctrl-C is answered within this.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `work` with `engine` on a thread of its own while this one waits without the GIL,
/// waking every [`SIGNAL_POLL`] to let Python run its signal handlers: Ctrl-C then raises
/// KeyboardInterrupt at once instead of when a large file (or a stream that may never end)
/// has been read.
///
/// The exception also cancels the engine ([`Engine::with_cancel`]): its readers stop before
/// their next read and close their files, and the result, an error, is dropped. The caller
/// does not wait for that: a read under way that waits on a silent pipe ends only when its
/// writer writes or closes it. A panic of `work` reaches Python as it would without the thread.
fn interruptible<R: Send + 'static>(
    py: Python<'_>,
    engine: Engine,
    work: impl FnOnce(&Engine) -> R + Send + 'static,
) -> PyResult<R> {
    let cancel = Arc::new(AtomicBool::new(false));
    let engine = engine.with_cancel(cancel.clone());
    let (tx, mut rx) = mpsc::sync_channel(1);
    let worker = thread::Builder::new()
        .name("mtsum-call".into())
        .spawn(move || {
            // The caller may be gone (interrupted): nobody is left to tell.
            let _ = tx.send(work(&engine));
        })
        .map_err(io_error)?;
    loop {
        // A `Receiver` is not `Sync`: the waiting closure borrows it mutably, which is `Send`.
        let rx = &mut rx;
        match py.detach(move || rx.recv_timeout(SIGNAL_POLL)) {
            Ok(result) => return Ok(result),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    cancel.store(true, Ordering::Relaxed);
                    return Err(interrupt);
                }
            }
            Err(RecvTimeoutError::Disconnected) => match worker.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(()) => unreachable!("the worker sends before it ends"),
            },
        }
    }
}

/// One file of `sum_files`: `(size, digest, None)` or `(None, None, cause)`.
type FileRow = (Option<u64>, Option<String>, Option<String>);

/// Many files on one pool of workers: for each path in order, `(size, digest, None)` or
/// `(None, None, cause)`, the cause that `file_digest` would raise for that path (the caller
/// names the file in the message, by the name it reports). A path whose `found` is true was
/// found as a regular file (by a walk or a glob, or sized by a client) and must still be one:
/// a FIFO in its place is refused instead of waited for.
#[pyfunction]
#[pyo3(signature = (paths, algorithm=None, layout="mtsum", leaf_size=None, threads=None, storage_options=None, found=None))]
#[allow(clippy::too_many_arguments)] // Python keywords, as in `mtsum.plan`
fn sum_files(
    py: Python<'_>,
    #[pyo3(from_py_with = paths)] paths: Vec<PathBuf>,
    algorithm: Option<&str>,
    layout: &str,
    leaf_size: Option<&Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
    storage_options: Option<&Bound<'_, PyAny>>,
    found: Option<Vec<bool>>,
) -> PyResult<Vec<FileRow>> {
    let (layout, algorithm) = parse_spec(algorithm, layout, leaf_size)?;
    let engine = Engine::new(thread_count(threads)?);
    let request = Request::new(layout, algorithm);
    let options = storage::options(storage_options)?;
    let found = found.unwrap_or_default();
    let targets: Vec<Target> = paths
        .iter()
        .enumerate()
        .map(|(i, path)| match storage::target(path, &options)? {
            Target::Path(path) if found.get(i) == Some(&true) => Ok(Target::File(path)),
            target => Ok(target),
        })
        .collect::<PyResult<_>>()?;
    interruptible(py, engine, move |engine| {
        let mut out = Vec::new();
        engine.hash_all(&request, targets, |_, result| {
            out.push(match result {
                Ok(d) => (Some(d.size), Some(d.root.to_string()), None),
                Err(e) => (None, None, Some(errors::cause(&e))),
            })
        });
        out
    })
}

/// The files below `paths` in the order and by the rules of `mtsum -r` (`-L` with
/// `follow_symlinks`): for each input, `(path, found, None)`, `found` when the walk found it
/// as a regular file below a directory; for each directory that could not be walked,
/// `(path, False, cause)`. FIFOs, sockets and devices found below a directory, and symbolic
/// links not followed, are left out. Paths are bytes, as the system has them.
#[pyfunction]
fn _walk(
    py: Python<'_>,
    #[pyo3(from_py_with = paths)] paths: Vec<PathBuf>,
    follow_symlinks: bool,
) -> Vec<(Py<PyBytes>, bool, Option<String>)> {
    use std::os::unix::ffi::OsStrExt;
    let recursion = Recursion::from_flags(true, follow_symlinks);
    let items: Vec<_> =
        py.detach(|| walk(paths.into_iter().map(Target::Path), recursion).collect());
    let bytes = |p: &std::path::Path| PyBytes::new(py, p.as_os_str().as_bytes()).unbind();
    items
        .into_iter()
        .filter_map(|item| match item {
            Walked::Input(target) => {
                let found = matches!(target, Target::File(_));
                Some((bytes(&target_path(&target)), found, None))
            }
            Walked::Error { path, error } => {
                Some((bytes(&path), false, Some(errors::cause(&error))))
            }
            Walked::Skipped { .. } => None,
        })
        .collect()
}

/// The name of `target` as a path, for messages: a URL's text, `-` for standard input.
fn target_path(target: &Target) -> PathBuf {
    match target.path() {
        Some(path) => path.to_path_buf(),
        None => PathBuf::from(target.display_name().into_owned()),
    }
}

/// At most `parts` byte ranges `(start, end)` that cover a file of `size` bytes.
#[pyfunction]
#[pyo3(signature = (size, parts, algorithm=None, layout="mtsum", leaf_size=None))]
fn plan(
    size: &Bound<'_, PyAny>,
    parts: &Bound<'_, PyAny>,
    algorithm: Option<&str>,
    layout: &str,
    leaf_size: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<(u64, u64)>> {
    let (layout, algorithm) = parse_spec(algorithm, layout, leaf_size)?;
    let size = unsigned("size", size)?;
    // More parts than a usize holds are as many as it holds: there are never that many jobs.
    let parts = match unsigned("parts", parts) {
        Ok(n) => usize::try_from(n).unwrap_or(usize::MAX),
        Err(e) if e.is_instance_of::<PyValueError>(parts.py()) => match index(parts)? {
            Some(n) if n.lt(0)? => 0, // as 0 is refused, with the library's message
            _ => usize::MAX,
        },
        Err(e) => return Err(e),
    };
    let spec = Spec {
        layout,
        algorithm,
        size,
    };
    let ranges = range::plan(spec, parts).map_err(value_error)?;
    Ok(ranges.into_iter().map(|r| (r.start, r.end)).collect())
}

/// The partial line of bytes `start..end` of the file at `path`.
#[pyfunction]
#[pyo3(signature = (path, start, end, algorithm=None, layout="mtsum", leaf_size=None, size=None, threads=None, storage_options=None, version=None))]
#[allow(clippy::too_many_arguments)] // Python keywords, as in `mtsum.plan`
fn hash_range(
    py: Python<'_>,
    #[pyo3(from_py_with = path)] path: PathBuf,
    start: &Bound<'_, PyAny>,
    end: &Bound<'_, PyAny>,
    algorithm: Option<&str>,
    layout: &str,
    leaf_size: Option<&Bound<'_, PyAny>>,
    size: Option<&Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
    storage_options: Option<&Bound<'_, PyAny>>,
    version: Option<u64>,
) -> PyResult<String> {
    let (layout, algorithm) = parse_spec(algorithm, layout, leaf_size)?;
    let (start, end) = (unsigned("start", start)?, unsigned("end", end)?);
    let size = unsigned_opt("size", size)?;
    let engine = Engine::new(thread_count(threads)?);
    let target = match (
        storage::target(&path, &storage::options(storage_options)?)?,
        version,
    ) {
        (Target::Url(url), Some(version)) => Target::Url(url.expecting(version)),
        (target, _) => target,
    };
    let result = interruptible(py, engine, move |engine| {
        let size = match size {
            Some(size) => size,
            None => match sized(&target) {
                Ok((size, _)) => size,
                Err(e) => return Ok(Err(e)),
            },
        };
        let spec = Spec {
            layout,
            algorithm,
            size,
        };
        range::hash_range(engine, target, spec, start..end)
    })?;
    match result.map_err(value_error)? {
        Ok(partial) => Ok(partial.to_line()),
        Err(e) => Err(input_error(py, &path, &e)),
    }
}

/// The size of the file `target` names, which ranges can be read of, and its modification
/// time in ns (for a remote object, its version, which `hash_range(version=...)` holds every
/// worker to). Without blocking: a FIFO, a socket or a character device is a stream, refused
/// after a `stat` and never opened (opening a FIFO waits for a writer, and each open of a
/// character device may give other bytes). A block device is opened for its size, which
/// `stat` does not tell.
fn sized(target: &Target) -> Result<(u64, i128), InputError> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Some(path) = target.path() else {
        return match Input::open(target)? {
            Input::Sized(file) => Ok((file.len(), i128::from(file.remote_version().unwrap_or(0)))),
            Input::Stream(_) => Err(InputError::RangeOfStream),
        };
    };
    let meta = std::fs::metadata(path)?;
    let kind = meta.file_type();
    if kind.is_dir() {
        return Err(InputError::IsADirectory);
    }
    let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
    if kind.is_file() {
        return Ok((meta.len(), mtime));
    }
    if !kind.is_block_device() {
        return Err(InputError::RangeOfStream);
    }
    match Input::open(target)? {
        Input::Sized(file) => Ok((file.len(), mtime)),
        Input::Stream(_) => Err(InputError::RangeOfStream),
    }
}

/// `(size, mtime_ns)` of the file at `path` ([`sized`]), or the exception hashing a range of
/// it would raise, at once for a stream: what `mtsum.dask` plans with.
#[pyfunction]
#[pyo3(signature = (path, storage_options=None))]
fn _stat(
    py: Python<'_>,
    #[pyo3(from_py_with = path)] path: PathBuf,
    storage_options: Option<&Bound<'_, PyAny>>,
) -> PyResult<(u64, i128)> {
    let target = storage::target(&path, &storage::options(storage_options)?)?;
    py.detach(|| sized(&target))
        .map_err(|e| input_error(py, &path, &e))
}

/// `NAME: cause`, the message of an exception about `path`, as the CLI says it.
#[pyfunction]
fn _message(#[pyo3(from_py_with = path)] path: PathBuf, cause: &str) -> String {
    errors::message(&path, &cause)
}

/// The root digest (hex) from partial lines that cover a file once.
#[pyfunction]
fn combine(#[pyo3(from_py_with = strings)] partials: Vec<String>) -> PyResult<String> {
    let partials: Vec<Partial> = partials
        .iter()
        .map(|line| Partial::from_line(line))
        .collect::<Result<_, _>>()
        .map_err(value_error)?;
    Ok(range::combine(partials).map_err(value_error)?.to_string())
}

/// A hasher in hashlib's shape for bytes that arrive in pieces: `update(data)` as often as
/// needed, then `digest()` or `hexdigest()` (feeding may go on after them), `copy()` for an
/// independent copy. The digest is the one `mtsum.file_digest` and the CLI give for the same
/// bytes in one file: `value()` is their string, `hexdigest()` the same in hex
/// (`digest().hex()`, then `-N` after a value with a part count); they differ only for S3's
/// checksums, which S3 shows in base64. Without an algorithm, the layout's own, as in the
/// CLI: md5 for "s3" (the ETag), sha256 for the others.
///
/// `update` takes any object with the buffer protocol (bytes, bytearray, memoryview,
/// array.array, a NumPy array) without copying it, and releases the GIL while it hashes (from
/// 4 KiB on), so other Python threads run meanwhile and several hashers in several threads
/// use several cores. One hasher used by several threads at once takes their calls in turn.
///
/// Every layout but "mtsum" hashes each piece as it comes, in constant memory. The "mtsum" layout cannot: where its leaves begin depends on the total length,
/// known only at the end. Its hasher therefore spools: the first MiB stays in memory, beyond
/// that the bytes go to an anonymous temporary file in TMPDIR (removed with the hasher), and
/// `digest()` hashes what was collected (a spool file on every core). Memory stays bounded;
/// disk use is the stream's length, `copy()` copies the file, and each `digest()` reads it
/// all again. For a stream hashed once, prefer a layout that needs no length, or write it to
/// a file and call `mtsum.file_digest`.
///
/// Raises ValueError for an unknown algorithm or layout, or a leaf size where the layout has
/// none; `update` raises TypeError for a str (encode it first) and BufferError for a
/// non-contiguous buffer; a spool that cannot be written raises OSError.
#[pyclass(frozen, module = "mtsum")]
struct Hasher {
    layout: Layout,
    algorithm: Algorithm,
    /// Locked without the GIL: an `update` in one thread and a `digest` in another take turns.
    state: Mutex<hasher::State>,
}

impl Hasher {
    /// The state, for a caller that has released the GIL (another thread's `update` may hold
    /// it for a while). A panic cannot leave a state half-updated in a way that matters more
    /// than the panic itself, so a poisoned lock is taken as it is.
    fn state(&self) -> MutexGuard<'_, hasher::State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl Hasher {
    #[new]
    #[pyo3(signature = (algorithm=None, layout="mtsum", leaf_size=None))]
    fn new(
        algorithm: Option<&str>,
        layout: &str,
        leaf_size: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Hasher> {
        let (layout, algorithm) = parse_spec(algorithm, layout, leaf_size)?;
        Ok(Hasher {
            layout,
            algorithm,
            state: Mutex::new(hasher::State::new(layout, algorithm)),
        })
    }

    /// Feeds the next bytes: any object with the buffer protocol.
    fn update(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let bytes = Bytes::of(data)?;
        let data = bytes.as_slice();
        // Small and the state free: hash right here. Large, or another thread's update
        // busy: wait and hash without the GIL.
        let here = match self.state.try_lock() {
            Ok(mut state) if data.len() < GIL_MIN_BYTES => Some(state.update(data)),
            _ => None,
        };
        let result = match here {
            Some(result) => result,
            None => py.detach(|| self.state().update(data)),
        };
        result.map_err(|e| hasher_error(py, e))
    }

    /// The digest of everything fed so far, as bytes (without S3's part count: see
    /// `hexdigest` and `value`).
    fn digest<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let root = self.root(py)?;
        Ok(PyBytes::new(py, root.digest().as_bytes()))
    }

    /// The digest of everything fed so far in lowercase hex, `digest().hex()`, followed by
    /// `-N` where the value has a part count (S3's multipart values: the ETag `hex-2`).
    fn hexdigest(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.root(py)?.with_encoding(Encoding::Hex).to_string())
    }

    /// The value of everything fed so far as the CLI prints it and `mtsum.file_digest`
    /// returns it: `hexdigest()`, except for S3's checksums, which S3 shows in base64.
    fn value(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.root(py)?.to_string())
    }

    /// An independent hasher in the same state.
    fn copy(&self, py: Python<'_>) -> PyResult<Hasher> {
        let state = py.detach(|| self.state().try_clone());
        Ok(Hasher {
            layout: self.layout,
            algorithm: self.algorithm,
            state: Mutex::new(state.map_err(|e| hasher_error(py, e))?),
        })
    }

    /// `sha256` for the plain layout (as hashlib names it), else the lowercase sum-file tag:
    /// `mtsum-sha256`, `rfc6962-sha256-1m`.
    #[getter]
    fn name(&self) -> String {
        sumfile::tag(self.layout, self.algorithm).to_ascii_lowercase()
    }

    /// The digest's length in bytes.
    #[getter]
    fn digest_size(&self) -> usize {
        self.algorithm.digest_len()
    }

    /// The hash function's block in bytes, as hashlib gives it: 64 for md5, sha1, sha224 and
    /// sha256, 128 for sha384 and sha512 (what `hmac` pads its key to), 64 for blake3 (its
    /// block, as the `blake3` package says) and for xxh3 and xxh128 (their stripe), and 1 for
    /// the CRCs, which take a byte at a time. The layout does not change it: it is the
    /// function's.
    #[getter]
    fn block_size(&self) -> usize {
        match self.algorithm {
            Algorithm::Sha384 | Algorithm::Sha512 => 128,
            a if a.is_crc() => 1,
            _ => 64,
        }
    }

    /// The hash function: "sha256", "blake3", ...
    #[getter]
    fn algorithm(&self) -> &'static str {
        self.algorithm.name()
    }

    /// The layout, one of `mtsum.LAYOUTS`: "mtsum", "plain", "merkle", ...
    #[getter]
    fn layout(&self) -> &'static str {
        self.layout.name()
    }

    /// The leaf size in bytes of "merkle" and "rfc6962" (and the fixed one of "glacier",
    /// "dropbox" and "btv2"), the part size of "s3"; None for "mtsum" and "plain".
    #[getter]
    fn leaf_size(&self) -> Option<u64> {
        self.layout.leaf_size().map(LeafSize::get)
    }

    fn __repr__(&self) -> String {
        format!("<mtsum.Hasher {}>", self.name())
    }
}

impl Hasher {
    fn root(&self, py: Python<'_>) -> PyResult<mtsum::layout::Root> {
        let (layout, algorithm) = (self.layout, self.algorithm);
        let result = py.detach(|| self.state().digest(layout, algorithm));
        result.map_err(|e| hasher_error(py, e))
    }
}

/// A spool that failed is an OSError naming its file or directory (TMPDIR); bytes the layout
/// has no value for a ValueError, as for `file_digest`.
fn hasher_error(py: Python<'_>, e: hasher::Error) -> PyErr {
    match e {
        hasher::Error::Spool(path, e) => input_error(py, &path, &e),
        hasher::Error::NoRoot(e) => worded_error(e),
    }
}

#[pymodule]
fn _mtsum(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(file_digest, m)?)?;
    m.add_function(wrap_pyfunction!(sum_files, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(hash_range, m)?)?;
    m.add_function(wrap_pyfunction!(combine, m)?)?;
    m.add_function(wrap_pyfunction!(_stat, m)?)?;
    m.add_function(wrap_pyfunction!(_message, m)?)?;
    m.add_function(wrap_pyfunction!(storage::_list, m)?)?;
    m.add_function(wrap_pyfunction!(_walk, m)?)?;
    m.add_function(wrap_pyfunction!(compare::_compare, m)?)?;
    m.add_function(wrap_pyfunction!(compare::_compare_names, m)?)?;
    m.add_class::<Hasher>()?;
    m.add("ALGORITHMS", Algorithm::ALL.map(Algorithm::name).to_vec())?;
    // The library's own lists, so that a layout or algorithm added there is listed here.
    m.add("LAYOUTS", mtsum::layout::NAMES.to_vec())?;
    m.add("__version__", mtsum::VERSION)?;
    Ok(())
}
