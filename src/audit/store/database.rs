//! The database store (`--db FILE`): the records of any number of trees in one SQLite
//! database, for file servers where a manifest rewritten at the end of a days-long audit would
//! lose days of work to one interruption.
//!
//! # Durability
//!
//! Changes are committed in batches, a transaction for some hundred files or a second of the
//! audit ([`RecordStore::commit`], called by the run before it reports the decisions of a
//! batch): a commit per file cost a dozen page writes to the log, and the log's checkpoints,
//! for every file of a verify that changed nothing. So a `kill -9` loses at most the last
//! second's decisions, none that was reported. Commits go to the write-ahead log with
//! `synchronous=NORMAL` (appended without waiting for the disk); the first commit a
//! [`SYNC_INTERVAL`] after the last that did, and the end, wait for the disk
//! (`synchronous=FULL`), so a power cut loses at most the changes of those last seconds.
//! SQLite's log makes every commit all or nothing: no crash leaves a record half written.
//!
//! # One audit at a time
//!
//! A writable store holds SQLite's exclusive lock from opening to the end
//! (`locking_mode=EXCLUSIVE`), so a second audit of the same database is refused at once with
//! [`DatabaseError::Busy`] instead of interleaving its records with the first one's.
//! A reader (`--dry-run`, `--export`) opens the database read-only and holds SQLite's shared
//! lock while it reads (`ReadLock`), so a writer is refused meanwhile; and while a writer
//! holds the database, a reader is refused at once as a second audit is: the audit may run
//! for days, and a reader that waited a few seconds before saying so would only be slower.
//!
//! # Repairs in progress
//!
//! A repair from a copy ([`crate::audit::repair`]) writes the file in place and puts its
//! recorded mtime back last; cut short (`kill -9`, a power cut, an I/O error), it would leave
//! a half-repaired file with a new mtime, which the next audit would take for an edit and,
//! with `--update`, record as good. So before the first byte is written, a row in `repairs`
//! says durably (a commit that waits for the disk) that the file is being repaired and which
//! stamp the repair puts back. While that row names the record's stamp, the file counts as
//! corrupt whatever its mtime ([`Entry::repairing`]); it goes once a change says the file
//! matches a record again (checked `ok`, a record written) or the record is removed. It is
//! deleted after that change: a crash between the two leaves a row whose stamp is not the
//! record's, which counts for nothing.
//!
//! # Schema, version 3
//!
//! ```sql
//! PRAGMA application_id = 0x6d74736d;  -- 'mtsm': this file is an mtsum database
//! PRAGMA user_version = 3;
//! CREATE TABLE records (
//!     id            INTEGER PRIMARY KEY, -- since version 3: the key of its checks
//!     path          BLOB NOT NULL UNIQUE, -- the name, spelled as in manifests (manifest::key)
//!     size          INTEGER NOT NULL,   -- bytes
//!     mtime_sec     INTEGER NOT NULL,   -- st_mtim
//!     mtime_nsec    INTEGER NOT NULL,
//!     layout        TEXT NOT NULL,      -- mtsum, plain, merkle, rfc6962, s3, glacier, ...
//!     leaf_size     INTEGER,            -- merkle and rfc6962 (the part size for s3)
//!     algorithm     TEXT NOT NULL,      -- md5, sha1, ..., blake3, xxh3, xxh128, crc32, ...
//!     digest        BLOB NOT NULL,      -- then the part count where an S3 value's is not
//!                                       -- the one its size implies (Record::value_bytes)
//!     outboard_leaf INTEGER,            -- leaf size of the outboard tree
//!     outboard      BLOB                -- its leaf digests, concatenated, after a byte 1
//!                                       -- for BLAKE3 subtrees (none: RFC 6962, earlier builds)
//! );
//! CREATE TABLE checks (                 -- since version 3: what the audits found
//!     id            INTEGER PRIMARY KEY, -- the record's
//!     verified      INTEGER,            -- ns since the epoch: when the file last matched
//!     checked       INTEGER,            -- ns since the epoch: when an audit last read it
//!     verdict       TEXT                -- and what it found: ok, corrupt, modified, ...
//! );
//! CREATE TABLE repairs (                -- since version 2
//!     path          BLOB PRIMARY KEY,   -- a file being repaired in place
//!     size          INTEGER NOT NULL,   -- the stamp the repair puts back: its record's
//!     mtime_sec     INTEGER NOT NULL,
//!     mtime_nsec    INTEGER NOT NULL
//! );
//! ```
//!
//! What the audits found is a narrow table of its own because a verify that changes nothing
//! changes it for every file: in the records, that rewrote every page of the table (to the
//! log, then back at the checkpoint), 4 times the pages of `checks` for small files without
//! leaf digests, many more with them. Its rows are written by the record's id, which the
//! lookup read with the record, not found again by name. A record's id stays
//! while the record does (`VACUUM` keeps an `INTEGER PRIMARY KEY`); a new record may get the
//! id of one removed, and writes its checks whole.
//!
//! Versions 1 and 2 kept `verified`, `checked` and `verdict` in `records` (after `digest`),
//! whose `path BLOB PRIMARY KEY` was its key, with no `id` and no `checks`; version 1 had no
//! `repairs`. Databases made before 2026-11-29 also have an index `records_by_verified` on
//! `verified`, which nothing read. Such a database is upgraded when an audit or a repair opens
//! it for writing, in one transaction (the records are copied into the new table, ids in name
//! order), then compacted (`VACUUM`); a reader (`--dry-run`, `--export`) reads it as it is,
//! without a repair in progress where it is of version 1. An older mtsum refuses version 3 as
//! newer than it reads.
//!
//! Names are the paths as the audit met them, tidied as in manifests; give absolute paths to
//! keep several trees apart. A file that is not a SQLite database, or a SQLite database of
//! another program, is refused and never written to.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

