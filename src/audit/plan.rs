//! The I/O plan: how many files to read at once and in which order, per device, and at which
//! I/O priority.
//!
//! A spinning disk reads one file at a time fastest: two readers make its head seek between
//! them, and on a file server that is slower than one. So on a rotational device (sysfs
//! `queue/rotational`) the audit reads with one reader, and in windows of files ordered by
//! where they lie on the disk (the first extent's physical offset from `FIEMAP`, or the inode
//! number where the file system does not say), so that the head sweeps instead of jumping;
//! the verdicts still come out in walk order. SSDs, NVMe and anything without a block device
//! (tmpfs, network file systems) keep one reader per core, in walk order.
//!
//! The ordering itself is a pure function of what is known about each file ([`Place`]) and is
//! tested without a spinning disk.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Mutex;

/// The I/O priority classes live with the engine's readers, which apply them.
pub use crate::engine::IoPriority;

/// Where a file lies, as far as reading order is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// The device (`st_dev`).
    pub dev: u64,
    pub rotational: bool,
    /// The physical offset of the file's first extent, where the file system reports it.
    pub physical: Option<u64>,
    /// The inode number: the fallback order (file systems allocate inodes near their data).
    pub ino: u64,
}

/// The order in which to read files at `places` (indices into it). Files on non-rotational
/// devices keep their order and come first (they cost the spinning disks nothing); then each
/// rotational device's files, devices in the order they first appear, sorted by physical
/// offset when every file of the device has one, else by inode number.
pub fn read_order(places: &[Place]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..places.len())
        .filter(|&i| !places[i].rotational)
        .collect();
    let mut devices: Vec<u64> = Vec::new();
    for p in places.iter().filter(|p| p.rotational) {
        if !devices.contains(&p.dev) {
            devices.push(p.dev);
        }
    }
    for dev in devices {
        let mut files: Vec<usize> = (0..places.len())
            .filter(|&i| places[i].rotational && places[i].dev == dev)
            .collect();
        if files.iter().all(|&i| places[i].physical.is_some()) {
            files.sort_by_key(|&i| (places[i].physical, places[i].ino));
        } else {
            files.sort_by_key(|&i| places[i].ino);
        }
        order.extend(files);
    }
    order
}

/// The environment variable that overrides sysfs for every device: `1` rotational, `0` not.
/// For disks sysfs misreports (behind a RAID controller, in a virtual machine), and for
/// tests of either plan on any disk.
pub const ROTATIONAL_VAR: &str = "MTSUM_ROTATIONAL";

/// Whether the block device `dev` (`st_dev`) is rotational, from sysfs (or
/// [`ROTATIONAL_VAR`]); a partition answers for its disk. Devices sysfs does not know (tmpfs,
/// network file systems) are not.
pub fn is_rotational(dev: u64) -> bool {
    match std::env::var_os(ROTATIONAL_VAR)
        .as_deref()
        .and_then(|v| v.to_str())
    {
        Some("1") => return true,
        Some("0") => return false,
        _ => {}
    }
    static KNOWN: Mutex<Option<HashMap<u64, bool>>> = Mutex::new(None);
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    *known
        .get_or_insert_with(HashMap::new)
        .entry(dev)
        .or_insert_with(|| {
            let (major, minor) = (libc::major(dev), libc::minor(dev));
            let base = format!("/sys/dev/block/{major}:{minor}");
            [
                format!("{base}/queue/rotational"),
                format!("{base}/../queue/rotational"),
            ]
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok())
            .is_some_and(|s| s.trim() == "1")
        })
}

/// Whether [`ROTATIONAL_VAR`] decides, rather than sysfs: then it decides alone.
pub fn rotational_forced() -> bool {
    matches!(
        std::env::var_os(ROTATIONAL_VAR)
            .as_deref()
            .and_then(|v| v.to_str()),
        Some("0" | "1")
    )
}

/// How many files a residency sample looks at ([`resident_share`]), and how much of each:
/// a glance of a millisecond or two, before anything is read.
pub const RESIDENCY_SAMPLE_FILES: usize = 256;
const RESIDENCY_SAMPLE_BYTES: u64 = 64 << 20;

/// The share of the resident pages at or above which files count as in memory: their reads
/// cost the disk nothing, and one reader per core is what they want, whatever the disk is.
pub const MOSTLY_RESIDENT: f64 = 0.9;

/// The share of the pages of `files` (the first 64 MiB of each) that are in the page cache,
/// as `fincore` counts them (`mincore` of a mapping, which reads nothing); `None` where no
/// page could be looked at (empty or unreadable files). A virtual disk says it is rotational
/// whatever lies behind it, and a tree audited again soon is in memory: then the plan of a
/// spinning disk (one reader, physical order) would only cost the parallelism.
pub fn resident_share<'a>(files: impl IntoIterator<Item = &'a Path>) -> Option<f64> {
    let (mut resident, mut total) = (0u64, 0u64);
    for path in files {
        if let Ok((r, t)) = resident_pages(path, RESIDENCY_SAMPLE_BYTES) {
            resident += r;
            total += t;
        }
    }
    (total > 0).then(|| resident as f64 / total as f64)
}

