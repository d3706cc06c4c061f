//! The range API ([`mtsum::range`]): a file hashed in ranges, in any order and split, combines
//! into the root of a local run and of the reference, for every layout and algorithm; partial
//! sets that do not cover the file once, or come from another input, are refused.

mod common;

use std::ops::Range;

use mtsum::engine::{Engine, Request};
use mtsum::range::{self, Partial, RangeError, Spec};
use mtsum::source::{InputError, Target};
use mtsum::{Algorithm, Layout, LeafSize, reference};

use common::{TARGET_JOB_BYTES as JOB, pattern, tempdir, write_file};

fn leaf(bytes: u64) -> LeafSize {
    LeafSize::new(bytes).unwrap()
}

/// Every layout, the fixed-leaf ones with leaves that make jobs of many leaves (64 bytes),
/// of one leaf that lanes take whole (1 MiB), and longer than a job (5 MiB).
fn layouts() -> Vec<Layout> {
    vec![
        Layout::Mtsum,
        Layout::Plain,
        Layout::Merkle(leaf(64)),
        Layout::Merkle(leaf(1 << 20)),
        Layout::Rfc6962(leaf(64)),
        Layout::Rfc6962(leaf(1 << 20)),
        Layout::Rfc6962(leaf(5 << 20)),
        Layout::S3(mtsum::layout::PartSize::new(5 << 20).unwrap()),
        Layout::Glacier,
        Layout::Dropbox,
        Layout::Btv2,
    ]
}

fn spec(layout: Layout, algorithm: Algorithm, size: u64) -> Spec {
    Spec {
        layout,
        algorithm,
        size,
    }
}

/// The partials of `ranges` of the file at `path`.
fn partials(
    engine: &Engine,
    path: &std::path::Path,
    spec: Spec,
    ranges: &[Range<u64>],
) -> Vec<Partial> {
    ranges
        .iter()
        .map(|r| {
            let target = Target::Path(path.to_path_buf());
            range::hash_range(engine, target, spec, r.clone())
                .expect("a range of the plan")
                .expect("a readable file")
        })
        .collect()
}

#[test]
fn ranges_of_every_plan_combine_into_the_root_in_any_order() {
    let dir = tempdir();
    let data = pattern((5 * JOB + 123) as usize, 7);
    let engine = Engine::default();
    let small = [0, 1, 1000, JOB - 1, JOB + 1];
    for layout in layouts() {
        // Each with the algorithms it is defined with (a CRC has no tree).
        let algorithms = Algorithm::ALL.into_iter();
        for algorithm in algorithms.filter(|&a| layout.check_algorithm(a).is_ok()) {
            let sizes = small.iter().map(|&s| (s, &[1, 2, 64][..]));
            let large = std::iter::once((data.len() as u64, &[3, 64][..]));
            for (size, parts) in sizes.chain(large) {
                let bytes = &data[..size as usize];
                let path = write_file(dir.path(), "f", bytes);
                // An empty file has no BitTorrent v2 pieces root (tests/storage.rs).
                let Ok(want) = reference::checksum(layout, algorithm, bytes) else {
                    continue;
                };
                let request = Request::new(layout, algorithm);
                let local = engine.hash(&request, Target::Path(path.clone())).unwrap();
                assert_eq!(local.root, want, "{layout} {algorithm:?} {size}: engine");
                let spec = spec(layout, algorithm, size);
                for &n in parts {
                    let plan = range::plan(spec, n).unwrap();
                    assert!(plan.len() <= n, "{layout} {algorithm:?} {size}: {n} parts");
                    let mut got = partials(&engine, &path, spec, &plan);
                    let case = format!("{layout} {algorithm:?} {size} bytes in {n} parts");
                    assert_eq!(range::combine(got.clone()), Ok(want), "{case}");
                    got.reverse();
                    assert_eq!(range::combine(got.clone()), Ok(want), "{case}, reversed");
                    let half = got.len() / 2;
                    got.rotate_left(half);
                    let lines: Vec<Partial> = got
                        .iter()
                        .map(|p| Partial::from_line(&p.to_line()).unwrap())
                        .collect();
                    assert_eq!(range::combine(lines), Ok(want), "{case}, through lines");
                }
            }
        }
    }
}

