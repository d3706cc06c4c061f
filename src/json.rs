//! `--json`: one JSON object per line for scripts, in every mode that has the flag (hashing,
//! `-c` and `--audit`). It is an output format only: `-c` does not read it back.
//!
//! Every object about a file starts with the file's `path` (see [`path`]), so that a script
//! can match objects to inputs whatever else they hold; a sum file is named by `sumfile`,
//! the same way. Summaries are `{"summary":{…}}`. Fields that describe a digest are the same
//! in every object that has one: `layout`, `leaf_size` (`null` for layouts without leaves;
//! `part_sizes` beside it for S3's parts of different sizes),
//! `algorithm` and `digest` (hex; S3's values as S3 shows them). Times of files (`mtime`, `recorded_mtime`) are strings
//! `SECONDS.NANOSECONDS`: a JSON number would lose the nanoseconds.
//!
//! ```
//! use mtsum::json;
//! let line = json::error(b"gone.txt", &"No such file or directory");
//! assert_eq!(line, b"{\"path\":\"gone.txt\",\"error\":\"No such file or directory\"}\n");
//! ```

use std::fmt::Display;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::algorithm::Algorithm;
use crate::audit::{Action, Prior, Status, Summary, Verdict};
use crate::check::verdict::LineVerdict;
use crate::compare::record::{
    Record as Compared, Status as CompareStatus, Summary as CompareSummary,
};
use crate::engine::FileDigest;
use crate::layout::Layout;
use crate::stored::{NoValue, StoredObject, StoredValue};

/// A JSON object under construction.
pub type Object = Map<String, Value>;

/// An object holding `name` as `path`, and as `path_bytes` (an array of byte values) when it
/// is not UTF-8, since `path` then holds it lossily: the start of every object.
pub fn path(name: &[u8]) -> Object {
    let mut object = Object::new();
    insert_name(&mut object, "path", name);
    object
}

/// `name` as `key`, and as `key_bytes` when it is not UTF-8 (see [`path`]).
fn insert_name(object: &mut Object, key: &str, name: &[u8]) {
    object.insert(key.into(), String::from_utf8_lossy(name).into());
    if std::str::from_utf8(name).is_err() {
        object.insert(format!("{key}_bytes"), name.to_vec().into());
    }
}

/// `object` as one line of JSON, newline included.
pub fn line(object: Object) -> Vec<u8> {
    let mut line = Value::Object(object).to_string().into_bytes();
    line.push(b'\n');
    line
}

/// The line for a hashed input: `{"path":…,"size":…,"layout":…,"leaf_size":…,
/// "algorithm":…,"digest":…,"seconds":…}`.
pub fn digest(name: &[u8], layout: Layout, alg: Algorithm, digest: &FileDigest) -> Vec<u8> {
    let mut object = path(name);
    object.insert("size".into(), digest.size.into());
    insert_digest(&mut object, layout, alg, &digest.root);
    object.insert("seconds".into(), digest.elapsed.as_secs_f64().into());
    line(object)
}

/// The line for an input that failed: `{"path":…,"error":…}`.
pub fn error(name: &[u8], error: &dyn Display) -> Vec<u8> {
    let mut object = path(name);
    object.insert("error".into(), error.to_string().into());
    line(object)
}

