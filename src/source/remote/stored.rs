//! What a store already holds about its objects, read without their bytes: for each object
//! below a prefix its size, its ETag, the checksums it keeps (`x-amz-checksum-*`, asked for
//! with `x-amz-checksum-mode: ENABLED`) and, for an object uploaded in parts, the sizes of
//! its parts, which S3 does not keep in the ETag but tells part by part (`HEAD` with
//! `partNumber=N`: that part's `Content-Length`, and `x-amz-mp-parts-count`).
//!
//! These are the store's words, kept as it said them; what each is worth for checking a copy
//! (which layout, algorithm and part size reproduce it, or why none does) is decided above
//! the layouts, by [`crate::stored`].

use std::fmt;

use super::Url;
use crate::algorithm::Algorithm;

/// What a store reports for one object below a prefix ([`super::list_stored`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredObject {
    /// The key relative to the prefix: the path a local copy of the prefix has it at.
    pub name: String,
    /// The object itself.
    pub url: Url,
    /// Its size in bytes.
    pub size: u64,
    /// Its ETag without the quotes (`<hex>` or `<hex>-N`), if the store sent one.
    pub etag: Option<String>,
    /// Its server-side encryption where that makes the ETag no MD5 of the bytes: `aws:kms`,
    /// `aws:kms:dsse` (`x-amz-server-side-encryption`), or `SSE-C` for keys the client
    /// provides. `None` for plain objects and for `AES256` (SSE-S3), whose ETags are MD5s.
    pub encryption: Option<String>,
    /// The checksums the store keeps, in the order of [`CHECKSUM_ALGORITHMS`].
    pub checksums: Vec<StoredChecksum>,
    /// For an object uploaded in parts, what the store says of them; `None` for a single
    /// upload (an ETag without `-N`).
    pub parts: Option<Parts>,
}

#[cfg(test)]
impl StoredObject {
    /// An object `f` of `size` bytes with only an ETag, its first part `first_part` bytes if
    /// the ETag names parts: what the tests of the values' meaning start from.
    pub(crate) fn with_etag(size: u64, etag: &str, first_part: Option<u64>) -> StoredObject {
        StoredObject {
            name: "f".into(),
            url: Url::parse("s3://b/f").expect("a valid URL"),
            size,
            etag: Some(etag.into()),
            encryption: None,
            checksums: Vec::new(),
            parts: etag_parts(etag).map(|count| Parts {
                count,
                first: first_part,
                last: None,
                sizes: Vec::new(),
            }),
        }
    }
}

/// [`StoredObject::encryption`] of an object encrypted with a key the client provides
/// (SSE-C). S3 answers a `HEAD` of such an object without the key with a bare 400, so that
/// all that is known of it is what the listing said: its key and size.
pub const CUSTOMER_KEY: &str = "SSE-C";

/// The algorithms of S3's `x-amz-checksum-*` headers, in the order they are read.
pub const CHECKSUM_ALGORITHMS: [Algorithm; 5] = [
    Algorithm::Crc64Nvme,
    Algorithm::Crc32c,
    Algorithm::Crc32,
    Algorithm::Sha256,
    Algorithm::Sha1,
];

/// One `x-amz-checksum-<algorithm>` of an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredChecksum {
    pub algorithm: Algorithm,
    /// `x-amz-checksum-type`. When the store sends none (S3 before 2025, some servers):
    /// composite if the value carries a part count (`-N`), full-object for an object
    /// uploaded in one request, else `None`: a value of a multipart object that could be
    /// either (moto writes its composite values so).
    pub kind: Option<ChecksumKind>,
    /// The value as the header carried it: base64, with `-N` for a composite one.
    pub value: String,
}

/// What a checksum covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumKind {
    /// `FULL_OBJECT`: the checksum of the object's bytes, whoever cut them into parts.
    FullObject,
    /// `COMPOSITE`: the checksum of the parts' checksums, `base64(H(H(part 1) ‖ …))-N`.
    Composite,
}

