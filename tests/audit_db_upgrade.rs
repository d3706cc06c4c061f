//! The database store's schema across versions: a database an earlier mtsum made is read as
//! it is by readers and upgraded, every record and time kept, by an audit that may write; one
//! of a newer mtsum is refused and left as it was.

#![cfg(feature = "database")]

mod common;

use common::audit::{as_schema_version, flip_byte_keeping_mtime};
use common::run::run;
use common::{pattern, tempdir};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use mtsum::audit::outboard::MIN_LEAF;
use mtsum::audit::store::SCHEMA_VERSION;
use rusqlite::Connection;
use rusqlite::types::Value;

/// Every record with what the audits found of it, by name, from a database of any version:
/// `size, mtime_sec, mtime_nsec, layout, leaf_size, algorithm, digest, outboard_leaf,
/// outboard, verified, checked, verdict`.
fn everything(db: &Path) -> BTreeMap<Vec<u8>, Vec<Value>> {
    let conn = Connection::open(db).unwrap();
    let version: i32 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    let from = match version {
        3 => "records LEFT JOIN checks USING (id)",
        _ => "records",
    };
    let sql = format!(
        "SELECT path, size, mtime_sec, mtime_nsec, layout, leaf_size, algorithm, digest,
                outboard_leaf, outboard, verified, checked, verdict FROM {from}"
    );
    let mut statement = conn.prepare(&sql).unwrap();
    statement
        .query_map([], |r| {
            let values: rusqlite::Result<Vec<Value>> = (1..13).map(|i| r.get(i)).collect();
            Ok((r.get(0)?, values?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn version(db: &Path) -> i32 {
    Connection::open(db)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap()
}

/// Files `t/0` … `t/4`, one of several leaves (kept with its leaf digests), audited twice by
/// this mtsum with `t/4` rotten in between: records found `ok`, one found `corrupt`, and
/// verification times that differ.
fn audited_twice(dir: &Path) -> Vec<String> {
    fs::create_dir(dir.join("t")).unwrap();
    let names: Vec<String> = (0..5).map(|i| format!("t/{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        let len = if i == 0 {
            3 * MIN_LEAF as usize
        } else {
            100 * i
        };
        fs::write(dir.join(name), pattern(len, i as u64)).unwrap();
    }
    let first = run(dir, ["--audit", "--db", "db", "-r", "t"]);
    assert_eq!(first.code, Some(0), "{}", first.stderr());
    flip_byte_keeping_mtime(&dir.join("t/4"), 7);
    let second = run(dir, ["--audit", "--db", "db", "-r", "t"]);
    assert_eq!(second.code, Some(1), "{}", second.stderr());
    names
}

#[test]
fn a_database_of_version_2_is_upgraded_with_every_record_and_time_kept() {
    let dir = tempdir();
    let names = audited_twice(dir.path());
    let db = dir.path().join("db");
    let recorded = everything(&db);
    as_schema_version(&db, 2);
    assert_eq!(everything(&db), recorded, "the fixture holds the same");
    let outboards: Vec<bool> = recorded.values().map(|v| v[8] != Value::Null).collect();
    assert_eq!(outboards, [true, false, false, false, false]);

    // Readers read it as it is.
    let dry = run(
        dir.path(),
        ["--audit", "--db", "db", "--dry-run", "-r", "t"],
    );
    assert_eq!(dry.code, Some(1), "{}", dry.stderr());
    assert!(dry.stdout().contains("corrupt  t/4"), "{}", dry.stdout());
    let export = run(dir.path(), ["--audit", "--db", "db", "--export", "-"]);
    assert_eq!(export.code, Some(0), "{}", export.stderr());
    for name in &names {
        assert!(
            export.stdout().contains(name.as_str()),
            "{}",
            export.stdout()
        );
    }
    assert_eq!(version(&db), 2, "a reader writes nothing");

    // An audit that reads nothing (every file verified within the day) upgrades it, and
    // keeps every record and time as they were.
    let postponed = run(
        dir.path(),
        ["--audit", "--db", "db", "--max-age", "1d", "-r", "t"],
    );
    assert_eq!(postponed.code, Some(0), "{}", postponed.stderr());
    assert!(postponed.stderr().contains("5 files not due"));
    assert_eq!(version(&db), SCHEMA_VERSION);
    assert_eq!(everything(&db), recorded);
    let conn = Connection::open(&db).unwrap();
    let index: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'records_by_verified'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        index, 0,
        "the index on the verification times went with the old table"
    );
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);

    // And the next audit goes on from them.
    let audit = run(dir.path(), ["--audit", "--db", "db", "-r", "t"]);
    assert_eq!(
        (audit.code, audit.stdout()),
        (
            Some(1),
            "ok  t/0\nok  t/1\nok  t/2\nok  t/3\ncorrupt  t/4  (bytes 0-400)\n"
        )
    );
    let now = everything(&db);
    let verified = |all: &BTreeMap<Vec<u8>, Vec<Value>>, name: &[u8]| all[name][9].clone();
    assert_eq!(verified(&now, b"t/4"), verified(&recorded, b"t/4"));
    assert_ne!(verified(&now, b"t/0"), verified(&recorded, b"t/0"));
}

#[test]
fn a_database_of_a_newer_mtsum_is_refused_and_left_as_it_was() {
    let dir = tempdir();
    audited_twice(dir.path());
    let db = dir.path().join("db");
    Connection::open(&db)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let before = fs::read(&db).unwrap();
    for extra in [&[][..], &["--dry-run"]] {
        let r = run(
            dir.path(),
            [&["--audit", "--db", "db", "-r", "t"], extra].concat(),
        );
        assert_eq!(r.code, Some(2));
        assert_eq!(
            r.stderr(),
            format!(
                "mtsum: db: the database was made by a newer mtsum (schema version {}, this mtsum reads {SCHEMA_VERSION})\n",
                SCHEMA_VERSION + 1
            )
        );
    }
    assert_eq!(fs::read(&db).unwrap(), before);
}
