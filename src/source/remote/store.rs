//! The client side of remote objects: stores (one per bucket or origin and [`Options`]),
//! the `HEAD` that sizes an object, and the ranges fetched ahead of the engine's readers.
//!
//! The engine's readers call [`Object::read_at`] from their own threads, as they `pread` a
//! file. The ranges they need are fetched on a small tokio runtime: the one a reader waits
//! for, and behind it more (read-ahead, one more at each read), so that even a layout that
//! reads the object as one stream (plain SHA-256) keeps `connections` GETs busy. A range is
//! dropped once every byte of it was delivered; a range is fetched ahead only while fewer
//! than `connections` are in memory, of all objects reached with one [`Options`], so memory
//! stays bounded whatever the number of objects.

use std::collections::{HashMap, HashSet};
use std::io::{ErrorKind, IoSliceMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use futures_util::TryStreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::http::HttpBuilder;
use object_store::path::Path as Key;
use object_store::{
    BackoffConfig, Certificate, ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt,
    RetryConfig,
};
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;

use super::profile::{CredentialProcess, Profile};
use super::sso::SsoCredentials;
use super::{
    Addressing, FIRST_WAIT, LONGEST_WAIT, Options, Place, RANGE_SIZE, RETRIES, Url, chain, short,
};
use crate::source::{InputError, os_message};

/// The runtime the GETs run on: two threads move the bytes of 16 connections at loopback
/// speed (they only copy what the sockets deliver); hashing stays on the engine's threads.
pub(super) fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("mtsum-remote")
            .enable_all()
            .build()
            .expect("a tokio runtime (threads and an event loop)")
    })
}

/// What all objects reached with one [`Options`] share: the GETs in flight, the ranges in
/// memory, the buffers they are read into, and the stores built so far.
struct Pool {
    options: Arc<Options>,
    gets: Arc<Semaphore>,
    /// Ranges in memory or under way, of all objects: those a reader waits for, which are
    /// always fetched, and those fetched ahead, only while fewer than `connections` are.
    ranges: AtomicUsize,
    /// Buffers of [`RANGE_SIZE`] bytes that held a range and are free again, kept while
    /// objects are open. Each range GET fills one of these rather than a fresh allocation:
    /// the allocator, given 8 MiB blocks freed by one thread and asked again by another,
    /// kept some 40 % more than the ranges in use (212 MiB RSS for 144 MiB of ranges at
    /// `--connections 16`); reused, the buffers never outnumber the ranges once held at
    /// the same time.
    spare: Mutex<Vec<Vec<u8>>>,
    /// Objects open: their last one closed, the spare buffers are given back.
    open: AtomicUsize,
    stores: Mutex<HashMap<String, Arc<dyn ObjectStore>>>,
}

fn pool(options: &Arc<Options>) -> Arc<Pool> {
    static POOLS: Mutex<Vec<Arc<Pool>>> = Mutex::new(Vec::new());
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(pool) = pools.iter().find(|p| *p.options == **options) {
        return pool.clone();
    }
    let pool = Arc::new(Pool {
        options: options.clone(),
        gets: Arc::new(Semaphore::new(options.connections.get())),
        ranges: AtomicUsize::new(0),
        spare: Mutex::new(Vec::new()),
        open: AtomicUsize::new(0),
        stores: Mutex::new(HashMap::new()),
    });
    pools.push(pool.clone());
    pool
}

