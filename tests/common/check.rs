//! Helpers of the `-c` tests (`tests/check*.rs`): running mtsum and the tools it is compared
//! with, and the scenario of files and sum files that `tests/check.rs` describes.

#![allow(dead_code)]

use super::run::{Run, run_cmd};
use super::{MTSUM, have, os, strs, unprivileged, write_file};
use assert_cmd::Command;
use mtsum::Algorithm;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use tempfile::TempDir;

/// The name every compared sum file is checked under (it needs quoting in messages).
pub const CHECK_FILE: &str = "the sums";

// ---------------------------------------------------------------------------------------------
// Running programs
// ---------------------------------------------------------------------------------------------

/// Bytes as readable lines (`\\`, `\n`, `\r`, `\xff` spelled out, quotes left alone), for
/// assertions whose failure shows a line-by-line difference.
pub fn lines(bytes: &[u8]) -> Vec<String> {
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

/// Why coreutils cannot serve as the reference here, if it cannot.
pub fn coreutils_missing() -> Option<String> {
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
pub fn run_in(dir: &Path, prefix: &[&str], command: &[OsString], stdin: &[u8]) -> Run {
    let (program, args) = command.split_first().expect("a program");
    let mut cmd = match prefix.split_first() {
        Some((wrapper, wrapper_args)) => {
            let mut cmd = Command::new(wrapper);
            cmd.args(wrapper_args).arg(program);
            cmd
        }
        None => Command::new(program),
    };
    run_cmd(
        cmd.args(args)
            .current_dir(dir)
            .env("LC_ALL", "C.UTF-8")
            .write_stdin(stdin.to_vec()),
    )
}

/// Asserts that `ours` (mtsum) printed and returned what `reference` (`tool`) did: stdout
/// byte for byte, stderr but for the program name, and the `--warn` word for untagged lines
/// (`SHA256` for `sha256sum`; mtsum says what `-t`/`-a` make it, `warn_tag`).
pub fn assert_same(what: &str, tool: &str, reference: &Run, warn_tag: &str, ours: &Run) {
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
pub fn tool_tag(tool: &str) -> String {
    tool.trim_end_matches("sum").to_ascii_uppercase()
}

pub fn replace(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
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
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
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

pub fn sha256_hex(bytes: &[u8]) -> String {
    Algorithm::Sha256.hash(bytes).to_hex()
}

pub fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {mode:o} {}: {e}", path.display()));
}

/// A world-readable temporary directory (the unprivileged user works in it).
pub fn open_tempdir() -> TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    set_mode(dir.path(), 0o755);
    dir
}

/// Writes `bytes` to `dir/name` (any bytes but NUL in the name, directories made on the
/// way), readable by everyone.
pub fn put(dir: &Path, name: &[u8], bytes: &[u8]) -> PathBuf {
    let path = write_file(dir, OsStr::from_bytes(name), bytes);
    set_mode(&path, 0o644);
    path
}

// ---------------------------------------------------------------------------------------------
// The scenario
// ---------------------------------------------------------------------------------------------

/// The files of the scenario, in the order every tool lists them.
pub const NAMES: [&[u8]; 12] = [
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
pub fn content(name: &[u8]) -> Vec<u8> {
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
pub const SHA256SUM_VERDICTS: &[u8] = b"good: OK
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
pub const SHA256SUM_WARNINGS: &[u8] = b"sha256sum: missing: No such file or directory
sha256sum: unreadable: Permission denied
sha256sum: adir: Is a directory
sha256sum: WARNING: 3 listed files could not be read
sha256sum: WARNING: 1 computed checksum did NOT match
";

/// A tool whose sum files `mtsum -c` must read.
#[derive(Clone, Copy)]
pub struct Writer {
    /// The command that writes the sums, before the names.
    pub command: &'static [&'static str],
    /// What `mtsum` needs besides `-c` to read them.
    pub check_args: &'static [&'static str],
    /// The word mtsum's `--warn` uses with `check_args`.
    pub warn_tag: &'static str,
    /// Names the tool cannot write so that they read back (b3sum writes invalid UTF-8
    /// lossily; xxhsum does not escape newlines): left out, here and in the reference.
    pub leaves_out: fn(&[u8]) -> bool,
}

pub fn keeps_all(_: &[u8]) -> bool {
    false
}

pub fn invalid_utf8(name: &[u8]) -> bool {
    std::str::from_utf8(name).is_err()
}

pub fn has_newline(name: &[u8]) -> bool {
    name.contains(&b'\n')
}

pub const fn writer(
    command: &'static [&'static str],
    check_args: &'static [&'static str],
) -> Writer {
    Writer {
        command,
        check_args,
        warn_tag: "SHA256",
        leaves_out: keeps_all,
    }
}

