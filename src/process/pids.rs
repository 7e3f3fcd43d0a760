//! A process limit for each sandboxed process tree: a cgroup of the pids
//! controller with `pids.max` = [`MAX_PROCESSES`], where evalua may create
//! one (cgroup v1's pids hierarchy writable to it: as root, or delegated).
//! A fork bomb in an agent then stops at the limit (`fork` fails with
//! EAGAIN) instead of filling the host's process table until the trial's
//! deadline.
//!
//! The tree must be in the cgroup before the agent's first instruction, and
//! `posix_spawn` cannot be told a cgroup. With the sandbox's relay program,
//! the relay joins it itself before it becomes the agent (the cgroup's
//! `tasks`, opened here, on its descriptor 6: see relay.c); without
//! it, the spawning thread joins the cgroup, spawns (the child inherits it)
//! and goes back ([`spawn_in`]). Cgroups are made once and kept in a pool:
//! a tree's cgroup, once empty, serves the next (making and removing one
//! for each tree cost a sandboxed trial about 0.1 ms, issue 45).
//!
//! Elsewhere (cgroup v2 only, or no write access) the relay sets
//! RLIMIT_NPROC in the sandbox's own user namespace instead (see
//! [`MAX_PROCESSES`] and relay.c); with neither there is no process limit:
//! said in docs/design/isolation.md.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

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

/// One process tree's cgroup; back to the pool when dropped (the next tree
/// takes it only once its processes are gone).
pub struct Limit(Option<Cgroup>);

/// A cgroup of evalua's folder, with its `pids.max` set.
struct Cgroup {
    dir: PathBuf,
    /// Its `tasks`, open for writing, above the descriptors a spawn
    /// sets up (0–6), for the relay to join through.
    procs: OwnedFd,
}

impl Limit {
    /// `tasks` of this limit, for the relay's descriptor 6. The relay writes
    /// `0` there: the writing thread alone moves, which the kernel does
    /// without its global threadgroup lock (`cgroup.procs`, or another
    /// thread's id, takes it, and waiting for it cost an idle machine
    /// about 3.5 ms a trial: an RCU grace period).
    pub fn procs(&self) -> Option<BorrowedFd<'_>> {
        self.0.as_ref().map(|c| c.procs.as_fd())
    }

    fn dir(&self) -> Option<&std::path::Path> {
        self.0.as_ref().map(|c| c.dir.as_path())
    }
}

/// Cgroups made by this process and free for the next tree.
static POOL: Mutex<Vec<Cgroup>> = Mutex::new(Vec::new());

impl Drop for Limit {
    fn drop(&mut self) {
        if let (Some(c), Ok(mut pool)) = (self.0.take(), POOL.lock()) {
            pool.push(c);
        }
    }
}

/// A cgroup limited to [`MAX_PROCESSES`] with no process in it, or None
/// where evalua cannot make one.
pub fn limit() -> Option<Limit> {
    root()?;
    loop {
        let reused = POOL.lock().ok()?.pop();
        let Some(c) = reused else { break };
        // Still busy (the last tree's processes not all gone yet): left to `cleanup`.
        if std::fs::read_to_string(c.dir.join("pids.current")).is_ok_and(|n| n.trim() == "0") {
            return Some(Limit(Some(c)));
        }
    }
    make().map(|c| Limit(Some(c)))
}

fn make() -> Option<Cgroup> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let root = root()?;
    let dir = root.dir.join(NEXT.fetch_add(1, Ordering::Relaxed).to_string());
    std::fs::create_dir(&dir).ok()?;
    let ok = std::fs::write(dir.join("pids.max"), MAX_PROCESSES.to_string()).is_ok();
    let procs = ok.then(|| std::fs::OpenOptions::new().write(true).open(dir.join("tasks")).ok()).flatten();
    let Some(procs) = procs.and_then(|f| high(f.into())) else {
        let _ = std::fs::remove_dir(&dir);
        return None;
    };
    Some(Cgroup { dir, procs })
}

/// `fd` moved to a descriptor of 10 or more (close-on-exec).
fn high(fd: OwnedFd) -> Option<OwnedFd> {
    use std::os::fd::AsRawFd;
    // SAFETY: fcntl duplicates a descriptor we own; the new one is owned by nobody else.
    let n = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
    // SAFETY: `n`, when valid, was just made by fcntl.
    (n >= 0).then(|| unsafe { OwnedFd::from_raw_fd(n) })
}

/// Run `spawn` with the calling thread in `limit`'s cgroup, so what it
/// starts is born there; the thread goes back to evalua's cgroup after.
pub fn spawn_in<T>(limit: &Limit, spawn: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let root = root().ok_or_else(|| io::Error::other("no pids cgroup"))?;
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() }.to_string();
    let dir = limit.dir().ok_or_else(|| io::Error::other("a process limit already given back"))?;
    std::fs::write(dir.join("tasks"), &tid)?;
    let out = spawn();
    // Back home: a thread left in the limit would count against it, and its next children too.
    if let Err(e) = std::fs::write(&root.home_tasks, &tid) {
        eprintln!("warning: evalua's thread {tid} could not leave a process limit's cgroup: {e}");
    }
    out
}

/// Remove evalua's own folder of limits (at exit; what is still busy stays).
pub fn cleanup() {
    if let Ok(mut pool) = POOL.lock() {
        pool.clear();
    }
    if let Some(root) = root() {
        if let Ok(entries) = std::fs::read_dir(&root.dir) {
            for e in entries.flatten() {
                let _ = std::fs::remove_dir(e.path());
            }
        }
        let _ = std::fs::remove_dir(&root.dir);
    }
}