/// The line for an audited file: path, status, the file now (size, mtime, layout,
/// leaf_size, algorithm, digest), the record before (record, expected, recorded_size,
/// recorded_mtime), where a corrupt file differs (damaged: `[[start, end_exclusive], …]`),
/// action, error, action_error, repair_error.
pub fn verdict(name: &[u8], v: &Verdict) -> Vec<u8> {
    let mut o = path(name);
    o.insert("status".into(), v.status.name().into());
    if let Some(stamp) = v.state {
        o.insert("size".into(), stamp.len.into());
        o.insert("mtime".into(), stamp.mtime.to_string().into());
    }
    if let Some(r) = &v.current {
        insert_digest(&mut o, r.layout, r.algorithm, &r.value);
    }
    match &v.prior {
        Prior::None => {}
        Prior::Record(r) => {
            o.insert("record".into(), r.tag().into());
            o.insert("expected".into(), r.value.to_string().into());
            o.insert("recorded_size".into(), r.stamp.len.into());
            o.insert("recorded_mtime".into(), r.stamp.mtime.to_string().into());
        }
        Prior::Cshatag { mtime, digest } => {
            o.insert("record".into(), "cshatag".into());
            o.insert("expected".into(), digest.to_hex().into());
            o.insert("recorded_mtime".into(), mtime.to_string().into());
        }
        Prior::Unusable(_) => {
            o.insert("record".into(), "unusable".into());
        }
    }
    if let Some(damaged) = &v.damaged {
        let ranges: Vec<serde_json::Value> = damaged
            .iter()
            .map(|r| serde_json::json!([r.start, r.end]))
            .collect();
        o.insert("damaged".into(), ranges.into());
    }
    o.insert("action".into(), v.action.name().into());
    if let Some(e) = &v.error {
        o.insert("error".into(), e.to_string().into());
    }
    if let Some(e) = &v.action_error {
        o.insert("action_error".into(), e.to_string().into());
    }
    if let Some(e) = &v.repair_error {
        o.insert("repair_error".into(), e.to_string().into());
    }
    line(o)
}

/// The line for a record removed by `--forget`: `{"path":…,"action":"forgotten"}`, with
/// `action_error` when the store refused.
pub fn forgotten(name: &[u8], action_error: Option<&dyn Display>) -> Vec<u8> {
    let mut o = path(name);
    o.insert("action".into(), Action::Forgotten.name().into());
    if let Some(e) = action_error {
        o.insert("action_error".into(), e.to_string().into());
    }
    line(o)
}

/// The last line of an audit: `{"summary":{"files":…,"ok":…,…,"recorded":…,…,
/// "action_errors":…,"bytes":…,"not_due":…,"deferred":…,"no_value":…,"seconds":…,"dry_run":…,
/// "clean":…}}`, a count for every status and every action.
pub fn audit_summary(s: &Summary, dry_run: bool, elapsed: Duration) -> Vec<u8> {
    let mut o = Object::new();
    o.insert("files".into(), s.files().into());
    for status in Status::ALL {
        o.insert(status.name().into(), s.count(status).into());
    }
    // `repaired` is a status and an action: the status's count, the files that check out
    // again (a dry run repairs nothing, its action counts the files it would repair).
    for action in Action::ALL {
        o.entry(action.name())
            .or_insert_with(|| s.actions(action).into());
    }
    o.insert("action_errors".into(), s.action_errors.into());
    o.insert("bytes".into(), s.bytes.into());
    o.insert("not_due".into(), s.not_due.into());
    o.insert("deferred".into(), s.deferred.into());
    o.insert("no_value".into(), s.no_value.into());
    o.insert("seconds".into(), elapsed.as_secs_f64().into());
    o.insert("dry_run".into(), dry_run.into());
    o.insert("clean".into(), s.is_clean().into());
    summary(o)
}

/// The line for a checksum line that `-c` checked: `{"path":…,"status":…,"layout":…,
/// "leaf_size":…,"algorithm":…,"expected":…,"digest":…,"size":…,"seconds":…,
/// "part_sizes_tried":…,"error":…,"sumfile":…,"line":…}`. `status` is `ok`, `failed`,
/// `missing` or `unreadable`; `expected` is the line's value as written, `digest` the file's in
/// the same encoding (hex or base64); `digest`, `size` and `seconds` are there when the file
/// was hashed, `error` when it could not be, and `part_sizes_tried` with `--part-size auto`,
/// whose matching size is the `leaf_size`.
pub fn check_line(v: &LineVerdict) -> Vec<u8> {
    let mut o = path(v.name);
    o.insert("status".into(), v.status.name().into());
    insert_kind(&mut o, v.layout, v.algorithm);
    o.insert("expected".into(), v.expected.to_string().into());
    if let Some(digest) = &v.digest {
        // In the line's encoding (hex or base64), so that an ok line's `digest` equals its
        // `expected`, and hash mode with `--base64` prints the same.
        let root = digest.root.with_encoding(v.expected.encoding());
        o.insert("digest".into(), root.to_string().into());
        o.insert("size".into(), digest.size.into());
        o.insert("seconds".into(), digest.elapsed.as_secs_f64().into());
    }
    if let Some(tried) = v.sizes_tried {
        o.insert("part_sizes_tried".into(), tried.into());
    }
    if let Some(e) = &v.error {
        o.insert("error".into(), e.to_string().into());
    }
    insert_name(&mut o, "sumfile", v.sum_file);
    o.insert("line".into(), v.line.into());
    line(o)
}

