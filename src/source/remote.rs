//! Objects named by URL: `s3://BUCKET/KEY` and `http(s)://HOST/PATH`, read by concurrent
//! range GETs into the same engine as files.
//!
//! An object opens as a [`SizedFile`](super::SizedFile) whose positioned reads are served
//! from ranges of [`RANGE_SIZE`] bytes fetched ahead of the readers, so the engine, its
//! layouts and its lanes never learn where the bytes came from: one hashing path. The size
//! and the version guard come from one `HEAD`; every range GET names that version
//! (`If-Match: ETAG`, or `If-Unmodified-Since` from a server that sends no ETag), so an
//! object replaced while being read fails with "changed while being read", never with the
//! digest of two versions.
//!
//! What to connect with ([`Options`]) travels with each [`Url`]: the command line sets the
//! defaults ([`set_default_options`]), the Python package passes its `storage_options`.

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::{Arc, RwLock};

use super::error::InputError;

#[cfg(feature = "remote")]
mod head;
#[cfg(feature = "remote")]
mod profile;
#[cfg(feature = "remote")]
mod sso;
#[cfg(feature = "remote")]
mod store;
mod stored;

#[cfg(feature = "remote")]
pub(crate) use store::Object;
pub use stored::{
    CHECKSUM_ALGORITHMS, CUSTOMER_KEY, ChecksumKind, Parts, SMALLEST_PART, StoredChecksum,
    StoredObject, etag_parts,
};

/// Without the `remote` feature no object opens: an `Object` has no value.
#[cfg(not(feature = "remote"))]
pub(crate) enum Object {}

/// The bytes of one range GET: what the engine's readers wait for and what read-ahead
/// fetches. 8 MiB, the part size of the AWS CLI: large enough that a GET's latency is
/// small beside its transfer, small enough that `--connections` of them in memory stay
/// modest (16 × 8 MiB = 128 MiB by default).
pub const RANGE_SIZE: u64 = 8 << 20;

/// How to reach remote objects: concurrency, endpoint, credentials, addressing.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Options {
    /// Range GETs in flight at once, and the ranges in memory past which none is fetched
    /// ahead of the readers: memory stays below (`connections` + the jobs read at once) ×
    /// [`RANGE_SIZE`], the jobs read at once being one for a stream, up to the kernel's
    /// lanes a thread for a tree hashed in SIMD lanes.
    pub connections: NonZeroUsize,
    /// The S3 API endpoint (MinIO, Ceph, R2, GCS's XML API ...), as `AWS_ENDPOINT_URL`.
    pub endpoint_url: Option<String>,
    /// Anonymous requests, for public buckets (the AWS CLI's `--no-sign-request`).
    pub no_sign_request: bool,
    /// Path-style (`ENDPOINT/BUCKET/KEY`) or virtual-hosted (`BUCKET.ENDPOINT/KEY`) URLs.
    pub addressing: Addressing,
    /// The profile of `~/.aws/config` and `~/.aws/credentials` to read, over `AWS_PROFILE`.
    pub profile: Option<String>,
    /// The PEM file of the certificate authorities that `https://` servers are checked
    /// against, instead of the system's (the AWS CLI's `--ca-bundle`), over `AWS_CA_BUNDLE`
    /// and the profile's `ca_bundle`: a MinIO or a proxy with a private CA.
    pub ca_bundle: Option<std::path::PathBuf>,
    /// Explicit credentials and region, over every other source.
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub region: Option<String>,
    /// What a store reports of an object uploaded in parts (`--stored`, `--compare`): ask
    /// each part's size wherever parts that seem of one size may differ in the middle
    /// ([`Parts::may_differ_inside`]), one `HEAD` per part, instead of only where the first
    /// and last parts show that they differ.
    pub every_part: bool,
}

/// How bucket names go into S3 URLs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Addressing {
    /// Virtual-hosted on AWS (but for bucket names that cannot be a host name's label under
    /// AWS's certificates: dots, capitals, underscores), path-style on any other endpoint
    /// (`--endpoint-url`, `AWS_ENDPOINT_URL`, a profile's `endpoint_url`): what the AWS CLI
    /// does.
    #[default]
    Auto,
    Path,
    Virtual,
}

impl Options {
    /// The default number of concurrent range GETs: one connection to S3 carries some
    /// 100 MB/s, and 16 of them fill a 10 Gb/s link.
    pub const DEFAULT_CONNECTIONS: NonZeroUsize = NonZeroUsize::new(16).expect("not zero");
}