pub const SHA256SUM: Writer = writer(&["sha256sum"], &["-t", "plain"]);
pub const SHA256SUM_TAG: Writer = writer(&["sha256sum", "--tag"], &["-t", "plain"]);

pub const OTHER_COREUTILS: [Writer; 10] = [
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

pub const B3SUM: Writer = Writer {
    warn_tag: "BLAKE3",
    leaves_out: invalid_utf8,
    ..writer(&["b3sum"], &["-t", "plain", "-a", "blake3"])
};

pub const XXHSUM: [Writer; 5] = [
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
pub struct Written {
    pub writer: Writer,
    pub sums: Vec<u8>,
    pub reference: Vec<u8>,
}

/// A reference run: tool, arguments, the sum file's bytes, standard input.
pub type RunKey = (String, Vec<OsString>, Vec<u8>, Vec<u8>);

/// The scenario directory, after the sums were written and the files changed.
pub struct Scenario {
    pub dir: TempDir,
    /// The unprivileged wrapper every check runs behind.
    pub prefix: &'static [&'static str],
    pub written: Vec<Written>,
    /// Reference runs already made.
    pub cache: RefCell<HashMap<RunKey, Run>>,
}

impl Scenario {
    /// Builds the scenario with sums written by `writers` (those installed), or says why it
    /// cannot be.
    pub fn new(writers: &[Writer]) -> Result<Scenario, String> {
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

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `bytes` as [`CHECK_FILE`].
    pub fn set_check_file(&self, bytes: &[u8]) {
        put(self.path(), CHECK_FILE.as_bytes(), bytes);
    }

    /// `tool -c OPTIONS FILES` as the unprivileged user, [`CHECK_FILE`] holding `sums`.
    pub fn reference(&self, tool: &str, options: &[OsString], sums: &[u8], stdin: &[u8]) -> Run {
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
    pub fn ours(&self, args: &[&str], options: &[OsString], sums: &[u8], stdin: &[u8]) -> Run {
        self.set_check_file(sums);
        let mut command = vec![OsString::from(MTSUM)];
        command.extend(strs(args));
        command.push("-c".into());
        command.extend(options.iter().cloned());
        run_in(self.path(), self.prefix, &command, stdin)
    }

    /// Checks `sums` (what `w` wrote, maybe altered) with mtsum and `reference` (the same
    /// alteration of sha256sum's file) with sha256sum, with `options` and [`CHECK_FILE`]
    /// appended, and asserts that both said the same.
    pub fn compare(&self, what: &str, w: &Writer, reference: &[u8], sums: &[u8], options: &[&str]) {
        let mut args = strs(options);
        args.push(CHECK_FILE.into());
        self.compare_args(what, w, reference, sums, &args, b"");
    }

    /// `sha256sum -c ARGS` with [`CHECK_FILE`] holding `reference`, and `mtsum -c ARGS` with
    /// it holding `sums`, both with `stdin`, said the same.
    pub fn compare_args(
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
pub const OPTION_SETS: [&[&str]; 22] = [
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
pub const JUNK_BEFORE: &[u8] = b"# sums of the scenario\n\nthis line is improperly formatted\n";
/// More of them after the real ones; the last line has no newline.
pub const JUNK_AFTER: &[u8] = b"0123  digest of no algorithm's length\n\
    BLAKE2b (good) = 00\n\
    SHA256 (good\n\
    \t \n\
    \\5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  bad \\escape\n\
    # another comment\n\
    (good) = 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\n\
    no newline at the end";

pub fn with_junk(sums: &[u8]) -> Vec<u8> {
    [JUNK_BEFORE, sums, JUNK_AFTER].concat()
}

pub fn crlf(sums: &[u8]) -> Vec<u8> {
    replace(sums, b"\n", b"\r\n")
}

/// What `w` wrote, checked as written, with junk, and with junk and CRLF line ends, against
/// sha256sum on its own file altered alike: with every option set on the junk version (where
/// the options matter most), with a few on the others.
pub fn compare_writer(s: &Scenario, written: &Written) {
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
