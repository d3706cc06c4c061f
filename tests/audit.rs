//! `mtsum --audit` as a cron job meets it: the real binary on real trees where every class is
//! produced for real (a byte flipped under a restored mtime, an edit, files added and deleted,
//! a file appended to while it is read, a file the user may not read), with both stores, and
//! the library's `audit` directly.
//!
//! Tests that need something the machine may not offer (a non-root user, a file system without
//! user extended attributes, user extended attributes at all) print why they skipped and pass.

mod common;

use common::audit::{flip_byte_keeping_mtime, mtime};
use common::run::{Run, run, run_cmd};
use common::{MTSUM, mtsum_unprivileged, skip, tempdir, wait_until, write_file};
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use assert_cmd::Command;
use mtsum::audit::manifest::Manifest;
use mtsum::audit::{self, Action, Event, Mtime, Options, Prior, Record, Stamp, Status, Store};
use mtsum::source::Target;
use mtsum::walk::Recursion;
use mtsum::{Algorithm, Layout, reference};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// `mtsum --audit ARGS` in `dir`.
fn audit_in(dir: &Path, args: &[&str]) -> Run {
    run(dir, [&["--audit"], args].concat())
}

fn set_mtime(path: &Path, t: SystemTime) {
    let f = OpenOptions::new().write(true).open(path).unwrap();
    f.set_modified(t).unwrap();
}

/// A legitimate edit: new content, and an mtime surely different from the recorded one
/// (whatever the timestamp granularity of the file system).
fn edit(path: &Path, bytes: &[u8]) {
    let before = mtime(path);
    fs::write(path, bytes).unwrap();
    set_mtime(path, before + Duration::from_secs(1));
}

/// Whether `dir` takes user extended attributes; the xattr-store tests skip where it does not.
fn xattrs_work(dir: &Path) -> bool {
    let probe = dir.join(".xattr-probe");
    fs::write(&probe, "").unwrap();
    let ok = xattr::set(&probe, "user.mtsum-probe", b"1").is_ok();
    fs::remove_file(&probe).unwrap();
    ok
}

/// The `user.mtsum` record of `path`, decoded.
fn xattr_record(path: &Path) -> Option<Record> {
    let bytes = xattr::get(path, audit::xattr::ATTR).unwrap()?;
    Some(audit::xattr::decode(&bytes).expect("a valid record"))
}

/// A file that grows all the time, from before mtsum starts until after it ends: 128 MiB
/// (sparse) hashed as plain SHA-512 keeps it open for about a fifth of a second, while a byte
/// lands every few microseconds, so some change always falls between open and final check.
struct Growing {
    appender: std::process::Child,
}

const GROWING_SIZE: u64 = 128 << 20;

