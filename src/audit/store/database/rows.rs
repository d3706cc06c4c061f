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

/// The columns of a record, in the order [`row_record`] reads them, but the last: whether a
/// repair of the file is in progress ([`REPAIRING`]).
pub(super) const RECORD_COLUMNS: &str = "path, size, mtime_sec, mtime_nsec, layout, leaf_size, algorithm, digest, verified, outboard_leaf IS NOT NULL";

/// Whether a repair of the file is in progress: a mark with the record's stamp.
pub(super) const REPAIRING: &str = "EXISTS (SELECT 1 FROM repairs m WHERE m.path = records.path AND m.size = records.size AND m.mtime_sec = records.mtime_sec AND m.mtime_nsec = records.mtime_nsec)";

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
    rows: VecDeque<(Vec<u8>, Result<Record, String>, RowState)>,
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
        columns: &str,
        name: &[u8],
    ) -> Result<Option<Entry>, DatabaseError> {
        if !is_within(name, &self.arg) || self.last.as_deref().is_some_and(|l| name <= l) {
            return Ok(None);
        }
        self.last = Some(name.to_vec());
        loop {
            if self.rows.is_empty() && !self.fill(conn, columns)? {
                return Ok(Some(Entry::of(Prior::None)));
            }
            let first = &self.rows.front().expect("filled").0;
            match first.as_slice().cmp(name) {
                std::cmp::Ordering::Less => {
                    let (passed, record, _) = self.rows.pop_front().expect("filled");
                    if let Ok(record) = record {
                        self.passed.push((passed, record));
                    }
                }
                std::cmp::Ordering::Equal => {
                    let (_, record, state) = self.rows.pop_front().expect("filled");
                    return Ok(Some(entry((record, state))));
                }
                std::cmp::Ordering::Greater => return Ok(Some(Entry::of(Prior::None))),
            }
        }
    }

    /// Reads the next chunk of rows; `false` when there are none left.
    fn fill(&mut self, conn: &Connection, columns: &str) -> Result<bool, DatabaseError> {
        if self.done {
            return Ok(false);
        }
        let (op, from) = match &self.read_to {
            None => (">=", self.start.as_slice()),
            Some(name) => (">", name.as_slice()),
        };
        let sql = format!(
            "SELECT {columns} FROM records WHERE path {op} ?1 ORDER BY path LIMIT {AHEAD_ROWS}"
        );
        let mut statement = conn.prepare_cached(&sql)?;
        let mut rows = statement.query([from])?;
        let mut read = 0;
        while let Some(row) = rows.next()? {
            read += 1;
            let row = row_record(row);
            if !row.0.starts_with(&self.start) {
                self.done = true;
                break;
            }
            self.read_to = Some(row.0.clone());
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
    pub(super) fn rest(mut self, conn: &Connection, columns: &str) -> Vec<(Vec<u8>, Record)> {
        loop {
            for (name, record, _) in self.rows.drain(..) {
                if let Ok(record) = record {
                    self.passed.push((name, record));
                }
            }
            if !matches!(self.fill(conn, columns), Ok(true)) {
                return self.passed;
            }
        }
    }
}

/// When a record was last verified, whether it has an outboard, and whether a repair of the
/// file is in progress.
pub(super) type RowState = (Option<SystemTime>, bool, bool);

/// A row of [`DatabaseStore::columns`]: its name, its record (or why it cannot be used), when
/// it was last verified, whether it has an outboard and whether a repair is in progress.
pub(super) fn row_record(row: &rusqlite::Row) -> (Vec<u8>, Result<Record, String>, RowState) {
    let name: Vec<u8> = row.get(0).unwrap_or_default();
    let verified = row.get::<_, Option<i64>>(8).ok().flatten().map(time);
    let has_outboard = row.get::<_, bool>(9).unwrap_or(false);
    let repairing = row.get::<_, bool>(10).unwrap_or(false);
    (name, parse_row(row), (verified, has_outboard, repairing))
}

/// The entry of a row read by [`row_record`], without its name.
pub(super) fn entry(
    (record, (verified, has_outboard, repairing)): (Result<Record, String>, RowState),
) -> Entry {
    match record {
        Ok(record) => Entry {
            prior: Prior::Record(record),
            verified,
            has_outboard,
            repairing,
        },
        Err(why) => Entry::of(Prior::Unusable(format!("damaged record: {why}"))),
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
