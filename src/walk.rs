//! Walking the command line's paths: files, standard input, and directories with `-r`.
//!
//! [`walk`] turns the paths the user named into the inputs to hash, one [`Walked`] item at a
//! time. It is lazy: a directory is listed only when the walk reaches it, so a tree of millions
//! of files streams into the engine while memory holds no more than the listings of the
//! directories on the current path (depth × directory size).
//!
//! The rules, chosen to match what `sha256sum`, `find` and `rhash -r` users expect:
//! - Every argument yields its items in command-line order; `-` is standard input.
//! - An argument that is not a directory (or any argument when recursion is off) is one
//!   [`Walked::Input`], whatever it is: a regular file, a FIFO, a device, a symbolic link
//!   (followed), even a path that does not exist. The engine then opens it and reports
//!   `No such file or directory` or `Is a directory` in the words of `sha256sum`, so those
//!   messages have one source.
//! - With recursion, a directory argument (or a symbolic link to one) is replaced by the files
//!   below it. Their paths are the argument as the user spelled it joined with the names met
//!   on the way (`./x/` gives `./x/sub/file`, `x//` gives `x//sub/file`), exactly as `find`
//!   prints them: nothing is canonicalised, so the names in a sum file are the ones the user
//!   will check it with.
//! - The files of one argument come out in bytewise order of their whole paths, the order of
//!   `find DIR -type f | LC_ALL=C sort`. Sorting each directory by plain name would put
//!   `dir/x` before `dir.bak/y`, since the name `dir` < `dir.bak`; the whole paths compare the
//!   other way, since `.` < `/`. Sum files written by `find | sort | xargs sha256sum` pipelines
//!   therefore diff cleanly against ours. The walk is depth-first, so a directory's files come
//!   out together.
//! - Symbolic links met during recursion are skipped with a note unless links are followed
//!   ([`Recursion::FollowSymlinks`], `-L`); then a link that leads back to a directory being
//!   walked is a [`FilesystemLoop`] error instead of an endless walk. FIFOs, sockets and
//!   devices met during recursion are skipped with a note: reading one could block forever or
//!   never end. Named on the command line, they are hashed. A regular file found below a
//!   directory is a [`Target::File`], which must still be one when it is opened: one replaced
//!   by a FIFO meanwhile is refused instead of waited for.
//! - Invalid UTF-8 names survive byte for byte: paths stay `OsString`s throughout.
//!
//! ```
//! use mtsum::source::Target;
//! use mtsum::walk::{Recursion, Walked, walk};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir(dir.path().join("sub"))?;
//! std::fs::write(dir.path().join("sub/b"), "b")?;
//! std::fs::write(dir.path().join("a"), "a")?;
//!
//! let inputs: Vec<Target> = walk([Target::from_arg(dir.path())], Recursion::SkipSymlinks)
//!     .map(|item| match item {
//!         Walked::Input(target) => target,
//!         other => panic!("unexpected {other:?}"),
//!     })
//!     .collect();
//! assert_eq!(
//!     inputs,
//!     [
//!         Target::File(dir.path().join("a")),
//!         Target::File(dir.path().join("sub/b")),
//!     ]
//! );
//! # Ok::<(), std::io::Error>(())
//! ```

use std::cmp::Ordering;
use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::fs::{self, FileType};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use walkdir::{DirEntry, WalkDir};

use crate::source::{InputError, Target, remote};

/// Whether and how directories named on the command line are expanded.
///
/// A symbolic link named on the command line is always followed (to a file, or with recursion
/// to a directory), as by `find -H`: the user pointed at it. The variants differ
/// only in what happens to links met *below* a directory argument; `-L` without `-r` therefore
/// changes nothing and maps to [`Recursion::Off`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Recursion {
    /// Each argument is one input; a directory is handed on, and the engine refuses it with
    /// `Is a directory`, as `sha256sum` does.
    #[default]
    Off,
    /// `-r`: directories are expanded; symbolic links met inside them are skipped with a note
    /// (`find -H`).
    SkipSymlinks,
    /// `-r -L`: directories are expanded and symbolic links inside them followed, with loop
    /// detection (`find -L`).
    FollowSymlinks,
}

