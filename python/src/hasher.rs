//! The state behind `mtsum.Hasher`: bytes fed in pieces, a digest whenever asked.
//!
//! Layouts that cut a stream as it comes (all but `mtsum`) hash every piece at once
//! with the library's [`JobHasher`], in constant memory. The `mtsum` layout cannot: where its
//! leaves begin depends on the total length (a stream of 200 MiB has two leaves of 100 MiB, one
//! of 300 MiB three of 75, 75 and 150 MiB), which is known only at the end. Rather than hold
//! everything in memory, its hasher *spools*: the first [`SPOOL_MEMORY`] bytes stay in memory,
//! beyond that everything goes to an anonymous temporary file (in `TMPDIR`, removed when the
//! hasher goes away), and `digest()` hashes what was collected — a small spool in memory, a
//! file with the engine on every core. Memory stays bounded; disk use is the stream's length.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::PathBuf;

use mtsum::engine::{Engine, Request};
use mtsum::layout::{JobHasher, NoRoot, Root};
use mtsum::source::{InputError, Target};
use mtsum::{Algorithm, Layout};
use tempfile::NamedTempFile;

/// Bytes of a spool kept in memory before it moves to a file; also how much is gathered in
/// memory between two writes to the file.
pub const SPOOL_MEMORY: usize = 1 << 20;

/// Why a hasher gave no digest.
pub enum Error {
    /// The spool at `path` (its file, or the directory it was to be made in) failed.
    Spool(PathBuf, InputError),
    /// The layout has no value for the bytes fed (an empty stream with btv2).
    NoRoot(NoRoot),
}

impl From<NoRoot> for Error {
    fn from(e: NoRoot) -> Error {
        Error::NoRoot(e)
    }
}

/// What has been fed so far.
pub enum State {
    /// The stream hashed as it comes, with its length so far.
    Streaming(Box<JobHasher>, u64),
    /// The stream collected for a layout that needs its length.
    Spooled(Spool),
}

/// The bytes fed to a hasher of the `mtsum` layout.
#[derive(Default)]
pub struct Spool {
    /// The latest bytes, not yet in `file`; all of them while there is no file.
    memory: Vec<u8>,
    /// The bytes before `memory`, once there were more than [`SPOOL_MEMORY`].
    file: Option<NamedTempFile>,
}

impl State {
    pub fn new(layout: Layout, algorithm: Algorithm) -> State {
        if layout.needs_length() {
            State::Spooled(Spool::default())
        } else {
            State::Streaming(Box::new(layout.job_hasher(algorithm)), 0)
        }
    }

    pub fn update(&mut self, data: &[u8]) -> Result<(), Error> {
        match self {
            State::Streaming(h, n) => {
                h.update(data);
                *n += data.len() as u64;
            }
            State::Spooled(spool) => spool.write(data)?,
        }
        Ok(())
    }

    /// The digest of everything fed so far; feeding may go on.
    pub fn digest(&mut self, layout: Layout, algorithm: Algorithm) -> Result<Root, Error> {
        match self {
            // The whole stream is one job, whose digest the combiner makes the root.
            State::Streaming(h, n) => {
                let mut combiner = layout.combiner(algorithm);
                combiner.add(0, 0..*n, h.as_ref().clone().finalize());
                Ok(combiner.finish(*n)?)
            }
            State::Spooled(spool) => spool.digest(layout, algorithm),
        }
    }

    /// An independent copy; a spool in a file is copied to another file.
    pub fn try_clone(&mut self) -> Result<State, Error> {
        Ok(match self {
            State::Streaming(h, n) => State::Streaming(h.clone(), *n),
            State::Spooled(spool) => State::Spooled(spool.try_clone()?),
        })
    }
}

