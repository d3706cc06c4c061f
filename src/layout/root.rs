//! The value a layout gives a stream: its root digest, and what the storage system whose
//! digest the layout reproduces prints around it.
//!
//! Most layouts print lowercase hex, as every `*sum` tool does. S3 prints a multipart ETag as
//! `<hex>-<parts>` and its composite checksums as `<base64>-<parts>`; GCS, Azure and S3's
//! headers show any digest in base64. Those are properties of the value, so they live here and
//! not in the printers: a [`Root`] displays exactly as its system shows it.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::algorithm::Digest;

/// How a digest is spelled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Lowercase hex, as `sha256sum` prints it.
    #[default]
    Hex,
    /// Base64 of the digest's big-endian bytes, with padding, as S3, GCS and Azure headers
    /// carry it (`Content-MD5`, `x-amz-checksum-crc32c`, `x-goog-hash`).
    Base64,
}

/// A layout's result for one stream.
///
/// Two roots are equal when their digests and part counts are: the encoding is how a root is
/// shown, not what it is, so a base64 value read from a sum file equals the hex one computed.
#[derive(Clone, Copy, Debug)]
pub struct Root {
    digest: Digest,
    /// The part count that follows a dash, for S3's multipart values.
    parts: Option<u64>,
    encoding: Encoding,
    /// For S3's multipart value of one part, the part's own digest: the value a single upload
    /// of the same bytes shows, which `H(H(part))` cannot give back.
    single_part: Option<Digest>,
}

impl Root {
    /// A root shown as lowercase hex, without a part count.
    pub fn new(digest: Digest) -> Root {
        Root {
            digest,
            parts: None,
            encoding: Encoding::Hex,
            single_part: None,
        }
    }

    /// The same root followed by `-parts`, as S3 shows a multipart value.
    pub fn with_parts(self, parts: u64) -> Root {
        Root {
            parts: Some(parts),
            ..self
        }
    }

    /// The same root remembering `digest`, the digest of its one part (S3's multipart value
    /// of one part), for [`Layout::matches`](super::Layout::matches).
    pub fn with_single_part(self, digest: Digest) -> Root {
        Root {
            single_part: Some(digest),
            ..self
        }
    }

    /// For S3's multipart value of one part computed here, the part's own digest.
    pub fn single_part(&self) -> Option<&Digest> {
        self.single_part.as_ref()
    }

    /// The same root spelled in `encoding`.
    pub fn with_encoding(self, encoding: Encoding) -> Root {
        Root { encoding, ..self }
    }

    /// The digest.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// The part count after the dash, if the value has one.
    pub fn parts(&self) -> Option<u64> {
        self.parts
    }

    /// How the digest is spelled.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Reads a value as [`Root`]'s `Display` writes it, for a digest of `digest_len` bytes: hex
    /// (either case) or base64, optionally followed by `-N` with `N` ≥ 1 written without
    /// leading zeros. `None` for anything else, including a digest of another length.
    ///
    /// Hex is tried first: base64 of 48 bytes is 64 characters long, as hex of 32 bytes is,
    /// but the lengths asked for decide (a value is hex only if it is exactly twice
    /// `digest_len` long).
    ///
    /// ```
    /// use mtsum::layout::{Encoding, Root};
    /// let etag = Root::parse("f77dc0eecdebcd774a2a22cb393ad2ff-2", 16).unwrap();
    /// assert_eq!(etag.parts(), Some(2));
    /// let crc = Root::parse("NhCmhg==", 4).unwrap();
    /// assert_eq!(crc.digest().to_hex(), "3610a686");
    /// assert_eq!(crc.encoding(), Encoding::Base64);
    /// assert_eq!(Root::parse("NhCmhg==", 8), None);
    /// ```
    pub fn parse(text: &str, digest_len: usize) -> Option<Root> {
        let (value, parts) = match text.rsplit_once('-') {
            Some((value, n)) => (value, Some(parse_count(n)?)),
            None => (text, None),
        };
        // Of the right length, hex where it reads as hex (which checks every digit), else
        // base64.
        let hex = (value.len() == 2 * digest_len)
            .then(|| Digest::from_hex(value))
            .flatten();
        let (digest, encoding) = if let Some(digest) = hex {
            (digest, Encoding::Hex)
        } else {
            let bytes = BASE64.decode(value).ok()?;
            if bytes.len() != digest_len || bytes.len() > Digest::MAX_LEN {
                return None;
            }
            (Digest::from_slice(&bytes), Encoding::Base64)
        };
        Some(Root {
            digest,
            parts,
            encoding,
            single_part: None,
        })
    }
}

/// A part count as S3 writes it: decimal, at least 1, no sign or leading zero.
fn parse_count(n: &str) -> Option<u64> {
    let digits = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    if !digits || n.starts_with('0') {
        return None;
    }
    n.parse().ok()
}

impl PartialEq for Root {
    fn eq(&self, other: &Root) -> bool {
        self.digest == other.digest && self.parts == other.parts
    }
}

impl Eq for Root {}

/// A root is a bare digest when it has no part count: what every layout but S3's multipart
/// values gives.
impl PartialEq<Digest> for Root {
    fn eq(&self, other: &Digest) -> bool {
        self.parts.is_none() && self.digest == *other
    }
}

impl From<Digest> for Root {
    fn from(digest: Digest) -> Root {
        Root::new(digest)
    }
}

impl fmt::Display for Root {
    /// The digest in its encoding, then `-N` if the value has a part count.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.encoding {
            Encoding::Hex => write!(f, "{}", self.digest)?,
            Encoding::Base64 => f.write_str(&BASE64.encode(self.digest.as_bytes()))?,
        }
        match self.parts {
            Some(n) => write!(f, "-{n}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Algorithm;

    #[test]
    fn base64_is_of_the_big_endian_bytes() {
        // S3's documented example: CRC32 of "hello" is 0x3610a686, header value `NhCmhg==`.
        let root = Root::new(Digest::from_hex("3610a686").unwrap()).with_encoding(Encoding::Base64);
        assert_eq!(root.to_string(), "NhCmhg==");
    }

    #[test]
    fn a_root_reads_back_in_either_encoding() {
        let d = Algorithm::Md5.hash(b"abc");
        for root in [Root::new(d), Root::new(d).with_parts(10_000)] {
            for enc in [Encoding::Hex, Encoding::Base64] {
                let shown = root.with_encoding(enc).to_string();
                let read = Root::parse(&shown, 16).unwrap();
                assert_eq!(read, root, "{shown}");
                assert_eq!(read.encoding(), enc);
            }
        }
    }

    #[test]
    fn malformed_values_are_refused() {
        let hex = Algorithm::Md5.hash(b"abc").to_hex();
        for bad in [
            format!("{hex}-"),
            format!("{hex}-0"),
            format!("{hex}-01"),
            format!("{hex}-+1"),
            format!("{hex}-x"),
            format!("{hex}0"),
            hex[1..].to_string(),
            "NhCmhg=".into(),
            "".into(),
        ] {
            assert_eq!(Root::parse(&bad, 16), None, "{bad}");
        }
    }
}
