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
//! # Schema, version 2
//!
//! ```sql
//! PRAGMA application_id = 0x6d74736d;  -- 'mtsm': this file is an mtsum database
//! PRAGMA user_version = 2;
//! CREATE TABLE records (
//!     path          BLOB PRIMARY KEY,   -- the name, spelled as in manifests (manifest::key)
//!     size          INTEGER NOT NULL,   -- bytes
//!     mtime_sec     INTEGER NOT NULL,   -- st_mtim
//!     mtime_nsec    INTEGER NOT NULL,
//!     layout        TEXT NOT NULL,      -- mtsum, plain, merkle, rfc6962, s3, glacier, ...
//!     leaf_size     INTEGER,            -- merkle and rfc6962 (the part size for s3)
//!     algorithm     TEXT NOT NULL,      -- md5, sha1, ..., blake3, xxh3, xxh128, crc32, ...
//!     digest        BLOB NOT NULL,      -- then the part count where an S3 value's is not
//!                                       -- the one its size implies (Record::value_bytes)
//!     verified      INTEGER,            -- ns since the epoch: when the file last matched
//!     checked       INTEGER,            -- ns since the epoch: when an audit last read it
//!     verdict       TEXT,               -- and what it found: ok, corrupt, modified, ...
//!     outboard_leaf INTEGER,            -- leaf size of the outboard tree
//!     outboard      BLOB                -- its leaf digests, concatenated, after a byte 1
//!                                       -- for BLAKE3 subtrees (none: RFC 6962, earlier builds)
//! );
//! CREATE TABLE repairs (                -- since version 2
//!     path          BLOB PRIMARY KEY,   -- a file being repaired in place
//!     size          INTEGER NOT NULL,   -- the stamp the repair puts back: its record's
//!     mtime_sec     INTEGER NOT NULL,
//!     mtime_nsec    INTEGER NOT NULL
//! );
//! ```
//!
//! Databases made before 2026-11-29 also have an index `records_by_verified` on `verified`;
//! nothing reads by it, and every verify rewrote it (a third of a verify's database work), so
//! an audit that may write drops it. Versions that know it still read such a database.
//!
//! A database of version 1 (no `repairs`) is upgraded when an audit or a repair opens it for
//! writing; a reader (`--dry-run`, `--export`) reads it as it is, with no repair in progress.
//! An older mtsum refuses version 2 as newer than it reads: it would not heed the marks.
//!
//! Names are the paths as the audit met them, tidied as in manifests; give absolute paths to
//! keep several trees apart. A file that is not a SQLite database, or a SQLite database of
//! another program, is refused and never written to.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};

use super::Status;
use crate::audit::AuditError;
use crate::audit::outboard::Outboard;
use crate::layout::LeafSize;
use crate::source::Stamp;

use super::manifest::{is_within, key};

mod rows;
use super::{
    Change, DatabaseError, Entry, OwnFile, Prior, Record, RecordStore, SCHEMA_VERSION, StoreError,
    is_unwalked, nanos, resolved,
};
use rows::{Ahead, RECORD_COLUMNS, REPAIRING, entry, path_of, row_record};

/// `PRAGMA application_id` of an mtsum database: `mtsm` in ASCII.
pub const APPLICATION_ID: i32 = 0x6d74_736d;
/// The longest a commit goes without waiting for the disk while changes keep coming.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(2);

/// Version 1's schema; [`UPGRADES`] add the rest.
const SCHEMA_1: &str = "
    CREATE TABLE records (
        path          BLOB PRIMARY KEY,
        size          INTEGER NOT NULL,
        mtime_sec     INTEGER NOT NULL,
        mtime_nsec    INTEGER NOT NULL,
        layout        TEXT NOT NULL,
        leaf_size     INTEGER,
        algorithm     TEXT NOT NULL,
        digest        BLOB NOT NULL,
        verified      INTEGER,
        checked       INTEGER,
        verdict       TEXT,
        outboard_leaf INTEGER,
        outboard      BLOB
    );
