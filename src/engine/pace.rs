//! How fast and at which priority the readers read: options of the engine's readers, so
//! that any mode can read gently (an audit on a file server by default; `--limit-rate` and
//! `--io-priority` for whoever asks).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Shares the average rate of all readers: after each chunk, the worker waits until the
/// bytes hashed so far, that chunk's included, are no more than `rate` per second since the
/// first one. (Waiting only for the bytes before a chunk would let the last chunk through
/// unpaid: a file of one chunk would be read at once whatever the rate.) Readers stay at
/// most their read-ahead ahead of their hashers, so reads keep the rate too.
#[derive(Debug)]
pub struct RateLimiter {
    rate: u64,
    state: Mutex<Option<(Instant, u64)>>,
}

impl RateLimiter {
    pub fn new(bytes_per_second: u64) -> RateLimiter {
        RateLimiter {
            rate: bytes_per_second.max(1),
            state: Mutex::new(None),
        }
    }

    /// Counts `bytes` just read, and waits until they are due.
    pub fn take(&self, bytes: u64) {
        let wait = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let (start, used) = state.get_or_insert((Instant::now(), 0));
            *used += bytes;
            let due = Duration::from_secs_f64(*used as f64 / self.rate as f64);
            (*start + due).saturating_duration_since(Instant::now())
        };
        if !wait.is_zero() {
            thread::sleep(wait);
        }
    }
}

/// Where the workers count the bytes they hash: a progress counter and a rate limit, each
/// if asked.
#[derive(Clone, Debug, Default)]
pub(super) struct Meter {
    pub(super) progress: Option<Arc<AtomicU64>>,
    pub(super) limiter: Option<Arc<RateLimiter>>,
}

impl Meter {
    /// Counts `bytes` hashed, and waits while the rate limit says so.
    pub(super) fn count(&self, bytes: u64) {
        if let Some(p) = &self.progress {
            p.fetch_add(bytes, Ordering::Relaxed);
        }
        if let Some(limiter) = &self.limiter {
            limiter.take(bytes);
        }
    }
}

/// An I/O priority class, as `ionice` names them (`--io-priority`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IoPriority {
    /// Only when no one else wants the disk: the default for audits.
    #[default]
    Idle,
    /// The ordinary class, at level 0 (highest) to 7.
    BestEffort(u8),
    /// Leave the priority as it is.
    Unchanged,
}

impl std::str::FromStr for IoPriority {
    type Err = String;

    /// `idle`, `best-effort` (level 4), `best-effort:N` (0 to 7), `none`.
    fn from_str(s: &str) -> Result<IoPriority, String> {
        let bad = || {
            format!("'{s}' is not an I/O priority: idle, best-effort, best-effort:0 to 7 or none")
        };
        match s.split_once(':') {
            None => match s {
                "idle" => Ok(IoPriority::Idle),
                "best-effort" => Ok(IoPriority::BestEffort(4)),
                "none" => Ok(IoPriority::Unchanged),
                _ => Err(bad()),
            },
            Some(("best-effort", level)) => match level.parse::<u8>() {
                Ok(n) if n <= 7 => Ok(IoPriority::BestEffort(n)),
                _ => Err(bad()),
            },
            Some(_) => Err(bad()),
        }
    }
}

impl IoPriority {
    /// The value `ioprio_set` takes: class in the top bits, level below (linux/ioprio.h).
    pub fn value(self) -> Option<libc::c_int> {
        const CLASS_SHIFT: libc::c_int = 13;
        match self {
            IoPriority::Idle => Some(3 << CLASS_SHIFT),
            IoPriority::BestEffort(level) => Some((2 << CLASS_SHIFT) | libc::c_int::from(level)),
            IoPriority::Unchanged => None,
        }
    }

    /// Applies the priority to the calling thread (I/O priorities belong to threads); an
    /// error is ignored: a kernel without I/O scheduling classes reads at its own pace.
    pub fn apply_to_this_thread(self) {
        const IOPRIO_WHO_PROCESS: libc::c_int = 1;
        if let Some(value) = self.value() {
            // SAFETY: ioprio_set takes three integers and touches no memory of ours; 0
            // means the calling thread.
            unsafe {
                libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_limiter_holds_the_average_including_the_last_read() {
        let limiter = RateLimiter::new(1000);
        let start = Instant::now();
        limiter.take(100); // read: paid for until 0.1 s
        limiter.take(100); // until 0.2 s
        limiter.take(100); // until 0.3 s
        assert!(start.elapsed() >= Duration::from_millis(300));
    }

    #[test]
    fn priorities_read_as_ionice_names_them() {
        assert_eq!("idle".parse(), Ok(IoPriority::Idle));
        assert_eq!("best-effort".parse(), Ok(IoPriority::BestEffort(4)));
        assert_eq!("best-effort:0".parse(), Ok(IoPriority::BestEffort(0)));
        assert_eq!("none".parse(), Ok(IoPriority::Unchanged));
        for bad in ["", "realtime", "best-effort:8", "idle:1"] {
            assert!(bad.parse::<IoPriority>().is_err(), "{bad}");
        }
        assert_eq!(IoPriority::Idle.value(), Some(3 << 13));
        assert_eq!(IoPriority::BestEffort(7).value(), Some((2 << 13) | 7));
    }
}
