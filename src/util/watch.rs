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

/// Run `f` on this thread under a watchdog: should the deadline this thread
/// publishes pass by more than `margin` while `f` runs (code no limit could
/// stop, a C function), `overrun` is called on the watchdog's own thread.
/// The stuck thread cannot be stopped, so `overrun` is where the caller
/// gives up (loading a suite exits the process).
pub fn watched<R>(margin: Duration, overrun: impl FnOnce() + Send + 'static, f: impl FnOnce() -> R) -> R {
    let beat = Arc::new(Beat::default());
    let before = BEAT.with(|b| b.borrow_mut().replace(beat.clone()));
    beat.set(deadline());
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let dog = std::thread::spawn(move || {
        let mut overrun = Some(overrun);
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(Duration::from_millis(100)) {
            if beat.deadline().is_some_and(|d| Instant::now() > d + margin)
                && let Some(o) = overrun.take()
            {
                o();
            }
        }
    });
    let r = f();
    let _ = done.send(());
    let _ = dog.join();
    BEAT.with(|b| *b.borrow_mut() = before);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn the_watchdog_calls_overrun_when_code_stays_past_its_deadline() {
        let stuck = Arc::new(AtomicBool::new(true));
        let s = stuck.clone();
        let took = Instant::now();
        // Code no limit stops: it spins until the watchdog lets it go.
        watched(
            Duration::from_millis(50),
            move || s.store(false, Ordering::SeqCst),
            || {
                publish(Some(Instant::now()));
                while stuck.load(Ordering::SeqCst) {
                    assert!(took.elapsed() < Duration::from_secs(60), "the watchdog never fired");
                    std::hint::spin_loop();
                }
                publish(None);
            },
        );
        // Code that keeps its deadline is left alone.
        let fired = Arc::new(AtomicBool::new(false));
        let f = fired.clone();
        watched(
            Duration::from_millis(50),
            move || f.store(true, Ordering::SeqCst),
            || {
                with_deadline(Instant::now() + Duration::from_secs(60), || {
                    std::thread::sleep(Duration::from_millis(300))
                })
            },
        );
        assert!(!fired.load(Ordering::SeqCst));
    }
}