impl Spool {
    fn write(&mut self, data: &[u8]) -> Result<(), Error> {
        if self.memory.len() + data.len() <= SPOOL_MEMORY {
            self.memory.extend_from_slice(data);
            return Ok(());
        }
        self.flush()?;
        if data.len() >= SPOOL_MEMORY {
            let result = self.file()?.write_all(data);
            result.map_err(|e| self.failed(e))
        } else {
            self.memory.extend_from_slice(data);
            Ok(())
        }
    }

    /// The spool's file, created on first use in the directory for temporary files (TMPDIR).
    fn file(&mut self) -> Result<&mut File, Error> {
        if self.file.is_none() {
            let dir = std::env::temp_dir();
            let file = NamedTempFile::with_prefix_in(".mtsum-spool-", &dir)
                .map_err(|e| Error::Spool(dir.clone(), InputError::Io(dir_error(&dir, e))))?;
            self.file = Some(file);
        }
        Ok(self.file.as_mut().expect("just created").as_file_mut())
    }

    /// An error of the spool's file, naming it.
    fn failed(&self, e: io::Error) -> Error {
        let path = self.file.as_ref().map(|f| f.path().to_path_buf());
        Error::Spool(path.unwrap_or_default(), InputError::Io(e))
    }

    /// Moves the bytes in memory to the file.
    fn flush(&mut self) -> Result<(), Error> {
        if !self.memory.is_empty() {
            let memory = std::mem::take(&mut self.memory);
            let result = self.file()?.write_all(&memory);
            result.map_err(|e| self.failed(e))?;
            self.memory = memory;
            self.memory.clear();
        }
        Ok(())
    }

    fn digest(&mut self, layout: Layout, algorithm: Algorithm) -> Result<Root, Error> {
        if self.file.is_none() {
            return Ok(hash_bytes(layout, algorithm, &self.memory)?);
        }
        self.flush()?;
        let path = self
            .file
            .as_ref()
            .expect("a spool file")
            .path()
            .to_path_buf();
        let request = Request::new(layout, algorithm);
        match Engine::default().hash(&request, Target::Path(path.clone())) {
            Ok(digest) => Ok(digest.root),
            Err(InputError::NoRoot(e)) => Err(Error::NoRoot(e)),
            Err(e) => Err(Error::Spool(path, e)),
        }
    }

    fn try_clone(&mut self) -> Result<Spool, Error> {
        let mut copy = Spool {
            memory: self.memory.clone(),
            file: None,
        };
        if let Some(file) = &self.file {
            // Through the copy's own handle, which then stands at the end of the data, where
            // its next flush appends (a copy by path left it at 0, and that flush overwrote the
            // data). The original is read through a handle of its own, leaving its offset be.
            let mut from = file.reopen().map_err(|e| self.failed(e))?;
            let copied = io::copy(&mut from, copy.file()?);
            copied.map_err(|e| copy.failed(e))?;
        }
        Ok(copy)
    }
}

/// Why the temporary file could not be made in `dir`: the directory's own error where it has
/// one (tempfile's error names a file that never existed and has no errno).
fn dir_error(dir: &std::path::Path, e: io::Error) -> io::Error {
    match fs::metadata(dir) {
        Err(why) => why,
        Ok(meta) if !meta.is_dir() => io::Error::from_raw_os_error(libc::ENOTDIR),
        Ok(_) => io::Error::from(e.kind()),
    }
}

/// The digest of `data` in memory by the jobs and the combiner of a file: a spool too short to
/// be worth a file and the engine's threads.
fn hash_bytes(layout: Layout, algorithm: Algorithm, data: &[u8]) -> Result<Root, NoRoot> {
    let mut combiner = layout.combiner(algorithm);
    let jobs = layout.plan(algorithm, data.len() as u64, false);
    for (index, (range, kind)) in jobs.into_iter().enumerate() {
        let mut hasher = layout.hasher_for(algorithm, kind);
        hasher.update(&data[range.start as usize..range.end as usize]);
        combiner.add(index, range, hasher.finalize());
    }
    combiner.finish(data.len() as u64)
}
