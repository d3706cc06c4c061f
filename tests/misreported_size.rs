//! Files whose size the kernel misreports (procfs says 0, sysfs 4096, whatever the content):
//! every layout gives the digest of the bytes a read returns — the same as on a copy of them;
//! never exit 0 with the digest of other bytes. A layout that needs the length learns it by
//! reading (these files are far below the 64 MiB it holds).

mod common;

use common::{MTSUM, tempdir};
use std::path::Path;
use std::process::Command;

/// Stable files of the pseudo file systems (their content does not change between two reads).
const PSEUDO_FILES: [&str; 4] = [
    "/proc/version",
    "/proc/sys/kernel/ostype",
    "/proc/cmdline",
    "/sys/kernel/mm/transparent_hugepage/enabled",
];

const LAYOUTS: [&str; 8] = [
    "mtsum", "plain", "merkle", "rfc6962", "s3", "glacier", "dropbox", "btv2",
];

fn mtsum(args: &[&str], path: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(MTSUM).args(args).arg(path).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let digest = stdout.split_whitespace().next().unwrap_or("").to_string();
    (
        out.status.code(),
        digest,
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The files of `PSEUDO_FILES` that this machine has, each with a copy of its bytes.
fn present_with_copies(dir: &Path) -> Vec<(&'static str, std::path::PathBuf)> {
    PSEUDO_FILES
        .iter()
        .filter_map(|f| match std::fs::read(f) {
            Ok(bytes) if !bytes.is_empty() => {
                let copy = dir.join(f.replace('/', "_"));
                std::fs::write(&copy, bytes).unwrap();
                Some((*f, copy))
            }
            _ => {
                eprintln!("note: {f} absent or empty here, not tested");
                None
            }
        })
        .collect()
}

#[test]
fn every_layout_hashes_the_bytes_a_read_returns() {
    let dir = tempdir();
    for (file, copy) in present_with_copies(dir.path()) {
        for layout in LAYOUTS {
            for mode in [&[][..], &["--mmap"], &["--direct"]] {
                let args = [&["-t", layout][..], mode].concat();
                let (code, digest, stderr) = mtsum(&args, Path::new(file));
                let (_, expected, _) = mtsum(&args, &copy);
                assert_eq!((code, stderr.as_str()), (Some(0), ""), "{file} {args:?}");
                assert_eq!(digest, expected, "{file} {args:?}");
            }
        }
    }
}

#[test]
fn plain_layout_equals_coreutils_on_pseudo_files() {
    for file in PSEUDO_FILES.iter().filter(|f| Path::new(f).exists()) {
        for (alg, tool) in [("sha256", "sha256sum"), ("md5", "md5sum")] {
            let Ok(out) = Command::new(tool).arg(file).output() else {
                eprintln!("note: {tool} absent, not compared");
                continue;
            };
            let theirs = String::from_utf8(out.stdout).unwrap();
            let (code, ours, stderr) = mtsum(&["-t", "plain", "-a", alg], Path::new(file));
            assert_eq!(code, Some(0), "{file}: {stderr}");
            assert_eq!(Some(ours.as_str()), theirs.split_whitespace().next());
        }
    }
}

#[test]
fn a_file_that_really_is_empty_keeps_the_empty_files_digest() {
    let dir = tempdir();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    // C++ mtsum 1.1.0 on a 0-byte file (tests/vectors/mtsum-reference.tsv): two empty leaves.
    let (code, digest, _) = mtsum(&[], &empty);
    assert_eq!(code, Some(0));
    assert_eq!(
        digest,
        "08275fa3607b9fbefda10a3972b9f05f7c1bc392d1d68f5fd9d58ac9ff384cba"
    );
}

#[test]
fn recursion_and_check_read_pseudo_files_to_their_end() {
    let dir = tempdir();
    let sums = dir.path().join("sums");
    let out = Command::new(MTSUM)
        .args(["-t", "plain", "/proc/version"])
        .output()
        .unwrap();
    std::fs::write(&sums, &out.stdout).unwrap();
    let check = Command::new(MTSUM)
        .args(["-t", "plain", "-c"])
        .arg(&sums)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&check.stdout),
        "/proc/version: OK\n"
    );
    // No file below /proc/sys/kernel is given the digest of no bytes (most hold a line).
    let walk = Command::new(MTSUM)
        .args([
            "-t",
            "plain",
            "-r",
            "/proc/sys/kernel/ostype",
            "/proc/sys/kernel/osrelease",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(walk.stdout).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    let empty_sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    assert!(!text.contains(empty_sha256), "{text}");
}

/// `mtsum --audit ARGS FILES` with the records in `dir`.
fn audit(dir: &Path, args: &[&str], files: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(MTSUM)
        .arg("--audit")
        .args(args)
        .args(files)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn an_audit_records_pseudo_files_and_then_finds_them_ok() {
    let dir = tempdir();
    let files: Vec<&str> = present_with_copies(dir.path())
        .into_iter()
        .map(|(f, _)| f)
        .collect();
    let mut stores = vec![vec!["--manifest", "m"]];
    if cfg!(feature = "database") {
        stores.push(vec!["--db", "records.db"]);
    }
    for store in stores {
        for layout in [&[][..], &["-t", "merkle", "-a", "sha1"], &["-t", "mtsum"]] {
            let args = [&store[..], layout].concat();
            let (code, first, stderr) = audit(dir.path(), &args, &files);
            assert_eq!(code, Some(0), "{args:?}: {stderr}");
            let expected: String = files.iter().map(|f| format!("new  {f}\n")).collect();
            assert_eq!(first, expected, "{args:?}: {stderr}");
            let (code, second, stderr) = audit(dir.path(), &args, &files);
            assert_eq!(code, Some(0), "{args:?}: {stderr}");
            assert_eq!(second, expected.replace("new  ", "ok  "), "{args:?}");
            std::fs::remove_file(dir.path().join(store[1])).unwrap();
        }
    }
}
