//! Many files on the command line: `-r` (and `-L`), `--tag`, `-z` and `--json`, as a user
//! meets them: the real binary, compared with `find`, `sort` and coreutils where they exist.
//!
//! Tests that need coreutils or `find` print why they skip when those are missing.

mod common;

use common::check::{put, run_in};
use common::cli::mkfifo;
use common::run::{Run, TIMEOUT};
use common::{have, mtsum_unprivileged, os, pattern, skip, strs};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

/// Bytes as readable lines, for assertions whose failure shows the difference line by line.
fn lines(bytes: &[u8], terminator: u8) -> Vec<String> {
    bytes
        .split_inclusive(|&b| b == terminator)
        .map(|l| l.escape_ascii().to_string())
        .collect()
}

/// Names as readable strings, for assertions.
fn show<N: AsRef<[u8]>>(names: &[N]) -> Vec<String> {
    names
        .iter()
        .map(|n| n.as_ref().escape_ascii().to_string())
        .collect()
}

/// `program ARGS` in `dir`, with empty standard input.
fn run(dir: &Path, program: &str, args: &[OsString]) -> Run {
    run_in(dir, &[], &[&[OsString::from(program)], args].concat(), b"")
}

fn mtsum(dir: &Path, args: &[OsString]) -> Run {
    common::run::run(dir, args)
}

/// A tree whose bytewise path order differs from a per-directory name sort (`dir/x` vs
/// `dir.bak/y`), with odd names, an empty directory, links to a file and to a directory,
/// and a FIFO (the last three are not hashed by `-r`).
fn tree() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let files: [&[u8]; 16] = [
        b"t/a",
        b"t/A",
        b"t/_",
        b"t/dir/x",
        b"t/dir/~",
        b"t/dir/sub/deep/w",
        b"t/dir.bak/y",
        b"t/dir-1/z",
        b"t/dir0/v",
        b"t/b c/d",
        b"t/new\nline/f",
        b"t/back\\slash",
        b"t/car\rret",
        b"t/\xff/g",
        "t/\u{e9}t\u{e9}".as_bytes(),
        b"t/empty-file",
    ];
    for (i, name) in files.into_iter().enumerate() {
        let content = if name.ends_with(b"empty-file") {
            Vec::new()
        } else {
            format!("file {i}\n").repeat(i * 100).into_bytes()
        };
        put(dir.path(), name, &content);
    }
    fs::create_dir_all(dir.path().join("t/empty/dir")).unwrap();
    symlink("a", dir.path().join("t/link")).unwrap();
    symlink("dir", dir.path().join("t/linkdir")).unwrap();
    mkfifo(&dir.path().join("t/fifo"));
    dir
}

/// `find ARGS -type f` (and with `-L` first, following links), sorted bytewise, as NUL-terminated names.
fn find_sorted(dir: &Path, follow: bool, arg: &str) -> Vec<Vec<u8>> {
    let mut args = Vec::new();
    if follow {
        args.push("-L");
    }
    args.extend([arg, "-type", "f", "-print0"]);
    let out = run(dir, "find", &strs(&args));
    assert_eq!(out.code, Some(0), "find {args:?}: {}", out.stderr());
    let mut names: Vec<Vec<u8>> = out
        .stdout
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    names.sort(); // bytewise, as LC_ALL=C sort
    names
}

/// The names of NUL-terminated GNU lines (`HEX  NAME\0`).
fn names_of_z_lines(stdout: &[u8]) -> Vec<Vec<u8>> {
    stdout
        .split(|&b| b == 0)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let at = l.windows(2).position(|w| w == b"  ").expect("HEX  NAME");
            l[at + 2..].to_vec()
        })
        .collect()
}

