//! The AWS CLI's shared files, `~/.aws/credentials` and `~/.aws/config`: the settings of one
//! profile, and the credentials of a `credential_process` (a command that prints them, as
//! `aws-vault`, `granted` or a company's single sign-on tool do).

use std::collections::HashMap;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use object_store::CredentialProvider;
use object_store::aws::AwsCredential;

/// The settings of one profile of `~/.aws/credentials` and `~/.aws/config` (or the files
/// `AWS_SHARED_CREDENTIALS_FILE` and `AWS_CONFIG_FILE` name): `profile`, else
/// `AWS_PROFILE`, else `default`: static keys, `credential_process`, IAM Identity Center
/// (SSO) settings, with those of the `[sso-session NAME]` its `sso_session` names, region,
/// endpoint and CA bundle.
pub(super) struct Profile {
    name: String,
    settings: HashMap<String, String>,
}

impl Profile {
    pub(super) fn read(profile: Option<String>) -> Profile {
        let name = profile
            .or_else(|| env("AWS_PROFILE").map(|v| v.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "default".into());
        let file = |var, default: &str| {
            env(var)
                .map(Into::into)
                .or_else(|| home().map(|h| h.join(default)))
        };
        let read = |path: Option<std::path::PathBuf>| {
            path.and_then(|p| std::fs::read_to_string(p).ok())
                .unwrap_or_default()
        };
        let credentials = read(file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"));
        let config = read(file("AWS_CONFIG_FILE", ".aws/config"));
        let mut settings = HashMap::new();
        // The config file names its sections `[profile NAME]`, but `[default]`.
        let config_section = match name.as_str() {
            "default" => "default".to_string(),
            other => format!("profile {other}"),
        };
        for (text, section) in [(&credentials, name.clone()), (&config, config_section)] {
            for (key, value) in ini_section(text, &section) {
                settings.entry(key).or_insert(value);
            }
        }
        // An SSO profile of the AWS CLI v2 names a session, whose section holds the start
        // URL and region that the profiles logged in with it share.
        if let Some(session) = settings.get("sso_session").cloned() {
            for (key, value) in ini_section(&config, &format!("sso-session {session}")) {
                settings.entry(key).or_insert(value);
            }
        }
        Profile { name, settings }
    }

    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.settings.get(key).map(String::as_str)
    }

    /// The profile's name, as `--profile` would name it.
    pub(super) fn name(&self) -> &str {
        &self.name
    }
}

/// A variable of the environment, unless unset or empty.
fn env(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// The user's home directory, where `~/.aws` is.
pub(super) fn home() -> Option<std::path::PathBuf> {
    env("HOME").map(Into::into)
}

/// The `key = value` lines of `[section]` in an INI file as the AWS CLI writes them.
fn ini_section(text: &str, section: &str) -> Vec<(String, String)> {
    let mut inside = false;
    let mut found = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == section;
        } else if inside && let Some((key, value)) = line.split_once('=') {
            found.push((key.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    found
}

/// Credentials that expire, kept for the run and fetched anew when those fetched last
/// expire within five minutes: as the AWS CLI renews them, and as object_store's own
/// providers do (its token cache, which is not public).
#[derive(Debug, Default)]
pub(super) struct Renewed {
    /// The credentials fetched last, and when they expire (`None`: never).
    last: tokio::sync::Mutex<Option<(Arc<AwsCredential>, Option<SystemTime>)>>,
}

impl Renewed {
    /// The credentials kept, or those that `fetch` gets (with their expiry), kept from then
    /// on. One fetch at a time: the requests that wait meanwhile take what it fetched.
    pub(super) async fn get(
        &self,
        fetch: impl Future<Output = Result<(AwsCredential, Option<SystemTime>), String>>,
    ) -> object_store::Result<Arc<AwsCredential>> {
        let mut last = self.last.lock().await;
        let fresh = |expires: &Option<SystemTime>| {
            expires.is_none_or(|t| t > SystemTime::now() + Duration::from_secs(300))
        };
        if let Some((credential, expires)) = last.as_ref()
            && fresh(expires)
        {
            return Ok(credential.clone());
        }
        let (credential, expires) = fetch.await.map_err(|cause| object_store::Error::Generic {
            store: "S3",
            source: cause.into(),
        })?;
        let credential = Arc::new(credential);
        *last = Some((credential.clone(), expires));
        Ok(credential)
    }
}

/// The credentials that a profile's `credential_process` prints, run again when those it
/// printed last expire within five minutes (as the AWS CLI does), else once per run.
#[derive(Debug)]
pub(super) struct CredentialProcess {
    command: String,
    renewed: Renewed,
}

impl CredentialProcess {
    pub(super) fn new(command: &str) -> CredentialProcess {
        CredentialProcess {
            command: command.into(),
            renewed: Renewed::default(),
        }
    }

    /// Runs the command, by `sh -c` as the AWS SDKs for Rust and Go do (the AWS CLI splits
    /// it as a shell would, without one), and reads the JSON it prints: `Version` 1,
    /// `AccessKeyId`, `SecretAccessKey`, and `SessionToken` and `Expiration` if it has them.
    fn run(&self) -> Result<(AwsCredential, Option<SystemTime>), String> {
        let out = Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .output()
            .map_err(|e| format!("cannot run it: {}", crate::source::os_message(&e)))?;
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stderr);
            let said = said.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            return Err(format!("it failed ({}): {said}", out.status));
        }
        let json: serde_json::Value =
            serde_json::from_slice(&out.stdout).map_err(|e| format!("it printed no JSON ({e})"))?;
        let field = |name: &str| json.get(name).and_then(|v| v.as_str()).map(String::from);
        if json.get("Version").and_then(|v| v.as_u64()) != Some(1) {
            return Err("it printed no \"Version\": 1".into());
        }
        let (Some(key_id), Some(secret_key)) = (field("AccessKeyId"), field("SecretAccessKey"))
        else {
            return Err("it printed no AccessKeyId and SecretAccessKey".into());
        };
        let expires = match field("Expiration") {
            None => None,
            Some(text) => Some(
                parse_time(&text).ok_or_else(|| format!("its Expiration {text:?} is no time"))?,
            ),
        };
        let credential = AwsCredential {
            key_id,
            secret_key,
            token: field("SessionToken"),
        };
        Ok((credential, expires))
    }
}

/// A time as the AWS tools write them in their JSON: RFC 3339 (`2026-01-02T03:04:05Z`), or
/// with `UTC` for the `Z`, as older AWS CLIs wrote an SSO token's expiry.
pub(super) fn parse_time(text: &str) -> Option<SystemTime> {
    let text = match text.strip_suffix("UTC") {
        Some(time) => format!("{time}Z"),
        None => text.to_string(),
    };
    let at = chrono::DateTime::parse_from_rfc3339(&text).ok()?;
    let seconds = u64::try_from(at.timestamp()).unwrap_or(0);
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds))
}

