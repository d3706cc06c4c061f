//! Which value the store reports of an object the local file is hashed against: the cheapest
//! that can vouch for the bytes, so that a tree is compared with a bucket by reading the
//! local side only.
//!
//! The order (DESIGN §3.5–3.6): a full-object CRC first (CRC64NVME, CRC32C, CRC32: several
//! GB/s, and what S3 stores by default since 2024); then the ETag when it is an MD5, with the
//! part size the store told where it is multipart, else the sizes `-c --part-size auto`
//! tries; then a composite checksum with the part size the store told. An SSE-KMS ETag is no
//! MD5 of anything: with no checksum beside it, the object is unverifiable from its values.

use crate::algorithm::Algorithm;
use crate::layout::{Layout, PartSize, Root};

/// What a store reports of one object that may vouch for its bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    /// The ETag, without its quotes.
    pub etag: Option<String>,
    /// Each `x-amz-checksum-*`, with whether it is of the full object (`FULL_OBJECT`) or
    /// of the parts (`COMPOSITE`, with `-N`).
    pub checksums: Vec<Checksum>,
    /// The length of the first part of a multipart object, which the store tells (`HEAD`
    /// with `partNumber=1`): the part size of the upload, whoever made it.
    pub part_size: Option<u64>,
    /// Whether the parts differ in size beyond the last one: no part size gives the value.
    pub uneven_parts: bool,
    /// Whether the object is encrypted with SSE-KMS (or DSSE-KMS), whose ETag is no MD5.
    pub kms: bool,
}

/// One `x-amz-checksum-*` of an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checksum {
    pub algorithm: Algorithm,
    pub value: Root,
    pub full_object: bool,
}

/// A value to hash the local file for: the same bytes give `expected`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Value {
    pub layout: Layout,
    pub algorithm: Algorithm,
    pub expected: Root,
}

/// What the local file is to be hashed for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Each of these; the bytes are the same if any gives its value. One, but for an ETag
    /// whose part size the store did not tell, which is tried with the sizes `-c --part-size
    /// auto` tries.
    Values(Vec<Value>),
    /// None of the store's values can tell: why.
    Unverifiable(String),
}

/// The cheapest of the store's values for an object of `size` bytes (the local file's,
/// equal to the object's: sizes that differ were decided before).
pub fn choose(reported: &Reported, size: u64) -> Choice {
    use Algorithm::{Crc32, Crc32c, Crc64Nvme, Md5, Sha1, Sha256};
    let full = |alg: Algorithm| {
        reported
            .checksums
            .iter()
            .find(|c| c.algorithm == alg && c.full_object && c.value.parts().is_none())
    };
    if let Some(c) = [Crc64Nvme, Crc32c, Crc32].into_iter().find_map(full) {
        return one(Layout::Plain, c.algorithm, c.value);
    }
    let exact = reported
        .part_size
        .filter(|_| !reported.uneven_parts)
        .and_then(|p| PartSize::new(p).ok());
    let etag = reported
        .etag
        .as_deref()
        .filter(|_| !reported.kms)
        .and_then(|e| Root::parse(e.trim_matches('"'), Md5.digest_len()));
    if let Some(etag) = etag.filter(|e| e.encoding() == crate::layout::Encoding::Hex) {
        let layouts = match (etag.parts(), exact) {
            (None, _) => vec![Layout::Plain],
            (Some(_), Some(part)) => vec![Layout::S3(part)],
            (Some(_), None) if reported.uneven_parts => Vec::new(),
            (Some(_), None) => Layout::S3(PartSize::DEFAULT).size_guesses(size, &etag),
        };
        if !layouts.is_empty() {
            let value = |layout| Value {
                layout,
                algorithm: Md5,
                expected: etag,
            };
            return Choice::Values(layouts.into_iter().map(value).collect());
        }
    }
    let composite = |alg: Algorithm| {
        let c = reported.checksums.iter().find(|c| c.algorithm == alg)?;
        let part = exact?;
        (c.value.parts().is_some() && !c.full_object).then_some((part, c))
    };
    if let Some((part, c)) = [Crc32c, Crc32, Sha1, Sha256]
        .into_iter()
        .find_map(composite)
    {
        return one(Layout::S3(part), c.algorithm, c.value);
    }
    Choice::Unverifiable(why(reported, etag.is_some()))
}

fn one(layout: Layout, algorithm: Algorithm, expected: Root) -> Choice {
    Choice::Values(vec![Value {
        layout,
        algorithm,
        expected,
    }])
}

