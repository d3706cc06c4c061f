//! Files whose size the kernel misreports (procfs says 0, sysfs 4096, whatever the content):
//! every layout gives the digest of the bytes a read returns — the same as on a copy of them;
//! never exit 0 with the digest of other bytes. A layout that needs the length learns it by
//! reading (these files are far below the 64 MiB it holds).

mod common;

use common::run::run_cmd;
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
    let out = run_cmd(assert_cmd::Command::new(MTSUM).args(args).arg(path));
    let digest = out.stdout().split_whitespace().next().unwrap_or("");
    (out.code, digest.to_string(), out.stderr().to_string())
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

// ---------------------------------------------------------------------------------------------
// A FUSE file system that misreports sizes (tests/misreporting_fs.py)
// ---------------------------------------------------------------------------------------------

/// `(name, size stat reports, bytes reads give)`: says empty yet holds bytes; holds more, and
/// fewer, than it says, small and across reads of 1 MiB, and on a block boundary (where
/// `O_DIRECT` reads no byte past the size); tells the truth.
const FUSE_FILES: [(&str, u64, usize); 8] = [
    ("zero", 0, 21),
    ("short", 5, 21),
    ("long", 4096, 21),
    ("true", 21, 21),
    ("fewer", 300_000, 200_003),
    ("more", 200_000, 300_005),
    ("more-aligned", 65_536, 65_536 + 4096),
    ("more-than-a-read", 1 << 20, (2 << 20) + 1),
];

/// What `tests/misreporting_fs.py` puts at byte `i` of every file.
fn fuse_pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 7 + i / 251) % 256) as u8).collect()
}

/// The file system of `tests/misreporting_fs.py`, mounted on a temporary directory for as
/// long as this lives.
struct Misreporting {
    server: std::process::Child,
    dir: tempfile::TempDir,
}

impl Misreporting {
    /// Mounts it, or says why it cannot be here (no FUSE device, no Python FUSE binding, a
    /// mount refused).
    fn mount() -> Result<Misreporting, String> {
        if !Path::new("/dev/fuse").exists() {
            return Err("no /dev/fuse".into());
        }
        let python = ["python3", "/usr/bin/python3"]
            .into_iter()
            .find(|p| {
                Command::new(p)
                    .args(["-c", "import importlib.util as u, sys; sys.exit(not (u.find_spec('fusepy') or u.find_spec('fuse')))"])
                    .output()
                    .is_ok_and(|o| o.status.success())
            })
            .ok_or("no Python with fusepy (Debian: python3-fusepy)")?;
        let dir = tempdir();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/misreporting_fs.py");
        let specs = FUSE_FILES.map(|(name, reported, held)| format!("{name}:{reported}:{held}"));
        let mut server = Command::new(python)
            .arg(script)
            .arg(dir.path())
            .args(specs)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("{python}: {e}"))?;
        // Mounted once the last file's reported size shows.
        let (last, reported, _) = FUSE_FILES[FUSE_FILES.len() - 1];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let meta = std::fs::metadata(dir.path().join(last));
            if meta.is_ok_and(|m| m.len() == reported) {
                return Ok(Misreporting { server, dir });
            }
            if let Ok(Some(status)) = server.try_wait() {
                let mut why = String::new();
                std::io::Read::read_to_string(&mut server.stderr.take().unwrap(), &mut why)
                    .unwrap();
                return Err(format!("the mount failed ({status}): {}", why.trim()));
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the FUSE server neither mounted nor failed"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }
}

impl Drop for Misreporting {
    fn drop(&mut self) {
        // SIGTERM: libfuse unmounts and returns.
        // SAFETY: kill with the id of our own child, which has not been waited for yet.
        unsafe { libc::kill(self.server.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.server.wait();
        // Should it not have unmounted, lazily, so that the directory can go.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .output();
    }
}

/// The mounted file system, or `None` after saying why the test is skipped.
fn misreporting(test: &str) -> Option<Misreporting> {
    Misreporting::mount()
        .map_err(|why| eprintln!("SKIPPED {test}: {why}"))
        .ok()
}

/// The digest column of `mtsum ARGS FILES`, which must succeed without a word on stderr.
fn digests(args: &[&str], files: &[std::path::PathBuf]) -> Vec<String> {
    let out = run_cmd(assert_cmd::Command::new(MTSUM).args(args).args(files));
    assert_eq!((out.code, out.stderr()), (Some(0), ""), "{args:?}");
    out.stdout()
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

#[test]
fn every_layout_hashes_the_bytes_of_a_file_whose_fuse_file_system_misreports_its_size() {
    let Some(fs) = misreporting("every_layout_..._fuse_file_system_misreports_its_size") else {
        return;
    };
    let dir = tempdir();
    let (mut files, mut copies) = (Vec::new(), Vec::new());
    for (name, _, held) in FUSE_FILES {
        files.push(fs.path(name));
        copies.push(dir.path().join(name));
        std::fs::write(dir.path().join(name), fuse_pattern(held)).unwrap();
    }
    for layout in LAYOUTS {
        for mode in [&[][..], &["--mmap"], &["--direct"], &["-p", "1"]] {
            let args = [&["-t", layout][..], mode].concat();
            assert_eq!(digests(&args, &files), digests(&args, &copies), "{args:?}");
        }
    }
    // What coreutils prints, reading each file to its end.
    if let Ok(out) = Command::new("sha256sum").args(&files).output() {
        let theirs: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect();
        assert_eq!(digests(&["-t", "plain"], &files), theirs);
    }
}

#[test]
fn an_audit_records_files_whose_fuse_file_system_misreports_their_size_and_finds_them_ok() {
    let Some(fs) = misreporting("an_audit_..._misreports_their_size_and_finds_them_ok") else {
        return;
    };
    let files: Vec<String> = FUSE_FILES
        .iter()
        .map(|(name, _, _)| fs.path(name).to_string_lossy().into_owned())
        .collect();
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let dir = tempdir();
    for layout in [&[][..], &["-t", "mtsum"]] {
        let args = [&["--manifest", "m"][..], layout].concat();
        let expected: String = files.iter().map(|f| format!("new  {f}\n")).collect();
        let (code, first, stderr) = audit(dir.path(), &args, &files);
        assert_eq!(
            (code, first.as_str()),
            (Some(0), expected.as_str()),
            "{args:?}: {stderr}"
        );
        let (code, second, stderr) = audit(dir.path(), &args, &files);
        let expected = expected.replace("new  ", "ok  ");
        assert_eq!(
            (code, second.as_str()),
            (Some(0), expected.as_str()),
            "{args:?}: {stderr}"
        );
        std::fs::remove_file(dir.path().join("m")).unwrap();
    }
}
