//! What the values a store reports of an object ([`StoredObject`]) are worth for checking a
//! copy of its bytes: for each, the layout, algorithm and expected value that a local file
//! must give ([`StoredValue`]), or why none does ([`NoValue`]).
//!
//! - The ETag of a single upload is the object's MD5 (`-t plain -a md5`); of a multipart
//!   upload, S3's multipart ETag over the part size the store told ([`Parts::part_size`]),
//!   `-t s3 --part-size P`, or where the parts differ in size over each part's size
//!   ([`Parts::sizes`]), `-t s3 --part-size 5M,7M,5M,1`. It is no MD5 at all for SSE-KMS
//!   and SSE-C objects.
//! - A `FULL_OBJECT` checksum is the plain CRC or SHA of the bytes (`-t plain`), in base64.
//! - A `COMPOSITE` checksum is S3's composite value over the part size, `-t s3 -a ALG`.
//!
//! `mtsum --stored` writes the values as tagged sum lines, which carry layout, algorithm
//! and part size, so that `mtsum -c` in a local copy checks them with no guessing; a
//! comparison of a local tree with a bucket picks one value per object from the same list.

use std::fmt;

use crate::algorithm::Algorithm;
use crate::layout::{Encoding, Layout, PartList, PartSize, Root};
pub use crate::source::remote::{
    CUSTOMER_KEY, ChecksumKind, Parts, StoredChecksum, StoredObject, etag_parts, list_stored,
};

/// One reported value of an object, and how a local file gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoredValue {
    /// Which of the object's values it is.
    pub source: Source,
    pub layout: Layout,
    pub algorithm: Algorithm,
    /// The value as reported, in its encoding: what a file's value is compared with
    /// ([`Layout::matches`]).
    pub expected: Root,
}

/// Which reported value: the ETag, or a checksum of that algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Etag,
    Checksum(Algorithm, Option<ChecksumKind>),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Etag => f.write_str("ETag"),
            Source::Checksum(alg, Some(kind)) => write!(f, "{} checksum ({kind})", alg.name()),
            Source::Checksum(alg, None) => write!(f, "{} checksum", alg.name()),
        }
    }
}

/// A reported value no local file can be checked against, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoValue {
    /// Which value (`None`: the object reports none at all).
    pub source: Option<Source>,
    /// The value as reported, if there was one.
    pub value: Option<String>,
    /// Why it checks nothing, said for a reader.
    pub why: String,
}

impl fmt::Display for NoValue {
    /// `ETag 0a1b…-3: parts of different sizes …`, or the reason alone.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.source, &self.value) {
            (Some(source), Some(value)) => write!(f, "{source} {value}: {}", self.why),
            (Some(source), None) => write!(f, "{source}: {}", self.why),
            (None, _) => f.write_str(&self.why),
        }
    }
}

/// Each value `object` reports, first the ETag then the checksums, as a value to check a
/// file against or the reason it is none. An object that reports nothing usable at all
/// gives one [`NoValue`] saying so, so that no object goes unmentioned.
pub fn values(object: &StoredObject) -> Vec<Result<StoredValue, NoValue>> {
    if object.encryption.as_deref() == Some(CUSTOMER_KEY) && object.checksums.is_empty() {
        return vec![Err(NoValue {
            source: None,
            value: None,
            why: "encrypted with a customer key (SSE-C): the store tells no value of its \
                  bytes without the key"
                .into(),
        })];
    }
    let mut out = Vec::new();
    if let Some(etag) = &object.etag {
        out.push(etag_value(object, etag));
    }
    for checksum in &object.checksums {
        out.push(checksum_value(object, checksum));
    }
    if !out.iter().any(Result::is_ok) && object.checksums.is_empty() {
        // Say it once, with the ETag's reason if there was one.
        let why = match out.pop() {
            Some(Err(e)) => format!("{e}, and no checksum stored"),
            _ => "no ETag and no checksum stored".to_string(),
        };
        out = vec![Err(NoValue {
            source: None,
            value: None,
            why,
        })];
    }
    out
}

