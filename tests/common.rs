//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The binary under test: this build's, or `EVALUA_TEST_BIN` (to run the
/// suite against another build, e.g. to see a new test fail on an old one).
pub fn bin() -> Command {
    match std::env::var_os("EVALUA_TEST_BIN") {
        Some(b) => Command::new(b),
        None => Command::new(env!("CARGO_BIN_EXE_evalua")),
    }
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// How long a test waits for something that takes moments on an idle
/// machine (a process to die, a server to answer, a file to appear) before it
/// fails: far above the need, so a busy machine makes a test slower, never
/// red. A test that waits for an event polls for it up to this long.
pub const PATIENCE: Duration = Duration::from_secs(300);

/// Poll `done` until it holds, for up to `PATIENCE`; whether it held.
pub fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    loop {
        if done() {
            return true;
        }
        if t0.elapsed() > PATIENCE {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Poll `done` until it holds; fail with `what` after `PATIENCE`.
#[track_caller]
pub fn wait_until(what: &str, done: impl FnMut() -> bool) {
    assert!(eventually(done), "timed out after {PATIENCE:?} waiting for {what}");
}

/// Run `cmd` to its end with its output captured, in a process group of its
/// own; fail (after killing the group) if it is still running after `limit`:
/// a hang is a failed test, never a hung test run.
#[track_caller]
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    use std::os::unix::process::CommandExt;
    let mut child =
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn().unwrap();
    let pid = child.id() as i32;
    // Drain both pipes so a chatty run never blocks on a full pipe.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut so, &mut b);
        b
    });
    let err_t = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut se, &mut b);
        b
    });
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if t0.elapsed() > limit {
            // SAFETY: kill only signals the process group of the child this test started.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
            panic!("{cmd:?} still ran after {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output { status, stdout: out_t.join().unwrap(), stderr: err_t.join().unwrap() }
}

/// A meeting point on 127.0.0.1 for the processes of concurrent trials (the
/// sandbox shares the host's network): each connects and reads one line, and
/// the server writes `go` to a group once `parties` are connected. A process
/// that read `go` knows the others of its group were running at that moment:
/// concurrency proven by an event, not by how short a run took.
/// With `parties` = 1 it is a beacon: each process that connects goes on at
/// once, and `arrived` counts them (e.g. the agents that have started).
pub struct Rendezvous {
    pub port: u16,
    arrived: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Rendezvous {
    pub fn start(parties: usize) -> Rendezvous {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let arrived = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = arrived.clone();
        std::thread::spawn(move || {
            let mut waiting = Vec::new();
            for s in listener.incoming().flatten() {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                waiting.push(s);
                if waiting.len() == parties {
                    for mut s in waiting.drain(..) {
                        let _ = s.write_all(b"go\n");
                    }
                }
            }
        });
        Rendezvous { port, arrived }
    }

    /// How many connections came so far.
    pub fn arrived(&self) -> usize {
        self.arrived.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// A command (argv) that meets the others and prints `go`.
    pub fn argv(&self) -> [String; 4] {
        let py = "import socket, sys; s = socket.create_connection(('127.0.0.1', int(sys.argv[1]))); print(s.makefile().readline().strip())";
        ["python3".into(), "-c".into(), py.into(), self.port.to_string()]
    }
}

/// A temp project dir holding the files given as (relative path, content).
pub fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, content) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    dir
}

/// Run `evalua` with `args` in `cwd`.
pub fn evalua(cwd: &Path, args: &[&str]) -> Output {
    bin().current_dir(cwd).args(args).output().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Run a suite into `<cwd>/out` and return the output.
pub fn run_suite(cwd: &Path, suite: &str, extra: &[&str]) -> Output {
    let mut args = vec!["run", suite, "--out", "out", "-q"];
    args.extend_from_slice(extra);
    evalua(cwd, &args)
}

pub fn trials(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A trial's trace, as `evalua show RUN_DIR CASE TRIAL --json` prints it.
pub fn trace(run_dir: &Path, case: &str, trial: u64) -> Value {
    let o = evalua(Path::new("."), &["show", run_dir.to_str().unwrap(), case, &trial.to_string(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "evalua show: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Change one trial's stored trace in `run_dir`'s trace pack (a test that
/// tampers with a run dir): the pack and its index are written again with the
/// offsets that follow.
pub fn rewrite_trace(run_dir: &Path, case: &str, trial: u64, change: impl FnOnce(&mut Value)) {
    let pack = std::fs::read_to_string(run_dir.join("traces/traces.jsonl")).unwrap();
    let index = std::fs::read_to_string(run_dir.join("traces/index.jsonl")).unwrap();
    let mut change = Some(change);
    let (mut new_pack, mut new_index) = (String::new(), String::new());
    for (line, entry) in pack.lines().zip(index.lines()) {
        let mut e: Value = serde_json::from_str(entry).unwrap();
        let mut line = line.to_string();
        if e["case"] == case && e["trial"] == trial {
            let mut v: Value = serde_json::from_str(&line).unwrap();
            (change.take().expect("one trace of that trial"))(&mut v);
            line = serde_json::to_string(&v).unwrap();
        }
        e["offset"] = new_pack.len().into();
        e["length"] = line.len().into();
        new_pack.push_str(&line);
        new_pack.push('\n');
        new_index.push_str(&serde_json::to_string(&e).unwrap());
        new_index.push('\n');
    }
    assert!(change.is_none(), "no trace of {case}#{trial} in {}", run_dir.display());
    std::fs::write(run_dir.join("traces/traces.jsonl"), new_pack).unwrap();
    std::fs::write(run_dir.join("traces/index.jsonl"), new_index).unwrap();
}

/// The trace of a record of trials.jsonl in `run_dir`.
pub fn trace_of(run_dir: &Path, rec: &Value) -> Value {
    trace(run_dir, rec["case"].as_str().unwrap(), rec["trial"].as_u64().unwrap())
}

/// The record of (case, trial).
pub fn record<'a>(records: &'a [Value], case: &str, trial: u64) -> &'a Value {
    records
        .iter()
        .find(|r| r["case"] == case && r["trial"] == trial)
        .unwrap_or_else(|| panic!("no record for {case}#{trial}"))
}

/// The check named `name` in a record.
pub fn check<'a>(rec: &'a Value, name: &str) -> &'a Value {
    rec["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name:?} in {}", rec["checks"]))
}

pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// Assert a user error: exit 2, one line on stderr containing `needle`, no panic.
pub fn assert_user_error(o: &Output, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "expected exit 2, stderr: {err}");
    assert!(err.contains(needle), "stderr should contain {needle:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "expected a one-line error: {err}");
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "no panic: {err}");
}

/// summary.json with its timings (latencies, per-tool latencies) and its run id removed.
pub fn summary_without_timings(dir: &std::path::Path) -> Value {
    let mut s = json(&dir.join("summary.json"));
    for k in ["p50_ms", "p95_ms"] {
        s["figures"].as_object_mut().unwrap().remove(k);
    }
    if let Some(tools) = s["tools"].as_object_mut() {
        for t in tools.values_mut() {
            for k in ["p50_ms", "p95_ms"] {
                t.as_object_mut().unwrap().remove(k);
            }
        }
    }
    if let Some(a) = s["time_to_abandon_ms"].as_object_mut() {
        a.remove("p50");
        a.remove("p95");
    }
    s.as_object_mut().unwrap().remove("run_id");
    s
}

/// trials.jsonl with the timing fields removed.
pub fn without_timings(dir: &std::path::Path) -> Vec<Value> {
    trials(dir)
        .into_iter()
        .map(|mut r| {
            r.as_object_mut().unwrap().remove("wall_ms");
            r["usage"].as_object_mut().unwrap().remove("wall_ms");
            for s in r["tool_spans"].as_array_mut().into_iter().flatten() {
                s.as_object_mut().unwrap().remove("duration_ms");
            }
            if let Some(f) = r["first_failure"].as_object_mut() {
                f.remove("at_ms");
            }
            r
        })
        .collect()
}
