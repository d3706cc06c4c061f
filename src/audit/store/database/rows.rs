//! Records read out of the database's rows: the columns a record is read with, a row turned
//! into an [`Entry`], and the records of a walk read ahead in name order ([`Ahead`]).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::time::SystemTime;

use rusqlite::Connection;

use crate::algorithm::Algorithm;
use crate::audit::store::manifest::is_within;
use crate::audit::store::{DatabaseError, Entry, Prior, Record, time};
use crate::layout::{Layout, LeafSize};
use crate::source::{Mtime, Stamp};

/// The query that reads records, but for its condition and order: the columns of a record,
/// in the order [`row_record`] reads them, from a database whose audits' findings are in a
/// table of their own (`checks`, version 3) or in the records (a database of version 1 or 2,
/// read as it is), which may hold marks of repairs in progress (`repairs`, since version 2)
/// or not (then none is).
pub(super) fn select(checks: bool, repairs: bool) -> String {
    let from = match checks {
        true => "records LEFT JOIN checks ON checks.id = records.rowid",
        false => "records",
    };
    let repairing = match repairs {
        true => REPAIRING,
        false => "0",
    };
    format!(
        "SELECT path, size, mtime_sec, mtime_nsec, layout, leaf_size, algorithm, digest, verified, outboard_leaf IS NOT NULL, {repairing}, records.rowid FROM {from}"
    )
}

/// Whether a repair of the file is in progress: a mark with the record's stamp.
const REPAIRING: &str = "EXISTS (SELECT 1 FROM repairs m WHERE m.path = records.path AND m.size = records.size AND m.mtime_sec = records.mtime_sec AND m.mtime_nsec = records.mtime_nsec)";

/// Rows read at a time by [`Ahead`].
const AHEAD_ROWS: usize = 512;

/// The records at or below an argument, read a chunk at a time in name order while its walk
/// goes on ([`RecordStore::walking`](crate::audit::store::RecordStore::walking)): the walk meets files in the bytewise order of their
/// paths, which is the order of the names ([`key`](crate::audit::store::manifest::key) only drops what every path below the
/// argument shares), so one query per [`AHEAD_ROWS`] records answers the lookups where a
/// query per file took a quarter of a verify's main thread. What the walk passed over is the
/// argument's unseen records
/// ([`RecordStore::unseen_below`](crate::audit::store::RecordStore::unseen_below)), with no second scan.
pub(super) struct Ahead {
    /// The argument's name.
    arg: Vec<u8>,
    /// What every name at or below it starts with (nothing for `.`).
    start: Vec<u8>,
    /// Rows read and not yet passed.
    rows: VecDeque<Row>,
    /// The name of the last row read (`None` before the first chunk).
    read_to: Option<Vec<u8>>,
    /// Whether every row at or below the argument has been read.
    done: bool,
    /// The last name looked up here: one that does not come after it is looked up alone.
    last: Option<Vec<u8>>,
    /// The usable records passed over, in name order.
    passed: Vec<(Vec<u8>, Record)>,
    /// Whether no other argument overlaps this one.
    alone: bool,
}

impl Ahead {
    pub(super) fn new(arg: Vec<u8>, alone: bool) -> Ahead {
        let start = if arg == b"." { Vec::new() } else { arg.clone() };
        Ahead {
            arg,
            start,
            rows: VecDeque::new(),
            read_to: None,
            done: false,
            last: None,
            passed: Vec::new(),
            alone,
        }
    }

    /// Whether no other argument of the audit overlaps this one: no file of its walk is
    /// looked up twice.
    pub(super) fn alone(&self) -> bool {
        self.alone
    }

    /// Whether these are the records of the argument named `arg`.
    pub(super) fn is_for(&self, arg: &[u8]) -> bool {
        self.arg == arg
    }

    /// The entry named `name`, if the walk is in order here: the rows before it are passed
    /// over (the files the walk did not meet, or not yet asked about), and a name between
    /// two rows has none. `None` where the name is not at or below the argument, or does not
    /// come after the last name looked up here: it is looked up alone.
    pub(super) fn lookup(
        &mut self,
        conn: &Connection,
        select: &str,
        name: &[u8],
    ) -> Result<Option<Found>, DatabaseError> {
        if !is_within(name, &self.arg) || self.last.as_deref().is_some_and(|l| name <= l) {
            return Ok(None);
        }
        self.last = Some(name.to_vec());
        loop {
            if self.rows.is_empty() && !self.fill(conn, select)? {
                return Ok(Some(NONE));
            }
            let first = &self.rows.front().expect("filled").name;
            match first.as_slice().cmp(name) {
                std::cmp::Ordering::Less => {
                    let row = self.rows.pop_front().expect("filled");
                    if let Ok(record) = row.record {
                        self.passed.push((row.name, record));
                    }
                }
                std::cmp::Ordering::Equal => {
                    return Ok(Some(self.rows.pop_front().expect("filled").found()));
                }
                std::cmp::Ordering::Greater => return Ok(Some(NONE)),
            }
        }
    }

