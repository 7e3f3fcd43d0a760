//! The one process runner. Every program evalua starts (command agents and
//! their setup, the `run` tool's `ctx.exec`, check commands, test runners)
//! starts here, the same way:
//!
//! - in its own process group, killed whole when the harness is done with it
//!   ([`Group`]), whatever it left running;
//! - with a scrubbed environment: PATH, HOME, LANG, the names the suite
//!   passes through, and the variables the harness sets ([`Launch`]);
//! - with its output drained by threads that keep only a bounded tail and
//!   count every byte ([`Tail`]), so a flood never fills memory nor blocks it;
//! - for one-shot commands, within a timeout and an output cap ([`run`]);
//! - registered for a second stop signal while it lives, and, for one-shot
//!   commands and [`Group::exit_status`], stopped at a stop request
//!   (`util::cancel`);
//! - inside the process sandbox ([`sandbox`]): its own PID namespace and
//!   mount view, unless the run opted out with `--isolation none`.

pub mod pids;
mod relay;
mod sandbox;
mod spawn;

pub use spawn::Io;

pub use sandbox::{
    Bwrap, Isolation, View, protected_by, ready as sandbox_ready, real as real_path, refuse as sandbox_refuses,
    sees as sandbox_sees,
};

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::util::cancel;

/// The file descriptors a child may get.
mod fds {
    use std::os::fd::{AsRawFd, IntoRawFd, RawFd};
    use std::sync::Once;

    static INIT: Once = Once::new();

    /// Mark every descriptor above 2 that evalua was started with
    /// close-on-exec (`evalua run suite.lua 7<secret` must not hand fd 7 to
    /// an agent; nor a CI runner's jobserver pipes, logs or sockets), and
    /// make sure descriptors 3 and 4 stay taken for the process's life (by
    /// what was inherited there or by /dev/null), so nothing evalua opens
    /// lands on the numbers a sandboxed child's relay uses. Everything evalua opens
    /// itself is close-on-exec (std's default). Call first in `main`, before
    /// any thread; idempotent.
    pub fn init() {
        INIT.call_once(|| {
            // SAFETY: close_range only changes flags of descriptors; an error
            // (a kernel before 5.11) leaves them as they were.
            let marked =
                unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC as u32) };
            if marked != 0 {
                mark_each();
            }
            // Lowest free numbers first: /dev/null takes 3 and 4 if they are
            // free, and is kept there; the first one above 4 is not needed
            // and closes as it drops.
            while let Ok(null) = std::fs::File::open("/dev/null") {
                if null.as_raw_fd() > 4 {
                    break;
                }
                let _held = null.into_raw_fd();
            }
        });
    }

    /// Without close_range: each open descriptor listed in /proc/self/fd.
    fn mark_each() {
        let Ok(dir) = std::fs::read_dir("/proc/self/fd") else { return };
        let fds: Vec<RawFd> = dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
        for fd in fds.into_iter().filter(|&fd| fd > 2) {
            // SAFETY: only sets the close-on-exec flag of a descriptor number.
            unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags >= 0 {
                    libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
                }
            }
        }
    }
}

pub use fds::init as init_fds;

/// The variables every process gets from the harness's environment.
const BASE_ENV: [&str; 3] = ["PATH", "HOME", "LANG"];

/// How to start a process.
#[derive(Debug, Clone)]
pub struct Launch {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Names passed through from the harness's environment (besides PATH, HOME, LANG).
    pub pass_env: Vec<String>,
    /// Variables set for the process (they win over passed-through ones).
    pub set_env: Vec<(String, String)>,
    /// What it may see in the sandbox besides the system folders and `cwd`.
    pub view: View,
}

/// Why a process could not start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartError {
    #[error("empty command")]
    Empty,
    #[error("cannot start `{program}`: {reason}")]
    Spawn { program: String, reason: String },
    /// The sandbox cannot start here (bubblewrap missing or refused).
    #[error("cannot start `{program}`: the process sandbox cannot start: {reason} (or run with --isolation none)")]
    Sandbox { program: String, reason: String },
}