";

/// What each later version adds: `UPGRADES[i]` takes a database from version `i + 1` to
/// `i + 2`.
const UPGRADES: [&str; SCHEMA_VERSION as usize - 1] = [
    // 2: repairs in progress.
    "CREATE TABLE repairs (
        path          BLOB PRIMARY KEY,
        size          INTEGER NOT NULL,
        mtime_sec     INTEGER NOT NULL,
        mtime_nsec    INTEGER NOT NULL
    );",
];

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
    /// The files of the open transaction read and found `ok` whose records are yet to say
    /// so ([`DatabaseStore::write_verified`]).
    verified_now: Vec<Vec<u8>>,
    /// When it began: the time its changes give the files they verify or check. One time for
    /// a batch (at most a second), so that files verified together keep the order of the
    /// walk among the least recently verified (`--time-budget`) whichever reader was first.
    batch_time: i64,
    /// Whether the database may hold repair marks (it had some when opened, or this audit
    /// made one): only then does a change look for one to delete.
    may_have_marks: bool,
    /// The columns a record is read with ([`RECORD_COLUMNS`] and whether a repair is in
    /// progress, which a database of version 1 read as it is cannot say: none is).
    columns: String,
    /// A reader's lock, which keeps writers out until it is done ([`open_reader`]).
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
        let marks = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'repairs'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(|e| fail(e.into()))?;
        let repairing = if marks > 0 { REPAIRING } else { "0" };
        let may_have_marks = marks > 0
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
            verified_now: Vec::new(),
            batch_time: 0,
            may_have_marks,
            columns: format!("{RECORD_COLUMNS}, {repairing}"),
            _read_lock: read_lock,
        })
    }

    fn error(&self, e: impl Into<DatabaseError>) -> AuditError {
        AuditError::Database {
            path: self.path.clone(),
            error: e.into(),
        }
    }

    /// The entry named `name`.
    fn get(&self, name: &[u8]) -> Result<Entry, DatabaseError> {
        let sql = format!("SELECT {} FROM records WHERE path = ?1", self.columns);
        let row = self
            .conn
            .prepare_cached(&sql)?
            .query_row([name], |row| Ok(row_record(row)))
            .optional()?;
        Ok(row.map_or(Entry::of(Prior::None), |(_, record, state)| {
            entry((record, state))
        }))
    }

    /// The entry named `name` from the records read ahead ([`Ahead::lookup`]), and whether
    /// its argument is alone ([`RecordStore::walking`]).
    fn get_ahead(&mut self, name: &[u8]) -> Result<Option<(Entry, bool)>, DatabaseError> {
        let Some(ahead) = &mut self.ahead else {
            return Ok(None);
        };
        let entry = ahead.lookup(&self.conn, &self.columns, name)?;
        Ok(entry.map(|entry| (entry, ahead.alone())))
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
        self.write_verified()?;
        self.conn.execute_batch("COMMIT")?;
        self.in_transaction = false;
        self.synced(self.syncing)
    }

    /// Writes `change` to the records: a file found `ok` with the others of the transaction,
    /// before its commit; any other change at once.
    fn write(&mut self, name: &[u8], change: Change) -> Result<(), DatabaseError> {
        if let Change::Checked {
            status: Status::Ok,
            outboard: None,
        } = change
        {
            self.verified_now.push(name.to_vec());
            return Ok(());
        }
        // In the order the changes came.
        self.write_verified()?;
        self.write_one(name, change)
    }

    /// Writes that the files of [`DatabaseStore::verified_now`] were found `ok` now: one
    /// statement per [`VERIFIED_AT_ONCE`] files, which took a third of the time a statement
    /// per file did (in a verify that changes nothing, every file is one of them).
    fn write_verified(&mut self) -> Result<(), DatabaseError> {
        if self.verified_now.is_empty() {
            return Ok(());
        }
        let marks = vec!["?"; VERIFIED_AT_ONCE].join(", ");
        let sql = format!(
            "UPDATE records SET checked = ?1, verdict = 'ok', verified = ?1 WHERE path IN ({marks})"
        );
        let mut statement = self.conn.prepare_cached(&sql)?;
        for names in self.verified_now.chunks(VERIFIED_AT_ONCE) {
            // A short last chunk repeats its first name: one statement serves every chunk.
            let mut params: Vec<&dyn rusqlite::ToSql> = vec![&self.batch_time];
            params.extend(
                (0..VERIFIED_AT_ONCE)
                    .map(|i| names.get(i).unwrap_or(&names[0]) as &dyn rusqlite::ToSql),
            );
            statement.execute(&*params)?;
        }
        drop(statement);
        self.verified_now.clear();
        Ok(())
    }

    /// Writes `change` to the records at once.
    fn write_one(&mut self, name: &[u8], change: Change) -> Result<(), DatabaseError> {
        let now = self.batch_time;
        let (record, status, outboard) = match change {
            Change::Set {
                record,
                status,
                outboard,
            } => (record, Some(status), outboard),
            Change::Import { record } => (record, None, None),
            Change::Checked { status, outboard } => {
                if let Some(o) = outboard {
                    self.conn
                        .prepare_cached(
                            "UPDATE records SET outboard_leaf = ?2, outboard = ?3 WHERE path = ?1",
                        )?
                        .execute(params![name, o.leaf.get() as i64, o.to_bytes()])?;
                }
                let verified = (status == Status::Ok).then_some(now);
                self.conn
                    .prepare_cached(
                        "UPDATE records SET checked = ?2, verdict = ?3, verified = coalesce(?4, verified)
                         WHERE path = ?1",
                    )?
                    .execute(params![name, now, status.name(), verified])?;
                return Ok(());
            }
            Change::Remove => {
                self.conn
                    .prepare_cached("DELETE FROM records WHERE path = ?1")?
                    .execute([name])?;
                return Ok(());
            }
        };
        // A record written by an audit matched the file just now; an imported one has never
        // been verified.
        let now = status.map(|_| now);
        let (sec, nsec) = (record.stamp.mtime.sec, record.stamp.mtime.nsec);
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO records (path, size, mtime_sec, mtime_nsec, layout, leaf_size, algorithm, digest, verified, checked, verdict, outboard_leaf, outboard)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10, ?11, ?12)",
            )?
            .execute(params![
                        name,
                        record.stamp.len as i64,
                        sec,
                        nsec,
                        record.layout.name(),
                        record.layout.size_parameter().map(|l| l.get() as i64),
                        record.algorithm.name(),
                        record.value_bytes(),
                        now,
                        status.map(Status::name),
                        outboard.map(|o| o.leaf.get() as i64),
                        outboard.map(Outboard::to_bytes),
                    ])?;
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

