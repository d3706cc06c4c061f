//! Sizes as users write them (`64`, `4K`, `1M`, `3G`): the leaf size of the fixed-leaf
//! layouts and S3's part size. Below the layouts and the sources, because both name it:
//! a layout's parameters, and the error of an input to which a layout gives no root.

use std::fmt;
use std::num::NonZeroU64;
use std::str::FromStr;

/// A validated leaf size for the fixed-leaf layouts: never zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LeafSize(NonZeroU64);

impl LeafSize {
    /// The default leaf size of `merkle` and `rfc6962`: 1 MiB.
    pub const DEFAULT: LeafSize = LeafSize(NonZeroU64::new(1 << 20).unwrap());

    /// A leaf size of `bytes`, or `None` for 0.
    pub const fn new(bytes: u64) -> Option<LeafSize> {
        match NonZeroU64::new(bytes) {
            Some(n) => Some(LeafSize(n)),
            None => None,
        }
    }

    /// The size in bytes.
    pub fn get(self) -> u64 {
        self.0.get()
    }
}

impl Default for LeafSize {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Display for LeafSize {
    /// The shortest exact spelling: `64`, `4K`, `1M`, `3G`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.get();
        for (shift, suffix) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
            if n.is_multiple_of(1 << shift) {
                return write!(f, "{}{suffix}", n >> shift);
            }
        }
        write!(f, "{n}")
    }
}

/// Why a size could not be parsed: the text, and what it was to be (`leaf size`, `part
/// size`), which the message names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeafSizeError {
    #[error(
        "invalid {1} '{0}': expected a number with an optional suffix K, M, G or T (KiB, MiB, ...)"
    )]
    Syntax(String, &'static str),
    #[error("invalid {1} '{0}': must be at least 1 byte")]
    Zero(String, &'static str),
    #[error("invalid {1} '{0}': too large")]
    Overflow(String, &'static str),
}

impl FromStr for LeafSize {
    type Err = LeafSizeError;

    /// Parses `64`, `4K`, `4k`, `1M`, `1MiB`, `2G`, `1T`; suffixes are binary (K = 1024),
    /// as in `dd` and `truncate`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LeafSize::parse_as(s, "leaf size")
    }
}

impl LeafSize {
    /// Parses `s` as [`LeafSize::from_str`] does, for a size that errors call `what`
    /// (`part size`).
    pub fn parse_as(s: &str, what: &'static str) -> Result<LeafSize, LeafSizeError> {
        let t = s.trim();
        let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, suffix) = t.split_at(digits);
        let num: u64 = num
            .parse()
            .map_err(|_| LeafSizeError::Syntax(s.into(), what))?;
        let shift = match suffix.to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kib" => 10,
            "m" | "mib" => 20,
            "g" | "gib" => 30,
            "t" | "tib" => 40,
            _ => return Err(LeafSizeError::Syntax(s.into(), what)),
        };
        let bytes = num
            .checked_mul(1 << shift)
            .ok_or_else(|| LeafSizeError::Overflow(s.into(), what))?;
        LeafSize::new(bytes).ok_or_else(|| LeafSizeError::Zero(s.into(), what))
    }
}