impl Launch {
    pub fn new(argv: &[String], cwd: &Path) -> Self {
        Launch {
            argv: argv.to_vec(),
            cwd: cwd.to_path_buf(),
            pass_env: Vec::new(),
            set_env: Vec::new(),
            view: View::default(),
        }
    }

    /// What the process may see in the sandbox (the suite's `sandbox.expose`, …).
    pub fn view(mut self, view: &View) -> Self {
        self.view = view.clone();
        self
    }

    pub fn pass(mut self, names: &[String]) -> Self {
        self.pass_env.extend(names.iter().cloned());
        self
    }

    pub fn set(mut self, name: &str, value: impl Into<String>) -> Self {
        self.set_env.push((name.to_string(), value.into()));
        self
    }

    /// The scrubbed environment: PATH, HOME, LANG, the passed names, the set variables.
    fn env(&self) -> Vec<(String, std::ffi::OsString)> {
        let mut env: Vec<(String, std::ffi::OsString)> = Vec::new();
        let mut put = |k: &str, v: std::ffi::OsString| match env.iter_mut().find(|(n, _)| n == k) {
            Some(slot) => slot.1 = v,
            None => env.push((k.to_string(), v)),
        };
        for name in BASE_ENV.iter().copied().chain(self.pass_env.iter().map(String::as_str)) {
            if let Some(v) = std::env::var_os(name) {
                put(name, v);
            }
        }
        for (k, v) in &self.set_env {
            put(k, v.into());
        }
        env
    }

    /// Start the process, in its own process group, with the scrubbed
    /// environment, inside the sandbox unless its view says `--isolation
    /// none`, with these stdio settings, as a [`Group`].
    pub fn spawn(&self, stdin: Io, stdout: Io, stderr: Io) -> Result<Group, StartError> {
        use std::os::unix::process::CommandExt;
        let program = self.argv.first().filter(|p| !p.is_empty()).ok_or(StartError::Empty)?;
        let env = self.env();
        let spawn_failed = |e: std::io::Error| StartError::Spawn { program: program.clone(), reason: e.to_string() };
        let mut limit = None;
        let (pid, ends) = match self.view.isolation {
            Isolation::None => {
                let stdio = |io: Io| if io == Io::Piped { Stdio::piped() } else { Stdio::null() };
                let mut child = Command::new(program)
                    .args(&self.argv[1..])
                    .current_dir(&self.cwd)
                    .env_clear()
                    .envs(env.iter().map(|(k, v)| (k, v)))
                    .process_group(0)
                    .stdin(stdio(stdin))
                    .stdout(stdio(stdout))
                    .stderr(stdio(stderr))
                    .spawn()
                    .map_err(spawn_failed)?;
                // The std handle is dropped unreaped: the group reaps its leader.
                let ends = spawn::Ends {
                    stdin: child.stdin.take().map(Into::into),
                    stdout: child.stdout.take().map(Into::into),
                    stderr: child.stderr.take().map(Into::into),
                };
                (child.id(), ends)
            }
            Isolation::Sandbox => {
                let fail = |reason: String| StartError::Sandbox { program: program.clone(), reason };
                let bwrap = sandbox::ready().map_err(fail)?;
                let path_var = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v);
                if let Some(reason) = bwrap.refuse(&self.argv, &self.cwd, path_var, &self.view) {
                    return Err(StartError::Spawn { program: program.clone(), reason });
                }
                // bwrap itself gets no environment (its /proc/1/environ,
                // visible in the sandbox, must not show the harness's), and
                // the caller's stdin and stdout on 3 and 4 for the sandbox's
                // relay, started with posix_spawn: neither a fork of all of
                // evalua nor a shell per trial (issue 24: each cost ~0.5–4 ms).
                // Born under a process limit where evalua can make one: the relay
                // program joins the limit's cgroup itself; without the relay, this
                // thread joins it for the spawn (`pids::spawn_in`).
                limit = pids::limit();
                let source = bwrap.relay_source().map(|c| c.as_c_str());
                let join = source.and(limit.as_ref()).and_then(|l| l.procs());
                let relay = source.map(|source| spawn::Relay { source, cgroup: join });
                let args = bwrap.args(&self.argv, &self.cwd, &env, &self.view, true, join.is_some());
                let start = || spawn::relayed(&bwrap.path, &args, &self.cwd, stdin, stdout, stderr, relay);
                match &limit {
                    Some(l) if join.is_none() => pids::spawn_in(l, start),
                    _ => start(),
                }
                .map_err(spawn_failed)?
            }
        };
        let tracked = Some(cancel::track_group(pid as i32));
        Ok(Group {
            pid,
            stdin: ends.stdin.map(File::from),
            stdout: ends.stdout.map(File::from),
            stderr: ends.stderr.map(File::from),
            done: false,
            status: None,
            tracked,
            _limit: limit,
        })
    }
}

