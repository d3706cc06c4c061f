//! The extended-attribute store: one attribute per file, `user.mtsum`, holding a compact
//! binary record, and the attributes of cshatag read for migration.
//!
//! # The `user.mtsum` record, version 1
//!
//! ```text
//! offset  size  field
//!      0     1  version = 1
//!      1     1  algorithm: 1 md5, 2 sha1, 3 sha224, 4 sha256, 5 sha384, 6 sha512,
//!                          7 blake3, 8 xxh3, 9 xxh128, 10 crc32, 11 crc32c, 12 crc64nvme
//!      2     1  layout: 0 plain, 1 mtsum, 2 merkle, 3 rfc6962, 4 s3, 5 glacier, 6 dropbox,
//!                       7 btv2
//!      3     8  size in bytes, u64 little-endian
//!     11     8  mtime seconds since the epoch, i64 little-endian (st_mtim.tv_sec)
//!     19     4  mtime nanoseconds, u32 little-endian (st_mtim.tv_nsec, < 10^9)
//!     23   (8)  leaf size in bytes, u64 little-endian: merkle and rfc6962 only (the part
//!               size for s3)
//!   23/31     n  the digest, n = the algorithm's digest length
//!        (8)  the part count, u64 little-endian: only where an S3 value's count is not
//!               the one its size implies (an imported `-1` ETag); a record without it
//!               has that count (`Record::value_bytes`)
//! ```
//!
//! Version 2 is version 1 with one more field at the end, written only by audits that go by
//! verification times (`--max-age`, `--time-budget`):
//!
//! ```text
//!   end-8     8  when the file last matched the record: ns since the epoch, i64 little-endian
//! ```
//!
//! The default record is then 63 bytes, still inside an ext4 inode. Such an audit rewrites the
//! attribute of every file it verifies (a change of the file's ctime, never of its mtime or
//! content); audits without those options leave version 1 records as they are, and keep a
//! version 2 record version 2, with the time of this verification, wherever they verify or
//! rewrite it (`--migrate`, `--update`, `--fix`): the time once kept is never dropped.
//!
//! Why binary and this small: ext4 keeps extended attributes inside the inode when they fit
//! (with 256-byte inodes about 90 bytes remain for entries after the inode's own fields), and
//! an attribute that does not fit costs a whole extra 4 KiB block per file, read by every
//! audit. The default record (plain BLAKE3) is 55 bytes: with the 24-byte entry header of
//! `user.mtsum` it fits. Numbers are little-endian and fixed-width so that the record is read
//! without a parser; the version byte lets a later format coexist. Codes are assigned once and
//! never reused.
//!
//! # cshatag
//!
//! cshatag keeps `user.shatag.sha256` (64 hex digits: the plain SHA-256 of the file) and
//! `user.shatag.ts` (the mtime the digest belongs to, written `%010d.%09d`, seconds and
//! nanoseconds). They are read only where `user.mtsum` is absent, and never changed.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::algorithm::{Algorithm, Digest};
use crate::layout::{Layout, LeafSize, PartSize};
use crate::source::{InputError, Mtime, Stamp};

use super::Status;
use super::{Change, Entry, Prior, Record, RecordStore, StoreError};
use crate::audit::AuditError;

/// The attribute holding mtsum's record.
pub const ATTR: &str = "user.mtsum";
/// cshatag's digest attribute.
pub const CSHATAG_SHA256: &str = "user.shatag.sha256";
/// cshatag's timestamp attribute.
pub const CSHATAG_TS: &str = "user.shatag.ts";

const VERSION: u8 = 1;
/// Version 1 and the time of the last verification.
const VERSION_VERIFIED: u8 = 2;
/// Version, algorithm, layout, size, mtime seconds, mtime nanoseconds.
const FIXED_LEN: usize = 1 + 1 + 1 + 8 + 8 + 4;

