//! Helpers of the audit tests (`tests/audit*.rs`): bit rot made by hand (their runs of the real
//! binary, and its `STATUS  NAME` lines, are [`super::run`]'s).

use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::SystemTime;

pub fn mtime(path: &Path) -> SystemTime {
    fs::metadata(path).unwrap().modified().unwrap()
}

/// Bit rot: one byte changes, and nothing else does (size, mtime to the nanosecond).
pub fn flip_byte_keeping_mtime(path: &Path, offset: u64) {
    flip_bytes_keeping_mtime(path, &[offset]);
}

/// Bit rot: the bytes at `offsets` change, and nothing else does (size, mtime to the
/// nanosecond).
pub fn flip_bytes_keeping_mtime(path: &Path, offsets: &[u64]) {
    let before = fs::metadata(path).unwrap().modified().unwrap();
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    for &offset in offsets {
        let mut byte = [0];
        f.read_exact_at(&mut byte, offset).unwrap();
        f.write_all_at(&[byte[0] ^ 0x10], offset).unwrap();
    }
    f.set_modified(before).unwrap();
    drop(f);
    assert_eq!(fs::metadata(path).unwrap().modified().unwrap(), before);
}

/// Rewrites the database `db`, made by this mtsum, as an earlier mtsum made its databases of
/// schema `version` (1 or 2): the schema the database store's documentation gives for them
/// (module `mtsum::audit::database`), what the audits found in `records`, with the index on
/// `verified` that databases made before 2026-11-29 had. Rows keep what they hold, not
/// their ids (rowids, then).
#[cfg(feature = "database")]
pub fn as_schema_version(db: &Path, version: i32) {
    assert!(matches!(version, 1 | 2));
    let repairs = match version {
        1 => "DROP TABLE repairs;",
        _ => "",
    };
    rusqlite::Connection::open(db)
        .unwrap()
        .execute_batch(&format!(
            "BEGIN;
             CREATE TABLE earlier (
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
             INSERT INTO earlier
                 SELECT path, size, mtime_sec, mtime_nsec, layout, leaf_size, algorithm, digest,
                        verified, checked, verdict, outboard_leaf, outboard
                 FROM records LEFT JOIN checks USING (id) ORDER BY path DESC;
             DROP TABLE records;
             DROP TABLE checks;
             ALTER TABLE earlier RENAME TO records;
             CREATE INDEX records_by_verified ON records (verified);
             {repairs}
             PRAGMA user_version = {version};
             COMMIT;"
        ))
        .unwrap();
}
