//! What `--compare` says of each name ([`Record`]) and of the whole run ([`Summary`]): in a
//! module of their own so that [`crate::json`] renders them while the parent module, which
//! writes through it, imports neither back.

use std::time::Duration;

use crate::algorithm::Algorithm;
use crate::layout::{Layout, Root};
use crate::source::InputError;

/// What became of one name found on either side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Both sides hold the same bytes (by a value both agree on, or by size with
    /// `--size-only`).
    Ok,
    /// Their sizes or their values differ.
    Differs,
    /// Only the first side (the local one) has it.
    OnlyLocal,
    /// Only the second side (the remote one) has it.
    OnlyRemote,
    /// Both have it, but nothing the store reports can tell whether the bytes are equal (an
    /// SSE-KMS ETag that is no MD5, no checksum), and its bytes were not read.
    Unverified,
    /// One side could not be read (a local file without permission, an object that answers
    /// 403): its message says which and why.
    Unreadable,
}

impl Status {
    /// Every status, in the order summaries count them.
    pub const ALL: [Status; 6] = [
        Status::Ok,
        Status::Differs,
        Status::OnlyLocal,
        Status::OnlyRemote,
        Status::Unverified,
        Status::Unreadable,
    ];

    /// The word lines and JSON give it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Differs => "differs",
            Status::OnlyLocal => "only-local",
            Status::OnlyRemote => "only-remote",
            Status::Unverified => "unverified",
            Status::Unreadable => "unreadable",
        }
    }
}

/// How a name present on both sides was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// By the sizes alone: they differ, or `--size-only` took equal sizes for equal bytes.
    Size,
    /// The local file against a value the store reports (a checksum, an ETag): no remote
    /// byte was read.
    Stored,
    /// The bytes of both sides, hashed alike.
    Read,
}

impl Method {
    /// The word JSON gives it.
    pub fn name(self) -> &'static str {
        match self {
            Method::Size => "size",
            Method::Stored => "stored",
            Method::Read => "read",
        }
    }
}

/// The verdict on one name, relative to the two roots.
#[derive(Debug)]
pub struct Record {
    /// The name below both roots, `/`-separated.
    pub name: Vec<u8>,
    pub status: Status,
    /// How it was decided, for a name on both sides that got a verdict.
    pub method: Option<Method>,
    /// The sizes of the local file and of the remote object, where known.
    pub size: Option<u64>,
    pub remote_size: Option<u64>,
    /// What the bytes were compared with, once they were hashed.
    pub layout: Option<Layout>,
    pub algorithm: Option<Algorithm>,
    /// The remote side's value: what the store reports, or its bytes' digest.
    pub expected: Option<Root>,
    /// The local side's value, in the encoding of `expected`.
    pub digest: Option<Root>,
    /// With `--part-size auto`-like guessing (an ETag whose part size the store did not
    /// tell): how many part sizes were tried.
    pub sizes_tried: Option<usize>,
    /// Why a name is `unverified`.
    pub why: Option<String>,
    /// For `unreadable`: the side's full name (a path, a URL) and what went wrong.
    pub error: Option<(Vec<u8>, InputError)>,
}

impl Record {
    /// A record of `name` with `status` and nothing else known yet.
    pub fn new(name: Vec<u8>, status: Status) -> Record {
        Record {
            name,
            status,
            method: None,
            size: None,
            remote_size: None,
            layout: None,
            algorithm: None,
            expected: None,
            digest: None,
            sizes_tried: None,
            why: None,
            error: None,
        }
    }
}

/// The counts of a finished comparison.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Names per [`Status`], indexed as [`Status::ALL`].
    pub statuses: [u64; Status::ALL.len()],
    /// Names decided by the store's values alone, without reading remote bytes.
    pub by_stored: u64,
    /// Names whose remote bytes were read.
    pub by_read: u64,
    /// Bytes hashed, on both sides.
    pub bytes: u64,
    pub elapsed: Duration,
}

impl Summary {
    pub fn count(&self, status: Status) -> u64 {
        let index = Status::ALL.iter().position(|s| *s == status);
        self.statuses[index.expect("listed")]
    }

    /// Names that got a line.
    pub fn names(&self) -> u64 {
        self.statuses.iter().sum()
    }

    /// Every name `ok`: what exit status 0 says.
    pub fn is_clean(&self) -> bool {
        self.names() == self.count(Status::Ok)
    }

    pub(super) fn add(&mut self, record: &Record) {
        let index = Status::ALL.iter().position(|s| *s == record.status);
        self.statuses[index.expect("listed")] += 1;
        match record.method {
            Some(Method::Stored) => self.by_stored += 1,
            Some(Method::Read) => self.by_read += 1,
            Some(Method::Size) | None => {}
        }
    }
}
