//! The credentials of an AWS IAM Identity Center (SSO) profile, the way most companies'
//! users reach AWS: `aws configure sso` writes the profile, `aws sso login` caches a token,
//! and every tool of the AWS SDKs trades that token for a role's temporary keys.
//!
//! A profile names an account and a role (`sso_account_id`, `sso_role_name`), and either a
//! session (`sso_session`, whose `[sso-session NAME]` section holds `sso_start_url` and
//! `sso_region`) or, in the legacy form, the start URL and region itself. `aws sso login`
//! writes the token to `~/.aws/sso/cache/HEX.json`, HEX being the SHA-1 of the session's name
//! (of the start URL for a legacy profile). The portal's GetRoleCredentials turns the token
//! into keys of the role, which sign the requests until they near their expiry; then the
//! portal is asked again.
//!
//! A session's token (a profile with `sso_session`) is renewed as the AWS CLI renews it: when
//! it has expired or expires within [`RENEW_BEFORE`], the `refreshToken` that `aws sso login`
//! cached with it is traded at the SSO OIDC service (CreateToken, `grantType` `refresh_token`;
//! `AWS_ENDPOINT_URL_SSO_OIDC` names another endpoint) for a new token, and the cache file is
//! replaced with the new one ([`crate::replace::write_atomically`]), so that a cron job keeps
//! working for as long as the session lasts, not only the first hours. A refresh that fails
//! while the old token still holds uses the old token; one the service refuses (the session
//! ended, the client registration expired) leaves the user to log in again, in one line. A
//! legacy profile's token has no refresh, as with the AWS CLI.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use object_store::aws::AwsCredential;
use object_store::client::{
    HttpClient, HttpConnector, HttpRequest, HttpRequestBody, ReqwestConnector,
};
use object_store::signer::{HeaderName, HeaderValue, Method, Url};
use object_store::{ClientOptions, CredentialProvider};

use super::profile::{Profile, Renewed, home};
use super::{Attempt, retried, short};
use crate::algorithm::Algorithm;

/// What an SSO profile needs, from itself or (start URL and region) from its session's
/// section; a profile with none of them and no session is no SSO profile.
const SETTINGS: [&str; 4] = [
    "sso_start_url",
    "sso_region",
    "sso_account_id",
    "sso_role_name",
];

/// How long before a session's token expires it is renewed: the AWS CLI's window.
const RENEW_BEFORE: Duration = Duration::from_secs(15 * 60);

/// The role credentials of one SSO profile, asked of the portal once per run, and again
/// when they expire within five minutes.
#[derive(Debug)]
pub(super) struct SsoCredentials {
    /// The session as the user knows it: its name, or a legacy profile's start URL.
    session: String,
    profile: String,
    /// The file the AWS CLI cached the session's token in.
    cache: PathBuf,
    role: String,
    account: String,
    /// GetRoleCredentials of the profile's account and role.
    url: Url,
    /// CreateToken of the SSO OIDC service, for a session's token (a legacy profile's is
    /// never renewed).
    oidc: Option<Url>,
    client: HttpClient,
    renewed: Renewed,
}

impl SsoCredentials {
    /// The provider of `profile`'s credentials if it is an SSO profile (it names a session,
    /// or any of the legacy settings), else `None`; an SSO profile whose settings are
    /// incomplete is the one-line reason. `client` reaches the portal (the CA bundle and
    /// proxy of every other request).
    pub(super) fn of(
        profile: &Profile,
        client: &ClientOptions,
    ) -> Option<Result<SsoCredentials, String>> {
        let session = profile.get("sso_session");
        if session.is_none() && !SETTINGS.iter().any(|key| profile.get(key).is_some()) {
            return None;
        }
        Some(SsoCredentials::new(profile, session, client))
    }