/// Files whose `ok` one statement writes ([`DatabaseStore::write_verified`]).
const VERIFIED_AT_ONCE: usize = 128;

/// Opens the database and checks that it is ours (or new), before anything is written; a
/// reader's with the lock that keeps writers out while it reads.
fn connect(path: &Path, writable: bool) -> Result<(Connection, Option<ReadLock>), DatabaseError> {
    let empty = || -> Result<(Connection, Option<ReadLock>), DatabaseError> {
        // Nothing recorded yet, and a reader must not create the file: an empty database in
        // memory answers every lookup with "no record".
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(SCHEMA_1)?;
        conn.execute_batch(&UPGRADES.concat())?;
        Ok((conn, None))
    };
    // Of a directory SQLite would say "unable to open database file", or "disk I/O error" to
    // a reader, which sends an administrator looking for a failing disk; a reader would wait
    // for a writer to open a FIFO, maybe for ever. A database that cannot be looked at (a
    // directory the user may not search) is no "none yet": a reader would export nothing and
    // call every file new.
    let exists = match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(crate::source::InputError::IsADirectory),
        Ok(m) if !m.is_file() => Err(crate::source::InputError::NotRegular),
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(crate::source::InputError::Io(e)),
    }
    .map_err(|e| DatabaseError::Sqlite(e.to_string()))?;
    let (conn, lock, (app, version, objects)) = if writable {
        check_writable(&resolved(path))?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        // Refuse at once rather than wait: the other audit may run for days.
        conn.busy_timeout(Duration::ZERO)?;
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
        let found = inspect(&conn)?;
        (conn, None, found)
    } else if !exists {
        return empty();
    } else {
        let (conn, lock, found) = open_reader(path)?;
        (conn, Some(lock), found)
    };
    let fresh = app == 0 && version == 0 && objects == 0;
    if !fresh {
        if app != APPLICATION_ID {
            return Err(DatabaseError::Foreign(format!(
                "a SQLite database of another program, application id {app:#x}"
            )));
        }
        if version > SCHEMA_VERSION {
            return Err(DatabaseError::Newer(version));
        }
        if version < 1 {
            return Err(DatabaseError::Foreign(format!("schema version {version}")));
        }
    }
    if !writable {
        return if fresh { empty() } else { Ok((conn, lock)) };
    }
    if conn.is_readonly("main")? {
        return Err(DatabaseError::ReadOnly(String::new()));
    }
    // Takes the exclusive lock now, and keeps it (locking_mode): a second audit is refused
    // before it has read anything.
    conn.execute_batch("BEGIN EXCLUSIVE; COMMIT;")?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    if fresh {
        conn.execute_batch(&format!(
            "BEGIN; {SCHEMA_1} {} PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;",
            UPGRADES.concat()
        ))?;
    } else if version < SCHEMA_VERSION {
        let upgrades = UPGRADES[version as usize - 1..].concat();
        conn.execute_batch(&format!(
            "BEGIN; {upgrades} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        ))?;
    }
    conn.execute_batch("DROP INDEX IF EXISTS records_by_verified;")?;
    Ok((conn, None))
}

/// Opens an existing database for reading only (`--dry-run`, `--export`), writing nothing,
/// not even a file beside it: the user may be allowed to write neither the database nor its
/// directory (a file of mode 0444, a read-only file system), as with `sqlite3 -readonly`.
///
/// SQLite reads a database in WAL mode through its log and an index beside it (`FILE-wal`,
/// `FILE-shm`), which it creates when they are missing, and cannot where the directory is
/// read-only. But an audit that ends folds its log into the database and deletes it, so
/// without a log (or with an empty one) the database file alone holds every record: it is
/// read as it is (SQLite's `immutable`, which takes no lock and creates nothing), under a
/// [`ReadLock`] that keeps writers out until the reader is done, so that it never sees a
/// checkpoint half written. A log with changes in it (an audit was killed) is read the way
/// SQLite reads it, or, where the index cannot be created, refused with a message saying so.
///
/// So is a rollback journal (`FILE-journal`: a database another program took out of WAL
/// mode, or a switch to WAL cut short): one left by a change cut short holds the pages that
/// change overwrote, so the database file alone is half written, and only a connection that
/// may write can roll it back; a reader says so.
fn open_reader(path: &Path) -> Result<(Connection, ReadLock, Header), DatabaseError> {
    let lock = ReadLock::take(path)?;
    let file = resolved(path);
    let pending = |suffix| fs::metadata(companion(&file, suffix)).is_ok_and(|m| m.len() > 0);
    if pending("-wal") || pending("-journal") {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(Duration::ZERO)?;
        return match inspect(&conn) {
            Ok(found) => Ok((conn, lock, found)),
            Err(e)
                if e.sqlite_error().map(|e| e.extended_code)
                    == Some(rusqlite::ffi::SQLITE_READONLY_ROLLBACK) =>
            {
                Err(DatabaseError::JournalUnfinished)
            }
            Err(e)
                if matches!(
                    e.sqlite_error_code(),
                    Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen)
                ) =>
            {
                Err(DatabaseError::LogUnreadable)
            }
            Err(e) => Err(e.into()),
        };
    }
    let conn = open_immutable(path)?;
    let found = inspect(&conn)?;
    Ok((conn, lock, found))
}

