//! The manifest store (`--manifest FILE`): every record in one text file, for file systems and
//! media without extended attributes, or when the files must not be touched at all.
//!
//! # Format
//!
//! ```text
//! # mtsum audit manifest 1
//! 65536 1700000000.123456789 BLAKE3 (photos/2023/a.jpg) = 8f4e…
//! 10 1700000001.000000000 MTSUM-SHA256 (notes.txt) = 2c26…
//! ```
//!
//! The first line names the format and its version; then one line per file, sorted bytewise
//! by name: the size in bytes, the modification time as `SECONDS.NANOSECONDS` (the two fields
//! of `st_mtim`), and a checksum line exactly as `mtsum --tag` writes it ([`sumfile`]): the tag
//! says layout and algorithm, and a name holding `\`, a newline or a carriage return is
//! escaped and the checksum line starts with `\`. So `cut -d' ' -f3- FILE | mtsum -c` checks
//! the files without the audit, and for plain layouts `sha256sum -c` or `b3sum -c` do too.
//!
//! Names are the paths as the audit met them, lexically tidied ([`key`]: no `./`, no doubled
//! or trailing `/`), so `dir`, `./dir/` and `dir//` name the same records. Nothing is resolved
//! against the current directory: audit with the same spelling each time (absolute paths in
//! cron jobs).
//!
//! # Writing
//!
//! The manifest is replaced, never modified in place ([`write_atomically`](crate::replace::write_atomically)): the new content
//! goes to a temporary file in the same directory, is flushed to the disk (`fsync`), and is
//! then renamed over the old one, and the directory is flushed. A crash, a `kill -9` or a
//! full disk at any moment leaves either the old manifest or the new one, never a mix; at
//! worst a temporary file `.NAME.*.tmp` is left behind, which the audit skips.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

use crate::audit::AuditError;
use crate::source::{InputError, Mtime, Stamp};
use crate::sumfile::{self, Format, Terminator};

use super::{Change, Entry, OwnFile, Prior, Record, RecordStore, StoreError, is_unwalked};

/// The first line, up to the version.
const HEADER: &str = "# mtsum audit manifest ";
const VERSION: &str = "1";

/// Why a manifest could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Reading failed; the message is the system's, as coreutils prints it.
    #[error("{0}")]
    Io(InputError),
    /// The file exists but does not start with the manifest header: it is not ours, and
    /// rewriting it would destroy someone's data.
    #[error("not an mtsum audit manifest (the first line is not '{HEADER}{VERSION}')")]
    NotAManifest,
    #[error("line {line}: {why}")]
    Line { line: u64, why: String },
}

impl From<io::Error> for ManifestError {
    fn from(e: io::Error) -> Self {
        ManifestError::Io(InputError::Io(e))
    }
}

/// The records of a manifest, by name ([`key`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    records: BTreeMap<Vec<u8>, Record>,
}

impl Manifest {
    /// Reads the manifest at `path`; a file that does not exist yet is an empty manifest.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        match File::open(path) {
            Ok(file) => Manifest::read(BufReader::new(file)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Manifest::default()),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads a manifest from `input`. Every line must be well-formed: a record dropped here
    /// would be dropped from the manifest written back.
    pub fn read(mut input: impl BufRead) -> Result<Manifest, ManifestError> {
        let mut manifest = Manifest::default();
        let mut line = Vec::new();
        let mut number = 0;
        loop {
            line.clear();
            if input.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            number += 1;
            if number == 1 {
                if !is_header(&line) {
                    return Err(ManifestError::NotAManifest);
                }
                continue;
            }
            let (name, record) = parse_line(&line).map_err(|why| ManifestError::Line {
                line: number,
                why: why.to_string(),
            })?;
            manifest.records.insert(name, record);
        }
        Ok(manifest)
    }

