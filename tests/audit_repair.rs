//! Locating and repairing damage with the database's leaf digests: a flipped byte reported in
//! the byte range of its leaf for sizes around leaf boundaries, repairs of one and of several
//! ranges compared with `cmp`, the repairs that must be refused without writing a byte, and
//! repairs cut short (killed, an I/O error) that the next audit must not take for an edit.

#![cfg(feature = "database")]

mod common;

use common::audit::{as_schema_version, flip_bytes_keeping_mtime, mtime};
use common::run::{Run, run};
use common::{MTSUM, pattern, tempdir};
use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::Command as StdCommand;
use std::time::{Duration, SystemTime};

use mtsum::audit::outboard::MIN_LEAF;
use mtsum::audit::store::SCHEMA_VERSION;
use mtsum::audit::{Stamp, Store};
use rusqlite::Connection;

/// `mtsum --repair t/f --from COPY --db db EXTRA`.
fn repair(dir: &Path, copy: &str, extra: &[&str]) -> Run {
    run(
        dir,
        [&["--repair", "t/f", "--from", copy, "--db", "db"], extra].concat(),
    )
}

fn flip(path: &Path, offsets: &[u64]) {
    flip_bytes_keeping_mtime(path, offsets);
}

/// Whether `cmp` finds the two files identical (bytes compared in Rust where `cmp` is
/// missing).
fn same(a: &Path, b: &Path) -> bool {
    match StdCommand::new("cmp").arg("-s").arg(a).arg(b).status() {
        Ok(status) => status.success(),
        Err(_) => fs::read(a).unwrap() == fs::read(b).unwrap(),
    }
}

/// The damaged range printed for a byte flipped at `offset` of a file of `len` bytes: its
/// leaf, end exclusive as every range mtsum prints.
fn leaf_range(offset: u64, len: u64) -> String {
    let start = offset / MIN_LEAF * MIN_LEAF;
    let end = len.min(start + MIN_LEAF);
    format!("{start}-{end}")
}

#[test]
fn a_flipped_byte_is_located_in_its_leaf_for_sizes_around_leaf_boundaries() {
    let dir = tempdir();
    fs::create_dir(dir.path().join("t")).unwrap();
    let l = MIN_LEAF;
    let mut cases = Vec::new();
    for len in [1, l - 1, l, l + 1, 2 * l, 2 * l + 1, 5 * l - 1] {
        for offset in [0, l - 1, l, len - 1] {
            if offset < len {
                cases.push((len, offset));
            }
        }
    }
    cases.dedup();
    let name = |i: usize| format!("t/{i:03}");
    for (i, &(len, _)) in cases.iter().enumerate() {
        fs::write(dir.path().join(name(i)), pattern(len as usize, i as u64)).unwrap();
    }
    let first = run(dir.path(), ["--audit", "--db", "db", "-r", "t"]);
    assert_eq!(first.code, Some(0), "{}", first.stderr());
    for (i, &(_, offset)) in cases.iter().enumerate() {
        flip(&dir.path().join(name(i)), &[offset]);
    }
    let audit = run(dir.path(), ["--audit", "--db", "db", "-r", "t"]);
    assert_eq!(audit.code, Some(1));
    let lines: Vec<&str> = audit.stdout().lines().collect();
    assert_eq!(lines.len(), cases.len());
    for (i, &(len, offset)) in cases.iter().enumerate() {
        let want = format!("corrupt  {}  (bytes {})", name(i), leaf_range(offset, len));
        assert_eq!(lines[i], want, "{len} bytes, flipped at {offset}");
    }

    let json = run(dir.path(), ["--audit", "--db", "db", "--json", "-r", "t"]);
    for (i, line) in json.stdout().lines().take(cases.len()).enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let (len, offset) = cases[i];
        let start = offset / l * l;
        assert_eq!(
            v["damaged"],
            serde_json::json!([[start, len.min(start + l)]]),
            "{line}"
        );
    }
}

