//! Amazon S3's values for an object uploaded in parts: the multipart ETag (MD5) and the
//! COMPOSITE checksums (CRC32, CRC32C, SHA-1, SHA-256), both `H(H(part 1) ‖ … ‖ H(part N))`
//! over the raw part digests, followed by `-N`; the ETag is printed in hex, the checksums in
//! base64 as S3's headers carry them. An object no larger than one part was uploaded in one
//! request: its value is the plain digest, without a count.
//!
//! S3 does not store the part size, only the count; the size is the uploading client's
//! choice (the AWS CLI's is 8 MiB, doubled until the parts are at most 10 000). S3 allows
//! parts of 5 MiB to 5 GiB (the last one shorter) and at most 10 000 of them.
//!
//! CRC64NVME has no composite value: S3 stores it for the full object only, which is
//! `-t plain -a crc64nvme` (as are the FULL_OBJECT CRC32 and CRC32C). An ETag is not an MD5
//! at all for objects encrypted with SSE-KMS.

use std::fmt;

use super::flat::Flat;
use super::{Encoding, LayoutError, LeafSize, NoRoot};
use crate::algorithm::Algorithm;

/// A part size S3 accepts: 5 MiB to 5 GiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PartSize(LeafSize);

impl PartSize {
    /// The smallest part S3 accepts (but for the last one): 5 MiB.
    pub const MIN: u64 = 5 << 20;
    /// The largest part S3 accepts: 5 GiB.
    pub const MAX: u64 = 5 << 30;
    /// The most parts an upload may have.
    pub const MAX_PARTS: u64 = 10_000;
    /// The AWS CLI's chunk size and multipart threshold: 8 MiB.
    pub const DEFAULT: PartSize = PartSize(LeafSize::new(8 << 20).unwrap());

    /// A part size of `bytes`, if S3 accepts it.
    pub fn new(bytes: u64) -> Result<PartSize, LayoutError> {
        let size = LeafSize::new(bytes).ok_or(LayoutError::PartSize(
            LeafSize::DEFAULT,
            "S3 parts are 5 MiB to 5 GiB",
        ))?;
        PartSize::try_from(size)
    }

    /// The size in bytes.
    pub fn get(self) -> u64 {
        self.0.get()
    }

    /// The number of parts of an object of `n` bytes (1 for an empty one).
    pub fn parts(self, n: u64) -> u64 {
        n.div_ceil(self.get()).max(1)
    }

    /// The part size the AWS CLI chooses for an object of `n` bytes: 8 MiB, doubled until
    /// the object has at most 10 000 parts.
    pub fn aws_cli(n: u64) -> PartSize {
        let mut size = PartSize::DEFAULT.get();
        while n.div_ceil(size) > Self::MAX_PARTS && size < Self::MAX {
            size *= 2;
        }
        PartSize::new(size.min(Self::MAX)).expect("within S3's limits")
    }

    /// Whether an object of `n` bytes fits in 10 000 parts of this size.
    pub fn check(self, n: u64) -> Result<(), NoRoot> {
        let parts = self.parts(n);
        if parts <= Self::MAX_PARTS {
            return Ok(());
        }
        Err(NoRoot::TooManyParts {
            parts,
            part_size: self.0,
            suggestion: PartSize::aws_cli(n).0,
        })
    }

    /// The part sizes worth trying for an object of `n` bytes whose S3 value has `parts`
    /// parts: those of common clients (the AWS CLI's 8 MiB and its doubling, 5 MiB of most
    /// SDKs, s3cmd's 15 MiB, 16 MiB, 64 MiB, 100 MiB, 1 GiB), then of all the sizes S3 accepts
    /// that give exactly `parts` parts the powers of two of MiB, every whole MiB and every
    /// whole MB, each once, in that order, at most [`PartSize::MAX_GUESSES`] in all.
    ///
    /// A value of one part (`None`, a single upload, or `Some(1)`, a multipart upload of one
    /// part) is the same for every size of at least `n` bytes: one size is returned, a
    /// client's if one is large enough, else `n` rounded up to whole MiB (a single upload of
    /// up to 5 GiB). None for an empty object, whose value no size changes, nor for a count S3
    /// never gives (0, more than 10 000) or that no size gives `n` bytes.
    ///
    /// The sizes that give `count` parts are those from `n / count` to `(n - 1) / (count - 1)`;
    /// clamped to S3's 5 MiB to 5 GiB, that is up to a few thousand whole MiB and MB (few for
    /// a value of many parts, where the range is narrow), of which the smallest are tried.
    pub fn candidates(n: u64, parts: Option<u64>) -> Vec<PartSize> {
        const MIB: u64 = 1 << 20;
        const MB: u64 = 1_000_000;
        let count = parts.unwrap_or(1);
        if n == 0 || count == 0 || count > Self::MAX_PARTS {
            return Vec::new();
        }
        let clients = [5, 8, 15, 16, 64, 100, 1024].map(|m| m * MIB);
        let clients = std::iter::once(PartSize::aws_cli(n).get()).chain(clients);
        // One part: any size of at least the file's; `n` in whole MiB where no client's is.
        let single = (count == 1).then(|| {
            n.div_ceil(MIB)
                .saturating_mul(MIB)
                .clamp(Self::MIN, Self::MAX)
        });
        // Sizes p with ceil(n / p) = count: n / count <= p < n / (count - 1).
        let range = (count > 1).then(|| {
            let low = n.div_ceil(count).max(Self::MIN);
            let high = ((n - 1) / (count - 1)).min(Self::MAX);
            (low, high)
        });
        let whole = |unit: u64| {
            range.into_iter().flat_map(move |(low, high)| {
                (low.div_ceil(unit)..=high / unit).map(move |k| k * unit)
            })
        };
        let sizes = clients
            .chain(single)
            .chain(whole(MIB).filter(|s| (s / MIB).is_power_of_two()))
            .chain(whole(MIB))
            .chain(whole(MB));
        let most = match count {
            1 => 1,
            _ => Self::MAX_GUESSES,
        };
        let mut out: Vec<PartSize> = Vec::new();
        for size in sizes {
            let Ok(size) = PartSize::new(size) else {
                continue;
            };
            if size.parts(n) == count && !out.contains(&size) {
                out.push(size);
                if out.len() == most {
                    break;
                }
            }
        }
        out
    }