fn etag_value(object: &StoredObject, etag: &str) -> Result<StoredValue, NoValue> {
    let no = |why: String| NoValue {
        source: Some(Source::Etag),
        value: Some(etag.to_string()),
        why,
    };
    if let Some(sse) = &object.encryption {
        return Err(no(format!(
            "the ETag of an object encrypted with {sse} is no MD5 of its bytes"
        )));
    }
    let expected = Root::parse(etag, Algorithm::Md5.digest_len())
        .ok_or_else(|| no("not an MD5 (hex, with -N after a multipart upload's)".into()))?;
    let layout = match expected.parts() {
        None => Layout::Plain,
        Some(_) => multipart_layout(object).map_err(no)?,
    };
    Ok(StoredValue {
        source: Source::Etag,
        layout,
        algorithm: Algorithm::Md5,
        expected,
    })
}

fn checksum_value(
    object: &StoredObject,
    checksum: &StoredChecksum,
) -> Result<StoredValue, NoValue> {
    let source = Source::Checksum(checksum.algorithm, checksum.kind);
    let no = |why: String| NoValue {
        source: Some(source),
        value: Some(checksum.value.clone()),
        why,
    };
    let alg = checksum.algorithm;
    let parsed = Root::parse(&checksum.value, alg.digest_len())
        .filter(|r| r.encoding() == Encoding::Base64)
        .ok_or_else(|| no(format!("not a base64 {} value", alg.name())))?;
    let (layout, expected) = match checksum.kind {
        None => {
            return Err(no(
                "the store did not say whether it is of the full object or composite \
                 (no x-amz-checksum-type, and no part count -N)"
                    .into(),
            ));
        }
        // The full object's checksum, which S3 writes without a count.
        Some(ChecksumKind::FullObject) if parsed.parts().is_none() => (Layout::Plain, parsed),
        Some(ChecksumKind::FullObject) => {
            return Err(no("a full-object checksum with a part count".into()));
        }
        Some(ChecksumKind::Composite) if parsed.parts().is_none() => {
            return Err(no(
                "a composite checksum without its part count (-N), which S3 writes: \
                 not S3's composite value"
                    .into(),
            ));
        }
        Some(ChecksumKind::Composite) => {
            let layout = multipart_layout(object).map_err(no)?;
            layout.check_algorithm(alg).map_err(|e| no(e.to_string()))?;
            (layout, parsed)
        }
    };
    Ok(StoredValue {
        source,
        layout,
        algorithm: alg,
        expected,
    })
}

/// `-t s3` with the part size the store told, for a value of a multipart upload; with
/// each part's size where they differ (and the store told them all).
fn multipart_layout(object: &StoredObject) -> Result<Layout, String> {
    let Some(parts) = &object.parts else {
        return Err("a multipart value, but the ETag has no part count".into());
    };
    let size = object.size;
    let Some(part) = parts.part_size(size) else {
        return match (parts.first, parts.last) {
            _ if !parts.sizes.is_empty() => listed_layout(&parts.sizes, size),
            (None, _) => Err(
                "the store did not tell the part size (HEAD with partNumber=1); \
                              -c --part-size auto guesses it"
                    .into(),
            ),
            (Some(first), last) => Err(format!(
                "{} parts of different sizes (the first {first} bytes, the last {}, of {size}), \
                 and the store did not tell each",
                parts.count,
                last.map_or("unknown".into(), |l| l.to_string()),
            )),
        };
    };
    // A single part is the whole object: any part size of at least its size gives its value
    // (Layout::matches takes it as a single upload's or one part's), so S3's smallest will
    // do for a small one.
    let part = match parts.count {
        1 => part.clamp(PartSize::MIN, PartSize::MAX),
        _ => part,
    };
    PartSize::new(part)
        .map(Layout::S3)
        .map_err(|e| format!("parts of {part} bytes: {e}"))
}

