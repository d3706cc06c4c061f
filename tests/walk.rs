//! `mtsum::walk` on real trees: what `mtsum PATH...` and `mtsum -r [-L] PATH...` hash, skip
//! and report, item by item and in order.
//!
//! Every tree is built in a temporary directory `BASE`; items are written as `input PATH`,
//! `skip PATH: REASON` or `error PATH: MESSAGE`, with `BASE/` taken off the front of paths
//! and messages and the bytes of odd names escaped (`\n`, `\xff`), so that the expected
//! sequences read like the output of `find`.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, PermissionsExt, symlink};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use mtsum::source::Target;
use mtsum::walk::{FilesystemLoop, Recursion, Walked, walk};
use tempfile::TempDir;

const OFF: Recursion = Recursion::Off;
const RECURSIVE: Recursion = Recursion::SkipSymlinks;
const FOLLOW: Recursion = Recursion::FollowSymlinks;

/// A directory to build trees in: temporary, or borrowed from a parent process.
struct Base {
    root: PathBuf,
    _owner: Option<TempDir>,
}

impl Base {
    fn new() -> Base {
        let dir = tempfile::tempdir().expect("temporary directory");
        Base {
            root: dir.path().to_path_buf(),
            _owner: Some(dir),
        }
    }

    /// `BASE/rel`; `rel` is bytes so that it can name invalid UTF-8.
    fn path(&self, rel: impl AsRef<[u8]>) -> PathBuf {
        self.root.join(OsStr::from_bytes(rel.as_ref()))
    }

    fn file(&self, rel: impl AsRef<[u8]>) {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, b"x").unwrap();
    }

    fn dir(&self, rel: &str) {
        fs::create_dir_all(self.path(rel)).unwrap();
    }

    fn symlink(&self, rel: &str, pointing_to: impl AsRef<Path>) {
        symlink(pointing_to, self.path(rel)).unwrap();
    }

    fn fifo(&self, rel: &str) {
        let status = Command::new("mkfifo").arg(self.path(rel)).status().unwrap();
        assert!(status.success(), "mkfifo {rel}");
    }

    fn socket(&self, rel: &str) {
        // The socket file outlives the listener.
        UnixListener::bind(self.path(rel)).unwrap();
    }

    /// The items of `walk(args)`, written as the module documentation says; an argument is
    /// relative to `BASE`, except `-`.
    fn walk(&self, args: &[&str], recursion: Recursion) -> Vec<String> {
        let targets = args.iter().map(|&arg| match arg {
            "-" => Target::from_arg(arg),
            _ => Target::from_arg(self.path(arg)),
        });
        walk(targets, recursion)
            .map(|item| self.show(item))
            .collect()
    }

    fn show(&self, item: Walked) -> String {
        match item {
            Walked::Input(Target::Stdin) => "input -".to_string(),
            Walked::Input(Target::Url(url)) => format!("input {url}"),
            Walked::Input(Target::Path(path) | Target::File(path)) => {
                format!("input {}", self.rel(&path))
            }
            Walked::Skipped { path, reason } => format!("skip {}: {reason}", self.rel(&path)),
            Walked::Error { path, error } => {
                let base = format!("{}/", self.root.display());
                let message = error.to_string().replace(&base, "");
                format!("error {}: {message}", self.rel(&path))
            }
        }
    }

    /// `path` without `BASE/`, its odd bytes escaped.
    fn rel(&self, path: &Path) -> String {
        let bytes = path.as_os_str().as_bytes();
        let base = self.root.as_os_str().as_bytes();
        let rel = bytes
            .strip_prefix(base)
            .and_then(|rest| rest.strip_prefix(b"/"))
            .expect("every path is below BASE");
        rel.escape_ascii().to_string()
    }

    /// What `find ARG -type f` prints (`-L` for `FOLLOW`), sorted bytewise and written like
    /// our inputs; `None` (with a note) where `find` cannot be run.
    fn find(&self, arg: &str, recursion: Recursion) -> Option<Vec<String>> {
        let mut find = Command::new("find");
        if recursion == FOLLOW {
            find.arg("-L");
        }
        let output = match find
            .arg(self.path(arg))
            .args(["-type", "f", "-print0"])
            .output()
        {
            Ok(output) if output.status.success() => output,
            other => {
                eprintln!("note: not compared with find, which could not be run: {other:?}");
                return None;
            }
        };
        let mut paths: Vec<&[u8]> = output.stdout.split(|&b| b == 0).collect();
        paths.pop(); // after the last NUL
        paths.sort();
        let show = |p: &[u8]| format!("input {}", self.rel(Path::new(OsStr::from_bytes(p))));
        Some(paths.into_iter().map(show).collect())
    }
}