#[test]
fn plan_cuts_a_plain_stream_only_for_a_tree_algorithm() {
    let size = 10 * JOB;
    let sha = range::plan(spec(Layout::Plain, Algorithm::Sha256, size), 8).unwrap();
    assert_eq!(sha, vec![0..size]);
    let blake3 = range::plan(spec(Layout::Plain, Algorithm::Blake3, size), 5).unwrap();
    assert_eq!(
        blake3,
        (0..5)
            .map(|i| 2 * i * JOB..2 * (i + 1) * JOB)
            .collect::<Vec<_>>()
    );
}

#[test]
fn plan_gives_about_equal_ranges_on_job_boundaries_at_most_parts() {
    let size = 100 * JOB + 5;
    let spec = spec(Layout::Rfc6962(leaf(4096)), Algorithm::Sha256, size);
    for parts in [1, 2, 3, 7, 99, 101, 1000] {
        let plan = range::plan(spec, parts).unwrap();
        assert_eq!(plan.len(), parts.min(101), "{parts}");
        assert_eq!((plan[0].start, plan[plan.len() - 1].end), (0, size));
        assert!(plan.windows(2).all(|w| w[0].end == w[1].start));
        assert!(plan[..plan.len() - 1].iter().all(|r| r.end % JOB == 0));
        let longest = plan.iter().map(|r| r.end - r.start).max().unwrap();
        assert!(
            longest <= (size / parts as u64).next_multiple_of(JOB) + JOB,
            "{parts}"
        );
    }
    assert_eq!(range::plan(spec, 0), Err(RangeError::NoParts));
}

#[test]
fn plan_of_an_empty_file_is_one_empty_range() {
    for layout in layouts() {
        assert_eq!(
            range::plan(spec(layout, Algorithm::Md5, 0), 4),
            Ok(std::iter::once(0..0).collect())
        );
    }
}

/// A range of a fixed-leaf layout is the few largest aligned subtrees it holds, not one digest
/// per job: the first four jobs are one subtree, then the fifth job, then the short tail.
#[test]
fn a_partial_of_a_fixed_leaf_layout_holds_whole_aligned_subtrees() {
    let size = 5 * JOB + 123;
    let s = spec(Layout::Rfc6962(leaf(64)), Algorithm::Sha256, size);
    let nodes = range::nodes(s, 0..size).unwrap();
    assert_eq!(nodes, vec![0..4 * JOB, 4 * JOB..5 * JOB, 5 * JOB..size]);
    assert_eq!(
        range::nodes(s, JOB..5 * JOB).unwrap(),
        vec![JOB..2 * JOB, 2 * JOB..4 * JOB, 4 * JOB..5 * JOB]
    );
    // 1 TiB in 1 MiB leaves is 2^18 jobs of 4 MiB; the whole file is one subtree.
    let tib = spec(Layout::Merkle(leaf(1 << 20)), Algorithm::Sha256, 1 << 40);
    assert_eq!(range::nodes(tib, 0..1 << 40).unwrap().len(), 1);
    let plan = range::plan(tib, 1000).unwrap();
    let most = plan
        .iter()
        .map(|r| range::nodes(tib, r.clone()).unwrap().len())
        .max();
    assert!(most.unwrap() <= 2 * 18, "{most:?}");
}

/// The partials of a file of three jobs, one per range.
fn three_partials() -> (Spec, Vec<Partial>, tempfile::TempDir) {
    let dir = tempdir();
    let size = 2 * JOB + 10;
    let path = write_file(dir.path(), "f", &pattern(size as usize, 3));
    let s = spec(Layout::Rfc6962(leaf(1024)), Algorithm::Sha256, size);
    let plan = range::plan(s, 3).unwrap();
    assert_eq!(plan.len(), 3);
    (s, partials(&Engine::default(), &path, s, &plan), dir)
}

#[test]
fn combine_refuses_a_missing_range() {
    let (_, mut p, _dir) = three_partials();
    p.remove(1);
    assert_eq!(
        range::combine(p.clone()),
        Err(RangeError::Missing(JOB, 2 * JOB))
    );
    let last = p.pop().unwrap();
    assert_eq!(
        range::combine(p),
        Err(RangeError::Missing(JOB, last.spec.size))
    );
    assert_eq!(range::combine(vec![]), Err(RangeError::Empty));
}

