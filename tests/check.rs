//! `mtsum -c` against the real coreutils, b3sum and xxhsum, on one scenario.
//!
//! The scenario is a directory as people leave it some time after writing their sums: files
//! that still match (among them names with a space, a newline, a backslash, a carriage return
//! and invalid UTF-8, an empty file, a 2 MiB file), one that changed, one that is gone, one that
//! cannot be read, and a name that has become a directory. Every sum file is written by its tool
//! *before* those changes, on the very same files.
//!
//! Then `mtsum -c` must print what `sha256sum -c` prints on the same scenario: the same stdout
//! bytes, the same stderr lines but for the program name, the same exit status; with each
//! option and their combinations, from files, standard input, CRLF files, files full of junk.
//! In the other direction, coreutils' `-c` reads what `mtsum -t plain` writes.
//!
//! The unreadable file needs an unprivileged user: as root, every check runs as user and group
//! 65534 through `setpriv`, or the comparisons are skipped saying why. So are the tools that
//! are not installed, and coreutils other than 9.0/9.1 (later versions escape verdict names
//! differently; mtsum follows 9.1). All tools run with `LC_ALL=C.UTF-8`, so that names in
//! messages are quoted the same way.
//!
//! `--json`, which coreutils lacks, is held to mtsum's own text output: the same stderr and
//! exit status, and on stdout one JSON object per line of the sum files, then a summary.

mod common;

use common::{have, os, skip, strs};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::sync::OnceLock;
use std::time::Duration;

use assert_cmd::Command;
use mtsum::Algorithm;
use proptest::prelude::*;
use tempfile::TempDir;

/// No run may take this long; a hang fails instead.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The name every compared sum file is checked under (it needs quoting in messages).
const CHECK_FILE: &str = "the sums";

/// Runs a command as user and group 65534, without supplementary groups.
const SETPRIV: [&str; 4] = [
    "setpriv",
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
];

// ---------------------------------------------------------------------------------------------
// Running programs
// ---------------------------------------------------------------------------------------------

/// What one run produced.
#[derive(Clone, Debug)]
struct Out {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// `None` when a signal ended the process.
    code: Option<i32>,
}

impl Out {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Bytes as readable lines (`\\`, `\n`, `\r`, `\xff` spelled out, quotes left alone), for
/// assertions whose failure shows a line-by-line difference.
fn lines(bytes: &[u8]) -> Vec<String> {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .map(|line| {
            line.iter()
                .map(|&b| match b {
                    b'\\' => "\\\\".to_string(),
                    b' '..=b'~' => char::from(b).to_string(),
                    b => b.escape_ascii().to_string(),
                })
                .collect()
        })
        .collect()
}

/// The wrapper that runs programs as an unprivileged user (empty when we are not root), or
/// why there is none.
fn unprivileged() -> Result<&'static [&'static str], String> {
    static PREFIX: OnceLock<Result<&'static [&'static str], String>> = OnceLock::new();
    PREFIX
        .get_or_init(|| {
            // SAFETY: geteuid has no preconditions and cannot fail.
            if unsafe { libc::geteuid() } != 0 {
                return Ok(&[]);
            }
            let probe = StdCommand::new(SETPRIV[0])
                .args(&SETPRIV[1..])
                .arg(mtsum_path())
                .arg("--version")
                .output();
            match probe {
                Ok(o) if o.status.success() => Ok(&SETPRIV[..]),
                Ok(o) => Err(format!(
                    "running as root, and setpriv cannot run mtsum as user 65534: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
                Err(e) => Err(format!("running as root, and setpriv cannot start: {e}")),
            }
        })
        .clone()
}

fn mtsum_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("mtsum")
}

/// Why coreutils cannot serve as the reference here, if it cannot.
fn coreutils_missing() -> Option<String> {
    let out = match StdCommand::new("sha256sum").arg("--version").output() {
        Ok(out) => out,
        Err(e) => return Some(format!("sha256sum cannot start: {e}")),
    };
    let version = String::from_utf8_lossy(&out.stdout);
    let first = version.lines().next().unwrap_or_default();
    let supported = ["(GNU coreutils) 9.0", "(GNU coreutils) 9.1"];
    if supported.iter().any(|v| first.ends_with(v)) {
        None
    } else {
        Some(format!(
            "mtsum follows coreutils 9.1, this is '{first}' (verdict names differ)"
        ))
    }
}

/// Runs `command` (program and arguments) in `dir` with `stdin`, behind `prefix`.
fn run_in(dir: &Path, prefix: &[&str], command: &[OsString], stdin: &[u8]) -> Out {
    let (program, args) = command.split_first().expect("a program");
    let mut cmd = match prefix.split_first() {
        Some((wrapper, wrapper_args)) => {
            let mut cmd = Command::new(wrapper);
            cmd.args(wrapper_args).arg(program);
            cmd
        }
        None if Path::new(program) == mtsum_path() => {
            Command::cargo_bin("mtsum").expect("the mtsum binary is built")
        }
        None => Command::new(program),
    };
    let output = cmd
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C.UTF-8")
        .timeout(TIMEOUT)
        .write_stdin(stdin.to_vec())
        .output()
        .unwrap_or_else(|e| panic!("{command:?} runs: {e}"));
    let out = Out {
        stdout: output.stdout,
        stderr: output.stderr,
        code: output.status.code(),
    };
    assert!(
        !out.stderr().contains("panicked"),
        "{command:?} panicked: {}",
        out.stderr()
    );
    out
}

/// `mtsum ARGS` in `dir`, directly.
fn mtsum_in(dir: &Path, args: &[OsString], stdin: &[u8]) -> Out {
    let mut command = vec![mtsum_path().into_os_string()];
    command.extend(args.iter().cloned());
    run_in(dir, &[], &command, stdin)
}

/// Asserts that `ours` (mtsum) printed and returned what `reference` (`tool`) did: stdout
/// byte for byte, stderr but for the program name, and the `--warn` word for untagged lines
/// (`SHA256` for `sha256sum`; mtsum says what `-t`/`-a` make it, `warn_tag`).
fn assert_same(what: &str, tool: &str, reference: &Out, warn_tag: &str, ours: &Out) {
    let tool_word = tool_tag(tool);
    let expected_err: Vec<u8> = reference
        .stderr
        .split_inclusive(|&b| b == b'\n')
        .flat_map(|line| {
            let prefix = format!("{tool}: ");
            let line = match line.strip_prefix(prefix.as_bytes()) {
                Some(rest) => [b"mtsum: ".as_slice(), rest].concat(),
                None => line.to_vec(),
            };
            let from = format!("improperly formatted {tool_word} checksum line");
            let to = format!("improperly formatted {warn_tag} checksum line");
            replace(&line, from.as_bytes(), to.as_bytes())
        })
        .collect();
    assert_eq!(
        lines(&ours.stdout),
        lines(&reference.stdout),
        "{what}: stdout differs from {tool}'s"
    );
    assert_eq!(
        lines(&ours.stderr),
        lines(&expected_err),
        "{what}: stderr differs from {tool}'s"
    );
    assert_eq!(
        ours.code, reference.code,
        "{what}: exit status differs from {tool}'s"
    );
}

/// The word coreutils' `--warn` uses for `tool`'s lines: `SHA256` for `sha256sum`.
fn tool_tag(tool: &str) -> String {
    tool.trim_end_matches("sum").to_ascii_uppercase()
}

fn replace(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while let Some(at) = rest.windows(from.len()).position(|w| w == from) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(to);
        rest = &rest[at + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// Deterministic pseudo-random bytes (a 64-bit LCG), for file contents and garbage.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as u8
        })
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Algorithm::Sha256.hash(bytes).to_hex()
}

fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {mode:o} {}: {e}", path.display()));
}

/// A world-readable temporary directory (the unprivileged user works in it).
fn open_tempdir() -> TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    set_mode(dir.path(), 0o755);
    dir
}

