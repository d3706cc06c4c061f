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
//! The token itself is not renewed here (the OIDC dance of its `refreshToken`): when it
//! expires, the user logs in again, as the AWS CLI asks; any `aws` command with the profile
//! renews a session's token that is about to expire.

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

    /// The token `aws sso login` cached, while it has not expired.
    fn token(&self) -> Option<String> {
        let text = std::fs::read(&self.cache).ok()?;
        let json: serde_json::Value = serde_json::from_slice(&text).ok()?;
        let expires = super::profile::parse_time(json.get("expiresAt")?.as_str()?)?;
        let token = json.get("accessToken")?.as_str()?;
        (expires > SystemTime::now()).then(|| token.to_string())
    }

    /// GetRoleCredentials: the role's keys and their expiry, for the cached token; asked
    /// again after a 5xx answer, a 429 or a failed connection, as object_store asks again.
    async fn fetch(&self) -> Result<(AwsCredential, Option<SystemTime>), String> {
        let token = self.token().ok_or_else(|| self.expired())?;
        retried(|| self.ask(&token)).await
    }

    async fn ask(
        &self,
        token: &str,
    ) -> Result<(AwsCredential, Option<SystemTime>), Attempt<String>> {
        let portal = || format!("the SSO portal {}", self.url.host_str().unwrap_or_default());
        let mut request = HttpRequest::new(HttpRequestBody::empty());
        *request.method_mut() = Method::GET;
        *request.uri_mut() = self
            .url
            .as_str()
            .parse()
            .map_err(|e| Attempt::Fail(short(&e)))?;
        let bearer = HeaderValue::from_str(token).map_err(|_| Attempt::Fail(self.expired()))?;
        request
            .headers_mut()
            .insert(HeaderName::from_static("x-amz-sso_bearer_token"), bearer);
        let response = self
            .client
            .execute(request)
            .await
            .map_err(|e| Attempt::Retry(format!("{}: {}", portal(), short(&e))))?;
        let status = response.status();
        match status.as_u16() {
            200..=299 => {}
            // The portal's word for a token it no longer takes (signed out, revoked).
            401 => return Err(Attempt::Fail(self.expired())),
            code => {
                let cause = format!(
                    "{} answered {status} for the role {} of account {}",
                    portal(),
                    self.role,
                    self.account
                );
                return Err(match code {
                    429 | 500..=599 => Attempt::Retry(cause),
                    _ => Attempt::Fail(cause),
                });
            }
        }
        let body = response
            .into_body()
            .bytes()
            .await
            .map_err(|e| Attempt::Retry(format!("{}: {}", portal(), short(&e))))?;
        let json: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| Attempt::Fail(format!("{} sent no JSON ({e})", portal())))?;
        let role = json.get("roleCredentials");
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

#[async_trait::async_trait]
impl CredentialProvider for SsoCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        self.renewed.get(self.fetch()).await
    }
}
