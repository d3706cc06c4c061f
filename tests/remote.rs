//! `http://` operands against a real HTTP server on loopback (tests/common/http_server.rs):
//! an object has the digest a local copy of its bytes has, in every layout, whatever the
//! number of connections; faults are retried or reported on one line, never turned into a
//! digest of other bytes. (`s3://` operands are tested against an S3 API server in
//! python/tests/test_s3.py.) Built without the `remote` feature, mtsum refuses URLs, and
//! tests/cli_inputs.rs checks that instead.

#![cfg(feature = "remote")]

mod common;

use std::path::Path;

use common::http_server::{Fault, HttpServer, Served};
use common::run::{Run, run_cmd};
use common::{MTSUM, pattern, tempdir, write_file};

/// The bytes of one range GET (`mtsum::source::remote::RANGE_SIZE`).
const RANGE: usize = 8 << 20;

/// Each layout with the algorithms it is tested with.
const LAYOUTS: &[(&str, &[&str])] = &[
    ("mtsum", &["sha256", "blake3"]),
    ("plain", &["sha256", "md5", "crc32c"]),
    ("merkle", &["sha256", "xxh3"]),
    ("rfc6962", &["sha256"]),
    ("s3", &["md5", "sha256"]),
    ("glacier", &["sha256"]),
    ("dropbox", &["sha256"]),
    ("btv2", &["sha256"]),
];

fn mtsum(args: &[&str]) -> Run {
    run_cmd(assert_cmd::Command::new(MTSUM).args(args))
}

/// The digests of a run's sum lines, in order.
fn digests(out: &Run) -> Vec<String> {
    out.stdout()
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

/// Serves `data` at `/NAME` and writes it to DIR/NAME.
fn serve_and_write(server: &HttpServer, dir: &Path, name: &str, data: Vec<u8>) -> (String, String) {
    let file = write_file(dir, name, &data);
    server.put(&format!("/{name}"), Served::with_etag(data, 1));
    (
        server.url(&format!("/{name}")),
        file.to_string_lossy().into_owned(),
    )
}

#[test]
fn an_object_has_the_digest_of_its_bytes_in_a_file_in_every_layout() {
    let server = HttpServer::start();
    let dir = tempdir();
    let sizes = [0, 1, 4095, RANGE - 1, RANGE, RANGE + 1, 3 * RANGE + 12_345];
    let (mut urls, mut files) = (Vec::new(), Vec::new());
    for (i, size) in sizes.iter().enumerate() {
        let (url, file) = serve_and_write(
            &server,
            dir.path(),
            &format!("o{size}"),
            pattern(*size, i as u64),
        );
        urls.push(url);
        files.push(file);
    }
    for (layout, algorithms) in LAYOUTS {
        for algorithm in *algorithms {
            let args = ["-t", layout, "-a", algorithm];
            let local = mtsum(
                &[
                    &args[..],
                    &files.iter().map(String::as_str).collect::<Vec<_>>(),
                ]
                .concat(),
            );
            let remote = mtsum(
                &[
                    &args[..],
                    &urls.iter().map(String::as_str).collect::<Vec<_>>(),
                ]
                .concat(),
            );
            // BitTorrent v2 has no root for an empty file: both fail on it alike.
            assert_eq!(
                local.code,
                remote.code,
                "{layout} {algorithm}: {}",
                remote.stderr()
            );
            assert_eq!(
                digests(&local),
                digests(&remote),
                "-t {layout} -a {algorithm}"
            );
        }
    }
}

#[test]
fn sum_lines_name_the_url_and_check_reads_them_back() {
    let server = HttpServer::start();
    let dir = tempdir();
    let (url, _) = serve_and_write(&server, dir.path(), "a", pattern(100_000, 7));
    let out = mtsum(&[&url]);
    assert!(out.code == Some(0), "{}", out.stderr());
    let line = out.stdout();
    assert!(line.ends_with(&format!("  {url}\n")), "{line}");
    let sums = write_file(dir.path(), "sums", line.as_bytes());
    let check = mtsum(&["-c", sums.to_str().unwrap()]);
    assert!(check.code == Some(0), "{}", check.stderr());
    assert_eq!(check.stdout(), format!("{url}: OK\n"));
}

#[test]
fn the_digest_does_not_depend_on_the_number_of_connections() {
    let server = HttpServer::start();
    let dir = tempdir();
    let (url, file) = serve_and_write(&server, dir.path(), "big", pattern(5 * RANGE + 3, 9));
    let local = digests(&mtsum(&["-a", "sha256", "-t", "plain", &file]));
    for connections in ["1", "2", "4", "16"] {
        for layout in ["plain", "mtsum"] {
            let local = digests(&mtsum(&["-t", layout, &file]));
            let out = mtsum(&["-t", layout, "--connections", connections, &url]);
            assert!(out.code == Some(0), "{}", out.stderr());
            assert_eq!(
                digests(&out),
                local,
                "--connections {connections} -t {layout}"
            );
        }
    }
    assert_eq!(local.len(), 1);
}

#[test]
fn unavailable_answers_and_cut_connections_are_retried() {
    let server = HttpServer::start();
    let dir = tempdir();
    let (url, file) = serve_and_write(&server, dir.path(), "a", pattern(2 * RANGE + 5, 3));
    let local = digests(&mtsum(&[&file]));
    server.inject(
        "/a",
        [
            Fault::Unavailable,
            Fault::CutMidRange,
            Fault::Unavailable,
            Fault::CutMidRange,
        ],
    );
    let out = mtsum(&["--connections", "1", &url]);
    assert!(out.code == Some(0), "{}", out.stderr());
    assert_eq!(digests(&out), local);
    assert!(
        server.range_gets() >= 3 + 4,
        "{} range GETs",
        server.range_gets()
    );
}

#[test]
fn a_range_that_keeps_failing_fails_its_object_only() {
    let server = HttpServer::start();
    let dir = tempdir();
    let (bad, _) = serve_and_write(&server, dir.path(), "bad", pattern(1000, 1));
    let (good, file) = serve_and_write(&server, dir.path(), "good", pattern(1000, 2));
    // More 503s than retries, for the first object's one range.
    server.inject("/bad", vec![Fault::Unavailable; 20]);
    let out = mtsum(&["-p", "1", "--connections", "1", &bad, &good]);
    assert_eq!(out.code, Some(1));
    let err = out.stderr();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("mtsum: {bad}: ")), "{err}");
    assert!(err.contains("503"), "{err}");
    assert_eq!(digests(&out), digests(&mtsum(&[&file])));
    assert!(
        out.stdout().ends_with(&format!("  {good}\n")),
        "{}",
        out.stdout()
    );
}