/// A started process and its process group; the whole group is killed when
/// dropped.
pub struct Group {
    /// The leader's pid, which is also its group's id.
    pid: u32,
    /// The parent's ends of the piped streams, for the caller to take.
    pub stdin: Option<File>,
    pub stdout: Option<File>,
    pub stderr: Option<File>,
    /// Set once the group was signalled and its leader reaped: its pid may be
    /// reused from then on, so it must never be signalled again.
    done: bool,
    /// The leader's exit status, once reaped.
    status: Option<ExitStatus>,
    /// Registered for a second stop signal until the leader is reaped.
    tracked: Option<cancel::Tracked>,
    /// The process tree's cgroup with its process limit (removed after the group is killed).
    _limit: Option<pids::Limit>,
}

impl Group {
    /// Kill the whole group and reap its leader; the leader's exit status.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        if self.done {
            return self.status;
        }
        let pgid = self.pid as i32;
        // SAFETY: killpg only sends a signal. The group is the child's own
        // (process_group(0)) and its leader is not reaped yet, so the id is ours.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
        // Unregistered before the leader is reaped: after that its id may be reused.
        self.tracked = None;
        self.status = reap(self.pid);
        self.done = true;
        self.status
    }

    /// Whether the leader has exited, without reaping it (so its id, which
    /// is also its group's, cannot be reused before the group is killed).
    pub fn has_exited(&self) -> bool {
        if self.done {
            return true;
        }
        // SAFETY: waitid writes only into `info`, a zeroed siginfo_t we own.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let r = libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            r != 0 || info.si_pid() != 0
        }
    }

    /// Wait up to `grace` for the leader to exit by itself. When it does,
    /// the rest of its group is killed and the leader's status returned;
    /// None if it is still running (or the run was asked to stop).
    pub fn exit_status(&mut self, grace: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + grace;
        // Most processes exit within a millisecond of their last line: poll
        // with a short, growing interval rather than a fixed nap.
        let mut nap = Duration::from_micros(50);
        loop {
            if self.has_exited() {
                return self.kill();
            }
            if Instant::now() >= until || cancel::requested() {
                return None;
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(5));
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// Wait for child `pid` to exit and reap it.
fn reap(pid: u32) -> Option<ExitStatus> {
    use std::os::unix::process::ExitStatusExt;
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waitpid writes only into `status`; `pid` is our unreaped child.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
        if r == pid as libc::pid_t {
            return Some(ExitStatus::from_raw(status));
        }
        if r < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return None;
    }
}

/// One phrase for how a process ended: `exit status 3`, `killed by signal 9 (SIGKILL)`.
/// `signal 9 (SIGKILL)`: the number, and the name of the common ones.
fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return format!("signal {sig}"),
    };
    format!("signal {sig} ({name})")
}