impl Pool {
    /// Takes a place for one more range fetched ahead, if fewer than `connections` ranges
    /// are in memory.
    fn try_hold(&self) -> bool {
        let cap = self.options.connections.get();
        self.ranges
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < cap).then_some(n + 1)
            })
            .is_ok()
    }

    /// Counts a range a reader waits for, whatever the count.
    fn hold(&self) {
        self.ranges.fetch_add(1, Ordering::AcqRel);
    }

    fn release(&self, n: usize) {
        self.ranges.fetch_sub(n, Ordering::AcqRel);
    }

    /// An empty buffer for one range: a spare one, else a new one.
    fn buffer(self: &Arc<Self>) -> Filled {
        let spare = self.spare.lock().unwrap_or_else(|e| e.into_inner()).pop();
        Filled {
            data: spare.unwrap_or_else(|| Vec::with_capacity(RANGE_SIZE as usize)),
            pool: self.clone(),
        }
    }

    /// The store of `url`'s bucket or origin, built once.
    fn store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>, InputError> {
        let name = match &url.place {
            Place::S3 { bucket, .. } => format!("s3://{bucket}"),
            Place::Http { origin, .. } => origin.clone(),
        };
        let mut stores = self.stores.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(store) = stores.get(&name) {
            return Ok(store.clone());
        }
        let store: Arc<dyn ObjectStore> = match &url.place {
            Place::S3 { bucket, .. } => Arc::new(
                s3_builder(bucket, &self.options)?
                    .build()
                    .map_err(|e| InputError::Remote(short(&e)))?,
            ),
            Place::Http { origin, .. } => Arc::new(
                HttpBuilder::new()
                    .with_url(origin)
                    .with_retry(retry())
                    .with_client_options(client_options(&self.options, None)?)
                    .build()
                    .map_err(|e| InputError::Remote(short(&e)))?,
            ),
        };
        stores.insert(name, store.clone());
        Ok(store)
    }
}

/// Retries of a failed request (503 SlowDown, 500, a connection refused or cut, a body cut
/// off mid-range): up to 5, 100 ms apart doubling to 3 s, within a minute; past that the
/// range, and with it the object, fails.
fn retry() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: FIRST_WAIT,
            max_backoff: LONGEST_WAIT,
            base: 2.0,
        },
        max_retries: RETRIES,
        retry_timeout: Duration::from_secs(60),
    }
}

/// Plain `http://` is allowed: the user named it (a MinIO on the local network, a test
/// server); object_store refuses it unless told. `https://` servers are checked against the
/// system's certificate authorities (as `SSL_CERT_FILE` and `SSL_CERT_DIR` may replace them),
/// or against those of a CA bundle ([`ca_bundle`]) only, as the AWS CLI does with one.
pub(super) fn client_options(
    options: &Options,
    profile: Option<&Profile>,
) -> Result<ClientOptions, InputError> {
    let client = ClientOptions::new().with_allow_http(true);
    let Some(path) = ca_bundle(options, profile) else {
        return Ok(client);
    };
    let bundle =
        |cause: String| InputError::Remote(format!("CA bundle {}: {cause}", path.display()));
    let pem = std::fs::read(&path).map_err(|e| bundle(os_message(&e)))?;
    let certificates = Certificate::from_pem_bundle(&pem).map_err(|e| bundle(short(&e)))?;
    if certificates.is_empty() {
        return Err(bundle("no PEM certificate in it".into()));
    }
    Ok(certificates
        .into_iter()
        .fold(client.with_no_system_certificates(true), |client, c| {
            client.with_root_certificate(c)
        }))
}

/// The CA bundle named by the options, else `AWS_CA_BUNDLE`, else the profile's
/// `ca_bundle`: where the AWS CLI looks for one.
fn ca_bundle(options: &Options, profile: Option<&Profile>) -> Option<std::path::PathBuf> {
    options
        .ca_bundle
        .clone()
        .or_else(|| {
            std::env::var_os("AWS_CA_BUNDLE")
                .filter(|v| !v.is_empty())
                .map(Into::into)
        })
        .or_else(|| profile.and_then(|p| p.get("ca_bundle")).map(Into::into))
}