/// The one-byte codes of the algorithms; 0 is never a valid code.
const ALGORITHM_CODES: [(Algorithm, u8); 12] = [
    (Algorithm::Md5, 1),
    (Algorithm::Sha1, 2),
    (Algorithm::Sha224, 3),
    (Algorithm::Sha256, 4),
    (Algorithm::Sha384, 5),
    (Algorithm::Sha512, 6),
    (Algorithm::Blake3, 7),
    (Algorithm::Xxh3, 8),
    (Algorithm::Xxh128, 9),
    (Algorithm::Crc32, 10),
    (Algorithm::Crc32c, 11),
    (Algorithm::Crc64Nvme, 12),
];

/// The binary form of `record` (see the [module documentation](self)).
pub fn encode(record: &Record) -> Vec<u8> {
    let alg = ALGORITHM_CODES
        .iter()
        .find(|(a, _)| *a == record.algorithm)
        .map(|(_, code)| *code)
        .expect("every algorithm has a code");
    let layout = match record.layout {
        Layout::Plain => 0,
        Layout::Mtsum => 1,
        Layout::Merkle(_) => 2,
        Layout::Rfc6962(_) => 3,
        Layout::S3(_) => 4,
        Layout::S3Parts(_) => {
            unreachable!("records of parts of different sizes are refused where records are made")
        }
        Layout::Glacier => 5,
        Layout::Dropbox => 6,
        Layout::Btv2 => 7,
    };
    let leaf = record.layout.size_parameter();
    let value = record.value_bytes();
    let mut out = Vec::with_capacity(FIXED_LEN + 8 + value.len());
    out.extend_from_slice(&[VERSION, alg, layout]);
    out.extend_from_slice(&record.stamp.len.to_le_bytes());
    out.extend_from_slice(&record.stamp.mtime.sec.to_le_bytes());
    out.extend_from_slice(&record.stamp.mtime.nsec.to_le_bytes());
    if let Some(leaf) = leaf {
        out.extend_from_slice(&leaf.get().to_le_bytes());
    }
    out.extend_from_slice(&value);
    out
}

/// The binary form of `record` with the time it was last verified (version 2).
pub fn encode_verified(record: &Record, verified: SystemTime) -> Vec<u8> {
    let mut out = encode(record);
    out[0] = VERSION_VERIFIED;
    out.extend_from_slice(&super::nanos(verified).to_le_bytes());
    out
}

/// Reads a record written by [`encode`] or [`encode_verified`]; the error says what is wrong
/// with it.
pub fn decode(bytes: &[u8]) -> Result<Record, String> {
    decode_entry(bytes).map(|(record, _)| record)
}

/// Reads a record and, from version 2, when it was last verified.
pub fn decode_entry(bytes: &[u8]) -> Result<(Record, Option<SystemTime>), String> {
    let version = *bytes.first().ok_or("empty")?;
    let (bytes, verified) = match version {
        VERSION => (bytes, None),
        VERSION_VERIFIED if bytes.len() >= FIXED_LEN + 8 => {
            let (record, time) = bytes.split_at(bytes.len() - 8);
            let nanos = i64::from_le_bytes(time.try_into().expect("8 bytes"));
            (record, Some(super::time(nanos)))
        }
        VERSION_VERIFIED => return Err(format!("{} bytes, too short", bytes.len())),
        _ => {
            return Err(format!(
                "record version {version}, this mtsum reads versions {VERSION} and {VERSION_VERIFIED}"
            ));
        }
    };
    if bytes.len() < FIXED_LEN {
        return Err(format!("{} bytes, too short", bytes.len()));
    }
    let algorithm = ALGORITHM_CODES
        .iter()
        .find(|(_, code)| *code == bytes[1])
        .map(|(a, _)| *a)
        .ok_or_else(|| format!("unknown algorithm code {}", bytes[1]))?;
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let size = u64_at(3);
    let sec = i64::from_le_bytes(bytes[11..19].try_into().expect("8 bytes"));
    let nsec = u32::from_le_bytes(bytes[19..23].try_into().expect("4 bytes"));
    let mtime = Mtime::new(sec, nsec).ok_or("nanoseconds out of range")?;
    let mut rest = &bytes[FIXED_LEN..];
    let mut leaf = || -> Result<LeafSize, String> {
        if rest.len() < 8 {
            return Err("leaf size missing".into());
        }
        let leaf = u64::from_le_bytes(rest[..8].try_into().expect("8 bytes"));
        rest = &rest[8..];
        LeafSize::new(leaf).ok_or_else(|| "leaf size 0".into())
    };
    let layout = match bytes[2] {
        0 => Layout::Plain,
        1 => Layout::Mtsum,
        2 => Layout::Merkle(leaf()?),
        3 => Layout::Rfc6962(leaf()?),
        4 => Layout::S3(PartSize::try_from(leaf()?).map_err(|e| e.to_string())?),
        5 => Layout::Glacier,
        6 => Layout::Dropbox,
        7 => Layout::Btv2,
        code => return Err(format!("unknown layout code {code}")),
    };
    let record = Record::from_value_bytes(layout, algorithm, Stamp::new(size, mtime), rest)?;
    Ok((record, verified))
}