/// A recorded file `t/f` of `len` bytes with its copy `b/f`; returns their paths.
fn recorded_with_copy(dir: &Path, len: usize) -> (std::path::PathBuf, std::path::PathBuf) {
    fs::create_dir_all(dir.join("t")).unwrap();
    fs::create_dir_all(dir.join("b")).unwrap();
    let data = pattern(len, 7);
    fs::write(dir.join("t/f"), &data).unwrap();
    fs::write(dir.join("b/f"), &data).unwrap();
    let r = run(dir, ["--audit", "--db", "db", "t/f"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    (dir.join("t/f"), dir.join("b/f"))
}

#[test]
fn one_damaged_range_is_repaired_from_a_copy() {
    let dir = tempdir();
    let (file, copy) = recorded_with_copy(dir.path(), 3 * MIN_LEAF as usize + 100);
    let mtime = fs::metadata(&file).unwrap().modified().unwrap();
    flip(&file, &[MIN_LEAF + 5]);
    assert!(!same(&file, &copy));
    let r = repair(dir.path(), "b/f", &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    assert_eq!(
        r.stdout(),
        format!("repaired  t/f  (bytes {}-{})\n", MIN_LEAF, 2 * MIN_LEAF)
    );
    assert!(same(&file, &copy));
    assert_eq!(fs::metadata(&file).unwrap().modified().unwrap(), mtime);
    let audit = run(dir.path(), ["--audit", "--db", "db", "t/f"]);
    assert_eq!(audit.stdout(), "ok  t/f\n");
}

#[test]
fn several_damaged_ranges_are_repaired_and_nothing_else_is_written() {
    let dir = tempdir();
    let len = 6 * MIN_LEAF as usize + 3;
    let (file, copy) = recorded_with_copy(dir.path(), len);
    flip(
        &file,
        &[0, 1, 2 * MIN_LEAF + 9, 3 * MIN_LEAF, len as u64 - 1],
    );
    // The copy differs from the file in a leaf that is good in the file: had the repair
    // copied more than the damaged leaves, the file would now differ from its record.
    let mut expected = fs::read(&copy).unwrap();
    let spare = 4 * MIN_LEAF + 17;
    let c = OpenOptions::new().write(true).open(&copy).unwrap();
    c.write_all_at(&[expected[spare as usize] ^ 1], spare)
        .unwrap();
    drop(c);
    let r = repair(dir.path(), "b/f", &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    let l = MIN_LEAF;
    assert_eq!(
        r.stdout(),
        format!(
            "repaired  t/f  (bytes 0-{}, {}-{}, {}-{})\n",
            l,
            2 * l,
            4 * l,
            6 * l,
            len
        )
    );
    assert!(
        !same(&file, &copy),
        "the copy's own difference was not copied"
    );
    expected.truncate(len);
    assert_eq!(fs::read(&file).unwrap(), expected);
}

#[test]
fn a_copy_damaged_in_a_needed_leaf_or_of_another_size_is_refused_and_nothing_written() {
    let dir = tempdir();
    let (file, copy) = recorded_with_copy(dir.path(), 4 * MIN_LEAF as usize);
    flip(&file, &[10, 3 * MIN_LEAF + 10]);
    flip(&copy, &[3 * MIN_LEAF + 11]);
    let before = fs::read(&file).unwrap();
    let mtime = fs::metadata(&file).unwrap().modified().unwrap();
    let r = repair(dir.path(), "b/f", &[]);
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stderr(),
        format!(
            "mtsum: t/f: the copy b/f is damaged too (bytes {}-{}): refused, nothing written\n",
            3 * MIN_LEAF,
            4 * MIN_LEAF
        )
    );
    assert_eq!(fs::read(&file).unwrap(), before, "not one byte written");
    assert_eq!(fs::metadata(&file).unwrap().modified().unwrap(), mtime);

    fs::write(dir.path().join("short"), &before[..100]).unwrap();
    let r = repair(dir.path(), "short", &[]);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr().contains("has 100 bytes"), "{}", r.stderr());
    assert_eq!(fs::read(&file).unwrap(), before);

    let dry = repair(dir.path(), "b/f", &["--dry-run"]);
    assert_eq!(dry.code, Some(1), "a dry run checks the copy too");
    assert_eq!(fs::read(&file).unwrap(), before);
}

#[test]
fn a_file_of_one_leaf_keeps_no_leaf_digests_and_its_record_checks_the_copy() {
    let dir = tempdir();
    let len = MIN_LEAF;
    let (file, copy) = recorded_with_copy(dir.path(), len as usize);
    fs::write(dir.path().join("t/g"), pattern(len as usize + 1, 3)).unwrap();
    run(dir.path(), ["--audit", "--db", "db", "t/g"]);
    let conn = Connection::open(dir.path().join("db")).unwrap();
    let kept: Vec<(String, bool)> = conn
        .prepare("SELECT CAST(path AS TEXT), outboard IS NOT NULL FROM records ORDER BY path")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    drop(conn);
    assert_eq!(kept, [("t/f".into(), false), ("t/g".into(), true)]);

    flip(&file, &[len - 1]);
    flip(&copy, &[0]);
    let r = repair(dir.path(), "b/f", &[]);
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stderr(),
        format!(
            "mtsum: t/f: the copy b/f is damaged too (bytes 0-{len}): refused, nothing written\n"
        )
    );
    flip(&copy, &[0]);
    let r = run(
        dir.path(),
        ["--audit", "--db", "db", "t/f", "--repair-from", "b"],
    );
    assert_eq!(
        r.stdout(),
        format!("repaired  t/f  (bytes 0-{len})\n"),
        "{}",
        r.stderr()
    );
    assert!(same(&file, &copy));
}

#[test]
fn an_outboard_of_rfc6962_leaves_of_earlier_builds_still_locates_a_flipped_byte_and_repairs_it() {
    let dir = tempdir();
    let len = 3 * MIN_LEAF as usize + 100;
    let (file, copy) = recorded_with_copy(dir.path(), len);
    let conn = Connection::open(dir.path().join("db")).unwrap();
    let stored: Vec<u8> = conn
        .query_row("SELECT outboard FROM records", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        (stored.len(), stored[0]),
        (1 + 4 * 32, 1),
        "a tag, then 4 leaves"
    );
    // What earlier builds recorded: RFC 6962 leaves, BLAKE3(0x00 || leaf), the digests alone.
    let old: Vec<u8> = pattern(len, 7)
        .chunks(MIN_LEAF as usize)
        .flat_map(|leaf| *blake3::hash(&[&[0][..], leaf].concat()).as_bytes())
        .collect();
    conn.execute("UPDATE records SET outboard = ?1", [&old])
        .unwrap();
    drop(conn);
    flip(&file, &[MIN_LEAF + 5]);
    let damaged = format!("(bytes {}-{})", MIN_LEAF, 2 * MIN_LEAF);
    let r = run(dir.path(), ["--audit", "--db", "db", "t/f"]);
    assert_eq!(
        r.stdout(),
        format!("corrupt  t/f  {damaged}\n"),
        "{}",
        r.stderr()
    );
    let r = repair(dir.path(), "b/f", &[]);
    assert_eq!(
        r.stdout(),
        format!("repaired  t/f  {damaged}\n"),
        "{}",
        r.stderr()
    );
    assert!(same(&file, &copy));
}

#[test]
fn a_copy_that_cannot_be_read_is_named_in_the_error_not_the_file() {
    let dir = tempdir();
    let (file, _) = recorded_with_copy(dir.path(), 2 * MIN_LEAF as usize);
    flip(&file, &[MIN_LEAF]);
    let before = fs::read(&file).unwrap();
    for extra in [&[][..], &["--dry-run"][..]] {
        let r = repair(dir.path(), "b/gone", extra);
        assert_eq!(r.code, Some(1));
        assert_eq!(
            r.stderr(),
            "mtsum: t/f: cannot read the copy b/gone: No such file or directory\n"
        );
        assert_eq!(fs::read(&file).unwrap(), before, "not one byte written");
    }
}

#[test]
fn a_dry_run_says_what_it_would_repair_and_writes_nothing() {
    let dir = tempdir();
    let (file, _) = recorded_with_copy(dir.path(), 2 * MIN_LEAF as usize);
    flip(&file, &[MIN_LEAF]);
    let before = fs::read(&file).unwrap();
    let r = repair(dir.path(), "b/f", &["--dry-run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    assert_eq!(
        r.stdout(),
        format!("would repair  t/f  (bytes {}-{})\n", MIN_LEAF, 2 * MIN_LEAF)
    );
    assert_eq!(fs::read(&file).unwrap(), before);
}

/// `t/a` and `t/sub/b` recorded in `db`, a mirror of them in `b`, and a byte of `t/sub/b`
/// flipped in its third leaf.
fn damaged_tree_with_mirror(dir: &Path) {
    for (name, len) in [("a", 100), ("sub/b", 3 * MIN_LEAF as usize)] {
        for root in ["t", "b"] {
            let path = dir.join(root).join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, pattern(len, len as u64)).unwrap();
        }
    }
    run(dir, ["--audit", "--db", "db", "-r", "t"]);
    flip(&dir.join("t/sub/b"), &[2 * MIN_LEAF]);
}

#[test]
fn an_audit_repairs_from_a_mirror_of_the_tree_and_nothing_is_wrong_afterwards() {
    let dir = tempdir();
    damaged_tree_with_mirror(dir.path());
    let r = run(
        dir.path(),
        ["--audit", "--db", "db", "-r", "t", "--repair-from", "b"],
    );
    let damaged = format!("(bytes {}-{})", 2 * MIN_LEAF, 3 * MIN_LEAF);
    assert_eq!(
        r.stdout(),
        format!("ok  t/a\nrepaired  t/sub/b  {damaged}\n")
    );
    // The repair worked: no alarm for a cron job to mail, and the summary still says that
    // damage was found and mended.
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    assert!(
        r.stderr().contains("  corrupt            0\n"),
        "{}",
        r.stderr()
    );
    assert!(
        r.stderr().contains(
            "  repaired           1  damaged, and put back from the copies: they check out now\n"
        ),
        "{}",
        r.stderr()
    );
    assert!(r.stderr().contains("records: 1 repaired"), "{}", r.stderr());
    assert!(same(
        &dir.path().join("t/sub/b"),
        &dir.path().join("b/sub/b")
    ));
    let again = run(dir.path(), ["--audit", "--db", "db", "-r", "t"]);
    assert_eq!(again.code, Some(0));
    assert_eq!(again.stdout(), "ok  t/a\nok  t/sub/b\n");
}

#[test]
fn a_repair_during_an_audit_is_repaired_in_json_and_a_dry_run_says_it_would_repair() {
    let dir = tempdir();
    damaged_tree_with_mirror(dir.path());
    let args = ["--audit", "--db", "db", "-r", "t", "--repair-from", "b"];
    // A dry run writes nothing: the file is still corrupt.
    let dry = run(dir.path(), [&args[..], &["--dry-run"]].concat());
    assert_eq!(dry.code, Some(1), "{}", dry.stderr());
    let damaged = format!("(bytes {}-{})", 2 * MIN_LEAF, 3 * MIN_LEAF);
    assert_eq!(
        dry.stdout(),
        format!("ok  t/a\nwould repair  t/sub/b  {damaged}\n")
    );
    let json = run(dir.path(), [&args[..], &["--json"]].concat());
    assert_eq!(json.code, Some(0), "{}", json.stderr());
    let lines: Vec<serde_json::Value> = json
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[1]["path"], "t/sub/b");
    assert_eq!(lines[1]["status"], "repaired");
    assert_eq!(lines[1]["action"], "repaired");
    let summary = &lines[2]["summary"];
    assert_eq!(summary["repaired"], 1);
    assert_eq!(summary["corrupt"], 0);
    assert_eq!(summary["clean"], true);
}