/// An S3 client for `bucket`: explicit options first, then the environment (`AWS_*`), then
/// the profile's files, then the container and instance credentials object_store finds.
pub(super) fn s3_builder(bucket: &str, options: &Options) -> Result<AmazonS3Builder, InputError> {
    let profile = Profile::read(options.profile.clone());
    let client = client_options(options, Some(&profile))?;
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_retry(retry())
        .with_client_options(client.clone());
    let unset = |b: &AmazonS3Builder, key| b.get_config_value(&key).is_none();
    let explicit = [
        (AmazonS3ConfigKey::AccessKeyId, &options.access_key_id),
        (
            AmazonS3ConfigKey::SecretAccessKey,
            &options.secret_access_key,
        ),
        (AmazonS3ConfigKey::Token, &options.session_token),
        (AmazonS3ConfigKey::Region, &options.region),
        (AmazonS3ConfigKey::Endpoint, &options.endpoint_url),
    ];
    for (key, value) in explicit {
        if let Some(value) = value {
            builder = builder.with_config(key, value);
        }
    }
    // The profile's credentials only where neither the options nor the environment gave
    // keys: a key ID from one source and a secret from another would sign nothing valid.
    // In the AWS CLI's order: a web identity in the environment, SSO, static keys, a
    // credential_process.
    let web_identity = std::env::var_os("AWS_WEB_IDENTITY_TOKEN_FILE").is_some();
    let sso = match unset(&builder, AmazonS3ConfigKey::AccessKeyId) && !web_identity {
        true => SsoCredentials::of(&profile, &client),
        false => None,
    };
    if let Some(sso) = sso {
        let sso = sso.map_err(InputError::Remote)?;
        builder = builder.with_credentials(Arc::new(sso));
    } else if unset(&builder, AmazonS3ConfigKey::AccessKeyId)
        && let (Some(id), Some(secret)) = (
            profile.get("aws_access_key_id"),
            profile.get("aws_secret_access_key"),
        )
    {
        builder = builder
            .with_access_key_id(id)
            .with_secret_access_key(secret);
        if let Some(token) = profile.get("aws_session_token") {
            builder = builder.with_token(token);
        }
    } else if unset(&builder, AmazonS3ConfigKey::AccessKeyId)
        && !web_identity
        && let Some(command) = profile.get("credential_process")
    {
        builder = builder.with_credentials(Arc::new(CredentialProcess::new(command)));
    }
    for (key, name) in [
        (AmazonS3ConfigKey::Region, "region"),
        (AmazonS3ConfigKey::Endpoint, "endpoint_url"),
    ] {
        if unset(&builder, key)
            && let Some(value) = profile.get(name)
        {
            builder = builder.with_config(key, value);
        }
    }
    if options.no_sign_request {
        builder = builder.with_skip_signature(true);
    }
    let endpoint = builder.get_config_value(&AmazonS3ConfigKey::Endpoint);
    if endpoint.is_none() && unset(&builder, AmazonS3ConfigKey::Region) {
        // A bucket answers only in its own region: ask which (one unsigned HEAD), as the
        // AWS CLI follows the redirect.
        let region = runtime().block_on(object_store::aws::resolve_bucket_region(bucket, &client));
        builder = builder.with_region(region.unwrap_or_else(|_| "us-east-1".into()));
    }
    let virtual_hosted = match options.addressing {
        Addressing::Path => false,
        Addressing::Virtual => true,
        Addressing::Auto => endpoint.is_none() && host_label(bucket),
    };
    if virtual_hosted {
        builder = builder.with_virtual_hosted_style_request(true);
        // object_store takes a virtual-hosted endpoint with the bucket in it already.
        if let Some(endpoint) = endpoint
            && let Some((scheme, host)) = endpoint.split_once("://")
        {
            builder = builder.with_endpoint(format!("{scheme}://{bucket}.{host}"));
        }
    }
    Ok(builder)
}

/// Whether a bucket's name can be the first label of a host name that AWS's wildcard
/// certificates cover: 3 to 63 lowercase letters, digits and hyphens, a letter or digit at
/// either end. Others (dots, or the capitals and underscores of some old buckets of
/// us-east-1) are addressed path-style on AWS, as the AWS CLI addresses them.
fn host_label(bucket: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    (3..=63).contains(&bucket.len())
        && bucket
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && edge(bucket.chars().next())
        && edge(bucket.chars().last())
}

/// The object's key in its store.
pub(super) fn key_of(url: &Url) -> Key {
    match &url.place {
        // A key as S3 spells it; object_store would re-encode characters it deems unsafe
        // if it were built from parts.
        Place::S3 { key, .. } => Key::parse(key).unwrap_or_else(|_| Key::from(key.as_str())),
        Place::Http { path, .. } => Key::from_url_path(path.trim_start_matches('/'))
            .unwrap_or_else(|_| Key::from(path.as_str())),
    }
}

/// The keys below the prefix `url`, without the "folders" (keys ending with `/`).
pub(super) fn list(url: &Url) -> Result<Vec<String>, InputError> {
    Ok(list_meta(url)?.into_iter().map(|(key, _)| key).collect())
}