    fn new(
        profile: &Profile,
        session: Option<&str>,
        client: &ClientOptions,
    ) -> Result<SsoCredentials, String> {
        let name = profile.name();
        let missing: Vec<&str> = SETTINGS
            .iter()
            .copied()
            .filter(|key| profile.get(key).is_none())
            .collect();
        if !missing.is_empty() {
            let what = match session {
                Some(session) => format!("profile {name} (sso-session {session})"),
                None => format!("profile {name}"),
            };
            return Err(format!(
                "{what} is set up for SSO but has no {}",
                missing.join(", ")
            ));
        }
        let setting = |key| profile.get(key).unwrap_or_default();
        let start_url = setting("sso_start_url");
        // The name the AWS CLI gave the token's file.
        let session_name = session;
        let session = session.unwrap_or(start_url);
        let hex = Algorithm::Sha1.hash(session.as_bytes()).to_hex();
        let home = home().ok_or("no HOME, so no ~/.aws/sso/cache to find the SSO token in")?;
        let cache = home.join(".aws/sso/cache").join(format!("{hex}.json"));
        // The endpoint the AWS SDKs let the environment name for the service `sso`.
        let portal = std::env::var("AWS_ENDPOINT_URL_SSO")
            .ok()
            .filter(|url| !url.is_empty())
            .unwrap_or_else(|| {
                format!("https://portal.sso.{}.amazonaws.com", setting("sso_region"))
            });
        let oidc = match session_name {
            Some(_) => Some(oidc_url(setting("sso_region"))?),
            None => None,
        };
        let (role, account) = (setting("sso_role_name"), setting("sso_account_id"));
        let url = Url::parse_with_params(
            &format!("{}/federation/credentials", portal.trim_end_matches('/')),
            [("role_name", role), ("account_id", account)],
        )
        .map_err(|e| format!("the SSO portal's URL {portal:?}: {e}"))?;
        let client = ReqwestConnector::default()
            .connect(client)
            .map_err(|e| short(&e))?;
        Ok(SsoCredentials {
            session: session.to_string(),
            profile: name.to_string(),
            role: role.to_string(),
            account: account.to_string(),
            cache,
            url,
            oidc,
            client,
            renewed: Renewed::default(),
        })
    }

    fn expired(&self) -> String {
        format!(
            "the SSO session {} has expired: run `aws sso login --profile {}`",
            self.session, self.profile
        )
    }

    /// The token `aws sso login` cached, renewed first where it expires within
    /// [`RENEW_BEFORE`] and the session can renew it; `None` once it has expired and cannot.
    async fn token(&self) -> Option<String> {
        let text = std::fs::read(&self.cache).ok()?;
        let cached: serde_json::Value = serde_json::from_slice(&text).ok()?;
        let time = |name| super::profile::parse_time(cached.get(name)?.as_str()?);
        let expires = time("expiresAt")?;
        let held = cached.get("accessToken")?.as_str()?.to_string();
        let now = SystemTime::now();
        let live = expires > now;
        let registered = time("registrationExpiresAt").is_none_or(|t| t > now);
        if expires > now + RENEW_BEFORE || !registered {
            return live.then_some(held);
        }
        match self.renew(&cached).await {
            Some(token) => Some(token),
            None => live.then_some(held),
        }
    }

    /// CreateToken with the cached `refreshToken` (and the client registration cached with
    /// it): the new token, also written to the cache for the AWS CLI and the next run.
    /// `None` where the cache holds no refresh, the service refuses it, or cannot be reached.
    async fn renew(&self, cached: &serde_json::Value) -> Option<String> {
        let oidc = self.oidc.as_ref()?;
        let field = |name| cached.get(name)?.as_str();
        let body = serde_json::json!({
            "clientId": field("clientId")?,
            "clientSecret": field("clientSecret")?,
            "grantType": "refresh_token",
            "refreshToken": field("refreshToken")?,
        });
        let body = body.to_string();
        let answer = retried(|| async {
            let service = format!(
                "the SSO OIDC service {}",
                oidc.host_str().unwrap_or_default()
            );
            let answer = self
                .exchange(&service, Method::POST, oidc, None, &body)
                .await?;
            match answer.code {
                429 | 500..=599 => Err(Attempt::Retry(answer.status)),
                _ => Ok(answer),
            }
        })
        .await
        .ok()?;
        if !(200..=299).contains(&answer.code) {
            return None;
        }
        let answer = answer.json;
        let token = answer.get("accessToken")?.as_str()?.to_string();
        let lasts = Duration::from_secs(answer.get("expiresIn")?.as_u64()?);
        let mut renewed = cached.clone();
        let expires = chrono::DateTime::<chrono::Utc>::from(SystemTime::now() + lasts);
        renewed["accessToken"] = token.clone().into();
        renewed["expiresAt"] = expires.format("%Y-%m-%dT%H:%M:%SZ").to_string().into();
        if let Some(refresh) = answer.get("refreshToken").and_then(|r| r.as_str()) {
            renewed["refreshToken"] = refresh.into();
        }
        // Best effort: a cache that cannot be written costs the next run a refresh.
        let _ = crate::replace::write_atomically(&self.cache, |out| {
            serde_json::to_writer(&mut *out, &renewed).map_err(std::io::Error::other)
        });
        Some(token)
    }