/// `FILE-wal`, `FILE-shm`, `FILE-journal`: a file SQLite keeps beside the database file `path` ([`resolved`]).
fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// SQLite's shared lock on a database file, taken by a reader that reads the file as it is
/// ([`open_reader`]): the byte ranges of SQLite's unix locking (`PENDING_BYTE`, then the
/// shared range), so that it conflicts with the exclusive lock a writer holds from opening
/// to the end (see *One audit at a time*), and a writer is refused while it is held. It is an
/// open file description lock: unlike a classic `fcntl` lock it is not dropped when SQLite
/// closes another descriptor of the same file in this process.
struct ReadLock {
    /// Holds the lock while it is open.
    _file: fs::File,
}

impl ReadLock {
    const PENDING_BYTE: i64 = 0x4000_0000;
    const SHARED_FIRST: i64 = Self::PENDING_BYTE + 2;
    const SHARED_SIZE: i64 = 510;

    /// Takes the lock on the database `path`, or fails at once with
    /// [`DatabaseError::Busy`] while a writer holds it.
    fn take(path: &Path) -> Result<ReadLock, DatabaseError> {
        let file = fs::File::open(path)
            .map_err(|e| DatabaseError::Sqlite(crate::source::InputError::Io(e).to_string()))?;
        // As SQLite does: the pending byte keeps a reader out while a writer waits for the
        // readers to go; the shared range is what a writer locks exclusively.
        let taken = lock_range(&file, libc::F_RDLCK, Self::PENDING_BYTE, 1).and_then(|()| {
            let shared = lock_range(&file, libc::F_RDLCK, Self::SHARED_FIRST, Self::SHARED_SIZE);
            lock_range(&file, libc::F_UNLCK, Self::PENDING_BYTE, 1)?;
            shared
        });
        match taken {
            Ok(()) => Ok(ReadLock { _file: file }),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.raw_os_error() == Some(libc::EACCES) =>
            {
                Err(DatabaseError::Busy)
            }
            Err(e) => Err(DatabaseError::Sqlite(format!(
                "cannot lock the database: {}",
                crate::source::InputError::Io(e)
            ))),
        }
    }
}