impl Default for Options {
    fn default() -> Options {
        Options {
            connections: Options::DEFAULT_CONNECTIONS,
            endpoint_url: None,
            no_sign_request: false,
            every_part: false,
            addressing: Addressing::Auto,
            profile: None,
            ca_bundle: None,
            access_key_id: None,
            secret_access_key: None,
            session_token: None,
            region: None,
        }
    }
}

/// Secrets stay out of debug output.
impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |s: &Option<String>| s.as_ref().map(|_| "…");
        f.debug_struct("Options")
            .field("connections", &self.connections)
            .field("endpoint_url", &self.endpoint_url)
            .field("no_sign_request", &self.no_sign_request)
            .field("addressing", &self.addressing)
            .field("profile", &self.profile)
            .field("ca_bundle", &self.ca_bundle)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &hidden(&self.secret_access_key))
            .field("session_token", &hidden(&self.session_token))
            .field("region", &self.region)
            .finish()
    }
}

/// The options that URLs named without their own take (the command line's).
static DEFAULT_OPTIONS: RwLock<Option<Arc<Options>>> = RwLock::new(None);

/// Sets the options of the URLs that [`Target::from_arg`](super::Target::from_arg) makes
/// from now on: the operands' and the names of a sum file's lines alike.
pub fn set_default_options(options: Options) {
    *DEFAULT_OPTIONS.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(options));
}

fn default_options() -> Arc<Options> {
    let options = DEFAULT_OPTIONS.read().unwrap_or_else(|e| e.into_inner());
    options.clone().unwrap_or_default()
}

/// Whether `name` names a remote object rather than a path: it starts with `s3://`,
/// `http://` or `https://`. (A local path that does, `./s3://...`, is written with `./`.)
pub fn is_url(name: &[u8]) -> bool {
    [&b"s3://"[..], b"http://", b"https://"]
        .iter()
        .any(|scheme| {
            name.len() >= scheme.len() && name[..scheme.len()].eq_ignore_ascii_case(scheme)
        })
}

/// A remote object, or with `-r` a prefix of them, with the options to reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    text: String,
    place: Place,
    options: Arc<Options>,
    /// The version the object must have ([`version_of`]), if the caller planned with one.
    expect: Option<u64>,
}

/// Where a [`Url`] points.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Place {
    S3 {
        bucket: String,
        key: String,
    },
    /// `origin` is `scheme://host[:port]`, `path` the rest, from its `/`.
    Http {
        origin: String,
        path: String,
    },
}

impl Url {
    /// Parses `text` (see [`is_url`]) with the command line's options.
    pub fn parse(text: &str) -> Result<Url, String> {
        Url::with_options(text, default_options())
    }

    /// Parses `text` (see [`is_url`]), to be reached with `options`.
    pub fn with_options(text: &str, options: Arc<Options>) -> Result<Url, String> {
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| format!("{text}: not a URL"))?;
        let place = match scheme.to_ascii_lowercase().as_str() {
            "s3" => {
                let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    return Err(format!("{text}: no bucket in the URL (s3://BUCKET/KEY)"));
                }
                Place::S3 {
                    bucket: bucket.into(),
                    key: key.into(),
                }
            }
            "http" | "https" => {
                let (host, path) = match rest.find('/') {
                    Some(at) => rest.split_at(at),
                    None => (rest, "/"),
                };
                if host.is_empty() {
                    return Err(format!("{text}: no host in the URL"));
                }
                Place::Http {
                    origin: format!("{scheme}://{host}"),
                    path: path.into(),
                }
            }
            _ => return Err(format!("{text}: not an s3, http or https URL")),
        };
        Ok(Url {
            text: text.into(),
            place,
            options,
            expect: None,
        })
    }

    /// The URL as named, which sum lines print.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The options it is reached with.
    pub fn options(&self) -> &Arc<Options> {
        &self.options
    }

    /// Whether it names a prefix of objects rather than one: an `s3://` URL whose key is
    /// empty or ends with `/` (what `-r` lists).
    pub fn is_prefix(&self) -> bool {
        matches!(&self.place, Place::S3 { key, .. } if key.is_empty() || key.ends_with('/'))
    }

    /// The URL of the object `key` of the same bucket, with the same options.
    pub(crate) fn sibling(&self, key: &str) -> Url {
        let (bucket, text) = match &self.place {
            Place::S3 { bucket, .. } => (bucket, format!("s3://{bucket}/{key}")),
            Place::Http { .. } => unreachable!("only S3 URLs are listed"),
        };
        Url {
            text,
            place: Place::S3 {
                bucket: bucket.clone(),
                key: key.into(),
            },
            options: self.options.clone(),
            expect: None,
        }
    }

    /// The same URL, to be opened only at `version` (as [`version_of`] gives it, from an
    /// earlier open): an object replaced since is "changed while being read". What lets
    /// the ranges of one object be read by many processes (Dask workers) from one version.
    pub fn expecting(mut self, version: u64) -> Url {
        self.expect = Some(version);
        self
    }
}

