//! `mtsum --audit --db FILE` on real SQLite files: what is stored, what survives a `kill -9`,
//! what `--max-age`, `--time-budget`, `--migrate`, `--limit-rate`, `--export` and `--import`
//! do, and the databases that must be refused without being touched.

#![cfg(feature = "database")]

mod common;

use common::audit::flip_byte_keeping_mtime;
use common::run::{Run, run};
use common::{MTSUM, mtsum_unprivileged, pattern, skip, tempdir};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use mtsum::audit::database::APPLICATION_ID;
use mtsum::audit::{self, Event, Options, Postponed, Store};
use mtsum::source::Target;
use mtsum::walk::Recursion;
use mtsum::{Algorithm, Layout, reference};
use rusqlite::Connection;

/// `(status, name)` of each whole line of what a killed run printed.
fn verdicts(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter_map(|l| l.split_once("  "))
        .map(|(s, n)| (s.to_string(), n.to_string()))
        .collect()
}

fn audit(dir: &Path, args: &[&str]) -> Run {
    run(dir, [&["--audit", "--db", "db"], args].concat())
}

/// `count` files `t/NN` of a few KiB each, different content; returns their names.
fn tree(dir: &Path, count: usize) -> Vec<String> {
    fs::create_dir_all(dir.join("t")).unwrap();
    (0..count)
        .map(|i| {
            let name = format!("t/{i:02}");
            fs::write(dir.join(&name), pattern(1000 + 37 * i, i as u64)).unwrap();
            name
        })
        .collect()
}