use super::Status;
use crate::audit::AuditError;
use crate::audit::outboard::Outboard;
use crate::layout::LeafSize;
use crate::source::Stamp;

use super::manifest::{is_within, key};

mod open;
mod rows;
use super::{
    Change, DatabaseError, Entry, OwnFile, Prior, Record, RecordStore, StoreError, is_unwalked,
    nanos, resolved,
};
use open::{ReadLock, connect};
use rows::{Ahead, Found, NONE, path_of, row_record, select};

/// `PRAGMA application_id` of an mtsum database: `mtsm` in ASCII.
pub const APPLICATION_ID: i32 = 0x6d74_736d;
/// The longest a commit goes without waiting for the disk while changes keep coming.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(2);

impl From<rusqlite::Error> for DatabaseError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => DatabaseError::Busy,
            Some(ErrorCode::ReadOnly) => DatabaseError::ReadOnly(String::new()),
            Some(ErrorCode::NotADatabase) => {
                DatabaseError::Foreign("the file is not a SQLite database".into())
            }
            Some(ErrorCode::DatabaseCorrupt) => DatabaseError::Corrupt(e.to_string()),
            _ => DatabaseError::Sqlite(e.to_string()),
        }
    }
}

/// A database as one audit uses it.
pub struct DatabaseStore {
    path: PathBuf,
    conn: Connection,
    writable: bool,
    /// The database file, so that an audit of the tree holding it skips it and its log.
    own: Option<OwnFile>,
    /// Where that file and its log are ([`resolved`]).
    file: PathBuf,
    /// What every lookup found, by name: later lookups of the same name (arguments may
    /// overlap) see the store as it was before the audit, whatever was written since.
    seen: HashMap<Vec<u8>, Entry>,
    /// Records already reported unseen.
    reported: HashSet<Vec<u8>>,
    /// Whether the database held no record when opened (a first record): then no lookup
    /// can find one, and every record below an argument is one this audit wrote, so neither
    /// asks SQLite (the lookups were a quarter of a first record's main thread).
    empty: bool,
    /// The records below the argument being walked, read ahead in name order.
    ahead: Option<Ahead>,
    last_sync: Instant,
    /// Whether a transaction is open: changes since the last [`RecordStore::commit`].
    in_transaction: bool,
    /// Whether its commit waits for the disk.
    syncing: bool,
    /// The ids of the records looked up and not yet changed, by name: what an audit finds is
    /// written by the record's id, not looked up again by name (as much work again as the
    /// write). Forgotten past [`IDS_KEPT`] (a walk that postpones most files changes none of
    /// them), when a change looks its id up by name.
    ids: HashMap<Vec<u8>, i64>,
    /// Rows of `checks` the open transaction is yet to write, whole, in the order of the
    /// changes ([`DatabaseStore::write_checks`]).
    checks_now: Vec<Checks>,
    /// When it began: the time its changes give the files they verify or check. One time for
    /// a batch (at most a second), so that files verified together keep the order of the
    /// walk among the least recently verified (`--time-budget`) whichever reader was first.
    batch_time: i64,
    /// Whether the database may hold repair marks (it had some when opened, or this audit
    /// made one): only then does a change look for one to delete.
    may_have_marks: bool,
    /// The query records are read with ([`select`]: a database of version 1 or 2 read as it
    /// is has no table `checks`; whether a repair is in progress is asked only where the
    /// database may hold marks, as that is a third of the query's work).
    select: String,
    /// A reader's lock, which keeps writers out until it is done.
    _read_lock: Option<ReadLock>,
}

