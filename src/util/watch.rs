//! A thread's deadline, visible to code the Lua hook cannot reach and to the
//! run's watchdog.
//!
//! The Lua limits publish here the earliest deadline of the code running on
//! this thread (a check's 10 s, a handler's, the trial's). Host code that
//! runs long without executing a Lua instruction reads it: SQLite's progress
//! handler interrupts a query past it, the pattern matcher stops past it.
//! A worker thread of a run also installs a [`Beat`] that mirrors the
//! deadline for the watchdog on another thread, which abandons a worker that
//! stays past it by a margin (code that no limit could stop).
//!
//! Time the thread spends blocked in trusted host calls that have their own
//! timeouts (a child process, a judge model) is published as no deadline.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The process's reference instant: deadlines travel between threads as
/// milliseconds since it.
fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// A worker thread's deadline, shared with the thread that watches it.
#[derive(Debug, Default)]
pub struct Beat {
    /// Milliseconds since [`epoch`] + 1; 0 for none.
    deadline_ms: AtomicU64,
}

impl Beat {
    fn set(&self, d: Option<Instant>) {
        let v = d.map_or(0, |d| d.saturating_duration_since(epoch()).as_millis() as u64 + 1);
        self.deadline_ms.store(v, Ordering::SeqCst);
    }

    /// The watched thread's deadline, if it has one now.
    pub fn deadline(&self) -> Option<Instant> {
        match self.deadline_ms.load(Ordering::SeqCst) {
            0 => None,
            ms => Some(epoch() + Duration::from_millis(ms - 1)),
        }
    }
}

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    static BEAT: RefCell<Option<Arc<Beat>>> = const { RefCell::new(None) };
}

/// Mirror this thread's deadline into `beat` from now on.
pub fn install(beat: Arc<Beat>) {
    let _ = epoch();
    beat.set(deadline());
    BEAT.with(|b| *b.borrow_mut() = Some(beat));
}

/// Publish this thread's deadline (None: no limit applies now).
pub fn publish(d: Option<Instant>) {
    DEADLINE.with(|c| c.set(d));
    BEAT.with(|b| {
        if let Some(b) = &*b.borrow() {
            b.set(d);
        }
    });
}

/// This thread's deadline.
pub fn deadline() -> Option<Instant> {
    DEADLINE.with(|c| c.get())
}

/// True once this thread's deadline has passed.
pub fn overdue() -> bool {
    deadline().is_some_and(|d| Instant::now() >= d)
}

/// Run `f` with deadline `d` (restoring the previous one after).
pub fn with_deadline<R>(d: Instant, f: impl FnOnce() -> R) -> R {
    let before = deadline();
    publish(Some(before.map_or(d, |b| b.min(d))));
    let r = f();
    publish(before);
    r
}

/// Run `f`, a trusted host call with its own timeout, with no deadline published.
pub fn unwatched<R>(f: impl FnOnce() -> R) -> R {
    let before = deadline();
    publish(None);
    let r = f();
    publish(before);
    r
}
