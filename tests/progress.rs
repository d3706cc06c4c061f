//! `--progress`: the bar asked for is drawn on any stderr, and its last state stays there
//! however short the run, in every mode that reads files.

mod common;

use assert_cmd::Command;

use common::run::run_cmd;
use common::{MTSUM, tempdir, write_file};

/// The last frame the bar drew on `stderr`: after the last carriage return, without the
/// escape that clears the line.
fn last_frame(stderr: &str) -> &str {
    let frame = stderr.rsplit('\r').next().unwrap_or_default();
    frame.strip_prefix("\x1b[2K").unwrap_or(frame)
}

#[test]
fn progress_flag_leaves_the_final_bar_on_a_run_far_shorter_than_a_second() {
    let dir = tempdir();
    write_file(dir.path(), "a", b"hello");
    write_file(
        dir.path(),
        "sums",
        b"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824  a\n",
    );
    // A known total: bytes of bytes and files of files; a sum file lists files as it is
    // read, so -c counts bytes only.
    let cases: [(&[&str], &str, &str); 3] = [
        (&["-t", "plain", "a"], "5 B/5 B [", "· 1/1 files\n"),
        (&["-c", "-t", "plain", "sums"], "5 B hashed, ", "\n"),
        (
            &["--audit", "--manifest", "m", "a"],
            "5 B/5 B [",
            "· 1/1 files\n",
        ),
    ];
    for (args, starts, ends) in cases {
        let out = run_cmd(
            Command::new(MTSUM)
                .current_dir(dir.path())
                .arg("--progress")
                .args(args),
        );
        assert_eq!(out.code, Some(0), "{args:?}");
        let stderr = out.stderr();
        let frame = last_frame(stderr);
        assert!(
            frame.trim_start().starts_with(starts) && frame.ends_with(ends),
            "{args:?}: {stderr:?}"
        );
    }
    // Without it, a run on a stderr that is not a terminal shows none.
    let out = run_cmd(
        Command::new(MTSUM)
            .current_dir(dir.path())
            .args(["-t", "plain", "a"]),
    );
    assert_eq!(out.stderr, b"");
}