/// The regular tree most tests walk: nested and empty directories, a directory whose name is
/// a prefix of others (`dir`, `dir.bak`, `dir-x`), names with a space, a newline, an
/// uppercase letter, UTF-8 and invalid UTF-8.
fn regular_tree() -> Base {
    let base = Base::new();
    for name in [
        &b"t/a"[..],
        b"t/B",
        b"t/b c",
        b"t/dir/f",
        b"t/dir/sub/deep/g",
        b"t/dir.bak/h",
        b"t/dir-x",
        b"t/line\nbreak",
        "t/\u{e9}".as_bytes(),
        b"t/\xff\xfe",
    ] {
        base.file(name);
    }
    base.dir("t/empty");
    base.dir("t/dir/empty");
    base
}

const REGULAR_TREE: [&str; 10] = [
    "input t/B",
    "input t/a",
    "input t/b c",
    "input t/dir-x",
    "input t/dir.bak/h",
    "input t/dir/f",
    "input t/dir/sub/deep/g",
    "input t/line\\nbreak",
    "input t/\\xc3\\xa9",
    "input t/\\xff\\xfe",
];

#[test]
fn walks_directories_depth_first_in_bytewise_order() {
    let base = regular_tree();
    assert_eq!(base.walk(&["t"], RECURSIVE), REGULAR_TREE);
    assert_eq!(base.walk(&["t"], FOLLOW), REGULAR_TREE);
}

#[test]
fn order_is_that_of_find_piped_to_a_bytewise_sort() {
    let base = regular_tree();
    if let Some(found) = base.find("t", RECURSIVE) {
        assert_eq!(found, REGULAR_TREE);
    }
}

#[test]
fn invalid_utf8_names_survive_byte_for_byte() {
    let base = regular_tree();
    let name = base.path(b"t/\xff\xfe");
    let walked = walk([Target::from_arg(base.path("t"))], RECURSIVE).last();
    assert!(matches!(walked, Some(Walked::Input(Target::File(p))) if p == name));
    let named = walk([Target::Path(name.clone())], OFF).next();
    assert!(matches!(named, Some(Walked::Input(Target::Path(p))) if p == name));
}

#[test]
fn files_found_below_a_directory_must_still_be_regular_files_when_opened() {
    // A file the walk found is opened without waiting and refused if something else (a FIFO)
    // took its place; a path named on the command line is opened whatever it is.
    let base = Base::new();
    base.dir("t");
    base.file("t/f");
    base.file("named");
    for recursion in [RECURSIVE, FOLLOW] {
        let targets = [base.path("t"), base.path("named")].map(Target::Path);
        let walked: Vec<Walked> = walk(targets, recursion).collect();
        assert!(
            matches!(
                &walked[..],
                [Walked::Input(Target::File(f)), Walked::Input(Target::Path(n))]
                    if *f == base.path("t/f") && *n == base.path("named")
            ),
            "{walked:?}"
        );
    }
}

#[test]
fn empty_directories_yield_nothing() {
    let base = Base::new();
    base.dir("e/sub/subsub");
    assert_eq!(base.walk(&["e"], RECURSIVE), Vec::<String>::new());
    assert_eq!(base.walk(&["e/sub/subsub"], FOLLOW), Vec::<String>::new());
}