/// The line for a line of a sum file that `-c` could not read as a checksum line:
/// `{"status":"improper","sumfile":…,"line":…,"error":…}`.
pub fn improper_line(sum_file: &[u8], line_no: u64, cause: &str) -> Vec<u8> {
    let mut o = Object::new();
    o.insert("status".into(), "improper".into());
    insert_name(&mut o, "sumfile", sum_file);
    o.insert("line".into(), line_no.into());
    o.insert("error".into(), cause.into());
    line(o)
}

/// The line after each sum file `-c` read: `{"summary":{"sumfile":…,"ok":…,"failed":…,
/// "missing":…,"unreadable":…,"improper":…,"passed":…,"error":…}}`, `counts` in that
/// order; `error` says what failed the sum file as a whole (it could not be read, it held
/// no checksum line, or none of its files was there with `--ignore-missing`).
pub fn check_summary(
    sum_file: &[u8],
    counts: &[(&str, u64)],
    passed: bool,
    error: Option<&str>,
) -> Vec<u8> {
    let mut o = Object::new();
    insert_name(&mut o, "sumfile", sum_file);
    for &(name, count) in counts {
        o.insert(name.into(), count.into());
    }
    o.insert("passed".into(), passed.into());
    if let Some(e) = error {
        o.insert("error".into(), e.into());
    }
    summary(o)
}

/// The line for a name `--compare` met: `{"path":…,"status":…,"method":…,"size":…,
/// "remote_size":…,"layout":…,"leaf_size":…,"algorithm":…,"expected":…,"digest":…,
/// "part_sizes_tried":…,"why":…,"error":…}`, as `-c --json` names the same things: `path`
/// relative to both roots, `status` one of `ok`, `differs`, `only-local`, `only-remote`,
/// `unverified`, `unreadable`; `method` how it was decided (`size`, `stored`: the local file
/// against the store's value, `read`: both sides' bytes); `expected` the remote side's value,
/// `digest` the local one's; `why` for `unverified`, `error` (and `error_path`, the side that
/// failed) for `unreadable`. Fields that do not apply are left out.
pub fn compare_record(r: &Compared) -> Vec<u8> {
    let mut o = path(&r.name);
    o.insert("status".into(), r.status.name().into());
    if let Some(method) = r.method {
        o.insert("method".into(), method.name().into());
    }
    if let Some(size) = r.size {
        o.insert("size".into(), size.into());
    }
    if let Some(size) = r.remote_size {
        o.insert("remote_size".into(), size.into());
    }
    if let (Some(layout), Some(alg)) = (r.layout, r.algorithm) {
        insert_kind(&mut o, layout, alg);
    }
    if let Some(expected) = &r.expected {
        o.insert("expected".into(), expected.to_string().into());
    }
    if let Some(digest) = &r.digest {
        o.insert("digest".into(), digest.to_string().into());
    }
    if let Some(tried) = r.sizes_tried {
        o.insert("part_sizes_tried".into(), tried.into());
    }
    if let Some(why) = &r.why {
        o.insert("why".into(), why.as_str().into());
    }
    if let Some((side, e)) = &r.error {
        o.insert("error".into(), e.to_string().into());
        insert_name(&mut o, "error_path", side);
    }
    line(o)
}

/// The last line of `--compare`: `{"summary":{"names":…,"ok":…,"differs":…,"only-local":…,
/// "only-remote":…,"unverified":…,"unreadable":…,"by_stored":…,"by_read":…,"bytes":…,
/// "seconds":…,"clean":…}}`: a count per status, the names decided by the store's values
/// without reading remote bytes and those whose remote bytes were read, and whether every
/// name is `ok`.
pub fn compare_summary(s: &CompareSummary) -> Vec<u8> {
    let mut o = Object::new();
    o.insert("names".into(), s.names().into());
    for status in CompareStatus::ALL {
        o.insert(status.name().into(), s.count(status).into());
    }
    o.insert("by_stored".into(), s.by_stored.into());
    o.insert("by_read".into(), s.by_read.into());
    o.insert("bytes".into(), s.bytes.into());
    o.insert("seconds".into(), s.elapsed.as_secs_f64().into());
    o.insert("clean".into(), s.is_clean().into());
    summary(o)
}