#[test]
fn recursive_order_is_that_of_find_sorted_bytewise() {
    if !have("find") {
        return skip("recursive_order_is_that_of_find_sorted_bytewise", "no find");
    }
    let dir = tree();
    for (follow, arg) in [
        (false, "t"),
        (false, "./t/"),
        (false, "t//"),
        (false, "t/dir"),
        (true, "t"),
    ] {
        let mut args = strs(&["-r", "-z", "-t", "plain"]);
        if follow {
            args.push("-L".into());
        }
        args.push(arg.into());
        let out = mtsum(dir.path(), &args);
        assert_eq!(out.code, Some(0), "mtsum {args:?}: {}", out.stderr());
        let ours = names_of_z_lines(&out.stdout);
        let theirs = find_sorted(dir.path(), follow, arg);
        assert_eq!(show(&ours), show(&theirs), "mtsum {args:?} vs find | sort");
    }
}

#[test]
fn recursive_output_equals_sha256sum_of_the_sorted_find_list() {
    if !have("sha256sum") || !have("find") {
        return skip("recursive_output_equals_sha256sum", "no sha256sum or find");
    }
    let dir = tree();
    let names: Vec<OsString> = find_sorted(dir.path(), false, "t")
        .iter()
        .map(|n| os(n))
        .collect();
    for (ours, theirs) in [
        (&["-t", "plain"][..], &[][..]),
        (&["-t", "plain", "--tag"], &["--tag"]),
        (&["-t", "plain", "-z"], &["-z"]),
        (&["-t", "plain", "-z", "--tag"], &["-z", "--tag"]),
    ] {
        let out = mtsum(dir.path(), &[strs(ours), strs(&["-r", "t"])].concat());
        let expected = run(
            dir.path(),
            "sha256sum",
            &[strs(theirs), names.clone()].concat(),
        );
        let terminator = if theirs.contains(&"-z") { 0 } else { b'\n' };
        assert_eq!(
            lines(&out.stdout, terminator),
            lines(&expected.stdout, terminator),
            "mtsum {ours:?} -r t vs sha256sum {theirs:?} $(find t -type f | sort)"
        );
        assert_eq!((out.stderr(), out.code), ("", Some(0)));
    }
}

/// `-r` hashes the small files of a directory on the reader that opened them (MD5's and
/// SHA-256's in lanes across files): every line is what `mtsum FILE` prints for that file
/// alone, for lengths at BLAKE3's block and chunk boundaries, around its runs of 16 chunks,
/// empty, and one too large to be hashed by the reader that opened it.
#[test]
fn recursive_digests_equal_those_of_each_file_hashed_alone() {
    let dir = tempfile::tempdir().unwrap();
    let lengths = [
        0,
        1,
        63,
        64,
        65,
        1023,
        1024,
        1025,
        2048,
        (16 << 10) - 1,
        16 << 10,
        (16 << 10) + 1,
        17 << 10,
        (33 << 10) + 1,
        100_000,
        (1 << 20) + 3,
    ];
    for (i, &len) in lengths.iter().enumerate() {
        put(
            dir.path(),
            format!("t/{i:02}-{len}").as_bytes(),
            &pattern(len, i as u64),
        );
    }
    let names = find_sorted(dir.path(), false, "t");
    for alg in ["blake3", "sha256", "md5"] {
        for layout in ["mtsum", "plain", "rfc6962"] {
            let args = strs(&["-a", alg, "-t", layout]);
            let out = mtsum(
                dir.path(),
                &[args.clone(), strs(&["-p", "2", "-r", "t"])].concat(),
            );
            assert_eq!((out.stderr(), out.code), ("", Some(0)));
            let alone: Vec<String> = names
                .iter()
                .flat_map(|name| {
                    let out = mtsum(dir.path(), &[args.clone(), vec![os(name)]].concat());
                    lines(&out.stdout, b'\n')
                })
                .collect();
            assert_eq!(
                lines(&out.stdout, b'\n'),
                alone,
                "mtsum -a {alg} -t {layout} -r t vs one mtsum per file"
            );
        }
    }
}