impl Recursion {
    /// The recursion that the command-line flags `-r/--recursive` and `-L/--follow` ask for.
    pub fn from_flags(recursive: bool, follow_links: bool) -> Recursion {
        match (recursive, follow_links) {
            (false, _) => Recursion::Off,
            (true, false) => Recursion::SkipSymlinks,
            (true, true) => Recursion::FollowSymlinks,
        }
    }
}

/// One step of the walk.
#[derive(Debug)]
pub enum Walked {
    /// Something to hash.
    Input(Target),
    /// A path met during recursion that is deliberately not hashed: worth a note with
    /// `--verbose`, not an error.
    Skipped { path: PathBuf, reason: SkipReason },
    /// A path met during recursion that could not be walked: an unreadable or vanished
    /// directory, a broken symbolic link followed with `-L`, a [`FilesystemLoop`]. Print it as
    /// `mtsum: PATH: ERROR`, like an input that could not be hashed, and carry on.
    Error { path: PathBuf, error: InputError },
}

/// Why a path met during recursion is not hashed. Its `Display` is the note to print after
/// the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// A symbolic link, and links are not followed.
    SymlinkNotFollowed,
    /// A named pipe: reading it blocks until some other process writes.
    Fifo,
    /// A Unix domain socket, which cannot be opened for reading.
    Socket,
    /// A character device such as `/dev/zero`, which may never end.
    CharDevice,
    /// A block device: a whole disk is rarely what hashing a directory means.
    BlockDevice,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SkipReason::SymlinkNotFollowed => "symbolic link not followed (use -L to follow)",
            SkipReason::Fifo => "FIFO skipped",
            SkipReason::Socket => "socket skipped",
            SkipReason::CharDevice => "character device skipped",
            SkipReason::BlockDevice => "block device skipped",
        })
    }
}

/// A followed symbolic link that leads back to a directory being walked.
///
/// It reaches the caller as the payload of an [`InputError::Io`] (kind `Other`), so that every
/// failure of an input is one type, printed one way; `io::Error::get_ref` and `downcast_ref`
/// recover it.
#[derive(Debug, thiserror::Error)]
#[error("filesystem loop detected: leads back to {}", .ancestor.display())]
pub struct FilesystemLoop {
    /// The directory, on the path being walked, that the link leads back to.
    pub ancestor: PathBuf,
}

/// Expands `targets` according to `recursion`, lazily and in a deterministic order (see the
/// [module documentation](self) for the rules).
///
/// No targets means no items: reading standard input when no path is given is the command
/// line's rule, not the walk's.
pub fn walk<I>(targets: I, recursion: Recursion) -> Walk<I::IntoIter>
where
    I: IntoIterator<Item = Target>,
{
    Walk {
        targets: targets.into_iter(),
        recursion,
        tree: None,
        ancestors: None,
        listed: std::collections::VecDeque::new(),
    }
}

/// The iterator returned by [`walk`].
pub struct Walk<I> {
    targets: I,
    recursion: Recursion,
    /// The directory argument being walked, as spelled, and its entries still to come.
    tree: Option<(PathBuf, walkdir::IntoIter)>,
    /// With `-L`, the directories on the path from the argument down to the current entry.
    ancestors: Option<Ancestors>,
    /// The objects below a prefix argument (`-r s3://BUCKET/PREFIX/`) still to come.
    listed: std::collections::VecDeque<Target>,
}

/// The directories from a walk's argument down to where it is, by device and inode.
///
/// Walkdir compares a directory with its ancestors only when it reaches it through a link.
/// With `-L` a link can also lead *above* the argument, and from there plain directories lead
/// back into it (`t/dir/up -> ..` makes `t/dir/up/dir` the argument `t/dir` again): every
/// directory is compared here, as `find -L` does, so that no file is hashed twice.
#[derive(Debug, Default)]
struct Ancestors {
    /// (depth, device, inode, path) of each directory on the current path.
    path: Vec<(usize, u64, u64, PathBuf)>,
}

