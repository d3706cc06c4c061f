//! The least any checksum tool must do to read every byte of some files once, and nothing
//! else: open each file, ask its size, read it into one buffer used again and again (a read
//! of the size and one byte more, to see the end, in reads of 1 MiB for larger files), close
//! it. Nothing is hashed and nothing written but a count at the end.
//!
//! `bench/many-files.sh` times it (CPU time, through hyperfine) on the tree of small files and
//! on the large file of the same bytes. The difference is what the operating system alone
//! charges for many files over one (path lookups, opens, reads of many small page-cache
//! folios): `mtsum -r` pays at least that on top of what it pays for the large file, which
//! bounds how close to the large file's throughput many files can come.
//!
//! ```sh
//! cargo run --release --example read_floor -- DIR_OR_FILE...
//! ```

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::ExitCode;

/// The largest read, as `mtsum`'s reads of a file hashed as one stream.
const READ: usize = 1 << 20;
const PAGE: usize = 4096;

/// Reads `path`, a file or a directory of them (recursively), adding to `files` and `bytes`.
fn read(path: &Path, buf: &mut [u8], files: &mut u64, bytes: &mut u64) -> io::Result<()> {
    if fs::symlink_metadata(path)?.is_dir() {
        for entry in fs::read_dir(path)? {
            read(&entry?.path(), buf, files, bytes)?;
        }
        return Ok(());
    }
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut at = 0;
    loop {
        // Up to the size and one byte more: a read that returns fewer bytes than asked ends it.
        let want = usize::try_from(len.saturating_sub(at) + 1).map_or(READ, |n| n.min(READ));
        let n = file.read_at(&mut buf[..want], at)?;
        at += n as u64;
        if n < want {
            break;
        }
    }
    *files += 1;
    *bytes += at;
    Ok(())
}

fn main() -> ExitCode {
    // Page-aligned, as `mtsum`'s buffers: copies out of the page cache into a buffer that
    // starts off a cache line (as `malloc` hands out 16 bytes past a page) took 1.7 × the
    // CPU time for the large file.
    let mut storage = vec![0; READ + PAGE];
    let start = storage.as_ptr().align_offset(PAGE);
    let buf = &mut storage[start..start + READ];
    let (mut files, mut bytes) = (0, 0);
    for arg in std::env::args_os().skip(1) {
        if let Err(e) = read(Path::new(&arg), buf, &mut files, &mut bytes) {
            eprintln!("read_floor: {}: {e}", Path::new(&arg).display());
            return ExitCode::FAILURE;
        }
    }
    println!("{files} files, {bytes} bytes read");
    ExitCode::SUCCESS
}
