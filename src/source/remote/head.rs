//! The `HEAD`s that read what a store holds about an object ([`super::stored`]), sent past
//! object_store.
//!
//! object_store's `head` sends no header of ours and no query, and keeps of the answer only
//! size, ETag and date: it cannot ask for the checksums (`x-amz-checksum-mode: ENABLED`) nor
//! for a part (`?partNumber=N`), nor hand back `x-amz-checksum-*` or
//! `x-amz-mp-parts-count`. So these requests are made here, as small as can be: the URL
//! of the key as object_store addresses it (path-style or virtual-hosted, its encoding of
//! the key; taken from a URL it signs with a throwaway key, whose signature is cut off),
//! signed by object_store's own SigV4 signer ([`AwsAuthorizer`]) with the credentials its
//! chain found, and sent by its HTTP client. The same credentials, endpoint and addressing
//! as every other request, and no second implementation of either.

use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3ConfigKey, AwsAuthorizer};
use object_store::client::{
    HttpClient, HttpConnector, HttpRequest, HttpRequestBody, ReqwestConnector,
};
use object_store::path::Path as Key;
use object_store::signer::{HeaderMap, HeaderName, HeaderValue, Method, Signer};

use super::profile::Profile;
use super::store::{ACCESS_DENIED, SSE_C_HEAD, client_options, fault, key_of, runtime, s3_builder};
use super::stored::{
    CHECKSUM_ALGORITHMS, CUSTOMER_KEY, Parts, StoredChecksum, StoredObject, checksum_kind,
    etag_parts,
};
use super::{Attempt, retried, short};
use super::{Place, Url};
use crate::source::InputError;

/// See [`super::list_stored`] (`names` `None`: every object below the prefix) and
/// [`super::head_stored`] (the objects `names` below it).
#[allow(clippy::type_complexity)]
pub(super) fn stored(
    url: &Url,
    names: Option<&[String]>,
) -> Result<Vec<Result<StoredObject, (Url, InputError)>>, InputError> {
    let Place::S3 {
        bucket,
        key: prefix,
    } = &url.place
    else {
        return Err(InputError::Remote("cannot list an HTTP server".into()));
    };
    let keys: Vec<(String, Option<u64>)> = match names {
        None => super::store::list_meta(url)?
            .into_iter()
            .map(|(key, size)| (key, Some(size)))
            .collect(),
        Some(names) => names
            .iter()
            .map(|name| (format!("{prefix}{name}"), None))
            .collect(),
    };
    heads_of(url, bucket, prefix, keys.into_iter())
}

/// What the store says of each of `keys` (below `prefix` of `bucket`, the place of `url`,
/// with the size the listing gave, if it was listed), with up to `connections` `HEAD`s at
/// once.
#[allow(clippy::type_complexity)]
fn heads_of(
    url: &Url,
    bucket: &str,
    prefix: &str,
    keys: impl Iterator<Item = (String, Option<u64>)>,
) -> Result<Vec<Result<StoredObject, (Url, InputError)>>, InputError> {
    let heads = Heads::new(bucket, &url.options)?;
    let connections = url.options.connections.get();
    let objects = keys.map(|(key, listed)| {
        let name = key.strip_prefix(prefix).unwrap_or(&key).to_string();
        let object = url.sibling(&key);
        let heads = &heads;
        async move {
            heads
                .object(&object, name, listed)
                .await
                .map_err(|e| (object.clone(), e))
        }
    });
    Ok(runtime().block_on(
        futures_util::stream::iter(objects)
            .buffered(connections)
            .collect(),
    ))
}

/// What the `HEAD`s of one bucket share.
struct Heads {
    /// Signs nothing: builds the URL of a key as object_store would request it.
    addresser: AmazonS3,
    /// The store with the user's credentials; `None` with `--no-sign-request`.
    signer: Option<AmazonS3>,
    region: String,
    client: HttpClient,
    /// `HEAD`s of one object's parts at once.
    connections: usize,
    /// Ask each part's size wherever middle parts may differ unseen
    /// ([`super::Options::every_part`]).
    every_part: bool,
}