/// A number for an object's version (its ETag, or the modification time of a server that
/// sends none): FNV-1a, stable across processes and machines, so that a planner can hand it
/// to the workers.
pub fn version_of(validator: &str) -> u64 {
    validator.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Opens the object at `url` for positioned reads: one `HEAD` for its size and version.
pub(super) fn open(url: &Url) -> Result<Object, InputError> {
    if url.is_prefix() {
        return Err(InputError::Remote(
            "a prefix, not an object; hash the objects below it with -r".into(),
        ));
    }
    #[cfg(feature = "remote")]
    {
        store::Object::open(url)
    }
    #[cfg(not(feature = "remote"))]
    Err(unsupported())
}

/// The objects below the prefix `url` ([`Url::is_prefix`]), in the store's order (by key),
/// each with the options of `url`. Keys ending with `/` (the empty "folders" consoles make)
/// are left out.
pub fn list(url: &Url) -> Result<Vec<Url>, InputError> {
    #[cfg(feature = "remote")]
    {
        let keys = store::list(url)?;
        Ok(keys.iter().map(|key| url.sibling(key)).collect())
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = (url, Url::sibling);
        Err(unsupported())
    }
}

/// The objects below the prefix `url` ([`Url::is_prefix`]) with what the store reports of
/// each, by key; an object whose `HEAD`s failed is its URL and the error, and the others
/// are still read. The listing failing is the prefix's error.
///
/// Requests: the listing (one per 1 000 keys), then per object one `HEAD` with
/// `x-amz-checksum-mode: ENABLED`, and for an object of two parts or more one `HEAD` with
/// `partNumber=1`, and one with `partNumber=N` for three parts or more; up to
/// [`Options::connections`] of them at once.
#[allow(clippy::type_complexity)]
pub fn list_stored(url: &Url) -> Result<Vec<Result<StoredObject, (Url, InputError)>>, InputError> {
    if !url.is_prefix() {
        return Err(InputError::Remote(
            "not a prefix: name one ending with / (s3://BUCKET/PREFIX/)".into(),
        ));
    }
    #[cfg(feature = "remote")]
    {
        head::stored(url, None)
    }
    #[cfg(not(feature = "remote"))]
    Err(unsupported())
}

/// What the store reports of the objects `names` below the prefix `url`, as
/// [`list_stored`] gives it but without listing: for a caller that listed the keys before
/// and hands them out in parts (`mtsum.dask.compare`'s workers). One `HEAD` or more per
/// object, up to [`Options::connections`] at once.
#[allow(clippy::type_complexity)]
pub fn head_stored(
    url: &Url,
    names: &[String],
) -> Result<Vec<Result<StoredObject, (Url, InputError)>>, InputError> {
    if !url.is_prefix() {
        return Err(InputError::Remote(
            "not a prefix: name one ending with / (s3://BUCKET/PREFIX/)".into(),
        ));
    }
    #[cfg(feature = "remote")]
    {
        head::stored(url, Some(names))
    }
    #[cfg(not(feature = "remote"))]
    {
        let _ = names;
        Err(unsupported())
    }
}

/// How often, and how far apart, a request that failed for a reason that may pass (a 5xx
/// answer, a connection refused or cut) is sent again: object_store's requests
/// (`store::retry`) and those sent past it ([`retried`]) alike.
#[cfg(feature = "remote")]
const RETRIES: usize = 5;
#[cfg(feature = "remote")]
const FIRST_WAIT: std::time::Duration = std::time::Duration::from_millis(100);
#[cfg(feature = "remote")]
const LONGEST_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// One try of a request sent past object_store: worth another, or final.
#[cfg(feature = "remote")]
enum Attempt<E> {
    Retry(E),
    Fail(E),
}

/// What `attempt` gets, tried up to [`RETRIES`] more times while it fails with
/// [`Attempt::Retry`], [`FIRST_WAIT`] apart doubling up to [`LONGEST_WAIT`]: for the
/// requests object_store does not send (and so does not retry) for us.
#[cfg(feature = "remote")]
async fn retried<T, E, F>(mut attempt: impl FnMut() -> F) -> Result<T, E>
where
    F: Future<Output = Result<T, Attempt<E>>>,
{
    let mut wait = FIRST_WAIT;
    let mut retries = 0;
    loop {
        match attempt().await {
            Err(Attempt::Retry(_)) if retries < RETRIES => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(LONGEST_WAIT);
                retries += 1;
            }
            Err(Attempt::Retry(e) | Attempt::Fail(e)) => return Err(e),
            Ok(answer) => return Ok(answer),
        }
    }
}

