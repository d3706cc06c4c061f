//! What the user asked to hash: a path, standard input, or a remote object.

use std::path::{Path, PathBuf};

use super::remote;

/// What the user asked to hash: a path, or standard input (`-`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A path named by the user: whatever it is, it is opened as `sha256sum` opens it, so a
    /// FIFO is read once some process writes to it.
    Path(PathBuf),
    /// A path that must be a regular file, as the walk found it below a directory: it is
    /// opened without waiting, and anything else found there by then is refused with
    /// [`InputError::NotRegular`](super::InputError::NotRegular). A FIFO put in its place would otherwise block the open
    /// until some process wrote to it, which may be never.
    File(PathBuf),
    Stdin,
    /// A remote object (`s3://BUCKET/KEY`, `http(s)://HOST/PATH`), or with `-r` a prefix.
    Url(remote::Url),
}

impl Target {
    /// `-` means standard input, as for every coreutils checksum tool; `s3://`, `http://`
    /// and `https://` name remote objects (with the options of
    /// [`remote::set_default_options`]); a URL that does not parse stays a path, which then
    /// does not exist.
    pub fn from_arg(arg: impl Into<PathBuf>) -> Target {
        let path = arg.into();
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
        if path.as_os_str() == "-" {
            Target::Stdin
        } else if remote::is_url(bytes)
            && let Some(url) = path.to_str().and_then(|text| remote::Url::parse(text).ok())
        {
            Target::Url(url)
        } else {
            Target::Path(path)
        }
    }

    /// The name to print: the path or URL as given, or `-`.
    pub fn display_name(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Target::Url(url) => url.as_str().into(),
            _ => match self.path() {
                Some(p) => p.to_string_lossy(),
                None => "-".into(),
            },
        }
    }

    /// The name to print as raw bytes: paths byte for byte, as coreutils prints them, even
    /// when they are not valid UTF-8.
    pub fn name_bytes(&self) -> &[u8] {
        match self {
            Target::Path(p) | Target::File(p) => p.as_os_str().as_encoded_bytes(),
            Target::Stdin => b"-",
            Target::Url(url) => url.as_str().as_bytes(),
        }
    }

    /// The local path, or `None` for standard input and remote objects.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Target::Path(p) | Target::File(p) => Some(p),
            Target::Stdin | Target::Url(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dash_is_standard_input() {
        assert_eq!(Target::from_arg("-"), Target::Stdin);
        assert_eq!(Target::from_arg("./-"), Target::Path("./-".into()));
    }
}