const INTERRUPTED: &str = "a repair was interrupted; run --repair again";

/// `mtsum ARGS` in `dir`, unable to write a file past `limit` bytes (`RLIMIT_FSIZE`): the
/// first write past it kills the process with SIGXFSZ, at that write and nowhere else, as a
/// `kill -9` or a power cut would; with `survive`, the signal is ignored and the write fails
/// with EFBIG (`File too large`), an I/O error in the middle of the work.
fn mtsum_with_file_limit(dir: &Path, args: &[&str], limit: u64, survive: bool) -> Run {
    let mut cmd = StdCommand::new(MTSUM);
    cmd.args(args).current_dir(dir);
    // SAFETY: between fork and exec the closure only calls setrlimit and signal, which are
    // async-signal-safe, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let fsize = libc::rlimit {
                rlim_cur: limit as libc::rlim_t,
                rlim_max: limit as libc::rlim_t,
            };
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &fsize) != 0
                || libc::setrlimit(libc::RLIMIT_CORE, &no_core) != 0
                // Ignored or at its default action whatever the test runner inherited (a
                // Python parent ignores SIGXFSZ, and exec keeps that).
                || libc::signal(
                    libc::SIGXFSZ,
                    if survive { libc::SIG_IGN } else { libc::SIG_DFL },
                ) == libc::SIG_ERR
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("mtsum runs");
    let killed = out.status.signal();
    assert_eq!(
        killed,
        (!survive).then_some(libc::SIGXFSZ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Run::from_output(out)
}

/// The recorded size and mtime of `name` in the database `db`, and the number of repairs
/// marked in progress.
fn stored(db: &Path, name: &str) -> ((i64, i64, i64), i64) {
    let conn = Connection::open(db).unwrap();
    let stamp = conn
        .query_row(
            "SELECT size, mtime_sec, mtime_nsec FROM records WHERE path = ?1",
            [name.as_bytes()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let marks = conn
        .query_row("SELECT count(*) FROM repairs", [], |r| r.get(0))
        .unwrap();
    (stamp, marks)
}

/// A recorded file `t/f` of four leaves with its copy `b/f`, damaged in its first and last
/// leaves; returns their paths and the recorded mtime.
fn damaged_in_two_leaves(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, SystemTime) {
    let (file, copy) = recorded_with_copy(dir, 4 * MIN_LEAF as usize);
    flip(&file, &[10, 3 * MIN_LEAF + 10]);
    (file.clone(), copy, mtime(&file))
}

/// What an interrupted repair of [`damaged_in_two_leaves`] left: the first leaf written, the
/// last not, a new mtime; the record as it was, the repair marked.
fn assert_half_repaired(dir: &Path, file: &Path, copy: &Path, recorded: SystemTime) {
    let (now, good) = (fs::read(file).unwrap(), fs::read(copy).unwrap());
    let leaf = MIN_LEAF as usize;
    assert_eq!(now[..leaf], good[..leaf], "the first leaf was written");
    assert_ne!(now[3 * leaf..], good[3 * leaf..], "the last one was not");
    assert_ne!(mtime(file), recorded, "the write moved the mtime");
    let (stamp, marks) = stored(&dir.join("db"), "t/f");
    assert_eq!(marks, 1, "the repair is marked in progress");
    let since = recorded.duration_since(SystemTime::UNIX_EPOCH).unwrap();
    assert_eq!(
        stamp,
        (
            4 * MIN_LEAF as i64,
            since.as_secs() as i64,
            since.subsec_nanos() as i64
        )
    );
}

/// The next audit of a half-repaired `t/f`, even with `--update`, calls it corrupt for the
/// interrupted repair and keeps its record; in JSON too.
fn assert_audit_says_interrupted(dir: &Path, recorded: SystemTime) {
    let last = format!("{}-{}", 3 * MIN_LEAF, 4 * MIN_LEAF);
    let audit = run(dir, ["--audit", "--db", "db", "--update", "t/f"]);
    assert_eq!(audit.code, Some(1), "{}", audit.stderr());
    assert_eq!(audit.stdout(), format!("corrupt  t/f  (bytes {last})\n"));
    assert!(
        audit
            .stderr()
            .contains(&format!("mtsum: t/f: {INTERRUPTED}\n")),
        "{}",
        audit.stderr()
    );
    let json = run(dir, ["--audit", "--db", "db", "--update", "--json", "t/f"]);
    assert_eq!(json.code, Some(1));
    let v: serde_json::Value = serde_json::from_str(json.stdout().lines().next().unwrap()).unwrap();
    assert_eq!(v["status"], "corrupt");
    assert_eq!(v["error"], INTERRUPTED);
    assert_eq!(v["action"], "kept");
    assert_eq!(
        v["damaged"],
        serde_json::json!([[3 * MIN_LEAF, 4 * MIN_LEAF]])
    );
    let (_, marks) = stored(&dir.join("db"), "t/f");
    assert_eq!(marks, 1);
    assert_ne!(mtime(&dir.join("t/f")), recorded);
}

/// `repair` finished the interrupted repair of [`damaged_in_two_leaves`]: the last leaf
/// written, the file now byte for byte the copy with its recorded mtime, the mark gone, and the
/// next audit finds it ok.
fn assert_finished(dir: &Path, repair: &Run, copy: &Path, recorded: SystemTime) {
    let last = format!("{}-{}", 3 * MIN_LEAF, 4 * MIN_LEAF);
    assert_eq!(repair.stdout(), format!("repaired  t/f  (bytes {last})\n"));
    let file = dir.join("t/f");
    assert!(same(&file, copy));
    assert_eq!(mtime(&file), recorded);
    assert_eq!(stored(&dir.join("db"), "t/f").1, 0, "the mark is gone");
    let audit = run(dir, ["--audit", "--db", "db", "t/f"]);
    assert_eq!((audit.code, audit.stdout()), (Some(0), "ok  t/f\n"));
}

/// Repairs of the file of [`damaged_in_two_leaves`] write its first leaf, then die at the
/// last: the file system takes no byte past the second leaf.
const LIMIT: u64 = 2 * MIN_LEAF;

#[test]
fn a_repair_killed_midway_is_corrupt_to_the_next_audit_and_finished_by_the_next_repair() {
    let dir = tempdir();
    let (file, copy, recorded) = damaged_in_two_leaves(dir.path());
    let args = ["--repair", "t/f", "--from", "b/f", "--db", "db"];
    let killed = mtsum_with_file_limit(dir.path(), &args, LIMIT, false);
    assert_eq!(killed.code, None);
    assert_half_repaired(dir.path(), &file, &copy, recorded);
    assert_audit_says_interrupted(dir.path(), recorded);

    let again = repair(dir.path(), "b/f", &[]);
    assert_eq!(again.code, Some(0), "{}", again.stderr());
    assert_finished(dir.path(), &again, &copy, recorded);
}

#[test]
fn a_repair_failing_midway_with_an_io_error_leaves_the_mark_and_an_audit_finishes_it() {
    let dir = tempdir();
    let (file, copy, recorded) = damaged_in_two_leaves(dir.path());
    let args = ["--repair", "t/f", "--from", "b/f", "--db", "db"];
    let failed = mtsum_with_file_limit(dir.path(), &args, LIMIT, true);
    assert_eq!(failed.code, Some(1));
    assert_eq!(failed.stderr(), "mtsum: t/f: File too large\n");
    assert_half_repaired(dir.path(), &file, &copy, recorded);
    assert_audit_says_interrupted(dir.path(), recorded);

    // During an audit too: --repair-from finishes it, and then nothing is wrong.
    let audit = run(
        dir.path(),
        ["--audit", "--db", "db", "t/f", "--repair-from", "b"],
    );
    assert_eq!(audit.code, Some(0), "{}", audit.stderr());
    assert!(!audit.stderr().contains(INTERRUPTED), "{}", audit.stderr());
    assert_finished(dir.path(), &audit, &copy, recorded);
}

#[test]
fn a_repair_cut_short_after_its_last_leaf_only_needs_its_mtime_put_back() {
    let dir = tempdir();
    let (file, copy) = recorded_with_copy(dir.path(), 3 * MIN_LEAF as usize);
    let recorded = mtime(&file);
    let stamp = Stamp::of(&fs::metadata(&file).unwrap());
    flip(&file, &[MIN_LEAF]);
    // As the repair leaves it when killed between its last write and putting the mtime back:
    // marked through the library as the repair marks it, every leaf good, a new mtime.
    let mut store = Store::Database(dir.path().join("db"))
        .open(true, false)
        .unwrap();
    store.begin_repair(Path::new("t/f"), stamp).unwrap();
    drop(store);
    fs::write(&file, fs::read(&copy).unwrap()).unwrap();
    let later = recorded + Duration::from_secs(60);
    OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(later)
        .unwrap();

    let audit = run(dir.path(), ["--audit", "--db", "db", "--update", "t/f"]);
    assert_eq!(audit.code, Some(1));
    assert_eq!(audit.stdout(), "corrupt  t/f\n");
    assert!(audit.stderr().contains(INTERRUPTED), "{}", audit.stderr());
    let dry = repair(dir.path(), "b/f", &["--dry-run"]);
    assert_eq!((dry.code, dry.stdout()), (Some(0), "would repair  t/f\n"));
    assert_eq!(mtime(&file), later);
    let r = repair(dir.path(), "b/f", &[]);
    assert_eq!(
        (r.code, r.stdout()),
        (Some(0), "repaired  t/f\n"),
        "{}",
        r.stderr()
    );
    assert_eq!(mtime(&file), recorded);
    let audit = run(dir.path(), ["--audit", "--db", "db", "t/f"]);
    assert_eq!((audit.code, audit.stdout()), (Some(0), "ok  t/f\n"));
}

#[test]
fn a_mark_does_not_cover_a_change_of_size_nor_outlive_fix() {
    let dir = tempdir();
    let (file, _) = recorded_with_copy(dir.path(), 2 * MIN_LEAF as usize);
    let stamp = Stamp::of(&fs::metadata(&file).unwrap());
    let mut store = Store::Database(dir.path().join("db"))
        .open(true, false)
        .unwrap();
    store.begin_repair(Path::new("t/f"), stamp).unwrap();
    drop(store);
    // A repair never changes the size: a file that grew was edited.
    let mut grown = fs::read(&file).unwrap();
    grown.push(0);
    fs::write(&file, &grown).unwrap();
    let audit = run(dir.path(), ["--audit", "--db", "db", "t/f"]);
    assert_eq!(audit.stdout(), "modified  t/f\n");
    let r = repair(dir.path(), "b/f", &[]);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr().contains("was modified"), "{}", r.stderr());
    // Back to its size with a new mtime: the mark's again, until --fix accepts the file.
    grown.pop();
    grown[5] ^= 1;
    fs::write(&file, &grown).unwrap();
    let audit = run(dir.path(), ["--audit", "--db", "db", "t/f"]);
    assert_eq!(audit.stdout(), "corrupt  t/f  (bytes 0-65536)\n");
    let fix = run(dir.path(), ["--audit", "--db", "db", "--fix", "t/f"]);
    assert_eq!(fix.stdout(), "corrupt  t/f  (bytes 0-65536)\n");
    assert_eq!(stored(&dir.path().join("db"), "t/f").1, 0);
    let audit = run(dir.path(), ["--audit", "--db", "db", "t/f"]);
    assert_eq!((audit.code, audit.stdout()), (Some(0), "ok  t/f\n"));
}

#[test]
fn a_database_of_version_1_is_read_as_it_is_and_upgraded_when_written() {
    let dir = tempdir();
    let (file, _) = recorded_with_copy(dir.path(), 100);
    let db = dir.path().join("db");
    let version = |db: &Path| -> i32 {
        let conn = Connection::open(db).unwrap();
        conn.pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap()
    };
    as_schema_version(&db, 1);
    let dry = run(dir.path(), ["--audit", "--db", "db", "--dry-run", "t/f"]);
    assert_eq!(
        (dry.code, dry.stdout()),
        (Some(0), "ok  t/f\n"),
        "{}",
        dry.stderr()
    );
    let export = run(dir.path(), ["--audit", "--export", "-", "--db", "db"]);
    assert_eq!(export.code, Some(0), "{}", export.stderr());
    assert!(export.stdout().contains("t/f"), "{}", export.stdout());
    assert_eq!(version(&db), 1, "a reader writes nothing");
    let audit = run(dir.path(), ["--audit", "--db", "db", "t/f"]);
    assert_eq!((audit.code, audit.stdout()), (Some(0), "ok  t/f\n"));
    assert_eq!(version(&db), SCHEMA_VERSION);
    assert_eq!(stored(&db, "t/f").1, 0);
    flip(&file, &[7]);
    let audit = run(dir.path(), ["--audit", "--db", "db", "t/f"]);
    assert_eq!(audit.stdout(), "corrupt  t/f  (bytes 0-100)\n");
}
