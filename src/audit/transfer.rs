//! Moving records between stores and formats (`--export`, `--import`): a database or a
//! manifest written out as a manifest or as a sum file that `mtsum -c` (and for plain layouts
//! `sha256sum -c`, `b3sum -c`) checks; a manifest or a sum file read into any store.
//!
//! A sum file holds no size or modification time: records imported from one take the stamp of
//! each file as it is now, so the next audit says whether the file still has the digest the
//! sum file promised (`ok` or `corrupt`). Imported records count as never verified, so that
//! `--time-budget` audits them first.

use std::ffi::OsString;
use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use crate::check::Untagged;
use crate::layout::Layout;
use crate::source::{InputError, Stamp};
use crate::sumfile::{self, Format, Parser, Terminator};

use super::AuditError;
use super::store::manifest::{self, Manifest};
use super::store::{Change, Record, RecordStore, Store};

/// The text formats records travel in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransferFormat {
    /// The manifest format ([`manifest`]): size, mtime and a tagged checksum line.
    Manifest,
    /// Tagged checksum lines (`mtsum --tag`), for `mtsum -c`.
    SumFile,
}

/// Writes every record of `store` to `out` in `format`; the number of records.
pub fn export(
    store: &Store,
    format: TransferFormat,
    out: &mut dyn Write,
) -> Result<u64, AuditError> {
    let records = open_existing(store)?.records()?;
    write_records(&records, format, out)
}

/// Opens `store` to read its records, which must be there: a reader takes a database or a
/// manifest that does not exist for an empty one (a first `--dry-run` reports every file as
/// new), but an export of nothing from a mistyped name would look like a store that lost
/// every record.
fn open_existing(store: &Store) -> Result<Box<dyn RecordStore>, AuditError> {
    if let Store::Manifest(path) | Store::Database(path) = store
        && let Err(e) = fs::metadata(path)
        && e.kind() == io::ErrorKind::NotFound
    {
        return Err(AuditError::Unsupported(format!(
            "{}: {} (nothing to export)",
            path.display(),
            InputError::Io(e)
        )));
    }
    store.open(false, false)
}

/// Writes every record of `store` to `file` in `format`, whole or not at all (as a manifest
/// is written: a temporary file beside it, renamed); the number of records. The store's own
/// file is refused: the export would replace the records it exports, a whole database with
/// a text file.
pub fn export_to_file(
    store: &Store,
    format: TransferFormat,
    file: &Path,
) -> Result<u64, AuditError> {
    let mut opened = open_existing(store)?;
    let fail = |why: String| AuditError::Unsupported(format!("{}: {why}", file.display()));
    if let Ok(meta) = fs::metadata(file)
        && opened.is_own(file, &meta)
    {
        return Err(fail(format!(
            "the records are exported from this file ({}); export them to another one",
            opened.describe()
        )));
    }
    let mut buffer = Vec::new();
    let n = write_records(&opened.records()?, format, &mut buffer)?;
    crate::replace::write_atomically(file, |out| out.write_all(&buffer))
        .map_err(|e| fail(InputError::Io(e).to_string()))?;
    Ok(n)
}

/// Writes `records` to `out` in `format`; their number.
fn write_records(
    records: &[(PathBuf, Record)],
    format: TransferFormat,
    out: &mut dyn Write,
) -> Result<u64, AuditError> {
    let written = |e: io::Error| {
        AuditError::Unsupported(format!("cannot write the export: {}", InputError::Io(e)))
    };
    match format {
        TransferFormat::Manifest => {
            let m: Manifest = records
                .iter()
                .map(|(path, record)| (manifest::key(path), *record))
                .collect();
            m.write(&mut &mut *out).map_err(written)?;
        }
        TransferFormat::SumFile => {
            for (path, r) in records {
                let name = path.as_os_str().as_encoded_bytes();
                let line = sumfile::format_line(
                    Format::Tag,
                    Terminator::Newline,
                    r.layout,
                    r.algorithm,
                    &r.value,
                    name,
                );
                out.write_all(&line).map_err(written)?;
            }
        }
    }
    out.flush().map_err(written)?;
    Ok(records.len() as u64)
}

/// What an import did.
#[derive(Debug, Default)]
pub struct Imported {
    /// Records written.
    pub records: u64,
    /// Lines or files left out, each with its name (or line number) and why.
    pub skipped: Vec<(String, String)>,
    /// Records read from untagged lines, whose layout the caller's [`Untagged`] gave.
    pub untagged: u64,
}