impl Ancestors {
    /// Notes that the walk enters the directory `entry`; a loop error if it is one of the
    /// directories it is already in.
    fn enter(&mut self, root: &Path, entry: &DirEntry) -> Option<Walked> {
        let depth = entry.depth();
        self.path.retain(|(d, ..)| *d < depth);
        let meta = match entry.metadata() {
            Ok(meta) => meta,
            Err(e) => return Some(walk_error(root, e)),
        };
        let (dev, ino) = (meta.dev(), meta.ino());
        if let Some((.., ancestor)) = self.path.iter().find(|(_, d, i, _)| (*d, *i) == (dev, ino)) {
            let error = io::Error::other(FilesystemLoop {
                ancestor: ancestor.clone(),
            });
            return Some(Walked::Error {
                path: entry.path().to_path_buf(),
                error: InputError::Io(error),
            });
        }
        self.path
            .push((depth, dev, ino, entry.path().to_path_buf()));
        None
    }
}

impl<I> fmt::Debug for Walk<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Walk")
            .field("recursion", &self.recursion)
            .field("tree", &self.tree.as_ref().map(|(root, _)| root))
            .finish_non_exhaustive()
    }
}

impl<I: Iterator<Item = Target>> Iterator for Walk<I> {
    type Item = Walked;

    fn next(&mut self) -> Option<Walked> {
        loop {
            if let Some(object) = self.listed.pop_front() {
                return Some(Walked::Input(object));
            }
            if let Some((root, entries)) = &mut self.tree {
                match entries.next() {
                    Some(Ok(entry)) if self.ancestors.is_some() && entry.file_type().is_dir() => {
                        let ancestors = self.ancestors.as_mut().expect("following links");
                        if let Some(item) = ancestors.enter(root, &entry) {
                            entries.skip_current_dir();
                            return Some(item);
                        }
                    }
                    Some(entry) => match classify(root, entry) {
                        Some(item) => return Some(item),
                        None => continue,
                    },
                    None => self.tree = None,
                }
                continue;
            }
            let root = match self.targets.next()? {
                Target::Path(path) if self.recursion != Recursion::Off && is_dir(&path) => path,
                Target::Url(url) if self.recursion != Recursion::Off && url.is_prefix() => {
                    match remote::list(&url) {
                        Ok(objects) => self.listed.extend(objects.into_iter().map(Target::Url)),
                        Err(error) => {
                            let path = url.as_str().into();
                            return Some(Walked::Error { path, error });
                        }
                    }
                    continue;
                }
                target => return Some(Walked::Input(target)),
            };
            let follow_links = self.recursion == Recursion::FollowSymlinks;
            let mut order = PathOrder::new(follow_links);
            let entries = WalkDir::new(&root)
                .follow_root_links(true)
                .follow_links(follow_links)
                .sort_by(move |a, b| order.cmp(a, b))
                .into_iter();
            self.tree = Some((root, entries));
            self.ancestors = follow_links.then(Ancestors::default);
        }
    }
}

/// Whether `path` is a directory or a symbolic link to one. Anything else, including a path
/// that cannot be examined, is passed on as an input, for the engine to hash or to report.
fn is_dir(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|meta| meta.is_dir())
}

/// What one entry of a directory argument's walk becomes; `None` for a directory, whose files
/// follow.
fn classify(root: &Path, entry: walkdir::Result<DirEntry>) -> Option<Walked> {
    let entry = match entry {
        Ok(entry) => entry,
        Err(e) => return Some(walk_error(root, e)),
    };
    let kind = entry.file_type();
    // With `follow_links` walkdir has already replaced a link by its target's type, so a link
    // seen here is one not to follow, or the argument itself, which walkdir follows as the
    // directory that `is_dir` found.
    if kind.is_dir() || (entry.depth() == 0 && kind.is_symlink()) {
        return None;
    }
    let path = entry.into_path();
    match skip_reason(kind) {
        // The argument itself turns up as a FIFO only if it was replaced after `is_dir`
        // looked; named on the command line, it is hashed all the same.
        Some(reason) if path != root => Some(Walked::Skipped { path, reason }),
        // Found as a regular file: it must still be one when it is opened.
        None if kind.is_file() && path != root => Some(Walked::Input(Target::File(path))),
        _ => Some(Walked::Input(Target::Path(path))),
    }
}

