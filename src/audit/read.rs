//! The audit's reads: which files to hash and in which order, through the engine
//! ([`crate::engine`]) like every mode, and each result turned into a decision as soon as it
//! is known and reported in the order of the work.
//!
//! Every digest the audit needs of a file (the record's own, the new layout's of a migration,
//! the leaf digests of its outboard) comes from one read: the others are the engine's side
//! outputs ([`Side`](crate::engine::Side)). Small files are hashed side by side and a large one on every core, as
//! by `mtsum -r`; the readers keep to [`Io::rate_limit`] and read at [`Io::priority`]. Files on
//! a rotational disk go to the engine in windows in physical order ([`plan::read_order`]),
//! with one reader (see `run`'s `spinning`).

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::thread;

use crate::engine::{self, Engine, FileDigest, Request, Task};
use crate::source::{InputError, ReadMode, Target};

use super::plan::{self, IoPriority, Place};

/// How the audit reads.
#[derive(Clone, Debug, Default)]
pub struct Io {
    /// Readers (the engine's workers); `None`: one per available core.
    pub readers: Option<NonZeroUsize>,
    pub read_mode: ReadMode,
    /// At most this many bytes per second on average, over all readers.
    pub rate_limit: Option<u64>,
    /// Bytes read so far, for a progress display.
    pub progress: Option<Arc<AtomicU64>>,
    /// The I/O priority of the readers: idle unless told otherwise.
    pub priority: IoPriority,
}

impl PartialEq for Io {
    fn eq(&self, other: &Io) -> bool {
        self.readers == other.readers
            && self.read_mode == other.read_mode
            && self.rate_limit == other.rate_limit
            && self.priority == other.priority
            && self.progress.as_ref().map(Arc::as_ptr) == other.progress.as_ref().map(Arc::as_ptr)
    }
}

impl Eq for Io {}

impl Io {
    /// The engine that reads as this says.
    pub fn engine(&self) -> Engine {
        let readers = self
            .readers
            .or_else(|| thread::available_parallelism().ok())
            .unwrap_or(NonZeroUsize::MIN);
        let mut engine = Engine::new(readers)
            .with_read_mode(self.read_mode)
            .with_io_priority(self.priority);
        if let Some(rate) = self.rate_limit {
            engine = engine.with_rate_limit(rate);
        }
        if let Some(progress) = &self.progress {
            engine = engine.with_progress(progress.clone());
        }
        engine
    }
}

/// Files on rotational disks handed to the engine at once, in physical order: enough for the
/// head to sweep, few enough that verdicts keep coming.
const WINDOW: usize = 1024;

/// Reads the regular file `path` once and computes what `request` asks (the engine refuses
/// a file replaced by a FIFO rather than wait for its writer).
pub fn hash_file(
    path: &std::path::Path,
    request: &Request,
    io: &Io,
) -> Result<FileDigest, InputError> {
    io.engine().hash(request, Target::File(path.to_path_buf()))
}

/// A file to read.
pub struct Read {
    pub path: PathBuf,
    /// What to compute: the record's digest, with side outputs.
    pub request: Request,
    /// Where it lies, if that decides the order of reading (a rotational disk).
    pub place: Option<Place>,
}

/// One unit of work: a file to read, or a context that only has to come out in its place.
pub struct Work<T> {
    pub read: Option<Read>,
    pub context: T,
}

/// What [`in_order`] does with each piece of work: decides it as soon as its read is done
/// (or at once, for work that reads nothing), then reports the decisions in the order of the
/// work. Deciding is where an audit writes its records, so a file's record never waits for
/// files read after it in the order of the work (on a rotational disk, files are read in
/// physical order): a `kill -9` loses nothing decided.
pub trait Outcomes<T> {
    /// A decision, waiting for its turn to be reported.
    type Decided;
    /// What the read of the work with `context` gave (`None`: it reads nothing).
    fn decide(
        &mut self,
        context: T,
        result: Option<Result<FileDigest, InputError>>,
    ) -> Self::Decided;
    /// Called once per piece of work, in the order of the work.
    fn report(&mut self, decided: Self::Decided);
    /// Called after each decision and every 200 ms or so while the readers are busy, also
    /// when nothing is reported (a large file, a rotational disk's window read out of the
    /// order of the work): what was decided until then need not wait for a report.
    fn idle(&mut self) {}
}

/// Decides results as they come and reports them in the order of the work, each as soon as
/// all before it are.
struct Reorder<'a, T, O: Outcomes<T>> {
    waiting: BTreeMap<usize, O::Decided>,
    next: usize,
    outcomes: &'a mut O,
    _context: std::marker::PhantomData<T>,
}

impl<T, O: Outcomes<T>> engine::Sink<(usize, T)> for Reorder<'_, T, O> {
    fn take(
        &mut self,
        (index, context): (usize, T),
        result: Option<Result<FileDigest, InputError>>,
    ) {
        let decided = self.outcomes.decide(context, result);
        self.waiting.insert(index, decided);
        while let Some(decided) = self.waiting.remove(&self.next) {
            self.outcomes.report(decided);
            self.next += 1;
        }
        // Decided out of the order of the work, it may have nothing to report for long.
        self.outcomes.idle();
    }

    fn idle(&mut self) {
        self.outcomes.idle();
    }
}

/// The work as tasks for the engine, each with its index in the work: files on rotational
/// disks wait in a window and go out in physical order.
struct Tasks<T, I> {
    work: std::iter::Enumerate<I>,
    window: Vec<(usize, Read, T)>,
    ready: std::collections::VecDeque<Task<(usize, T)>>,
    /// With [`in_order`]'s `ahead`: how many more files go out before a pause, and how many
    /// then.
    ahead: Option<(usize, NonZeroUsize)>,
}

