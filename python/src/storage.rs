//! Remote objects from Python: a path that is an `s3://` or `http(s)://` URL names an object,
//! reached with the `storage_options` dict that fsspec users know (s3fs's keys), or with the
//! same credential chain as the CLI (environment, `~/.aws` profiles) without one.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mtsum::source::Target;
use mtsum::source::remote::{self, Addressing, Options, Url};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// The options of `storage_options`, or `None` for the defaults. Keys as s3fs takes them:
/// `key`, `secret`, `token`, `anon`, `endpoint_url`, `region` (also `client_kwargs` with
/// `endpoint_url`, `region_name` and `verify`, a CA bundle), `profile`; and mtsum's `connections` and
/// `addressing_style` (`"path"` or `"virtual"`).
pub fn options(storage_options: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Arc<Options>>> {
    let Some(given) = storage_options.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let dict = given.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err("storage_options must be a dict such as {\"anon\": True}")
    })?;
    let mut options = Options::default();
    for (key, value) in dict.iter() {
        let key: String = key.extract()?;
        let text = || -> PyResult<Option<String>> {
            match value.is_none() {
                true => Ok(None),
                false => Ok(Some(value.cast::<PyString>()?.to_cow()?.into_owned())),
            }
        };
        match key.as_str() {
            "key" => options.access_key_id = text()?,
            "secret" => options.secret_access_key = text()?,
            "token" => options.session_token = text()?,
            "endpoint_url" => options.endpoint_url = text()?,
            "region" | "region_name" => options.region = text()?,
            "profile" => options.profile = text()?,
            "anon" => options.no_sign_request = value.is_truthy()?,
            "connections" => {
                let n: usize = value.extract()?;
                options.connections = NonZeroUsize::new(n)
                    .ok_or_else(|| PyValueError::new_err("connections must be at least 1"))?;
            }
            "addressing_style" => {
                options.addressing = match text()?.as_deref() {
                    Some("path") => Addressing::Path,
                    Some("virtual") => Addressing::Virtual,
                    None | Some("auto") => Addressing::Auto,
                    Some(other) => {
                        return Err(PyValueError::new_err(format!(
                            "addressing_style must be \"path\", \"virtual\" or \"auto\", not {other:?}"
                        )));
                    }
                }
            }
            "client_kwargs" => {
                let kwargs = value.cast::<PyDict>().map_err(|_| {
                    PyTypeError::new_err("storage_options[\"client_kwargs\"] must be a dict")
                })?;
                if let Some(url) = kwargs.get_item("endpoint_url")? {
                    options.endpoint_url = Some(url.extract()?);
                }
                if let Some(region) = kwargs.get_item("region_name")? {
                    options.region = Some(region.extract()?);
                }
                // botocore's `verify`: a CA bundle's path. (Its `False`, no checking at all,
                // is refused by the extraction: not a path.)
                if let Some(bundle) = kwargs.get_item("verify")? {
                    options.ca_bundle = Some(bundle.extract::<PathBuf>().map_err(|_| {
                        PyTypeError::new_err(
                            "storage_options[\"client_kwargs\"][\"verify\"] must be the path of a CA bundle",
                        )
                    })?);
                }
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown storage option {other:?} (known: key, secret, token, anon, endpoint_url, region, profile, client_kwargs, connections, addressing_style)"
                )));
            }
        }
    }
    Ok(Some(Arc::new(options)))
}

/// What `path` names: a remote object if it is a URL (with `options`, else the defaults),
/// else the file.
pub fn target(path: &Path, options: &Option<Arc<Options>>) -> PyResult<Target> {
    if !remote::is_url(path.as_os_str().as_encoded_bytes()) {
        return Ok(Target::Path(path.to_path_buf()));
    }
    let text = path
        .to_str()
        .ok_or_else(|| PyValueError::new_err("a URL must be valid UTF-8"))?;
    let url = match options {
        Some(options) => Url::with_options(text, options.clone()),
        None => Url::parse(text),
    };
    url.map(Target::Url).map_err(PyValueError::new_err)
}

/// The objects below an `s3://BUCKET/PREFIX/` URL, as URLs: what `mtsum.dask.sum_files`
/// spreads over its workers.
#[pyfunction]
#[pyo3(signature = (url, storage_options=None))]
pub fn _list(
    py: Python<'_>,
    url: &str,
    storage_options: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<String>> {
    let path = PathBuf::from(url);
    let Target::Url(url) = target(&path, &options(storage_options)?)? else {
        return Err(PyValueError::new_err(format!("{url}: not an s3:// URL")));
    };
    let listed = py.detach(|| remote::list(&url));
    match listed {
        Ok(urls) => Ok(urls.iter().map(|u| u.as_str().to_string()).collect()),
        Err(e) => Err(crate::errors::input_error(py, &path, &e)),
    }
}