/// The pages of the first `limit` bytes of `path` that are in the page cache, and the pages.
pub fn resident_pages(path: &Path, limit: u64) -> std::io::Result<(u64, u64)> {
    let file = File::open(path)?;
    let len = usize::try_from(file.metadata()?.len().min(limit))
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EFBIG))?;
    if len == 0 {
        return Ok((0, 0));
    }
    // SAFETY: sysconf takes an integer and touches no memory.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let mut vector = vec![0u8; len.div_ceil(page)];
    // SAFETY: a fresh read-only shared mapping of `len` bytes of an open file, never
    // dereferenced: mincore only reports which of its pages are resident, into `vector`,
    // one byte per page, which has room for every page; it is unmapped before returning.
    unsafe {
        let map = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        if map == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let r = libc::mincore(map, len, vector.as_mut_ptr());
        let error = std::io::Error::last_os_error();
        libc::munmap(map, len);
        if r != 0 {
            return Err(error);
        }
    }
    let resident = vector.iter().filter(|&&b| b & 1 == 1).count();
    Ok((resident as u64, vector.len() as u64))
}

/// The physical offset of the first extent of `path` (`FS_IOC_FIEMAP`), if the file system
/// reports one.
pub fn physical_offset(path: &Path) -> Option<u64> {
    /// `struct fiemap` with room for one `struct fiemap_extent` (linux/fiemap.h).
    #[repr(C)]
    #[derive(Default)]
    struct Fiemap {
        start: u64,
        length: u64,
        flags: u32,
        mapped_extents: u32,
        extent_count: u32,
        reserved: u32,
        // The one extent.
        logical: u64,
        physical: u64,
        extent_length: u64,
        reserved64: [u64; 2],
        extent_flags: u32,
        reserved32: [u32; 3],
    }
    /// `_IOWR('f', 11, struct fiemap)`.
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    let file = File::open(path).ok()?;
    let mut map = Fiemap {
        length: u64::MAX,
        extent_count: 1,
        ..Fiemap::default()
    };
    // SAFETY: `map` is a `struct fiemap` followed by room for the one extent that
    // `extent_count` announces, as the ioctl requires; it lives across the call.
    let r = unsafe {
        libc::ioctl(
            file.as_raw_fd(),
            FS_IOC_FIEMAP as _,
            &mut map as *mut Fiemap,
        )
    };
    (r == 0 && map.mapped_extents > 0).then_some(map.physical)
}

/// Where `path` (with metadata `meta`) lies; the physical offset is asked for only on
/// rotational devices, where it matters.
pub fn place(path: &Path, meta: &std::fs::Metadata) -> Place {
    use std::os::unix::fs::MetadataExt;
    let rotational = is_rotational(meta.dev());
    Place {
        dev: meta.dev(),
        rotational,
        physical: rotational.then(|| physical_offset(path)).flatten(),
        ino: meta.ino(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_just_written_is_resident_and_an_empty_one_tells_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (full, empty) = (dir.path().join("full"), dir.path().join("empty"));
        std::fs::write(&full, vec![7u8; 1 << 20]).unwrap();
        std::fs::write(&empty, b"").unwrap();
        let share = resident_share([full.as_path()]).unwrap();
        assert!(share >= MOSTLY_RESIDENT, "{share}");
        assert_eq!(resident_share([empty.as_path()]), None);
        assert_eq!(resident_share([dir.path().join("gone").as_path()]), None);
        // Dropped from the page cache (where the file system can: not tmpfs), it is not.
        let file = File::open(&full).unwrap();
        file.sync_all().unwrap();
        // SAFETY: fadvise takes an open descriptor and integers, and touches no memory.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        let dropped = resident_share([full.as_path()]).unwrap();
        assert!(dropped < MOSTLY_RESIDENT || dropped == 1.0, "{dropped}");
    }

    fn at(dev: u64, rotational: bool, physical: Option<u64>, ino: u64) -> Place {
        Place {
            dev,
            rotational,
            physical,
            ino,
        }
    }

    #[test]
    fn a_rotational_disk_is_read_in_physical_order_and_an_ssd_in_walk_order() {
        let places = [
            at(1, true, Some(900), 5),
            at(2, false, None, 1),
            at(1, true, Some(100), 9),
            at(2, false, None, 7),
            at(1, true, Some(500), 2),
        ];
        assert_eq!(read_order(&places), [1, 3, 2, 4, 0]);
    }

    #[test]
    fn inode_order_where_a_file_of_the_disk_has_no_physical_offset() {
        let places = [
            at(1, true, Some(900), 5),
            at(1, true, None, 3),
            at(1, true, Some(100), 9),
        ];
        assert_eq!(read_order(&places), [1, 0, 2]);
    }

    #[test]
    fn each_rotational_device_is_swept_on_its_own() {
        let places = [
            at(7, true, Some(50), 1),
            at(3, true, Some(10), 1),
            at(7, true, Some(20), 2),
            at(3, true, None, 0),
        ];
        assert_eq!(read_order(&places), [2, 0, 3, 1]);
        assert!(read_order(&[]).is_empty());
    }

    #[test]
    fn a_file_here_has_a_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![1u8; 1 << 16]).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        let p = place(&path, &meta);
        assert_eq!(p.ino, std::os::unix::fs::MetadataExt::ino(&meta));
        // Whether the disk spins and FIEMAP answers depends on the machine; asking must not
        // fail either way.
        let _ = physical_offset(&path);
    }
}
