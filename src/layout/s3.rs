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

use super::flat::{Cut, Flat};
use super::{Encoding, LayoutError, LeafSize, NoRoot};
use crate::algorithm::Algorithm;

/// A part size S3 accepts: 5 MiB to 5 GiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PartSize(LeafSize);

impl PartSize {
    /// The smallest part S3 accepts (but for the last one): 5 MiB.
    pub const MIN: u64 = crate::source::remote::SMALLEST_PART;
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

/// The sizes of an upload's parts one by one, for an object whose parts differ in size (a
/// client of its own, a part uploaded again with other bytes), which no [`PartSize`] gives.
/// The store tells each part's size (`HEAD` with `partNumber=k`); `mtsum --stored` writes
/// them into the line so that `-c` cuts the local file where the object was cut.
///
/// Written run-length, each size in its shortest exact spelling and `xCOUNT` after a size
/// repeated: `5M,7M,5M,1`, `8Mx1000,3M`. The bytes are cut into parts of these sizes in
/// turn; bytes past them all (a file longer than the object) are one part more, and a file
/// shorter ends in a shorter part: the value of any other file is some other value, never
/// an error. As for [`PartSize`], a file shorter than the first part was a single upload.
///
/// S3's rules hold: 1 to 10 000 parts, each at most 5 GiB and all but the last at least
/// 5 MiB. The list is kept once per process, whatever the number of layouts naming it, so
/// that a layout stays a small value to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PartList(&'static [(u64, u64)]);

impl PartList {
    /// The parts of these sizes, in order, if S3 allows them.
    pub fn new(sizes: &[u64]) -> Result<PartList, LayoutError> {
        let bad = |why: String| Err(LayoutError::PartList(why));
        let count = sizes.len() as u64;
        if count == 0 || count > PartSize::MAX_PARTS {
            return bad(format!("{count} parts; S3 takes 1 to 10000"));
        }
        for (i, &size) in sizes.iter().enumerate() {
            let least = if i + 1 == sizes.len() {
                1
            } else {
                PartSize::MIN
            };
            if size < least || size > PartSize::MAX {
                let shown = LeafSize::new(size).map_or("0".into(), |s| s.to_string());
                return bad(format!(
                    "part {} of {count} is {shown}; S3 parts are 5M to 5G, the last at least 1 byte",
                    i + 1
                ));
            }
        }
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for &size in sizes {
            match runs.last_mut() {
                Some((s, n)) if *s == size => *n += 1,
                _ => runs.push((size, 1)),
            }
        }
        Ok(PartList(intern(runs)))
    }

    /// Each part's size, in order.
    pub fn sizes(self) -> impl Iterator<Item = u64> {
        self.0
            .iter()
            .flat_map(|&(size, n)| std::iter::repeat_n(size, n as usize))
    }

    /// Whether `s` is written as a list of parts (`5M,1`, `8Mx3`) rather than one size: a
    /// comma, or a count after `x`.
    pub fn is_list(s: &str) -> bool {
        let count = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
        s.contains(',')
            || s.split_once(['x', 'X'])
                .is_some_and(|(_, n)| count(n.trim()))
    }

    /// The size of part `index` (from 0), if there is one.
    pub fn size_of(self, mut index: u64) -> Option<u64> {
        for &(size, n) in self.0 {
            if index < n {
                return Some(size);
            }
            index -= n;
        }
        None
    }

    /// The number of parts.
    pub fn count(self) -> u64 {
        self.0.iter().map(|&(_, n)| n).sum()
    }

    /// The bytes of all the parts: the size of the object they were read from.
    pub fn total(self) -> u64 {
        self.0.iter().map(|&(size, n)| size * n).sum()
    }

    /// The first part's size.
    pub fn first(self) -> u64 {
        self.0[0].0
    }
}

/// The one copy of `runs` in this process: a list of parts is made once per object whose
/// parts differ, and named by every layout and value of that object.
fn intern(runs: Vec<(u64, u64)>) -> &'static [(u64, u64)] {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    static LISTS: Mutex<BTreeSet<&'static [(u64, u64)]>> = Mutex::new(BTreeSet::new());
    let mut lists = LISTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = lists.get(&runs[..]) {
        return known;
    }
    let kept: &'static [(u64, u64)] = Vec::leak(runs);
    lists.insert(kept);
    kept
}