/// What the attributes of `path` (symbolic links followed) say about it: our record, else
/// cshatag's, else nothing. An attribute that cannot be read is an error; one that can be
/// read but not understood is [`Prior::Unusable`].
pub fn read(path: &Path) -> io::Result<Prior> {
    read_entry(path).map(|entry| entry.prior)
}

/// [`read`], with the time of the last verification where the record keeps it.
pub fn read_entry(path: &Path) -> io::Result<Entry> {
    entry_of(path, xattr::get_deref(path, ATTR)?.as_deref())
}

/// The entry of `path` whose [`ATTR`] is `attr` (`None`: it has none, and cshatag's
/// attributes of `path` are read instead).
fn entry_of(path: &Path, attr: Option<&[u8]>) -> io::Result<Entry> {
    if let Some(bytes) = attr {
        return Ok(match decode_entry(bytes) {
            Ok((record, verified)) => Entry {
                verified,
                ..Entry::of(Prior::Record(record))
            },
            Err(why) => Entry::of(Prior::Unusable(format!("damaged record in {ATTR}: {why}"))),
        });
    }
    let Some(hex) = xattr::get_deref(path, CSHATAG_SHA256)? else {
        return Ok(Entry::of(Prior::None));
    };
    let ts = xattr::get_deref(path, CSHATAG_TS)?.unwrap_or_default();
    Ok(Entry::of(
        parse_cshatag(&hex, &ts).unwrap_or_else(Prior::Unusable),
    ))
}

/// cshatag's two attributes as a [`Prior::Cshatag`].
fn parse_cshatag(hex: &[u8], ts: &[u8]) -> Result<Prior, String> {
    let damaged = |what: &str| format!("damaged cshatag attribute {what}");
    let hex = std::str::from_utf8(hex).map_err(|_| damaged(CSHATAG_SHA256))?;
    let hex = hex.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\0');
    let digest = Digest::from_hex(hex)
        .filter(|d| d.as_bytes().len() == Algorithm::Sha256.digest_len())
        .filter(|_| hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| damaged(CSHATAG_SHA256))?;
    let ts = std::str::from_utf8(ts).map_err(|_| damaged(CSHATAG_TS))?;
    let ts = ts.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\0');
    let mtime = ts.parse::<Mtime>().map_err(|_| damaged(CSHATAG_TS))?;
    Ok(Prior::Cshatag { mtime, digest })
}

/// Stores `record` on `path` (symbolic links followed).
pub fn write(path: &Path, record: &Record) -> io::Result<()> {
    xattr::set_deref(path, ATTR, &encode(record))
}

/// Removes the record of `path`; `Ok(false)` when it had none.
pub fn remove(path: &Path) -> io::Result<bool> {
    match xattr::remove_deref(path, ATTR) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENODATA) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether `e` says that the file system has no user extended attributes at all (as opposed
/// to refusing this file or this user).
pub fn is_unsupported(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EOPNOTSUPP)
}

/// The records of the files themselves: read and written at once, nothing to finish.
pub struct XattrStore {
    /// Whether records carry the time of their last verification (version 2), for audits
    /// that go by it.
    keep_times: bool,
    /// The files looked up whose record carries that time, with the record, until their
    /// change is written: once a record carries it, every audit keeps it, and keeps it
    /// current (as the database does), or a `--migrate` or `--update` without `--max-age`
    /// would drop it and the next `--max-age` audit read again files verified seconds before.
    /// A file that checks out gets the record looked up again with the time of this
    /// verification, with no read of its path again.
    timed: HashMap<PathBuf, Record>,
}