/// Sets (or clears, with `F_UNLCK`) an open file description lock of `kind` on `len` bytes
/// of `file` from `start`, without waiting.
fn lock_range(file: &fs::File, kind: libc::c_int, start: i64, len: i64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero `flock` is a valid value of this plain C struct (and `l_pid` must
    // be 0 for open file description locks).
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = start;
    lock.l_len = len;
    // SAFETY: the descriptor is open for the duration of the call and `lock` is a valid
    // `flock` that outlives it.
    match unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) } {
        -1 => Err(std::io::Error::last_os_error()),
        _ => Ok(()),
    }
}

/// The application id, the schema version and the number of schema objects ([`inspect`]).
type Header = (i32, i32, i64);

/// The application id, the schema version and the number of schema objects. Reading the
/// header and the schema is the first access: a file that is not a database fails here, with
/// nothing written.
fn inspect(conn: &Connection) -> rusqlite::Result<Header> {
    let app: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let version: i32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let objects: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
    Ok((app, version, objects))
}

/// The database file read as it is, on the promise that nobody writes it meanwhile (SQLite's
/// `immutable`): [`open_reader`] holds a [`ReadLock`] to keep the promise.
fn open_immutable(path: &Path) -> Result<Connection, DatabaseError> {
    // Every byte but plain ASCII escaped: SQLite decodes `%HH` into the byte, so a name that
    // is not UTF-8 (a Latin-1 file name) reaches the file system as it is.
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'/' | b'.' | b'-' | b'_' => {
                uri.push(char::from(b))
            }
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri.push_str("?immutable=1");
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    Ok(Connection::open_with_flags(uri, flags)?)
}