/// Why an entry of type `kind` is not hashed, if it is not a regular file.
fn skip_reason(kind: FileType) -> Option<SkipReason> {
    if kind.is_file() {
        None
    } else if kind.is_symlink() {
        Some(SkipReason::SymlinkNotFollowed)
    } else if kind.is_fifo() {
        Some(SkipReason::Fifo)
    } else if kind.is_socket() {
        Some(SkipReason::Socket)
    } else if kind.is_char_device() {
        Some(SkipReason::CharDevice)
    } else if kind.is_block_device() {
        Some(SkipReason::BlockDevice)
    } else {
        // Unix has no other kind; should one appear, whether it can be hashed is the engine's
        // call.
        None
    }
}

/// A walkdir error as a [`Walked::Error`]. Walkdir names the path for every error but one, a
/// directory that cannot be opened to compare it with its ancestors under `-L`; the argument
/// being walked is the best name left for that.
fn walk_error(root: &Path, e: walkdir::Error) -> Walked {
    let path = e.path().unwrap_or(root).to_path_buf();
    let error = match e.loop_ancestor() {
        Some(ancestor) => io::Error::other(FilesystemLoop {
            ancestor: ancestor.to_path_buf(),
        }),
        None => e
            .into_io_error()
            .expect("a walkdir error that is not a loop is an I/O error"),
    };
    Walked::Error {
        path,
        error: InputError::Io(error),
    }
}

/// The order of the entries of one directory: bytewise by name, a directory's name compared
/// as if it ended in `/`. Since every path below a directory `d` starts with `d/`, a
/// depth-first walk in this order yields the whole paths in bytewise order.
struct PathOrder {
    follow_links: bool,
    /// With `follow_links`, whether each symbolic link in the directory `dir` leads to a
    /// directory. Walkdir compares entries before it follows them, and one `stat` per link is
    /// cheaper than one per comparison. It sorts one directory at a time, so the cache never
    /// holds more than one directory's links.
    dir: PathBuf,
    links_to_dirs: HashMap<OsString, bool>,
}

impl PathOrder {
    fn new(follow_links: bool) -> PathOrder {
        PathOrder {
            follow_links,
            dir: PathBuf::new(),
            links_to_dirs: HashMap::new(),
        }
    }

    /// Compares the whole paths, not the names: walkdir sorts the entries of one directory,
    /// whose paths are the directory's followed by the name, so the order is the same, and
    /// a path is at hand where a name is found anew at each comparison (`Path::file_name`).
    /// Over 20 000 files in one directory the sort took 44 of the main thread's 348 samples
    /// with the names, 24 with the paths.
    fn cmp(&mut self, a: &DirEntry, b: &DirEntry) -> Ordering {
        let (a_dir, b_dir) = (self.is_dir(a), self.is_dir(b));
        let (a_path, b_path) = (
            a.path().as_os_str().as_bytes(),
            b.path().as_os_str().as_bytes(),
        );
        path_order(a_path, a_dir, b_path, b_dir)
    }

    /// Whether the walk will descend into `entry`.
    fn is_dir(&mut self, entry: &DirEntry) -> bool {
        let kind = entry.file_type();
        if !(self.follow_links && kind.is_symlink()) {
            return kind.is_dir();
        }
        let parent = entry.path().parent().unwrap_or(Path::new(""));
        if parent != self.dir {
            self.dir = parent.to_path_buf();
            self.links_to_dirs.clear();
        }
        *self
            .links_to_dirs
            .entry(entry.file_name().to_os_string())
            .or_insert_with(|| is_dir(entry.path()))
    }
}