/// `-t s3` over parts of these sizes, which must make the object's.
fn listed_layout(sizes: &[u64], size: u64) -> Result<Layout, String> {
    let told: u64 = sizes.iter().sum();
    if told != size {
        return Err(format!(
            "the store told parts of {told} bytes in all, of an object of {size}"
        ));
    }
    PartList::new(sizes)
        .map(Layout::S3Parts)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn object(size: u64, etag: &str) -> StoredObject {
        StoredObject::with_etag(size, etag, Some(8 * MIB))
    }

    const ETAG: &str = "f77dc0eecdebcd774a2a22cb393ad2ff";

    #[test]
    fn a_single_uploads_etag_is_its_md5() {
        let v = values(&object(3, ETAG));
        let v = v[0].as_ref().unwrap();
        assert_eq!((v.layout, v.algorithm), (Layout::Plain, Algorithm::Md5));
        assert_eq!(v.expected.to_string(), ETAG);
    }

    #[test]
    fn a_multipart_etag_is_s3s_over_the_part_size_the_store_told() {
        let v = values(&object(20 * MIB, &format!("{ETAG}-3")));
        let v = v[0].as_ref().unwrap();
        assert_eq!(v.layout, Layout::S3(PartSize::DEFAULT));
        assert_eq!(v.expected.parts(), Some(3));
    }

    #[test]
    fn parts_of_different_sizes_and_sse_kms_etags_are_no_values_but_said() {
        // 8 MiB first, 3 parts, 30 MiB: the last would be 14 MiB.
        let v = values(&object(30 * MIB, &format!("{ETAG}-3")));
        let e = v[0].as_ref().unwrap_err();
        assert!(e.why.contains("parts of different sizes"), "{e}");
        let mut kms = object(3, ETAG);
        kms.encryption = Some("aws:kms".into());
        let v = values(&kms);
        assert_eq!(v.len(), 1);
        let e = v[0].as_ref().unwrap_err();
        assert_eq!(e.source, None);
        assert!(e.why.contains("aws:kms"), "{e}");
    }

    #[test]
    fn parts_of_different_sizes_told_one_by_one_are_cut_where_the_object_was() {
        let sizes = vec![5 * MIB, 7 * MIB, 5 * MIB, 1];
        let mut o = object(17 * MIB + 1, &format!("{ETAG}-4"));
        o.parts = Some(Parts {
            count: 4,
            first: Some(5 * MIB),
            last: None,
            sizes: sizes.clone(),
        });
        let v = values(&o);
        let v = v[0].as_ref().unwrap();
        assert_eq!(v.layout, Layout::S3Parts(PartList::new(&sizes).unwrap()));
        assert_eq!(v.layout.to_string(), "s3-5M,7M,5M,1");
        // Sizes that do not make the object's are no value.
        o.size += 1;
        let e = values(&o).remove(0).unwrap_err();
        assert!(e.why.contains("parts of 17825793 bytes in all"), "{e}");
    }

    #[test]
    fn an_object_encrypted_with_a_customer_key_says_so_once() {
        let mut o = object(3, ETAG);
        o.encryption = Some(CUSTOMER_KEY.into());
        let v = values(&o);
        assert_eq!(v.len(), 1);
        let e = v[0].as_ref().unwrap_err();
        assert_eq!(e.source, None);
        assert!(
            e.why.starts_with("encrypted with a customer key (SSE-C)"),
            "{e}"
        );
    }

    #[test]
    fn checksums_are_plain_when_full_object_and_s3_when_composite() {
        let mut o = object(20 * MIB, &format!("{ETAG}-3"));
        o.checksums = vec![
            StoredChecksum {
                algorithm: Algorithm::Crc64Nvme,
                kind: Some(ChecksumKind::FullObject),
                value: "AAAAAAAAAAA=".into(),
            },
            StoredChecksum {
                algorithm: Algorithm::Crc32,
                kind: Some(ChecksumKind::Composite),
                value: "NhCmhg==-3".into(),
            },
            StoredChecksum {
                algorithm: Algorithm::Crc32c,
                kind: None,
                value: "NhCmhg==".into(),
            },
        ];
        let v = values(&o);
        let full = v[1].as_ref().unwrap();
        assert_eq!(
            (full.layout, full.algorithm),
            (Layout::Plain, Algorithm::Crc64Nvme)
        );
        let composite = v[2].as_ref().unwrap();
        assert_eq!(composite.layout, Layout::S3(PartSize::DEFAULT));
        assert_eq!(composite.expected.to_string(), "NhCmhg==-3");
        assert!(v[3].as_ref().unwrap_err().why.contains("did not say"));
    }
}