#[test]
fn an_object_replaced_between_two_range_gets_changed_while_being_read() {
    let server = HttpServer::start();
    let dir = tempdir();
    let (url, _) = serve_and_write(&server, dir.path(), "a", pattern(4 * RANGE, 1));
    let (other, _) = serve_and_write(&server, dir.path(), "b", pattern(10, 2));
    let new = Served::with_etag(pattern(4 * RANGE, 2), 2);
    server.inject("/a", [Fault::Pass, Fault::Replace(new)]);
    let out = mtsum(&["--connections", "1", &url, &other]);
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr(),
        format!("mtsum: {url}: changed while being read\n")
    );
    assert_eq!(
        out.stdout().lines().count(),
        1,
        "only the other object's line"
    );
}

#[test]
fn a_server_that_ignores_if_match_is_caught_by_the_etag_it_sends() {
    let server = HttpServer::start();
    server.ignore_conditions();
    let dir = tempdir();
    let (url, _) = serve_and_write(&server, dir.path(), "a", pattern(3 * RANGE, 1));
    let new = Served::with_etag(pattern(3 * RANGE, 2), 2);
    server.inject("/a", [Fault::Pass, Fault::Replace(new)]);
    let out = mtsum(&["--connections", "1", &url]);
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr(),
        format!("mtsum: {url}: changed while being read\n")
    );
    assert!(out.stdout().is_empty());
}

#[test]
fn without_an_etag_the_modification_time_guards_the_ranges() {
    let server = HttpServer::start();
    let data = pattern(2 * RANGE + 1, 5);
    let dir = tempdir();
    let file = write_file(dir.path(), "a", &data);
    server.put(
        "/a",
        Served::with_date(data, "Mon, 02 Mar 2026 10:00:00 GMT"),
    );
    let url = server.url("/a");
    let out = mtsum(&[&url]);
    assert!(out.code == Some(0), "{}", out.stderr());
    assert_eq!(digests(&out), digests(&mtsum(&[file.to_str().unwrap()])));
    let new = Served::with_date(pattern(2 * RANGE + 1, 6), "Tue, 03 Mar 2026 10:00:00 GMT");
    server.inject("/a", [Fault::Pass, Fault::Replace(new)]);
    let out = mtsum(&["--connections", "1", &url]);
    assert_eq!(
        out.stderr(),
        format!("mtsum: {url}: changed while being read\n")
    );
    assert!(out.stdout().is_empty());
}

#[test]
fn a_missing_object_is_one_line_and_exit_1() {
    let server = HttpServer::start();
    let url = server.url("/nothing");
    let out = mtsum(&[&url]);
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr(),
        format!("mtsum: {url}: no such object (404)\n")
    );
}

#[test]
fn a_server_that_is_not_there_is_one_line_and_exit_1() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/x");
    let out = mtsum(&[&url]);
    assert_eq!(out.code, Some(1));
    let err = out.stderr();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("mtsum: {url}: ")), "{err}");
}

#[test]
fn a_malformed_url_or_connection_count_is_a_usage_error() {
    for args in [
        &["s3:///key"][..],
        &["https:///path"],
        &["--connections", "0", "s3://b/k"],
    ] {
        let out = mtsum(args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr());
    }
}