/// The bytewise order of `a` and `b`, each followed by `/` if it names a directory. The
/// common length is compared as slices (`memcmp`): byte by byte, as iterators, the whole
/// paths cost more (74 samples) than finding the names had.
fn path_order(a: &[u8], a_dir: bool, b: &[u8], b_dir: bool) -> Ordering {
    let common = a.len().min(b.len());
    a[..common]
        .cmp(&b[..common])
        .then_with(|| as_path(&a[common..], a_dir).cmp(as_path(&b[common..], b_dir)))
}

/// The bytes of `path`, followed by `/` if it names a directory.
fn as_path(path: &[u8], is_dir: bool) -> impl Iterator<Item = u8> + '_ {
    path.iter().copied().chain(is_dir.then_some(b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(a: &[u8], a_dir: bool, b: &[u8], b_dir: bool) -> Ordering {
        path_order(a, a_dir, b, b_dir)
    }

    #[test]
    fn a_directory_sorts_as_the_paths_below_it_do() {
        // `dir.bak/y` < `dir/x` because `.` < `/`, although the name `dir` < `dir.bak`.
        assert_eq!(order(b"dir.bak", true, b"dir", true), Ordering::Less);
        assert_eq!(order(b"dir-x", false, b"dir", true), Ordering::Less);
        assert_eq!(order(b"dir0", false, b"dir", true), Ordering::Greater);
        // A file `dir` comes before every `dir…`, as the shorter path does.
        assert_eq!(order(b"dir", false, b"dir.bak", false), Ordering::Less);
        assert_eq!(order(b"dir", false, b"dir", true), Ordering::Less);
    }

    #[test]
    fn the_order_is_that_of_the_paths_with_a_slash_after_a_directory() {
        let paths: [&[u8]; 9] = [
            b"", b"d", b"d/", b"d.b", b"d/x", b"d0", b"dd", b"\xff", b"D",
        ];
        for a in paths {
            for b in paths {
                for (a_dir, b_dir) in [(false, false), (false, true), (true, false), (true, true)] {
                    let slash = |p: &[u8], dir: bool| [p, if dir { b"/" } else { b"" }].concat();
                    let expected = slash(a, a_dir).cmp(&slash(b, b_dir));
                    assert_eq!(order(a, a_dir, b, b_dir), expected, "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn names_compare_bytewise_not_by_locale() {
        // Uppercase before lowercase, ASCII before anything above 0x7f, UTF-8 or not.
        assert_eq!(order(b"B", false, b"a", false), Ordering::Less);
        assert_eq!(
            order(b"z", false, "\u{e9}".as_bytes(), false),
            Ordering::Less
        );
        assert_eq!(order(b"\xff", false, b"\xc3\xa9", false), Ordering::Greater);
    }

    #[test]
    fn a_walk_can_be_handed_to_another_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<Walk<std::vec::IntoIter<Target>>>();
    }

    #[test]
    fn flags_map_to_recursion() {
        assert_eq!(Recursion::from_flags(false, false), Recursion::Off);
        assert_eq!(Recursion::from_flags(false, true), Recursion::Off);
        assert_eq!(Recursion::from_flags(true, false), Recursion::SkipSymlinks);
        assert_eq!(Recursion::from_flags(true, true), Recursion::FollowSymlinks);
    }

    #[test]
    fn a_loop_reads_as_a_message_naming_the_ancestor() {
        let error = io::Error::other(FilesystemLoop {
            ancestor: "top/sub".into(),
        });
        assert_eq!(
            InputError::Io(error).to_string(),
            "filesystem loop detected: leads back to top/sub"
        );
    }

    #[test]
    fn walk_errors_read_like_coreutils_and_name_the_path() {
        let missing = Path::new("/nonexistent/mtsum-walk-test");
        let e = WalkDir::new(missing)
            .into_iter()
            .next()
            .unwrap()
            .unwrap_err();
        match walk_error(Path::new("arg"), e) {
            Walked::Error { path, error } => {
                assert_eq!(path, missing);
                assert_eq!(error.to_string(), "No such file or directory");
            }
            other => panic!("{other:?}"),
        }
    }
}