impl Growing {
    fn start(path: &Path) -> Growing {
        File::create(path).unwrap().set_len(GROWING_SIZE).unwrap();
        // `printf` is a shell builtin: the loop appends without forking.
        let appender = StdCommand::new("sh")
            .args(["-c", r#"while :; do printf x >> "$0"; done"#])
            .arg(path)
            .stdout(Stdio::null())
            .spawn()
            .expect("sh starts");
        wait_until("the file grows", || {
            fs::metadata(path).unwrap().len() > GROWING_SIZE
        });
        Growing { appender }
    }
}

impl Drop for Growing {
    fn drop(&mut self) {
        let _ = self.appender.kill();
        let _ = self.appender.wait();
    }
}

/// Runs the library's audit and returns each verdict as `(status, action, path)`.
fn library_audit(targets: &[PathBuf], options: &Options) -> Vec<(Status, Action, PathBuf)> {
    let targets: Vec<Target> = targets.iter().map(|p| Target::Path(p.clone())).collect();
    let mut out = Vec::new();
    let mut on = |e: Event| {
        if let Event::Verdict(v) = e {
            out.push((v.status, v.action, v.path.clone()));
        }
    };
    audit::audit(&targets, options, &mut on).expect("no fatal error");
    out
}

// ---------------------------------------------------------------------------------------------
// Every class, produced for real
// ---------------------------------------------------------------------------------------------

/// The tree of the all-classes tests, recorded by a first audit; returns the store flags.
fn recorded_tree(dir: &Path, store: &[&str]) {
    write_file(dir, "tree/ok", b"untouched");
    write_file(dir, "tree/rot", &vec![7u8; 100_000]);
    write_file(dir, "tree/edited", b"first draft");
    write_file(dir, "tree/sub/deleted", b"soon gone");
    write_file(dir, "tree/sub/ok2", b"also untouched");
    let first = audit_in(dir, &[&["-a", "sha512", "-r", "tree"], store].concat());
    assert_eq!(first.code, Some(0), "{}", first.stderr());
    assert!(
        first.verdicts().iter().all(|(s, _)| s == "new"),
        "{}",
        first.stdout()
    );
}

/// Damages the recorded tree in every way, then audits it while `tree/growing` grows.
fn audit_after_every_kind_of_damage(dir: &Path, store: &[&str]) -> Run {
    flip_byte_keeping_mtime(&dir.join("tree/rot"), 50_000);
    edit(&dir.join("tree/edited"), b"second draft, longer");
    fs::remove_file(dir.join("tree/sub/deleted")).unwrap();
    write_file(dir, "tree/sub/added", b"brand new");
    let _growing = Growing::start(&dir.join("tree/growing"));
    let args = [&["-p", "1", "-a", "sha512", "-r", "tree"], store].concat();
    audit_in(dir, &args)
}

#[test]
fn every_class_is_told_apart_in_a_manifest() {
    let dir = tempdir();
    let store = ["--manifest", "records.txt"];
    recorded_tree(dir.path(), &store);
    let r = audit_after_every_kind_of_damage(dir.path(), &store);

    assert_eq!(
        r.verdicts(),
        [
            ("modified", "tree/edited"),
            ("changed", "tree/growing"),
            ("ok", "tree/ok"),
            ("corrupt", "tree/rot"),
            ("new", "tree/sub/added"),
            ("ok", "tree/sub/ok2"),
            ("missing", "tree/sub/deleted"),
        ]
        .map(|(s, n)| (s.to_string(), n.to_string())),
        "walk order, then the argument's missing records; stderr: {}",
        r.stderr()
    );
    assert_eq!(r.code, Some(1), "a corrupt file fails the audit");
    assert!(
        r.stderr().contains("corrupt            1"),
        "{}",
        r.stderr()
    );
}

#[test]
fn a_verify_that_changes_nothing_leaves_the_manifest_as_it_was() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempdir();
    write_file(dir.path(), "d/a", b"alpha");
    write_file(dir.path(), "d/b", b"beta");
    let args = ["-r", "d", "--manifest", "m"];
    audit_in(dir.path(), &args);
    let m = dir.path().join("m");
    let stamp = |meta: fs::Metadata| (meta.ino(), meta.mtime(), meta.mtime_nsec());
    let recorded = stamp(fs::metadata(&m).unwrap());
    let r = audit_in(dir.path(), &args);
    assert_eq!(r.stdout(), "ok  d/a\nok  d/b\n");
    assert_eq!(stamp(fs::metadata(&m).unwrap()), recorded, "not replaced");
    write_file(dir.path(), "d/c", b"gamma");
    audit_in(dir.path(), &args);
    assert_ne!(
        fs::metadata(&m).unwrap().ino(),
        recorded.0,
        "replaced by a new file"
    );
}

#[test]
fn every_class_is_told_apart_in_extended_attributes() {
    let dir = tempdir();
    if !xattrs_work(dir.path()) {
        return skip("every_class_xattr", "no user extended attributes here");
    }
    recorded_tree(dir.path(), &[]);
    // A record that cannot be read is unreadable too, even as root.
    xattr::set(
        dir.path().join("tree/sub/ok2"),
        audit::xattr::ATTR,
        b"\x01junk",
    )
    .unwrap();
    let r = audit_after_every_kind_of_damage(dir.path(), &[]);

    assert_eq!(
        r.verdicts(),
        [
            ("modified", "tree/edited"),
            ("changed", "tree/growing"),
            ("ok", "tree/ok"),
            ("corrupt", "tree/rot"),
            ("new", "tree/sub/added"),
            ("unreadable", "tree/sub/ok2"),
        ]
        .map(|(s, n)| (s.to_string(), n.to_string())),
        "stderr: {}",
        r.stderr()
    );
    assert!(
        r.stderr()
            .contains("mtsum: tree/sub/ok2: damaged record in user.mtsum: 5 bytes, too short"),
        "{}",
        r.stderr()
    );
    assert_eq!(r.code, Some(1));
}

#[test]
fn a_file_written_while_audited_is_changed_and_keeps_its_record() {
    let dir = tempdir();
    let path = dir.path().join("log");
    let store = ["--manifest", "m"];
    let _growing = Growing::start(&path);
    let r = audit_in(
        dir.path(),
        &[&["-p", "1", "-a", "sha512", "log"], &store[..]].concat(),
    );
    assert_eq!(r.by_name()["log"], "changed");
    assert_eq!(r.code, Some(0), "changed is not an alarm: {}", r.stderr());
    assert!(
        !dir.path().join("m").exists(),
        "a digest of bytes that never existed together is not recorded"
    );
}

#[test]
fn an_unreadable_file_is_reported_with_its_cause_and_the_others_are_audited() {
    let cmd = match mtsum_unprivileged() {
        Ok(cmd) => cmd,
        Err(why) => return skip("unreadable_file", &why),
    };
    let dir = tempdir();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
    for name in ["a", "secret"] {
        let path = write_file(dir.path(), name, name.as_bytes());
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    }
    // Recorded while readable; the manifest is the unprivileged user's.
    let mut first = Command::from_std(mtsum_unprivileged().unwrap());
    first.args(["--audit", "--manifest", "m", "a", "secret"]);
    let r = run_cmd(first.current_dir(dir.path()));
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    fs::set_permissions(dir.path().join("secret"), fs::Permissions::from_mode(0o000)).unwrap();

    let mut cmd = Command::from_std(cmd);
    cmd.args(["--audit", "--manifest", "m", "secret", "a"]);
    let r = run_cmd(cmd.current_dir(dir.path()));
    assert_eq!(r.stdout(), "unreadable  secret\nok  a\n");
    assert!(
        r.stderr().starts_with("mtsum: secret: Permission denied\n"),
        "{}",
        r.stderr()
    );
    assert_eq!(r.code, Some(1));
    let manifest = Manifest::load(&dir.path().join("m")).unwrap();
    assert!(manifest.get(b"secret").is_some(), "its record is kept");
}

#[test]
fn records_below_an_unreadable_directory_are_not_missing_and_update_keeps_them() {
    let stores: &[&[&str]] = if cfg!(feature = "database") {
        &[&["--manifest", "m"], &["--db", "db"]]
    } else {
        &[&["--manifest", "m"]]
    };
    for store in stores {
        let unprivileged = || match mtsum_unprivileged() {
            Ok(cmd) => Ok(Command::from_std(cmd)),
            Err(why) => Err(why),
        };
        let mut first = match unprivileged() {
            Ok(cmd) => cmd,
            Err(why) => return skip("unreadable_directory", &why),
        };
        let dir = tempdir();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        for name in ["u", "u/sub"] {
            fs::create_dir(dir.path().join(name)).unwrap();
            fs::set_permissions(dir.path().join(name), fs::Permissions::from_mode(0o755)).unwrap();
        }
        write_file(dir.path(), "u/a", b"a");
        write_file(dir.path(), "u/sub/d", b"d");
        first.args(["--audit", "-r"]).args(*store).arg("u");
        let r = run_cmd(first.current_dir(dir.path()));
        assert_eq!(r.stdout(), "new  u/a\nnew  u/sub/d\n", "{}", r.stderr());
        fs::set_permissions(dir.path().join("u/sub"), fs::Permissions::from_mode(0o000)).unwrap();

        let mut cmd = unprivileged().unwrap();
        cmd.args(["--audit", "-r", "--update"])
            .args(*store)
            .arg("u");
        let r = run_cmd(cmd.current_dir(dir.path()));
        fs::set_permissions(dir.path().join("u/sub"), fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            r.stdout(),
            "ok  u/a\nunreadable  u/sub\n",
            "{store:?}: {}",
            r.stderr()
        );
        assert!(!r.stderr().contains("removed"), "{store:?}: {}", r.stderr());
        assert_eq!(r.code, Some(1));
        // The record is still there: readable again, the file checks out.
        let r = audit_in(dir.path(), &[&["-r"], *store, &["u"]].concat());
        assert_eq!(
            r.stdout(),
            "ok  u/a\nok  u/sub/d\n",
            "{store:?}: {}",
            r.stderr()
        );
    }
}

#[test]
fn a_file_named_whose_directory_became_a_file_is_missing_once() {
    let dir = tempdir();
    write_file(dir.path(), "d/x", b"x");
    audit_in(dir.path(), &["--manifest", "m", "d/x"]);
    fs::remove_dir_all(dir.path().join("d")).unwrap();
    write_file(dir.path(), "d", b"now a file");
    let r = audit_in(dir.path(), &["--manifest", "m", "--update", "d/x"]);
    assert_eq!(
        (r.stdout(), r.code),
        ("missing  d/x\n", Some(0)),
        "{}",
        r.stderr()
    );
    assert!(manifest_names(&dir.path().join("m")).is_empty());
}

#[test]
fn records_at_or_below_a_path_named_but_not_audited_are_not_missing_and_update_keeps_them() {
    let stores: &[&[&str]] = if cfg!(feature = "database") {
        &[&["--manifest", "m"], &["--db", "db"]]
    } else {
        &[&["--manifest", "m"]]
    };
    for store in stores {
        let dir = tempdir();
        write_file(dir.path(), "u/a", b"a");
        write_file(dir.path(), "u/sub/d", b"d");
        let r = audit_in(dir.path(), &[&["-r"], *store, &["u"]].concat());
        assert_eq!(r.stdout(), "new  u/a\nnew  u/sub/d\n", "{}", r.stderr());

        // A directory named without -r is unreadable, not a tree whose files are gone.
        let r = audit_in(dir.path(), &[&["--update"], *store, &["u/sub"]].concat());
        assert_eq!(
            r.stdout(),
            "unreadable  u/sub\n",
            "{store:?}: {}",
            r.stderr()
        );
        assert!(!r.stderr().contains("removed"), "{store:?}: {}", r.stderr());

        // A file in a directory the user may not search is there all the same.
        let unprivileged = match mtsum_unprivileged() {
            Ok(cmd) => Some(Command::from_std(cmd)),
            Err(why) => {
                skip("file_in_a_directory_that_cannot_be_searched", &why);
                None
            }
        };
        if let Some(mut cmd) = unprivileged {
            for (name, mode) in [
                ("", 0o777),
                ("u", 0o755),
                ("u/sub", 0o700),
                (store[1], 0o666),
            ] {
                let path = dir.path().join(name);
                fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
            }
            cmd.args(["--audit", "--update"])
                .args(*store)
                .arg("u/sub/d");
            let r = run_cmd(cmd.current_dir(dir.path()));
            assert_eq!(
                r.stdout(),
                "unreadable  u/sub/d\n",
                "{store:?}: {}",
                r.stderr()
            );
            assert!(
                r.stderr()
                    .starts_with("mtsum: u/sub/d: Permission denied\n"),
                "{store:?}: {}",
                r.stderr()
            );
            assert!(!r.stderr().contains("removed"), "{store:?}: {}", r.stderr());
        }
        let r = audit_in(dir.path(), &[&["-r"], *store, &["u"]].concat());
        assert_eq!(
            r.stdout(),
            "ok  u/a\nok  u/sub/d\n",
            "{store:?}: {}",
            r.stderr()
        );
        // --forget was asked to remove them, and does.
        let r = audit_in(dir.path(), &[&["--forget"], *store, &["u/sub"]].concat());
        assert!(
            r.stdout().ends_with("forgotten  u/sub/d\n"),
            "{store:?}: {}",
            r.stdout()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Records: written when asked, never otherwise
// ---------------------------------------------------------------------------------------------

#[test]
fn first_audit_records_and_second_finds_everything_ok_in_extended_attributes() {
    let dir = tempdir();
    if !xattrs_work(dir.path()) {
        return skip(
            "first_audit_records_xattr",
            "no user extended attributes here",
        );
    }
    let a = write_file(dir.path(), "d/a", b"alpha");
    write_file(dir.path(), "d/b", b"beta");
    let r = audit_in(dir.path(), &["-r", "d"]);
    assert_eq!(r.stdout(), "new  d/a\nnew  d/b\n");
    assert_eq!(r.code, Some(0));
    assert!(
        r.stderr().contains("mtsum: records: 2 recorded\n"),
        "{}",
        r.stderr()
    );

    // One compact attribute: plain BLAKE3 (what b3sum prints), size and mtime to the ns.
    let raw = xattr::get(&a, "user.mtsum").unwrap().unwrap();
    assert_eq!(raw.len(), 55);
    let record = xattr_record(&a).unwrap();
    let meta = fs::metadata(&a).unwrap();
    assert_eq!(
        record,
        Record {
            layout: Layout::Plain,
            algorithm: Algorithm::Blake3,
            stamp: Stamp::of(&meta),
            value: reference::root(Layout::Plain, Algorithm::Blake3, b"alpha").into(),
        }
    );
    let names: Vec<_> = xattr::list(&a).unwrap().collect();
    assert_eq!(names, ["user.mtsum"], "one attribute per file");

    let r = audit_in(dir.path(), &["-r", "d"]);
    assert_eq!(r.stdout(), "ok  d/a\nok  d/b\n");
    assert!(
        r.stderr().contains("mtsum: records: unchanged\n"),
        "{}",
        r.stderr()
    );
    let r = audit_in(dir.path(), &["-r", "--quiet", "d"]);
    assert_eq!(r.stdout(), "", "--quiet hides ok lines");
}

#[test]
fn a_corrupt_file_keeps_its_record_until_fix_is_given() {
    let dir = tempdir();
    let store = ["--manifest", "m"];
    let f = write_file(dir.path(), "f", b"precious data");
    audit_in(dir.path(), &[&["f"], &store[..]].concat());
    let recorded = Manifest::load(&dir.path().join("m")).unwrap();
    flip_byte_keeping_mtime(&f, 3);

    for extra in [&[][..], &["--update"]] {
        let r = audit_in(dir.path(), &[&["f"], &store[..], extra].concat());
        assert_eq!(r.stdout(), "corrupt  f\n");
        assert_eq!(r.code, Some(1));
        assert_eq!(Manifest::load(&dir.path().join("m")).unwrap(), recorded);
    }
    let r = audit_in(
        dir.path(),
        &[&["f", "--fix", "--json"], &store[..]].concat(),
    );
    assert!(
        r.stdout().contains(r#""status":"corrupt""#),
        "{}",
        r.stdout()
    );
    assert!(r.stdout().contains(r#""action":"fixed""#), "{}", r.stdout());
    assert_eq!(r.code, Some(1), "the corruption was still found");
    let r = audit_in(dir.path(), &[&["f"], &store[..]].concat());
    assert_eq!((r.stdout(), r.code), ("ok  f\n", Some(0)));
}

#[test]
fn a_modified_file_is_refreshed_only_with_update() {
    let dir = tempdir();
    let store = ["--manifest", "m"];
    let f = write_file(dir.path(), "f", b"v1");
    audit_in(dir.path(), &[&["f"], &store[..]].concat());
    edit(&f, b"v2");
    for _ in 0..2 {
        let r = audit_in(dir.path(), &[&["f"], &store[..]].concat());
        assert_eq!((r.stdout(), r.code), ("modified  f\n", Some(0)));
    }
    let r = audit_in(dir.path(), &[&["f", "--update"], &store[..]].concat());
    assert_eq!(r.stdout(), "modified  f\n");
    assert!(r.stderr().contains("records: 1 updated"), "{}", r.stderr());
    let r = audit_in(dir.path(), &[&["f"], &store[..]].concat());
    assert_eq!(r.stdout(), "ok  f\n");
}

/// The manifest's names.
fn manifest_names(path: &Path) -> Vec<String> {
    let m = Manifest::load(path).unwrap();
    m.iter()
        .map(|(k, _)| String::from_utf8(k.to_vec()).unwrap())
        .collect()
}

#[test]
fn an_empty_file_has_no_btv2_value_so_it_is_counted_and_not_recorded() {
    let dir = tempdir();
    write_file(dir.path(), "t/empty", b"");
    let x = write_file(dir.path(), "t/x", b"x\n");
    let args = ["-r", "t", "-t", "btv2", "--manifest", "m"];
    let note = "mtsum: 1 empty file not recorded: an empty file has no btv2 pieces root (BEP 52)\n";
    // Not unreadable, run after run: BitTorrent v2 gives it no value, and it has nothing to rot.
    for expected in ["new  t/x\n", "ok  t/x\n"] {
        let r = audit_in(dir.path(), &args);
        assert_eq!((r.stdout(), r.code), (expected, Some(0)), "{}", r.stderr());
        assert!(r.stderr().contains(note), "{}", r.stderr());
        assert!(!r.stderr().contains("mtsum: t/empty"), "{}", r.stderr());
    }
    assert_eq!(manifest_names(&dir.path().join("m")), ["t/x"]);
    let r = audit_in(dir.path(), &[&args[..], &["--json"]].concat());
    assert!(r.stdout().contains("\"no_value\":1,"), "{}", r.stdout());
    assert!(!r.stdout().contains("t/empty"), "{}", r.stdout());

    // Emptied after it was recorded: an edit, whose record --update drops, as no value can
    // refresh it.
    edit(&x, b"");
    let r = audit_in(dir.path(), &args);
    assert_eq!((r.stdout(), r.code), ("modified  t/x\n", Some(0)));
    let r = audit_in(dir.path(), &[&args[..], &["--update"]].concat());
    assert_eq!((r.stdout(), r.code), ("modified  t/x\n", Some(0)));
    assert!(r.stderr().contains("records: 1 removed"), "{}", r.stderr());
    assert!(manifest_names(&dir.path().join("m")).is_empty());
    let r = audit_in(dir.path(), &args);
    assert_eq!((r.stdout(), r.code), ("", Some(0)), "{}", r.stderr());

    // An empty file recorded in another layout is audited with it, and keeps it when
    // --migrate -t btv2 cannot give it the new one.
    let plain = ["-r", "t", "-t", "plain", "--manifest", "p"];
    audit_in(dir.path(), &plain);
    let r = audit_in(
        dir.path(),
        &[&plain[..], &["-t", "btv2", "--migrate"]].concat(),
    );
    assert_eq!((r.stdout(), r.code), ("ok  t/empty\nok  t/x\n", Some(0)));
    let r = audit_in(dir.path(), &[&plain[..], &["-t", "btv2"]].concat());
    assert_eq!(r.stdout(), "ok  t/empty\nok  t/x\n", "{}", r.stderr());

    // A btv2 value of an empty file cannot be imported: it would never check out.
    let sums = "BTV2-SHA256 (t/empty) = 73cb3858a687a8494ca3323053016282f3dad39d42cf62ca4e79dda2aac7d9ac\n";
    write_file(dir.path(), "SUMS", sums.as_bytes());
    let r = audit_in(dir.path(), &["--manifest", "i", "--import", "SUMS"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr());
    assert!(
        r.stderr()
            .contains("mtsum: SUMS: t/empty: an empty file has no btv2 pieces root (BEP 52)\n"),
        "{}",
        r.stderr()
    );
}

#[test]
fn a_manifest_reached_by_a_symbolic_link_is_replaced_where_it_lies_and_the_link_kept() {
    let dir = tempdir();
    write_file(dir.path(), "t/a", b"a");
    fs::create_dir(dir.path().join("real")).unwrap();
    audit_in(dir.path(), &["--manifest", "real/m", "t/a"]);
    std::os::unix::fs::symlink("real/m", dir.path().join("link")).unwrap();
    write_file(dir.path(), "t/b", b"b");
    let r = audit_in(dir.path(), &["--manifest", "link", "-r", "t"]);
    assert_eq!(r.stdout(), "ok  t/a\nnew  t/b\n", "{}", r.stderr());
    let link = fs::symlink_metadata(dir.path().join("link")).unwrap();
    assert!(link.file_type().is_symlink(), "the link is kept");
    assert_eq!(manifest_names(&dir.path().join("real/m")), ["t/a", "t/b"]);
    // A temporary file left beside it by a crash is its own, not a file to audit.
    write_file(dir.path(), "real/.m.1-0.tmp", b"half a manifest");
    let r = audit_in(dir.path(), &["--manifest", "link", "-r", "real"]);
    assert_eq!((r.stdout(), r.code), ("", Some(0)), "{}", r.stderr());
    // An export through a link writes where it points, too.
    fs::remove_file(dir.path().join("link")).unwrap();
    fs::copy(dir.path().join("real/m"), dir.path().join("m")).unwrap();
    std::os::unix::fs::symlink("real/x", dir.path().join("link")).unwrap();
    write_file(dir.path(), "real/x", b"old");
    let r = audit_in(dir.path(), &["--manifest", "m", "--export", "link"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    assert!(
        fs::symlink_metadata(dir.path().join("link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(manifest_names(&dir.path().join("real/x")), ["t/a", "t/b"]);
    // A link to a manifest not made yet: it is made where the link points.
    std::os::unix::fs::symlink("real/new", dir.path().join("to-new")).unwrap();
    let r = audit_in(dir.path(), &["--manifest", "to-new", "t/a"]);
    assert_eq!(r.stdout(), "new  t/a\n", "{}", r.stderr());
    let to_new = fs::symlink_metadata(dir.path().join("to-new")).unwrap();
    assert!(to_new.file_type().is_symlink());
    assert_eq!(manifest_names(&dir.path().join("real/new")), ["t/a"]);
}

#[test]
fn the_summary_counts_one_file_and_one_byte_in_the_singular() {
    let dir = tempdir();
    write_file(dir.path(), "t/x", b"x");
    let r = audit_in(dir.path(), &["-r", "t", "--manifest", "m"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    assert!(
        r.stderr()
            .starts_with("mtsum: audit of 1 file (1 byte) in "),
        "{}",
        r.stderr()
    );
}

#[test]
fn a_touched_file_is_modified_even_with_the_same_content() {
    let dir = tempdir();
    let f = write_file(dir.path(), "f", b"same");
    audit_in(dir.path(), &["f", "--manifest", "m"]);
    set_mtime(&f, mtime(&f) + Duration::from_nanos(1));
    let r = audit_in(dir.path(), &["f", "--manifest", "m"]);
    assert_eq!(r.stdout(), "modified  f\n");
}

#[test]
fn missing_records_are_dropped_only_with_update() {
    let dir = tempdir();
    write_file(dir.path(), "d/a", b"a");
    write_file(dir.path(), "d/b", b"b");
    write_file(dir.path(), "elsewhere", b"e");
    audit_in(dir.path(), &["-r", "d", "elsewhere", "--manifest", "m"]);
    fs::remove_file(dir.path().join("d/b")).unwrap();
    fs::remove_file(dir.path().join("elsewhere")).unwrap();

    // Only records below the audited paths can be missing.
    let r = audit_in(dir.path(), &["-r", "d", "--manifest", "m"]);
    assert_eq!(r.stdout(), "ok  d/a\nmissing  d/b\n");
    assert_eq!(r.code, Some(0));
    let r = audit_in(dir.path(), &["-r", "./d/", "--manifest", "m", "--update"]);
    assert_eq!(r.stdout(), "ok  ./d/a\nmissing  d/b\n", "names are tidied");
    let m = Manifest::load(&dir.path().join("m")).unwrap();
    let names: Vec<&[u8]> = m.iter().map(|(k, _)| k).collect();
    assert_eq!(names, [&b"d/a"[..], b"elsewhere"]);

    // A deleted directory: its records are missing, it is not an error.
    fs::remove_dir_all(dir.path().join("d")).unwrap();
    let r = audit_in(dir.path(), &["-r", "d", "--manifest", "m"]);
    assert_eq!((r.stdout(), r.code), ("missing  d/a\n", Some(0)));
}

#[test]
fn dry_run_decides_everything_and_writes_nothing() {
    let dir = tempdir();
    let f = write_file(dir.path(), "f", b"data");
    let r = audit_in(dir.path(), &["f", "--manifest", "m", "--dry-run"]);
    assert_eq!(r.stdout(), "new  f\n");
    assert!(
        r.stderr().contains("dry run: nothing was written"),
        "{}",
        r.stderr()
    );
    assert!(!dir.path().join("m").exists());
    if xattrs_work(dir.path()) {
        let r = audit_in(dir.path(), &["f", "--dry-run"]);
        assert_eq!(r.stdout(), "new  f\n");
        assert_eq!(xattr_record(&f), None);
    }
}

#[test]
fn forget_removes_records_from_both_stores() {
    let dir = tempdir();
    write_file(dir.path(), "d/a", b"a");
    write_file(dir.path(), "d/b", b"b");
    write_file(dir.path(), "keep", b"k");
    audit_in(dir.path(), &["-r", "d", "keep", "--manifest", "m"]);
    fs::remove_file(dir.path().join("d/b")).unwrap();
    let r = audit_in(dir.path(), &["--forget", "-r", "d", "--manifest", "m"]);
    assert_eq!(r.stdout(), "forgotten  d/a\nforgotten  d/b\n");
    assert!(r.stderr().contains("2 records forgotten"), "{}", r.stderr());
    let m = Manifest::load(&dir.path().join("m")).unwrap();
    assert_eq!(m.iter().map(|(k, _)| k).collect::<Vec<_>>(), [b"keep"]);

    if !xattrs_work(dir.path()) {
        return skip("forget_xattr", "no user extended attributes here");
    }
    let a = dir.path().join("d/a");
    audit_in(dir.path(), &["d/a"]);
    assert!(xattr_record(&a).is_some());
    let r = audit_in(dir.path(), &["--forget", "--dry-run", "d/a"]);
    assert_eq!(r.stdout(), "forgotten  d/a\n");
    assert!(xattr_record(&a).is_some(), "a dry run forgets nothing");
    let r = audit_in(dir.path(), &["--forget", "d/a", "keep"]);
    assert_eq!(r.stdout(), "forgotten  d/a\n", "keep had no attribute");
    assert_eq!(xattr_record(&a), None);
}

#[test]
fn records_keep_their_algorithm_when_the_default_changes() {
    let dir = tempdir();
    write_file(dir.path(), "f", b"data");
    audit_in(
        dir.path(),
        &["f", "--manifest", "m", "-a", "sha256", "-t", "mtsum"],
    );
    let m = Manifest::load(&dir.path().join("m")).unwrap();
    let record = m.get(b"f").unwrap();
    assert_eq!(
        (record.layout, record.algorithm),
        (Layout::Mtsum, Algorithm::Sha256)
    );
    let r = audit_in(dir.path(), &["f", "--manifest", "m", "-a", "md5"]);
    assert_eq!(r.stdout(), "ok  f\n");
}

#[test]
fn a_coarser_mtime_resolution_accepts_a_copy_to_a_coarse_file_system() {
    let dir = tempdir();
    let f = write_file(dir.path(), "f", b"data");
    set_mtime(
        &f,
        SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789),
    );
    audit_in(dir.path(), &["f", "--manifest", "m"]);
    // What a copy to SMB keeps: 100 ns ticks.
    set_mtime(
        &f,
        SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_700),
    );
    let audit = |res: &str| {
        audit_in(
            dir.path(),
            &["f", "--manifest", "m", "--mtime-resolution", res],
        )
        .stdout()
        .to_string()
    };
    assert_eq!(audit("ns"), "modified  f\n");
    assert_eq!(audit("100ns"), "ok  f\n");
    assert_eq!(audit("s"), "ok  f\n");
}

// ---------------------------------------------------------------------------------------------
// cshatag
// ---------------------------------------------------------------------------------------------

/// Tags `path` as cshatag does: the plain SHA-256 of `content` at mtime `ts`.
fn cshatag(path: &Path, content: &[u8], ts: &str) {
    let hex = reference::root(Layout::Plain, Algorithm::Sha256, content).to_hex();
    xattr::set(path, "user.shatag.sha256", hex.as_bytes()).unwrap();
    xattr::set(path, "user.shatag.ts", ts.as_bytes()).unwrap();
}

#[test]
fn a_cshatag_tree_is_audited_and_converted() {
    let dir = tempdir();
    if !xattrs_work(dir.path()) {
        return skip("cshatag", "no user extended attributes here");
    }
    let t = SystemTime::UNIX_EPOCH + Duration::new(1_600_000_000, 5);
    let ts = "1600000000.000000005";
    let good = write_file(dir.path(), "good", b"good");
    let rotten = write_file(dir.path(), "rotten", b"rotten");
    let edited = write_file(dir.path(), "edited", b"edited");
    for (path, content) in [
        (&good, &b"good"[..]),
        (&rotten, b"rotten"),
        (&edited, b"edited"),
    ] {
        set_mtime(path, t);
        cshatag(path, content, ts);
    }
    flip_byte_keeping_mtime(&rotten, 0);
    set_mtime(&edited, t + Duration::from_secs(60));

    let r = audit_in(dir.path(), &["edited", "good", "rotten", "--json"]);
    let lines: Vec<serde_json::Value> = r
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let field = |i: usize, k: &str| lines[i][k].as_str().unwrap_or_default().to_string();
    assert_eq!(
        [0, 1, 2].map(|i| (field(i, "path"), field(i, "status"), field(i, "action"))),
        [
            ("edited".into(), "modified".into(), "kept".into()),
            ("good".into(), "ok".into(), "converted".into()),
            ("rotten".into(), "corrupt".into(), "kept".into()),
        ]
    );
    assert_eq!(field(1, "record"), "cshatag");
    assert_eq!(lines[3]["summary"]["converted"], 1);
    assert_eq!(r.code, Some(1));

    // The converted record is a plain SHA-256 at cshatag's mtime; cshatag's own attributes
    // stay, so cshatag keeps working.
    let record = xattr_record(&good).unwrap();
    assert_eq!(
        (record.layout, record.algorithm),
        (Layout::Plain, Algorithm::Sha256)
    );
    assert_eq!(record.stamp.mtime, "1600000000.000000005".parse().unwrap());
    assert!(xattr::get(&good, "user.shatag.sha256").unwrap().is_some());
    assert_eq!(
        xattr_record(&rotten),
        None,
        "a corrupt file is not converted"
    );
    let r = audit_in(dir.path(), &["good", "--update", "edited"]);
    assert_eq!(r.stdout(), "ok  good\nmodified  edited\n");
    assert_eq!(xattr_record(&edited).unwrap().algorithm, Algorithm::Sha256);

    // The line says what happened to a file that checked out against cshatag's record.
    let more = write_file(dir.path(), "more", b"more");
    set_mtime(&more, t);
    cshatag(&more, b"more", ts);
    let r = audit_in(dir.path(), &["more"]);
    assert_eq!((r.code, r.stdout()), (Some(0), "converted  more\n"));
    let r = audit_in(dir.path(), &["more"]);
    assert_eq!(r.stdout(), "ok  more\n");
}

// ---------------------------------------------------------------------------------------------
// The stores' guarantees
// ---------------------------------------------------------------------------------------------

#[test]
fn kill_9_during_a_manifest_update_leaves_the_previous_manifest_intact() {
    let dir = tempdir();
    let manifest = dir.path().join("m");
    // A manifest large enough that writing it takes a while: records of files elsewhere
    // are carried over into every new version.
    let mut old = Manifest::default();
    let record = Record {
        layout: Layout::Plain,
        algorithm: Algorithm::Blake3,
        stamp: Stamp::new(1, Mtime::new(1, 0).unwrap()),
        value: Algorithm::Blake3.hash(b"x").into(),
    };
    for i in 0..400_000 {
        old.insert(
            format!("/elsewhere/some/longer/path/file{i:07}").into_bytes(),
            record,
        );
    }
    old.save(&manifest).unwrap();
    let old_bytes = fs::read(&manifest).unwrap();
    write_file(dir.path(), "new-file", b"new");

    let is_temporary = |name: &str| name.starts_with(".m.") && name.ends_with(".tmp");
    let mut killed_while_writing = 0;
    for _ in 0..3 {
        let mut child = StdCommand::new(MTSUM)
            .args(["--audit", "--manifest", "m", "new-file"])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill as soon as the new version is being written.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut saw_temporary = false;
        while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
            saw_temporary = fs::read_dir(dir.path())
                .unwrap()
                .any(|e| is_temporary(&e.unwrap().file_name().to_string_lossy()));
            if saw_temporary {
                break;
            }
            thread::sleep(Duration::from_micros(200));
        }
        let _ = child.kill();
        let status = child.wait().unwrap();
        let now = fs::read(&manifest).unwrap();
        if now == old_bytes {
            killed_while_writing += u32::from(saw_temporary && status.code().is_none());
            if killed_while_writing > 0 {
                break;
            }
            continue;
        }
        // The rename won the race: then it is the whole new version, never a mix.
        let new = Manifest::load(&manifest).expect("a complete manifest");
        assert_eq!(new.len(), old.len() + 1);
        break;
    }
    assert!(
        killed_while_writing > 0,
        "no run was killed while writing the new manifest"
    );
    // The temporary file left behind is not audited, and the next run completes.
    let r = audit_in(dir.path(), &["--manifest", "m", "-r", "."]);
    assert_eq!(r.stdout(), "new  ./new-file\n", "{}", r.stderr());
    assert_eq!(Manifest::load(&manifest).unwrap().len(), old.len() + 1);
}

#[test]
fn a_file_that_is_not_a_manifest_is_refused_and_left_alone() {
    let dir = tempdir();
    write_file(dir.path(), "f", b"data");
    let notes = write_file(dir.path(), "notes.txt", b"my precious notes\n");
    let r = audit_in(dir.path(), &["f", "--manifest", "notes.txt"]);
    assert_eq!(r.code, Some(2));
    assert_eq!(
        r.stderr(),
        "mtsum: notes.txt: not an mtsum audit manifest (the first line is not '# mtsum audit manifest 1')\n"
    );
    assert_eq!(fs::read(&notes).unwrap(), b"my precious notes\n");
}

#[test]
fn a_manifest_that_cannot_be_written_is_refused_before_anything_is_read() {
    let dir = tempdir();
    write_file(dir.path(), "t/f", b"data");
    let r = audit_in(dir.path(), &["-r", "t", "--manifest", "nowhere/m.txt"]);
    assert_eq!(r.code, Some(2));
    assert_eq!(r.stdout(), "", "nothing audited");
    assert_eq!(
        r.stderr(),
        "mtsum: nowhere/m.txt: cannot write the manifest: its directory does not exist\n"
    );
    // A dry run writes no manifest: it needs none to write.
    let r = audit_in(
        dir.path(),
        &["-r", "t", "--manifest", "nowhere/m.txt", "--dry-run"],
    );
    assert_eq!(
        (r.code, r.stdout()),
        (Some(0), "new  t/f\n"),
        "{}",
        r.stderr()
    );
}

#[test]
fn the_manifest_inside_the_audited_tree_is_not_audited() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    audit_in(dir.path(), &["-r", ".", "--manifest", "m"]);
    let r = audit_in(dir.path(), &["-r", ".", "--manifest", "m"]);
    assert_eq!(r.stdout(), "ok  ./a\n");
}

#[test]
fn a_file_system_without_user_attributes_gets_an_error_pointing_to_the_manifest() {
    // ramfs refuses every `user.` attribute; it is mounted in a private mount namespace, so
    // nothing outlives the test.
    let dir = tempdir();
    let script = r#"mount -t ramfs none "$0" || exit 97
        echo data > "$0/f"
        exec "$1" --audit -r "$0""#;
    let out = StdCommand::new("unshare")
        .args(["-m", "sh", "-c", script])
        .arg(dir.path())
        .arg(MTSUM)
        .output();
    let out = match out {
        Err(e) => return skip("no_user_xattrs", &format!("no unshare: {e}")),
        Ok(out) if !out.status.success() && out.status.code() != Some(2) => {
            let why = String::from_utf8_lossy(&out.stderr);
            return skip("no_user_xattrs", &format!("cannot mount a ramfs: {why}"));
        }
        Ok(out) => out,
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(out.stdout, b"");
    let f = dir.path().join("f");
    assert_eq!(
        stderr,
        format!(
            "mtsum: {}: the file system does not support user extended attributes (Operation not supported); keep the records in a manifest instead: --manifest FILE\n",
            f.display()
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

#[test]
fn json_reports_every_file_and_a_summary() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    let r = audit_in(dir.path(), &["a", "--manifest", "m", "--json"]);
    let lines: Vec<serde_json::Value> = r
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let a = &lines[0];
    assert_eq!(a["path"], "a");
    assert_eq!(a["status"], "new");
    assert_eq!(a["action"], "recorded");
    assert_eq!(a["size"], 1);
    assert_eq!(a["algorithm"], "blake3");
    assert_eq!(a["layout"], "plain");
    let hex = reference::root(Layout::Plain, Algorithm::Blake3, b"a").to_hex();
    assert_eq!(a["digest"], hex.as_str());
    let mtime = Mtime::of(&fs::metadata(dir.path().join("a")).unwrap());
    assert_eq!(
        a["mtime"],
        mtime.to_string().as_str(),
        "nanoseconds survive as a string"
    );
    let s = &lines[1]["summary"];
    assert_eq!((s["files"].as_u64(), s["new"].as_u64()), (Some(1), Some(1)));
    assert_eq!(s["clean"], true);
}

#[test]
fn a_record_the_store_refuses_is_counted_as_an_error_not_as_recorded() {
    // A file we may read but not write, and do not own: its attribute cannot be written.
    if !common::is_root() {
        return skip(
            "a_record_the_store_refuses",
            "needs a file of another user: run as root",
        );
    }
    let cmd = match mtsum_unprivileged() {
        Ok(cmd) => cmd,
        Err(why) => return skip("a_record_the_store_refuses", &why),
    };
    let dir = tempdir();
    if !xattrs_work(dir.path()) {
        return skip(
            "a_record_the_store_refuses",
            "no user extended attributes here",
        );
    }
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let f = write_file(dir.path(), "f", b"data");
    fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
    let mut cmd = Command::from_std(cmd);
    cmd.args(["--audit", "f", "--json"]);
    let r = run_cmd(cmd.current_dir(dir.path()));
    assert_eq!(r.code, Some(1), "{}", r.stderr());
    let lines: Vec<serde_json::Value> = r
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["action_error"], "Permission denied");
    let s = &lines[1]["summary"];
    assert_eq!(
        (s["recorded"].as_u64(), s["action_errors"].as_u64()),
        (Some(0), Some(1))
    );
    assert!(xattr_record(&f).is_none());
}

#[test]
fn a_failing_stdout_stops_the_audit_at_the_end_of_the_first_batch_with_status_1() {
    let dir = tempdir();
    if !Path::new("/dev/full").exists() {
        return skip("a_failing_stdout_stops_the_audit", "no /dev/full");
    }
    let files = 2 * audit::BATCH_FILES + 100;
    for i in 0..files {
        write_file(dir.path(), format!("t/{i:04}"), format!("{i}").as_bytes());
    }
    let full = File::options().write(true).open("/dev/full").unwrap();
    let out = StdCommand::new(MTSUM)
        .args(["--audit", "--manifest", "m", "-r", "t", "--readers", "1"])
        .env("MTSUM_ROTATIONAL", "0")
        .current_dir(dir.path())
        .stdout(full)
        .output()
        .unwrap();
    let out = Run::from_output(out);
    assert_eq!(out.code, Some(1), "{}", out.stderr());
    assert_eq!(
        out.stderr(),
        "mtsum: standard output: No space left on device\n"
    );
    // The first batch was recorded before its lines failed; no later file was decided, and
    // what was recorded is kept. (Files are recorded as soon as they are read: the one
    // reader's file in hand, and the one waiting for it, are recorded too.)
    let recorded = Manifest::load(&dir.path().join("m")).unwrap();
    assert!(
        (1..=audit::BATCH_FILES + 2).contains(&recorded.len()),
        "{} of {files} recorded",
        recorded.len()
    );
}

#[test]
fn a_name_with_a_newline_is_one_escaped_line() {
    let dir = tempdir();
    write_file(dir.path(), "x\ny", b"odd");
    let r = audit_in(dir.path(), &["x\ny", "--manifest", "m"]);
    assert_eq!(r.stdout(), "\\new  x\\ny\n");
    let r = audit_in(dir.path(), &["x\ny", "--manifest", "m"]);
    assert_eq!(r.stdout(), "\\ok  x\\ny\n");
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempdir();
    for args in [
        &["--audit"][..],
        &["--audit", "-"],
        &["--audit", "--forget", "--update", "x"],
        &["--audit", "--mtime-resolution", "3h", "x"],
        &["--update", "x"],
        &["--audit", "-c", "x"],
    ] {
        let r = run_cmd(Command::new(MTSUM).args(args).current_dir(dir.path()));
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr());
        assert_eq!(r.stderr().lines().count(), 1, "{args:?}: {}", r.stderr());
        assert!(r.stderr().starts_with("mtsum: "), "{}", r.stderr());
    }
}

#[test]
fn a_count_of_readers_out_of_range_is_refused_in_the_flags_own_word() {
    let dir = tempdir();
    for (n, cause) in [
        ("0", "the number of readers must be at least 1"),
        ("1025", "at most 1024 readers"),
        ("x", "'x' is not a number of readers"),
    ] {
        let args = ["--audit", "--manifest", "m", "--readers", n, "x"];
        let r = run_cmd(Command::new(MTSUM).args(args).current_dir(dir.path()));
        let line = format!(
            "mtsum: invalid value '{n}' for '--readers <N>': {cause} (try 'mtsum --help')\n"
        );
        assert_eq!((r.code, r.stderr()), (Some(2), line.as_str()));
    }
}

#[test]
fn a_directory_without_recursion_and_a_missing_path_are_unreadable() {
    let dir = tempdir();
    fs::create_dir(dir.path().join("d")).unwrap();
    let r = audit_in(dir.path(), &["d", "nope", "--manifest", "m"]);
    assert_eq!(r.stdout(), "unreadable  d\nunreadable  nope\n");
    assert_eq!(
        r.stderr().lines().take(2).collect::<Vec<_>>(),
        [
            "mtsum: d: Is a directory",
            "mtsum: nope: No such file or directory"
        ]
    );
    assert_eq!(r.code, Some(1));
}

// ---------------------------------------------------------------------------------------------
// The library
// ---------------------------------------------------------------------------------------------

#[test]
fn the_library_audits_in_walk_order_whatever_the_thread_count() {
    let dir = tempdir();
    let names: Vec<String> = (0..200)
        .map(|i| format!("t/{:03}", (i * 37) % 200))
        .collect();
    for (i, name) in names.iter().enumerate() {
        write_file(dir.path(), name, &vec![i as u8; i * 1000]);
    }
    let mut options = Options::new(Store::Manifest(dir.path().join("m")));
    options.recursion = Recursion::SkipSymlinks;
    let targets = [dir.path().join("t")];
    let first = library_audit(&targets, &options);
    let mut sorted = names.clone();
    sorted.sort();
    let expected: Vec<PathBuf> = sorted.iter().map(|n| dir.path().join(n)).collect();
    assert_eq!(
        first.iter().map(|v| v.2.clone()).collect::<Vec<_>>(),
        expected
    );
    assert!(
        first
            .iter()
            .all(|v| (v.0, v.1) == (Status::New, Action::Recorded))
    );

    flip_byte_keeping_mtime(&dir.path().join("t/150"), 10);
    for threads in [1, 2, 7] {
        let targets: Vec<Target> = targets.iter().map(|p| Target::Path(p.clone())).collect();
        let mut options = options.clone();
        options.io.readers = Some(threads.try_into().unwrap());
        let mut statuses = Vec::new();
        let mut on = |e: Event| {
            if let Event::Verdict(v) = e {
                statuses.push((v.path.clone(), v.status));
            }
        };
        let summary = audit::audit(&targets, &options, &mut on).unwrap();
        assert_eq!(summary.count(Status::Corrupt), 1);
        assert_eq!(summary.count(Status::Ok), 199);
        assert!(!summary.is_clean());
        let corrupt: Vec<_> = statuses.iter().filter(|s| s.1 == Status::Corrupt).collect();
        assert_eq!(corrupt, [&(dir.path().join("t/150"), Status::Corrupt)]);
    }
}

#[test]
fn the_library_reports_the_record_and_the_current_digest() {
    let dir = tempdir();
    let f = write_file(dir.path(), "f", b"before");
    let options = Options::new(Store::Manifest(dir.path().join("m")));
    library_audit(std::slice::from_ref(&f), &options);
    flip_byte_keeping_mtime(&f, 0);

    let targets = [Target::Path(f.clone())];
    let mut seen = None;
    let mut on = |e: Event| {
        if let Event::Verdict(v) = e {
            seen = Some((v.status, v.prior.clone(), v.current));
        }
    };
    audit::audit(&targets, &options, &mut on).unwrap();
    let (status, prior, current) = seen.unwrap();
    assert_eq!(status, Status::Corrupt);
    let Prior::Record(recorded) = prior else {
        panic!("{prior:?}")
    };
    let blake3 = |b: &[u8]| reference::root(Layout::Plain, Algorithm::Blake3, b);
    assert_eq!(recorded.value, blake3(b"before"));
    assert_eq!(current.unwrap().value, blake3(b"refore"));
}

/// A verify of `dir` with the records in extended attributes: each verdict as `(status,
/// action, path)`, the summary, and the bytes the readers read.
fn verify_xattrs(dir: &Path) -> (Vec<(Status, Action, PathBuf)>, audit::Summary, u64) {
    let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut options = Options::new(Store::Xattr);
    options.recursion = Recursion::SkipSymlinks;
    options.io.progress = Some(read.clone());
    let mut verdicts = Vec::new();
    let mut on = |e: Event| {
        if let Event::Verdict(v) = e {
            verdicts.push((v.status, v.action, v.path.clone()));
        }
    };
    let summary = audit::audit(&[Target::Path(dir.to_path_buf())], &options, &mut on).unwrap();
    (
        verdicts,
        summary,
        read.load(std::sync::atomic::Ordering::Relaxed),
    )
}

#[test]
fn a_tree_recorded_with_two_layouts_in_extended_attributes_verifies_each_file_by_its_own() {
    let dir = tempdir();
    if !xattrs_work(dir.path()) {
        return skip("two_layouts_xattr", "no user extended attributes here");
    }
    // In walk order the files alternate between plain BLAKE3 (the default) and MTSUM-SHA256:
    // the record met before a file is mostly of the other layout.
    let files: Vec<PathBuf> = (0..8)
        .map(|i| {
            write_file(
                dir.path(),
                format!("t/{i}"),
                &vec![i as u8; 3000 + i * 1000],
            )
        })
        .collect();
    let sha256 = Options {
        layout: Layout::Mtsum,
        algorithm: Algorithm::Sha256,
        ..Options::new(Store::Xattr)
    };
    let (even, odd): (Vec<PathBuf>, Vec<PathBuf>) = (files.chunks(2))
        .map(|pair| (pair[0].clone(), pair[1].clone()))
        .unzip();
    library_audit(&even, &Options::new(Store::Xattr));
    library_audit(&odd, &sha256);
    let tags = |files: &[PathBuf]| -> Vec<String> {
        files
            .iter()
            .map(|f| xattr_record(f).map_or("none".into(), |r| r.tag()))
            .collect()
    };
    let recorded = tags(&files);
    assert_eq!(
        recorded[..4],
        ["BLAKE3", "MTSUM-SHA256", "BLAKE3", "MTSUM-SHA256"]
    );
    flip_byte_keeping_mtime(&files[2], 5);
    flip_byte_keeping_mtime(&files[5], 5);
    edit(&files[7], b"edited");
    let new = write_file(dir.path(), "t/8", b"new");

    let (verdicts, summary, _) = verify_xattrs(&dir.path().join("t"));
    use Action::{Kept, Recorded};
    use Status as S;
    let want = [
        (S::Ok, Kept),
        (S::Ok, Kept),
        (S::Corrupt, Kept),
        (S::Ok, Kept),
        (S::Ok, Kept),
        (S::Corrupt, Kept),
        (S::Ok, Kept),
        (S::Modified, Kept),
        (S::New, Recorded),
    ];
    let paths: Vec<PathBuf> = files.iter().chain([&new]).cloned().collect();
    let got: Vec<_> = verdicts.iter().map(|v| ((v.0, v.1), v.2.clone())).collect();
    assert_eq!(got, want.into_iter().zip(paths).collect::<Vec<_>>());
    // The first MTSUM-SHA256 file at least was read as the BLAKE3 one before it, then again
    // with its own record's layout. The new file is recorded with the default, and the
    // others keep their records.
    assert!(summary.reread >= 1, "{summary:?}");
    assert_eq!(tags(&files), recorded);
    assert_eq!(xattr_record(&new).unwrap().tag(), "BLAKE3");
}

#[test]
fn a_verify_of_a_tree_recorded_alike_in_extended_attributes_reads_each_file_once() {
    for (layout, algorithm) in [
        (Options::DEFAULT_LAYOUT, Options::DEFAULT_ALGORITHM),
        (Layout::Mtsum, Algorithm::Sha256),
    ] {
        let dir = tempdir();
        if !xattrs_work(dir.path()) {
            return skip("alike_xattr", "no user extended attributes here");
        }
        let mut total = 0;
        for i in 0..300usize {
            let len = (i * 7919) % 20_000;
            write_file(
                dir.path(),
                format!("t/{:02}/{i}", i % 13),
                &vec![i as u8; len],
            );
            total += len as u64;
        }
        let record = Options {
            layout,
            algorithm,
            recursion: Recursion::SkipSymlinks,
            ..Options::new(Store::Xattr)
        };
        library_audit(&[dir.path().join("t")], &record);
        // The verify's new records would be plain BLAKE3: a tree recorded otherwise is read
        // with its own layout and algorithm all the same, from its first file on.
        let (verdicts, summary, read) = verify_xattrs(&dir.path().join("t"));
        assert_eq!(verdicts.len(), 300);
        assert!(
            verdicts
                .iter()
                .all(|v| (v.0, v.1) == (Status::Ok, Action::Kept))
        );
        assert_eq!(
            (summary.reread, read),
            (0, total),
            "{layout:?} {algorithm:?}"
        );
    }
}

#[test]
fn a_verify_without_max_age_keeps_current_the_time_a_record_carries() {
    let dir = tempdir();
    if !xattrs_work(dir.path()) {
        return skip("time_kept_xattr", "no user extended attributes here");
    }
    let timed = write_file(dir.path(), "t/timed", b"content");
    let untimed = write_file(dir.path(), "t/untimed", b"other");
    let options = Options {
        recursion: Recursion::SkipSymlinks,
        ..Options::new(Store::Xattr)
    };
    library_audit(&[dir.path().join("t")], &options);
    let record = xattr_record(&timed).unwrap();
    let long_ago = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let bytes = audit::xattr::encode_verified(&record, long_ago);
    xattr::set(&timed, audit::xattr::ATTR, &bytes).unwrap();

    let (verdicts, _, _) = verify_xattrs(&dir.path().join("t"));
    assert!(verdicts.iter().all(|v| v.0 == Status::Ok), "{verdicts:?}");
    let entry = |path: &Path| {
        let bytes = xattr::get(path, audit::xattr::ATTR).unwrap().unwrap();
        audit::xattr::decode_entry(&bytes).unwrap()
    };
    let (kept, verified) = entry(&timed);
    assert_eq!(kept, record);
    assert!(verified.unwrap() > long_ago);
    // A record without the time is left as it was.
    assert_eq!(entry(&untimed).1, None);
}

#[test]
fn an_emptied_file_recorded_as_btv2_among_blake3_records_is_modified_without_a_value() {
    let dir = tempdir();
    if !xattrs_work(dir.path()) {
        return skip("emptied_btv2_xattr", "no user extended attributes here");
    }
    // `a` is met first, so `b` is read as BLAKE3 before its record is known: BitTorrent v2
    // gives it no value now that it is empty, which its record then decides, unread again.
    let a = write_file(dir.path(), "t/a", b"kept");
    let b = write_file(dir.path(), "t/b", b"had content");
    library_audit(std::slice::from_ref(&a), &Options::new(Store::Xattr));
    let btv2 = Options {
        layout: Layout::Btv2,
        algorithm: Algorithm::Sha256,
        ..Options::new(Store::Xattr)
    };
    library_audit(std::slice::from_ref(&b), &btv2);
    edit(&b, b"");

    let (verdicts, summary, _) = verify_xattrs(&dir.path().join("t"));
    let want = [
        (Status::Ok, Action::Kept, a),
        (Status::Modified, Action::Kept, b.clone()),
    ];
    assert_eq!(verdicts, want);
    assert_eq!(summary.reread, 0);
    assert_eq!(xattr_record(&b).unwrap().layout, Layout::Btv2);
}