#[test]
fn combine_refuses_overlapping_ranges_and_takes_a_repeated_one_once() {
    let (s, p, dir) = three_partials();
    let path = dir.path().join("f");
    let wide = partials(
        &Engine::default(),
        &path,
        s,
        &[std::iter::once(0..2 * JOB).collect::<Vec<_>>()].concat(),
    );
    let mut set = p.clone();
    set.extend(wide);
    assert_eq!(
        range::combine(set),
        Err(RangeError::Overlap(0, JOB, 0, 2 * JOB))
    );
    let want = range::combine(p.clone()).unwrap();
    let mut twice = p.clone();
    twice.push(p[1].clone());
    assert_eq!(range::combine(twice.clone()), Ok(want));
    twice[3].digests[0] = twice[0].digests[0];
    assert_eq!(
        range::combine(twice),
        Err(RangeError::Disagree(JOB, 2 * JOB))
    );
}

#[test]
fn combine_refuses_partials_of_another_layout_algorithm_or_size() {
    let (s, p, _dir) = three_partials();
    let others = [
        Spec {
            layout: Layout::Merkle(leaf(1024)),
            ..s
        },
        Spec {
            layout: Layout::Rfc6962(leaf(2048)),
            ..s
        },
        Spec {
            algorithm: Algorithm::Blake3,
            ..s
        },
        Spec {
            size: s.size + 1,
            ..s
        },
    ];
    for other in others {
        let mut set = p.clone();
        set[2].spec = other;
        assert_eq!(
            range::combine(set),
            Err(RangeError::Mixed(s, other)),
            "{other}"
        );
    }
}

#[test]
fn combine_refuses_a_partial_whose_digests_do_not_fit_its_range() {
    let (_, mut p, _dir) = three_partials();
    let first = p[0].digests[0];
    p[0].digests.push(first);
    let err = range::combine(p).unwrap_err();
    assert_eq!(
        err,
        RangeError::Count {
            start: 0,
            end: JOB,
            got: 2,
            want: 1
        }
    );
}

#[test]
fn a_range_off_the_plan_is_refused() {
    let (s, p, dir) = three_partials();
    let target = || Target::Path(dir.path().join("f"));
    let engine = Engine::default();
    for bad in [1..JOB, 0..JOB + 1, JOB..JOB, 0..s.size + 1] {
        let err = range::hash_range(&engine, target(), s, bad.clone()).unwrap_err();
        let (start, end) = (bad.start, bad.end);
        assert_eq!(
            err,
            RangeError::NotOnPlan {
                spec: s,
                start,
                end
            }
        );
        let mut forged = p[0].clone();
        forged.range = bad;
        assert!(matches!(
            range::combine([forged]),
            Err(RangeError::NotOnPlan { .. })
        ));
    }
    let message = range::hash_range(&engine, target(), s, 1..JOB)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("bytes 1-4194304 are not a range of the plan of RFC6962-SHA256-1K"),
        "{message}"
    );
}

#[test]
fn a_range_of_a_file_of_another_size_is_a_changed_file() {
    let (s, _, dir) = three_partials();
    let target = Target::Path(dir.path().join("f"));
    let smaller = Spec {
        size: s.size - 10,
        ..s
    };
    let got = range::hash_range(&Engine::default(), target, smaller, 0..JOB).unwrap();
    assert!(matches!(got, Err(InputError::Changed)), "{got:?}");
}