pub fn describe_status(s: Option<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match s {
        Some(s) => match (s.code(), s.signal()) {
            // Inside the sandbox a process killed by a signal reaches us as 128 + the signal.
            (Some(c), _) if (129..=159).contains(&c) => {
                format!("exit status {c}, as a process killed by {} ends", signal_name(c - 128))
            }
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(sig)) => format!("killed by {}", signal_name(sig)),
            _ => "unknown exit".to_string(),
        },
        None => "still running (killed)".to_string(),
    }
}

/// A stream drained by its own thread: the last `keep` bytes are kept and
/// every byte is counted (also into a shared total, to cap a process's output).
pub struct Tail {
    buf: Arc<Mutex<(Vec<u8>, usize)>>,
    /// Told when the stream closed (only for [`Tail::keep`]).
    closed: Option<Mutex<mpsc::Receiver<()>>>,
}

impl Tail {
    /// Drain `r` until it closes. `total` and `over` are shared by the
    /// streams of one process: past `limit` bytes in all, `over` is set.
    /// `done` is told when the stream closes.
    pub fn drain(
        mut r: impl Read + Send + 'static,
        keep: usize,
        total: Arc<AtomicUsize>,
        over: Arc<AtomicBool>,
        limit: usize,
        done: Option<mpsc::Sender<()>>,
    ) -> Tail {
        let buf = Arc::new(Mutex::new((Vec::new(), 0usize)));
        let b = buf.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 16 * 1024];
            while let Ok(n) = r.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                let mut g = b.lock().unwrap_or_else(|p| p.into_inner());
                g.1 += n;
                g.0.extend_from_slice(&chunk[..n]);
                if g.0.len() > keep {
                    let cut = g.0.len() - keep;
                    g.0.drain(..cut);
                }
                drop(g);
                if total.fetch_add(n, Ordering::Relaxed) + n > limit {
                    over.store(true, Ordering::Relaxed);
                }
            }
            if let Some(d) = done {
                let _ = d.send(());
            }
        });
        Tail { buf, closed: None }
    }

    /// Drain `r` keeping its last `keep` bytes, with no cap.
    pub fn keep(r: impl Read + Send + 'static, keep: usize) -> Tail {
        let (tx, rx) = mpsc::channel();
        let mut tail =
            Tail::drain(r, keep, Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)), usize::MAX, Some(tx));
        tail.closed = Some(Mutex::new(rx));
        tail
    }

    /// Wait until the stream closed, at most `bound`: once its writer is
    /// dead, what it wrote is still in the pipe until the drain reads it.
    /// The bound is for a writer's escaped child that holds the pipe open.
    pub fn wait_closed(&self, bound: Duration) {
        if let Some(rx) = &self.closed {
            let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
            let _ = rx.recv_timeout(bound);
        }
    }

    /// The kept tail as text, and the bytes seen in all.
    pub fn text(&self) -> (String, usize) {
        let g = self.buf.lock().unwrap_or_else(|p| p.into_inner());
        (String::from_utf8_lossy(&g.0).into_owned(), g.1)
    }

    /// The kept tail, None when nothing was written.
    pub fn nonempty(&self) -> Option<String> {
        let (t, n) = self.text();
        (n > 0).then_some(t)
    }
}

/// A one-shot command and its bounds.
pub struct Spec<'a> {
    pub argv: &'a [String],
    pub cwd: &'a Path,
    pub timeout: Duration,
    /// Total stdout + stderr bytes after which the command is killed.
    pub max_output: usize,
    /// Bytes kept of the end of each stream.
    pub tail: usize,
    /// What it may see in the sandbox besides the system folders and `cwd`.
    pub view: &'a View,
}

/// How a one-shot command ended.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub output_limited: bool,
    /// Killed because the run was asked to stop (SIGINT, SIGTERM).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    pub duration_ms: f64,
    pub stdout: String,
    pub stderr: String,
    pub stdout_bytes: usize,
    pub stderr_bytes: usize,
}