#[test]
fn recursion_skips_links_and_special_files_with_a_note_and_reports_loops() {
    let dir = tree();
    let quiet = mtsum(dir.path(), &strs(&["-r", "t"]));
    assert_eq!((quiet.stderr(), quiet.code), ("", Some(0)));
    let verbose = mtsum(dir.path(), &strs(&["-r", "--verbose", "t"]));
    assert_eq!(verbose.code, Some(0));
    for note in [
        "mtsum: t/fifo: FIFO skipped\n",
        "mtsum: t/link: symbolic link not followed (use -L to follow)\n",
        "mtsum: t/linkdir: symbolic link not followed (use -L to follow)\n",
    ] {
        assert!(
            verbose.stderr().contains(note),
            "{note:?} in {}",
            verbose.stderr()
        );
    }
    assert_eq!(
        verbose.stdout, quiet.stdout,
        "--verbose changes stderr only"
    );

    // A link back up to the argument is a loop with -L: an error, the other files are still
    // hashed, once.
    symlink("..", dir.path().join("t/dir/sub/up")).unwrap();
    let out = mtsum(dir.path(), &strs(&["-r", "-L", "-z", "t/dir"]));
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr(),
        "mtsum: t/dir/sub/up: filesystem loop detected: leads back to t/dir\n"
    );
    let hashed = names_of_z_lines(&out.stdout);
    let expected: [&[u8]; 3] = [b"t/dir/sub/deep/w", b"t/dir/x", b"t/dir/~"];
    assert_eq!(show(&hashed), show(&expected));
}

#[test]
fn following_links_hashes_no_file_twice_as_find_l() {
    if !have("find") {
        return skip("following_links_hashes_no_file_twice_as_find_l", "no find");
    }
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), b"t/a", b"a");
    put(dir.path(), b"t/dir/x", b"x");
    symlink("..", dir.path().join("t/dir/up")).unwrap();
    let out = mtsum(dir.path(), &strs(&["-r", "-L", "-z", "t/dir"]));
    // find -L t/dir: t/dir/x, t/dir/up/a, and "t/dir/up/dir is part of the same file system
    // loop as t/dir".
    let ours = names_of_z_lines(&out.stdout);
    let expected: [&[u8]; 2] = [b"t/dir/up/a", b"t/dir/x"];
    assert_eq!(show(&ours), show(&expected), "{}", out.stderr());
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr()
            .contains("t/dir/up/dir: filesystem loop detected"),
        "{}",
        out.stderr()
    );
}

#[test]
fn zero_terminated_output_equals_sha256sum_z() {
    if !have("sha256sum") {
        return skip("zero_terminated_output_equals_sha256sum_z", "no sha256sum");
    }
    let dir = tempfile::tempdir().unwrap();
    let names: [&[u8]; 7] = [
        b"plain",
        b"with space",
        b"new\nline",
        b"back\\slash",
        b"car\rret",
        b"\xff\xfe",
        b"empty",
    ];
    for name in names {
        let content = if name == b"empty" { &b""[..] } else { name };
        put(dir.path(), name, content);
    }
    fs::create_dir(dir.path().join("adir")).unwrap();
    let mut args: Vec<OsString> = names.iter().map(|n| os(n)).collect();
    args.extend(strs(&["missing", "adir"]));
    for (tool, alg) in [
        ("sha256sum", "sha256"),
        ("md5sum", "md5"),
        ("sha1sum", "sha1"),
    ] {
        for tag in [&[][..], &["--tag"]] {
            let ours = [
                strs(&["-z", "-t", "plain", "-a", alg]),
                strs(tag),
                args.clone(),
            ];
            let ours = mtsum(dir.path(), &ours.concat());
            let theirs = run(
                dir.path(),
                tool,
                &[strs(&["-z"]), strs(tag), args.clone()].concat(),
            );
            let what = format!("mtsum -z -a {alg} {tag:?} vs {tool} -z {tag:?}");
            assert_eq!(lines(&ours.stdout, 0), lines(&theirs.stdout, 0), "{what}");
            let their_err = theirs.stderr().replace(&format!("{tool}: "), "mtsum: ");
            assert_eq!(ours.stderr(), their_err, "{what}");
            assert_eq!(ours.code, theirs.code, "{what}");
        }
    }
}