/// The keys below the prefix `url` with their sizes, by key, without the "folders".
pub(super) fn list_meta(url: &Url) -> Result<Vec<(String, u64)>, InputError> {
    let Place::S3 { key: prefix, .. } = &url.place else {
        return Err(InputError::Remote("cannot list an HTTP server".into()));
    };
    let pool = pool(&url.options);
    let store = pool.store(url)?;
    let prefix = (!prefix.is_empty()).then(|| Key::from(prefix.as_str()));
    let listed = runtime().block_on(store.list(prefix.as_ref()).try_collect::<Vec<_>>());
    let mut keys: Vec<(String, u64)> = listed
        .map_err(|e| fault(e, "bucket"))?
        .into_iter()
        .map(|meta| (meta.location.to_string(), meta.size))
        .filter(|(key, _)| !key.ends_with('/'))
        .collect();
    keys.sort();
    Ok(keys)
}

/// A store's error as the one-line cause after `mtsum: URL: `; `what` names what was
/// missing on a 404 (`object`, `bucket`). S3's error code, where the answer had a body,
/// tells a missing bucket from a missing object and bad credentials from a denial.
pub(super) fn fault(e: object_store::Error, what: &str) -> InputError {
    use object_store::Error as E;
    let text = chain(&e);
    let status = |n: &str| text.contains(&format!("status code: {n}"));
    let missing = || (ErrorKind::NotFound, format!("no such {what} (404)"));
    let denied = || (ErrorKind::PermissionDenied, ACCESS_DENIED.to_string());
    let (kind, cause) = match (&e, s3_code(&text)) {
        (E::Precondition { .. }, _) => return InputError::Changed,
        (_, Some("NoSuchBucket")) => (ErrorKind::NotFound, "no such bucket (404)".to_string()),
        (_, Some("AccessDenied")) => denied(),
        (_, Some(code)) => (
            ErrorKind::PermissionDenied,
            format!("credentials refused ({code}, 403)"),
        ),
        (E::NotFound { .. }, None) => missing(),
        (E::PermissionDenied { .. }, None) => denied(),
        (E::Unauthenticated { .. }, None) => (
            ErrorKind::PermissionDenied,
            "credentials refused (401)".into(),
        ),
        (_, None) if status("404") => missing(),
        (_, None) if status("403") => denied(),
        // The last source of credentials, an instance's metadata service, did not answer:
        // there were none anywhere.
        (_, None) if text.contains("/latest/api/token") || text.contains("/latest/meta-data") => (
            ErrorKind::PermissionDenied,
            format!(
                "no credentials (none in AWS_* variables or ~/.aws, and no instance role: {}); --no-sign-request reads public buckets",
                short(&e)
            ),
        ),
        // rustls's words ("invalid peer certificate: UnknownIssuer") do not say what to do.
        (_, None) if text.contains("invalid peer certificate") => {
            return InputError::Remote(format!(
                "certificate not trusted ({}); --ca-bundle FILE or AWS_CA_BUNDLE names the CA that signed it",
                short(&e)
            ));
        }
        (_, None) => return InputError::Remote(short(&e)),
    };
    // As an I/O error of that kind, so that callers tell a missing object from a refusal
    // as they tell a missing file (Python: FileNotFoundError, PermissionError).
    InputError::Io(std::io::Error::new(kind, cause))
}

/// Why a `HEAD` of an object (not of a part) answered 400: the one reason S3 gives for it
/// once a listing went through with the same credentials and region. An SSE-C object's
/// GET without its key answers 400 too, but its `HEAD`, sent first, already said so.
pub(super) const SSE_C_HEAD: &str =
    "encrypted with a customer key (SSE-C): the store answers 400 to a HEAD without the key";

pub(super) const ACCESS_DENIED: &str =
    "access denied (403): check the credentials and the bucket's policy";

/// The S3 error code that an answer's body named, of those that say why.
fn s3_code(text: &str) -> Option<&'static str> {
    [
        "NoSuchBucket",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "AccessDenied",
    ]
    .into_iter()
    .find(|code| text.contains(code))
}

/// A remote object opened for positioned reads.
pub(crate) struct Object {
    version: u64,
    shared: Arc<Shared>,
}