#[test]
fn a_partial_line_round_trips_and_garbage_is_refused() {
    let (_, p, _dir) = three_partials();
    let line = p[2].to_line();
    assert!(
        line.starts_with(&format!(
            "MTSUM-PARTIAL/2 RFC6962-SHA256-1K {} {}-{} ",
            p[2].spec.size,
            2 * JOB,
            p[2].spec.size
        )),
        "{line}"
    );
    assert_eq!(Partial::from_line(&format!("  {line}\n")), Ok(p[2].clone()));
    let garbage = [
        String::new(),
        "hello".into(),
        line.replace("PARTIAL/2", "PARTIAL/1"),
        line.replace("RFC6962", "NOPE"),
        format!("{line}0"),
        format!("{line} extra"),
        line.replace(" 8388608-", " x-"),
        line.replace(" 8388608-", " 8388608+"),
    ];
    for g in garbage {
        assert!(
            matches!(Partial::from_line(&g), Err(RangeError::Syntax(_))),
            "{g:?}"
        );
    }
}

/// `mtsum ARGS` in `dir` with `stdin`: stdout, stderr and the exit status. mtsum may refuse
/// standard input before reading it (`--range` of `-`), which is no failure of the writing.
fn mtsum<S: AsRef<std::ffi::OsStr>>(
    dir: &std::path::Path,
    args: &[S],
    stdin: &[u8],
) -> (String, String, i32) {
    let run = common::run::run_stdin(dir, args, stdin);
    let code = run.code.expect("mtsum exits");
    (run.stdout().to_string(), run.stderr().to_string(), code)
}

#[test]
fn cli_plan_range_each_then_combine_prints_the_line_of_mtsum_file() {
    let dir = tempdir();
    let size = 3 * JOB + 77;
    write_file(dir.path(), "big file", &pattern(size as usize, 11));
    let options: [(&[&str], &[&str]); 7] = [
        (&[], &[]),
        (&["-t", "rfc6962", "-l", "4K"], &[]),
        (&["-t", "merkle", "-a", "md5"], &[]),
        (&["-t", "plain", "-a", "blake3"], &["--tag"]),
        (&["-t", "plain", "-a", "sha1"], &["--tag"]),
        // --base64 spells the combined root as it spells the root of the whole file.
        (&["-t", "glacier"], &["--base64"]),
        (
            &["-t", "s3", "--part-size", "5M"],
            &["--base64", "--no-names"],
        ),
    ];
    for (opts, tag) in options {
        let with = |extra: &[&str]| -> Vec<String> {
            opts.iter().chain(extra).map(|s| s.to_string()).collect()
        };
        let (plan, _, status) = mtsum(dir.path(), &with(&["--plan", "3", "big file"]), b"");
        assert_eq!(status, 0, "{opts:?}");
        let mut partials = Vec::new();
        for range in plan.lines().rev() {
            let (line, err, status) =
                mtsum(dir.path(), &with(&["--range", range, "big file"]), b"");
            assert_eq!((status, err.as_str()), (0, ""), "{opts:?} {range}");
            assert!(
                line.starts_with("MTSUM-PARTIAL/2 ") && line.ends_with("  big file\n"),
                "{line}"
            );
            partials.push(line);
        }
        let (want, _, _) = mtsum(dir.path(), &with(&[tag, &["big file"]].concat()), b"");
        // From standard input, and from one file per partial.
        let combined = mtsum(
            dir.path(),
            &[tag, &["--combine", "-"]].concat(),
            partials.concat().as_bytes(),
        );
        assert_eq!(combined, (want.clone(), String::new(), 0), "{opts:?}");
        let mut names = Vec::new();
        for (i, p) in partials.iter().enumerate() {
            let name = format!("part{i}");
            write_file(dir.path(), &name, p.as_bytes());
            names.push(name);
        }
        let args: Vec<&str> = tag
            .iter()
            .copied()
            .chain(["--combine"])
            .chain(names.iter().map(String::as_str))
            .collect();
        assert_eq!(
            mtsum(dir.path(), &args, b""),
            (want, String::new(), 0),
            "{opts:?}"
        );
    }
}