/// The `records` table: name → (layout, algorithm, digest hex, verified).
fn records(db: &Path) -> BTreeMap<String, (String, String, String, Option<i64>)> {
    let conn = Connection::open(db).unwrap();
    let mut st = conn
        .prepare(
            "SELECT path, layout, algorithm, digest, verified FROM records LEFT JOIN checks USING (id)",
        )
        .unwrap();
    st.query_map([], |r| {
        let path: Vec<u8> = r.get(0)?;
        let digest: Vec<u8> = r.get(3)?;
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        Ok((
            String::from_utf8(path).unwrap(),
            (r.get(1)?, r.get(2)?, hex, r.get(4)?),
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn records_live_in_a_sqlite_database_of_our_own_in_wal_mode() {
    let dir = tempdir();
    let names = tree(dir.path(), 3);
    let first = audit(dir.path(), &["-r", "t"]);
    assert_eq!(first.code, Some(0), "{}", first.stderr());
    assert!(first.verdicts().iter().all(|(s, _)| s == "new"));

    let conn = Connection::open(dir.path().join("db")).unwrap();
    let app: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!((app, mode.as_str()), (APPLICATION_ID, "wal"));
    drop(conn);
    let stored = records(&dir.path().join("db"));
    assert_eq!(stored.keys().cloned().collect::<Vec<_>>(), names);
    for name in &names {
        let data = fs::read(dir.path().join(name)).unwrap();
        let (layout, alg, hex, verified) = &stored[name];
        assert_eq!((layout.as_str(), alg.as_str()), ("plain", "blake3"));
        assert_eq!(
            *hex,
            reference::root(Layout::Plain, Algorithm::Blake3, &data).to_hex()
        );
        assert!(verified.is_some());
    }

    flip_byte_keeping_mtime(&dir.path().join(&names[1]), 10);
    fs::remove_file(dir.path().join(&names[2])).unwrap();
    let second = audit(dir.path(), &["-r", "t"]);
    assert_eq!(second.code, Some(1));
    assert_eq!(
        second.verdicts(),
        [
            ("ok".to_string(), names[0].clone()),
            (
                "corrupt".to_string(),
                format!("{}  (bytes 0-1037)", names[1])
            ),
            ("missing".to_string(), names[2].clone()),
        ]
    );
}

#[test]
fn the_database_and_its_log_inside_the_audited_tree_are_not_audited() {
    let dir = tempdir();
    fs::write(dir.path().join("a"), "a").unwrap();
    audit(dir.path(), &["-r", "."]);
    let again = audit(dir.path(), &["-r", "."]);
    assert_eq!(again.stdout(), "ok  ./a\n", "{}", again.stderr());
}

#[test]
fn the_database_inside_the_tree_under_another_name_is_not_audited_either() {
    // The audit examines only the files whose names may be the database's before reading
    // them; a database with another name in the tree (a hard link) makes it examine all.
    let dir = tempdir();
    fs::create_dir(dir.path().join("t")).unwrap();
    fs::write(dir.path().join("t/a"), "a").unwrap();
    audit(dir.path(), &["-r", "t"]);
    fs::hard_link(dir.path().join("db"), dir.path().join("t/records")).unwrap();
    let again = audit(dir.path(), &["-r", "t"]);
    assert_eq!(again.stdout(), "ok  t/a\n", "{}", again.stderr());
}

#[test]
fn arguments_that_overlap_see_the_records_as_they_were_before_the_audit() {
    // The second argument meets files the first one's walk updated: both say what the
    // database held before this audit, and neither calls a file of the other missing.
    let dir = tempdir();
    fs::create_dir_all(dir.path().join("t/sub")).unwrap();
    for name in ["t/a", "t/sub/b"] {
        fs::write(dir.path().join(name), "old").unwrap();
    }
    audit(dir.path(), &["-r", "t"]);
    fs::write(dir.path().join("t/sub/b"), "edited").unwrap();
    let both = audit(dir.path(), &["--update", "-r", "t", "t/sub", "t/sub/b"]);
    assert_eq!(
        both.stdout(),
        "ok  t/a\nmodified  t/sub/b\nmodified  t/sub/b\nmodified  t/sub/b\n",
        "{}",
        both.stderr()
    );
    let after = audit(dir.path(), &["-r", "t"]);
    assert_eq!(
        after.stdout(),
        "ok  t/a\nok  t/sub/b\n",
        "{}",
        after.stderr()
    );
}

#[test]
fn several_trees_share_one_database() {
    let dir = tempdir();
    for t in ["a", "b"] {
        fs::create_dir_all(dir.path().join(t)).unwrap();
        fs::write(dir.path().join(t).join("f"), t).unwrap();
    }
    audit(dir.path(), &["-r", "a"]);
    audit(dir.path(), &["-r", "b"]);
    let again = audit(dir.path(), &["-r", "a"]);
    assert_eq!(
        again.stdout(),
        "ok  a/f\n",
        "b's records are not missing from a"
    );
    assert_eq!(records(&dir.path().join("db")).len(), 2);
}

#[test]
fn a_second_audit_of_the_same_database_is_refused_at_once() {
    let dir = tempdir();
    tree(dir.path(), 2);
    // A big sparse file read slowly keeps the first audit busy.
    let big = dir.path().join("t/big");
    fs::File::create(&big).unwrap().set_len(1 << 30).unwrap();
    let mut first = StdCommand::new(MTSUM)
        .args(["--audit", "--db", "db", "--limit-rate", "64M", "-r", "t"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Once the database file exists, the first audit holds its lock.
    common::wait_until("the database exists", || dir.path().join("db").exists());
    thread::sleep(Duration::from_millis(200));
    let second = audit(dir.path(), &["t/00"]);
    let _ = first.kill();
    let _ = first.wait();
    assert_eq!(second.code, Some(2));
    assert_eq!(
        second.stderr(),
        "mtsum: db: another mtsum is using this database; try again when it is done\n"
    );
    assert_eq!(second.stdout(), "");
}

#[test]
fn export_and_dry_run_during_an_audit_are_refused_at_once_not_kept_waiting_for_its_end() {
    let dir = tempdir();
    tree(dir.path(), 2);
    audit(dir.path(), &["-r", "t"]);
    // An audit of a few seconds: a reader that waited for its end would then succeed.
    let big = dir.path().join("t/big");
    fs::File::create(&big).unwrap().set_len(8 << 20).unwrap();
    let first = slow_audit(dir.path(), "2M")
        .args(["-r", "t"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = ChildGuard(first);
    let busy = "mtsum: db: another mtsum is using this database; try again when it is done\n";
    // Once the audit reads the big file it holds the database.
    common::wait_until("the audit reads", || bytes_read_by(first.0.id()) > 1 << 20);
    let export = audit(dir.path(), &["--export", "-"]);
    let dry_run = audit(dir.path(), &["--dry-run", "-r", "t"]);
    assert!(
        first.0.try_wait().unwrap().is_none(),
        "the audit ended early"
    );
    assert_eq!((export.code, export.stderr()), (Some(2), busy));
    assert_eq!(export.stdout(), "");
    assert_eq!((dry_run.code, dry_run.stderr()), (Some(2), busy));
    assert_eq!(dry_run.stdout(), "");
    assert!(first.0.wait().unwrap().success());
}

#[test]
fn a_closed_stdout_ends_the_audit_by_sigpipe_keeping_what_was_committed() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempdir();
    tree(dir.path(), audit::BATCH_FILES + 50);
    // The pipe is closed before mtsum writes anything: its first line meets SIGPIPE.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    // One reader in walk order: files are recorded as soon as they are read, so a file read
    // ahead of the first one (by another reader, or earlier in a rotational disk's physical
    // order) would be recorded too.
    let out = StdCommand::new(MTSUM)
        .args(["--audit", "--db", "db", "-r", "t", "--readers", "1"])
        .env("MTSUM_ROTATIONAL", "0")
        .current_dir(dir.path())
        .stdout(writer)
        .output()
        .unwrap();
    // Killed by the default action of SIGPIPE, quietly, as the hash mode and coreutils are.
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    // The first batch was committed before its lines were written; no other.
    let committed = records(&dir.path().join("db")).len();
    assert!(
        (1..=audit::BATCH_FILES).contains(&committed),
        "{committed} records"
    );
}

/// Runs `mtsum --audit --db FILE t` against a database file that must be refused, and
/// checks the one-line error, the status and that the file was not touched.
fn refused(dir: &Path, db: &str, cause: &str) {
    let before = fs::read(dir.join(db)).unwrap();
    let r = run(dir, ["--audit", "--db", db, "-r", "t"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr());
    assert_eq!(r.stderr(), format!("mtsum: {db}: {cause}\n"));
    assert_eq!(r.stdout(), "");
    assert_eq!(fs::read(dir.join(db)).unwrap(), before, "{db} untouched");
}

#[test]
fn databases_of_other_programs_and_damaged_files_are_refused_untouched() {
    let dir = tempdir();
    tree(dir.path(), 1);
    let other = Connection::open(dir.path().join("other.sqlite")).unwrap();
    other
        .execute_batch("CREATE TABLE photos (name TEXT); INSERT INTO photos VALUES ('x');")
        .unwrap();
    drop(other);
    refused(
        dir.path(),
        "other.sqlite",
        "not an mtsum database (a SQLite database of another program, application id 0x0)",
    );
    fs::write(
        dir.path().join("notes.txt"),
        "my precious notes\n".repeat(100),
    )
    .unwrap();
    refused(
        dir.path(),
        "notes.txt",
        "not an mtsum database (the file is not a SQLite database)",
    );

    // A database of ours whose pages were overwritten: its header is fine, its tables not.
    audit(dir.path(), &["-r", "t"]);
    let db = dir.path().join("db");
    let mut bytes = fs::read(&db).unwrap();
    assert!(bytes.len() > 4096, "more than one page");
    for b in &mut bytes[100..] {
        *b = 0xA5;
    }
    fs::write(&db, &bytes).unwrap();
    let r = audit(dir.path(), &["-r", "t"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr());
    assert!(r.stderr().starts_with("mtsum: db: "), "{}", r.stderr());
    assert_eq!(r.stderr().lines().count(), 1, "{}", r.stderr());
    assert_eq!(
        fs::read(&db).unwrap(),
        bytes,
        "the damaged file is left as it was"
    );
}

#[test]
fn a_database_in_a_directory_that_does_not_exist_is_refused_saying_so() {
    let dir = tempdir();
    tree(dir.path(), 1);
    let r = run(dir.path(), ["--audit", "--db", "nowhere/x.db", "-r", "t"]);
    assert_eq!(r.code, Some(2));
    assert_eq!(r.stdout(), "");
    assert_eq!(
        r.stderr(),
        "mtsum: nowhere/x.db: cannot create the database: its directory does not exist\n"
    );
}

#[test]
fn a_database_whose_name_is_not_utf8_is_read_by_dry_run_and_export() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempdir();
    tree(dir.path(), 1);
    let db = std::ffi::OsStr::from_bytes(b"caf\xe9 #1%.db");
    let run = |args: &[&str]| {
        let mut cmd = StdCommand::new(MTSUM);
        cmd.args(["--audit", "--db"]).arg(db).args(args);
        common::run::run_cmd(assert_cmd::Command::from_std(cmd).current_dir(dir.path()))
    };
    assert_eq!(run(&["t/00"]).stdout(), "new  t/00\n");
    let r = run(&["--dry-run", "t/00"]);
    assert_eq!(
        (r.stdout(), r.code),
        ("ok  t/00\n", Some(0)),
        "{}",
        r.stderr()
    );
    let r = run(&["--export", "-"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    assert!(r.stdout().contains("(t/00)"), "{}", r.stdout());
}

#[test]
fn a_directory_or_a_fifo_given_as_the_database_is_refused_saying_so_by_writers_and_readers() {
    let dir = tempdir();
    tree(dir.path(), 1);
    fs::create_dir(dir.path().join("d")).unwrap();
    let fifo = StdCommand::new("mkfifo")
        .arg("fifo")
        .current_dir(dir.path())
        .status();
    assert!(fifo.unwrap().success());
    for args in [
        &["-r", "t"][..],
        &["--dry-run", "-r", "t"],
        &["--export", "-"],
        &["--import", "t/00"],
    ] {
        let r = run(dir.path(), [&["--audit", "--db", "d"][..], args].concat());
        assert_eq!(r.code, Some(2), "{args:?}");
        assert_eq!(r.stdout(), "", "{args:?}");
        assert_eq!(r.stderr(), "mtsum: d: Is a directory\n", "{args:?}");
        // A FIFO kept a reader waiting for a writer that never came.
        let r = run(
            dir.path(),
            [&["--audit", "--db", "fifo"][..], args].concat(),
        );
        assert_eq!(r.code, Some(2), "{args:?}");
        assert_eq!(r.stdout(), "", "{args:?}");
        assert_eq!(r.stderr(), "mtsum: fifo: not a regular file\n", "{args:?}");
    }
}

/// `mtsum ARGS` in `dir` as a user who may not write what root made there (root itself may
/// write anything), or why there is none.
fn mtsum_unprivileged_in(dir: &Path, args: &[&str]) -> Result<Run, String> {
    let mut cmd = mtsum_unprivileged()?;
    cmd.args(args).current_dir(dir);
    Ok(common::run::run_cmd(&mut assert_cmd::Command::from_std(
        cmd,
    )))
}

/// The names in `dir`, to see that nothing was created there.
fn listing(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_read_only_database_is_read_by_dry_run_and_export_and_refused_to_writers_at_once() {
    let dir = tempdir();
    tree(dir.path(), 2);
    audit(dir.path(), &["-r", "t"]);
    audit(dir.path(), &["--export", "m"]);
    let db = dir.path().join("db");
    let before = fs::read(&db).unwrap();
    // Neither the database nor its directory is writable (as on a read-only file system):
    // SQLite cannot create its log beside it. The tree is world-readable.
    fs::set_permissions(&db, fs::Permissions::from_mode(0o444)).unwrap();
    fs::set_permissions(dir.path().join("t"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o555)).unwrap();
    let names = listing(dir.path());
    let run = |args: &[&str]| mtsum_unprivileged_in(dir.path(), args);
    let export = match run(&["--audit", "--db", "db", "--export", "-"]) {
        Ok(r) => r,
        // Root may write anything: only another user shows what a read-only database does.
        Err(why) => return skip("read_only_database", &why),
    };
    assert_eq!(export.code, Some(0), "{}", export.stderr());
    assert_eq!(export.stderr(), "mtsum: 2 records exported\n");
    assert_eq!(export.stdout().lines().count(), 3, "{}", export.stdout());
    let dry = run(&["--audit", "--db", "db", "--dry-run", "-r", "t"]).unwrap();
    assert_eq!(dry.code, Some(0), "{}", dry.stderr());
    assert_eq!(dry.stdout(), "ok  t/00\nok  t/01\n");

    // Whatever writes is refused with one line before a file is read.
    for args in [
        &["-r", "t"][..],
        &["--update", "-r", "t"],
        &["--fix", "-r", "t"],
        &["--forget", "t/00"],
        &["--import", "m"],
        &["--repair", "t/00", "--from", "t/01"],
    ] {
        let r = run(&[&["--audit", "--db", "db"][..], args].concat()).unwrap();
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr());
        assert_eq!(
            r.stderr(),
            "mtsum: db: the database is read-only (Permission denied)\n",
            "{args:?}"
        );
        assert_eq!(r.stdout(), "", "{args:?}");
    }
    assert_eq!(fs::read(&db).unwrap(), before);
    assert_eq!(
        listing(dir.path()),
        names,
        "nothing created beside the database"
    );
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
}

/// `DIR/db` as an audit stopped by kill -9 leaves it, in the new directory `DIR/stopped`,
/// from the records of `t/00` and `t/01` in `DIR/db`: its last commit (`t/01`'s record
/// removed) in the log only.
fn stopped_copy(dir: &Path) -> PathBuf {
    tree(dir, 2);
    audit(dir, &["-r", "t"]);
    // A copy of the files while a writer holds the database open, with a commit not yet
    // folded in.
    let conn = Connection::open(dir.join("db")).unwrap();
    conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE; PRAGMA wal_autocheckpoint = 0;")
        .unwrap();
    conn.execute("DELETE FROM records WHERE path = ?1", [&b"t/01"[..]])
        .unwrap();
    let stopped = dir.join("stopped");
    fs::create_dir(&stopped).unwrap();
    for name in ["db", "db-wal"] {
        fs::copy(dir.join(name), stopped.join(name)).unwrap();
    }
    drop(conn);
    assert!(fs::metadata(stopped.join("db-wal")).unwrap().len() > 0);
    stopped
}

#[test]
fn a_database_the_user_may_not_reach_is_refused_by_readers_not_taken_for_none_yet() {
    let dir = tempdir();
    tree(dir.path(), 1);
    let db = dir.path().join("private/db");
    fs::create_dir(dir.path().join("private")).unwrap();
    run(dir.path(), ["--audit", "--db", "private/db", "-r", "t"]);
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(dir.path().join("t"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(db.parent().unwrap(), fs::Permissions::from_mode(0o700)).unwrap();
    for args in [&["--export", "-"][..], &["--dry-run", "-r", "t"]] {
        let args = [&["--audit", "--db", "private/db"][..], args].concat();
        let r = match mtsum_unprivileged_in(dir.path(), &args) {
            Ok(r) => r,
            // Root may search any directory.
            Err(why) => return skip("database_the_user_may_not_reach", &why),
        };
        // Not "0 records exported", nor every file new.
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr());
        assert_eq!(r.stdout(), "", "{args:?}");
        assert_eq!(
            r.stderr(),
            "mtsum: private/db: Permission denied\n",
            "{args:?}"
        );
    }
}

#[test]
fn a_database_reached_by_a_link_is_created_where_it_points_where_the_user_may_write() {
    let dir = tempdir();
    tree(dir.path(), 1);
    let own = dir.path().join("own");
    fs::create_dir(&own).unwrap();
    for (path, mode) in [
        (dir.path(), 0o755),
        (&dir.path().join("t"), 0o755),
        (&own, 0o777),
    ] {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }
    // The link lies where the user may not write; the database is created where it points.
    std::os::unix::fs::symlink("own/db", dir.path().join("link")).unwrap();
    let r = match mtsum_unprivileged_in(dir.path(), &["--audit", "--db", "link", "t/00"]) {
        Ok(r) => r,
        Err(why) => return skip("database_reached_by_a_link", &why),
    };
    assert_eq!(
        (r.stdout(), r.code),
        ("new  t/00\n", Some(0)),
        "{}",
        r.stderr()
    );
    assert_eq!(records(&own.join("db")).len(), 1);
}

#[test]
fn a_log_left_by_a_stopped_audit_is_read_or_refused_saying_why() {
    let dir = tempdir();
    let stopped = stopped_copy(dir.path());
    let export = ["--audit", "--db", "stopped/db", "--export", "-"];

    // The log needs an index beside the database, which a user who may not write the
    // directory cannot create: said so, rather than reading the records without the log's.
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&stopped, fs::Permissions::from_mode(0o555)).unwrap();
    match mtsum_unprivileged_in(dir.path(), &export) {
        Ok(r) => {
            assert_eq!(r.code, Some(2), "{}", r.stderr());
            assert_eq!(
                r.stderr(),
                "mtsum: stopped/db: its log holds changes of an audit that was stopped, and \
                 reading them needs an index file beside it, which cannot be created here; an \
                 audit that may write the database folds them in\n"
            );
            assert_eq!(r.stdout(), "");
        }
        Err(why) => skip("log_left_by_a_stopped_audit", &why),
    }
    // Whoever may create it reads the records with the log's changes.
    fs::set_permissions(&stopped, fs::Permissions::from_mode(0o755)).unwrap();
    let r = run(dir.path(), export);
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    assert_eq!(r.stdout().lines().skip(1).count(), 1, "{}", r.stdout());
    assert!(r.stdout().contains("(t/00)"), "{}", r.stdout());
}

#[test]
fn a_journal_of_a_change_cut_short_is_refused_by_readers_and_rolled_back_by_an_audit() {
    let dir = tempdir();
    tree(dir.path(), 40);
    audit(dir.path(), &["-r", "t"]);
    // A database another program took out of WAL mode and stopped in the middle of a change:
    // a copy of the files while the change, larger than the cache, is half written.
    let conn = Connection::open(dir.path().join("db")).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = DELETE; PRAGMA cache_size = 1; BEGIN;
         UPDATE records SET digest = zeroblob(32), outboard = zeroblob(3000);",
    )
    .unwrap();
    let cut = dir.path().join("cut");
    fs::create_dir(&cut).unwrap();
    for name in ["db", "db-journal"] {
        fs::copy(dir.path().join(name), cut.join(name)).unwrap();
    }
    drop(conn);
    assert!(fs::metadata(cut.join("db-journal")).unwrap().len() > 0);

    // The database file alone is half written: read as it is, records would be damaged
    // and files called corrupt.
    for args in [&["--export", "-"][..], &["--dry-run", "-r", "t"]] {
        let r = run(
            dir.path(),
            [&["--audit", "--db", "cut/db"][..], args].concat(),
        );
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr());
        assert_eq!(r.stdout(), "", "{args:?}");
        assert_eq!(
            r.stderr(),
            "mtsum: cut/db: its journal holds a change that was cut short, which only a program \
             that may write the database can undo; an audit that may write it does so first\n",
            "{args:?}"
        );
    }
    let r = run(
        dir.path(),
        ["--audit", "--db", "cut/db", "--quiet", "-r", "t"],
    );
    assert_eq!((r.stdout(), r.code), ("", Some(0)), "{}", r.stderr());
    assert!(
        r.stderr().contains("  ok                40"),
        "{}",
        r.stderr()
    );
}

#[test]
fn a_database_reached_by_a_symbolic_link_is_read_with_its_log_and_its_log_is_not_audited() {
    let dir = tempdir();
    stopped_copy(dir.path());
    // SQLite keeps the log beside the file the link points to.
    std::os::unix::fs::symlink("stopped/db", dir.path().join("link")).unwrap();
    let r = run(dir.path(), ["--audit", "--db", "link", "--export", "-"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    assert_eq!(r.stdout().lines().skip(1).count(), 1, "{}", r.stdout());
    assert!(r.stdout().contains("(t/00)"), "{}", r.stdout());
    let r = run(
        dir.path(),
        ["--audit", "--db", "link", "--dry-run", "-r", "t"],
    );
    assert_eq!(r.stdout(), "ok  t/00\nnew  t/01\n", "{}", r.stderr());

    // Nor are the log and its index records of their own when the tree holds them.
    let r = run(dir.path(), ["--audit", "--db", "link", "-r", "stopped"]);
    assert_eq!((r.stdout(), r.code), ("", Some(0)), "{}", r.stderr());
}

#[test]
fn an_audit_is_refused_while_a_dry_run_reads_the_database() {
    use std::io::BufRead;
    let dir = tempdir();
    tree(dir.path(), 2);
    audit(dir.path(), &["-r", "t"]);
    // A big sparse file read slowly keeps the dry run busy after its first lines.
    fs::File::create(dir.path().join("t/big"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let mut reader = StdCommand::new(MTSUM)
        .args(["--audit", "--db", "db", "--dry-run", "--readers", "1"])
        .args(["--limit-rate", "64M", "-r", "t"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kept open until the end: a closed pipe would end the dry run at its next line.
    let mut lines = std::io::BufReader::new(reader.stdout.take().unwrap());
    let mut first = String::new();
    lines.read_line(&mut first).unwrap();
    assert_eq!(first, "ok  t/00\n");
    // A reader reads the database file as it is: no writer may fold its log into it meanwhile.
    let writer = audit(dir.path(), &["t/00"]);
    let _ = reader.kill();
    let _ = reader.wait();
    drop(lines);
    assert_eq!(writer.code, Some(2), "{}", writer.stderr());
    assert_eq!(
        writer.stderr(),
        "mtsum: db: another mtsum is using this database; try again when it is done\n"
    );
}

#[test]
fn kill_9_at_any_moment_loses_no_record_and_max_age_skips_what_was_verified() {
    let dir = tempdir();
    let names = tree(dir.path(), 400);
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut killed = 0;
    for trial in 0..6 {
        // A slow audit (one reader, a low rate) killed after a random few hundred ms.
        let mut child = slow_audit(dir.path(), "256K")
            .args(["-r", "t"])
            .args(if trial % 2 == 1 {
                &["--max-age", "1h"][..]
            } else {
                &[][..]
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        thread::sleep(Duration::from_millis(50 + rng % 500));
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        killed += u32::from(out.status.code().is_none());
        // Every file reported was committed before its line was printed, with the digest
        // of its content.
        let stored = records(&dir.path().join("db"));
        for (status, name) in verdicts(&String::from_utf8_lossy(&out.stdout)) {
            assert!(stored.contains_key(&name), "{status} {name} lost");
        }
        for (name, (_, _, hex, _)) in &stored {
            let data = fs::read(dir.path().join(name)).unwrap();
            assert_eq!(
                *hex,
                reference::root(Layout::Plain, Algorithm::Blake3, &data).to_hex(),
                "{name}"
            );
        }
    }
    assert!(killed > 0, "no run was killed");
    // What was recorded or verified in the killed runs is not due within the hour; the
    // rest is audited now.
    let stored: BTreeSet<String> = records(&dir.path().join("db")).into_keys().collect();
    let last = audit(dir.path(), &["--max-age", "1h", "-r", "t"]);
    assert_eq!(last.code, Some(0), "{}", last.stderr());
    let audited: BTreeSet<String> = last.verdicts().into_iter().map(|(_, n)| n).collect();
    let expected: BTreeSet<String> = names
        .iter()
        .filter(|n| !stored.contains(*n))
        .cloned()
        .collect();
    assert_eq!(audited, expected);
    assert!(
        last.stderr()
            .contains(&format!("{} not due", files(stored.len())))
            || stored.is_empty()
    );
    assert!(last.verdicts().iter().all(|(s, _)| s == "new"));
}

/// Bytes the process `pid` has read so far (`rchar` of /proc/PID/io), 0 once it is gone.
fn bytes_read_by(pid: u32) -> u64 {
    let io = fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_kill_during_a_read_in_physical_order_loses_no_file_already_read() {
    // Files on a rotational disk are read in physical order, and their verdicts printed in
    // walk order; each record is still written as soon as its file is read. The walk's first
    // file is created last, so that it tends to lie last on the disk, too.
    const FILES: usize = 100;
    const SIZE: usize = 32 << 10;
    for signal in [libc::SIGKILL, libc::SIGINT] {
        let dir = tempdir();
        fs::create_dir(dir.path().join("t")).unwrap();
        for i in (0..FILES).rev() {
            fs::write(
                dir.path().join(format!("t/{i:03}")),
                pattern(SIZE, i as u64),
            )
            .unwrap();
        }
        let mut cmd = slow_audit(dir.path(), "1M");
        cmd.args(["-r", "t"])
            .env("MTSUM_ROTATIONAL", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SIGINT as a terminal's Ctrl-C delivers it: a test run started in the background
        // of a shell without job control inherits SIGINT ignored, and the audit would then
        // run to its end. SAFETY: between fork and exec the closure only calls signal,
        // which is async-signal-safe, and allocates nothing.
        unsafe {
            cmd.pre_exec(|| {
                if libc::signal(libc::SIGINT, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        let pid = child.id();
        let mut child = ChildGuard(child);
        // Half the tree read, less what else the process reads (sysfs, the database).
        let half = (FILES * SIZE / 2) as u64;
        let deadline = Instant::now() + Duration::from_secs(60);
        while bytes_read_by(pid) < half {
            assert!(Instant::now() < deadline, "the audit does not read");
            assert!(
                child.0.try_wait().unwrap().is_none(),
                "the audit ended early"
            );
            thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: `pid` is our child, not yet waited for: no other process has its id.
        assert_eq!(unsafe { libc::kill(pid as libc::pid_t, signal) }, 0);
        let status = child.0.wait().unwrap();
        assert!(status.code().is_none(), "killed by {signal}: {status:?}");
        let stored = records(&dir.path().join("db"));
        assert!(
            stored.len() >= FILES / 4,
            "signal {signal}: {} records after half the files were read",
            stored.len()
        );
        for (name, (_, _, hex, _)) in &stored {
            let data = fs::read(dir.path().join(name)).unwrap();
            let digest = reference::root(Layout::Plain, Algorithm::Blake3, &data);
            assert_eq!(*hex, digest.to_hex(), "{name}");
        }
    }
}

/// A child killed when the test panics, so that a failed assertion leaves no audit running.
struct ChildGuard(std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn files_left_unread_are_reported_in_walk_order_with_their_size() {
    let dir = tempdir();
    let names = tree(dir.path(), 3);
    let mut options = Options::new(Store::Database(dir.path().join("db")));
    options.recursion = Recursion::SkipSymlinks;
    let targets = [Target::Path(dir.path().join("t"))];
    audit::audit(&targets, &options, &mut |_| ()).unwrap();
    fs::write(dir.path().join("t/new"), "new").unwrap();
    let sizes: Vec<(PathBuf, u64)> = names
        .iter()
        .map(|n| dir.path().join(n))
        .map(|p| (p.clone(), fs::metadata(&p).unwrap().len()))
        .collect();
    let events = |options: &Options| {
        let mut seen = Vec::new();
        let summary = audit::audit(&targets, options, &mut |e| match e {
            Event::Postponed { path, size, why } => seen.push((path.to_owned(), size, Some(why))),
            Event::Verdict(v) => seen.push((v.path.clone(), 0, None)),
            _ => {}
        })
        .unwrap();
        (seen, summary)
    };

    // Verified just now: not due, reported, so that a progress bar can stop counting them.
    options.max_age = Some(Duration::from_secs(3600));
    let (seen, summary) = events(&options);
    let mut expected: Vec<_> = sizes
        .iter()
        .map(|(p, len)| (p.clone(), *len, Some(Postponed::NotDue)))
        .collect();
    expected.push((dir.path().join("t/new"), 0, None));
    assert_eq!(seen, expected);
    assert_eq!((summary.not_due, summary.deferred), (3, 0));

    // No time at all: every file is left for the next run, least recently verified first
    // (the new file, recorded by the run above, last).
    options.max_age = None;
    options.time_budget = Some(Duration::ZERO);
    let (seen, summary) = events(&options);
    let mut expected: Vec<_> = sizes
        .iter()
        .map(|(p, len)| (p.clone(), *len, Some(Postponed::Deferred)))
        .collect();
    expected.push((dir.path().join("t/new"), 3, Some(Postponed::Deferred)));
    assert_eq!(seen, expected);
    assert_eq!((summary.not_due, summary.deferred), (0, 4));
}

#[test]
fn a_time_budget_stops_and_the_next_run_goes_on_with_the_least_recently_verified() {
    let dir = tempdir();
    let names = tree(dir.path(), 12);
    audit(dir.path(), &["-r", "t"]);
    // Nothing fits in no time at all.
    let none = audit(dir.path(), &["--time-budget", "0s", "-r", "t"]);
    assert_eq!(none.stdout(), "");
    assert!(
        none.stderr().contains("12 files left for the next run"),
        "{}",
        none.stderr()
    );

    // About one file per second: a budget of 1 s reads a few.
    let budget = [
        "--time-budget",
        "1s",
        "--readers",
        "1",
        "--limit-rate",
        "4K",
        "-r",
        "t",
    ];
    let mut done: Vec<String> = Vec::new();
    for run in 0..3 {
        let before = records(&dir.path().join("db"));
        let r = audit(dir.path(), &budget);
        assert_eq!(r.code, Some(0), "{}", r.stderr());
        let read: Vec<String> = r.verdicts().into_iter().map(|(_, n)| n).collect();
        assert!(!read.is_empty());
        if run == 0 {
            // Twelve files at a third of a second each do not fit in one second.
            assert!(read.len() < names.len(), "{read:?}");
            let left = format!("{} left for the next run", files(names.len() - read.len()));
            assert!(r.stderr().contains(&left), "{}", r.stderr());
        }
        // Least recently verified first: the files read are the ones with the oldest
        // verification times before the run.
        let mut by_age: Vec<(i64, String)> = before
            .iter()
            .map(|(n, (_, _, _, v))| (v.unwrap(), n.clone()))
            .collect();
        by_age.sort();
        let oldest: Vec<String> = by_age
            .into_iter()
            .take(read.len())
            .map(|(_, n)| n)
            .collect();
        assert_eq!(read, oldest);
        done.extend(read);
    }
    // The runs went on where the last one stopped: no file twice before all were read.
    let distinct: BTreeSet<&String> = done.iter().collect();
    assert_eq!(distinct.len(), done.len().min(names.len()), "{done:?}");
}

#[test]
fn migration_md5_to_sha256_and_back_from_the_same_reads() {
    let dir = tempdir();
    let names = tree(dir.path(), 4);
    audit(dir.path(), &["-a", "md5", "-r", "t"]);
    flip_byte_keeping_mtime(&dir.path().join(&names[3]), 5);
    let digest = |alg: Algorithm, name: &str| {
        let data = fs::read(dir.path().join(name)).unwrap();
        reference::root(Layout::Plain, alg, &data).to_hex()
    };
    let md5_of_rotten = records(&dir.path().join("db"))[&names[3]].2.clone();

    let to_sha = audit(dir.path(), &["--migrate", "-a", "sha256", "-r", "t"]);
    assert_eq!(to_sha.code, Some(1));
    assert!(
        to_sha.stderr().contains("3 migrated"),
        "{}",
        to_sha.stderr()
    );
    // Each line says what happened to its file.
    let said: Vec<String> = to_sha.verdicts().into_iter().map(|(s, _)| s).collect();
    assert_eq!(said, ["migrated", "migrated", "migrated", "corrupt"]);
    let stored = records(&dir.path().join("db"));
    for name in &names[..3] {
        assert_eq!(stored[name].1, "sha256");
        assert_eq!(stored[name].2, digest(Algorithm::Sha256, name));
    }
    // The corrupt file keeps the record of its good content.
    assert_eq!(
        (stored[&names[3]].1.as_str(), &stored[&names[3]].2),
        ("md5", &md5_of_rotten)
    );

    let back = audit(dir.path(), &["--migrate", "-a", "md5", "-r", "t"]);
    assert!(back.stderr().contains("3 migrated"), "{}", back.stderr());
    let stored = records(&dir.path().join("db"));
    for name in &names[..3] {
        assert_eq!(
            (stored[name].1.as_str(), &stored[name].2),
            ("md5", &digest(Algorithm::Md5, name))
        );
    }
    let again = audit(dir.path(), &["--migrate", "-a", "md5", "-r", "t"]);
    assert!(
        again.stderr().contains("records: unchanged"),
        "{}",
        again.stderr()
    );
    let said: Vec<String> = again.verdicts().into_iter().map(|(s, _)| s).collect();
    assert_eq!(said, ["ok", "ok", "ok", "corrupt"]);
}

#[test]
fn limit_rate_keeps_the_average_rate_below_the_limit() {
    let dir = tempdir();
    fs::create_dir_all(dir.path().join("t")).unwrap();
    let size: u64 = 48 << 20;
    fs::write(dir.path().join("t/big"), pattern(size as usize, 1)).unwrap();
    let limit = 20u64 << 20;
    let started = Instant::now();
    let r = audit(dir.path(), &["--limit-rate", "20M", "-r", "t"]);
    let elapsed = started.elapsed().as_secs_f64();
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    assert!(elapsed >= 2.0, "the run lasts at least 2 s ({elapsed} s)");
    let rate = size as f64 / elapsed;
    assert!(
        rate <= limit as f64 * 1.1,
        "{rate} bytes/s against a limit of {limit}"
    );
}

#[test]
fn limit_rate_holds_the_average_including_the_last_read() {
    // One read of 150 KiB at 100 KiB/s: the average holds only if the audit waits after it.
    let dir = tempdir();
    fs::create_dir_all(dir.path().join("t")).unwrap();
    let size = 150 << 10;
    fs::write(dir.path().join("t/f"), pattern(size, 3)).unwrap();
    let started = Instant::now();
    let r = audit(dir.path(), &["--limit-rate", "100K", "-r", "t"]);
    let elapsed = started.elapsed();
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    assert!(
        elapsed >= Duration::from_millis(1500),
        "150 KiB at most at 100 KiB/s take 1.5 s at least, not {elapsed:?}"
    );
}

#[test]
fn records_travel_between_database_manifest_and_sum_files() {
    let dir = tempdir();
    let names = tree(dir.path(), 3);
    audit(dir.path(), &["-r", "t"]);
    let export = audit(dir.path(), &["--export", "m"]);
    assert_eq!(export.code, Some(0), "{}", export.stderr());
    let manifest = run(dir.path(), ["--audit", "--manifest", "m", "-r", "t"]);
    assert_eq!(
        manifest
            .stdout()
            .lines()
            .filter(|l| l.starts_with("ok  "))
            .count(),
        3
    );

    audit(dir.path(), &["--export", "SUMS", "--export-as", "sums"]);
    let check = run(dir.path(), ["-c", "SUMS"]);
    assert_eq!(check.code, Some(0), "{}", check.stdout());
    assert_eq!(check.stdout().lines().count(), names.len());

    let imported = run(dir.path(), ["--audit", "--db", "db2", "--import", "m"]);
    assert_eq!(imported.code, Some(0), "{}", imported.stderr());
    assert_eq!(records(&dir.path().join("db2")).len(), 3);
    let audited = run(dir.path(), ["--audit", "--db", "db2", "-r", "t"]);
    assert!(
        audited.verdicts().iter().all(|(s, _)| s == "ok"),
        "{}",
        audited.stdout()
    );

    // A sha256sum file: the files lend their size and mtime; rot since is found.
    let mut sums = String::new();
    for name in &names {
        let data = fs::read(dir.path().join(name)).unwrap();
        let hex = reference::root(Layout::Plain, Algorithm::Sha256, &data).to_hex();
        sums.push_str(&format!("{hex}  {name}\n"));
    }
    sums.push_str("not a checksum line\n");
    fs::write(dir.path().join("SHA256SUMS"), sums).unwrap();
    flip_byte_keeping_mtime(&dir.path().join(&names[0]), 0);
    let r = run(
        dir.path(),
        [
            "--audit",
            "--db",
            "db3",
            "-t",
            "plain",
            "--import",
            "SHA256SUMS",
        ],
    );
    assert_eq!(r.code, Some(1), "a line was left out: {}", r.stderr());
    assert!(
        r.stderr().contains("3 records imported, 1 left out"),
        "{}",
        r.stderr()
    );
    // Without -t, their layout would be a guess, and a wrong one makes every file corrupt at
    // the next audit: the import is refused, and writes nothing (with -a too, which says the
    // algorithm and not the layout).
    for args in [&[][..], &["-a", "sha256"]] {
        let r = run(
            dir.path(),
            [&["--audit", "--db", "db4", "--import", "SHA256SUMS"], args].concat(),
        );
        assert_eq!(r.code, Some(2), "{}", r.stderr());
        assert_eq!(
            r.stderr(),
            "mtsum: SHA256SUMS: line 1 does not say its layout: import untagged sums with -t \
             (-t plain for sha256sum, md5sum, b3sum or xxhsum files)\n"
        );
        assert!(!dir.path().join("db4").exists());
    }
    // A file of one leaf is damaged as a whole, imported record or not.
    let audited = run(dir.path(), ["--audit", "--db", "db3", "-r", "t"]);
    assert_eq!(
        audited.verdicts()[0],
        (
            "corrupt".to_string(),
            format!("{}  (bytes 0-1000)", names[0])
        )
    );
}

#[test]
fn an_import_with_dry_run_writes_nothing_and_says_what_it_would_import() {
    let dir = tempdir();
    tree(dir.path(), 2);
    audit(dir.path(), &["-r", "t"]);
    audit(dir.path(), &["--export", "exported"]);
    let manifest_before = {
        run(dir.path(), ["--audit", "--manifest", "m", "t/00"]);
        fs::read(dir.path().join("m")).unwrap()
    };
    for (store, file) in [
        ("--db", "new.db"),
        ("--manifest", "new.m"),
        ("--manifest", "m"),
    ] {
        let args = ["--audit", store, file, "--import", "exported", "--dry-run"];
        let r = run(dir.path(), args);
        assert_eq!(r.code, Some(0), "{args:?}: {}", r.stderr());
        assert_eq!(
            r.stderr(),
            "mtsum: 2 records imported, 0 left out (dry run: nothing was written)\n"
        );
    }
    assert!(!dir.path().join("new.db").exists());
    assert!(!dir.path().join("new.m").exists());
    assert_eq!(fs::read(dir.path().join("m")).unwrap(), manifest_before);
}

#[test]
fn an_export_into_the_store_it_exports_is_refused_and_the_store_kept() {
    let dir = tempdir();
    tree(dir.path(), 1);
    audit(dir.path(), &["-r", "t"]);
    run(dir.path(), ["--audit", "--manifest", "m", "-r", "t"]);
    for (store, file, kind) in [("--db", "db", "database"), ("--manifest", "m", "manifest")] {
        let before = fs::read(dir.path().join(file)).unwrap();
        for format in [&[][..], &["--export-as", "sums"]] {
            let args = [&["--audit", store, file, "--export", file][..], format].concat();
            let r = run(dir.path(), &args);
            assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr());
            assert_eq!(
                r.stderr(),
                format!(
                    "mtsum: {file}: the records are exported from this file ({kind} {file}); \
                     export them to another one\n"
                )
            );
            assert_eq!(fs::read(dir.path().join(file)).unwrap(), before, "{args:?}");
        }
    }
    assert_eq!(records(&dir.path().join("db")).len(), 1);
}

#[test]
fn max_age_works_with_extended_attributes_too() {
    let dir = tempdir();
    let probe = dir.path().join("probe");
    fs::write(&probe, "").unwrap();
    if xattr::set(&probe, "user.mtsum-probe", b"1").is_err() {
        return skip("max_age_xattr", "no user extended attributes here");
    }
    fs::remove_file(&probe).unwrap();
    tree(dir.path(), 3);
    let xattr_audit = |args: &[&str]| run(dir.path(), [&["--audit"], args].concat());
    xattr_audit(&["-r", "t"]);
    // Records without a time (written without --max-age) are due once, then carry it.
    let first = xattr_audit(&["--max-age", "1h", "-r", "t"]);
    assert_eq!(first.verdicts().len(), 3, "{}", first.stderr());
    let second = xattr_audit(&["--max-age", "1h", "-r", "t"]);
    assert_eq!(second.stdout(), "");
    assert!(
        second.stderr().contains("3 files not due"),
        "{}",
        second.stderr()
    );
    // Once a record carries the time, audits without --max-age keep it: a migration and an
    // update rewrite the records of files they verified just now.
    let migrated = xattr_audit(&["--migrate", "-a", "sha256", "-r", "t"]);
    assert_eq!(migrated.verdicts().len(), 3, "{}", migrated.stderr());
    fs::write(dir.path().join("t/01"), "edited").unwrap();
    let updated = xattr_audit(&["--update", "-r", "t"]);
    assert_eq!(
        updated.by_name()["t/01"],
        "modified",
        "{}",
        updated.stdout()
    );
    let third = xattr_audit(&["--max-age", "1h", "-r", "t"]);
    assert_eq!(third.stdout(), "", "{}", third.stderr());
    assert!(
        third.stderr().contains("3 files not due"),
        "{}",
        third.stderr()
    );
    let manifest = run(
        dir.path(),
        ["--audit", "--manifest", "m", "--max-age", "1h", "t"],
    );
    assert_eq!(manifest.code, Some(2));
    assert!(
        manifest.stderr().contains("a manifest does not keep"),
        "{}",
        manifest.stderr()
    );
}

#[test]
fn audit_readers_run_at_idle_io_priority_one_per_core_or_one_on_a_spinning_disk() {
    let dir = tempdir();
    fs::create_dir_all(dir.path().join("t")).unwrap();
    // A file for each reader to be busy with: a reader with nothing to read ends.
    let cores = thread::available_parallelism().unwrap().get();
    for i in 0..cores {
        fs::write(dir.path().join(format!("t/big{i}")), pattern(4 << 20, 3)).unwrap();
    }
    // Recorded first: the runs below only verify, one digest per file, so no thread but the
    // readers reads.
    audit(dir.path(), &["-r", "t"]);
    // One reader per core for files in memory, as these just written are, whatever the disk
    // says it is (a virtual disk may say it spins); one on a spinning disk.
    for (flag, class, spins, readers) in [
        (None, 3, None, cores),
        (Some("best-effort:2"), 2, None, cores),
        (None, 3, Some("1"), 1),
    ] {
        let mut cmd = StdCommand::new(MTSUM);
        cmd.args(["--audit", "--db", "db", "--limit-rate", "1M", "-r", "t"]);
        if let Some(flag) = flag {
            cmd.args(["--io-priority", flag]);
        }
        if let Some(spins) = spins {
            cmd.env("MTSUM_ROTATIONAL", spins);
        }
        let mut child = cmd
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The reader threads are named; ask the kernel for each one's I/O priority.
        let tasks = format!("/proc/{}/task", child.id());
        let mut classes = Vec::new();
        // A reader is named before it runs, and its first act is to set its priority: until
        // then the kernel reports class 0 (none), so wait for every reader to have left it.
        // A reader that never sets its priority makes this wait time out.
        common::wait_until("every reader has set its I/O priority", || {
            classes = fs::read_dir(&tasks)
                .map(|d| d.flatten().collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .filter(|t| {
                    fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.trim() == "mtsum-reader")
                })
                .filter_map(|t| t.file_name().to_str()?.parse::<libc::c_int>().ok())
                .map(|tid| {
                    // SAFETY: ioprio_get takes two integers and touches no memory.
                    let value = unsafe { libc::syscall(libc::SYS_ioprio_get, 1, tid) };
                    value >> 13
                })
                .collect();
            classes.len() >= readers && classes.iter().all(|&c| c != 0)
        });
        let _ = child.kill();
        let _ = child.wait();
        assert!(classes.iter().all(|&c| c == class), "{flag:?}: {classes:?}");
        assert_eq!(classes.len(), readers, "reader threads");
    }
}

#[test]
fn exported_s3_records_keep_their_part_count_and_check_out() {
    let dir = tempdir();
    fs::create_dir_all(dir.path().join("au")).unwrap();
    // Three 5 MiB parts, the last one short; and an empty file, a single upload.
    fs::write(dir.path().join("au/big"), pattern((11 << 20) + 7, 1)).unwrap();
    fs::write(dir.path().join("au/0"), b"").unwrap();
    let part_count = "-3";
    for (store, alg) in [("--manifest", "md5"), ("--db", "md5"), ("--db", "sha256")] {
        let file = format!("{}-{alg}", &store[2..]);
        let spec = ["-t", "s3", "--part-size", "5M", "-a", alg];
        let r = run(
            dir.path(),
            [&["--audit", "-r", store, &file], &spec[..], &["au"]].concat(),
        );
        assert_eq!(r.code, Some(0), "{store} {alg}: {}", r.stderr());
        let sums = format!("{file}.sums");
        let r = run(
            dir.path(),
            [
                "--audit",
                store,
                &file,
                "--export",
                &sums,
                "--export-as",
                "sums",
            ],
        );
        assert_eq!(r.code, Some(0), "{store} {alg}: {}", r.stderr());
        let exported = fs::read_to_string(dir.path().join(&sums)).unwrap();
        let line = exported.lines().find(|l| l.contains("(au/big)")).unwrap();
        assert!(line.ends_with(part_count), "{store} {alg}: {exported}");
        let check = run(dir.path(), ["-c", &sums]);
        assert_eq!(check.code, Some(0), "{store} {alg}: {}", check.stdout());
        // The value the audit computes again is the one it recorded.
        let again = run(dir.path(), ["--audit", "-r", store, &file, "au"]);
        assert_eq!(again.code, Some(0), "{store} {alg}: {}", again.stdout());
        assert!(again.verdicts().iter().all(|(s, _)| s == "ok"));
    }
}

#[test]
fn an_imported_s3_value_gets_the_verdict_of_check() {
    let dir = tempdir();
    fs::create_dir_all(dir.path().join("au")).unwrap();
    let one = pattern(8 << 20, 2);
    let three = pattern((16 << 20) + 1, 3);
    fs::write(dir.path().join("au/8m"), &one).unwrap();
    fs::write(dir.path().join("au/3p"), &three).unwrap();
    let md5 = |d: &[u8]| Algorithm::Md5.hash(d);
    let s3 = Layout::from_name("s3", None).unwrap();
    let three_parts = reference::checksum(s3, Algorithm::Md5, &three).unwrap();
    let hex = three_parts.digest().to_hex();
    // The AWS CLI uploads a file of exactly 8 MiB as one part: H(H(data))-1, which -c
    // accepts; a wrong count is a wrong value.
    for (name, value, verdict) in [
        ("au/8m", format!("{}-1", md5(md5(&one).as_bytes())), "ok"),
        ("au/3p", format!("{hex}-7"), "corrupt"),
        ("au/3p", format!("{hex}-3"), "ok"),
    ] {
        let sums = dir.path().join("imp.sums");
        fs::write(&sums, format!("S3-MD5-8M ({name}) = {value}\n")).unwrap();
        let check = run(dir.path(), ["-c", "imp.sums"]);
        let checked = if verdict == "ok" { Some(0) } else { Some(1) };
        assert_eq!(check.code, checked, "{value}: {}", check.stdout());
        for store in ["--manifest", "--db"] {
            let file = format!("{}-{name}-{value}", &store[2..]).replace('/', "_");
            let r = run(
                dir.path(),
                ["--audit", store, &file, "--import", "imp.sums"],
            );
            assert_eq!(r.code, Some(0), "{store}: {}", r.stderr());
            let audited = run(dir.path(), ["--audit", store, &file, name]);
            assert_eq!(
                audited.verdicts(),
                [(verdict.to_string(), name.to_string())],
                "{store} {value}"
            );
        }
    }
}

#[test]
fn an_s3_value_over_parts_of_different_sizes_is_not_imported_but_said() {
    let dir = tempdir();
    fs::write(dir.path().join("odd"), b"odd").unwrap();
    fs::write(dir.path().join("even"), b"even").unwrap();
    let md5 = Algorithm::Md5.hash(b"even").to_hex();
    // A record keeps one part size: a line listing each part's size has no record.
    let sums = format!("S3-MD5-5M,1 (odd) = {md5}-2\nMD5 (even) = {md5}\n");
    fs::write(dir.path().join("imp.sums"), sums).unwrap();
    let r = run(
        dir.path(),
        ["--audit", "--db", "db", "--import", "imp.sums"],
    );
    assert!(
        r.stderr()
            .contains("line 1: an S3 value over parts of different sizes"),
        "{}",
        r.stderr()
    );
    let audited = run(dir.path(), ["--audit", "--db", "db", "even"]);
    assert_eq!(audited.verdicts(), [("ok".to_string(), "even".to_string())]);
}

/// How the summary counts `n` files: "1 file", "2 files".
fn files(n: usize) -> String {
    match n {
        1 => "1 file".to_string(),
        _ => format!("{n} files"),
    }
}

#[test]
fn an_export_from_a_store_that_does_not_exist_is_refused_and_writes_nothing() {
    let dir = tempdir();
    for store in [["--db", "typo.db"], ["--manifest", "typo.txt"]] {
        for out in ["-", "out"] {
            let r = run(
                dir.path(),
                [&store[..], &["--audit", "--export", out]].concat(),
            );
            assert_eq!(r.code, Some(2), "{store:?} {out}: {}", r.stderr());
            assert_eq!(
                r.stderr(),
                format!(
                    "mtsum: {}: No such file or directory (nothing to export)\n",
                    store[1]
                )
            );
            assert_eq!(r.stdout(), "");
            assert!(!dir.path().join(store[1]).exists(), "no store made");
            assert!(!dir.path().join("out").exists(), "no export written");
        }
    }
}

#[test]
fn an_empty_directory_where_records_lie_is_unreadable_and_update_keeps_its_records() {
    // A mount point whose file system is not mounted is an empty directory: a nightly
    // `--update` must not drop the records of the whole tree.
    let dir = tempdir();
    let names = tree(dir.path(), 3);
    assert_eq!(audit(dir.path(), &["-r", "t"]).code, Some(0));
    fs::rename(dir.path().join("t"), dir.path().join("mounted")).unwrap();
    fs::create_dir(dir.path().join("t")).unwrap();
    for args in [&["-r", "t"][..], &["-r", "--update", "t"]] {
        let r = audit(dir.path(), args);
        assert_eq!(r.code, Some(1), "{args:?}: {}", r.stderr());
        assert_eq!(r.stdout(), "unreadable  t\n");
        assert!(
            r.stderr().starts_with(
                "mtsum: t: empty, but 3 records lie below it: is its file system mounted? \
                 (the records are kept; --forget drops them)\n"
            ),
            "{}",
            r.stderr()
        );
    }
    fs::remove_dir(dir.path().join("t")).unwrap();
    fs::rename(dir.path().join("mounted"), dir.path().join("t")).unwrap();
    let r = audit(dir.path(), &["-r", "t"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    let ok: Vec<(String, String)> = names.iter().map(|n| ("ok".into(), n.clone())).collect();
    assert_eq!(r.verdicts(), ok);

    // Asked to forget them, it does.
    fs::rename(dir.path().join("t"), dir.path().join("mounted")).unwrap();
    fs::create_dir(dir.path().join("t")).unwrap();
    let r = audit(dir.path(), &["-r", "--forget", "t"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    let export = run(dir.path(), ["--audit", "--db", "db", "--export", "-"]);
    assert_eq!(export.stderr(), "mtsum: 0 records exported\n");
}

/// An audit of the database `db` in `dir` by one reader at `rate` bytes a second: slow
/// enough to be stopped halfway.
fn slow_audit(dir: &Path, rate: &str) -> StdCommand {
    let mut cmd = StdCommand::new(MTSUM);
    cmd.args([
        "--audit",
        "--db",
        "db",
        "--readers",
        "1",
        "--limit-rate",
        rate,
    ])
    .current_dir(dir);
    cmd
}
