//! A process limit for each sandboxed process tree: a cgroup of the pids
//! controller with `pids.max` = [`MAX_PROCESSES`], where evalua may create
//! one (cgroup v1's pids hierarchy writable to it: as root, or delegated).
//! A fork bomb in an agent then stops at the limit (`fork` fails with
//! EAGAIN) instead of filling the host's process table until the trial's
//! deadline.
//!
//! The child must be in the cgroup from its first instruction, and
//! `posix_spawn` cannot be told a cgroup: cgroup v1 moves single threads
//! (its `tasks` file takes thread ids), so the spawning thread joins the
//! cgroup, spawns (the child inherits it) and goes back. Elsewhere (cgroup
//! v2 only, or no write access) there is no process limit: said in
//! docs/design/isolation.md.

use std::io;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Processes (threads included) one sandboxed process tree may hold at once.
pub const MAX_PROCESSES: u32 = 512;

/// evalua's own cgroup of the pids hierarchy, and the folder it makes its limits in.
struct Root {
    /// `tasks` of the cgroup evalua's threads belong to.
    home_tasks: PathBuf,
    /// `<that cgroup>/evalua-<pid>`, made by this process.
    dir: PathBuf,
}

fn root() -> Option<&'static Root> {
    static ROOT: OnceLock<Option<Root>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        // cgroup v1: `N:pids:/path` (several controllers may share a line: `N:a,pids:/path`).
        let rel = own.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, ctl, path) = (parts.next()?, parts.next()?, parts.next()?);
            ctl.split(',').any(|c| c == "pids").then(|| path.trim_start_matches('/').to_string())
        })?;
        let base = PathBuf::from("/sys/fs/cgroup/pids").join(rel);
        sweep(&base);
        let dir = base.join(format!("evalua-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        Some(Root { home_tasks: base.join("tasks"), dir })
    })
    .as_ref()
}

/// Remove the folders of evalua processes that are gone (killed before
/// their [`cleanup`]): each limit that is empty by now, then the folder.
fn sweep(base: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("evalua-").and_then(|p| p.parse::<u32>().ok()) else { continue };
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if let Ok(limits) = std::fs::read_dir(e.path()) {
            for l in limits.flatten().filter(|l| l.path().is_dir()) {
                let _ = std::fs::remove_dir(l.path());
            }
        }
        let _ = std::fs::remove_dir(e.path());
    }
}

/// One process tree's cgroup; removed when dropped (once its processes are gone).
pub struct Limit {
    dir: PathBuf,
}

impl Drop for Limit {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// A new cgroup limited to [`MAX_PROCESSES`], or None where evalua cannot make one.
pub fn limit() -> Option<Limit> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let root = root()?;
    let dir = root.dir.join(NEXT.fetch_add(1, Ordering::Relaxed).to_string());
    std::fs::create_dir(&dir).ok()?;
    let limit = Limit { dir };
    std::fs::write(limit.dir.join("pids.max"), MAX_PROCESSES.to_string()).ok()?;
    Some(limit)
}

/// Run `spawn` with the calling thread in `limit`'s cgroup, so what it
/// starts is born there; the thread goes back to evalua's cgroup after.
pub fn spawn_in<T>(limit: &Limit, spawn: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let root = root().ok_or_else(|| io::Error::other("no pids cgroup"))?;
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() }.to_string();
    std::fs::write(limit.dir.join("tasks"), &tid)?;
    let out = spawn();
    // Back home: a thread left in the limit would count against it, and its next children too.
    if let Err(e) = std::fs::write(&root.home_tasks, &tid) {
        eprintln!("warning: evalua's thread {tid} could not leave a process limit's cgroup: {e}");
    }
    out
}

/// Remove evalua's own folder of limits (at exit; what is still busy stays).
pub fn cleanup() {
    if let Some(root) = root() {
        if let Ok(entries) = std::fs::read_dir(&root.dir) {
            for e in entries.flatten() {
                let _ = std::fs::remove_dir(e.path());
            }
        }
        let _ = std::fs::remove_dir(&root.dir);
    }
}