/// Why no value can vouch for the bytes, in the words of an `unverified` line.
fn why(reported: &Reported, md5_etag: bool) -> String {
    let no_checksum = match reported.checksums.is_empty() {
        true => "no checksum stored",
        false => "its checksums are of parts of unknown size",
    };
    if reported.kms {
        return format!("SSE-KMS: its ETag is no MD5, and {no_checksum}");
    }
    if reported.uneven_parts {
        return format!("uploaded in parts of different sizes, and {no_checksum}");
    }
    match (&reported.etag, md5_etag) {
        (Some(_), true) => format!("no part size gives its ETag's part count, and {no_checksum}"),
        (Some(etag), false) => format!("its ETag {etag} is no MD5, and {no_checksum}"),
        (None, _) => format!("no ETag, and {no_checksum}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Digest;

    fn root(alg: Algorithm, data: &[u8]) -> Root {
        Root::new(alg.hash(data))
    }

    fn checksum(algorithm: Algorithm, value: Root, full_object: bool) -> Checksum {
        Checksum {
            algorithm,
            value,
            full_object,
        }
    }

    #[test]
    fn a_full_object_crc_comes_before_the_etag_and_crc64nvme_before_the_others() {
        let etag = root(Algorithm::Md5, b"x").to_string();
        let crc32 = checksum(Algorithm::Crc32, root(Algorithm::Crc32, b"x"), true);
        let nvme = checksum(Algorithm::Crc64Nvme, root(Algorithm::Crc64Nvme, b"x"), true);
        let reported = Reported {
            etag: Some(etag),
            checksums: vec![crc32, nvme],
            ..Reported::default()
        };
        let Choice::Values(values) = choose(&reported, 1) else {
            panic!("a value")
        };
        assert_eq!(values.len(), 1);
        assert_eq!(values[0].algorithm, Algorithm::Crc64Nvme);
        assert_eq!(values[0].layout, Layout::Plain);
    }

    #[test]
    fn a_multipart_etag_takes_the_part_size_the_store_told_else_the_guesses_of_part_size_auto() {
        let size = 20 << 20;
        let etag = Root::new(Digest::from_hex(&"ab".repeat(16)).unwrap()).with_parts(4);
        let told = Reported {
            etag: Some(format!("\"{etag}\"")),
            part_size: Some(5 << 20),
            ..Reported::default()
        };
        let five = Layout::S3(PartSize::new(5 << 20).unwrap());
        let Choice::Values(values) = choose(&told, size) else {
            panic!("a value")
        };
        assert_eq!(values.iter().map(|v| v.layout).collect::<Vec<_>>(), [five]);
        let untold = Reported {
            part_size: None,
            ..told
        };
        let Choice::Values(guesses) = choose(&untold, size) else {
            panic!("values")
        };
        assert_eq!(
            guesses.iter().map(|v| v.layout).collect::<Vec<_>>(),
            Layout::S3(PartSize::DEFAULT).size_guesses(size, &etag)
        );
        assert!(guesses.len() > 1 && guesses.iter().all(|v| v.expected == etag));
    }

    #[test]
    fn an_sse_kms_etag_without_a_checksum_is_unverifiable_and_says_why() {
        let reported = Reported {
            etag: Some(root(Algorithm::Md5, b"x").to_string()),
            kms: true,
            ..Reported::default()
        };
        match choose(&reported, 1) {
            Choice::Unverifiable(why) => assert!(why.starts_with("SSE-KMS"), "{why}"),
            other => panic!("{other:?}"),
        }
        let garbled = Reported {
            etag: Some("not-an-md5".into()),
            ..Reported::default()
        };
        match choose(&garbled, 1) {
            Choice::Unverifiable(why) => assert!(why.contains("is no MD5"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_composite_checksum_serves_only_where_the_etag_cannot() {
        let composite = checksum(
            Algorithm::Crc32c,
            root(Algorithm::Crc32c, b"x").with_parts(2),
            false,
        );
        let reported = Reported {
            etag: Some("garbled".into()),
            checksums: vec![composite],
            part_size: Some(5 << 20),
            ..Reported::default()
        };
        let Choice::Values(values) = choose(&reported, 6 << 20) else {
            panic!("a value")
        };
        assert_eq!(values[0].algorithm, Algorithm::Crc32c);
        assert_eq!(
            values[0].layout,
            Layout::S3(PartSize::new(5 << 20).unwrap())
        );
        let untold = Reported {
            part_size: None,
            ..reported
        };
        assert!(matches!(choose(&untold, 6 << 20), Choice::Unverifiable(_)));
    }
}