    /// Writes the manifest, header first, in name order.
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(
            out,
            "{HEADER}{VERSION} (size, mtime seconds.nanoseconds, then a line of mtsum --tag)"
        )?;
        for (name, record) in &self.records {
            out.write_all(&format_line(name, record))?;
        }
        Ok(())
    }

    /// Replaces the file at `path` with this manifest, atomically ([`write_atomically`](crate::replace::write_atomically)).
    pub fn save(&self, path: &Path) -> io::Result<()> {
        crate::replace::write_atomically(path, |out| self.write(out))
    }

    /// The record named `name`.
    pub fn get(&self, name: &[u8]) -> Option<&Record> {
        self.records.get(name)
    }

    /// Sets the record named `name`.
    pub fn insert(&mut self, name: Vec<u8>, record: Record) {
        self.records.insert(name, record);
    }

    /// Removes the record named `name`, returning it.
    pub fn remove(&mut self, name: &[u8]) -> Option<Record> {
        self.records.remove(name)
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there is no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The records in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Record)> {
        self.records.iter().map(|(k, v)| (k.as_slice(), v))
    }

    /// The records at or below `arg` (a [`key`]), in name order: what an audit of `arg`
    /// covers.
    pub fn within<'a>(&'a self, arg: &'a [u8]) -> impl Iterator<Item = (&'a [u8], &'a Record)> {
        let start: &[u8] = if arg == b"." { b"" } else { arg };
        self.records
            .range::<[u8], _>((std::ops::Bound::Included(start), std::ops::Bound::Unbounded))
            .take_while(move |(k, _)| k.starts_with(start))
            .filter(move |(k, _)| is_within(k, arg))
            .map(|(k, v)| (k.as_slice(), v))
    }
}

/// Whether the record name `name` is `arg` or below it (both [`key`]s).
pub fn is_within(name: &[u8], arg: &[u8]) -> bool {
    if arg == b"." {
        // Every relative name that does not climb out.
        return !name.starts_with(b"/") && name != b".." && !name.starts_with(b"../");
    }
    if arg == b"/" {
        return name.starts_with(b"/");
    }
    name == arg || (name.starts_with(arg) && name[arg.len()] == b'/')
}

/// The name a path is recorded under: the path as spelled, without `.` components, doubled
/// or trailing slashes (`./a//b/` is `a/b`). `..` is kept: it cannot be removed without
/// asking the file system, where a symbolic link may lead elsewhere.
pub fn key(path: &Path) -> Vec<u8> {
    let mut tidy = PathBuf::new();
    for component in path.components() {
        if component != Component::CurDir {
            tidy.push(component);
        }
    }
    if tidy.as_os_str().is_empty() {
        return b".".to_vec();
    }
    tidy.into_os_string().into_vec()
}

fn is_header(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(HEADER.as_bytes()) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix(VERSION.as_bytes()) else {
        return false;
    };
    matches!(rest.first(), None | Some(b' ' | b'\n'))
}

/// One record line, newline included.
fn format_line(name: &[u8], record: &Record) -> Vec<u8> {
    let mut line = format!("{} {} ", record.stamp.len, record.stamp.mtime).into_bytes();
    line.extend_from_slice(&sumfile::format_line(
        Format::Tag,
        Terminator::Newline,
        record.layout,
        record.algorithm,
        &record.value,
        name,
    ));
    line
}

/// The name and record of one line.
fn parse_line(line: &[u8]) -> Result<(Vec<u8>, Record), String> {
    let mut fields = line.splitn(3, |&b| b == b' ');
    let (Some(size), Some(mtime), Some(rest)) = (fields.next(), fields.next(), fields.next())
    else {
        return Err("expected SIZE MTIME TAG (NAME) = DIGEST".into());
    };
    let text = |b: &[u8]| std::str::from_utf8(b).ok().map(str::to_owned);
    let size: u64 = text(size).and_then(|s| s.parse().ok()).ok_or("bad size")?;
    let mtime: Mtime = text(mtime)
        .and_then(|s| s.parse().ok())
        .ok_or("bad modification time")?;
    let entry = sumfile::parse_line(rest)
        .map_err(|e| e.to_string())?
        .ok_or("no checksum")?;
    let (layout, algorithm) = entry.spec.ok_or("the checksum has no tag")?;
    let record = Record::new(layout, algorithm, Stamp::new(size, mtime), entry.expected);
    Ok((entry.name, record))
}

/// Whether `path` is a temporary file that [`write_atomically`](crate::replace::write_atomically) makes for `target`: it must
/// not be audited as if it were data.
pub fn is_temporary_of(path: &Path, target: &Path) -> bool {
    let (Some(name), Some(target_name)) = (path.file_name(), target.file_name()) else {
        return false;
    };
    crate::replace::is_temporary_name(name, target_name) && super::same_directory(path, target)
}

/// A manifest as one audit uses it: the records as loaded (every lookup reads these), the
/// names the walk met, and the changes, applied and saved at the end ([`RecordStore::finish`]).
pub struct ManifestStore {
    path: PathBuf,
    old: Manifest,
    /// The manifest file itself, so that an audit of the tree holding it skips it.
    own: Option<OwnFile>,
    /// Where it lies, past a symbolic link ([`super::resolved`]): its temporary files are
    /// made beside it.
    file: PathBuf,
    seen: HashSet<Vec<u8>>,
    /// Records already reported unseen (arguments may overlap).
    reported: HashSet<Vec<u8>>,
    /// Records to set (`Some`) or remove (`None`), in the order the audit decided them.
    edits: Vec<(Vec<u8>, Option<Record>)>,
}