    /// GetRoleCredentials: the role's keys and their expiry, for the cached token; asked
    /// again after a 5xx answer, a 429 or a failed connection, as object_store asks again.
    async fn fetch(&self) -> Result<(AwsCredential, Option<SystemTime>), String> {
        let token = self.token().await.ok_or_else(|| self.expired())?;
        retried(|| self.ask(&token)).await
    }

    /// Sends a request to `service` (the portal or the OIDC service, as messages name it;
    /// `body`: JSON to POST) and reads its answer; a failed connection is to be tried again.
    async fn exchange(
        &self,
        service: &str,
        method: Method,
        url: &Url,
        bearer: Option<&str>,
        body: &str,
    ) -> Result<Answer, Attempt<String>> {
        let mut request = HttpRequest::new(match method {
            Method::POST => HttpRequestBody::from(body.to_string()),
            _ => HttpRequestBody::empty(),
        });
        *request.method_mut() = method;
        *request.uri_mut() = url.as_str().parse().map_err(|e| Attempt::Fail(short(&e)))?;
        let headers = request.headers_mut();
        headers.insert(
            HeaderName::from_static("content-type"),
            HeaderValue::from_static("application/json"),
        );
        if let Some(token) = bearer {
            let token = HeaderValue::from_str(token).map_err(|_| Attempt::Fail(self.expired()))?;
            headers.insert(HeaderName::from_static("x-amz-sso_bearer_token"), token);
        }
        let response = self
            .client
            .execute(request)
            .await
            .map_err(|e| Attempt::Retry(format!("{service}: {}", short(&e))))?;
        let status = response.status();
        let body = response
            .into_body()
            .bytes()
            .await
            .map_err(|e| Attempt::Retry(format!("{service}: {}", short(&e))))?;
        Ok(Answer {
            code: status.as_u16(),
            status: status.to_string(),
            json: serde_json::from_slice(&body).unwrap_or_default(),
        })
    }

    async fn ask(
        &self,
        token: &str,
    ) -> Result<(AwsCredential, Option<SystemTime>), Attempt<String>> {
        let portal = || format!("the SSO portal {}", self.url.host_str().unwrap_or_default());
        let answer = (self.exchange(&portal(), Method::GET, &self.url, Some(token), "")).await?;
        match answer.code {
            200..=299 => {}
            // The portal's word for a token it no longer takes (signed out, revoked).
            401 => return Err(Attempt::Fail(self.expired())),
            code => {
                let cause = format!(
                    "{} answered {} for the role {} of account {}",
                    portal(),
                    answer.status,
                    self.role,
                    self.account
                );
                return Err(match code {
                    429 | 500..=599 => Attempt::Retry(cause),
                    _ => Attempt::Fail(cause),
                });
            }
        }
        let role = answer.json.get("roleCredentials");
        let field = |name| role?.get(name)?.as_str().map(String::from);
        let (Some(key_id), Some(secret_key)) = (field("accessKeyId"), field("secretAccessKey"))
        else {
            return Err(Attempt::Fail(format!(
                "{} sent no role credentials",
                portal()
            )));
        };
        // Milliseconds since the epoch.
        let expires = role
            .and_then(|r| r.get("expiration")?.as_u64())
            .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms));
        let credential = AwsCredential {
            key_id,
            secret_key,
            token: field("sessionToken"),
        };
        Ok((credential, expires))
    }
}

/// What the portal or the OIDC service answered: the status, and the body where it is JSON.
struct Answer {
    code: u16,
    /// As `403 Forbidden`.
    status: String,
    json: serde_json::Value,
}

/// The CreateToken endpoint of the SSO OIDC service of `region`, or the one the environment
/// names for the service (`AWS_ENDPOINT_URL_SSO_OIDC`, as the AWS SDKs read it).
fn oidc_url(region: &str) -> Result<Url, String> {
    let base = std::env::var("AWS_ENDPOINT_URL_SSO_OIDC")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| format!("https://oidc.{region}.amazonaws.com"));
    Url::parse(&format!("{}/token", base.trim_end_matches('/')))
        .map_err(|e| format!("the SSO OIDC service's URL {base:?}: {e}"))
}

#[async_trait::async_trait]
impl CredentialProvider for SsoCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        self.renewed.get(self.fetch()).await
    }
}
