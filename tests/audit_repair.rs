//! Locating and repairing damage with the database's leaf digests: a flipped byte reported in
//! the byte range of its leaf for sizes around leaf boundaries, repairs of one and of several
//! ranges compared with `cmp`, and the repairs that must be refused without writing a byte.

#![cfg(feature = "database")]

mod common;

use common::audit::{Run, flip_bytes_keeping_mtime, mtsum_in};
use common::{pattern, tempdir};
use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command as StdCommand;

use mtsum::audit::outboard::MIN_LEAF;

fn mtsum(dir: &Path, args: &[&str]) -> Run {
    mtsum_in(dir, args)
}

/// `mtsum --repair t/f --from COPY --db db EXTRA`.
fn repair(dir: &Path, copy: &str, extra: &[&str]) -> Run {
    mtsum(
        dir,
        &[&["--repair", "t/f", "--from", copy, "--db", "db"], extra].concat(),
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

/// The damaged range printed for a byte flipped at `offset` of a file of `len` bytes.
fn leaf_range(offset: u64, len: u64) -> String {
    let start = offset / MIN_LEAF * MIN_LEAF;
    let end = len.min(start + MIN_LEAF) - 1;
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
    let first = mtsum(dir.path(), &["--audit", "--db", "db", "-r", "t"]);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    for (i, &(_, offset)) in cases.iter().enumerate() {
        flip(&dir.path().join(name(i)), &[offset]);
    }
    let audit = mtsum(dir.path(), &["--audit", "--db", "db", "-r", "t"]);
    assert_eq!(audit.code, Some(1));
    let lines: Vec<&str> = audit.stdout.lines().collect();
    assert_eq!(lines.len(), cases.len());
    for (i, &(len, offset)) in cases.iter().enumerate() {
        let want = format!("corrupt  {}  (bytes {})", name(i), leaf_range(offset, len));
        assert_eq!(lines[i], want, "{len} bytes, flipped at {offset}");
    }

    let json = mtsum(dir.path(), &["--audit", "--db", "db", "--json", "-r", "t"]);
    for (i, line) in json.stdout.lines().take(cases.len()).enumerate() {
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
    let r = mtsum(dir, &["--audit", "--db", "db", "t/f"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
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
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stdout,
        format!("repaired  t/f  (bytes {}-{})\n", MIN_LEAF, 2 * MIN_LEAF - 1)
    );
    assert!(same(&file, &copy));
    assert_eq!(fs::metadata(&file).unwrap().modified().unwrap(), mtime);
    let audit = mtsum(dir.path(), &["--audit", "--db", "db", "t/f"]);
    assert_eq!(audit.stdout, "ok  t/f\n");
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
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let l = MIN_LEAF;
    assert_eq!(
        r.stdout,
        format!(
            "repaired  t/f  (bytes 0-{}, {}-{}, {}-{})\n",
            l - 1,
            2 * l,
            4 * l - 1,
            6 * l,
            len - 1
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
        r.stderr,
        format!(
            "mtsum: t/f: the copy b/f is damaged too (bytes {}-{}): refused, nothing written\n",
            3 * MIN_LEAF,
            4 * MIN_LEAF - 1
        )
    );
    assert_eq!(fs::read(&file).unwrap(), before, "not one byte written");
    assert_eq!(fs::metadata(&file).unwrap().modified().unwrap(), mtime);

    fs::write(dir.path().join("short"), &before[..100]).unwrap();
    let r = repair(dir.path(), "short", &[]);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("has 100 bytes"), "{}", r.stderr);
    assert_eq!(fs::read(&file).unwrap(), before);

    let dry = repair(dir.path(), "b/f", &["--dry-run"]);
    assert_eq!(dry.code, Some(1), "a dry run checks the copy too");
    assert_eq!(fs::read(&file).unwrap(), before);
}

#[test]
fn a_dry_run_says_what_it_would_repair_and_writes_nothing() {
    let dir = tempdir();
    let (file, _) = recorded_with_copy(dir.path(), 2 * MIN_LEAF as usize);
    flip(&file, &[MIN_LEAF]);
    let before = fs::read(&file).unwrap();
    let r = repair(dir.path(), "b/f", &["--dry-run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stdout,
        format!(
            "would repair  t/f  (bytes {}-{})\n",
            MIN_LEAF,
            2 * MIN_LEAF - 1
        )
    );
    assert_eq!(fs::read(&file).unwrap(), before);
}

#[test]
fn an_audit_repairs_from_a_mirror_of_the_tree() {
    let dir = tempdir();
    for (name, len) in [("a", 100), ("sub/b", 3 * MIN_LEAF as usize)] {
        for root in ["t", "b"] {
            let path = dir.path().join(root).join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, pattern(len, len as u64)).unwrap();
        }
    }
    mtsum(dir.path(), &["--audit", "--db", "db", "-r", "t"]);
    flip(&dir.path().join("t/sub/b"), &[2 * MIN_LEAF]);
    let r = mtsum(
        dir.path(),
        &["--audit", "--db", "db", "-r", "t", "--repair-from", "b"],
    );
    assert_eq!(
        r.stdout,
        format!(
            "ok  t/a\nrepaired  t/sub/b  (bytes {}-{})\n",
            2 * MIN_LEAF,
            3 * MIN_LEAF - 1
        )
    );
    assert!(r.stderr.contains("1 repaired"), "{}", r.stderr);
    assert!(same(
        &dir.path().join("t/sub/b"),
        &dir.path().join("b/sub/b")
    ));
    let again = mtsum(dir.path(), &["--audit", "--db", "db", "-r", "t"]);
    assert_eq!(again.code, Some(0));
}