#[test]
fn arguments_come_out_in_command_line_order() {
    let base = regular_tree();
    assert_eq!(
        base.walk(&["t/dir.bak", "-", "t/a", "t/dir/sub", "t/B"], RECURSIVE),
        [
            "input t/dir.bak/h",
            "input -",
            "input t/a",
            "input t/dir/sub/deep/g",
            "input t/B",
        ]
    );
    assert_eq!(
        base.walk(&["t/dir/sub", "t/dir/sub"], RECURSIVE),
        ["input t/dir/sub/deep/g", "input t/dir/sub/deep/g"],
        "an argument named twice is hashed twice, as by sha256sum"
    );
}

#[test]
fn without_recursion_every_argument_is_one_input() {
    let base = regular_tree();
    base.fifo("fifo");
    base.symlink("link", "t");
    assert_eq!(
        base.walk(&["t", "t/a", "missing", "-", "fifo", "link"], OFF),
        [
            // The engine says `Is a directory` and `No such file or directory`, as sha256sum.
            "input t",
            "input t/a",
            "input missing",
            "input -",
            "input fifo",
            "input link",
        ]
    );
}

#[test]
fn a_missing_argument_is_passed_on_for_the_engine_to_report() {
    let base = Base::new();
    assert_eq!(
        base.walk(&["missing", "-"], RECURSIVE),
        ["input missing", "input -"]
    );
    assert_eq!(base.walk(&["missing"], FOLLOW), ["input missing"]);
}

#[test]
fn paths_keep_the_users_spelling() {
    let base = Base::new();
    base.file("t/sub/f");
    for (arg, expected) in [
        ("t", "input t/sub/f"),
        ("t/", "input t/sub/f"),
        ("t//", "input t//sub/f"),
        ("t/.", "input t/./sub/f"),
        ("./t", "input ./t/sub/f"),
        ("t/../t/", "input t/../t/sub/f"),
    ] {
        assert_eq!(base.walk(&[arg], RECURSIVE), [expected], "{arg}");
        if let Some(found) = base.find(arg, RECURSIVE) {
            assert_eq!(found, [expected], "find {arg}");
        }
    }
}

/// Links to a file, to a directory, to nothing, to themselves, to a device, and one that
/// leads back to the top of the tree.
fn tree_of_links() -> Base {
    let base = Base::new();
    base.file("l/a");
    base.file("l/dir/f");
    base.symlink("l/broken", "missing");
    base.symlink("l/link-to-a", "a");
    base.symlink("l/link-to-dir", "dir");
    base.dir("l/loop");
    base.symlink("l/loop/up", "..");
    base.symlink("l/null", "/dev/null");
    base.symlink("l/self", "self");
    base
}

#[test]
fn symlinks_met_during_recursion_are_not_followed_by_default() {
    let base = tree_of_links();
    assert_eq!(
        base.walk(&["l"], RECURSIVE),
        [
            "input l/a",
            "skip l/broken: symbolic link not followed (use -L to follow)",
            "input l/dir/f",
            "skip l/link-to-a: symbolic link not followed (use -L to follow)",
            "skip l/link-to-dir: symbolic link not followed (use -L to follow)",
            "skip l/loop/up: symbolic link not followed (use -L to follow)",
            "skip l/null: symbolic link not followed (use -L to follow)",
            "skip l/self: symbolic link not followed (use -L to follow)",
        ]
    );
}

#[test]
fn follow_reads_through_symlinks_and_reports_the_broken_ones() {
    let base = tree_of_links();
    assert_eq!(
        base.walk(&["l"], FOLLOW),
        [
            "input l/a",
            "error l/broken: No such file or directory",
            "input l/dir/f",
            "input l/link-to-a",
            "input l/link-to-dir/f",
            "error l/loop/up: filesystem loop detected: leads back to l",
            "skip l/null: character device skipped",
            "error l/self: Too many levels of symbolic links",
        ]
    );
}

#[test]
fn follow_detects_symlink_loops() {
    let base = Base::new();
    base.file("t/x/f");
    base.dir("t/x/y");
    base.symlink("t/x/y/back", "../..");
    base.symlink("t/x/y/here", ".");
    base.file("t/z");
    assert_eq!(
        base.walk(&["t"], FOLLOW),
        [
            "input t/x/f",
            "error t/x/y/back: filesystem loop detected: leads back to t",
            "error t/x/y/here: filesystem loop detected: leads back to t/x/y",
            "input t/z",
        ]
    );
    let first_error = walk([Target::from_arg(base.path("t"))], FOLLOW)
        .find_map(|item| match item {
            Walked::Error { error, .. } => Some(error),
            _ => None,
        })
        .unwrap();
    let mtsum::source::InputError::Io(io) = first_error else {
        panic!("{first_error:?}")
    };
    let cycle = io.get_ref().unwrap().downcast_ref::<FilesystemLoop>();
    assert_eq!(cycle.unwrap().ancestor, base.path("t"));
}