impl Heads {
    fn new(bucket: &str, options: &super::Options) -> Result<Heads, InputError> {
        let builder = s3_builder(bucket, options)?;
        let region = builder
            .get_config_value(&AmazonS3ConfigKey::Region)
            .unwrap_or_else(|| "us-east-1".into());
        let built = |b: object_store::aws::AmazonS3Builder| {
            b.build().map_err(|e| InputError::Remote(short(&e)))
        };
        // A throwaway key: the URL object_store signs with it is the one it would request,
        // and only its signature, which is cut off, depends on the key.
        let addresser = built(
            builder
                .clone()
                .with_skip_signature(false)
                .with_access_key_id("mtsum")
                .with_secret_access_key("mtsum"),
        )?;
        let signer = match options.no_sign_request {
            true => None,
            false => Some(built(builder)?),
        };
        let profile = Profile::read(options.profile.clone());
        let client = ReqwestConnector::default()
            .connect(&client_options(options, Some(&profile))?)
            .map_err(|e| InputError::Remote(short(&e)))?;
        Ok(Heads {
            addresser,
            signer,
            region,
            client,
            connections: options.connections.get(),
            every_part: options.every_part,
        })
    }

    /// What the store says of the object at `url`, named `name` below the prefix, of size
    /// `listed` if it was listed. An object encrypted with a customer key (a `HEAD` without
    /// the key answers 400) is what the listing said of it, if it was listed.
    async fn object(
        &self,
        url: &Url,
        name: String,
        listed: Option<u64>,
    ) -> Result<StoredObject, InputError> {
        let key = key_of(url);
        let head = match (self.head(&key, None).await, listed) {
            (Err(InputError::Remote(cause)), Some(size)) if cause == SSE_C_HEAD => {
                return Ok(StoredObject {
                    name,
                    url: url.clone(),
                    size,
                    etag: None,
                    encryption: Some(CUSTOMER_KEY.into()),
                    checksums: Vec::new(),
                    parts: None,
                });
            }
            (head, _) => head?,
        };
        let header = |name: &str| {
            head.get(name)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim().to_string())
        };
        let size = header("content-length")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| InputError::Remote("the store sent no Content-Length".into()))?;
        let etag = header("etag").map(|e| e.trim_matches('"').to_string());
        let encryption = match header("x-amz-server-side-encryption") {
            Some(sse) if sse.starts_with("aws:kms") => Some(sse),
            _ => header("x-amz-server-side-encryption-customer-algorithm")
                .map(|_| CUSTOMER_KEY.into()),
        };
        let kind = header("x-amz-checksum-type");
        let multipart = etag.as_deref().and_then(etag_parts).is_some();
        let checksums = CHECKSUM_ALGORITHMS
            .iter()
            .filter_map(|&algorithm| {
                let value = header(&format!("x-amz-checksum-{}", algorithm.name()))?;
                Some(StoredChecksum {
                    algorithm,
                    kind: checksum_kind(kind.as_deref(), &value, multipart),
                    value,
                })
            })
            .collect();
        let parts = match etag.as_deref().and_then(etag_parts) {
            Some(count) => Some(self.parts(&key, size, count).await?),
            None => None,
        };
        Ok(StoredObject {
            name,
            url: url.clone(),
            size,
            etag,
            encryption,
            checksums,
            parts,
        })
    }

    /// The first part's size and the count (`partNumber=1`), and for three parts or more
    /// the last part's size (`partNumber=N`), where the first fits the size and count; then
    /// every part's size where those show that the parts differ, or where they may differ
    /// unseen and the user asked to be sure (see [`Parts`]).
    async fn parts(&self, key: &Key, size: u64, count: u64) -> Result<Parts, InputError> {
        let part = |head: &HeaderMap, name: &str| {
            head.get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        // One part is the whole object: nothing to ask.
        if count == 1 {
            return Ok(Parts {
                count,
                first: Some(size),
                last: None,
                sizes: Vec::new(),
            });
        }
        let first = self.head(key, Some(1)).await?;
        // A store that ignores partNumber answers with the whole object and no count.
        let count = part(&first, "x-amz-mp-parts-count").unwrap_or(count);
        let first =
            part(&first, "x-amz-mp-parts-count").and_then(|_| part(&first, "content-length"));
        let mut parts = Parts {
            count,
            first,
            last: None,
            sizes: Vec::new(),
        };
        if count >= 3 && parts.part_size(size).is_some() {
            let last = self.head(key, Some(count)).await?;
            parts.last = part(&last, "content-length");
        }
        let differ = first.is_some() && parts.part_size(size).is_none();
        if differ || (self.every_part && parts.may_differ_inside()) {
            let sizes = (1..=count).map(|k| async move {
                let head = self.head(key, Some(k)).await?;
                part(&head, "content-length").ok_or_else(|| {
                    InputError::Remote(format!("the store did not tell the size of part {k}"))
                })
            });
            parts.sizes = futures_util::stream::iter(sizes)
                .buffered(self.connections)
                .try_collect()
                .await?;
        }
        Ok(parts)
    }

    /// A `HEAD` of `key` with the checksums asked for, of the whole object or of one part;
    /// the answer's headers. Retried as object_store retries, on a 5xx answer or a failed
    /// connection.
    async fn head(&self, key: &Key, part: Option<u64>) -> Result<HeaderMap, InputError> {
        retried(|| self.head_once(key, part)).await
    }

    async fn head_once(
        &self,
        key: &Key,
        part: Option<u64>,
    ) -> Result<HeaderMap, Attempt<InputError>> {
        let fail = |e: &dyn std::error::Error| Attempt::Fail(InputError::Remote(short(e)));
        let mut url = self
            .addresser
            .signed_url(Method::HEAD, key, Duration::from_secs(60))
            .await
            .map_err(|e| fail(&e))?;
        let kept: Vec<(String, String)> = url
            .query_pairs()
            .filter(|(k, _)| !k.to_ascii_lowercase().starts_with("x-amz-"))
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        url.set_query(None);
        if !kept.is_empty() || part.is_some() {
            let mut query = url.query_pairs_mut();
            query.extend_pairs(kept);
            if let Some(n) = part {
                query.append_pair("partNumber", &n.to_string());
            }
        }
        let mut request = HttpRequest::new(HttpRequestBody::empty());
        *request.method_mut() = Method::HEAD;
        *request.uri_mut() = url.as_str().parse().map_err(|e| fail(&e))?;
        request.headers_mut().insert(
            HeaderName::from_static("x-amz-checksum-mode"),
            HeaderValue::from_static("ENABLED"),
        );
        if let Some(signer) = &self.signer {
            let credential = signer
                .credentials()
                .get_credential()
                .await
                .map_err(|e| Attempt::Fail(fault(e, "object")))?;
            AwsAuthorizer::new(&credential, "s3", &self.region)
                .try_authorize(&mut request, None)
                .map_err(|e| fail(&e))?;
        }
        let response = match self.client.execute(request).await {
            Ok(response) => response,
            Err(e) => return Err(Attempt::Retry(InputError::Remote(short(&e)))),
        };
        let status = response.status();
        match status.as_u16() {
            200..=299 => Ok(response.headers().clone()),
            404 => Err(Attempt::Fail(InputError::Io(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such object (404)",
            )))),
            403 => Err(Attempt::Fail(InputError::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                ACCESS_DENIED,
            )))),
            // S3's answer to a HEAD of an SSE-C object without its key: no body, no code.
            400 if part.is_none() => Err(Attempt::Fail(InputError::Remote(SSE_C_HEAD.into()))),
            500..=599 => Err(Attempt::Retry(InputError::Remote(format!(
                "the server answered {status}"
            )))),
            _ => Err(Attempt::Fail(InputError::Remote(format!(
                "the server answered {status}"
            )))),
        }
    }
}