/// An error and its sources, as one text.
#[cfg(feature = "remote")]
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text += ": ";
        text += &s.to_string();
        source = s.source();
    }
    text
}

/// The innermost cause of an error, without object_store's request dumps: "connection
/// refused", "server returned 503 Service Unavailable", ...
#[cfg(feature = "remote")]
fn short(e: &dyn std::error::Error) -> String {
    let mut causes = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        causes.push(s.to_string());
        source = s.source();
    }
    let status = causes.iter().find_map(|c| {
        let at = c.find("status code")?;
        let rest = c[at + "status code".len()..].trim_start_matches([':', ' ']);
        Some(
            rest.split([',', ':'])
                .next()
                .unwrap_or(rest)
                .trim()
                .to_string(),
        )
    });
    let innermost = causes.pop().unwrap_or_default();
    let innermost = innermost.lines().next().unwrap_or_default();
    match status {
        Some(status) => format!("the server answered {status}"),
        // As coreutils prints an OS error: without Rust's " (os error N)".
        None => match innermost.find(" (os error ") {
            Some(at) => innermost[..at].to_string(),
            None => innermost.to_string(),
        },
    }
}

#[cfg(not(feature = "remote"))]
fn unsupported() -> InputError {
    InputError::Remote(
        "this mtsum was built without remote objects (cargo feature `remote`)".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths_by_their_scheme() {
        assert!(is_url(b"s3://b/k"));
        assert!(is_url(b"HTTPS://host/x"));
        assert!(is_url(b"http://host"));
        assert!(!is_url(b"./s3://b/k"));
        assert!(!is_url(b"s3:/b/k"));
        assert!(!is_url(b"file"));
    }

    #[test]
    fn an_s3_url_is_a_bucket_and_a_key_and_a_prefix_ends_with_a_slash() {
        let url = Url::parse("s3://bucket/dir/key").unwrap();
        assert_eq!(
            url.place,
            Place::S3 {
                bucket: "bucket".into(),
                key: "dir/key".into()
            }
        );
        assert!(!url.is_prefix());
        assert!(Url::parse("s3://bucket/dir/").unwrap().is_prefix());
        assert!(Url::parse("s3://bucket").unwrap().is_prefix());
        assert_eq!(url.sibling("other").as_str(), "s3://bucket/other");
        assert!(Url::parse("s3:///key").is_err());
    }

    #[test]
    fn an_http_url_is_an_origin_and_a_path() {
        let url = Url::parse("http://127.0.0.1:8080/a/b%20c").unwrap();
        assert_eq!(
            url.place,
            Place::Http {
                origin: "http://127.0.0.1:8080".into(),
                path: "/a/b%20c".into()
            }
        );
        assert!(!url.is_prefix());
        assert!(Url::parse("https:///x").is_err());
        assert!(Url::parse("ftp://host/x").is_err());
    }

    #[test]
    fn debug_output_hides_secrets() {
        let options = Options {
            secret_access_key: Some("SECRET".into()),
            session_token: Some("TOKEN".into()),
            ..Options::default()
        };
        let shown = format!("{options:?}");
        assert!(
            !shown.contains("SECRET") && !shown.contains("TOKEN"),
            "{shown}"
        );
    }

    #[cfg(feature = "remote")]
    #[test]
    fn causes_are_cut_to_the_status() {
        #[derive(Debug)]
        struct E(&'static str);
        impl fmt::Display for E {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for E {}
        use std::fmt;
        let e = E(
            "Error performing GET http://x in 1s - Server returned non-success status code 503 Service Unavailable, body: x",
        );
        assert_eq!(short(&e), "the server answered 503 Service Unavailable");
        let e = E("Server returned non-2xx status code: 503 Service Unavailable: ");
        assert_eq!(short(&e), "the server answered 503 Service Unavailable");
        let e = E("Connection refused (os error 111)");
        assert_eq!(short(&e), "Connection refused");
    }
}