#[async_trait::async_trait]
impl CredentialProvider for CredentialProcess {
    type Credential = AwsCredential;

    /// Runs on the runtime's thread, which waits for the command: once per run, or per
    /// expiry, and no range GET can be signed meanwhile anyway.
    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let run = async {
            self.run()
                .map_err(|cause| format!("credential_process: {cause}"))
        };
        self.renewed.get(run).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_is_read_from_its_section_only() {
        let text = "[default]\naws_access_key_id = A\n\n[profile other]\n# note\nregion = eu-west-1\naws_access_key_id=B\n";
        assert_eq!(
            ini_section(text, "default"),
            [("aws_access_key_id".into(), "A".into())]
        );
        assert_eq!(
            ini_section(text, "profile other"),
            [
                ("region".to_string(), "eu-west-1".to_string()),
                ("aws_access_key_id".into(), "B".into())
            ]
        );
        assert!(ini_section(text, "missing").is_empty());
    }

    #[test]
    fn expiry_times_are_read_as_the_aws_tools_write_them() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_323_045);
        assert_eq!(parse_time("2026-01-02T03:04:05Z"), Some(at));
        assert_eq!(parse_time("2026-01-02T03:04:05UTC"), Some(at));
        assert_eq!(parse_time("2026-01-02T04:04:05+01:00"), Some(at));
        assert_eq!(parse_time("tomorrow"), None);
    }
}