impl ManifestStore {
    /// Loads the manifest at `path` (none yet is an empty one). A `writable` store makes sure
    /// first that the manifest can be replaced at the end: an audit that would read a whole
    /// tree only to fail at its last step fails before the first.
    pub fn open(path: &Path, writable: bool) -> Result<ManifestStore, AuditError> {
        let old = Manifest::load(path).map_err(|error| AuditError::ManifestRead {
            path: path.to_path_buf(),
            error,
        })?;
        let file = super::resolved(path);
        if writable {
            let (temp, _) = crate::replace::temporary_beside(&file).map_err(|e| {
                AuditError::ManifestUnwritable {
                    path: path.to_path_buf(),
                    why: super::directory_error(e),
                }
            })?;
            let _ = fs::remove_file(temp);
        }
        Ok(ManifestStore {
            path: path.to_path_buf(),
            old,
            own: OwnFile::of(path),
            file,
            seen: HashSet::new(),
            reported: HashSet::new(),
            edits: Vec::new(),
        })
    }
}

impl RecordStore for ManifestStore {
    fn describe(&self) -> String {
        format!("manifest {}", self.path.display())
    }

    fn is_own(&self, path: &Path, meta: &fs::Metadata) -> bool {
        self.own.is_some_and(|own| own.is(meta)) || is_temporary_of(path, &self.file)
    }

    fn may_be_own(&self, path: &Path) -> bool {
        super::may_be_own(path, &self.file, self.own)
    }

    fn lookup(&mut self, path: &Path) -> Result<Entry, StoreError> {
        let key = key(path);
        let prior = self
            .old
            .get(&key)
            .map_or(Prior::None, |r| Prior::Record(*r));
        self.seen.insert(key);
        Ok(Entry::of(prior))
    }

    fn has_records_below(&self, path: &Path) -> bool {
        self.old.within(&key(path)).next().is_some()
    }

    fn unseen_below(&mut self, arg: &Path, unwalked: &[PathBuf]) -> Vec<(PathBuf, Record)> {
        let arg = key(arg);
        let mut unseen = Vec::new();
        for (name, record) in self.old.within(&arg) {
            if !self.seen.contains(name)
                && !is_unwalked(name, unwalked)
                && self.reported.insert(name.to_vec())
            {
                let path = PathBuf::from(OsString::from_vec(name.to_vec()));
                unseen.push((path, *record));
            }
        }
        unseen
    }

    fn set(&mut self, path: &Path, change: Change) -> Result<(), StoreError> {
        let record = match change {
            Change::Set { record, .. } | Change::Import { record } => Some(*record),
            Change::Checked { .. } => return Ok(()),
            Change::Remove => None,
        };
        self.edits.push((key(path), record));
        Ok(())
    }

    fn finish(&mut self) -> Result<bool, AuditError> {
        let mut manifest = std::mem::take(&mut self.old);
        let mut changed = false;
        for (name, record) in self.edits.drain(..) {
            changed |= manifest.get(&name) != record.as_ref();
            match record {
                Some(r) => manifest.insert(name, r),
                None => {
                    manifest.remove(&name);
                }
            }
        }
        let saved = changed.then(|| manifest.save(&self.path)).transpose();
        self.old = manifest;
        saved
            .map(|saved| saved.is_some())
            .map_err(|e| AuditError::ManifestWrite {
                path: self.path.clone(),
                error: InputError::Io(e),
            })
    }