impl fmt::Display for PartList {
    /// `5M,7M,5M,1`, `8Mx1000,3M`; one part is `8Mx1`, as `8M` is a part size.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one = self.count() == 1;
        for (i, &(size, n)) in self.0.iter().enumerate() {
            let size = LeafSize::new(size).expect("parts are at least 1 byte");
            let sep = if i == 0 { "" } else { "," };
            match n {
                1 if !one => write!(f, "{sep}{size}")?,
                _ => write!(f, "{sep}{size}x{n}")?,
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for PartList {
    type Err = String;

    /// `5M,7M,5M,1`, `8Mx1000,3M`: sizes as `--part-size` takes them, comma-separated, a
    /// size followed by `xN` standing for N parts of that size.
    fn from_str(s: &str) -> Result<PartList, String> {
        let mut sizes = Vec::new();
        for item in s.split(',') {
            let (size, n) = match item.trim().split_once(['x', 'X']) {
                Some((size, n)) => (size, n.trim().parse::<u64>().ok().filter(|&n| n > 0)),
                None => (item, Some(1)),
            };
            let n = n.filter(|&n| n <= PartSize::MAX_PARTS).ok_or_else(|| {
                format!("invalid part sizes '{s}': a count after x is 1 to 10000")
            })?;
            let size = LeafSize::parse_as(size, "part size").map_err(|e| e.to_string())?;
            if sizes.len() as u64 + n > PartSize::MAX_PARTS {
                return Err(format!(
                    "invalid part sizes '{s}': more than S3's 10000 parts"
                ));
            }
            sizes.extend(std::iter::repeat_n(size.get(), n as usize));
        }
        PartList::new(&sizes).map_err(|e| match e {
            LayoutError::PartList(why) => format!("invalid part sizes '{s}': {why}"),
            e => e.to_string(),
        })
    }
}

/// The flat shape of parts of `part` bytes, S3's way: one part is a single upload.
pub(super) fn shape(part: PartSize) -> Flat {
    Flat {
        cut: Cut::Every(part.get()),
        single_part_is_plain: true,
        count_suffix: true,
    }
}

/// The flat shape of parts of the listed sizes, S3's way.
pub(super) fn listed_shape(parts: PartList) -> Flat {
    Flat {
        cut: Cut::Listed(parts),
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

    const MIB: u64 = 1 << 20;

    #[test]
    fn a_list_of_parts_is_written_run_length_and_read_back() {
        let list = PartList::new(&[5 * MIB, 7 * MIB, 5 * MIB, 1]).unwrap();
        assert_eq!(list.to_string(), "5M,7M,5M,1");
        assert_eq!((list.count(), list.total()), (4, 17 * MIB + 1));
        let runs = PartList::new(&[8 * MIB, 8 * MIB, 8 * MIB, 3 * MIB]).unwrap();
        assert_eq!(runs.to_string(), "8Mx3,3M");
        assert_eq!(runs.size_of(2), Some(8 * MIB));
        assert_eq!(runs.size_of(3), Some(3 * MIB));
        assert_eq!(runs.size_of(4), None);
        // One part says its count, since a bare size is a part size.
        assert_eq!(PartList::new(&[6 * MIB]).unwrap().to_string(), "6Mx1");
        for list in [list, runs, PartList::new(&[6 * MIB]).unwrap()] {
            assert_eq!(list.to_string().parse::<PartList>(), Ok(list));
        }
        assert_eq!(
            "5MiB, 5242880 ,7mx1,1"
                .parse::<PartList>()
                .unwrap()
                .to_string(),
            "5Mx2,7M,1"
        );
        // Made once: two lists of the same parts are one.
        let again = PartList::new(&[5 * MIB, 7 * MIB, 5 * MIB, 1]).unwrap();
        assert!(std::ptr::eq(list.0, again.0));
    }

    #[test]
    fn a_list_of_parts_s3_would_not_take_is_refused() {
        for (sizes, why) in [
            (&[][..], "0 parts"),
            (&[4 * MIB, 5 * MIB][..], "part 1 of 2 is 4M"),
            (&[5 * MIB, 0][..], "part 2 of 2 is 0"),
            (&[PartSize::MAX + 1][..], "part 1 of 1"),
        ] {
            let e = PartList::new(sizes).unwrap_err().to_string();
            assert!(
                e.starts_with("invalid part sizes: ") && e.contains(why),
                "{e}"
            );
        }
        assert!(PartList::new(&vec![5 * MIB; 10_001]).is_err());
        for bad in ["5M,,1", "5Mx0", "5Mx", "5Mx10001", "4M,1", "5M,x3"] {
            let e = bad.parse::<PartList>().unwrap_err();
            assert!(
                e.contains(bad) || e.contains("invalid part size"),
                "{bad}: {e}"
            );
        }
    }

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