impl DatabaseStore {
    /// Opens (or creates) the database at `path`. A writable store takes the database's
    /// exclusive lock; a read-only one (a dry run, an export) takes a shared lock and writes
    /// nothing, not even a new file, so that it works where the user may not write the
    /// database or its directory.
    pub fn open(path: &Path, writable: bool) -> Result<DatabaseStore, AuditError> {
        let fail = |error: DatabaseError| AuditError::Database {
            path: path.to_path_buf(),
            error,
        };
        let (conn, read_lock) = connect(path, writable).map_err(fail)?;
        let has_table = |name: &str| {
            conn.query_row(
                "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
                [name],
                |r| r.get::<_, bool>(0),
            )
            .map_err(|e| fail(e.into()))
        };
        let (checks, marks) = (has_table("checks")?, has_table("repairs")?);
        let may_have_marks = marks
            && conn
                .query_row("SELECT EXISTS (SELECT 1 FROM repairs)", [], |r| {
                    r.get::<_, bool>(0)
                })
                .map_err(|e| fail(e.into()))?;
        let empty = conn
            .query_row("SELECT NOT EXISTS (SELECT 1 FROM records)", [], |r| {
                r.get::<_, bool>(0)
            })
            .map_err(|e| fail(e.into()))?;
        Ok(DatabaseStore {
            path: path.to_path_buf(),
            empty,
            conn,
            writable,
            own: OwnFile::of(path),
            file: resolved(path),
            seen: HashMap::new(),
            reported: HashSet::new(),
            ahead: None,
            last_sync: Instant::now(),
            in_transaction: false,
            syncing: false,
            ids: HashMap::new(),
            checks_now: Vec::new(),
            batch_time: 0,
            may_have_marks,
            select: select(checks, may_have_marks),
            _read_lock: read_lock,
        })
    }

    fn error(&self, e: impl Into<DatabaseError>) -> AuditError {
        AuditError::Database {
            path: self.path.clone(),
            error: e.into(),
        }
    }

    /// What a lookup of `name` finds.
    fn get(&self, name: &[u8]) -> Result<Found, DatabaseError> {
        let sql = format!("{} WHERE path = ?1", self.select);
        let row = self
            .conn
            .prepare_cached(&sql)?
            .query_row([name], |row| Ok(row_record(row)))
            .optional()?;
        Ok(row.map_or(NONE, rows::Row::found))
    }

    /// What a lookup of `name` finds in the records read ahead ([`Ahead::lookup`]), and
    /// whether its argument is alone ([`RecordStore::walking`]).
    fn get_ahead(&mut self, name: &[u8]) -> Result<Option<(Found, bool)>, DatabaseError> {
        let Some(ahead) = &mut self.ahead else {
            return Ok(None);
        };
        let found = ahead.lookup(&self.conn, &self.select, name)?;
        Ok(found.map(|found| (found, ahead.alone())))
    }

    /// The id of the record named `name`, if there is one: kept from its lookup, or asked.
    fn id(&mut self, name: &[u8]) -> Result<Option<i64>, DatabaseError> {
        if let Some(id) = self.ids.remove(name) {
            return Ok(Some(id));
        }
        Ok(self
            .conn
            .prepare_cached("SELECT id FROM records WHERE path = ?1")?
            .query_row([name], |r| r.get(0))
            .optional()?)
    }

    fn apply(&mut self, name: &[u8], change: Change) -> Result<(), DatabaseError> {
        if !self.in_transaction {
            // SQLite takes the level of safety only outside a transaction: this one's commit
            // waits for the disk if the last that did is long enough ago.
            self.syncing = self.last_sync.elapsed() >= SYNC_INTERVAL;
            if self.syncing {
                self.conn.pragma_update(None, "synchronous", "FULL")?;
            }
            self.conn.execute_batch("BEGIN")?;
            self.in_transaction = true;
            self.batch_time = nanos(SystemTime::now());
        }
        self.write(name, change)?;
        // After the change (see the module documentation): a crash between the two leaves
        // a mark that names another stamp than the record's, or no record.
        let ends_repair = !matches!(change, Change::Checked { status, .. } if status != Status::Ok);
        if ends_repair && self.may_have_marks {
            self.conn
                .prepare_cached("DELETE FROM repairs WHERE path = ?1")?
                .execute([name])?;
        }
        Ok(())
    }

    /// Commits the open transaction.
    fn commit_batch(&mut self) -> Result<(), DatabaseError> {
        if !self.in_transaction {
            return Ok(());
        }
        self.write_checks()?;
        self.conn.execute_batch("COMMIT")?;
        self.in_transaction = false;
        self.synced(self.syncing)
    }

    /// Writes `change`: what the audit found of a file with the others of the transaction,
    /// before its commit, where it replaces the file's checks whole (found `ok`, a record
    /// written); any other change at once, after those before it.
    fn write(&mut self, name: &[u8], change: Change) -> Result<(), DatabaseError> {
        let now = Some(self.batch_time);
        match change {
            Change::Checked {
                status: Status::Ok,
                outboard: None,
            } => {
                if let Some(id) = self.id(name)? {
                    self.checks_now.push((id, now, Some(Status::Ok.name())));
                }
                Ok(())
            }
            // A record written by an audit matched the file just now; an imported one has
            // never been verified.
            Change::Set {
                record,
                status,
                outboard,
            } => self.write_record(name, record, outboard, (now, Some(status.name()))),
            Change::Import { record } => self.write_record(name, record, None, (None, None)),
            Change::Checked { status, outboard } => {
                self.write_checks()?;
                self.write_checked(name, status, outboard)
            }
            Change::Remove => {
                self.write_checks()?;
                self.ids.remove(name);
                self.conn
                    .prepare_cached(
                        "DELETE FROM checks WHERE id = (SELECT id FROM records WHERE path = ?1)",
                    )?
                    .execute([name])?;
                self.conn
                    .prepare_cached("DELETE FROM records WHERE path = ?1")?
                    .execute([name])?;
                Ok(())
            }
        }
    }