    fn records(&mut self) -> Result<Vec<(PathBuf, Record)>, AuditError> {
        Ok(self
            .old
            .iter()
            .map(|(name, record)| (PathBuf::from(OsString::from_vec(name.to_vec())), *record))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Algorithm, Layout, LeafSize};

    fn record(n: u64) -> Record {
        Record {
            layout: Layout::Plain,
            algorithm: Algorithm::Blake3,
            stamp: Stamp::new(n, Mtime::new(1_700_000_000 + n as i64, 7).unwrap()),
            value: Algorithm::Blake3.hash(&n.to_le_bytes()).into(),
        }
    }

    #[test]
    fn names_are_tidied_lexically_only() {
        let cases = [
            ("a", "a"),
            ("./a", "a"),
            ("a//b/", "a/b"),
            ("a/./b", "a/b"),
            (".", "."),
            ("./", "."),
            ("/", "/"),
            ("//x/", "/x"),
            ("../x", "../x"),
            ("a/../b", "a/../b"),
        ];
        for (path, want) in cases {
            assert_eq!(key(Path::new(path)), want.as_bytes(), "{path}");
        }
    }

    #[test]
    fn within_means_the_path_or_below_it() {
        assert!(is_within(b"dir", b"dir"));
        assert!(is_within(b"dir/a", b"dir"));
        assert!(!is_within(b"dir.bak/a", b"dir"));
        assert!(!is_within(b"dirx", b"dir"));
        assert!(is_within(b"a/b", b"."));
        assert!(!is_within(b"/a", b"."));
        assert!(!is_within(b"../a", b"."));
        assert!(is_within(b"/a", b"/"));
        assert!(!is_within(b"a", b"/"));
    }

    #[test]
    fn within_finds_exactly_the_records_below_an_argument() {
        let mut m = Manifest::default();
        for (i, name) in [
            "dir",
            "dir.bak/x",
            "dir/a",
            "dir/b/c",
            "dir0",
            "/abs",
            "../up",
        ]
        .iter()
        .enumerate()
        {
            m.insert(name.as_bytes().to_vec(), record(i as u64));
        }
        let names = |arg: &[u8]| -> Vec<String> {
            m.within(arg)
                .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
                .collect()
        };
        assert_eq!(names(b"dir"), ["dir", "dir/a", "dir/b/c"]);
        assert_eq!(names(b"dir/b"), ["dir/b/c"]);
        assert_eq!(
            names(b"."),
            ["dir", "dir.bak/x", "dir/a", "dir/b/c", "dir0"]
        );
        assert_eq!(names(b"/"), ["/abs"]);
    }

    #[test]
    fn every_name_and_record_survive_the_round_trip() {
        let mut m = Manifest::default();
        let names: [&[u8]; 6] = [
            b"plain",
            b"with space",
            b"back\\slash",
            b"new\nline",
            b"paren) = x",
            b"\xff\xfe not utf-8",
        ];
        for (i, name) in names.iter().enumerate() {
            let mut r = record(i as u64);
            if i == 1 {
                r.layout = Layout::Rfc6962(LeafSize::new(4096).unwrap());
                r.algorithm = Algorithm::Sha512;
                r.value = Algorithm::Sha512.hash(b"x").into();
                r.stamp.mtime = Mtime::new(-3, 5).unwrap();
            }
            m.insert(name.to_vec(), r);
        }
        let mut text = Vec::new();
        m.write(&mut text).unwrap();
        assert_eq!(Manifest::read(&text[..]).unwrap(), m);
        let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        assert_eq!(lines.len(), names.len() + 2, "one line per record");
    }

    #[test]
    fn a_line_is_size_mtime_and_a_tagged_checksum_line() {
        let mut m = Manifest::default();
        m.insert(b"a b".to_vec(), record(1));
        let mut text = Vec::new();
        m.write(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        let second = text.lines().nth(1).unwrap();
        let hex = record(1).value;
        assert_eq!(
            second,
            format!("1 1700000001.000000007 BLAKE3 (a b) = {hex}")
        );
    }

    #[test]
    fn a_file_that_is_not_a_manifest_is_refused() {
        assert!(matches!(
            Manifest::read(&b"hello\n"[..]),
            Err(ManifestError::NotAManifest)
        ));
        assert!(matches!(
            Manifest::read(&b"# mtsum audit manifest 2\n"[..]),
            Err(ManifestError::NotAManifest)
        ));
        assert_eq!(Manifest::read(&b""[..]).unwrap(), Manifest::default());
    }

    #[test]
    fn a_damaged_line_is_an_error_naming_the_line() {
        let text = b"# mtsum audit manifest 1\n12 1.000000000 SHA256 (a) = zz\n";
        match Manifest::read(&text[..]) {
            Err(ManifestError::Line { line: 2, .. }) => {}
            other => panic!("{other:?}"),
        }
        let text = b"# mtsum audit manifest 1\nx 1.000000000 SHA256 (a) = 00\n";
        assert!(matches!(
            Manifest::read(&text[..]),
            Err(ManifestError::Line { line: 2, .. })
        ));
    }

    #[test]
    fn temporary_files_are_recognised_by_name_and_directory() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("m");
        let temp = dir.path().join(".m.123-0.tmp");
        assert!(is_temporary_of(&temp, &target));
        assert!(!is_temporary_of(&dir.path().join(".m.txt"), &target));
        assert!(!is_temporary_of(&dir.path().join("m"), &target));
        let other = tempfile::tempdir().unwrap();
        assert!(!is_temporary_of(&other.path().join(".m.1-0.tmp"), &target));
    }
}