#[test]
fn cli_plan_lines_carry_the_size_and_every_range_of_a_file_of_another_size_fails_as_changed() {
    let dir = tempdir();
    let size = 3 * JOB + 77;
    let path = write_file(dir.path(), "f", &pattern(size as usize, 5));
    let (plan, _, status) = mtsum(dir.path(), &["-t", "rfc6962", "--plan", "3", "f"], b"");
    assert_eq!(status, 0);
    let want: Vec<String> = (0..3)
        .map(|i| {
            let end = if i == 2 { size } else { (i + 1) * JOB };
            format!("{}-{end}/{size}", i * JOB)
        })
        .collect();
    assert_eq!(plan.lines().collect::<Vec<_>>(), want);
    // Grown by a byte, then shrunk by one: no range of the old plan hashes, not only the last.
    for new_size in [size + 1, size - 1] {
        write_file(dir.path(), "f", &pattern(new_size as usize, 5));
        for range in plan.lines() {
            let got = mtsum(dir.path(), &["-t", "rfc6962", "--range", range, "f"], b"");
            let changed = ("".into(), "mtsum: f: changed while being read\n".into(), 1);
            assert_eq!(got, changed, "{range} of a file of {new_size} bytes");
        }
    }
    // The size is the plan's, not the file's: a partial says it, and --combine refuses a mix.
    std::fs::write(&path, pattern(size as usize, 5)).unwrap();
    let (first, _, _) = mtsum(
        dir.path(),
        &["-t", "rfc6962", "--range", &want[0], "f"],
        b"",
    );
    assert!(first.starts_with(&format!(
        "MTSUM-PARTIAL/2 RFC6962-SHA256-1M {size} 0-{JOB} "
    )));
}