    /// Writes the rows of [`DatabaseStore::checks_now`], in their order. A run of files found
    /// `ok` whose ids follow one another (ids are given in name order, the walk's) is one
    /// update of the range of ids (a sixth of a verify's commits); the other rows are replaced
    /// whole, [`CHECKS_AT_ONCE`] a statement ([`DatabaseStore::replace_checks`]). A statement
    /// per file took three times as long.
    fn write_checks(&mut self) -> Result<(), DatabaseError> {
        let rows = std::mem::take(&mut self.checks_now);
        let mut whole = 0..0;
        let mut i = 0;
        while i < rows.len() {
            let (first, time, verdict) = rows[i];
            // Only files found `ok` have rows to update: a new record has none yet.
            let found_ok = verdict == Some(Status::Ok.name());
            let run = rows[i..]
                .iter()
                .enumerate()
                .take_while(|&(k, &(id, t, v))| {
                    first.checked_add(k as i64) == Some(id) && (t, v) == (time, verdict)
                })
                .count();
            if run < RANGE_AT_LEAST || !found_ok {
                whole.end = i + run;
                i += run;
                continue;
            }
            self.replace_checks(&rows[whole])?;
            let last = first + run as i64 - 1;
            let updated = self
                .conn
                .prepare_cached(
                    "UPDATE checks SET verified = ?1, checked = ?1, verdict = ?2
                     WHERE id BETWEEN ?3 AND ?4",
                )?
                .execute(params![time, verdict, first, last])?;
            if updated < run {
                // Rows missing (a database changed by hand): put back whole.
                self.replace_checks(&rows[i..i + run])?;
            }
            i += run;
            whole = i..i;
        }
        self.replace_checks(&rows[whole])?;
        self.checks_now = rows;
        self.checks_now.clear();
        Ok(())
    }

    /// Replaces the rows of `checks` whole, [`CHECKS_AT_ONCE`] a statement.
    fn replace_checks(&self, rows: &[Checks]) -> Result<(), DatabaseError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut statement = self.conn.prepare_cached(&REPLACE_CHECKS)?;
        for chunk in rows.chunks(CHECKS_AT_ONCE) {
            // A short last chunk repeats its last row: one statement serves every chunk.
            let last = chunk.last().expect("not empty");
            let mut params: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(3 * CHECKS_AT_ONCE);
            for (id, time, verdict) in (0..CHECKS_AT_ONCE).map(|i| chunk.get(i).unwrap_or(last)) {
                params.extend([id as &dyn rusqlite::ToSql, time, verdict]);
            }
            statement.execute(&*params)?;
        }
        Ok(())
    }

    /// Writes `record` for the file `name`, with its leaf digests, and then its checks.
    fn write_record(
        &mut self,
        name: &[u8],
        record: &Record,
        outboard: Option<&Outboard>,
        (time, verdict): (Option<i64>, Option<&'static str>),
    ) -> Result<(), DatabaseError> {
        // Its id stays if it had a record; a new record's may be one a record removed had,
        // whose checks are replaced. Not asked with `RETURNING`, which costs a temporary
        // table a statement (a sixth of a first record's database work): a new record's is
        // the last rowid inserted, which an update leaves as it was.
        let last = self.conn.last_insert_rowid();
        self.conn
            .prepare_cached(
                "INSERT INTO records (path, size, mtime_sec, mtime_nsec, layout, leaf_size,
                     algorithm, digest, outboard_leaf, outboard)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                 ON CONFLICT (path) DO UPDATE SET size = ?2, mtime_sec = ?3, mtime_nsec = ?4,
                     layout = ?5, leaf_size = ?6, algorithm = ?7, digest = ?8,
                     outboard_leaf = ?9, outboard = ?10",
            )?
            .execute(params![
                name,
                record.stamp.len as i64,
                record.stamp.mtime.sec,
                record.stamp.mtime.nsec,
                record.layout.name(),
                record.layout.size_parameter().map(|l| l.get() as i64),
                record.algorithm.name(),
                record.value_bytes(),
                outboard.map(|o| o.leaf.get() as i64),
                outboard.map(Outboard::to_bytes),
            ])?;
        let inserted = self.conn.last_insert_rowid();
        let id = match inserted != last {
            true => Some(inserted),
            false => self.id(name)?,
        };
        if let Some(id) = id {
            self.checks_now.push((id, time, verdict));
        }
        Ok(())
    }

    /// Writes that the file `name` was read and found `status` (not `ok`, or `ok` with leaf
    /// digests its record lacked): its verification time stays unless it is `ok`.
    fn write_checked(
        &mut self,
        name: &[u8],
        status: Status,
        outboard: Option<&Outboard>,
    ) -> Result<(), DatabaseError> {
        let Some(id) = self.id(name)? else {
            return Ok(());
        };
        if let Some(o) = outboard {
            self.conn
                .prepare_cached(
                    "UPDATE records SET outboard_leaf = ?2, outboard = ?3 WHERE id = ?1",
                )?
                .execute(params![id, o.leaf.get() as i64, o.to_bytes()])?;
        }
        let now = self.batch_time;
        let verified = (status == Status::Ok).then_some(now);
        self.conn
            .prepare_cached(
                "INSERT INTO checks (id, verified, checked, verdict) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (id) DO UPDATE SET verified = coalesce(?2, verified),
                     checked = ?3, verdict = ?4",
            )?
            .execute(params![id, verified, now, status.name()])?;
        Ok(())
    }

    /// Marks the file `name` as being repaired to `stamp`, and waits for the disk.
    fn mark_repair(&mut self, name: &[u8], stamp: Stamp) -> Result<(), DatabaseError> {
        if !self.writable {
            // A reader repairs nothing (a dry run stops before writing).
            return Err(DatabaseError::ReadOnly(String::new()));
        }
        // The decisions before it first, then the mark in a commit of its own.
        self.commit_batch()?;
        self.may_have_marks = true;
        // A database written to is of this version.
        self.select = select(true, true);
        self.conn.pragma_update(None, "synchronous", "FULL")?;
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO repairs (path, size, mtime_sec, mtime_nsec)
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![
                name,
                stamp.len as i64,
                stamp.mtime.sec,
                stamp.mtime.nsec
            ])?;
        self.synced(true)
    }

    /// After a change: back to commits that do not wait for the disk, if this one did.
    fn synced(&mut self, sync: bool) -> Result<(), DatabaseError> {
        if sync {
            self.conn.pragma_update(None, "synchronous", "NORMAL")?;
            self.last_sync = Instant::now();
        }
        Ok(())
    }
}

