//! `mtsum -c --json`, for scripts: held to mtsum's own text output (the same stderr and
//! exit status), one object per line of the sum files, then a summary.

mod common;

use common::check::*;
use common::run::run;
use common::{os, strs};
use std::fs;
use tempfile::TempDir;

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
    let out = run(dir.path(), strs(&["-t", "plain", "-c", "--json", "sums"]));
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
            let text = run(p, &args);
            let json = run(p, [args, strs(&["--json"])].concat());
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
        let out = run(p, args.concat());
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
        let out = run(p, args.concat());
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
    let out = run(p, &args);
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
        let tagged = run(p, [strs(args), strs(&["--tag", "f"])].concat());
        sums.extend_from_slice(&tagged.stdout);
        let hashed = run(p, [strs(args), strs(&["--json", "f"])].concat());
        let mut object = json_objects(&hashed.stdout).remove(0);
        object.as_object_mut().expect("an object").remove("seconds");
        expected.push(object);
    }
    put(p, b"sums", &sums);
    // Untagged lines would be read with -t plain: the tags say it all.
    let out = run(p, strs(&["-t", "plain", "-c", "--json", "sums"]));
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
    let sums = run(p, strs(&["-t", "s3", "--part-size", "16M", "f"])).stdout;
    put(p, b"sums", &sums);
    let auto = strs(&["-c", "-t", "s3", "--part-size", "auto"]);
    let text = run(p, [auto.clone(), strs(&["sums"])].concat());
    assert_eq!(text.stdout, b"f: OK (--part-size 16M)\n");
    let out = run(p, [auto.clone(), strs(&["--json", "sums"])].concat());
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
    let text = run(p, [auto.clone(), strs(&["sums"])].concat());
    let out = run(p, [auto, strs(&["--json", "sums"])].concat());
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
    let out = run(dir.path(), strs(&["-c", "--status", "--json", "sums"]));
    assert_eq!(out.code, Some(2));
    assert!(out.stdout.is_empty());
    let stderr = out.stderr();
    assert!(
        stderr.contains("'--json'") && stderr.contains("'--status'") && stderr.lines().count() == 1,
        "{stderr}"
    );
}