/// Fails unless we may write the database and, for its log, the directory holding it: SQLite
/// would open such a file read-only and fail later with a vaguer message.
fn check_writable(path: &Path) -> Result<(), DatabaseError> {
    let may_write = |p: &Path| -> std::io::Result<()> {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
        match unsafe { libc::access(c.as_ptr(), libc::W_OK) } {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        }
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let os = |e: std::io::Error| crate::source::InputError::Io(e).to_string();
    if path.exists() {
        may_write(path).map_err(|e| DatabaseError::ReadOnly(format!(" ({})", os(e))))?;
    }
    may_write(dir).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            return DatabaseError::NoDirectory;
        }
        DatabaseError::ReadOnly(format!(
            " (its directory is not writable for the log beside it: {})",
            os(e)
        ))
    })
}

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
        let entry = match self.get_ahead(&name) {
            // Read ahead, in the walk of an argument that no other overlaps: the walk
            // passes it once, and leaves it out of the argument's unseen records.
            Ok(Some((entry, true))) => return Ok(entry),
            Ok(Some((entry, false))) => Ok(entry),
            Ok(None) => self.get(&name),
            Err(e) => Err(e),
        }
        .map_err(|e| StoreError::Fatal(self.error(e)))?;
        self.seen.insert(name, entry.clone());
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
        for (name, record) in ahead.rest(&self.conn, &self.columns) {
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
        let sql = format!("SELECT {} FROM records ORDER BY path", self.columns);
        let mut statement = self.conn.prepare(&sql).map_err(|e| self.error(e))?;
        let rows = statement
            .query_map([], |row| Ok(row_record(row)))
            .map_err(|e| self.error(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (name, record, _) = row.map_err(|e| self.error(e))?;
            let record = record.map_err(|why| {
                self.error(DatabaseError::Corrupt(format!(
                    "the record of {}: {why}",
                    String::from_utf8_lossy(&name)
                )))
            })?;
            out.push((path_of(name), record));
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
        let repairing = |db: &DatabaseStore| db.get(b"f").unwrap().repairing;
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

    #[test]
    fn files_found_ok_are_written_at_the_commit_and_in_the_order_of_the_changes() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = DatabaseStore::open(&dir.path().join("db"), true).unwrap();
        let names: Vec<String> = (0..300).map(|i| format!("f/{i:03}")).collect();
        for name in &names {
            db.apply(name.as_bytes(), new_record(Status::New)(&record(5)))
                .unwrap();
        }
        db.commit().unwrap();
        let ok = Change::Checked {
            status: Status::Ok,
            outboard: None,
        };
        for name in &names {
            db.apply(name.as_bytes(), ok).unwrap();
        }
        // Found ok, then modified and recorded anew in the same batch: the later change wins.
        db.apply(b"f/007", new_record(Status::Modified)(&record(9)))
            .unwrap();
        db.commit().unwrap();
        let time = db.batch_time;
        let rows: Vec<(Vec<u8>, String, i64, i64, i64)> = db
            .conn
            .prepare(
                "SELECT path, verdict, verified, checked, mtime_sec FROM records ORDER BY path",
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
    fn an_audit_drops_the_index_of_verification_times_that_nothing_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let index = |db: &DatabaseStore| -> i64 {
            db.conn
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE name = 'records_by_verified'",
                    [],
                    |r| r.get(0),
                )
                .unwrap()
        };
        let db = DatabaseStore::open(&path, true).unwrap();
        assert_eq!(index(&db), 0, "a new database has none");
        db.conn
            .execute_batch("CREATE INDEX records_by_verified ON records (verified);")
            .unwrap();
        drop(db);
        assert_eq!(index(&DatabaseStore::open(&path, false).unwrap()), 1);
        assert_eq!(index(&DatabaseStore::open(&path, true).unwrap()), 0);
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