/// What an object's readers and its fetches share.
struct Shared {
    pool: Arc<Pool>,
    store: Arc<dyn ObjectStore>,
    key: Key,
    len: u64,
    /// The version every range GET asks for: the ETag, or the modification time of a
    /// server that gives none.
    etag: Option<String>,
    modified: Option<object_store::ObjectMeta>,
    ranges: Mutex<Ranges>,
    arrived: Condvar,
}

/// The ranges of an object, by index (`offset / RANGE_SIZE`).
#[derive(Default)]
struct Ranges {
    slots: HashMap<u64, Slot>,
    /// Ranges every byte of which was delivered: not fetched ahead again.
    done: HashSet<u64>,
}

struct Slot {
    state: State,
    /// Bytes of it delivered so far.
    delivered: u64,
}

enum State {
    Pending,
    Ready(Arc<Filled>),
    Failed(Fault),
}

/// The bytes of one range, in a buffer that goes back to its pool's spares when the last
/// reader lets go of it.
struct Filled {
    data: Vec<u8>,
    pool: Arc<Pool>,
}

impl Drop for Filled {
    fn drop(&mut self) {
        let mut data = std::mem::take(&mut self.data);
        if self.pool.open.load(Ordering::Acquire) > 0 {
            data.clear();
            let mut spare = self.pool.spare.lock().unwrap_or_else(|e| e.into_inner());
            spare.push(data);
        }
    }
}

/// Why a range could not be had, kept for every reader that waits for it.
#[derive(Clone)]
enum Fault {
    Changed,
    Remote(String),
}

impl From<Fault> for InputError {
    fn from(f: Fault) -> InputError {
        match f {
            Fault::Changed => InputError::Changed,
            Fault::Remote(cause) => InputError::Remote(cause),
        }
    }
}

impl From<InputError> for Fault {
    fn from(e: InputError) -> Fault {
        match e {
            InputError::Changed => Fault::Changed,
            other => Fault::Remote(other.to_string()),
        }
    }
}

impl Object {
    /// Sizes the object at `url` with one `HEAD`, and takes its version.
    pub(crate) fn open(url: &Url) -> Result<Object, InputError> {
        let pool = pool(&url.options);
        let store = pool.store(url)?;
        let key = key_of(url);
        let meta = runtime().block_on(store.head(&key)).map_err(|e| {
            use object_store::Error as E;
            let bare_400 = chain(&e).contains("status code: 400");
            if !bare_400 && !matches!(e, E::NotFound { .. } | E::PermissionDenied { .. }) {
                return fault(e, "object");
            }
            // The answer to a HEAD has no body, so no S3 error code: a listing of the key,
            // whose answer has one, tells a missing bucket or bad credentials apart, and
            // where it goes through, a 400 is the store's answer for an SSE-C object.
            let probe = match &url.place {
                Place::S3 { .. } => runtime().block_on(store.list_with_delimiter(Some(&key))),
                Place::Http { .. } => return fault(e, "object"),
            };
            match probe {
                Err(listing) if s3_code(&chain(&listing)).is_some() => fault(listing, "object"),
                Ok(_) if bare_400 => InputError::Remote(SSE_C_HEAD.into()),
                _ => fault(e, "object"),
            }
        })?;
        let etag = meta.e_tag.clone();
        // A last modification time of 0 is object_store's word for "none sent".
        let modified =
            (etag.is_none() && meta.last_modified.timestamp() != 0).then(|| meta.clone());
        let validator = match (&etag, &modified) {
            (Some(etag), _) => etag.clone(),
            (None, Some(m)) => m.last_modified.to_rfc2822(),
            (None, None) => String::new(),
        };
        let version = super::version_of(&validator);
        if url.expect.is_some_and(|expected| expected != version) {
            return Err(InputError::Changed);
        }
        pool.open.fetch_add(1, Ordering::AcqRel);
        Ok(Object {
            version,
            shared: Arc::new(Shared {
                pool,
                store,
                key,
                len: meta.size,
                etag,
                modified,
                ranges: Mutex::new(Ranges::default()),
                arrived: Condvar::new(),
            }),
        })
    }

    /// The object's size.
    pub(crate) fn len(&self) -> u64 {
        self.shared.len
    }