#[test]
fn follow_orders_linked_directories_by_their_paths() {
    // Under -L `d` is a directory, so `d/f` comes after `d.txt`, as in `find -L | sort`.
    let base = Base::new();
    base.file("t/real/f");
    base.symlink("t/d", "real");
    base.file("t/d.txt");
    let expected = ["input t/d.txt", "input t/d/f", "input t/real/f"];
    assert_eq!(base.walk(&["t"], FOLLOW), expected);
    if let Some(found) = base.find("t", FOLLOW) {
        assert_eq!(found, expected);
    }
}

#[test]
fn a_symlink_named_on_the_command_line_is_followed() {
    let base = tree_of_links();
    assert_eq!(
        base.walk(&["l/link-to-dir", "l/link-to-a", "l/broken"], RECURSIVE),
        [
            "input l/link-to-dir/f",
            "input l/link-to-a",
            // Not a directory: the engine reports it as sha256sum would.
            "input l/broken",
        ]
    );
    // The link's name, not its target's, starts the paths below it.
    base.symlink("top", "l/dir");
    assert_eq!(base.walk(&["top"], RECURSIVE), ["input top/f"]);
    assert_eq!(base.walk(&["top"], FOLLOW), ["input top/f"]);
}

/// A block device on this machine, if any, to link to.
fn some_block_device() -> Option<PathBuf> {
    fs::read_dir("/dev")
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_block_device()))
}

#[test]
fn special_files_met_during_recursion_are_skipped() {
    let base = Base::new();
    base.dir("s");
    base.fifo("s/fifo");
    base.file("s/file");
    base.socket("s/sock");
    base.symlink("s/null", "/dev/null");
    assert_eq!(
        base.walk(&["s"], RECURSIVE),
        [
            "skip s/fifo: FIFO skipped",
            "input s/file",
            "skip s/null: symbolic link not followed (use -L to follow)",
            "skip s/sock: socket skipped",
        ]
    );
    assert_eq!(
        base.walk(&["s"], FOLLOW),
        [
            "skip s/fifo: FIFO skipped",
            "input s/file",
            "skip s/null: character device skipped",
            "skip s/sock: socket skipped",
        ]
    );
    match some_block_device() {
        Some(device) => {
            base.symlink("s/blk", device);
            assert_eq!(
                base.walk(&["s"], FOLLOW)[0],
                "skip s/blk: block device skipped"
            );
        }
        None => eprintln!("note: no block device in /dev, block devices not tested"),
    }
}

#[test]
fn special_files_named_on_the_command_line_are_inputs() {
    let base = Base::new();
    base.dir("s");
    base.fifo("s/fifo");
    base.socket("s/sock");
    base.symlink("s/null", "/dev/null");
    for recursion in [OFF, RECURSIVE, FOLLOW] {
        assert_eq!(
            base.walk(&["s/fifo", "s/sock", "s/null"], recursion),
            ["input s/fifo", "input s/sock", "input s/null"]
        );
    }
}

#[test]
fn standard_input_is_a_dash_whatever_the_recursion() {
    let base = Base::new();
    for recursion in [OFF, RECURSIVE, FOLLOW] {
        let items: Vec<_> = walk([Target::from_arg("-")], recursion).collect();
        assert!(matches!(items[..], [Walked::Input(Target::Stdin)]));
    }
    base.file("-/f");
    assert_eq!(base.walk(&["-/f"], RECURSIVE), ["input -/f"]);
}