/// A row of `checks`: the record's id, when the file was verified and checked, the verdict.
type Checks = (i64, Option<i64>, Option<&'static str>);

/// Rows of `checks` one statement replaces ([`DatabaseStore::replace_checks`]).
const CHECKS_AT_ONCE: usize = 128;

/// The statement that replaces [`CHECKS_AT_ONCE`] rows of `checks`.
static REPLACE_CHECKS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let rows: Vec<String> = (0..CHECKS_AT_ONCE)
        .map(|i| format!("(?{0}, ?{1}, ?{1}, ?{2})", 3 * i + 1, 3 * i + 2, 3 * i + 3))
        .collect();
    format!(
        "INSERT OR REPLACE INTO checks (id, verified, checked, verdict) VALUES {}",
        rows.join(", ")
    )
});

/// The fewest rows alike with ids in a row that [`DatabaseStore::write_checks`] writes as a
/// range.
const RANGE_AT_LEAST: usize = 8;

/// The most ids of records looked up a store keeps ([`DatabaseStore::ids`]): some MiB.
const IDS_KEPT: usize = 1 << 16;

impl RecordStore for DatabaseStore {
    fn describe(&self) -> String {
        format!("database {}", self.path.display())
    }

    fn is_own(&self, path: &Path, meta: &fs::Metadata) -> bool {
        if self.own.is_some_and(|own| own.is(meta)) {
            return true;
        }
        // The log and the index beside it: `FILE-wal`, `FILE-shm`, `FILE-journal`.
        let (Some(name), Some(db)) = (path.file_name(), self.file.file_name()) else {
            return false;
        };
        let name = name.as_encoded_bytes();
        let is_companion = [&b"-wal"[..], b"-shm", b"-journal"]
            .iter()
            .any(|suffix| *name == [db.as_encoded_bytes(), suffix].concat());
        is_companion && super::same_directory(path, &self.file)
    }

    fn may_be_own(&self, path: &Path) -> bool {
        super::may_be_own(path, &self.file, self.own)
    }

    fn lookup(&mut self, path: &Path) -> Result<Entry, StoreError> {
        if self.empty {
            return Ok(Entry::of(Prior::None));
        }
        let name = key(path);
        if let Some(entry) = self.seen.get(&name) {
            return Ok(entry.clone());
        }
        let ((entry, id), alone) = match self.get_ahead(&name) {
            Ok(Some(found)) => Ok(found),
            Ok(None) => self.get(&name).map(|found| (found, false)),
            Err(e) => Err(e),
        }
        .map_err(|e| StoreError::Fatal(self.error(e)))?;
        // Read ahead, in the walk of an argument that no other overlaps: the walk passes it
        // once, and leaves it out of the argument's unseen records.
        if !alone {
            self.seen.insert(name.clone(), entry.clone());
        }
        if let (Some(id), true) = (id, self.writable) {
            if self.ids.len() >= IDS_KEPT {
                self.ids.clear();
            }
            self.ids.insert(name, id);
        }
        Ok(entry)
    }