#[test]
fn tag_lines_name_the_layout_and_its_parameters() {
    let dir = tree();
    for (args, tag) in [
        (&[][..], "MTSUM-SHA256"),
        (&["-a", "blake3"], "MTSUM-BLAKE3"),
        (&["-t", "rfc6962", "-l", "4K"], "RFC6962-SHA256-4K"),
        (&["-t", "rfc6962", "-l", "4096"], "RFC6962-SHA256-4K"),
        (&["-t", "merkle"], "MERKLE-SHA256-1M"),
        (
            &["-t", "merkle", "-l", "1536", "-a", "sha1"],
            "MERKLE-SHA1-1536",
        ),
        (&["-t", "plain"], "SHA256"),
        (&["-t", "plain", "-a", "xxh128"], "XXH128"),
        (&["-t", "plain", "-a", "xxh3"], "XXH3"),
    ] {
        let out = mtsum(
            dir.path(),
            &[strs(args), strs(&["--tag", "-r", "t"])].concat(),
        );
        assert_eq!(out.code, Some(0), "{args:?}: {}", out.stderr());
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.lines().count(),
            16,
            "{args:?}: one line per file:\n{text}"
        );
        for line in text.lines() {
            let line = line.strip_prefix('\\').unwrap_or(line);
            assert!(line.starts_with(&format!("{tag} (t/")), "{args:?}: {line}");
        }
        // The name holding a newline is escaped, and its line marked.
        assert!(
            text.contains(&format!("\\{tag} (t/new\\nline/f) = ")),
            "{args:?}"
        );
    }
}