impl XattrStore {
    /// A store whose records all carry the time of their last verification with
    /// `keep_times`, else only those that carry it already.
    pub fn new(keep_times: bool) -> XattrStore {
        XattrStore {
            keep_times,
            timed: HashMap::new(),
        }
    }
}

impl XattrStore {
    /// An I/O error of `path`'s attributes: the whole audit's when the file system has none.
    fn error(path: &Path, e: io::Error) -> StoreError {
        if is_unsupported(&e) {
            let path = path.to_path_buf();
            return StoreError::Fatal(AuditError::XattrUnsupported { path });
        }
        StoreError::File(InputError::Io(e))
    }

    /// The entry of `path` as `read` gave it, noting whether its record carries the time.
    fn looked_up(&mut self, path: &Path, read: io::Result<Entry>) -> Result<Entry, StoreError> {
        let entry = read.map_err(|e| XattrStore::error(path, e))?;
        if let (Some(_), false, Prior::Record(record)) =
            (entry.verified, self.keep_times, &entry.prior)
        {
            self.timed.insert(path.to_path_buf(), *record);
        }
        Ok(entry)
    }
}

impl RecordStore for XattrStore {
    fn describe(&self) -> String {
        "extended attributes".into()
    }

    fn lookup(&mut self, path: &Path) -> Result<Entry, StoreError> {
        self.looked_up(path, read_entry(path))
    }