/// Writes `bytes` to `dir/name`, readable by everyone.
fn put(dir: &Path, name: &[u8], bytes: &[u8]) -> PathBuf {
    let path = dir.join(OsStr::from_bytes(name));
    fs::write(&path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    set_mode(&path, 0o644);
    path
}

// ---------------------------------------------------------------------------------------------
// The scenario
// ---------------------------------------------------------------------------------------------

/// The files of the scenario, in the order every tool lists them.
const NAMES: [&[u8]; 12] = [
    b"good",
    b"with space",
    b"new\nline",
    b"back\\slash",
    b"car\rret",
    b"inv\xffalid",
    b"empty",
    b"two-mib",
    b"changed",
    b"missing",
    b"unreadable",
    b"adir",
];

/// What each file holds when the sums are written.
fn content(name: &[u8]) -> Vec<u8> {
    match name {
        b"good" => b"hello\n".to_vec(),
        b"empty" | b"adir" => Vec::new(),
        b"two-mib" => noise((2 << 20) + 7, 2),
        b"changed" => b"before".to_vec(),
        b"unreadable" => b"secret".to_vec(),
        other => other.to_vec(),
    }
}

/// `sha256sum -c` on the scenario, as coreutils 9.1 prints it (the ground truth of every
/// comparison, asserted once so that the scenario is what it claims to be).
const SHA256SUM_VERDICTS: &[u8] = b"good: OK
with space: OK
\\new\\nline: OK
back\\slash: OK
car\rret: OK
inv\xffalid: OK
empty: OK
two-mib: OK
changed: FAILED
missing: FAILED open or read
unreadable: FAILED open or read
adir: FAILED open or read
";
const SHA256SUM_WARNINGS: &[u8] = b"sha256sum: missing: No such file or directory
sha256sum: unreadable: Permission denied
sha256sum: adir: Is a directory
sha256sum: WARNING: 3 listed files could not be read
sha256sum: WARNING: 1 computed checksum did NOT match
";

/// A tool whose sum files `mtsum -c` must read.
#[derive(Clone, Copy)]
struct Writer {
    /// The command that writes the sums, before the names.
    command: &'static [&'static str],
    /// What `mtsum` needs besides `-c` to read them.
    check_args: &'static [&'static str],
    /// The word mtsum's `--warn` uses with `check_args`.
    warn_tag: &'static str,
    /// Names the tool cannot write so that they read back (b3sum writes invalid UTF-8
    /// lossily; xxhsum does not escape newlines): left out, here and in the reference.
    leaves_out: fn(&[u8]) -> bool,
}

fn keeps_all(_: &[u8]) -> bool {
    false
}

fn invalid_utf8(name: &[u8]) -> bool {
    std::str::from_utf8(name).is_err()
}

fn has_newline(name: &[u8]) -> bool {
    name.contains(&b'\n')
}

const fn writer(command: &'static [&'static str], check_args: &'static [&'static str]) -> Writer {
    Writer {
        command,
        check_args,
        warn_tag: "SHA256",
        leaves_out: keeps_all,
    }
}

const SHA256SUM: Writer = writer(&["sha256sum"], &["-t", "plain"]);
const SHA256SUM_TAG: Writer = writer(&["sha256sum", "--tag"], &["-t", "plain"]);

const OTHER_COREUTILS: [Writer; 10] = [
    writer(&["md5sum"], &["-t", "plain"]),
    Writer {
        warn_tag: "MD5",
        ..writer(&["md5sum"], &["-t", "plain", "-a", "md5"])
    },
    writer(&["md5sum", "--tag"], &["-t", "plain"]),
    writer(&["sha1sum"], &["-t", "plain"]),
    Writer {
        warn_tag: "SHA1",
        ..writer(&["sha1sum", "--tag"], &["-t", "plain", "-a", "sha1"])
    },
    writer(&["sha224sum"], &["-t", "plain"]),
    writer(&["sha384sum", "--tag"], &["-t", "plain"]),
    writer(&["sha512sum"], &["-t", "plain"]),
    writer(&["sha512sum", "--tag"], &["-t", "plain"]),
    Writer {
        warn_tag: "SHA512",
        ..writer(&["sha512sum"], &["-t", "plain", "-a", "sha512"])
    },
];

const B3SUM: Writer = Writer {
    warn_tag: "BLAKE3",
    leaves_out: invalid_utf8,
    ..writer(&["b3sum"], &["-t", "plain", "-a", "blake3"])
};

const XXHSUM: [Writer; 5] = [
    // xxhsum 0.8.1 writes -H3 as `XXH3 (NAME) = HEX` even without --tag.
    Writer {
        leaves_out: has_newline,
        ..writer(&["xxhsum", "-H3"], &["-t", "plain"])
    },
    Writer {
        leaves_out: has_newline,
        ..writer(&["xxhsum", "-H3", "--little-endian"], &["-t", "plain"])
    },
    Writer {
        warn_tag: "XXH128",
        leaves_out: has_newline,
        ..writer(&["xxhsum", "-H128"], &["-t", "plain", "-a", "xxh128"])
    },
    Writer {
        leaves_out: has_newline,
        ..writer(&["xxhsum", "-H128", "--tag"], &["-t", "plain"])
    },
    Writer {
        leaves_out: has_newline,
        ..writer(
            &["xxhsum", "-H128", "--tag", "--little-endian"],
            &["-t", "plain"],
        )
    },
];

/// The sums one writer wrote, and what `sha256sum` wrote for the same names.
struct Written {
    writer: Writer,
    sums: Vec<u8>,
    reference: Vec<u8>,
}

/// A reference run: tool, arguments, the sum file's bytes, standard input.
type RunKey = (String, Vec<OsString>, Vec<u8>, Vec<u8>);

/// The scenario directory, after the sums were written and the files changed.
struct Scenario {
    dir: TempDir,
    /// The unprivileged wrapper every check runs behind.
    prefix: &'static [&'static str],
    written: Vec<Written>,
    /// Reference runs already made.
    cache: RefCell<HashMap<RunKey, Out>>,
}