/// One rule for the three steps: what would not change their output is refused (status 2),
/// never ignored; `--combine` takes what the file was hashed as from the partials.
#[test]
fn cli_options_that_do_not_apply_to_a_step_are_refused_not_ignored() {
    let dir = tempdir();
    write_file(dir.path(), "f", b"bytes");
    let cases: [(&[&str], &str); 7] = [
        (
            &["--combine", "-t", "merkle", "-"],
            "'--combine' cannot be used with '--tree",
        ),
        (
            &["--combine", "-a", "md5", "-"],
            "'--combine' cannot be used with '-a",
        ),
        (
            &["--combine", "-l", "4K", "-"],
            "'--combine' cannot be used with '--leaf-size",
        ),
        (
            &["--combine", "--part-size", "8M", "-"],
            "'--combine' cannot be used with '--part-size",
        ),
        (
            &["--combine", "--json", "-"],
            "'--combine' cannot be used with '--json'",
        ),
        (
            &["--plan", "2", "--base64", "f"],
            "'--plan <N>' cannot be used with '--base64'",
        ),
        (
            &["--range", "0-5/5", "--base64", "f"],
            "cannot be used with '--base64'",
        ),
    ];
    for (args, want) in cases {
        let (out, err, status) = mtsum(dir.path(), args, b"");
        assert_eq!((status, out.as_str()), (2, ""), "{args:?}: {err}");
        assert!(
            err.contains(want) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    // What a root line is printed as still applies to --combine.
    let (partial, _, _) = mtsum(dir.path(), &["--range", "0-5/5", "f"], b"");
    let (want, _, _) = mtsum(dir.path(), &["--tag", "--base64", "f"], b"");
    let got = mtsum(
        dir.path(),
        &["--combine", "--tag", "--base64", "-"],
        partial.as_bytes(),
    );
    assert_eq!(got, (want, String::new(), 0));
}

#[test]
fn cli_refuses_bad_ranges_and_partials_with_one_line_each() {
    let dir = tempdir();
    write_file(dir.path(), "f", &pattern((JOB + 5) as usize, 1));
    let size = JOB + 5;
    let bad = format!("1-5/{size}");
    let (_, err, status) = mtsum(dir.path(), &["-t", "rfc6962", "--range", &bad, "f"], b"");
    assert_eq!(status, 2);
    assert!(
        err.starts_with("mtsum: f: bytes 1-5 are not a range of the plan")
            && err.lines().count() == 1,
        "{err}"
    );
    // A range without the size it was planned for could not tell a changed file.
    for unplanned in ["x", "0-5", "0-5/", "0-5/x"] {
        let (_, err, status) = mtsum(dir.path(), &["--range", unplanned, "f"], b"");
        assert_eq!(
            (status, err.as_str()),
            (
                2,
                format!(
                    "mtsum: invalid value '{unplanned}' for '--range <START-END/SIZE>': '{unplanned}' is not a line of --plan: START-END/SIZE (try 'mtsum --help')\n"
                )
                .as_str()
            )
        );
    }
    let (_, err, status) = mtsum(dir.path(), &["--plan", "0", "f"], b"");
    assert_eq!(
        (status, err.as_str()),
        (
            2,
            "mtsum: invalid value '0' for '--plan <N>': the number of ranges must be at least 1 (try 'mtsum --help')\n"
        )
    );
    let (_, err, status) = mtsum(dir.path(), &["--plan", "2", "f", "f"], b"");
    assert_eq!(
        (status, err.as_str()),
        (2, "mtsum: --plan takes one file (try 'mtsum --help')\n")
    );
    for stdin in [&["--range", "0-5/5"][..], &["--range", "0-5/5", "-"]] {
        let (out, err, status) = mtsum(dir.path(), stdin, b"bytes");
        assert_eq!(
            (status, out.as_str(), err.as_str()),
            (
                2,
                "",
                "mtsum: --range needs a named file, not standard input (try 'mtsum --help')\n"
            )
        );
    }
    let (_, err, status) = mtsum(dir.path(), &["--combine", "-"], b"junk\n");
    assert_eq!(
        (status, err.as_str()),
        (1, "mtsum: -: not a partial line: \"junk\"\n")
    );
    let (first, _, _) = mtsum(
        dir.path(),
        &["-t", "rfc6962", "--range", &format!("0-{JOB}/{size}"), "f"],
        b"",
    );
    let (_, err, status) = mtsum(dir.path(), &["--combine", "-"], first.as_bytes());
    assert_eq!(
        (status, err.as_str()),
        (
            1,
            format!("mtsum: bytes {JOB}-{size} are missing (no partial covers them)\n").as_str()
        )
    );
    let (_, err, status) = mtsum(dir.path(), &["--combine", "nothere"], b"");
    assert_eq!(
        (status, err.as_str()),
        (1, "mtsum: nothere: No such file or directory\n")
    );
}

#[test]
fn a_size_of_more_jobs_than_a_plan_holds_is_refused_before_the_jobs_are_made() {
    let dir = tempdir();
    let path = write_file(dir.path(), "f", b"small");
    let huge = |size| spec(Layout::Mtsum, Algorithm::Sha256, size);
    let too_large = |size: u64| RangeError::TooLarge {
        spec: huge(size),
        jobs: Layout::Mtsum.job_count(Algorithm::Sha256, size),
    };
    // 2^63 bytes are 2^36 leaves: made in memory, 2 TiB of plan.
    assert_eq!(
        range::plan(huge(1 << 63), 1_000_000),
        Err(too_large(1 << 63))
    );
    let engine = Engine::default();
    let got = range::hash_range(&engine, Target::Path(path), huge(1 << 62), 0..1 << 62);
    assert_eq!(got.unwrap_err(), too_large(1 << 62));
    let forged = "MTSUM-PARTIAL/2 MTSUM-SHA256 1000000000000000000 0-0 -";
    let partial = Partial::from_line(forged).unwrap();
    let err = range::combine([partial]).unwrap_err();
    assert_eq!(err, too_large(1_000_000_000_000_000_000));
    assert_eq!(
        err.to_string(),
        format!(
            "MTSUM-SHA256, 1000000000000000000 bytes is too large to plan: {} jobs, at most {}",
            Layout::Mtsum.job_count(Algorithm::Sha256, 1_000_000_000_000_000_000),
            range::MAX_JOBS
        )
    );
    // A petabyte is still planned.
    assert_eq!(range::plan(huge(1 << 50), 2).unwrap().len(), 2);
}

#[test]
fn cli_refuses_a_forged_partial_of_a_huge_file_with_one_line() {
    let dir = tempdir();
    let forged = b"MTSUM-PARTIAL/2 MTSUM-SHA256 1000000000000000000 0-0 -\n";
    let (out, err, status) = mtsum(dir.path(), &["--combine", "-"], forged);
    assert_eq!((status, out.as_str()), (1, ""), "{err}");
    assert!(
        err.starts_with("mtsum: MTSUM-SHA256, 1000000000000000000 bytes is too large to plan")
            && err.lines().count() == 1,
        "{err}"
    );
}