    /// The most part sizes [`PartSize::candidates`] gives: each is an MD5 of the whole file
    /// by `-c --part-size auto` (all in one read, a hasher each per job read in flight), all
    /// of them whatever matches, and a value of two parts of a
    /// 1 GiB file allows a thousand whole-MiB and whole-MB sizes. The clients' sizes and the
    /// powers of two come first; a file uploaded in parts of another size needs its size
    /// named.
    pub const MAX_GUESSES: usize = 16;
}

impl TryFrom<LeafSize> for PartSize {
    type Error = LayoutError;

    fn try_from(size: LeafSize) -> Result<PartSize, LayoutError> {
        match size.get() {
            b if b < Self::MIN => Err(LayoutError::PartSize(size, "S3 parts are at least 5 MiB")),
            b if b > Self::MAX => Err(LayoutError::PartSize(size, "S3 parts are at most 5 GiB")),
            _ => Ok(PartSize(size)),
        }
    }
}

impl From<PartSize> for LeafSize {
    fn from(part: PartSize) -> LeafSize {
        part.0
    }
}

impl fmt::Display for PartSize {
    /// The shortest exact spelling: `8M`, `5G`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The flat shape of parts of `part` bytes, S3's way: one part is a single upload.
pub(super) fn shape(part: PartSize) -> Flat {
    Flat {
        part: part.get(),
        single_part_is_plain: true,
        count_suffix: true,
    }
}

/// The algorithms S3 computes multipart values with.
pub(super) fn check_algorithm(alg: Algorithm) -> Result<(), LayoutError> {
    use Algorithm::*;
    match alg {
        Md5 | Crc32 | Crc32c | Sha1 | Sha256 => Ok(()),
        Crc64Nvme => Err(LayoutError::FullObjectOnly(alg)),
        _ => Err(LayoutError::Algorithm {
            layout: "s3",
            alg,
            allowed: "md5 (the ETag), crc32, crc32c, sha1 and sha256 (composite checksums)",
        }),
    }
}

/// The ETag is hex; the checksums are base64, as S3 returns them.
pub(super) fn encoding(alg: Algorithm) -> Encoding {
    match alg {
        Algorithm::Md5 => Encoding::Hex,
        _ => Encoding::Base64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_sizes_outside_s3_limits_are_refused() {
        assert!(PartSize::new(PartSize::MIN - 1).is_err());
        assert!(PartSize::new(0).is_err());
        assert!(PartSize::new(PartSize::MAX + 1).is_err());
        assert!(PartSize::new(PartSize::MIN).is_ok());
        assert!(PartSize::new(PartSize::MAX).is_ok());
    }

    #[test]
    fn the_aws_cli_doubles_its_chunk_until_ten_thousand_parts() {
        let mib = 1 << 20;
        assert_eq!(PartSize::aws_cli(0).get(), 8 * mib);
        assert_eq!(PartSize::aws_cli(10_000 * 8 * mib).get(), 8 * mib);
        assert_eq!(PartSize::aws_cli(10_000 * 8 * mib + 1).get(), 16 * mib);
        assert!(PartSize::aws_cli(u64::MAX).get() <= PartSize::MAX);
    }

    #[test]
    fn more_than_ten_thousand_parts_have_no_value() {
        let min = PartSize::new(PartSize::MIN).unwrap();
        assert!(min.check(10_000 * PartSize::MIN).is_ok());
        let e = min.check(10_000 * PartSize::MIN + 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "10001 parts of 5M, more than S3's 10000; use --part-size 8M (what the AWS CLI would choose)"
        );
    }

    #[test]
    fn candidates_give_the_part_count_asked_for() {
        let mib = 1 << 20;
        let n = 100 * mib + 1;
        let c = PartSize::candidates(n, Some(13));
        assert_eq!(c.first().map(|p| p.get()), Some(8 * mib));
        assert!(c.iter().all(|p| p.parts(n) == 13));
        // s3cmd's 15 MiB gives 7 parts; whole MB sizes fill the gaps between clients.
        assert_eq!(
            PartSize::candidates(n, Some(7))[0].get(),
            15 * mib,
            "{:?}",
            PartSize::candidates(n, Some(7))
        );
        // 18 parts: no client's size, no whole MiB, but 6 MB.
        assert_eq!(
            PartSize::candidates(n, Some(18))
                .iter()
                .map(|p| p.get())
                .collect::<Vec<_>>(),
            [6_000_000]
        );
        assert_eq!(PartSize::candidates(5 * mib, None), [PartSize::DEFAULT]);
    }

    #[test]
    fn candidates_include_every_whole_mib_and_mb_that_gives_the_count() {
        let mib: u64 = 1 << 20;
        for (n, part) in [
            (24 * mib + 7, 20 * mib),
            (16 * mib, 12 * mib),
            (10 * mib, 9 * mib),
            (10 * mib, 7_000_000),
            (100 * mib, 6_000_000),
        ] {
            let count = n.div_ceil(part);
            let c = PartSize::candidates(n, Some(count));
            assert!(c.iter().any(|p| p.get() == part), "{n} {part}: {c:?}");
            assert!(c.iter().all(|p| p.parts(n) == count));
        }
    }

    #[test]
    fn a_value_of_few_parts_of_a_large_file_is_tried_with_a_few_sizes_not_a_thousand() {
        let gib: u64 = 1 << 30;
        let c = PartSize::candidates(gib, Some(2));
        assert_eq!(c.len(), PartSize::MAX_GUESSES, "{c:?}");
        // No client's size gives two parts; of the powers of two, 512 MiB does, and comes first.
        assert_eq!(c[0].get(), gib / 2);
        assert!(c.iter().all(|p| p.parts(gib) == 2));
    }

    #[test]
    fn a_value_of_one_part_gets_one_size_of_at_least_the_file() {
        let mib: u64 = 1 << 20;
        for n in [1, 5 * mib, 9 * mib, (1 << 30) + 1, 3 << 30, PartSize::MAX] {
            for parts in [None, Some(1)] {
                let c = PartSize::candidates(n, parts);
                assert_eq!(c.len(), 1, "{n} {parts:?}");
                assert_eq!(c[0].parts(n), 1, "{n} {parts:?}");
            }
        }
        // More than 5 GiB was never a single upload.
        assert!(PartSize::candidates(PartSize::MAX + 1, None).is_empty());
    }

    #[test]
    fn no_candidates_for_an_empty_object_or_a_count_s3_never_gives() {
        for parts in [None, Some(0), Some(1), Some(2), Some(10_000)] {
            assert!(PartSize::candidates(0, parts).is_empty(), "{parts:?}");
        }
        let n = 100 << 20;
        assert!(PartSize::candidates(n, Some(0)).is_empty());
        assert!(PartSize::candidates(n, Some(10_001)).is_empty());
        assert!(PartSize::candidates(n, Some(u64::MAX)).is_empty());
        // Bounded by S3's part sizes, however large the object and few its parts.
        for (n, parts) in [(u64::MAX, 2), (u64::MAX, 10_000), (1 << 40, 2)] {
            let c = PartSize::candidates(n, Some(parts));
            assert!(c.iter().all(|p| p.parts(n) == parts), "{n} {parts}");
        }
    }

    #[test]
    fn candidates_walk_only_the_sizes_s3_accepts_whatever_the_object_and_count() {
        // An empty object of 2 or more parts wrapped `n - 1` around; a huge object of 2 parts
        // would walk its whole range of sizes. A hang fails after a generous wait.
        let cases = [
            (0, 2),
            (0, 10_000),
            (0, u64::MAX),
            (1, 2),
            (u64::MAX, 2),
            (u64::MAX, 3),
            (u64::MAX, u64::MAX),
            (1 << 62, 2),
            (10 * PartSize::MAX, 2),
        ];
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for (n, count) in cases {
                tx.send(PartSize::candidates(n, Some(count))).unwrap();
            }
        });
        for (n, count) in cases {
            let got = rx.recv_timeout(std::time::Duration::from_secs(60));
            let sizes = got.unwrap_or_else(|e| panic!("{n} bytes in {count} parts: {e}"));
            // None of them has that many parts of 5 MiB to 5 GiB.
            assert_eq!(sizes, [], "{n} bytes in {count} parts");
        }
    }
}