    /// Its version, as [`super::version_of`] gives it.
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// Fills `slices` with the `need` bytes from `offset`, as `preadv` would: waits for the
    /// ranges that hold them, and starts fetching the ranges after them.
    pub(crate) fn read_at(
        &self,
        slices: &mut [IoSliceMut<'_>],
        need: usize,
        offset: u64,
    ) -> Result<(), InputError> {
        let shared = &self.shared;
        if offset + need as u64 > shared.len {
            return Err(InputError::Changed);
        }
        let mut out = Cursor {
            slices,
            slice: 0,
            at: 0,
        };
        let (mut pos, end) = (offset, offset + need as u64);
        let lock = || shared.ranges.lock().unwrap_or_else(|e| e.into_inner());
        while pos < end {
            let index = pos / RANGE_SIZE;
            let bytes = {
                let mut ranges = lock();
                shared.demand(&mut ranges, index);
                shared.read_ahead(&mut ranges, index);
                loop {
                    match &ranges.slots.get(&index).expect("demanded").state {
                        State::Ready(bytes) => break bytes.clone(),
                        State::Failed(fault) => return Err(fault.clone().into()),
                        State::Pending => {
                            ranges = shared
                                .arrived
                                .wait(ranges)
                                .unwrap_or_else(|e| e.into_inner());
                        }
                    }
                }
            };
            // Copied without the lock: the other readers and the fetches go on meanwhile.
            let from = (pos - index * RANGE_SIZE) as usize;
            let len = bytes.data.len();
            let take = ((end - pos) as usize).min(len - from);
            out.write(&bytes.data[from..from + take]);
            drop(bytes);
            pos += take as u64;
            shared.delivered(&mut lock(), index, take as u64, len as u64);
        }
        Ok(())
    }
}

/// Where the next bytes go in a list of buffers.
struct Cursor<'a, 'b> {
    slices: &'a mut [IoSliceMut<'b>],
    slice: usize,
    at: usize,
}

impl Cursor<'_, '_> {
    fn write(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let slice = &mut self.slices[self.slice];
            let n = bytes.len().min(slice.len() - self.at);
            slice[self.at..self.at + n].copy_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            self.at += n;
            if self.at == slice.len() {
                self.slice += 1;
                self.at = 0;
            }
        }
    }
}

impl Shared {
    fn range_count(&self) -> u64 {
        self.len.div_ceil(RANGE_SIZE)
    }

    /// Starts fetching range `index` unless it is under way or here.
    fn demand(self: &Arc<Self>, ranges: &mut Ranges, index: u64) {
        if !ranges.slots.contains_key(&index) {
            self.pool.hold();
            self.fetch(ranges, index);
        }
    }

    /// Starts fetching the first range after `index` that is neither here, under way nor
    /// delivered, if the pool has a place for it. One per read, so that read-ahead grows
    /// as a reader moves on: a layout hashed in SIMD lanes reads as many jobs at once as
    /// its kernel has lanes (MD5 on AVX-512: 32 a thread), each waiting for a range of its
    /// own, and those ranges, not a first reader's read-ahead, take the places then.
    fn read_ahead(self: &Arc<Self>, ranges: &mut Ranges, index: u64) {
        let ahead = self.pool.options.connections.get() as u64;
        let last = self.range_count().min(index + 1 + ahead);
        let next = (index + 1..last)
            .find(|next| !ranges.slots.contains_key(next) && !ranges.done.contains(next));
        if let Some(next) = next
            && self.pool.try_hold()
        {
            self.fetch(ranges, next);
        }
    }

    /// Starts the GET of range `index`, its place in the pool taken.
    fn fetch(self: &Arc<Self>, ranges: &mut Ranges, index: u64) {
        ranges.slots.insert(
            index,
            Slot {
                state: State::Pending,
                delivered: 0,
            },
        );
        let shared = self.clone();
        runtime().spawn(async move {
            let state = match shared.get(index).await {
                Ok(bytes) => State::Ready(Arc::new(bytes)),
                Err(e) => State::Failed(e.into()),
            };
            let mut ranges = shared.ranges.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(slot) = ranges.slots.get_mut(&index) {
                slot.state = state;
            }
            shared.arrived.notify_all();
        });
    }

