//! Run a command to completion with hard bounds, for the `run` tool, command
//! checks and test runners: its own process group (killed whole at the end,
//! whatever it left running), a timeout, an output limit (beyond it the group
//! is killed) and only the tail of stdout/stderr kept in memory.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde::Serialize;

/// What to run and its bounds.
pub struct Spec<'a> {
    pub argv: &'a [String],
    pub cwd: &'a Path,
    pub timeout: Duration,
    /// Total stdout + stderr bytes after which the command is killed.
    pub max_output: usize,
    /// Bytes kept of the end of each stream.
    pub tail: usize,
}

/// How a command ended.
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

/// The environment commands see: PATH, HOME, LANG, and no bytecode files
/// written into the tree (they would show up in the diff).
fn command(argv: &[String], cwd: &Path) -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..]).current_dir(cwd).env_clear().process_group(0);
    for name in ["PATH", "HOME", "LANG"] {
        if let Some(v) = std::env::var_os(name) {
            c.env(name, v);
        }
    }
    c.env("PYTHONDONTWRITEBYTECODE", "1");
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// Drain a stream, keeping its tail; count every byte into `total`.
fn drain(
    mut r: impl Read + Send + 'static,
    keep: usize,
    total: Arc<AtomicUsize>,
    over: Arc<AtomicBool>,
    limit: usize,
    done: mpsc::Sender<()>,
) -> Arc<Mutex<(Vec<u8>, usize)>> {
    let buf = Arc::new(Mutex::new((Vec::new(), 0usize)));
    let b = buf.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 16 * 1024];
        while let Ok(n) = r.read(&mut chunk) {
            if n == 0 {
                break;
            }
            let mut g = b.lock().unwrap();
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
        let _ = done.send(());
    });
    buf
}

/// Whether the child `pid` has exited, without reaping it (so its id, which
/// is also its group's, cannot be reused before the group is killed).
fn exited(pid: i32) -> bool {
    // SAFETY: waitid writes only into `info`, a zeroed siginfo_t we own.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT);
        r != 0 || info.si_pid() != 0
    }
}

/// Run to completion within the bounds. Err only when the command cannot start.
pub fn run(spec: &Spec<'_>) -> Result<Outcome, String> {
    if spec.argv.is_empty() || spec.argv[0].is_empty() {
        return Err("empty command".into());
    }
    let started = Instant::now();
    let mut child =
        command(spec.argv, spec.cwd).spawn().map_err(|e| format!("cannot start `{}`: {e}", spec.argv[0]))?;
    let pgid = child.id() as i32;
    let tracked = crate::util::cancel::track_group(pgid);
    let total = Arc::new(AtomicUsize::new(0));
    let over = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let out =
        drain(child.stdout.take().expect("piped"), spec.tail, total.clone(), over.clone(), spec.max_output, tx.clone());
    let err = drain(child.stderr.take().expect("piped"), spec.tail, total, over.clone(), spec.max_output, tx);
    let deadline = started + spec.timeout;
    let mut timed_out = false;
    let mut output_limited = false;
    let mut interrupted = false;
    let mut nap = Duration::from_micros(200);
    loop {
        if exited(pgid) {
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
        if crate::util::cancel::requested() {
            interrupted = true;
            break;
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(10));
    }
    // Whatever the command left running dies with its group. The leader is
    // not reaped yet (`exited` does not reap), so the group id is still ours.
    // SAFETY: killpg only sends a signal.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
    drop(tracked);
    let status = child.wait().ok();
    // Readers end when every write end is closed; a process that escaped the
    // group could hold one open: wait a little, never forever.
    let until = Instant::now() + Duration::from_secs(1);
    for _ in 0..2 {
        if rx.recv_timeout(until.saturating_duration_since(Instant::now())).is_err() {
            break;
        }
    }
    use std::os::unix::process::ExitStatusExt;
    let text = |b: &Arc<Mutex<(Vec<u8>, usize)>>| {
        let g = b.lock().unwrap();
        (String::from_utf8_lossy(&g.0).into_owned(), g.1)
    };
    let (stdout, stdout_bytes) = text(&out);
    let (stderr, stderr_bytes) = text(&err);
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

    fn sh(script: &str, timeout_ms: u64, max_output: usize) -> Outcome {
        let argv = vec!["sh".to_string(), "-c".to_string(), script.to_string()];
        let dir = std::env::temp_dir();
        run(&Spec { argv: &argv, cwd: &dir, timeout: Duration::from_millis(timeout_ms), max_output, tail: 100 })
            .unwrap()
    }

    #[test]
    fn bounds_hold() {
        let ok = sh("echo hi; echo err >&2; exit 3", 5000, 1 << 20);
        assert_eq!(ok.exit_code, Some(3));
        assert_eq!(ok.stdout, "hi\n");
        assert_eq!(ok.stderr, "err\n");
        let t = Instant::now();
        let hang = sh("sleep 30 & sleep 30", 300, 1 << 20);
        assert!(hang.timed_out && t.elapsed() < Duration::from_secs(5), "{hang:?}");
        let flood = sh("yes", 20_000, 1 << 20);
        assert!(flood.output_limited && flood.stdout.len() <= 100, "{flood:?}");
        assert!(
            run(&Spec {
                argv: &["/no/such/cmd".to_string()],
                cwd: Path::new("/"),
                timeout: Duration::from_secs(1),
                max_output: 10,
                tail: 10
            })
            .is_err()
        );
    }
}