    fn walking(&mut self, arg: &Path, alone: bool) {
        self.ahead = Some(Ahead::new(key(arg), alone));
    }

    fn has_records_below(&self, path: &Path) -> bool {
        let arg = key(path);
        let start: &[u8] = if arg == b"." { b"" } else { &arg };
        let Ok(mut statement) = self
            .conn
            .prepare_cached("SELECT path FROM records WHERE path >= ?1 ORDER BY path")
        else {
            return false;
        };
        let Ok(mut rows) = statement.query([start]) else {
            return false;
        };
        while let Ok(Some(row)) = rows.next() {
            let name: Vec<u8> = row.get(0).unwrap_or_default();
            if !name.starts_with(start) {
                return false;
            }
            if is_within(&name, &arg) {
                return true;
            }
        }
        false
    }

    fn unseen_below(&mut self, arg: &Path, unwalked: &[PathBuf]) -> Vec<(PathBuf, Record)> {
        if self.empty {
            return Vec::new();
        }
        let arg = key(arg);
        let ahead = match self.ahead.take() {
            Some(ahead) if ahead.is_for(&arg) => ahead,
            _ => Ahead::new(arg.clone(), false),
        };
        let mut unseen = Vec::new();
        for (name, record) in ahead.rest(&self.conn, &self.select) {
            if is_within(&name, &arg)
                && !self.seen.contains_key(&name)
                && !is_unwalked(&name, unwalked)
                && self.reported.insert(name.clone())
            {
                unseen.push((path_of(name), record));
            }
        }
        unseen
    }

    fn set(&mut self, path: &Path, change: Change) -> Result<(), StoreError> {
        if !self.writable {
            return Ok(());
        }
        let name = key(path);
        self.apply(&name, change)
            .map_err(|e| StoreError::Fatal(self.error(e)))
    }

    fn commit(&mut self) -> Result<(), AuditError> {
        self.commit_batch().map_err(|e| self.error(e))
    }

    fn finish(&mut self) -> Result<bool, AuditError> {
        if self.writable {
            // The last changes wait for the disk (a checkpoint syncs the log first), and the
            // log is folded back into the database so that it stays small.
            self.commit_batch().map_err(|e| self.error(e))?;
            self.conn
                .pragma_update(None, "synchronous", "FULL")
                .and_then(|()| self.conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);"))
                .map_err(|e| self.error(e))?;
        }
        Ok(false)
    }

    fn keeps_outboards(&self) -> bool {
        true
    }

