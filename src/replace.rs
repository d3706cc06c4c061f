//! Files replaced whole, never modified in place: a manifest at the end of an audit, the SSO
//! token cache the AWS CLI shares with us. Whatever happens (a crash, a `kill -9`, a full
//! disk), such a file is either the old one or the complete new one, and a reader never sees
//! half of it.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The file `path` names, past symbolic links, also a link to a file not created yet (else
/// `path` itself): a temporary file renamed over the link would replace the link and leave
/// the file it points to stale.
pub fn resolved(path: &Path) -> PathBuf {
    let mut path = path.to_path_buf();
    // As many links as the kernel follows (SYMLOOP_MAX), so that a loop ends.
    for _ in 0..40 {
        if let Ok(real) = std::fs::canonicalize(&path) {
            return real;
        }
        match std::fs::read_link(&path) {
            // Relative to the link's directory; `join` keeps an absolute target as it is.
            Ok(target) => path = path.parent().unwrap_or(Path::new("")).join(target),
            Err(_) => break,
        }
    }
    path
}

/// The directory `path` lies in.
pub fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// A new file `.NAME.PID-N.tmp` beside `path`, created (never an existing one), mode `0666`
/// less the umask: where [`write_atomically`] writes before the rename, and what a caller
/// creates to learn early whether it will be able to.
pub fn temporary_beside(path: &Path) -> io::Result<(PathBuf, File)> {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().unwrap_or(OsStr::new("file"));
    loop {
        let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let mut temp = b".".to_vec();
        temp.extend_from_slice(name.as_bytes());
        temp.extend_from_slice(format!(".{}-{n}.tmp", std::process::id()).as_bytes());
        let temp_path = directory_of(path).join(OsStr::from_bytes(&temp));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(&temp_path)
        {
            Ok(file) => return Ok((temp_path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Whether the file name `name` is one that [`temporary_beside`] gives a file named
/// `target_name`.
pub fn is_temporary_name(name: &OsStr, target_name: &OsStr) -> bool {
    let name = name.as_bytes();
    let prefix = [b".", target_name.as_bytes(), b"."].concat();
    name.starts_with(&prefix) && name.ends_with(b".tmp")
}

/// Replaces the file at `path` (past symbolic links: [`resolved`]) with what `fill` writes,
/// so that whatever happens the file is either the old one or the complete new one.
///
/// The content goes to a new file beside it ([`temporary_beside`]: a rename is atomic only
/// within one file system), which is flushed to the disk before it is renamed over `path`;
/// then the directory is flushed so the rename itself survives a power cut. The new file
/// takes the old one's permissions (and owner, where we may set it); a new file gets `0666`
/// less the umask. On any error the temporary file is removed and `path` untouched.
pub fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<&File>) -> io::Result<()>,
) -> io::Result<()> {
    let path = &resolved(path);
    let dir = directory_of(path);
    let old = fs::metadata(path).ok();
    let (temp_path, file) = temporary_beside(path)?;
    let result = (|| {
        if let Some(old) = &old {
            // Best effort: only root may give a file away, and a file readable by fewer
            // people than before is no harm.
            let _ = std::os::unix::fs::fchown(&file, Some(old.uid()), Some(old.gid()));
            file.set_permissions(fs::Permissions::from_mode(old.mode() & 0o7777))?;
        }
        let mut out = BufWriter::with_capacity(1 << 16, &file);
        fill(&mut out)?;
        out.flush()?;
        drop(out);
        file.sync_all()?;
        fs::rename(&temp_path, path)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&temp_path);
        return Err(e);
    }
    // The rename is done; a failure to flush the directory loses durability, not data, but
    // it is still worth reporting.
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        fs::write(&path, "old").unwrap();
        let e = write_atomically(&path, |out| {
            out.write_all(&vec![b'x'; 1 << 20])?;
            Err(io::Error::from_raw_os_error(libc::ENOSPC))
        })
        .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
        assert_eq!(fs::read(&path).unwrap(), b"old");
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "only the manifest remains: {left:?}");
    }

    #[test]
    fn a_write_keeps_the_old_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&path, |out| out.write_all(b"new")).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        let mode = fs::metadata(&path).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o640);
    }
}
