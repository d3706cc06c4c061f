//! `mtsum --compare LOCAL REMOTE` between two local trees: the real binary on real trees
//! where every status is produced for real (a byte flipped under a kept size and mtime, a
//! file deleted on one side, added on the other, replaced by one of another size, a file the
//! user may not read), and the library's `compare` directly. The trees against an S3 bucket
//! are in python/tests/test_compare.py, where the tests start an S3 server.

mod common;

use std::fs;
use std::ops::ControlFlow;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use assert_cmd::Command;
use common::audit::flip_bytes_keeping_mtime;
use common::run::{Run, run, run_cmd};
use common::{mtsum_unprivileged, skip, tempdir};
use mtsum::compare::{self, Method, Options, Status};
use mtsum::engine::Engine;
use mtsum::source::Target;

fn write(root: &Path, name: &str, bytes: &[u8]) {
    let path = root.join(name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

/// Two equal trees `a` and `b` in `dir`: files of 0, 1 byte, a few MiB (hashed on several
/// workers), and a subdirectory.
fn twin_trees(dir: &Path) {
    let big = common::pattern(3 << 20, 7);
    for side in ["a", "b"] {
        let root = dir.join(side);
        write(&root, "empty", b"");
        write(&root, "one", b"1");
        write(&root, "big.bin", &big);
        write(&root, "sub/deep.txt", b"deep");
    }
}

fn compare_in(dir: &Path, args: &[&str]) -> Run {
    run(dir, [&["--compare"], args].concat())
}

#[test]
fn equal_trees_are_ok_name_by_name_in_bytewise_order_and_exit_0() {
    let dir = tempdir();
    twin_trees(dir.path());
    let r = compare_in(dir.path(), &["a", "b"]);
    assert_eq!(
        r.stdout(),
        "ok  big.bin\nok  empty\nok  one\nok  sub/deep.txt\n",
        "{}",
        r.stderr()
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    assert!(
        r.stderr().starts_with("mtsum: compared 4 names in "),
        "a summary line: {}",
        r.stderr()
    );
    assert!(r.stderr().contains("): 4 ok\n"), "{}", r.stderr());
}

#[test]
fn every_difference_is_told_apart_and_exits_1() {
    let dir = tempdir();
    twin_trees(dir.path());
    let b = dir.path().join("b");
    // Bit rot on one side: same size, same mtime, one byte changed.
    flip_bytes_keeping_mtime(&b.join("big.bin"), &[2 << 20]);
    fs::remove_file(b.join("one")).unwrap();
    write(&b, "extra", b"only here");
    // Replaced by a file of another size: told by the sizes, nothing read.
    write(&b, "sub/deep.txt", b"deeper");
    let r = compare_in(dir.path(), &["a", "b"]);
    assert_eq!(
        r.stdout(),
        "differs  big.bin\nok  empty\nonly-remote  extra\nonly-local  one\ndiffers  sub/deep.txt\n"
    );
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr()
            .contains("2 differs, 1 only-local, 1 only-remote"),
        "{}",
        r.stderr()
    );

    // --one-way: only what the first side holds must be on the second.
    let r = compare_in(dir.path(), &["--one-way", "--quiet", "a", "b"]);
    assert_eq!(
        r.stdout(),
        "differs  big.bin\nonly-local  one\ndiffers  sub/deep.txt\n"
    );
    assert_eq!(r.code, Some(1));

    // --size-only cannot see the flipped byte, and says so.
    let r = compare_in(dir.path(), &["--size-only", "--quiet", "a", "b"]);
    assert_eq!(
        r.stdout(),
        "only-remote  extra\nonly-local  one\ndiffers  sub/deep.txt\n"
    );
    assert!(r.stderr().contains("--size-only"), "{}", r.stderr());
}

#[test]
fn json_has_one_object_per_name_with_how_it_was_decided_and_a_summary() {
    let dir = tempdir();
    twin_trees(dir.path());
    write(&dir.path().join("b"), "one", b"22");
    let r = compare_in(dir.path(), &["--json", "a", "b"]);
    let lines: Vec<serde_json::Value> = r
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5, "{}", r.stdout());
    let big = &lines[0];
    assert_eq!(big["path"], "big.bin");
    assert_eq!(big["status"], "ok");
    assert_eq!(big["method"], "read");
    assert_eq!(
        (&big["layout"], &big["algorithm"]),
        (&"plain".into(), &"blake3".into())
    );
    assert_eq!(big["digest"], big["expected"]);
    assert_eq!(big["size"], 3 << 20);
    let one = &lines[2];
    assert_eq!(one["status"], "differs");
    assert_eq!(one["method"], "size");
    assert_eq!((&one["size"], &one["remote_size"]), (&1.into(), &2.into()));
    let summary = &lines[4]["summary"];
    assert_eq!(summary["names"], 4);
    assert_eq!(summary["ok"], 3);
    assert_eq!(summary["differs"], 1);
    assert_eq!(summary["by_read"], 3);
    assert_eq!(summary["clean"], false);
    assert_eq!(r.code, Some(1));
}

#[test]
fn t_and_a_choose_what_both_sides_are_hashed_with() {
    let dir = tempdir();
    twin_trees(dir.path());
    let r = compare_in(
        dir.path(),
        &["--json", "-t", "plain", "-a", "sha256", "a", "b"],
    );
    let first: serde_json::Value =
        serde_json::from_str(r.stdout().lines().next().unwrap()).unwrap();
    assert_eq!(first["algorithm"], "sha256");
    let sha256 = mtsum::reference::root(
        mtsum::Layout::Plain,
        mtsum::Algorithm::Sha256,
        &common::pattern(3 << 20, 7),
    );
    assert_eq!(first["digest"], sha256.to_hex());
}

#[test]
fn an_unreadable_file_is_one_line_on_each_channel_and_the_others_are_compared() {
    let cmd = match mtsum_unprivileged() {
        Ok(cmd) => cmd,
        Err(why) => return skip("unreadable_file", &why),
    };
    let dir = tempdir();
    twin_trees(dir.path());
    for path in ["", "a", "b", "a/sub", "b/sub"] {
        let mode = fs::Permissions::from_mode(0o755);
        fs::set_permissions(dir.path().join(path), mode).unwrap();
    }
    for entry in walk_files(dir.path()) {
        fs::set_permissions(&entry, fs::Permissions::from_mode(0o644)).unwrap();
    }
    let secret = dir.path().join("b/one");
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = Command::from_std(cmd);
    cmd.args(["--compare", "--quiet", "a", "b"]);
    let r = run_cmd(cmd.current_dir(dir.path()));
    assert_eq!(r.stdout(), "unreadable  one\n");
    assert!(
        r.stderr().starts_with("mtsum: b/one: Permission denied\n"),
        "{}",
        r.stderr()
    );
    assert!(r.stderr().contains("3 ok, 1 unreadable"), "{}", r.stderr());
    assert_eq!(r.code, Some(1));
}

fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk_files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_root_that_is_no_directory_is_one_line_and_exit_1_and_two_paths_are_needed() {
    let dir = tempdir();
    twin_trees(dir.path());
    let r = compare_in(dir.path(), &["a", "missing"]);
    assert_eq!(r.stdout(), "");
    assert_eq!(r.stderr(), "mtsum: missing: No such file or directory\n");
    assert_eq!(r.code, Some(1));
    let r = compare_in(dir.path(), &["a", "a/one"]);
    assert_eq!(r.stderr(), "mtsum: a/one: Not a directory\n");
    assert_eq!(r.code, Some(1));
    let r = compare_in(dir.path(), &["a"]);
    assert!(
        r.stderr().contains("--compare takes two paths"),
        "{}",
        r.stderr()
    );
    assert_eq!(r.code, Some(2));
    let r = compare_in(dir.path(), &["--read-remote", "a", "b"]);
    assert_eq!(
        r.code,
        Some(0),
        "a bare --read-remote takes no value: {}",
        r.stderr()
    );
    let r = run(dir.path(), ["--one-way", "a", "b"]);
    assert_eq!(r.code, Some(2), "--one-way needs --compare");
}

#[test]
fn the_library_hands_one_record_per_name_in_order_and_a_sink_may_stop_it() {
    let dir = tempdir();
    twin_trees(dir.path());
    let (a, b) = (
        Target::from_arg(dir.path().join("a")),
        Target::from_arg(dir.path().join("b")),
    );
    let engine = Engine::default();
    let mut seen = Vec::new();
    let summary = compare::compare(&engine, &a, &b, &Options::default(), &mut |r| {
        seen.push((
            String::from_utf8(r.name.clone()).unwrap(),
            r.status,
            r.method,
        ));
        ControlFlow::Continue(())
    })
    .unwrap();
    let read = Some(Method::Read);
    assert_eq!(
        seen,
        [
            ("big.bin".to_string(), Status::Ok, read),
            ("empty".into(), Status::Ok, read),
            ("one".into(), Status::Ok, read),
            ("sub/deep.txt".into(), Status::Ok, read),
        ]
    );
    assert!(summary.is_clean());
    assert_eq!(summary.bytes, 2 * ((3 << 20) + 1 + 4));

    let mut taken = 0;
    compare::compare(&engine, &a, &b, &Options::default(), &mut |_| {
        taken += 1;
        ControlFlow::Break(())
    })
    .unwrap();
    assert_eq!(taken, 1, "no record after the sink said stop");
}