impl Scenario {
    /// Builds the scenario with sums written by `writers` (those installed), or says why it
    /// cannot be.
    fn new(writers: &[Writer]) -> Result<Scenario, String> {
        if let Some(why) = coreutils_missing() {
            return Err(why);
        }
        let prefix = unprivileged()?;
        let dir = open_tempdir();
        for name in NAMES {
            put(dir.path(), name, &content(name));
        }
        let mut written = Vec::new();
        let mut missing = Vec::new();
        for &writer in writers {
            let tool = writer.command[0];
            if !have(tool) {
                missing.push(tool);
                continue;
            }
            let names: Vec<&[u8]> = NAMES
                .into_iter()
                .filter(|n| !(writer.leaves_out)(n))
                .collect();
            let write = |command: &[&str]| {
                let mut command = strs(command);
                command.extend(names.iter().map(|n| os(n)));
                let out = run_in(dir.path(), &[], &command, b"");
                assert_eq!(out.code, Some(0), "{command:?}: {}", out.stderr());
                out.stdout
            };
            written.push(Written {
                writer,
                sums: write(writer.command),
                reference: write(&["sha256sum"]),
            });
        }
        missing.dedup();
        if !missing.is_empty() {
            eprintln!("note: not installed, their sum files are not tested: {missing:?}");
        }
        let path = |name: &str| dir.path().join(name);
        fs::write(path("changed"), b"after!").unwrap();
        fs::remove_file(path("missing")).unwrap();
        set_mode(&path("unreadable"), 0o000);
        fs::remove_file(path("adir")).unwrap();
        fs::create_dir(path("adir")).unwrap();
        set_mode(&path("adir"), 0o755);
        Ok(Scenario {
            dir,
            prefix,
            written,
            cache: RefCell::default(),
        })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `bytes` as [`CHECK_FILE`].
    fn set_check_file(&self, bytes: &[u8]) {
        put(self.path(), CHECK_FILE.as_bytes(), bytes);
    }

    /// `tool -c OPTIONS FILES` as the unprivileged user, [`CHECK_FILE`] holding `sums`.
    fn reference(&self, tool: &str, options: &[OsString], sums: &[u8], stdin: &[u8]) -> Out {
        let key = (
            tool.to_string(),
            options.to_vec(),
            sums.to_vec(),
            stdin.to_vec(),
        );
        if let Some(out) = self.cache.borrow().get(&key) {
            return out.clone();
        }
        self.set_check_file(sums);
        let mut command = strs(&[tool, "-c"]);
        command.extend(options.iter().cloned());
        let out = run_in(self.path(), self.prefix, &command, stdin);
        self.cache.borrow_mut().insert(key, out.clone());
        out
    }

    /// `mtsum ARGS -c OPTIONS` as the unprivileged user, [`CHECK_FILE`] holding `sums`.
    fn ours(&self, args: &[&str], options: &[OsString], sums: &[u8], stdin: &[u8]) -> Out {
        self.set_check_file(sums);
        let mut command = vec![mtsum_path().into_os_string()];
        command.extend(strs(args));
        command.push("-c".into());
        command.extend(options.iter().cloned());
        run_in(self.path(), self.prefix, &command, stdin)
    }

    /// Checks `sums` (what `w` wrote, maybe altered) with mtsum and `reference` (the same
    /// alteration of sha256sum's file) with sha256sum, with `options` and [`CHECK_FILE`]
    /// appended, and asserts that both said the same.
    fn compare(&self, what: &str, w: &Writer, reference: &[u8], sums: &[u8], options: &[&str]) {
        let mut args = strs(options);
        args.push(CHECK_FILE.into());
        self.compare_args(what, w, reference, sums, &args, b"");
    }

    /// `sha256sum -c ARGS` with [`CHECK_FILE`] holding `reference`, and `mtsum -c ARGS` with
    /// it holding `sums`, both with `stdin`, said the same.
    fn compare_args(
        &self,
        what: &str,
        w: &Writer,
        reference: &[u8],
        sums: &[u8],
        args: &[OsString],
        stdin: &[u8],
    ) {
        let expected = self.reference("sha256sum", args, reference, stdin);
        let ours = self.ours(w.check_args, args, sums, stdin);
        assert_same(what, "sha256sum", &expected, w.warn_tag, &ours);
    }
}

/// Every option of `-c` alone, and the combinations whose order matters: of `--quiet`,
/// `--status` and `--warn` the last one wins, in coreutils as in mtsum.
const OPTION_SETS: [&[&str]; 22] = [
    &[],
    &["--quiet"],
    &["--status"],
    &["--strict"],
    &["--warn"],
    &["-w"],
    &["--ignore-missing"],
    &["--quiet", "--warn"],
    &["--warn", "--quiet"],
    &["--status", "--warn"],
    &["--warn", "--status"],
    &["--quiet", "--status"],
    &["--status", "--quiet"],
    &["--quiet", "--status", "--warn"],
    &["--warn", "--status", "--quiet"],
    &["--strict", "--warn"],
    &["--strict", "--quiet"],
    &["--strict", "--status"],
    &["--ignore-missing", "--quiet"],
    &["--ignore-missing", "--status"],
    &["--ignore-missing", "--strict", "--warn"],
    &["--warn", "--ignore-missing", "--strict", "--quiet"],
];

/// Lines that are not checksum lines for any tool, placed before the real ones.
const JUNK_BEFORE: &[u8] = b"# sums of the scenario\n\nthis line is improperly formatted\n";
/// More of them after the real ones; the last line has no newline.
const JUNK_AFTER: &[u8] = b"0123  digest of no algorithm's length\n\
    BLAKE2b (good) = 00\n\
    SHA256 (good\n\
    \t \n\
    \\5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  bad \\escape\n\
    # another comment\n\
    (good) = 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\n\
    no newline at the end";

fn with_junk(sums: &[u8]) -> Vec<u8> {
    [JUNK_BEFORE, sums, JUNK_AFTER].concat()
}

fn crlf(sums: &[u8]) -> Vec<u8> {
    replace(sums, b"\n", b"\r\n")
}

/// What `w` wrote, checked as written, with junk, and with junk and CRLF line ends, against
/// sha256sum on its own file altered alike: with every option set on the junk version (where
/// the options matter most), with a few on the others.
fn compare_writer(s: &Scenario, written: &Written) {
    let w = &written.writer;
    let name = w.command.join(" ");
    let (sums, reference) = (&written.sums, &written.reference);
    for options in OPTION_SETS {
        let what = format!("`{name}` file with junk lines, -c {options:?}");
        s.compare(&what, w, &with_junk(reference), &with_junk(sums), options);
    }
    for options in [
        &[][..],
        &["--warn"],
        &["--strict", "--quiet"],
        &["--status"],
    ] {
        let what = format!("`{name}` file, -c {options:?}");
        s.compare(&what, w, reference, sums, options);
        let what = format!("`{name}` file with junk and CRLF, -c {options:?}");
        let (ours, theirs) = (crlf(&with_junk(sums)), crlf(&with_junk(reference)));
        s.compare(&what, w, &theirs, &ours, options);
    }
}

// ---------------------------------------------------------------------------------------------
// coreutils reads what mtsum writes
// ---------------------------------------------------------------------------------------------

#[test]
fn sha256sum_accepts_what_mtsum_writes() {
    const TEST: &str = "sha256sum_accepts_what_mtsum_writes";
    if let Some(why) = coreutils_missing() {
        return skip(TEST, &why);
    }
    let prefix = match unprivileged() {
        Ok(prefix) => prefix,
        Err(why) => return skip(TEST, &why),
    };
    let dir = open_tempdir();
    for name in NAMES {
        put(dir.path(), name, &content(name));
    }
    let names: Vec<OsString> = NAMES.iter().map(|n| os(n)).collect();
    let tools = [
        ("md5sum", "md5"),
        ("sha1sum", "sha1"),
        ("sha224sum", "sha224"),
        ("sha256sum", "sha256"),
        ("sha384sum", "sha384"),
        ("sha512sum", "sha512"),
    ];
    // Sum files of every tool and format, written by the tool and by mtsum.
    let mut files = Vec::new();
    for (tool, alg) in tools {
        for tag in [&[][..], &["--tag"]] {
            let mut theirs = strs(&[tool]);
            theirs.extend(strs(tag));
            theirs.extend(names.iter().cloned());
            let theirs = run_in(dir.path(), &[], &theirs, b"");
            let mut ours = strs(&["-t", "plain", "-a", alg]);
            ours.extend(strs(tag));
            ours.extend(names.iter().cloned());
            let ours = mtsum_in(dir.path(), &ours, b"");
            assert_eq!((theirs.code, ours.code), (Some(0), Some(0)));
            assert_eq!(
                lines(&ours.stdout),
                lines(&theirs.stdout),
                "mtsum -t plain -a {alg} {tag:?} writes what {tool} {tag:?} writes"
            );
            let file = format!("{tool}{}.sums", tag.join(""));
            put(dir.path(), file.as_bytes(), &ours.stdout);
            files.push((tool, file, theirs.stdout));
        }
    }
    fs::write(dir.path().join("changed"), b"after!").unwrap();
    fs::remove_file(dir.path().join("missing")).unwrap();
    set_mode(&dir.path().join("unreadable"), 0o000);
    fs::remove_file(dir.path().join("adir")).unwrap();
    fs::create_dir(dir.path().join("adir")).unwrap();
    for (tool, file, their_sums) in files {
        let ours = run_in(dir.path(), prefix, &strs(&[tool, "-c", &file]), b"");
        put(dir.path(), b"theirs.sums", &their_sums);
        let theirs = run_in(dir.path(), prefix, &strs(&[tool, "-c", "theirs.sums"]), b"");
        let warnings = replace(
            SHA256SUM_WARNINGS,
            b"sha256sum: ",
            format!("{tool}: ").as_bytes(),
        );
        let what = format!("{tool} -c {file}");
        assert_eq!(lines(&ours.stdout), lines(SHA256SUM_VERDICTS), "{what}");
        assert_eq!(lines(&ours.stderr), lines(&warnings), "{what}");
        assert_eq!(ours.code, Some(1), "{what}");
        assert_eq!(lines(&theirs.stdout), lines(&ours.stdout), "{what}");
        assert_eq!(lines(&theirs.stderr), lines(&ours.stderr), "{what}");
        assert_eq!(theirs.code, ours.code, "{what}");
    }
}

// ---------------------------------------------------------------------------------------------
// mtsum reads what the others write, and says what sha256sum says
// ---------------------------------------------------------------------------------------------

/// The scenario with sums by `writers`, or `None` after saying why the test is skipped.
fn scenario(test: &str, writers: &[Writer]) -> Option<Scenario> {
    match Scenario::new(writers) {
        Ok(s) if s.written.is_empty() => {
            skip(test, "none of the tools is installed");
            None
        }
        Ok(s) => Some(s),
        Err(why) => {
            skip(test, &why);
            None
        }
    }
}

#[test]
fn check_matches_sha256sum_with_every_option() {
    let Some(s) = scenario("check_matches_sha256sum", &[SHA256SUM, SHA256SUM_TAG]) else {
        return;
    };
    // The reference says what the scenario is meant to say.
    let plain = &s.written[0];
    let out = s.reference("sha256sum", &strs(&[CHECK_FILE]), &plain.reference, b"");
    assert_eq!(lines(&out.stdout), lines(SHA256SUM_VERDICTS));
    assert_eq!(lines(&out.stderr), lines(SHA256SUM_WARNINGS));
    assert_eq!(out.code, Some(1));
    for written in &s.written {
        compare_writer(&s, written);
    }
}

#[test]
fn check_matches_sha256sum_on_files_of_md5sum_sha1sum_sha224sum_sha384sum_sha512sum() {
    let test = "check_matches_sha256sum_on_files_of_other_coreutils";
    let Some(s) = scenario(test, &OTHER_COREUTILS) else {
        return;
    };
    for written in &s.written {
        compare_writer(&s, written);
    }
}

#[test]
fn check_matches_sha256sum_on_files_of_b3sum() {
    let Some(s) = scenario("check_matches_sha256sum_on_files_of_b3sum", &[B3SUM]) else {
        return;
    };
    for written in &s.written {
        compare_writer(&s, written);
    }
}

#[test]
fn check_matches_sha256sum_on_files_of_xxhsum() {
    let Some(s) = scenario("check_matches_sha256sum_on_files_of_xxhsum", &XXHSUM) else {
        return;
    };
    for written in &s.written {
        compare_writer(&s, written);
    }
}

#[test]
fn check_reads_sum_files_from_standard_input_as_sha256sum_does() {
    let Some(s) = scenario("check_reads_sum_files_from_standard_input", &[SHA256SUM]) else {
        return;
    };
    let sums = with_junk(&s.written[0].sums);
    let invocations: [&[&str]; 5] = [
        &["-"],
        &[],
        &[CHECK_FILE, "-"],
        &["-", CHECK_FILE],
        &["-", "-"],
    ];
    for options in [
        &[][..],
        &["--warn"],
        &["--quiet"],
        &["--status"],
        &["--strict"],
    ] {
        for files in invocations {
            let args = strs(&[options, files].concat());
            let what = format!("-c {args:?} < sums");
            s.compare_args(&what, &SHA256SUM, &sums, &sums, &args, &sums);
            let what = format!("-c {args:?} < CRLF sums");
            s.compare_args(&what, &SHA256SUM, &sums, &sums, &args, &crlf(&sums));
        }
    }
}

#[test]
fn lines_naming_standard_input_read_it_once_as_sha256sum_does() {
    let Some(s) = scenario("lines_naming_standard_input", &[SHA256SUM]) else {
        return;
    };
    // Big enough that two readers of standard input would split it between them.
    let data = noise(8 << 20, 8);
    let good = sha256_hex(b"hello\n");
    let dashes = format!(
        "{}  -\n{}  -\n{}  -\n{good}  good\n",
        sha256_hex(&data),
        sha256_hex(b""),
        sha256_hex(&data)
    );
    // A sum file on standard input, long, naming `-` itself (which it cannot check).
    let mut stdin_sums = b"# a comment line of some length to make this file big\n".repeat(150_000);
    stdin_sums.extend_from_slice(format!("{good}  good\n{good}  -\n").as_bytes());
    let cases: [(&[&str], &[u8]); 4] = [
        (&[CHECK_FILE], &data),
        (&[CHECK_FILE, "-"], &data),
        (&["-", CHECK_FILE], &stdin_sums),
        (&[CHECK_FILE, "-", CHECK_FILE], &stdin_sums),
    ];
    for round in 0..3 {
        for (files, stdin) in cases {
            for options in [&[][..], &["--warn"]] {
                let args = strs(&[options, files].concat());
                let what = format!("round {round}: -c {args:?}");
                let dashes = dashes.as_bytes();
                s.compare_args(&what, &SHA256SUM, dashes, dashes, &args, stdin);
            }
        }
    }
}

#[test]
fn several_sum_files_are_summarised_one_by_one_as_sha256sum_does() {
    let Some(s) = scenario("several_sum_files", &[SHA256SUM]) else {
        return;
    };
    let good = sha256_hex(b"hello\n");
    let dir = s.path();
    put(dir, b"no proper lines", b"just junk\n# and a comment\n");
    put(dir, b"empty.sums", b"");
    put(
        dir,
        b"only-missing.sums",
        format!("{good}  missing\n").as_bytes(),
    );
    put(dir, b"one blank.sums", format!("{good} good\n").as_bytes());
    set_mode(&put(dir, b"locked.sums", b""), 0o000);
    let stdin = format!("{good}  good\n{good}  changed\nnonsense\n");
    let runs: [&[&str]; 4] = [
        &[
            CHECK_FILE,
            "no proper lines",
            "missing.sums",
            "adir",
            "locked.sums",
            "-",
            "only-missing.sums",
            "empty.sums",
            CHECK_FILE,
        ],
        // coreutils holds all the files of a run to the separator of the first untagged line.
        &["one blank.sums", CHECK_FILE],
        &[CHECK_FILE, "one blank.sums"],
        &["only-missing.sums", "-"],
    ];
    let sums = with_junk(&s.written[0].sums);
    for files in runs {
        for options in OPTION_SETS {
            let args = strs(&[options, files].concat());
            let what = format!("-c {args:?}");
            s.compare_args(&what, &SHA256SUM, &sums, &sums, &args, stdin.as_bytes());
        }
    }
}

#[test]
fn odd_lines_are_read_as_sha256sum_reads_them() {
    let Some(s) = scenario("odd_lines_are_read_as_sha256sum_reads_them", &[SHA256SUM]) else {
        return;
    };
    put(s.path(), b"go) = od", b"od");
    let g = sha256_hex(b"hello\n");
    let upper = g.to_ascii_uppercase();
    let files = [
        format!(
            "{g} *good\n  {g}  good\n\t{g}  good\nSHA256(good)= {g}\nSHA256 (good)={g}\n\
             SHA256  (good) = {g}\n{g}  \n{g}\n{g}  good extra\n{upper}  good\n"
        ),
        format!("{g} good\n{g}  good\n{g} *good\n{g}\tgood\n"),
        format!("{g} good\nSHA256 (good) = {g}\n{g}  good\n"),
        format!("\\{g}  g\\ood\n\\{g}  good\\\n{g}  \\good\n\\{g}  \\\\x\n"),
        format!("SHA256 (go) = od) = {g}\n\\SHA256 (go) = od) = {g}\n"),
        format!(
            "SHA256 () = {g}\n\\\n\\{g}\n{g}0  good\nSHA256 (good) = \nSHA256 (good) {g}\n\
             SHA256 (good = {g}\n(good) = {g}\n {g}  good\n{g}\t good\n{g} \tgood\n{g}good\n"
        ),
        format!("{g}   good\n{g}  good \n"),
    ];
    for sums in &files {
        for options in [&[][..], &["--warn"], &["--strict"], &["--ignore-missing"]] {
            let what = format!("-c {options:?} on {sums:?}");
            let sums = sums.as_bytes();
            s.compare(&what, &SHA256SUM, sums, sums, options);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------------------------

/// How a verdict names a file: escaped behind a `\` when it holds a newline (coreutils 9.1).
fn verdict(name: &[u8], verdict: &str) -> Vec<u8> {
    let mut line = if name.contains(&b'\n') {
        [
            b"\\".as_slice(),
            &replace(&replace(name, b"\\", b"\\\\"), b"\n", b"\\n"),
        ]
        .concat()
    } else {
        name.to_vec()
    };
    line.extend_from_slice(format!(": {verdict}\n").as_bytes());
    line
}

#[test]
fn mtsum_round_trip_is_clean_and_finds_one_corrupted_byte() {
    let dir = open_tempdir();
    let sizes = [
        0usize,
        1,
        63,
        64,
        65,
        1023,
        1024,
        1025,
        4095,
        4096,
        4097,
        100_000,
        (1 << 20) + 3,
    ];
    let mut names: Vec<Vec<u8>> = Vec::new();
    for (i, size) in sizes.into_iter().enumerate() {
        let name = format!("f{size}").into_bytes();
        put(dir.path(), &name, &noise(size, i as u64));
        names.push(name);
    }
    for (i, name) in [&b"a b"[..], b"new\nline", b"back\\slash", b"\xff\xfe"]
        .into_iter()
        .enumerate()
    {
        put(dir.path(), name, &noise(5000, 100 + i as u64));
        names.push(name.to_vec());
    }
    let args: Vec<OsString> = names.iter().map(|n| os(n)).collect();
    // How sums are written, and what -c needs to read them back (tagged lines need nothing).
    let configs: [(&[&str], &[&str]); 12] = [
        (&[], &[]),
        (&["--tag"], &[]),
        (&["-t", "rfc6962", "-l", "4K", "--tag"], &[]),
        (&["-t", "merkle", "--tag"], &[]),
        (&["-t", "merkle", "-l", "64", "-a", "blake3", "--tag"], &[]),
        (&["-t", "rfc6962", "-l", "1K", "-a", "xxh3", "--tag"], &[]),
        (&["-t", "mtsum", "-a", "sha512", "--tag"], &[]),
        (&["-t", "plain", "-a", "xxh128", "--tag"], &[]),
        (&["-t", "plain", "-a", "md5"], &["-t", "plain"]),
        (&["-a", "md5"], &["-a", "md5"]),
        (
            &["-t", "rfc6962", "-l", "4K"],
            &["-t", "rfc6962", "-l", "4K"],
        ),
        (
            &["-t", "merkle", "-l", "1K", "-a", "sha1"],
            &["-t", "merkle", "-l", "1K"],
        ),
    ];
    let all_ok: Vec<u8> = names.iter().flat_map(|n| verdict(n, "OK")).collect();
    for (i, (write, read)) in configs.into_iter().enumerate() {
        let what = format!("mtsum {write:?} | mtsum -c {read:?}");
        let written = mtsum_in(dir.path(), &[strs(write), args.clone()].concat(), b"");
        assert_eq!(written.code, Some(0), "{what}: {}", written.stderr());
        put(dir.path(), b"sums", &written.stdout);
        let check = [strs(read), strs(&["-c", "sums"])].concat();
        let out = mtsum_in(dir.path(), &check, b"");
        assert_eq!(lines(&out.stdout), lines(&all_ok), "{what}");
        assert_eq!(out.stderr(), "", "{what}");
        assert_eq!(out.code, Some(0), "{what}");

        // One byte changed, in a different file and place each time.
        let victim = &names[(i * 5 + 3) % names.len()];
        let victim = if victim == b"f0" { &names[1] } else { victim };
        let path = dir.path().join(OsStr::from_bytes(victim));
        let original = fs::read(&path).unwrap();
        let mut corrupt = original.clone();
        let at = (i * 7919) % corrupt.len();
        corrupt[at] ^= 0x20;
        fs::write(&path, &corrupt).unwrap();
        let out = mtsum_in(dir.path(), &check, b"");
        fs::write(&path, &original).unwrap();
        let expected: Vec<u8> = names
            .iter()
            .flat_map(|n| verdict(n, if n == victim { "FAILED" } else { "OK" }))
            .collect();
        let what = format!("{what}, byte {at} of {:?} changed", victim.escape_ascii());
        assert_eq!(lines(&out.stdout), lines(&expected), "{what}");
        assert_eq!(
            out.stderr(),
            "mtsum: WARNING: 1 computed checksum did NOT match\n",
            "{what}"
        );
        assert_eq!(out.code, Some(1), "{what}");
    }
}

#[test]
fn ten_thousand_files_from_mtsum_r_check_clean_and_any_corrupted_byte_is_found() {
    let dir = open_tempdir();
    let tree = dir.path().join("tree");
    let mut files = Vec::new();
    for d in 0..100 {
        let sub = tree.join(format!("d{d:02}"));
        fs::create_dir_all(&sub).unwrap();
        for f in 0..100 {
            let path = sub.join(format!("f{f:02}"));
            let bytes = noise(1 + (d * 100 + f) % 200, (d * 100 + f) as u64);
            fs::write(&path, bytes).unwrap();
            files.push(format!("tree/d{d:02}/f{f:02}"));
        }
    }
    let written = mtsum_in(dir.path(), &strs(&["-r", "tree"]), b"");
    assert_eq!(written.code, Some(0), "{}", written.stderr());
    put(dir.path(), b"tree.sums", &written.stdout);
    assert_eq!(
        written.stdout.iter().filter(|&&b| b == b'\n').count(),
        10_000
    );

    let out = mtsum_in(dir.path(), &strs(&["-c", "tree.sums"]), b"");
    let expected: String = files.iter().map(|f| format!("{f}: OK\n")).collect();
    assert!(
        out.stdout == expected.as_bytes(),
        "not every file checked OK"
    );
    assert_eq!((out.stderr(), out.code), (String::new(), Some(0)));

    // Any one byte: a few files and places picked by a fixed pseudo-random sequence.
    for (round, pick) in noise(4, 10_000).into_iter().enumerate() {
        let index = (usize::from(pick) * 9973 + round * 4409) % files.len();
        let path = dir.path().join(&files[index]);
        let original = fs::read(&path).unwrap();
        let mut corrupt = original.clone();
        let at = (round * 31 + usize::from(pick)) % corrupt.len();
        corrupt[at] ^= 1 << (round % 8);
        fs::write(&path, &corrupt).unwrap();
        let out = mtsum_in(dir.path(), &strs(&["-c", "--quiet", "tree.sums"]), b"");
        fs::write(&path, &original).unwrap();
        let what = format!("byte {at} of {} changed", files[index]);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{}: FAILED\n", files[index]),
            "{what}"
        );
        assert_eq!(
            out.stderr(),
            "mtsum: WARNING: 1 computed checksum did NOT match\n",
            "{what}"
        );
        assert_eq!(out.code, Some(1), "{what}");
    }
}

// ---------------------------------------------------------------------------------------------
// Malformed input
// ---------------------------------------------------------------------------------------------

/// Every proper prefix of `line`, one per line.
fn truncations(line: &str) -> Vec<u8> {
    (1..line.len())
        .flat_map(|n| [line.as_bytes()[..n].to_vec(), b"\n".to_vec()].concat())
        .collect()
}

#[test]
fn malformed_sum_files_never_panic() {
    let dir = open_tempdir();
    put(dir.path(), b"good", b"hello\n");
    let g = sha256_hex(b"hello\n");
    let rfc = "4fa1e0cab8a63ec8a37c9ba3f0b1bde0f4d00fcbb4dbb8d5bb1a1bba1bb1c0aa";
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "truncated lines",
            [
                truncations(&format!("SHA256 (good) = {g}")),
                truncations(&format!("\\{g}  new\\nline")),
                truncations(&format!("RFC6962-SHA256-4K (good) = {rfc}")),
                truncations(&format!("XXH3_LE (good) = {}", &g[..16])),
            ]
            .concat(),
        ),
        (
            "wrong digest lengths",
            format!(
                "SHA256 (good) = abcd\nSHA256 (good) = {g}0\nMD5 (good) = {g}\n\
                 {}  good\nabc  good\nXXH3 (good) = {g}\nXXH3_{g}  good\n\
                 MTSUM-SHA256 (good) = {}\n",
                &g[..63],
                &g[..32]
            )
            .into_bytes(),
        ),
        (
            "unknown tags",
            format!(
                "BLAKE2b (good) = {g}\nXXH64 (good) = {}\nMTSUM-FOO (good) = {g}\n\
                 PLAIN-SHA256 (good) = {g}\nRFC6962-SHA256-0 (good) = {g}\n\
                 MERKLE-SHA256-99999999999999999999999G (good) = {g}\n\
                 MERKLE-SHA256 (good) = {g}\nRFC6962--4K (good) = {g}\n\
                 \u{e9}\u{e9} (good) = {g}\nSHA256\u{0} (good) = {g}\n(good) = {g}\n",
                &g[..16]
            )
            .into_bytes(),
        ),
        ("binary garbage", noise(1 << 20, 77)),
        (
            "binary garbage between newlines",
            noise(1 << 16, 78)
                .chunks(37)
                .flat_map(|c| [c, b"\n"].concat())
                .collect(),
        ),
        (
            "NUL bytes and odd escapes",
            format!("{g}  go\0od\n\0\0\0\n\\{g}  a\\tb\n\\\n\\\\\n\\{g}  x\\\n").into_bytes(),
        ),
        ("only a newline", b"\n".to_vec()),
        ("only CR", b"\r".to_vec()),
        ("nothing", Vec::new()),
    ];
    for (what, sums) in &cases {
        put(dir.path(), b"bad.sums", sums);
        for options in [
            &[][..],
            &["--warn", "--strict"],
            &["-t", "plain", "-a", "md5"],
        ] {
            let args = [strs(options), strs(&["-c", "bad.sums"])].concat();
            let out = mtsum_in(dir.path(), &args, b"");
            assert_eq!(out.code, Some(1), "{what}, {options:?}: {}", out.stderr());
            assert!(!out.stderr.is_empty(), "{what}, {options:?}: no warning");
        }
    }

    // A line of 100 MB (hex, as if a digest), then a good line: one improper line.
    let mut huge = vec![b'a'; 100_000_000];
    huge.extend_from_slice(format!("  good\n{g}  good\n").as_bytes());
    put(dir.path(), b"huge.sums", &huge);
    drop(huge);
    let args = strs(&["-t", "plain", "-c", "--warn", "huge.sums"]);
    let out = mtsum_in(dir.path(), &args, b"");
    assert_eq!(lines(&out.stdout), lines(b"good: OK\n"));
    assert_eq!(
        out.stderr(),
        "mtsum: huge.sums: 1: improperly formatted SHA256 checksum line\n\
         mtsum: WARNING: 1 line is improperly formatted\n"
    );
    assert_eq!(out.code, Some(0));
    let args = strs(&["-t", "plain", "-c", "--strict", "huge.sums"]);
    let out = mtsum_in(dir.path(), &args, b"");
    assert_eq!(out.code, Some(1), "--strict fails on the improper line");
}

/// Sum files made of the pieces checksum lines are made of, and some noise.
fn sum_file_pieces() -> impl Strategy<Value = Vec<u8>> {
    let words: Vec<Vec<u8>> = [
        "SHA256",
        "MD5",
        "XXH3_LE",
        "XXH3_",
        "MTSUM-SHA256",
        "RFC6962-SHA256-4K",
        "MERKLE-BLAKE3-1K",
        "BLAKE2b",
        " (",
        "(",
        ")",
        " = ",
        "=",
        "  ",
        " *",
        " ",
        "\t",
        "\\",
        "\\n",
        "\n",
        "\r\n",
        "#",
        "good",
        "missing",
        "-",
        "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
        "b1946ac92492d2347c6235b4d2611184",
        "5891b5b5",
    ]
    .iter()
    .map(|w| w.as_bytes().to_vec())
    .collect();
    let piece = prop_oneof![
        4 => proptest::sample::select(words),
        1 => proptest::collection::vec(any::<u8>(), 0..4),
    ];
    proptest::collection::vec(piece, 0..60).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn check_of_arbitrary_sum_files_never_panics(sums in sum_file_pieces(), strict in any::<bool>()) {
        let dir = open_tempdir();
        put(dir.path(), b"good", b"hello\n");
        put(dir.path(), b"s", &sums);
        let mut args = strs(&["-t", "plain", "-c", "--warn", "s"]);
        if strict {
            args.push("--strict".into());
        }
        // Standard input is empty: a line naming `-` reads nothing.
        let out = mtsum_in(dir.path(), &args, b"");
        prop_assert!(matches!(out.code, Some(0 | 1)), "{:?}", out);
        for line in out.stdout.split_inclusive(|&b| b == b'\n') {
            let verdict = [&b": OK\n"[..], b": FAILED\n", b": FAILED open or read\n"];
            prop_assert!(verdict.iter().any(|v| line.ends_with(v)), "{:?}", lines(line));
        }
    }
}

#[test]
fn messages_quote_odd_names_as_sha256sum_does() {
    if let Some(why) = coreutils_missing() {
        return skip("messages_quote_odd_names_as_sha256sum_does", &why);
    }
    let dir = open_tempdir();
    let names: [&[u8]; 14] = [
        b"\tgood",
        b"good\t",
        b"\t",
        b"\xff",
        b"\xffa",
        b"a\xff",
        b"\n\n",
        b"a\n\nb",
        b"x\ny",
        b"it's\n",
        b"\t'x",
        b"a\x01\x02b",
        b"\x7f",
        b"'\x1b[0m'",
    ];
    let g = sha256_hex(b"hello\n");
    let sums: Vec<u8> = names
        .iter()
        .flat_map(|n| {
            let escaped = n.contains(&b'\n');
            let name = replace(&replace(n, b"\\", b"\\\\"), b"\n", b"\\n");
            let mark: &[u8] = if escaped { b"\\" } else { b"" };
            [mark, g.as_bytes(), b"  ", &name, b"\n"].concat()
        })
        .collect();
    put(dir.path(), b"sums", &sums);
    let theirs = run_in(dir.path(), &[], &strs(&["sha256sum", "-c", "sums"]), b"");
    let ours = mtsum_in(dir.path(), &strs(&["-t", "plain", "-c", "sums"]), b"");
    assert_same(
        "names that need quoting",
        "sha256sum",
        &theirs,
        "SHA256",
        &ours,
    );
}

// ---------------------------------------------------------------------------------------------
// The command line as coreutils reads it
// ---------------------------------------------------------------------------------------------

#[test]
fn repeated_options_are_accepted_as_in_coreutils() {
    let dir = open_tempdir();
    put(dir.path(), b"good", b"hello\n");
    let sums = format!("{}  good\n", sha256_hex(b"hello\n"));
    put(dir.path(), b"sums", sums.as_bytes());
    for options in [
        &["-c", "-c"][..],
        &["-c", "--quiet", "--quiet"],
        &["-c", "--status", "--status"],
        &["-c", "-w", "--warn"],
        &["-c", "--strict", "--strict"],
        &["-c", "--ignore-missing", "--ignore-missing"],
        &["-c", "--quiet", "--status", "--quiet"],
    ] {
        let args = [strs(&["-t", "plain"]), strs(options), strs(&["sums"])].concat();
        let out = mtsum_in(dir.path(), &args, b"");
        assert_eq!(out.code, Some(0), "{options:?}: {}", out.stderr());
    }
}

#[test]
fn long_options_may_be_abbreviated_as_in_coreutils() {
    let dir = open_tempdir();
    put(dir.path(), b"good", b"hello\n");
    let sums = format!("{}  good\n", sha256_hex(b"hello\n"));
    put(dir.path(), b"sums", sums.as_bytes());
    for (option, stdout) in [
        ("--stat", ""),
        ("--quie", ""),
        ("--ignore", "good: OK\n"),
        ("--str", "good: OK\n"),
        ("--wa", "good: OK\n"),
    ] {
        let args = strs(&["-t", "plain", "-c", option, "sums"]);
        let out = mtsum_in(dir.path(), &args, b"");
        assert_eq!(out.code, Some(0), "{option}: {}", out.stderr());
        assert_eq!(String::from_utf8_lossy(&out.stdout), stdout, "{option}");
    }
}

#[test]
fn one_untagged_line_of_another_layout_gets_the_hint_in_the_singular() {
    let dir = open_tempdir();
    put(dir.path(), b"a", b"a\n");
    put(
        dir.path(),
        b"sums",
        (sha256_hex(b"a\n") + "  a\n").as_bytes(),
    );
    let out = mtsum_in(dir.path(), &strs(&["-c", "sums"]), b"");
    assert_eq!(out.code, Some(1));
    let hint = "mtsum: note: untagged line was checked with the mtsum layout;";
    assert!(out.stderr().contains(hint), "{}", out.stderr());
}

#[test]
fn warn_names_an_untagged_line_with_the_layouts_default_algorithm() {
    // S3's default algorithm is MD5 (the ETag), not SHA-256.
    let dir = open_tempdir();
    put(dir.path(), b"sums", b"junk line\n");
    let out = mtsum_in(
        dir.path(),
        &strs(&["-c", "-t", "s3", "--warn", "sums"]),
        b"",
    );
    assert_eq!(out.code, Some(1));
    let warning = "mtsum: sums: 1: improperly formatted S3-MD5-8M checksum line\n";
    assert!(out.stderr().starts_with(warning), "{}", out.stderr());
}

#[test]
fn sums_of_another_layout_get_a_hint_about_the_layout() {
    let dir = open_tempdir();
    put(dir.path(), b"a", b"a\n");
    put(dir.path(), b"b", b"b\n");
    // What `sha256sum a b` writes: plain digests, untagged.
    let sums = [sha256_hex(b"a\n") + "  a\n", sha256_hex(b"b\n") + "  b\n"].concat();
    put(dir.path(), b"sums", sums.as_bytes());
    let hint = "mtsum: note: untagged lines were checked with the mtsum layout";

    let default = mtsum_in(dir.path(), &strs(&["-c", "sums"]), b"");
    assert_eq!(default.code, Some(1));
    assert!(default.stderr().contains(hint), "{}", default.stderr());

    let plain = mtsum_in(dir.path(), &strs(&["-t", "plain", "-c", "sums"]), b"");
    assert_eq!(plain.code, Some(0));
    assert!(!plain.stderr().contains("note:"), "{}", plain.stderr());

    // One corrupted file among good ones is corruption, not a layout mix-up.
    let own = mtsum_in(dir.path(), &strs(&["a", "b"]), b"");
    put(dir.path(), b"own", own.stdout.as_slice());
    put(dir.path(), b"b", b"B\n");
    let corrupt = mtsum_in(dir.path(), &strs(&["-c", "own"]), b"");
    assert_eq!(corrupt.code, Some(1));
    assert!(!corrupt.stderr().contains("note:"), "{}", corrupt.stderr());
}

#[test]
fn s3_values_checked_without_a_layout_get_a_hint_about_s3_not_plain() {
    let dir = open_tempdir();
    put(dir.path(), b"f", &noise(6 << 20, 5));
    // What an S3 listing gives: the ETag of a multipart upload, untagged.
    let args = strs(&["-t", "s3", "--part-size", "5M", "f"]);
    let sums = mtsum_in(dir.path(), &args, b"").stdout;
    assert!(String::from_utf8_lossy(&sums).contains("-2  f"), "{sums:?}");
    put(dir.path(), b"sums", &sums);
    let out = mtsum_in(dir.path(), &strs(&["-c", "sums"]), b"");
    assert_eq!(out.code, Some(1));
    let hint = "mtsum: note: untagged line was checked with the mtsum layout; use -t s3 for S3 \
                values (a part count after a dash), with --part-size auto if their part size \
                is not known\n";
    assert!(out.stderr().ends_with(hint), "{}", out.stderr());
    let auto = strs(&["-c", "-t", "s3", "--part-size", "auto", "sums"]);
    assert_eq!(
        mtsum_in(dir.path(), &auto, b"").code,
        Some(0),
        "as the hint says"
    );
}

// ---------------------------------------------------------------------------------------------
// --json for scripts
// ---------------------------------------------------------------------------------------------

/// Every line of `stdout`, each newline-terminated and parsed as one JSON object.
fn json_objects(stdout: &[u8]) -> Vec<serde_json::Value> {
    assert!(
        stdout.is_empty() || stdout.ends_with(b"\n"),
        "the last JSON line ends with a newline: {:?}",
        lines(stdout)
    );
    stdout
        .split_inclusive(|&b| b == b'\n')
        .map(|line| {
            let value: serde_json::Value =
                serde_json::from_slice(line).unwrap_or_else(|e| panic!("{e}: {:?}", lines(line)));
            assert!(value.is_object(), "{value}");
            value
        })
        .collect()
}

/// A directory with a file that checks out, one that changed, one that is gone, a directory
/// where a file was, and a sum file `sums` listing them untagged (`-t plain`), with a junk
/// line between.
fn json_scenario() -> TempDir {
    let dir = open_tempdir();
    let p = dir.path();
    put(p, b"good", b"hello\n");
    put(p, b"changed", b"after\n");
    fs::create_dir(p.join("adir")).expect("mkdir");
    let line = |content: &[u8], name: &str| format!("{}  {name}\n", sha256_hex(content));
    let sums = [
        line(b"hello\n", "good"),
        line(b"before\n", "changed"),
        "junk\n".to_string(),
        line(b"gone\n", "missing"),
        line(b"dir\n", "adir"),
    ]
    .concat();
    put(p, b"sums", sums.as_bytes());
    dir
}

#[test]
fn json_check_gives_one_object_per_line_in_line_order_then_a_summary() {
    let dir = json_scenario();
    let out = mtsum_in(
        dir.path(),
        &strs(&["-t", "plain", "-c", "--json", "sums"]),
        b"",
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr());
    let objects = json_objects(&out.stdout);
    let digest = |bytes: &[u8]| serde_json::Value::from(sha256_hex(bytes));
    let plain = |name: &str, status: &str, expected: &[u8], line: u64| {
        serde_json::json!({
            "path": name, "status": status, "layout": "plain", "leaf_size": null,
            "algorithm": "sha256", "expected": digest(expected), "sumfile": "sums", "line": line,
        })
    };
    // Times vary: every other field is compared whole.
    let without_seconds = |mut v: serde_json::Value| {
        let seconds = v.as_object_mut().and_then(|o| o.remove("seconds"));
        let hashed = v.get("digest").is_some();
        assert_eq!(seconds.is_some_and(|s| s.is_f64()), hashed, "{v}");
        v
    };
    let mut good = plain("good", "ok", b"hello\n", 1);
    good["digest"] = digest(b"hello\n");
    good["size"] = 6.into();
    let mut changed = plain("changed", "failed", b"before\n", 2);
    changed["digest"] = digest(b"after\n");
    changed["size"] = 6.into();
    let improper = serde_json::json!({
        "status": "improper", "sumfile": "sums", "line": 3,
        "error": "improperly formatted SHA256 checksum line",
    });
    let mut missing = plain("missing", "missing", b"gone\n", 4);
    missing["error"] = "No such file or directory".into();
    let mut adir = plain("adir", "unreadable", b"dir\n", 5);
    adir["error"] = "Is a directory".into();
    let summary = serde_json::json!({"summary": {
        "sumfile": "sums", "ok": 1, "failed": 1, "missing": 1, "unreadable": 1,
        "improper": 1, "passed": false,
    }});
    let objects: Vec<_> = objects.into_iter().map(without_seconds).collect();
    assert_eq!(
        objects,
        [good, changed, improper, missing, adir, summary],
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn json_check_changes_stdout_only_and_exits_as_the_text_does() {
    let dir = json_scenario();
    let p = dir.path();
    put(
        p,
        b"clean",
        format!("{}  good\n", sha256_hex(b"hello\n")).as_bytes(),
    );
    let junk = format!("{}  good\njunk\n", sha256_hex(b"hello\n"));
    put(p, b"junk", junk.as_bytes());
    put(
        p,
        b"gone",
        format!("{}  missing\n", sha256_hex(b"x")).as_bytes(),
    );
    put(p, b"nothing", b"junk\n");
    for sums in [
        &["sums"][..],
        &["clean"],
        &["junk"],
        &["gone"],
        &["nothing"],
        &["no such sums"],
        &["clean", "gone"],
        &["-"],
    ] {
        for options in [
            &[][..],
            &["--quiet"],
            &["--warn"],
            &["--strict"],
            &["--ignore-missing"],
            &["--strict", "--ignore-missing", "--warn"],
        ] {
            let args = [strs(&["-t", "plain", "-c"]), strs(options), strs(sums)].concat();
            let text = mtsum_in(p, &args, b"");
            let json = mtsum_in(p, &[args, strs(&["--json"])].concat(), b"");
            let what = format!("{options:?} {sums:?}");
            assert_eq!(json.code, text.code, "{what}: {}", json.stderr());
            assert_eq!(lines(&json.stderr), lines(&text.stderr), "{what}");
            let objects = json_objects(&json.stdout);
            let summaries: Vec<_> = objects.iter().filter_map(|o| o.get("summary")).collect();
            assert_eq!(
                summaries.len(),
                sums.len(),
                "{what}: one summary per sum file"
            );
            let passed = summaries.iter().all(|s| s["passed"] == true);
            assert_eq!(passed, text.code == Some(0), "{what}: {summaries:?}");
        }
    }
}

#[test]
fn json_check_keeps_every_object_with_quiet_and_ignore_missing() {
    let dir = json_scenario();
    let p = dir.path();
    let statuses = |options: &[&str]| {
        let args = [
            strs(&["-t", "plain", "-c", "--json"]),
            strs(options),
            strs(&["sums"]),
        ];
        let out = mtsum_in(p, &args.concat(), b"");
        let objects = json_objects(&out.stdout);
        let statuses: Vec<String> = objects
            .iter()
            .map(|o| o["status"].as_str().unwrap_or("summary").to_string())
            .collect();
        (
            out.code,
            statuses,
            objects.last().cloned().unwrap_or_default(),
        )
    };
    let every = [
        "ok",
        "failed",
        "improper",
        "missing",
        "unreadable",
        "summary",
    ];
    let (code, all, _) = statuses(&[]);
    assert_eq!(code, Some(1));
    assert_eq!(all, every);
    let (_, quiet, _) = statuses(&["--quiet"]);
    assert_eq!(
        quiet, every,
        "--quiet keeps the ok objects, as audit --json does"
    );
    let (_, ignoring, summary) = statuses(&["--ignore-missing"]);
    assert_eq!(ignoring, every, "--ignore-missing keeps the missing object");
    assert_eq!(summary["summary"]["missing"], 1, "{summary}");

    // Only the missing file wrong: --ignore-missing passes it, as in the text.
    put(
        p,
        b"gone",
        format!(
            "{}  missing\n{}  good\n",
            sha256_hex(b"x"),
            sha256_hex(b"hello\n")
        )
        .as_bytes(),
    );
    for (options, code, passed) in [(&[][..], 1, false), (&["--ignore-missing"], 0, true)] {
        let args = [
            strs(&["-t", "plain", "-c", "--json"]),
            strs(options),
            strs(&["gone"]),
        ];
        let out = mtsum_in(p, &args.concat(), b"");
        assert_eq!(out.code, Some(code), "{options:?}: {}", out.stderr());
        let objects = json_objects(&out.stdout);
        assert_eq!(objects[0]["status"], "missing");
        assert_eq!(objects[2]["summary"]["passed"], passed, "{options:?}");
    }
}

#[test]
fn json_check_names_that_are_not_utf8_also_as_bytes() {
    let dir = open_tempdir();
    let p = dir.path();
    put(p, b"inv\xffalid", b"hello\n");
    let mut sums = sha256_hex(b"hello\n").into_bytes();
    sums.extend_from_slice(b"  inv\xffalid\n");
    put(p, b"sums\xfe", &sums);
    let args = [
        strs(&["-t", "plain", "-c", "--json"]),
        vec![os(b"sums\xfe")],
    ]
    .concat();
    let out = mtsum_in(p, &args, b"");
    assert_eq!(out.code, Some(0), "{}", out.stderr());
    let objects = json_objects(&out.stdout);
    assert_eq!(objects[0]["status"], "ok");
    assert_eq!(objects[0]["path"], "inv\u{fffd}alid");
    assert_eq!(objects[0]["path_bytes"], serde_json::json!(b"inv\xffalid"));
    assert_eq!(objects[0]["sumfile_bytes"], serde_json::json!(b"sums\xfe"));
    assert_eq!(
        objects[1]["summary"]["sumfile_bytes"],
        serde_json::json!(b"sums\xfe")
    );
}

#[test]
fn json_check_describes_tagged_lines_of_every_layout_as_hash_mode_does() {
    let dir = open_tempdir();
    let p = dir.path();
    put(p, b"f", &noise(70_000, 7));
    let mut sums = Vec::new();
    let mut expected = Vec::new();
    for args in [
        &["-t", "plain", "-a", "blake3"][..],
        &["-t", "mtsum", "-a", "md5"],
        &["-t", "merkle", "-l", "4K"],
        &["-t", "rfc6962", "-a", "sha512", "-l", "64"],
        &["-t", "s3", "--part-size", "16M"],
        &["-t", "glacier"],
        // The digest is spelled as the line's value is, as hash mode spells it with
        // --base64: an ok line's `digest` equals its `expected`.
        &["-t", "s3", "--part-size", "16M", "--base64"],
        &["-t", "plain", "-a", "crc32c", "--base64"],
        &["-t", "merkle", "-l", "4K", "--base64"],
    ] {
        let tagged = mtsum_in(p, &[strs(args), strs(&["--tag", "f"])].concat(), b"");
        sums.extend_from_slice(&tagged.stdout);
        let hashed = mtsum_in(p, &[strs(args), strs(&["--json", "f"])].concat(), b"");
        let mut object = json_objects(&hashed.stdout).remove(0);
        object.as_object_mut().expect("an object").remove("seconds");
        expected.push(object);
    }
    put(p, b"sums", &sums);
    // Untagged lines would be read with -t plain: the tags say it all.
    let out = mtsum_in(p, &strs(&["-t", "plain", "-c", "--json", "sums"]), b"");
    assert_eq!(out.code, Some(0), "{}", out.stderr());
    let objects = json_objects(&out.stdout);
    assert_eq!(objects.len(), expected.len() + 1);
    for ((line, checked), hashed) in (1u64..).zip(&objects).zip(&expected) {
        assert_eq!(checked["status"], "ok", "{checked}");
        assert_eq!(checked["line"], line, "{checked}");
        assert_eq!(checked["expected"], hashed["digest"], "{checked}");
        for field in ["path", "size", "layout", "leaf_size", "algorithm", "digest"] {
            assert_eq!(checked[field], hashed[field], "{field}: {checked} {hashed}");
        }
    }
}

#[test]
fn json_check_says_which_part_size_matched_and_how_many_were_tried() {
    let dir = open_tempdir();
    let p = dir.path();
    // Two parts of 16 MiB; three parts are 7, 8 or 9 MiB (or MB).
    put(p, b"f", &noise(20 << 20, 3));
    let sums = mtsum_in(p, &strs(&["-t", "s3", "--part-size", "16M", "f"]), b"").stdout;
    put(p, b"sums", &sums);
    let auto = strs(&["-c", "-t", "s3", "--part-size", "auto"]);
    let text = mtsum_in(p, &[auto.clone(), strs(&["sums"])].concat(), b"");
    assert_eq!(text.stdout, b"f: OK (--part-size 16M)\n");
    let out = mtsum_in(p, &[auto.clone(), strs(&["--json", "sums"])].concat(), b"");
    assert_eq!(out.code, Some(0), "{}", out.stderr());
    let ok = &json_objects(&out.stdout)[0];
    assert_eq!(ok["status"], "ok", "{ok}");
    assert_eq!(ok["leaf_size"], 16 << 20, "the size that matched: {ok}");
    assert_eq!(ok["digest"], ok["expected"], "{ok}");
    assert!(
        ok["part_sizes_tried"].as_u64().is_some_and(|n| n > 1),
        "{ok}"
    );

    // A value no size gives: the text and the object count the same tries.
    let wrong = String::from_utf8_lossy(&sums).replacen("-2", "-3", 1);
    put(p, b"sums", wrong.as_bytes());
    let text = mtsum_in(p, &[auto.clone(), strs(&["sums"])].concat(), b"");
    let out = mtsum_in(p, &[auto, strs(&["--json", "sums"])].concat(), b"");
    assert_eq!((out.code, text.code), (Some(1), Some(1)));
    let failed = &json_objects(&out.stdout)[0];
    assert_eq!(failed["status"], "failed", "{failed}");
    let tried = failed["part_sizes_tried"].as_u64().expect("a count");
    let said = format!("f: FAILED ({tried} part sizes tried)\n");
    assert_eq!(String::from_utf8_lossy(&text.stdout), said, "{failed}");
}

#[test]
fn json_check_with_status_is_a_usage_error() {
    let dir = json_scenario();
    let out = mtsum_in(
        dir.path(),
        &strs(&["-c", "--status", "--json", "sums"]),
        b"",
    );
    assert_eq!(out.code, Some(2));
    assert!(out.stdout.is_empty());
    let stderr = out.stderr();
    assert!(
        stderr.contains("'--json'") && stderr.contains("'--status'") && stderr.lines().count() == 1,
        "{stderr}"
    );
}

/// `b3sum` and `xxhsum -H128` write untagged values whose length implies SHA-256 and MD5:
/// checked with `-t plain` and no `-a`, they fail, and a note names the `-a` they need.
#[test]
fn untagged_values_that_all_fail_as_the_algorithm_their_length_implies_get_a_note() {
    let dir = open_tempdir();
    put(dir.path(), b"h", b"hello");
    let cases = [
        (
            Algorithm::Blake3,
            "blake3",
            "256-bit values were checked as SHA-256; for sums \
          written by b3sum, add -a blake3\n",
        ),
        (
            Algorithm::Xxh128,
            "xxh128",
            "128-bit values were checked as MD5; for sums written \
          by xxhsum -H128, add -a xxh128\n",
        ),
    ];
    for (alg, name, note) in cases {
        let line = format!("{}  h\n", alg.hash(b"hello").to_hex());
        put(dir.path(), b"sums", line.as_bytes());
        let out = mtsum_in(dir.path(), &strs(&["-c", "-t", "plain", "sums"]), b"");
        assert_eq!(
            (out.code, out.stdout.as_slice()),
            (Some(1), &b"h: FAILED\n"[..])
        );
        let want = format!("mtsum: note: untagged {note}");
        assert!(out.stderr().ends_with(&want), "{}", out.stderr());
        // As the note says; and without -t, the layout's hint names -a too.
        let with_a = strs(&["-c", "-t", "plain", "-a", name, "sums"]);
        let out = mtsum_in(dir.path(), &with_a, b"");
        assert_eq!((out.code, out.stderr().as_str()), (Some(0), ""));
        let out = mtsum_in(dir.path(), &strs(&["-c", "sums"]), b"");
        assert!(
            out.stderr().contains(&format!("-a {name} for")),
            "{}",
            out.stderr()
        );
        assert!(!out.stderr().contains(&want), "one note: {}", out.stderr());
    }
}

#[test]
fn untagged_64_bit_values_that_all_fail_as_xxh3_get_a_note_about_xxh64() {
    let dir = open_tempdir();
    put(dir.path(), b"h", b"hello");
    let note = "mtsum: note: untagged 64-bit values were checked as XXH3; xxhsum writes XXH64 by \
                default, which mtsum does not compute (xxhsum -H3 writes XXH3)\n";
    // What `xxhsum h` writes: XXH64, untagged (published value of XXH64("hello")).
    put(dir.path(), b"xxh64", b"26c7827d889f6da3  h\n");
    let out = mtsum_in(dir.path(), &strs(&["-c", "-t", "plain", "xxh64"]), b"");
    assert_eq!(out.code, Some(1));
    assert!(out.stderr().ends_with(note), "{}", out.stderr());

    // XXH3 values that check out need no note, nor a corrupted file among good ones.
    let own = mtsum_in(dir.path(), &strs(&["-t", "plain", "-a", "xxh3", "h"]), b"").stdout;
    put(dir.path(), b"xxh3", &own);
    let out = mtsum_in(dir.path(), &strs(&["-c", "-t", "plain", "xxh3"]), b"");
    assert_eq!((out.code, out.stderr().as_str()), (Some(0), ""));
    // Asked for with -a, XXH3 is what the user means: no note either.
    let out = mtsum_in(
        dir.path(),
        &strs(&["-c", "-t", "plain", "-a", "xxh3", "xxh64"]),
        b"",
    );
    assert_eq!(out.code, Some(1));
    assert!(!out.stderr().contains("note:"), "{}", out.stderr());
}
