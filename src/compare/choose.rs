//! Which of the values a store reports of an object ([`crate::stored::values`]) the local
//! file is hashed for: the cheapest that vouches for the bytes, so that a tree is compared
//! with a bucket by reading the local side only.
//!
//! The order (DESIGN §3.5–3.6): a full-object CRC first (CRC64NVME, CRC32C, CRC32: several
//! GB/s, and what S3 stores by default since 2024); then the ETag, an MD5 (over the part size
//! the store told, for a multipart upload); then a full-object SHA; then composite values. A
//! multipart ETag whose part size the store did not tell is tried with the sizes `-c
//! --part-size auto` tries. An SSE-KMS ETag is no MD5 of anything: with no checksum beside
//! it, the object is unverifiable from its values.

use crate::algorithm::Algorithm;
use crate::layout::{Encoding, Layout, PartSize, Root};
use crate::stored::{Source, StoredObject, StoredValue, values};
use crate::tries::Tries;

/// What the local file is to be hashed for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// A value, under one layout; but for an ETag whose part size the store did not tell,
    /// under each size `-c --part-size auto` tries. The bytes are the same if any gives it.
    Values(Tries),
    /// None of the store's values can tell: why.
    Unverifiable(String),
}

/// The cheapest of the values the store reports of `object`.
pub fn choose(object: &StoredObject) -> Choice {
    let reported = values(object);
    let cheapest = reported
        .iter()
        .filter_map(|v| v.as_ref().ok())
        .min_by_key(|v| cost(v));
    if let Some(v) = cheapest {
        return Choice::Values(Tries::one(v.layout, v.algorithm, v.expected));
    }
    if let Some(guesses) = guesses(object) {
        return Choice::Values(guesses);
    }
    let why: Vec<String> = reported
        .iter()
        .filter_map(|v| v.as_ref().err())
        .map(|no| no.to_string())
        .collect();
    Choice::Unverifiable(match why.is_empty() {
        true => "the store reports no value of it".into(),
        false => why.join("; "),
    })
}

/// The cheapest value that the stores of two objects both report (the same layout and
/// algorithm: a full-object CRC, ETags over one part size), as `(first's, second's)`: two
/// objects compared without reading either. `None` when they have none in common.
pub fn common(first: &StoredObject, second: &StoredObject) -> Option<(StoredValue, StoredValue)> {
    let theirs: Vec<StoredValue> = values(second).into_iter().filter_map(Result::ok).collect();
    values(first)
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|v| {
            let same_kind = |w: &&StoredValue| (w.layout, w.algorithm) == (v.layout, v.algorithm);
            theirs.iter().find(same_kind).map(|w| (v, *w))
        })
        .min_by_key(|(v, _)| cost(v))
}

/// How dear a value is to compute from the local file: the CRCs cost a fraction of MD5, a
/// composite value a hash per part on top.
fn cost(value: &StoredValue) -> u8 {
    let algorithm = match value.algorithm {
        Algorithm::Crc64Nvme => 0,
        Algorithm::Crc32c => 1,
        Algorithm::Crc32 => 2,
        Algorithm::Md5 => 3,
        Algorithm::Sha1 => 4,
        Algorithm::Sha256 => 5,
        _ => 6,
    };
    let composite = value.source != Source::Etag && value.layout.name() == "s3";
    u8::from(composite) * 10 + algorithm
}