impl fmt::Display for ChecksumKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChecksumKind::FullObject => "FULL_OBJECT",
            ChecksumKind::Composite => "COMPOSITE",
        })
    }
}

/// The parts of an object uploaded in parts, as the store told them.
///
/// A `HEAD` with `partNumber=k` gives part k's size (and the count). Two of them tell most
/// objects: `partNumber=1` the first part's size, and for three parts or more `partNumber=N`
/// the last one's. Parts of one size but the last (every client's way) are then known
/// exactly: the first part's size is the part size, and the last part's size and the count
/// must follow from it and the object's size ([`Parts::part_size`]). Parts that break that
/// rule certainly differ, and each part's size is asked ([`Parts::sizes`]).
///
/// Parts that keep to it may still differ in the middle (5, 7, 3, 5 MiB as if of 5 MiB),
/// but only from four parts on and with a first part larger than S3's smallest, 5 MiB: the
/// middle parts add up to (N − 2) × the first, and no part but the last is smaller than
/// 5 MiB, so with a first part of 5 MiB they are all 5 MiB ([`Parts::may_differ_inside`]).
/// No client uploads so; asked to be sure, each part's size is asked there too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parts {
    /// The part count (`x-amz-mp-parts-count`, or the ETag's `-N`).
    pub count: u64,
    /// The first part's size, if the store answered `partNumber=1` (of one part: the
    /// object's size, asked of no one).
    pub first: Option<u64>,
    /// The last part's size, where it was asked for (three parts or more) or follows from
    /// the size and the first part (two).
    pub last: Option<u64>,
    /// Every part's size in order, where each was asked: empty, or `count` sizes.
    pub sizes: Vec<u64>,
}

/// The smallest part S3 accepts, but for the last: 5 MiB (`mtsum::layout::PartSize::MIN`).
pub const SMALLEST_PART: u64 = 5 << 20;

impl Parts {
    /// The size of every part but the last, if the parts have one (see [`Parts`]) and the
    /// store told it: the part size that gives the object's multipart values.
    pub fn part_size(&self, size: u64) -> Option<u64> {
        let first = self.first?;
        if self.count <= 1 {
            return Some(first);
        }
        if let [before @ .., last] = &self.sizes[..] {
            let regular = before.iter().all(|&s| s == first) && *last <= first;
            return (regular && self.sizes.iter().sum::<u64>() == size).then_some(first);
        }
        let before_last = first.checked_mul(self.count - 1)?;
        let last = size.checked_sub(before_last)?;
        let fits = last > 0 && last <= first && self.last.is_none_or(|l| l == last);
        fits.then_some(first)
    }

    /// Whether parts that keep to one part size ([`Parts::part_size`]) may still differ in
    /// the middle, unseen: four parts or more, the first larger than [`SMALLEST_PART`],
    /// and not every size asked.
    pub fn may_differ_inside(&self) -> bool {
        self.count >= 4 && self.first.is_some_and(|f| f > SMALLEST_PART) && self.sizes.is_empty()
    }
}

/// What a checksum `value` covers, from `x-amz-checksum-type` (`header`) or else from the
/// value and whether the object was uploaded in parts (see [`StoredChecksum::kind`]).
#[cfg_attr(not(feature = "remote"), allow(dead_code))]
pub(super) fn checksum_kind(
    header: Option<&str>,
    value: &str,
    multipart: bool,
) -> Option<ChecksumKind> {
    match header {
        Some(t) if t.eq_ignore_ascii_case("COMPOSITE") => Some(ChecksumKind::Composite),
        Some(t) if t.eq_ignore_ascii_case("FULL_OBJECT") => Some(ChecksumKind::FullObject),
        _ if value.contains('-') => Some(ChecksumKind::Composite),
        _ if !multipart => Some(ChecksumKind::FullObject),
        _ => None,
    }
}

