//! The AWS CLI's shared files, `~/.aws/credentials` and `~/.aws/config`: the settings of one
//! profile, and the credentials of a `credential_process` (a command that prints them, as
//! `aws-vault`, `granted` or a company's single sign-on tool do).

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use object_store::CredentialProvider;
use object_store::aws::AwsCredential;

/// The settings of one profile of `~/.aws/credentials` and `~/.aws/config` (or the files
/// `AWS_SHARED_CREDENTIALS_FILE` and `AWS_CONFIG_FILE` name): `profile`, else
/// `AWS_PROFILE`, else `default`: static keys, `credential_process`, region, endpoint and
/// CA bundle (SSO profiles are not read).
pub(super) struct Profile(HashMap<String, String>);

impl Profile {
    pub(super) fn read(profile: Option<String>) -> Profile {
        let env = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        let name = profile
            .or_else(|| env("AWS_PROFILE").map(|v| v.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "default".into());
        let home = env("HOME").map(std::path::PathBuf::from);
        let file = |var, default: &str| {
            env(var)
                .map(Into::into)
                .or_else(|| home.as_ref().map(|h| h.join(default)))
        };
        let mut settings = HashMap::new();
        // The config file names its sections `[profile NAME]`, but `[default]`.
        let config_section = match name.as_str() {
            "default" => "default".to_string(),
            other => format!("profile {other}"),
        };
        let sources = [
            (
                file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"),
                name.clone(),
            ),
            (file("AWS_CONFIG_FILE", ".aws/config"), config_section),
        ];
        for (path, section) in sources {
            let Some(text) = path.and_then(|p| std::fs::read_to_string(p).ok()) else {
                continue;
            };
            for (key, value) in ini_section(&text, &section) {
                settings.entry(key).or_insert(value);
            }
        }
        Profile(settings)
    }

    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
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

/// The credentials that a profile's `credential_process` prints, run again when those it
/// printed last expire within five minutes (as the AWS CLI does), else once per run.
#[derive(Debug)]
pub(super) struct CredentialProcess {
    command: String,
    /// The credentials printed last, and when they expire (`None`: never).
    last: Mutex<Option<(Arc<AwsCredential>, Option<SystemTime>)>>,
}

impl CredentialProcess {
    pub(super) fn new(command: &str) -> CredentialProcess {
        CredentialProcess {
            command: command.into(),
            last: Mutex::new(None),
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
            Some(text) => {
                let at = chrono::DateTime::parse_from_rfc3339(&text)
                    .map_err(|e| format!("its Expiration {text:?}: {e}"))?;
                let seconds = u64::try_from(at.timestamp()).unwrap_or(0);
                Some(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds))
            }
        };
        let credential = AwsCredential {
            key_id,
            secret_key,
            token: field("SessionToken"),
        };
        Ok((credential, expires))
    }
}

#[async_trait::async_trait]
impl CredentialProvider for CredentialProcess {
    type Credential = AwsCredential;

    /// Runs on the runtime's thread, which waits for the command: once per run, or per
    /// expiry, and no range GET can be signed meanwhile anyway.
    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = |expires: &Option<SystemTime>| {
            expires.is_none_or(|t| t > SystemTime::now() + Duration::from_secs(300))
        };
        if let Some((credential, expires)) = last.as_ref()
            && fresh(expires)
        {
            return Ok(credential.clone());
        }
        let (credential, expires) = self.run().map_err(|cause| object_store::Error::Generic {
            store: "S3",
            source: format!("credential_process: {cause}").into(),
        })?;
        let credential = Arc::new(credential);
        *last = Some((credential.clone(), expires));
        Ok(credential)
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
}
