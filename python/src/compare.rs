//! `mtsum.compare` and the pieces `mtsum.dask.compare` spreads over its workers: the
//! library's [`mtsum::compare`], its records handed back as the JSON lines `mtsum --compare
//! --json` prints, so that the Python records have the JSON's fields by construction.

use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use mtsum::compare::{self, ListError, Listed, Options, ReadRemote};
use mtsum::engine::Engine;
use mtsum::json;
use mtsum::walk::Recursion;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::{errors, interruptible, parse_spec, path, storage, thread_count};

/// How both sides' bytes are hashed where they are read, and when remote bytes are.
fn options(
    algorithm: Option<&str>,
    layout: Option<&str>,
    leaf_size: Option<&Bound<'_, PyAny>>,
    one_way: bool,
    size_only: bool,
    read_remote: Option<&Bound<'_, PyAny>>,
    follow_symlinks: bool,
) -> PyResult<Options> {
    let mut options = Options::default();
    match layout {
        Some(layout) => {
            let (layout, algorithm) = parse_spec(algorithm, layout, leaf_size)?;
            options.request.layout = layout;
            options.request.algorithm = algorithm;
        }
        None => {
            if let Some(algorithm) = algorithm {
                let (_, algorithm) = parse_spec(Some(algorithm), "plain", leaf_size)?;
                options.request.algorithm = algorithm;
            }
        }
    }
    let word = read_remote.and_then(|r| r.extract::<String>().ok());
    options.read_remote = match read_remote.filter(|r| !r.is_none()) {
        None => ReadRemote::Never,
        Some(_) if word.as_deref() == Some("all") => ReadRemote::All,
        Some(_) if word.as_deref() == Some("unverified") => ReadRemote::Unverified,
        Some(r) if r.extract::<bool>().is_ok() => match r.is_truthy()? {
            true => ReadRemote::Unverified,
            false => ReadRemote::Never,
        },
        Some(_) => {
            return Err(PyValueError::new_err(
                "read_remote must be False, True (the objects no stored value vouches for) or \"all\"",
            ));
        }
    };
    options.one_way = one_way;
    options.size_only = size_only;
    options.recursion = Recursion::from_flags(true, follow_symlinks);
    Ok(options)
}

/// A root that could not be listed, raised as `open()` would raise it for the root.
fn list_error(py: Python<'_>, e: &ListError) -> PyErr {
    let root = PathBuf::from(std::ffi::OsStr::from_bytes(&e.root));
    errors::input_error(py, &root, &e.cause)
}

/// The records of comparing `local` with `remote` (of the names `names` only, as
/// `_compare_names` lists them, when given), each the JSON line of `--compare --json`, then
/// the summary's line.
#[pyfunction]
#[pyo3(signature = (local, remote, algorithm=None, layout=None, leaf_size=None, threads=None, storage_options=None, one_way=false, size_only=false, read_remote=None, follow_symlinks=false, names=None))]
#[allow(clippy::too_many_arguments)] // Python keywords
pub fn _compare(
    py: Python<'_>,
    #[pyo3(from_py_with = path)] local: PathBuf,
    #[pyo3(from_py_with = path)] remote: PathBuf,
    algorithm: Option<&str>,
    layout: Option<&str>,
    leaf_size: Option<&Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
    storage_options: Option<&Bound<'_, PyAny>>,
    one_way: bool,
    size_only: bool,
    read_remote: Option<&Bound<'_, PyAny>>,
    follow_symlinks: bool,
    names: Option<Vec<(Vec<u8>, bool, bool)>>,
) -> PyResult<Vec<String>> {
    let options = options(
        algorithm,
        layout,
        leaf_size,
        one_way,
        size_only,
        read_remote,
        follow_symlinks,
    )?;
    let engine = Engine::new(thread_count(threads)?);
    let storage = storage::options(storage_options)?;
    let (local, remote) = (
        storage::target(&local, &storage)?,
        storage::target(&remote, &storage)?,
    );
    let result = interruptible(py, engine, move |engine| {
        let mut lines = Vec::new();
        let mut sink = |r: &compare::Record| {
            lines.push(String::from_utf8_lossy(&json::compare_record(r)).into_owned());
            ControlFlow::Continue(())
        };
        let summary = match names {
            Some(names) => {
                compare::compare_names(engine, &local, &remote, &names, &options, &mut sink)
            }
            None => compare::compare(engine, &local, &remote, &options, &mut sink),
        }?;
        lines.push(String::from_utf8_lossy(&json::compare_summary(&summary)).into_owned());
        Ok(lines)
    })?;
    result.map_err(|e: ListError| list_error(py, &e))
}

/// The names below both roots, sorted, and which side holds each: `(name, local, remote)`,
/// names as bytes. What `mtsum.dask.compare` hands out to its workers in parts.
#[pyfunction]
#[pyo3(signature = (local, remote, storage_options=None, follow_symlinks=false))]
pub fn _compare_names(
    py: Python<'_>,
    #[pyo3(from_py_with = path)] local: PathBuf,
    #[pyo3(from_py_with = path)] remote: PathBuf,
    storage_options: Option<&Bound<'_, PyAny>>,
    follow_symlinks: bool,
) -> PyResult<Vec<(Py<PyBytes>, bool, bool)>> {
    let storage = storage::options(storage_options)?;
    let (local, remote) = (
        storage::target(&local, &storage)?,
        storage::target(&remote, &storage)?,
    );
    let recursion = Recursion::from_flags(true, follow_symlinks);
    let listed: Result<Vec<Listed>, ListError> =
        py.detach(|| compare::names(&local, &remote, recursion));
    let listed = listed.map_err(|e| list_error(py, &e))?;
    Ok(listed
        .into_iter()
        .map(|(name, a, b)| (PyBytes::new(py, &name).unbind(), a, b))
        .collect())
}
