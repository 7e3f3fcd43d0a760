//! Stopping a run on purpose (SPEC §11): the first SIGINT or SIGTERM asks
//! every part of a run to stop ([`requested`]); workers stop taking trials,
//! and the code that waits on an agent, a child process or a Lua script
//! notices and ends the running trial as `interrupted`. A second signal
//! exits at once, after killing the process groups still registered here
//! (agents and commands run in their own groups, out of the terminal's reach).
//!
//! The state is process-wide: one run per process. `cmd::run` installs the
//! signal handlers ([`install_signal_handlers`]); anything that starts a
//! process group registers it with [`track_group`] for as long as it lives.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Whether the run was asked to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Ask the run to stop (as the first signal does); `signal` is the signal
/// number, or 0 when not from a signal.
pub fn request(signal: i32) {
    SIGNAL.store(signal, Ordering::Relaxed);
    REQUESTED.store(true, Ordering::Relaxed);
}

/// The signal that stopped the run, by name (`"SIGINT"`, `"SIGTERM"`), if any.
pub fn signal_name() -> Option<&'static str> {
    if !requested() {
        return None;
    }
    Some(match SIGNAL.load(Ordering::Relaxed) {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a stop request",
    })
}

/// A process group registered for the second signal; unregistered on drop.
pub struct Tracked(i32);

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut g = GROUPS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = g.iter().position(|&p| p == self.0) {
            g.swap_remove(i);
        }
    }
}

/// Register the process group `pgid` (a child started with `process_group(0)`)
/// until the returned guard is dropped. Drop the guard before reaping the
/// group's leader: after that its id may be reused.
pub fn track_group(pgid: i32) -> Tracked {
    GROUPS.lock().unwrap_or_else(|p| p.into_inner()).push(pgid);
    Tracked(pgid)
}

/// SIGKILL every registered process group (the second signal's last act).
pub fn kill_groups() {
    let groups = GROUPS.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for pgid in groups {
        if pgid > 1 {
            // SAFETY: killpg only sends a signal to a group this process started.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

/// Install the handlers for SIGINT and SIGTERM: the first asks the run to
/// stop (and says so on stderr), the second kills the registered process
/// groups and exits at once with 128 + the signal's number.
pub fn install_signal_handlers() -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([libc::SIGINT, libc::SIGTERM])?;
    std::thread::Builder::new().name("evalua-signals".into()).spawn(move || {
        for sig in signals.forever() {
            if !requested() {
                request(sig);
                eprintln!(
                    "\nevalua: {} received: no new trials; running trials end as interrupted, then the summary \
                     and reports are written (send it again to exit at once)",
                    signal_name().unwrap_or("signal")
                );
            } else {
                kill_groups();
                eprintln!("\nevalua: second signal: exiting now (trials.jsonl keeps every finished trial)");
                std::process::exit(128 + sig);
            }
        }
    })?;
    Ok(())
}