/// Reads the manifest or sum file at `input` (a manifest by its first line) into `store`.
/// Untagged sum lines are read as `untagged` says, as `-c` reads them; without it, a sum file
/// with an untagged line is refused before anything is written: its layout would be a guess,
/// and a wrong guess (a `sha256sum` file read as mtsum trees) makes every file `corrupt` at
/// the next audit, a false alarm on a whole tree that `-c` would only have called failed.
/// A file named by a sum
/// file that cannot be examined is skipped. With `dry_run` nothing is written: the store is
/// only opened for reading (so that one that cannot be used says so), and [`Imported`]
/// counts the records that would be written.
pub fn import(
    store: &Store,
    input: &Path,
    untagged: Option<&Untagged>,
    dry_run: bool,
) -> Result<Imported, AuditError> {
    let unreadable = |e: io::Error| {
        AuditError::Unsupported(format!("{}: {}", input.display(), InputError::Io(e)))
    };
    let file = fs::File::open(input).map_err(unreadable)?;
    let mut reader = BufReader::new(file);
    let mut imported = Imported::default();
    let mut records: Vec<(PathBuf, Record)> = Vec::new();
    let is_manifest = reader
        .fill_buf()
        .map_err(unreadable)?
        .starts_with(b"# mtsum audit manifest");
    if is_manifest {
        let m = Manifest::read(reader).map_err(|error| AuditError::ManifestRead {
            path: input.to_path_buf(),
            error,
        })?;
        for (name, record) in m.iter() {
            records.push((PathBuf::from(OsString::from_vec(name.to_vec())), *record));
        }
    } else {
        let mut parser = Parser::default();
        let mut line = Vec::new();
        let mut number = 0u64;
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line).map_err(unreadable)? == 0 {
                break;
            }
            number += 1;
            let entry = match parser.parse_line(&line) {
                Ok(Some(entry)) => entry,
                Ok(None) => continue,
                Err(e) => {
                    imported
                        .skipped
                        .push((format!("line {number}"), e.to_string()));
                    continue;
                }
            };
            let tagged = entry.spec.is_some();
            let untagged = match (tagged, untagged) {
                (false, None) => {
                    return Err(AuditError::Unsupported(format!(
                        "{}: line {number} does not say its layout: import untagged sums with -t (-t plain for sha256sum, md5sum, b3sum or xxhsum files)",
                        input.display()
                    )));
                }
                (_, untagged) => untagged,
            };
            let Some((layout, algorithm)) = entry.spec.or_else(|| {
                untagged.and_then(|u| u.spec(entry.expected.digest().as_bytes().len()))
            }) else {
                let why = "no algorithm has a digest of this length".to_string();
                imported.skipped.push((format!("line {number}"), why));
                continue;
            };
            if let Layout::S3Parts(_) = layout {
                // A record names a layout by its name and one size: not a list of parts.
                let why = "an S3 value over parts of different sizes, which records do not keep";
                imported
                    .skipped
                    .push((format!("line {number}"), why.into()));
                continue;
            }
            let path = PathBuf::from(OsString::from_vec(entry.name));
            match fs::metadata(&path) {
                Ok(meta) if meta.is_file() => {
                    imported.untagged += u64::from(!tagged);
                    records.push((
                        path,
                        Record::new(layout, algorithm, Stamp::of(&meta), entry.expected),
                    ));
                }
                Ok(_) => {
                    let name = path.display().to_string();
                    imported.skipped.push((name, "not a regular file".into()));
                }
                Err(e) => {
                    let name = path.display().to_string();
                    imported.skipped.push((name, InputError::Io(e).to_string()));
                }
            }
        }
    }
    // A record its layout cannot give the file (an empty file in BitTorrent v2, too many S3
    // parts) would never check out, nor be replaced by an audit.
    records.retain(
        |(path, record)| match record.layout.check_size(record.stamp.len) {
            Ok(()) => true,
            Err(why) => {
                let name = path.display().to_string();
                imported.skipped.push((name, why.to_string()));
                false
            }
        },
    );
    let mut target = store.open(!dry_run, false)?;
    for (path, record) in &records {
        let set = match dry_run {
            true => Ok(()),
            false => target.set(path, Change::Import { record }),
        };
        match set {
            Ok(()) => imported.records += 1,
            Err(super::StoreError::File(e)) => {
                imported
                    .skipped
                    .push((path.display().to_string(), e.to_string()));
            }
            Err(super::StoreError::Fatal(e)) => return Err(e),
        }
    }
    if !dry_run {
        target.finish()?;
    }
    Ok(imported)
}