    /// Reads the next chunk of rows; `false` when there are none left.
    fn fill(&mut self, conn: &Connection, select: &str) -> Result<bool, DatabaseError> {
        if self.done {
            return Ok(false);
        }
        let (op, from) = match &self.read_to {
            None => (">=", self.start.as_slice()),
            Some(name) => (">", name.as_slice()),
        };
        let sql = format!("{select} WHERE path {op} ?1 ORDER BY path LIMIT {AHEAD_ROWS}");
        let mut statement = conn.prepare_cached(&sql)?;
        let mut rows = statement.query([from])?;
        let mut read = 0;
        while let Some(row) = rows.next()? {
            read += 1;
            let row = row_record(row);
            if !row.name.starts_with(&self.start) {
                self.done = true;
                break;
            }
            self.read_to = Some(row.name.clone());
            self.rows.push_back(row);
        }
        if read < AHEAD_ROWS {
            self.done = true;
        }
        Ok(!self.rows.is_empty())
    }

    /// Passes over every row left: the unseen records at or below the argument, in name
    /// order, and those outside it that share its start (`a.txt` for `a`). A row that cannot
    /// be read ends them, as it would end a scan.
    pub(super) fn rest(mut self, conn: &Connection, select: &str) -> Vec<(Vec<u8>, Record)> {
        loop {
            for row in self.rows.drain(..) {
                if let Ok(record) = row.record {
                    self.passed.push((row.name, record));
                }
            }
            if !matches!(self.fill(conn, select), Ok(true)) {
                return self.passed;
            }
        }
    }
}

/// What a lookup found: the entry, and the id of the record's row where it has one, by
/// which what the audit finds is written.
pub(super) type Found = (Entry, Option<i64>);

/// What a lookup of a name without a record finds.
pub(super) const NONE: Found = (
    Entry {
        prior: Prior::None,
        verified: None,
        has_outboard: false,
        repairing: false,
    },
    None,
);

/// A row of [`select`].
pub(super) struct Row {
    pub(super) name: Vec<u8>,
    /// The key of what audits found of it (`checks`); its rowid in a database of version 1
    /// or 2.
    id: i64,
    /// The record, or why it cannot be used.
    pub(super) record: Result<Record, String>,
    /// When it was last verified.
    verified: Option<SystemTime>,
    /// Whether it has an outboard.
    has_outboard: bool,
    /// Whether a repair of the file is in progress.
    repairing: bool,
}

impl Row {
    /// What a lookup of its name finds.
    pub(super) fn found(self) -> Found {
        let entry = match self.record {
            Ok(record) => Entry {
                prior: Prior::Record(record),
                verified: self.verified,
                has_outboard: self.has_outboard,
                repairing: self.repairing,
            },
            Err(why) => Entry::of(Prior::Unusable(format!("damaged record: {why}"))),
        };
        (entry, Some(self.id))
    }
}

/// A row of [`select`], read.
pub(super) fn row_record(row: &rusqlite::Row) -> Row {
    Row {
        name: row.get(0).unwrap_or_default(),
        record: parse_row(row),
        verified: row.get::<_, Option<i64>>(8).ok().flatten().map(time),
        has_outboard: row.get::<_, bool>(9).unwrap_or(false),
        repairing: row.get::<_, bool>(10).unwrap_or(false),
        id: row.get(11).unwrap_or_default(),
    }
}

/// The record of a row, its texts and digest read in place (a verify reads every row).
fn parse_row(row: &rusqlite::Row) -> Result<Record, String> {
    let get_i64 = |i: usize| row.get::<_, i64>(i).map_err(|e| e.to_string());
    let value = |i: usize| row.get_ref(i).map_err(|e| e.to_string());
    // Where the value is of another type, rusqlite's own message names the column.
    let text = |i: usize| value(i)?.as_str().map_err(|_| why_not::<String>(row, i));
    let size = u64::try_from(get_i64(1)?).map_err(|_| "negative size")?;
    let nsec = u32::try_from(get_i64(3)?).map_err(|_| "bad nanoseconds")?;
    let mtime = Mtime::new(get_i64(2)?, nsec).ok_or("bad nanoseconds")?;
    let layout = text(4)?;
    let leaf = row
        .get::<_, Option<i64>>(5)
        .map_err(|e| e.to_string())?
        .map(|l| {
            u64::try_from(l)
                .ok()
                .and_then(LeafSize::new)
                .ok_or("bad leaf size")
        })
        .transpose()?;
    let layout = Layout::from_name(layout, leaf).map_err(|e| e.to_string())?;
    if layout.size_parameter().is_some() && leaf.is_none() {
        return Err("leaf size missing".into());
    }
    let algorithm: Algorithm = text(6)?
        .parse()
        .map_err(|e: crate::algorithm::UnknownAlgorithm| e.to_string())?;
    let digest = value(7)?
        .as_blob()
        .map_err(|_| why_not::<Vec<u8>>(row, 7))?;
    Record::from_value_bytes(layout, algorithm, Stamp::new(size, mtime), digest)
}

/// Why column `i` of `row` is not a `T`, as rusqlite says it.
fn why_not<T: rusqlite::types::FromSql>(row: &rusqlite::Row, i: usize) -> String {
    row.get::<_, T>(i).err().map_or_else(
        || format!("column {i} has the wrong type"),
        |e| e.to_string(),
    )
}

pub(super) fn path_of(name: Vec<u8>) -> PathBuf {
    PathBuf::from(OsString::from_vec(name))
}