    /// One range GET, guarded by the version the `HEAD` saw.
    async fn get(&self, index: u64) -> Result<Filled, InputError> {
        let start = index * RANGE_SIZE;
        let end = (start + RANGE_SIZE).min(self.len);
        let _turn = self.pool.gets.acquire().await.expect("never closed");
        let options = GetOptions {
            range: Some(GetRange::Bounded(start..end)),
            if_match: self.etag.clone(),
            if_unmodified_since: self.modified.as_ref().map(|m| m.last_modified),
            ..GetOptions::default()
        };
        let got = self
            .store
            .get_opts(&self.key, options)
            .await
            .map_err(|e| fault(e, "object"))?;
        // A server that ignores If-Match still tells which version it sent.
        if self.etag.is_some() && got.meta.e_tag.is_some() && got.meta.e_tag != self.etag {
            return Err(InputError::Changed);
        }
        let want = (end - start) as usize;
        let mut filled = self.pool.buffer();
        let mut body = got.into_stream();
        while let Some(chunk) = body.try_next().await.map_err(|e| fault(e, "object"))? {
            if filled.data.len() + chunk.len() > want {
                return Err(InputError::Changed);
            }
            filled.data.extend_from_slice(&chunk);
        }
        if filled.data.len() != want {
            return Err(InputError::Changed);
        }
        Ok(filled)
    }

    /// Records that `n` more bytes of range `index` (of `len` bytes) were delivered, and
    /// drops it once all were.
    fn delivered(&self, ranges: &mut Ranges, index: u64, n: u64, len: u64) {
        // Gone, or fetched anew, if bytes of it were read twice (a caller that reads a range
        // again) and the count reached its length early: it is fetched again if needed. A
        // range under way is never dropped, as a reader waits for it.
        let Some(slot) = ranges.slots.get_mut(&index) else {
            return;
        };
        if !matches!(slot.state, State::Ready(_)) {
            return;
        }
        slot.delivered += n;
        if slot.delivered >= len {
            ranges.slots.remove(&index);
            self.pool.release(1);
            ranges.done.insert(index);
        }
    }
}

/// Ranges that no reader took whole (the object failed, or the engine stopped) give their
/// places back; the last object of a pool closed, its spare buffers go (its ranges' own,
/// dropped after this, are not kept).
impl Drop for Shared {
    fn drop(&mut self) {
        let ranges = self.ranges.get_mut().unwrap_or_else(|e| e.into_inner());
        self.pool.release(ranges.slots.len());
        if self.pool.open.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.pool
                .spare
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_hosted_addressing_puts_the_bucket_before_the_endpoints_host() {
        let options = Options {
            endpoint_url: Some("http://127.0.0.1:9000".into()),
            addressing: Addressing::Virtual,
            region: Some("us-east-1".into()),
            ..Options::default()
        };
        let setting = |b: &AmazonS3Builder, key| b.get_config_value(&key);
        let virtual_hosted = s3_builder("bkt", &options).unwrap();
        assert_eq!(
            setting(&virtual_hosted, AmazonS3ConfigKey::Endpoint).as_deref(),
            Some("http://bkt.127.0.0.1:9000")
        );
        let key = AmazonS3ConfigKey::VirtualHostedStyleRequest;
        assert_eq!(setting(&virtual_hosted, key).as_deref(), Some("true"));
        // With an endpoint of its own, a store is addressed path-style unless told.
        let auto = Options {
            addressing: Addressing::Auto,
            ..options
        };
        let path_style = s3_builder("bkt", &auto).unwrap();
        assert_eq!(
            setting(&path_style, AmazonS3ConfigKey::Endpoint).as_deref(),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(setting(&path_style, key).as_deref(), Some("false"));
    }

    #[test]
    fn on_aws_a_bucket_is_addressed_virtual_hosted_where_its_name_can_be_a_host() {
        let on_aws = Options {
            region: Some("eu-west-1".into()),
            ..Options::default()
        };
        let key = AmazonS3ConfigKey::VirtualHostedStyleRequest;
        for (bucket, virtual_hosted) in [
            ("data-2026", true),
            ("my.bucket", false),
            ("Old_Bucket", false),
            ("-x-", false),
        ] {
            let builder = s3_builder(bucket, &on_aws).unwrap();
            let setting = builder.get_config_value(&key);
            assert_eq!(
                setting.as_deref() == Some("true"),
                virtual_hosted,
                "{bucket}"
            );
        }
    }
}