    fn outboard(&mut self, path: &Path) -> Result<Option<Outboard>, StoreError> {
        let row: Option<(Option<i64>, Option<Vec<u8>>)> = self
            .conn
            .prepare_cached("SELECT outboard_leaf, outboard FROM records WHERE path = ?1")
            .and_then(|mut st| {
                st.query_row([key(path)], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(|e| StoreError::Fatal(self.error(e)))?;
        let Some((Some(leaf), Some(bytes))) = row else {
            return Ok(None);
        };
        let leaf = u64::try_from(leaf).ok().and_then(LeafSize::new);
        Ok(leaf.and_then(|leaf| Outboard::from_bytes(leaf, &bytes)))
    }

    fn begin_repair(&mut self, path: &Path, stamp: Stamp) -> Result<(), StoreError> {
        self.mark_repair(&key(path), stamp)
            .map_err(|e| StoreError::Fatal(self.error(e)))
    }

    fn records(&mut self) -> Result<Vec<(PathBuf, Record)>, AuditError> {
        let sql = format!("{} ORDER BY path", self.select);
        let mut statement = self.conn.prepare(&sql).map_err(|e| self.error(e))?;
        let rows = statement
            .query_map([], |row| Ok(row_record(row)))
            .map_err(|e| self.error(e))?;
        let mut out = Vec::new();
        for row in rows {
            let row = row.map_err(|e| self.error(e))?;
            let record = row.record.map_err(|why| {
                self.error(DatabaseError::Corrupt(format!(
                    "the record of {}: {why}",
                    String::from_utf8_lossy(&row.name)
                )))
            })?;
            out.push((path_of(row.name), record));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Algorithm;
    use crate::layout::Layout;
    use crate::source::Mtime;

    fn record(mtime: i64) -> Record {
        Record {
            layout: Layout::Plain,
            algorithm: Algorithm::Blake3,
            stamp: Stamp::new(3, Mtime::new(mtime, 0).unwrap()),
            value: Algorithm::Blake3.hash(b"abc").into(),
        }
    }

    fn marks(db: &DatabaseStore) -> i64 {
        db.conn
            .query_row("SELECT count(*) FROM repairs", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn a_repair_mark_lasts_until_the_file_matches_a_record_and_only_names_its_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = DatabaseStore::open(&dir.path().join("db"), true).unwrap();
        let repairing = |db: &DatabaseStore| db.get(b"f").unwrap().0.repairing;
        let old = record(5);
        let set = |r| Change::Set {
            record: r,
            status: Status::New,
            outboard: None,
        };
        let checked = |status| Change::Checked {
            status,
            outboard: None,
        };
        db.apply(b"f", set(&old)).unwrap();
        assert!(!repairing(&db));
        db.mark_repair(b"f", old.stamp).unwrap();
        assert!(repairing(&db));
        db.apply(b"f", checked(Status::Corrupt)).unwrap();
        assert!(repairing(&db), "still half repaired");
        db.apply(b"f", checked(Status::Ok)).unwrap();
        assert_eq!((repairing(&db), marks(&db)), (false, 0));

        // Left by a crash between a record written and its mark deleted: another stamp than
        // the record's counts for nothing.
        db.mark_repair(b"f", record(6).stamp).unwrap();
        assert!(!repairing(&db));
        db.mark_repair(b"f", old.stamp).unwrap();
        db.apply(b"f", set(&record(7))).unwrap();
        assert_eq!((repairing(&db), marks(&db)), (false, 0));
        db.mark_repair(b"f", record(7).stamp).unwrap();
        db.apply(b"f", Change::Remove).unwrap();
        assert_eq!(marks(&db), 0);
    }

    #[test]
    fn a_first_record_sees_the_database_as_it_was_empty_and_the_next_audit_its_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let mut db = DatabaseStore::open(&path, true).unwrap();
        let set = Change::Set {
            record: &record(5),
            status: Status::New,
            outboard: None,
        };
        db.set(Path::new("t/f"), set).unwrap();
        db.commit().unwrap();
        assert_eq!(db.lookup(Path::new("t/f")).unwrap().prior, Prior::None);
        assert!(db.unseen_below(Path::new("t"), &[]).is_empty());
        db.finish().unwrap();
        drop(db);
        let mut db = DatabaseStore::open(&path, true).unwrap();
        assert_eq!(
            db.lookup(Path::new("t/f")).unwrap().prior,
            Prior::Record(record(5))
        );
        drop(db);
        let mut db = DatabaseStore::open(&path, false).unwrap();
        let unseen = db.unseen_below(Path::new("t"), &[]);
        assert_eq!(unseen, [(PathBuf::from("t/f"), record(5))]);
    }

    #[test]
    fn a_reader_marks_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        DatabaseStore::open(&path, true).unwrap();
        let mut reader = DatabaseStore::open(&path, false).unwrap();
        assert!(matches!(
            reader.mark_repair(b"f", record(5).stamp),
            Err(DatabaseError::ReadOnly(_))
        ));
    }

    fn new_record(status: Status) -> impl Fn(&Record) -> Change<'_> {
        move |record| Change::Set {
            record,
            status,
            outboard: None,
        }
    }

    #[test]
    fn lookups_in_walk_order_read_ahead_and_what_the_walk_passed_over_is_unseen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let mut db = DatabaseStore::open(&path, true).unwrap();
        let set = new_record(Status::New);
        // More than one read ahead's rows below `t`, and names around `a` that are not below it.
        let many: Vec<String> = (0..1200).map(|i| format!("t/{i:04}")).collect();
        let few = ["a", "a.txt", "a/1", "a/3", "a/5", "a/sub/x", "a0"];
        for name in few.iter().copied().chain(many.iter().map(String::as_str)) {
            db.apply(name.as_bytes(), set(&record(5))).unwrap();
        }
        db.finish().unwrap();
        drop(db);
        let mut db = DatabaseStore::open(&path, true).unwrap();
        let mut has_record = |name: &str| {
            let entry = db.lookup(Path::new(name)).unwrap();
            match entry.prior {
                Prior::Record(r) => r == record(5),
                _ => false,
            }
        };
        assert!(has_record("a/1"));
        assert!(!has_record("a/2"), "a name between two records has none");
        assert!(has_record("a/5"));
        assert!(has_record("a/3"), "out of order, it is looked up alone");
        let names = |unseen: Vec<(PathBuf, Record)>| -> Vec<String> {
            (unseen.iter())
                .map(|(p, _)| p.to_string_lossy().into_owned())
                .collect()
        };
        db.walking(Path::new("a"), false);
        for name in ["a/1", "a/2", "a/5", "a/3"] {
            db.lookup(Path::new(name)).unwrap();
        }
        assert_eq!(
            names(db.unseen_below(Path::new("a"), &[])),
            ["a", "a/sub/x"]
        );
        assert!(db.unseen_below(Path::new("a"), &[]).is_empty(), "once");

        db.walking(Path::new("./t/"), true);
        for name in many.iter().step_by(2) {
            let entry = db.lookup(Path::new(name)).unwrap();
            assert_eq!(entry.prior, Prior::Record(record(5)), "{name}");
        }
        let odd: Vec<String> = many.iter().skip(1).step_by(2).cloned().collect();
        assert_eq!(names(db.unseen_below(Path::new("t"), &[])), odd);
    }

    /// A new database in `dir` with a record of each of `names`, committed.
    fn recorded(dir: &Path, names: &[String]) -> DatabaseStore {
        let mut db = DatabaseStore::open(&dir.join("db"), true).unwrap();
        for name in names {
            db.apply(name.as_bytes(), new_record(Status::New)(&record(5)))
                .unwrap();
        }
        db.commit().unwrap();
        db
    }

    /// Each of `names` read and found `ok`.
    fn found_ok(db: &mut DatabaseStore, names: &[String]) {
        let ok = Change::Checked {
            status: Status::Ok,
            outboard: None,
        };
        for name in names {
            db.apply(name.as_bytes(), ok).unwrap();
        }
    }

    #[test]
    fn files_found_ok_are_written_at_the_commit_and_in_the_order_of_the_changes() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..300).map(|i| format!("f/{i:03}")).collect();
        let mut db = recorded(dir.path(), &names);
        found_ok(&mut db, &names);
        // Found ok, then modified and recorded anew in the same batch: the later change wins.
        db.apply(b"f/007", new_record(Status::Modified)(&record(9)))
            .unwrap();
        db.commit().unwrap();
        let time = db.batch_time;
        let rows: Vec<(Vec<u8>, String, i64, i64, i64)> = db
            .conn
            .prepare(
                "SELECT path, verdict, verified, checked, mtime_sec FROM records JOIN checks USING (id)
                 ORDER BY path",
            )
            .unwrap()
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows.len(), 300);
        for (name, verdict, verified, checked, mtime) in rows {
            let expected = match &name[..] {
                b"f/007" => ("modified", 9),
                _ => ("ok", 5),
            };
            assert_eq!((verdict.as_str(), mtime), expected);
            assert_eq!((verified, checked), (time, time));
        }
    }

    #[test]
    fn files_found_ok_whose_checks_were_deleted_by_hand_get_them_back() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..20).map(|i| format!("f/{i:02}")).collect();
        let mut db = recorded(dir.path(), &names);
        let deleted = db
            .conn
            .execute(
                "DELETE FROM checks WHERE id = (SELECT id FROM records WHERE path = ?1)",
                [b"f/05"],
            )
            .unwrap();
        assert_eq!(deleted, 1);
        found_ok(&mut db, &names);
        db.commit().unwrap();
        let found: i64 = db
            .conn
            .query_row(
                "SELECT count(*) FROM records JOIN checks USING (id)
                 WHERE verdict = 'ok' AND verified = ?1 AND checked = ?1",
                [db.batch_time],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(found, 20);
    }

    #[test]
    fn what_audits_found_stays_with_its_record_through_vacuum_and_a_new_record_inherits_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let mut db = DatabaseStore::open(&path, true).unwrap();
        for name in ["a", "b", "c"] {
            db.apply(name.as_bytes(), new_record(Status::New)(&record(5)))
                .unwrap();
        }
        db.commit().unwrap();
        let verified = db.batch_time;
        let corrupt = Change::Checked {
            status: Status::Corrupt,
            outboard: None,
        };
        db.apply(b"a", Change::Remove).unwrap();
        db.apply(b"c", corrupt).unwrap();
        db.finish().unwrap();
        // `c` removed by hand, as with `sqlite3`: its checks stay behind, and the next new
        // record takes its id. VACUUM renumbers the rows of a table without a declared key.
        db.conn
            .execute_batch("DELETE FROM records WHERE path = x'63'; VACUUM;")
            .unwrap();
        db.apply(b"d", Change::Import { record: &record(6) })
            .unwrap();
        db.finish().unwrap();
        drop(db);
        let mut db = DatabaseStore::open(&path, false).unwrap();
        let b = db.lookup(Path::new("b")).unwrap();
        assert_eq!(b.verified, Some(crate::audit::store::time(verified)));
        let d = db.lookup(Path::new("d")).unwrap();
        assert_eq!((d.prior, d.verified), (Prior::Record(record(6)), None));
        let verdict: Option<String> = db
            .conn
            .query_row(
                "SELECT verdict FROM records JOIN checks USING (id) WHERE path = x'64'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(verdict, None, "imported, never checked");
    }

    #[test]
    fn a_row_of_the_wrong_types_is_an_unusable_record_that_names_the_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let db = DatabaseStore::open(&path, true).unwrap();
        db.conn
            .execute_batch(
                "INSERT INTO records (path, size, mtime_sec, mtime_nsec, layout, algorithm, digest)
                 VALUES (x'66', 3, 5, 0, 7, 'blake3', x'00'),
                        (x'67', 3, 5, 0, 'plain', 'blake3', 'text');",
            )
            .unwrap();
        drop(db);
        let mut db = DatabaseStore::open(&path, true).unwrap();
        for (name, column) in [("f", "layout"), ("g", "digest")] {
            match db.lookup(Path::new(name)).unwrap().prior {
                Prior::Unusable(why) => assert!(why.contains(column), "{why}"),
                other => panic!("{other:?}"),
            }
        }
    }
}