impl Outcome {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.output_limited
    }
    /// One phrase: `exit 0`, `timed out after 2s`, `killed by signal 9`...
    pub fn describe(&self) -> String {
        if self.timed_out {
            format!("timed out after {:.1}s", self.duration_ms / 1000.0)
        } else if self.output_limited {
            "killed: output limit exceeded".to_string()
        } else if self.interrupted {
            "killed: the run was stopped".to_string()
        } else if let Some(c) = self.exit_code {
            format!("exit {c}")
        } else if let Some(s) = self.signal {
            format!("killed by signal {s}")
        } else {
            "unknown exit".to_string()
        }
    }
}

/// Run a one-shot command (the `run` tool, check commands, test runners) to
/// completion within its bounds. Its environment is the base one plus
/// PYTHONDONTWRITEBYTECODE (bytecode files would show up in a work dir's diff).
/// Err only when the command cannot start.
pub fn run(spec: &Spec<'_>) -> Result<Outcome, StartError> {
    let launch = Launch::new(spec.argv, spec.cwd).view(spec.view).set("PYTHONDONTWRITEBYTECODE", "1");
    run_launch(&launch, spec.timeout, spec.max_output, spec.tail)
}

/// Run `launch` to completion within `timeout` and `max_output`, keeping
/// the last `tail` bytes of each stream. Err only when it cannot start.
pub fn run_launch(launch: &Launch, timeout: Duration, max_output: usize, tail: usize) -> Result<Outcome, StartError> {
    let started = Instant::now();
    let mut group = launch.spawn(Io::Null, Io::Piped, Io::Piped)?;
    let total = Arc::new(AtomicUsize::new(0));
    let over = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let stdout = group.stdout.take().expect("piped");
    let stderr = group.stderr.take().expect("piped");
    let out = Tail::drain(stdout, tail, total.clone(), over.clone(), max_output, Some(tx.clone()));
    let err = Tail::drain(stderr, tail, total, over.clone(), max_output, Some(tx));
    let deadline = started + timeout;
    let mut timed_out = false;
    let mut output_limited = false;
    let mut interrupted = false;
    let mut nap = Duration::from_micros(200);
    loop {
        if group.has_exited() {
            break;
        }
        if over.load(Ordering::Relaxed) {
            output_limited = true;
            break;
        }
        if Instant::now() >= deadline {
            timed_out = true;
            break;
        }
        if cancel::requested() {
            interrupted = true;
            break;
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(10));
    }
    // Whatever the command left running dies with its group. The leader is
    // not reaped yet (`has_exited` does not reap), so the group id is still ours.
    let status = group.kill();
    // Readers end when every write end is closed; a process that escaped the
    // group could hold one open: wait a little, never forever.
    let until = Instant::now() + Duration::from_secs(1);
    for _ in 0..2 {
        if rx.recv_timeout(until.saturating_duration_since(Instant::now())).is_err() {
            break;
        }
    }
    use std::os::unix::process::ExitStatusExt;
    let (stdout, stdout_bytes) = out.text();
    let (stderr, stderr_bytes) = err.text();
    Ok(Outcome {
        exit_code: if timed_out || output_limited || interrupted { None } else { status.and_then(|s| s.code()) },
        signal: status.and_then(|s| s.signal()),
        timed_out,
        output_limited,
        interrupted,
        duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        stdout,
        stderr,
        stdout_bytes,
        stderr_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sandboxed where bubblewrap runs, else unconfined (the same for every test here).
    fn view() -> View {
        let isolation = if sandbox::ready().is_err() { Isolation::None } else { Isolation::Sandbox };
        View { isolation, ..View::default() }
    }

    fn sh(script: &str, timeout_ms: u64, max_output: usize) -> Outcome {
        let argv = vec!["sh".to_string(), "-c".to_string(), script.to_string()];
        let dir = tempfile::tempdir().unwrap();
        let view = view();
        let timeout = Duration::from_millis(timeout_ms);
        run(&Spec { argv: &argv, cwd: dir.path(), timeout, max_output, tail: 100, view: &view }).unwrap()
    }

    #[test]
    fn bounds_hold() {
        // Timeouts a test does not exercise are far above the need (a busy
        // machine starts a sandbox slowly); the ones it does are proven by
        // commands that would otherwise run for an hour.
        let ok = sh("echo hi; echo err >&2; exit 3", 120_000, 1 << 20);
        assert_eq!(ok.exit_code, Some(3));
        assert_eq!(ok.stdout, "hi\n");
        assert_eq!(ok.stderr, "err\n");
        let t = Instant::now();
        let hang = sh("sleep 3600 & sleep 3600", 300, 1 << 20);
        assert!(hang.timed_out && t.elapsed() < Duration::from_secs(120), "{hang:?} after {:?}", t.elapsed());
        let flood = sh("yes", 120_000, 1 << 20);
        assert!(flood.output_limited && flood.stdout.len() <= 100, "{flood:?}");
        assert!(
            run(&Spec {
                argv: &["/no/such/cmd".to_string()],
                cwd: &std::env::temp_dir(),
                timeout: Duration::from_secs(1),
                max_output: 10,
                tail: 10,
                view: &View::default(),
            })
            .is_err()
        );
    }

    /// The isolation is the view's, not the process's: one process starts
    /// a sandboxed and an unconfined command side by side.
    #[test]
    fn each_view_has_its_own_isolation() {
        if sandbox::ready().is_err() {
            eprintln!("skipped: bubblewrap cannot start here");
            return;
        }
        let ours = std::fs::read_link("/proc/self/ns/pid").unwrap().display().to_string();
        let dir = tempfile::tempdir().unwrap();
        let argv = vec!["readlink".to_string(), "/proc/self/ns/pid".to_string()];
        let pid_ns = |isolation| {
            let view = View { isolation, ..View::default() };
            let spec = Spec {
                argv: &argv,
                cwd: dir.path(),
                timeout: Duration::from_secs(120),
                max_output: 1 << 16,
                tail: 1 << 12,
                view: &view,
            };
            run(&spec).unwrap().stdout.trim().to_string()
        };
        let (boxed, free) = (pid_ns(Isolation::Sandbox), pid_ns(Isolation::None));
        assert_eq!(free, ours, "an unconfined command shares evalua's PID namespace");
        assert!(boxed.starts_with("pid:[") && boxed != ours, "a sandboxed one has its own: {boxed} vs {ours}");
    }

    #[test]
    fn the_environment_is_scrubbed() {
        // SAFETY (test): set before any process is spawned by this test; other
        // tests do not read this variable.
        unsafe { std::env::set_var("EVALUA_TEST_SECRET", "s3cret") };
        let dir = tempfile::tempdir().unwrap();
        let argv = vec!["env".to_string()];
        let spec = Spec {
            argv: &argv,
            cwd: dir.path(),
            timeout: Duration::from_secs(120),
            max_output: 1 << 20,
            tail: 1 << 16,
            view: &view(),
        };
        let out = run(&spec).unwrap();
        assert!(!out.stdout.contains("s3cret"), "{}", out.stdout);
        assert!(out.stdout.contains("PYTHONDONTWRITEBYTECODE=1"));
        let l = Launch::new(&["sh".into(), "-c".into(), "echo $EVALUA_TEST_SECRET $X".into()], dir.path())
            .pass(&["EVALUA_TEST_SECRET".into()])
            .set("X", "y")
            .view(&view());
        let mut g = l.spawn(Io::Null, Io::Piped, Io::Null).unwrap();
        let mut s = String::new();
        g.stdout.take().unwrap().read_to_string(&mut s).unwrap();
        assert_eq!(s.trim(), "s3cret y");
    }
}