/// The part count of an ETag `<hex>-N`, if it has one.
pub fn etag_parts(etag: &str) -> Option<u64> {
    let (_, n) = etag.rsplit_once('-')?;
    n.parse().ok().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn parts(count: u64, first: u64, last: Option<u64>) -> Parts {
        Parts {
            count,
            first: Some(first),
            last,
            sizes: Vec::new(),
        }
    }

    #[test]
    fn parts_of_one_size_but_the_last_have_that_part_size() {
        assert_eq!(parts(2, 5 * MIB, None).part_size(9 * MIB), Some(5 * MIB));
        assert_eq!(parts(2, 5 * MIB, None).part_size(10 * MIB), Some(5 * MIB));
        assert_eq!(
            parts(3, 8 * MIB, Some(MIB)).part_size(17 * MIB),
            Some(8 * MIB)
        );
        // One part: the object is the part, whatever its size.
        assert_eq!(parts(1, 3, None).part_size(3), Some(3));
    }

    #[test]
    fn parts_that_differ_have_no_part_size() {
        // A last part longer than the first.
        assert_eq!(parts(2, 5 * MIB, None).part_size(11 * MIB), None);
        // 6, 5, 5 MiB: the count fits 6 MiB parts, the last part does not (4 MiB).
        assert_eq!(parts(3, 6 * MIB, Some(5 * MIB)).part_size(16 * MIB), None);
        // 5, 6, 5 MiB: 16 MiB would be four parts of 5 MiB.
        assert_eq!(parts(3, 5 * MIB, Some(5 * MIB)).part_size(16 * MIB), None);
        // No answer to partNumber=1: unknown.
        let unknown = Parts {
            count: 2,
            first: None,
            last: None,
            sizes: Vec::new(),
        };
        assert_eq!(unknown.part_size(9 * MIB), None);
    }

    #[test]
    fn every_part_told_settles_what_the_first_and_last_cannot() {
        // 6, 7, 5, 6 MiB: the count and the last part fit 6 MiB parts.
        let mut p = parts(4, 6 * MIB, Some(6 * MIB));
        assert_eq!(p.part_size(24 * MIB), Some(6 * MIB));
        assert!(p.may_differ_inside());
        p.sizes = vec![6 * MIB, 7 * MIB, 5 * MIB, 6 * MIB];
        assert_eq!(p.part_size(24 * MIB), None);
        assert!(!p.may_differ_inside());
        p.sizes = vec![6 * MIB, 6 * MIB, 6 * MIB, 6 * MIB];
        assert_eq!(p.part_size(24 * MIB), Some(6 * MIB));
    }

    #[test]
    fn parts_that_fit_hide_nothing_below_four_or_from_a_first_of_5_mib() {
        // Three parts: the middle one is what the first and the last leave.
        assert!(!parts(3, 8 * MIB, Some(MIB)).may_differ_inside());
        // The middle parts are at least 5 MiB each and add up to 5 MiB each.
        assert!(!parts(5, 5 * MIB, Some(1)).may_differ_inside());
        assert!(parts(5, 8 * MIB, Some(1)).may_differ_inside());
    }

    #[test]
    fn a_checksum_without_a_type_is_composite_if_it_has_a_count() {
        use ChecksumKind::*;
        assert_eq!(checksum_kind(None, "NhCmhg==-2", true), Some(Composite));
        // A single upload has only its full object's checksum.
        assert_eq!(checksum_kind(None, "NhCmhg==", false), Some(FullObject));
        // A multipart object's value without a count could be either.
        assert_eq!(checksum_kind(None, "NhCmhg==", true), None);
        assert_eq!(
            checksum_kind(Some("FULL_OBJECT"), "x", true),
            Some(FullObject)
        );
        assert_eq!(
            checksum_kind(Some("COMPOSITE"), "x", false),
            Some(Composite)
        );
    }

    #[test]
    fn an_etag_has_a_count_after_a_dash() {
        assert_eq!(etag_parts("f77dc0eecdebcd774a2a22cb393ad2ff-2"), Some(2));
        assert_eq!(etag_parts("f77dc0eecdebcd774a2a22cb393ad2ff"), None);
        assert_eq!(etag_parts("x-0"), None);
    }
}
