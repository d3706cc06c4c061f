//! The `mtsum` command on inputs that fail or change while hashed: one line on stderr per
//! failed input, the other inputs still hashed, exit 1 (see `cli.rs` for the conventions).

mod common;

use common::cli::*;
use common::run::*;
use common::{MTSUM, is_root, mtsum_unprivileged, skip, tempdir, wait_until, write_file};
use std::fs::{self, File};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use assert_cmd::Command;

// ---------------------------------------------------------------------------------------------
// Bad input: one line on stderr, the other inputs still hashed
// ---------------------------------------------------------------------------------------------

#[test]
fn missing_file_is_no_such_file_and_the_others_are_still_hashed() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    write_file(dir.path(), "b", b"b");
    let expected = line_of(dir.path(), &[], "a") + &line_of(dir.path(), &[], "b");
    run(dir.path(), ["a", "missing", "b"]).assert(
        1,
        &expected,
        &error_line("missing", "No such file or directory"),
    );
}

/// Built without the `remote` feature (the tests of URLs, tests/remote.rs, are then left out),
/// a URL is still an operand that fails on its own line, not a path looked for on disk.
#[cfg(not(feature = "remote"))]
#[test]
fn url_in_a_build_without_remote_objects_fails_alone_and_the_others_are_still_hashed() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    let url = "http://127.0.0.1:9/object";
    run(dir.path(), [url, "a"]).assert(
        1,
        &line_of(dir.path(), &[], "a"),
        &error_line(
            url,
            "this mtsum was built without remote objects (cargo feature `remote`)",
        ),
    );
}

#[test]
fn directory_is_a_directory_and_the_others_are_still_hashed() {
    let dir = tempdir();
    fs::create_dir(dir.path().join("sub")).unwrap();
    write_file(dir.path(), "a", b"a");
    let expected = line_of(dir.path(), &[], "a");
    for layout in ["mtsum", "plain", "merkle", "rfc6962"] {
        let a = line_of(dir.path(), &["-t", layout], "a");
        run(dir.path(), ["-t", layout, "sub", "a"]).assert(
            1,
            &a,
            &error_line("sub", "Is a directory"),
        );
    }
    run(dir.path(), ["a", "sub"]).assert(1, &expected, &error_line("sub", "Is a directory"));
}

#[test]
fn standard_input_that_is_a_directory_is_reported() {
    let dir = tempdir();
    let output = StdCommand::new(MTSUM)
        .args(["-t", "plain"])
        .current_dir(dir.path())
        .stdin(File::open(dir.path()).unwrap())
        .output()
        .unwrap();
    Run::from_output(output).assert(1, "", &error_line("-", "Is a directory"));
}

#[test]
fn unreadable_file_is_permission_denied_and_the_others_are_still_hashed() {
    let cmd = match mtsum_unprivileged() {
        Ok(cmd) => cmd,
        Err(why) => return skip("unreadable_file_is_permission_denied", &why),
    };
    let dir = tempdir();
    // The unprivileged user must be able to enter the directory and read the other file.
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    write_file(dir.path(), "a", b"a");
    fs::set_permissions(dir.path().join("a"), fs::Permissions::from_mode(0o644)).unwrap();
    let secret = write_file(dir.path(), "secret", b"secret");
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o000)).unwrap();
    let expected = line_of(dir.path(), &[], "a");
    let mut cmd = Command::from_std(cmd);
    cmd.args(["secret", "a"])
        .current_dir(dir.path())
        .timeout(TIMEOUT);
    run_cmd(&mut cmd).assert(1, &expected, &error_line("secret", "Permission denied"));
}

#[test]
fn empty_file_has_the_digest_of_the_reference_tool() {
    let dir = tempdir();
    write_file(dir.path(), "empty", b"");
    let expected = [
        ("mtsum", MTSUM_SHA256_EMPTY),
        ("plain", SHA256_EMPTY),
        ("merkle", SHA256_EMPTY),
        ("rfc6962", SHA256_EMPTY),
    ];
    for (layout, digest) in expected {
        run(dir.path(), ["-t", layout, "empty"]).assert(0, &format!("{digest}  empty\n"), "");
    }
}

