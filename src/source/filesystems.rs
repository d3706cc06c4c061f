//! File systems that misreport sizes (procfs, sysfs, some FUSE and network file systems),
//! whose files are read as streams instead.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

/// Whether `file`, a regular file of `meta`, may hold other than `st_size` bytes: it lives
/// on a file system known to make sizes up (procfs and sysfs say 0 or 4096 whatever the
/// content), or it claims to be empty yet a read finds a byte (some FUSE and network file
/// systems). A file that really is empty is not one of them, and keeps the sized path.
pub(super) fn size_is_unreported(
    file: &File,
    meta: &std::fs::Metadata,
    known: &mut FileSystems,
) -> bool {
    if known.makes_sizes_up(file, meta.dev()) {
        return true;
    }
    let mut byte = [0u8; 1];
    meta.len() == 0
        && matches!(
            std::os::unix::fs::FileExt::read_at(file, &mut byte, 0),
            Ok(1)
        )
}

/// Whether the file systems met so far make file sizes up, by device, so that opening many
/// files asks the kernel once per file system. A device number names one file system only
/// while it stays mounted: keep one of these for a run over many files, not for the life of
/// a process.
#[derive(Debug, Default)]
pub(crate) struct FileSystems {
    /// The last device asked about, and the answer.
    last: Option<(u64, bool)>,
}

impl FileSystems {
    /// Whether `file`, on device `dev`, lives on a file system known to make sizes up.
    // The magic numbers and `f_type` are `c_long` on some targets and `c_uint` on others.
    #[allow(clippy::unnecessary_cast)]
    fn makes_sizes_up(&mut self, file: &File, dev: u64) -> bool {
        const PSEUDO: [i64; 7] = [
            libc::PROC_SUPER_MAGIC as i64,
            libc::SYSFS_MAGIC as i64,
            libc::DEBUGFS_MAGIC as i64,
            libc::TRACEFS_MAGIC as i64,
            libc::SECURITYFS_MAGIC as i64,
            libc::CGROUP2_SUPER_MAGIC as i64,
            0x6265_6570, // configfs: CONFIGFS_MAGIC, which libc does not name
        ];
        if let Some((last, pseudo)) = self.last
            && last == dev
        {
            return pseudo;
        }
        // SAFETY: fstatfs writes into the zeroed struct we own; the descriptor is open.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } != 0 {
            return false;
        }
        let pseudo = PSEUDO.contains(&(st.f_type as i64));
        self.last = Some((dev, pseudo));
        pseudo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{Input, ReadMode, Target};
    use std::path::Path;

    #[test]
    fn file_systems_known_from_one_file_still_tell_a_pseudo_file_from_a_regular_one() {
        let dir = tempfile::tempdir().unwrap();
        let regular = dir.path().join("f");
        std::fs::write(&regular, b"bytes").unwrap();
        let pseudo = Path::new("/proc/self/status");
        if !pseudo.exists() {
            return eprintln!("SKIPPED: no /proc");
        }
        let mut known = FileSystems::default();
        for path in [&*regular, pseudo, pseudo, &regular, &regular, pseudo] {
            let target = Target::Path(path.to_path_buf());
            let input =
                Input::open_with_known(&target, ReadMode::Pread, &mut known, &mut || {}).unwrap();
            let streamed = matches!(input, Input::Stream(_));
            assert_eq!(streamed, path == pseudo, "{}", path.display());
        }
    }
}