#[test]
fn a_prefix_without_recursion_is_refused_as_a_directory_is() {
    let out = mtsum(&["--endpoint-url", "http://127.0.0.1:9", "s3://bucket/dir/"]);
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr(),
        "mtsum: s3://bucket/dir/: a prefix, not an object; hash the objects below it with -r\n"
    );
}

#[test]
fn an_object_opened_at_a_version_it_no_longer_has_changed_while_being_read() {
    use mtsum::source::remote::Url;
    use mtsum::source::{Input, InputError, Target};
    let server = HttpServer::start();
    server.put("/a", Served::with_etag(pattern(100, 1), 1));
    let url = Url::parse(&server.url("/a")).unwrap();
    let Ok(Input::Sized(object)) = Input::open(&Target::Url(url.clone())) else {
        panic!("an object opens as a sized input");
    };
    let version = object
        .remote_version()
        .expect("a remote object has a version");
    let same = Input::open(&Target::Url(url.clone().expecting(version)));
    assert!(matches!(same, Ok(Input::Sized(_))));
    server.put("/a", Served::with_etag(pattern(100, 2), 2));
    let replaced = Input::open(&Target::Url(url.expecting(version)));
    assert!(matches!(replaced, Err(InputError::Changed)));
}

#[test]
fn positioned_reads_of_an_object_give_its_bytes_even_when_read_twice() {
    use mtsum::source::remote::Url;
    use mtsum::source::{Input, Target};
    let server = HttpServer::start();
    let data = pattern(2 * RANGE + 100, 4);
    server.put("/a", Served::with_etag(data.clone(), 1));
    let url = Url::parse(&server.url("/a")).unwrap();
    let Ok(Input::Sized(object)) = Input::open(&Target::Url(url)) else {
        panic!("an object opens as a sized input");
    };
    assert_eq!(object.len(), data.len() as u64);
    // Across a range boundary, then the same bytes again, then the whole object.
    for (at, len) in [(RANGE - 10, 20), (RANGE - 10, 20), (0, data.len())] {
        let mut buf = vec![0; len];
        object.read_exact_at(&mut buf, at as u64).unwrap();
        assert!(buf == data[at..at + len], "{len} bytes at {at}");
    }
}

/// `mtsum -c -t s3 --part-size auto` of a sum file in `dir` with one line, `value  url`.
fn check_part_size_auto(dir: &Path, value: &str, url: &str) -> Run {
    let sums = write_file(dir, "etags", format!("{value}  {url}\n").as_bytes());
    let args = ["-c", "-t", "s3", "--part-size", "auto"];
    mtsum(&[&args[..], &[sums.to_str().unwrap()]].concat())
}

#[test]
fn check_finds_the_part_size_of_an_s3_value_naming_a_url() {
    let server = HttpServer::start();
    let dir = tempdir();
    let (url, file) = serve_and_write(&server, dir.path(), "a", pattern(12 * (1 << 20) + 1, 8));
    // The ETag of a multipart upload in parts of 5 MiB: three parts.
    let etag = digests(&mtsum(&["-t", "s3", "--part-size", "5M", &file]));
    assert!(etag[0].ends_with("-3"), "{etag:?}");
    let check = |value: &str| check_part_size_auto(dir.path(), value, &url);
    let out = check(&etag[0]);
    assert!(out.code == Some(0), "{}", out.stderr());
    assert_eq!(out.stdout(), format!("{url}: OK (--part-size 5M)\n"));
    // A value of another object's: no size gives it.
    let out = check(&format!("{}-3", "0".repeat(32)));
    assert_eq!(out.code, Some(1));
    assert!(
        out.stdout().starts_with(&format!("{url}: FAILED (")),
        "{}",
        out.stdout()
    );
}

#[test]
fn check_downloads_an_object_once_however_many_part_sizes_it_tries() {
    let server = HttpServer::start();
    let dir = tempdir();
    let data = pattern(20 * (1 << 20) + 3, 9);
    let len = data.len() as u64;
    let (url, file) = serve_and_write(&server, dir.path(), "a", data);
    // Two parts of 16 MiB: every whole MiB from 11 to 20 gives two parts too, and more.
    let etag = digests(&mtsum(&["-t", "s3", "--part-size", "16M", &file]));
    assert!(etag[0].ends_with("-2"), "{etag:?}");
    let check = |value: &str| check_part_size_auto(dir.path(), value, &url);
    let out = check(&etag[0]);
    assert!(out.code == Some(0), "{}", out.stderr());
    assert_eq!(out.stdout(), format!("{url}: OK (--part-size 16M)\n"));
    assert_eq!(
        server.bytes_served("/a"),
        len,
        "one download, not one per size"
    );
    // A value no size gives: every size is tried, still in one download.
    let out = check(&format!("{}-2", "0".repeat(32)));
    assert_eq!(out.code, Some(1));
    let text = out.stdout();
    let tried: usize = text
        .strip_prefix(&format!("{url}: FAILED ("))
        .and_then(|rest| rest.split_once(' '))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(tried > 8, "{text}");
    assert_eq!(server.bytes_served("/a"), 2 * len);
}