#[test]
fn fifo_is_streamed_for_stream_capable_layouts() {
    let dir = tempdir();
    let data = pattern((2 << 20) + 3);
    write_file(dir.path(), "data", &data);
    for layout in [
        &["-t", "plain"][..],
        &["-t", "merkle"],
        &["-t", "merkle", "-l", "64K"],
        &["-t", "rfc6962"],
        &["-t", "rfc6962", "-l", "1K"],
    ] {
        let digest = digest_of(dir.path(), layout, "data");
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let writer = FifoWriter::start(&fifo, data.clone());
        let r = run(dir.path(), [layout, &["fifo"]].concat());
        writer.finish();
        fs::remove_file(&fifo).unwrap();
        r.assert(0, &format!("{digest}  fifo\n"), "");
    }
}

#[test]
fn fifo_with_mtsum_layout_hashes_like_a_file_of_its_bytes() {
    let dir = tempdir();
    let data = pattern((1 << 20) + 3);
    write_file(dir.path(), "data", &data);
    let digest = digest_of(dir.path(), &[], "data");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let writer = FifoWriter::start(&fifo, data);
    let r = run(dir.path(), ["fifo"]);
    writer.finish();
    r.assert(0, &format!("{digest}  fifo\n"), "");
}

#[test]
fn fifo_with_mtsum_layout_longer_than_it_holds_is_a_stream_error_and_the_others_are_hashed() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"a");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let expected = line_of(dir.path(), &[], "a");
    let writer = FifoWriter::start(&fifo, pattern(LONGER_THAN_HELD));
    let r = run(dir.path(), ["fifo", "a"]);
    writer.finish();
    assert_eq!(r.code, Some(1), "stderr: {}", r.stderr());
    assert_eq!(r.stdout(), expected);
    assert!(r.stderr().starts_with("mtsum: fifo: "), "{}", r.stderr());
    assert!(r.stderr().contains(STREAM_HINT), "{}", r.stderr());
    assert_eq!(r.stderr().lines().count(), 1, "{}", r.stderr());
}

#[test]
fn dev_null_hashes_as_nothing_for_stream_capable_layouts() {
    let dir = tempdir();
    for layout in ["plain", "merkle", "rfc6962"] {
        run(dir.path(), ["-t", layout, "/dev/null"]).assert(
            0,
            &format!("{SHA256_EMPTY}  /dev/null\n"),
            "",
        );
    }
}

#[test]
fn dev_null_with_mtsum_layout_is_the_empty_files_tree_and_dev_zero_a_stream_error() {
    let dir = tempdir();
    run(dir.path(), ["/dev/null"]).assert(0, &format!("{MTSUM_SHA256_EMPTY}  /dev/null\n"), "");
    let r = run(dir.path(), ["/dev/zero"]);
    assert_eq!((r.code, r.stdout.as_slice()), (Some(1), &b""[..]));
    assert!(
        r.stderr().starts_with("mtsum: /dev/zero: "),
        "{}",
        r.stderr()
    );
    assert!(r.stderr().contains(STREAM_HINT), "{}", r.stderr());
    assert_eq!(r.stderr().lines().count(), 1, "{}", r.stderr());
}

/// A loop device attached to a file, detached again when dropped.
struct LoopDevice(PathBuf);

impl LoopDevice {
    fn attach(file: &Path) -> Result<LoopDevice, String> {
        if !is_root() {
            return Err("attaching a loop device needs root".into());
        }
        let out = StdCommand::new("losetup")
            .args(["-f", "--show"])
            .arg(file)
            .output()
            .map_err(|e| format!("losetup: {e}"))?;
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr);
            return Err(format!("losetup -f --show failed: {}", why.trim()));
        }
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let dev = LoopDevice(PathBuf::from(dev));
        File::open(&dev.0).map_err(|e| format!("{} is not readable: {e}", dev.0.display()))?;
        Ok(dev)
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = StdCommand::new("losetup").arg("-d").arg(&self.0).status();
    }
}

