//! Stamps: the size and modification time that tell one version of a file from the next.

use std::fmt;
use std::os::unix::fs::MetadataExt;

/// A modification time as `stat` gives it: seconds since the epoch and nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mtime {
    pub sec: i64,
    /// Below 10⁹.
    pub nsec: u32,
}

impl Mtime {
    /// `None` when `nsec` is not below 10⁹.
    pub fn new(sec: i64, nsec: u32) -> Option<Mtime> {
        (nsec < 1_000_000_000).then_some(Mtime { sec, nsec })
    }

    /// The modification time of `meta`.
    pub fn of(meta: &std::fs::Metadata) -> Mtime {
        Mtime {
            sec: meta.mtime(),
            nsec: meta.mtime_nsec() as u32,
        }
    }

    /// Nanoseconds since the epoch.
    pub fn nanos(self) -> i128 {
        i128::from(self.sec) * 1_000_000_000 + i128::from(self.nsec)
    }
}

/// `SECONDS.NANOSECONDS` with nine digits after the point, as cshatag writes its timestamps
/// (`1700000000.000000042`; seconds may be negative, before 1970).
impl fmt::Display for Mtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}", self.sec, self.nsec)
    }
}

impl std::str::FromStr for Mtime {
    type Err = String;

    fn from_str(s: &str) -> Result<Mtime, String> {
        let bad = || format!("'{s}' is not a time SECONDS.NANOSECONDS");
        let (sec, nsec) = s.split_once('.').ok_or_else(bad)?;
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        if !digits(sec.strip_prefix('-').unwrap_or(sec)) || nsec.len() != 9 || !digits(nsec) {
            return Err(bad());
        }
        let sec = sec.parse().map_err(|_| bad())?;
        Mtime::new(sec, nsec.parse().map_err(|_| bad())?).ok_or_else(bad)
    }
}

/// The size and modification time of a file: what tells one version of a file from the next
/// without reading it. If either differs after hashing, the bytes we hashed may never have
/// existed together; if either differs from an audit record, the file was edited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stamp {
    /// Bytes.
    pub len: u64,
    pub mtime: Mtime,
}

impl Stamp {
    pub fn new(len: u64, mtime: Mtime) -> Stamp {
        Stamp { len, mtime }
    }

    /// The stamp of a regular file (for a block device `meta.len()` is 0: see
    /// [`SizedFile`](super::SizedFile), which measures it).
    pub fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp::new(meta.len(), Mtime::of(meta))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtimes_read_and_print_as_cshatag_writes_them() {
        assert_eq!(
            Mtime::new(1_700_000_000, 42).unwrap().to_string(),
            "1700000000.000000042"
        );
        assert_eq!(
            "0000000001.000000042".parse(),
            Mtime::new(1, 42).ok_or(String::new())
        );
        assert_eq!(
            "-1.500000000".parse(),
            Mtime::new(-1, 500_000_000).ok_or(String::new())
        );
        for bad in [
            "1",
            "1.5",
            "1.0000000000",
            "a.000000000",
            "1.-00000000",
            ".000000000",
        ] {
            assert!(bad.parse::<Mtime>().is_err(), "{bad}");
        }
    }
}