#[test]
fn a_directory_is_read_only_when_the_walk_reaches_it() {
    let base = Base::new();
    base.file("t/a/f");
    base.dir("t/b");
    for i in 0..10_000 {
        fs::write(base.path(format!("t/b/{i}")), b"").unwrap();
    }
    let mut items = walk([Target::from_arg(base.path("t"))], RECURSIVE);
    assert_eq!(base.show(items.next().unwrap()), "input t/a/f");
    // Had the walk listed `t/b` already, its 10 000 files would still come out.
    fs::remove_dir_all(base.path("t/b")).unwrap();
    let rest: Vec<String> = items.map(|item| base.show(item)).collect();
    assert_eq!(rest, ["error t/b: No such file or directory"]);
}

#[test]
fn an_argument_is_examined_only_when_the_walk_reaches_it() {
    let base = Base::new();
    base.file("t1/f");
    let targets = ["t1", "t2"].map(|arg| Target::from_arg(base.path(arg)));
    let mut items = walk(targets, RECURSIVE);
    assert_eq!(base.show(items.next().unwrap()), "input t1/f");
    base.file("t2/g");
    let rest: Vec<String> = items.map(|item| base.show(item)).collect();
    assert_eq!(rest, ["input t2/g"]);
}

#[test]
fn a_tree_of_ten_thousand_files_comes_out_whole_and_sorted() {
    let base = Base::new();
    // Unpadded numbers, so that bytewise order (`10` < `9`) differs from numeric order.
    for d in 0..100 {
        base.dir(&format!("t/{d}"));
        for f in 0..100 {
            fs::write(base.path(format!("t/{d}/{f}")), b"").unwrap();
        }
    }
    let walked = base.walk(&["t"], RECURSIVE);
    assert_eq!(walked.len(), 10_000);
    assert_eq!(walked[..3], ["input t/0/0", "input t/0/1", "input t/0/10"]);
    assert!(walked.is_sorted());
    if let Some(found) = base.find("t", RECURSIVE) {
        assert_eq!(walked, found);
    }
}

/// Names the base directory of the tree for the child process of
/// `an_unreadable_directory_is_an_error_and_the_walk_goes_on`.
const CHILD_BASE: &str = "MTSUM_TEST_WALK_UNREADABLE_BASE";

#[test]
fn an_unreadable_directory_is_an_error_and_the_walk_goes_on() {
    let base = Base::new();
    base.file("t/a");
    base.file("t/locked/secret");
    base.file("t/z");
    let locked = base.path("t/locked");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads any directory: then the walk runs in a child process as `nobody`.
    let walked = if fs::read_dir(&locked).is_err() {
        Some(base.walk(&["t"], RECURSIVE))
    } else {
        walk_as_nobody(&base)
    };
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    if let Some(walked) = walked {
        assert_eq!(
            walked,
            [
                "input t/a",
                "error t/locked: Permission denied",
                "input t/z"
            ]
        );
    }
}

/// Runs `unreadable_directory_child` of this test binary as user and group 65534 and returns
/// what it walked; `None`, with a note, where no such child can be started.
fn walk_as_nobody(base: &Base) -> Option<Vec<String>> {
    fs::set_permissions(&base.root, fs::Permissions::from_mode(0o755)).unwrap();
    let exe = std::env::current_exe().unwrap();
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(exe)
        .args(["--exact", "unreadable_directory_child", "--nocapture"])
        .env(CHILD_BASE, &base.root)
        .output();
    let output = match output {
        Ok(output) if String::from_utf8_lossy(&output.stdout).contains("running 1 test") => output,
        other => {
            eprintln!("note: unreadable directories not tested, setpriv failed: {other:?}");
            return None;
        }
    };
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "child failed:\n{stdout}");
    let lines = stdout.lines().filter_map(|l| l.strip_prefix("WALKED\t"));
    Some(lines.map(str::to_string).collect())
}

/// The child process of `an_unreadable_directory_is_an_error_and_the_walk_goes_on`; run on
/// its own, it has nothing to do.
#[test]
fn unreadable_directory_child() {
    let Some(path) = std::env::var_os(CHILD_BASE) else {
        return;
    };
    let base = Base {
        root: path.into(),
        _owner: None,
    };
    for line in base.walk(&["t"], RECURSIVE) {
        println!("WALKED\t{line}");
    }
}