/// An MD5 multipart ETag of an object whose part size the store did not tell (a server
/// without `partNumber` HEADs): the part sizes `-c --part-size auto` tries.
fn guesses(object: &StoredObject) -> Option<Tries> {
    let told = object.parts.as_ref().is_some_and(|p| p.first.is_some());
    let etag = object
        .etag
        .as_deref()
        .filter(|_| object.encryption.is_none() && !told)
        .and_then(|e| Root::parse(e, Algorithm::Md5.digest_len()))
        .filter(|e| e.encoding() == Encoding::Hex && e.parts().is_some())?;
    Tries::guessed(
        Layout::S3(PartSize::DEFAULT),
        Algorithm::Md5,
        object.size,
        etag,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stored::{ChecksumKind, Parts, StoredChecksum};

    const MIB: u64 = 1 << 20;

    fn object(size: u64, etag: &str, first_part: Option<u64>) -> StoredObject {
        StoredObject::with_etag(size, etag, first_part)
    }

    fn full(algorithm: Algorithm, data: &[u8]) -> StoredChecksum {
        let value = Root::new(algorithm.hash(data)).with_encoding(Encoding::Base64);
        StoredChecksum {
            algorithm,
            kind: Some(ChecksumKind::FullObject),
            value: value.to_string(),
        }
    }

    fn md5(data: &[u8]) -> String {
        Algorithm::Md5.hash(data).to_hex()
    }

    #[test]
    fn a_full_object_crc_comes_before_the_etag_and_crc64nvme_before_the_others() {
        let mut o = object(1, &md5(b"x"), None);
        o.checksums = vec![
            full(Algorithm::Crc32, b"x"),
            full(Algorithm::Crc64Nvme, b"x"),
        ];
        let Choice::Values(value) = choose(&o) else {
            panic!("a value")
        };
        assert_eq!(
            (value.layouts(), value.algorithm),
            (&[Layout::Plain][..], Algorithm::Crc64Nvme)
        );
        o.checksums = vec![full(Algorithm::Sha256, b"x")];
        let Choice::Values(value) = choose(&o) else {
            panic!("a value")
        };
        assert_eq!(value.algorithm, Algorithm::Md5, "the ETag before SHA-256");
    }

    #[test]
    fn a_multipart_etag_takes_the_part_size_the_store_told_else_the_guesses_of_part_size_auto() {
        let size = 20 * MIB;
        let etag = format!("{}-4", md5(b"x"));
        let Choice::Values(told) = choose(&object(size, &etag, Some(5 * MIB))) else {
            panic!("a value")
        };
        let five = Layout::S3(PartSize::new(5 * MIB).unwrap());
        assert_eq!(told.layouts(), [five]);
        let Choice::Values(guessed) = choose(&object(size, &etag, None)) else {
            panic!("values")
        };
        let expected = Root::parse(&etag, 16).unwrap();
        assert_eq!(
            guessed.layouts(),
            Layout::S3(PartSize::DEFAULT).size_guesses(size, &expected)
        );
        assert!(guessed.layouts().len() > 1 && guessed.expected == expected);
    }

    #[test]
    fn two_objects_are_compared_by_the_cheapest_value_both_stores_report() {
        let mut a = object(1, &md5(b"x"), None);
        let mut b = object(1, &md5(b"x"), None);
        a.checksums = vec![
            full(Algorithm::Crc32, b"x"),
            full(Algorithm::Crc64Nvme, b"x"),
        ];
        b.checksums = vec![full(Algorithm::Crc32, b"y")];
        let (mine, theirs) = common(&a, &b).unwrap();
        assert_eq!(
            mine.algorithm,
            Algorithm::Crc32,
            "CRC64NVME is only on one side"
        );
        assert_ne!(mine.expected, theirs.expected);
        b.checksums.clear();
        b.etag = Some(format!("{}-1", md5(b"x")));
        b.parts = Some(Parts {
            count: 1,
            first: Some(1),
            last: None,
            sizes: Vec::new(),
        });
        assert_eq!(
            common(&a, &b),
            None,
            "a single upload's MD5 and a one-part ETag"
        );
    }

    #[test]
    fn an_sse_kms_etag_without_a_checksum_is_unverifiable_and_says_why() {
        let mut kms = object(1, &md5(b"x"), None);
        kms.encryption = Some("aws:kms".into());
        match choose(&kms) {
            Choice::Unverifiable(why) => assert!(why.contains("aws:kms"), "{why}"),
            other => panic!("{other:?}"),
        }
        // With a checksum beside it, that checksum vouches.
        kms.checksums = vec![full(Algorithm::Crc32c, b"x")];
        assert!(matches!(choose(&kms), Choice::Values(_)));
    }
}