#[test]
fn json_lines_parse_and_carry_the_documented_fields() {
    let dir = tree();
    symlink("nowhere", dir.path().join("t/dangling")).unwrap();
    for (args, layout, leaf, alg) in [
        (&[][..], "mtsum", None, "sha256"),
        (&["-t", "plain"], "plain", None, "sha256"),
        (
            &["-t", "rfc6962", "-l", "4K", "-a", "blake3"],
            "rfc6962",
            Some(4096),
            "blake3",
        ),
        (
            &["-t", "merkle", "-a", "md5"],
            "merkle",
            Some(1 << 20),
            "md5",
        ),
    ] {
        let json = mtsum(
            dir.path(),
            &[
                strs(args),
                strs(&["--json", "-r", "t", "missing", "t/dangling"]),
            ]
            .concat(),
        );
        // The same run as sum lines: the digests and names to expect.
        let plain = mtsum(dir.path(), &[strs(args), strs(&["-z", "-r", "t"])].concat());
        let expected: Vec<(Vec<u8>, String)> = plain
            .stdout
            .split(|&b| b == 0)
            .filter(|l| !l.is_empty())
            .map(|l| {
                let at = l.windows(2).position(|w| w == b"  ").unwrap();
                (
                    l[at + 2..].to_vec(),
                    String::from_utf8(l[..at].to_vec()).unwrap(),
                )
            })
            .collect();
        assert_eq!(
            json.code,
            Some(1),
            "{args:?}: a missing input fails the run"
        );
        assert_eq!(
            json.stderr(),
            "mtsum: missing: No such file or directory\n\
             mtsum: t/dangling: No such file or directory\n",
            "{args:?}"
        );
        let values: Vec<Value> = json
            .stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
            .collect();
        assert_eq!(
            values.len(),
            expected.len() + 2,
            "{args:?}: one object per input"
        );
        for (value, (name, digest)) in values.iter().zip(&expected) {
            let object = value.as_object().expect("an object");
            let keys: Vec<&str> = object.keys().map(String::as_str).collect();
            let utf8 = std::str::from_utf8(name).is_ok();
            let mut want = vec!["path"];
            if !utf8 {
                want.push("path_bytes");
            }
            want.extend([
                "size",
                "layout",
                "leaf_size",
                "algorithm",
                "digest",
                "seconds",
            ]);
            assert_eq!(keys, want, "{args:?}: {value}");
            assert_eq!(object["path"], String::from_utf8_lossy(name).as_ref());
            if !utf8 {
                let bytes: Vec<u8> = object["path_bytes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b.as_u64().unwrap() as u8)
                    .collect();
                assert_eq!(&bytes, name);
            }
            let len = fs::metadata(dir.path().join(OsStr::from_bytes(name)))
                .unwrap()
                .len();
            assert_eq!(object["size"], len, "{value}");
            assert_eq!(object["layout"], layout, "{value}");
            assert_eq!(object["leaf_size"], serde_json::json!(leaf), "{value}");
            assert_eq!(object["algorithm"], alg, "{value}");
            assert_eq!(object["digest"], digest.as_str(), "{value}");
            assert!(
                object["seconds"].as_f64().is_some_and(|s| s >= 0.0),
                "{value}"
            );
        }
        let errors = &values[expected.len()..];
        assert_eq!(
            errors,
            [
                serde_json::json!({"path": "missing", "error": "No such file or directory"}),
                serde_json::json!({"path": "t/dangling", "error": "No such file or directory"}),
            ],
            "{args:?}"
        );
    }
}

/// Hundreds of files go to the readers in batches, each file hashed by the reader that opened
/// it: an unreadable one, small or large, is still one line `mtsum: NAME: Permission denied`
/// in its own place among the results (stdout and stderr in one stream), every other file is
/// hashed, and the exit status is 1.
#[test]
fn an_unreadable_file_among_many_is_one_error_line_in_its_place_and_the_rest_are_hashed() {
    let unprivileged = match mtsum_unprivileged() {
        Ok(cmd) => cmd,
        Err(why) => return skip("an_unreadable_file_among_many", &why),
    };
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let unreadable = [13, 71, 199];
    let mut expected = String::new();
    for i in 0..240usize {
        let name = format!("t/d{}/f{i:03}", i % 3);
        let len = match i {
            71 => 3 << 20,
            _ if i % 50 == 7 => (1 << 20) + i,
            _ => (i * 7919) % 150_000,
        };
        let data = pattern(len, i as u64);
        put(dir.path(), name.as_bytes(), &data);
        let path = dir.path().join(&name);
        if unreadable.contains(&i) {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
        }
        for d in [
            path.parent().unwrap(),
            path.parent().unwrap().parent().unwrap(),
        ] {
            fs::set_permissions(d, fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    let mut names: Vec<String> = (0..240).map(|i| format!("t/d{}/f{i:03}", i % 3)).collect();
    names.sort();
    for name in &names {
        let i: usize = name[name.len() - 3..].parse().unwrap();
        if unreadable.contains(&i) {
            expected += &format!("mtsum: {name}: Permission denied\n");
        } else {
            let data = fs::read(dir.path().join(name)).unwrap();
            expected += &format!("{}  {name}\n", mtsum::Algorithm::Sha256.hash(&data));
        }
    }
    for p in ["1", "2", "3"] {
        // Both streams into one pipe, to see each error line in its place.
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c")
            .arg("\"$@\" 2>&1")
            .arg("sh")
            .arg(unprivileged.get_program())
            .args(unprivileged.get_args())
            .args(["-r", "-t", "plain", "-p", p, "t"])
            .current_dir(dir.path());
        let out = Command::from_std(cmd).timeout(TIMEOUT).output().unwrap();
        let merged = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            merged.lines().collect::<Vec<_>>(),
            expected.lines().collect::<Vec<_>>(),
            "-p {p}"
        );
        assert_eq!(out.status.code(), Some(1), "-p {p}");
    }
}