#[test]
fn block_device_is_hashed_by_its_seekable_size_not_its_stat_size() {
    let dir = tempdir();
    // A multiple of the 512-byte sector, more than one default merkle leaf, not a power of two.
    let data = pattern((3 << 20) + 7 * 512);
    write_file(dir.path(), "image", &data);
    let device = match LoopDevice::attach(&dir.path().join("image")) {
        Ok(d) => d,
        Err(why) => return skip("block_device_is_hashed_by_its_seekable_size", &why),
    };
    let dev = device.0.to_str().expect("a UTF-8 device path").to_string();
    assert_eq!(
        fs::metadata(&dev).unwrap().len(),
        0,
        "stat says 0 for a block device"
    );
    for layout in [
        &[][..],
        &["-t", "plain"],
        &["-t", "merkle"],
        &["-t", "rfc6962"],
    ] {
        let from_file = digest_of(dir.path(), layout, "image");
        run(dir.path(), [layout, &[dev.as_str()]].concat()).assert(
            0,
            &format!("{from_file}  {dev}\n"),
            "",
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Files that change while they are hashed
// ---------------------------------------------------------------------------------------------

/// Size of the file that changes under mtsum: 128 MiB, sparse so that it costs no disk.
///
/// Determinism: the file changes continuously from before mtsum starts until after it exits,
/// so the test only needs some change to land between mtsum's open and its final check.
/// `-p 1 -a sha512` over 128 MiB keeps that window at about half a second here, while a
/// change lands every few microseconds (growth) or every millisecond (truncation); the test
/// could only fail if the changing process got no CPU for the whole window.
const CHANGING_SIZE: u64 = 128 << 20;
const SLOW_HASH: [&str; 4] = ["-p", "1", "-a", "sha512"];

#[test]
fn file_growing_while_hashed_is_changed_while_being_read_and_the_others_are_still_hashed() {
    let dir = tempdir();
    write_file(dir.path(), "before", b"before");
    write_file(dir.path(), "after", b"after");
    let growing = dir.path().join("growing");
    File::create(&growing)
        .unwrap()
        .set_len(CHANGING_SIZE)
        .unwrap();
    let expected =
        line_of(dir.path(), &SLOW_HASH, "before") + &line_of(dir.path(), &SLOW_HASH, "after");

    // `printf` is a shell builtin: the loop appends without forking.
    let mut appender = StdCommand::new("sh")
        .args(["-c", r#"while :; do printf x >> "$0"; done"#])
        .arg(&growing)
        .spawn()
        .expect("sh starts");
    wait_until("the file grows", || {
        fs::metadata(&growing).unwrap().len() > CHANGING_SIZE
    });
    let r = run(
        dir.path(),
        [&SLOW_HASH[..], &["before", "growing", "after"]].concat(),
    );
    appender.kill().unwrap();
    appender.wait().unwrap();

    r.assert(
        1,
        &expected,
        &error_line("growing", "changed while being read"),
    );
}

#[test]
fn file_truncated_while_hashed_is_changed_while_being_read_and_the_others_are_still_hashed() {
    let dir = tempdir();
    write_file(dir.path(), "before", b"before");
    write_file(dir.path(), "after", b"after");
    let path = dir.path().join("shrinking");
    let file = File::create(&path).unwrap();
    file.set_len(CHANGING_SIZE).unwrap();
    let expected =
        line_of(dir.path(), &SLOW_HASH, "before") + &line_of(dir.path(), &SLOW_HASH, "after");

    // Cut the file to half and back, over and over: a read past the cut ends early, and a read
    // that missed the cut still sees another size or modification time at the end.
    let stop = Arc::new(AtomicBool::new(false));
    let truncations = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let truncator = {
        let (stop, truncations) = (stop.clone(), truncations.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                file.set_len(CHANGING_SIZE / 2).unwrap();
                file.set_len(CHANGING_SIZE).unwrap();
                truncations.fetch_add(1, Ordering::Relaxed);
                thread::sleep(Duration::from_micros(500));
            }
        })
    };
    wait_until("the file was cut", || {
        truncations.load(Ordering::Relaxed) > 0
    });
    let r = run(
        dir.path(),
        [&SLOW_HASH[..], &["before", "shrinking", "after"]].concat(),
    );
    stop.store(true, Ordering::Relaxed);
    truncator.join().unwrap();

    r.assert(
        1,
        &expected,
        &error_line("shrinking", "changed while being read"),
    );
}
