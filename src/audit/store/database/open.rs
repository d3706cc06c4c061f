//! Opening a database: the checks that it is ours, of a version we read, and that we may
//! write it; the schema and its upgrades; the lock a reader holds while it reads.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::APPLICATION_ID;
use crate::audit::store::{DatabaseError, SCHEMA_VERSION, resolved};

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
/// `i + 2`, in the transaction that sets the version.
const UPGRADES: [&str; SCHEMA_VERSION as usize - 1] = [
    // 2: repairs in progress.
    "CREATE TABLE repairs (
        path          BLOB PRIMARY KEY,
        size          INTEGER NOT NULL,
        mtime_sec     INTEGER NOT NULL,
        mtime_nsec    INTEGER NOT NULL
    );",
    // 3: what the audits found in a narrow table of its own, keyed by an id each record
    // keeps: a verify that changed nothing rewrote every row of `records`, so every page of
    // it went to the log and back at the checkpoint. The table is rebuilt for the id (an
    // `INTEGER PRIMARY KEY`, which `VACUUM` keeps, as it need not keep an implicit rowid),
    // given in name order, the walk's: the rows a batch of a verify writes lie together.
    // The index on `verified` of earlier databases goes with the old table.
    "CREATE TABLE records_3 (
        id            INTEGER PRIMARY KEY,
        path          BLOB NOT NULL UNIQUE,
        size          INTEGER NOT NULL,
        mtime_sec     INTEGER NOT NULL,
        mtime_nsec    INTEGER NOT NULL,
        layout        TEXT NOT NULL,
        leaf_size     INTEGER,
        algorithm     TEXT NOT NULL,
        digest        BLOB NOT NULL,
        outboard_leaf INTEGER,
        outboard      BLOB
    );
    INSERT INTO records_3 (path, size, mtime_sec, mtime_nsec, layout, leaf_size, algorithm,
                           digest, outboard_leaf, outboard)
        SELECT path, size, mtime_sec, mtime_nsec, layout, leaf_size, algorithm, digest,
               outboard_leaf, outboard
        FROM records WHERE path IS NOT NULL ORDER BY path;
    CREATE TABLE checks (
        id            INTEGER PRIMARY KEY,
        verified      INTEGER,
        checked       INTEGER,
        verdict       TEXT
    );
    INSERT INTO checks (id, verified, checked, verdict)
        SELECT n.id, o.verified, o.checked, o.verdict
        FROM records_3 n JOIN records o ON o.path = n.path;
    DROP TABLE records;
    ALTER TABLE records_3 RENAME TO records;",
];

/// Opens the database and checks that it is ours (or new), before anything is written; a
/// reader's with the lock that keeps writers out while it reads.
pub(super) fn connect(
    path: &Path,
    writable: bool,
) -> Result<(Connection, Option<ReadLock>), DatabaseError> {
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
        // The pages of the table the upgrade to version 3 rebuilt are given back: the file
        // would stay twice its size. Only that: where it fails (no room for the copy it
        // makes), the database is upgraded and whole, and the audit goes on.
        let _ = conn.execute_batch("VACUUM;");
    }
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
pub(super) struct ReadLock {
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