/// `{"summary":{…}}`: how every summary line is told from the objects before it.
fn summary(object: Object) -> Vec<u8> {
    let mut outer = Object::new();
    outer.insert("summary".into(), object.into());
    line(outer)
}

/// The line for one value the store reports of an object (`--stored --json`): `{"path":…,
/// "url":…,"size":…,"source":…,"layout":…,"leaf_size":…,"algorithm":…,"expected":…}`,
/// `path` the name below the prefix, `source` which value (`ETag`, `CRC64NVME checksum
/// (FULL_OBJECT)`), `expected` the value as a local copy must give it, described as `-c
/// --json` and `--compare --json` describe theirs; a value that checks nothing has `value`
/// (as the store sent it, where it sent one) and `why` instead of the layout and `expected`.
pub fn stored_value(object: &StoredObject, value: &Result<StoredValue, NoValue>) -> Vec<u8> {
    let mut o = path(object.name.as_bytes());
    o.insert("url".into(), object.url.as_str().into());
    o.insert("size".into(), object.size.into());
    let source = match value {
        Ok(v) => Some(v.source),
        Err(no) => no.source,
    };
    if let Some(source) = source {
        o.insert("source".into(), source.to_string().into());
    }
    match value {
        Ok(v) => {
            insert_kind(&mut o, v.layout, v.algorithm);
            o.insert("expected".into(), v.expected.to_string().into());
        }
        Err(no) => {
            if let Some(value) = &no.value {
                o.insert("value".into(), value.as_str().into());
            }
            o.insert("why".into(), no.why.as_str().into());
        }
    }
    line(o)
}

/// The line for an object below a prefix that the store would not tell about
/// (`--stored --json`): `{"path":…,"url":…,"error":…}`.
pub fn stored_error(name: &[u8], url: &str, error: &dyn Display) -> Vec<u8> {
    let mut o = path(name);
    o.insert("url".into(), url.into());
    o.insert("error".into(), error.to_string().into());
    line(o)
}

/// `layout`, `leaf_size`, `algorithm` and `digest`: how a digest is described everywhere. The
/// digest is written as it displays: hex, or a [`Root`](crate::layout::Root) as its storage
/// system shows it (S3's `-N`, base64).
fn insert_digest(object: &mut Object, layout: Layout, alg: Algorithm, digest: &dyn Display) {
    insert_kind(object, layout, alg);
    object.insert("digest".into(), digest.to_string().into());
}

/// `layout`, `leaf_size` and `algorithm`: what a digest is, or would have been; and
/// `part_sizes`, each part's size, for S3's parts of different sizes (whose `leaf_size` is
/// `null`).
fn insert_kind(object: &mut Object, layout: Layout, alg: Algorithm) {
    object.insert("layout".into(), layout.name().into());
    let leaf = layout.leaf_size().map(|l| l.get());
    object.insert("leaf_size".into(), leaf.into());
    if let Layout::S3Parts(parts) = layout {
        object.insert(
            "part_sizes".into(),
            parts.sizes().collect::<Vec<u64>>().into(),
        );
    }
    object.insert("algorithm".into(), alg.name().into());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_is_not_utf8_is_also_given_as_its_bytes() {
        let o = path(b"a\xffb");
        assert_eq!(o["path"], "a\u{fffd}b");
        assert_eq!(o["path_bytes"], serde_json::json!([97, 255, 98]));
        assert!(!path(b"ab").contains_key("path_bytes"));
    }

    #[test]
    fn a_forgotten_record_names_its_action_and_any_refusal() {
        assert_eq!(
            forgotten(b"f", None),
            b"{\"path\":\"f\",\"action\":\"forgotten\"}\n"
        );
        let refused = forgotten(b"f", Some(&"Permission denied"));
        assert!(refused.ends_with(b",\"action_error\":\"Permission denied\"}\n"));
    }
}