impl<T, I: Iterator<Item = Work<T>>> Iterator for Tasks<T, I> {
    type Item = Task<(usize, T)>;

    fn next(&mut self) -> Option<Task<(usize, T)>> {
        if let Some((left, ahead)) = &mut self.ahead {
            if *left == 0 {
                *left = ahead.get();
                return Some(Task::pause());
            }
            *left -= 1;
        }
        loop {
            if let Some(task) = self.ready.pop_front() {
                return Some(task);
            }
            let Some((index, item)) = self.work.next() else {
                self.send_window();
                return self.ready.pop_front();
            };
            match item.read {
                None => return Some(Task::pass((index, item.context))),
                Some(read) if read.place.is_some_and(|p| p.rotational) => {
                    self.window.push((index, read, item.context));
                    if self.window.len() == WINDOW {
                        self.send_window();
                    }
                }
                Some(read) => return Some(task(index, read, item.context)),
            }
        }
    }
}

impl<T, I> Tasks<T, I> {
    /// Queues the window's files in physical order.
    fn send_window(&mut self) {
        let places: Vec<Place> = (self.window.iter())
            .map(|(_, r, _)| r.place.expect("placed"))
            .collect();
        let mut taken: Vec<Option<_>> = self.window.drain(..).map(Some).collect();
        for i in plan::read_order(&places) {
            let (index, read, context) = taken[i].take().expect("each once");
            self.ready.push_back(task(index, read, context));
        }
    }
}

fn task<T>(index: usize, read: Read, context: T) -> Task<(usize, T)> {
    Task::hash(Target::File(read.path), read.request, (index, context))
}

/// Runs `work` through the engine as `io` says, decides each item with `outcomes` as soon as
/// its read is done (`None` for items that read nothing), and reports the decisions in the
/// order of `work`. With `ahead`, the engine takes no more than that many pieces of work
/// before their results are in: `work` then decides late what comes next (a time budget
/// that runs out hands out no more files), where the engine would otherwise take a batch
/// ahead.
pub fn in_order<T, I, O>(io: &Io, work: I, outcomes: &mut O, ahead: Option<NonZeroUsize>)
where
    I: IntoIterator<Item = Work<T>>,
    O: Outcomes<T>,
{
    let tasks = Tasks {
        work: work.into_iter().enumerate(),
        window: Vec::new(),
        ready: Default::default(),
        ahead: ahead.map(|n| (n.get(), n)),
    };
    let reorder = Reorder {
        waiting: BTreeMap::new(),
        next: 0,
        outcomes,
        _context: std::marker::PhantomData,
    };
    io.engine().run_as_done_to(tasks, reorder);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Algorithm;
    use crate::layout::Layout;

    #[test]
    fn results_come_back_in_the_order_of_the_work() {
        let dir = tempfile::tempdir().unwrap();
        let mut work = Vec::new();
        for i in 0..50usize {
            let path = dir.path().join(i.to_string());
            std::fs::write(&path, vec![i as u8; (50 - i) * 1000]).unwrap();
            let request = Request::new(Layout::Plain, Algorithm::Sha256);
            let read = (i % 7 != 3).then_some(Read {
                path,
                request,
                place: None,
            });
            work.push(Work { read, context: i });
        }
        let io = Io {
            readers: NonZeroUsize::new(4),
            ..Io::default()
        };
        let mut seen = Recorded::default();
        in_order(&io, work, &mut seen, None);
        for &(i, size) in &seen.decided {
            assert_eq!(size.is_none(), i % 7 == 3);
            if let Some(size) = size {
                assert_eq!(size, ((50 - i) * 1000) as u64);
            }
        }
        assert_eq!(seen.reported, (0..50).collect::<Vec<_>>());
    }

    /// The decisions in the order they were made, with the sizes read, and the reports.
    #[derive(Default)]
    struct Recorded {
        decided: Vec<(usize, Option<u64>)>,
        reported: Vec<usize>,
    }

    impl Outcomes<usize> for Recorded {
        type Decided = usize;
        fn decide(&mut self, i: usize, result: Option<Result<FileDigest, InputError>>) -> usize {
            self.decided.push((i, result.map(|r| r.unwrap().size)));
            i
        }
        fn report(&mut self, i: usize) {
            self.reported.push(i);
        }
    }

    #[test]
    fn files_read_in_physical_order_are_decided_as_they_are_read_and_reported_in_order() {
        // One reader, and the walk's first file lies last on the disk: each file is decided
        // as soon as it is read (a record written, were this an audit), in physical order,
        // not held until the first one in walk order is read.
        let dir = tempfile::tempdir().unwrap();
        let n = 20usize;
        let work = (0..n).map(|i| {
            let path = dir.path().join(i.to_string());
            std::fs::write(&path, vec![i as u8; 1000 + i]).unwrap();
            let place = Place {
                dev: 1,
                rotational: true,
                physical: Some((n - i) as u64 * 4096),
                ino: 1,
            };
            let request = Request::new(Layout::Plain, Algorithm::Blake3);
            let read = Some(Read {
                path,
                request,
                place: Some(place),
            });
            Work { read, context: i }
        });
        let io = Io {
            readers: NonZeroUsize::new(1),
            ..Io::default()
        };
        let mut seen = Recorded::default();
        in_order(&io, work.collect::<Vec<_>>(), &mut seen, None);
        let decided: Vec<usize> = seen.decided.iter().map(|&(i, _)| i).collect();
        assert_eq!(decided, (0..n).rev().collect::<Vec<_>>());
        for &(i, size) in &seen.decided {
            assert_eq!(size, Some((1000 + i) as u64));
        }
        assert_eq!(seen.reported, (0..n).collect::<Vec<_>>());
    }
}