    fn record_attribute(&self) -> Option<&'static str> {
        Some(ATTR)
    }

    fn lookup_read(&mut self, path: &Path, attr: Option<&[u8]>) -> Result<Entry, StoreError> {
        self.looked_up(path, entry_of(path, attr))
    }

    fn set(&mut self, path: &Path, change: Change) -> Result<(), StoreError> {
        let now = SystemTime::now();
        let looked_up = self.timed.remove(path);
        let timed = looked_up.is_some() || self.keep_times;
        let result = match change {
            Change::Set { record, .. } if timed => {
                xattr::set_deref(path, ATTR, &encode_verified(record, now))
            }
            // An imported record was never verified.
            Change::Set { record, .. } | Change::Import { record } => write(path, record),
            Change::Checked {
                status: Status::Ok, ..
            } if timed => {
                let record = match looked_up {
                    Some(record) => Ok(Some(record)),
                    None => read(path).map(|prior| match prior {
                        Prior::Record(record) => Some(record),
                        _ => None,
                    }),
                };
                match record {
                    Ok(Some(record)) => {
                        xattr::set_deref(path, ATTR, &encode_verified(&record, now))
                    }
                    Ok(None) => Ok(()),
                    Err(e) => Err(e),
                }
            }
            Change::Checked { .. } => Ok(()),
            Change::Remove => remove(path).map(|_| ()),
        };
        result.map_err(|e| XattrStore::error(path, e))
    }

    fn finish(&mut self) -> Result<bool, AuditError> {
        Ok(false)
    }

    fn records(&mut self) -> Result<Vec<(std::path::PathBuf, Record)>, AuditError> {
        Err(AuditError::Unsupported(
            "records in extended attributes cannot be listed without walking the files; audit with --manifest or --db to export them".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(layout: Layout, algorithm: Algorithm) -> Record {
        Record {
            layout,
            algorithm,
            stamp: Stamp::new(0x0102_0304_0506_0708, Mtime::new(-2, 999_999_999).unwrap()),
            value: algorithm.hash(b"x").into(),
        }
    }

    #[test]
    fn every_layout_and_algorithm_survives_the_round_trip() {
        let leaf = LeafSize::new(4096).unwrap();
        for alg in Algorithm::ALL {
            for layout in [
                Layout::Plain,
                Layout::Mtsum,
                Layout::Merkle(leaf),
                Layout::Rfc6962(leaf),
            ] {
                let r = record(layout, alg);
                assert_eq!(decode(&encode(&r)), Ok(r));
            }
        }
    }

    #[test]
    fn a_record_with_its_verification_time_survives_the_round_trip_and_fits_too() {
        let r = record(Layout::Plain, Algorithm::Blake3);
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(1_700_000_000_123_456_789);
        let bytes = encode_verified(&r, at);
        assert_eq!(bytes.len(), 63);
        assert!(16 + 8 + bytes.len().next_multiple_of(4) <= 88);
        assert_eq!(decode_entry(&bytes), Ok((r, Some(at))));
        assert_eq!(decode_entry(&encode(&r)), Ok((r, None)));
    }

    #[test]
    fn the_longest_record_fits_in_the_value_a_reader_reads_from_the_open_file() {
        // A longer one would be read by path again, on the audit's busiest thread.
        let leaf = LeafSize::new(4096).unwrap();
        let at = std::time::UNIX_EPOCH;
        let longest = (Algorithm::ALL.iter())
            .map(|&alg| encode_verified(&record(Layout::Merkle(leaf), alg), at).len())
            .max()
            .unwrap();
        // With an S3 value's part count besides.
        assert!(
            longest + 8 <= crate::source::XattrValue::CAPACITY,
            "{longest}"
        );
    }

    #[test]
    fn the_default_record_fits_in_an_ext4_inode() {
        // 55 bytes; the entry adds 16 bytes of header and the name `mtsum` padded to 8.
        let bytes = encode(&record(Layout::Plain, Algorithm::Blake3));
        assert_eq!(bytes.len(), 55);
        assert!(16 + 8 + bytes.len().next_multiple_of(4) <= 88);
    }

    #[test]
    fn the_layout_is_fixed_byte_for_byte() {
        let r = Record {
            layout: Layout::Plain,
            algorithm: Algorithm::Xxh3,
            stamp: Stamp::new(3, Mtime::new(1, 2).unwrap()),
            value: Digest::from_slice(&[0xaa; 8]).into(),
        };
        let mut want = vec![
            1, 8, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
        ];
        want.extend_from_slice(&[0xaa; 8]);
        assert_eq!(encode(&r), want);
    }

    #[test]
    fn damaged_records_say_what_is_wrong() {
        let good = encode(&record(Layout::Plain, Algorithm::Sha256));
        assert_eq!(decode(&[]).unwrap_err(), "empty");
        assert!(decode(&[3]).unwrap_err().contains("version 3"));
        assert!(decode(&[2]).unwrap_err().contains("too short"));
        assert!(decode(&good[..10]).unwrap_err().contains("too short"));
        assert!(
            decode(&good[..good.len() - 1])
                .unwrap_err()
                .contains("digest")
        );
        let mut bad = good.clone();
        bad[1] = 0;
        assert!(decode(&bad).unwrap_err().contains("algorithm code 0"));
        let mut bad = good.clone();
        bad[2] = 9;
        assert!(decode(&bad).unwrap_err().contains("layout code 9"));
        let mut bad = good;
        bad[19..23].copy_from_slice(&1_000_000_000u32.to_le_bytes());
        assert!(decode(&bad).unwrap_err().contains("nanoseconds"));
    }

    #[test]
    fn cshatag_attributes_read_as_a_plain_sha256_at_their_timestamp() {
        let hex = Algorithm::Sha256.hash(b"abc").to_hex();
        let prior = parse_cshatag(hex.as_bytes(), b"1700000000.000000042").unwrap();
        assert_eq!(
            prior,
            Prior::Cshatag {
                mtime: Mtime::new(1_700_000_000, 42).unwrap(),
                digest: Algorithm::Sha256.hash(b"abc"),
            }
        );
        assert!(parse_cshatag(b"abc", b"1.000000000").is_err());
        assert!(parse_cshatag(hex.as_bytes(), b"").is_err());
        assert!(parse_cshatag(hex.as_bytes(), b"yesterday").is_err());
    }

    #[test]
    fn only_eopnotsupp_means_no_user_attributes() {
        assert!(is_unsupported(&io::Error::from_raw_os_error(
            libc::EOPNOTSUPP
        )));
        assert!(!is_unsupported(&io::Error::from_raw_os_error(libc::EACCES)));
        assert!(!is_unsupported(&io::Error::from_raw_os_error(libc::EPERM)));
    }
}
