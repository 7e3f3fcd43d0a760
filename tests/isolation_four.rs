//! "Isolation, round four" (issue 45): the surfaces added in round three and
//! an agent's appetite for the host's resources, each attacked as a hostile
//! agent, run dir or trace would. Each test failed on the code before its fix
//! (said in its commit); `docs/design/isolation.md` names the test that
//! guards each promise. (The label store's attack is in tests/annotate.rs,
//! the Action's baseline in tests/action.rs.)

use serde_json::Value;

use crate::common::*;

/// What a hostile agent writes: a terminal title and a screen clear (43.4),
/// a forged harness line, and GitHub workflow commands (Python escapes).
const HOSTILE: &str = r"\u001b]0;pwned\u0007\u001b[2J\r\n::add-mask::x\n  ::set-output name=a::b\u009b31m";

/// A project with an agent that writes one line of terminal escapes (a
/// protocol error), and one that crashes with them on stderr.
fn hostile_project() -> tempfile::TempDir {
    let garbage = format!(
        "import sys\nsys.stdin.readline()\nsys.stdout.write('{HOSTILE}' + chr(10))\nsys.stdout.flush()\nsys.stdin.read()\n"
    );
    let crash = format!("import sys\nsys.stderr.write('{HOSTILE}')\nsys.exit(3)\n");
    let dir = project(&[("garbage.py", &garbage), ("crash.py", &crash)]);
    let path = |f: &str| dir.path().join(f).display().to_string();
    let suite = format!(
        r#"local evalua = require("evalua")
local suite = evalua.suite {{ name = "hostile", trials = 1 }}
local any = {{ name = "graded", run = function(t) return false, t.answer end }}
suite:case {{ id = "garbage", input = "x", expect = {{ any }},
  agent = evalua.agent.command {{ cmd = {{ "python3", {:?} }} }} }}
suite:case {{ id = "crashes", input = "x", expect = {{ any }},
  agent = evalua.agent.command {{ cmd = {{ "python3", {:?} }} }} }}
return suite
"#,
        path("garbage.py"),
        path("crash.py")
    );
    std::fs::write(dir.path().join("hostile.lua"), suite).unwrap();
    dir
}

/// No ESC, BEL or C1 control reaches the output, and no line a GitHub runner
/// would take for a workflow command.
#[track_caller]
fn assert_inert(what: &str, text: &str) {
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{9b}'), "{what}:\n{text:?}");
    assert!(!text.contains('\r'), "{what}: a raw carriage return:\n{text:?}");
    for l in text.lines() {
        let t = l.trim_start();
        assert!(!t.starts_with("::") && !t.starts_with("##["), "{what}: a workflow command: {l:?}");
    }
}

#[test]
fn what_an_agent_writes_reaches_the_console_and_the_log_inert() {
    let dir = hostile_project();
    let o = evalua(dir.path(), &["run", "hostile.lua", "--out", "out", "--isolation", "none"]);
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(all.contains("protocol_error") && all.contains("crashed"), "{all}");
    // The "not accepted" lines quote the agent, escaped (before: raw, 43.4).
    assert!(all.contains("\\e]0;pwned\\x07\\e[2J"), "{all}");
    assert_inert("evalua run", &all);
    for case in ["garbage", "crashes"] {
        let o = evalua(dir.path(), &["show", "out", case, "1"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_inert("evalua show", &stdout(&o));
    }
    let o = evalua(dir.path(), &["report", "out"]);
    assert_inert("evalua report", &format!("{}{}", stdout(&o), stderr(&o)));
}

#[test]
fn a_baselines_run_id_and_case_ids_reach_the_pull_request_comment_inert() {
    let dir = project(&[(
        "s.lua",
        r#"local evalua = require("evalua")
local suite = evalua.suite { name = "s", trials = 2, agent = evalua.agent.scripted(function(task) return "hi" end) }
suite:case { id = "a", input = "x", expect = { function(t) return t.trial == 1 end } }
return suite
"#,
    )]);
    for out in ["base", "cand"] {
        let o = evalua(dir.path(), &["run", "s.lua", "--out", out, "-q"]);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    }
    // A downloaded baseline names itself: a mention, an image, a link, HTML, a fence, the end of <details>.
    let evil =
        "x</summary></details> @octocat ![i](https://evil.example/i.png) [ok](https://evil.example) <img src=x> ``` #1";
    let m = dir.path().join("base/manifest.json");
    let mut manifest: Value = json(&m);
    manifest["run_id"] = Value::String(evil.into());
    std::fs::write(&m, manifest.to_string()).unwrap();
    let o =
        evalua(dir.path(), &["report", "cand", "--format", "github", "--baseline", "base", "--allow-revision-change"]);
    let body = stdout(&o);
    assert!(body.contains("Against the baseline"), "{}{body}", stderr(&o));
    for planted in ["@octocat", "![i]", "](https", "<img", "```", "https://", "#1"] {
        assert!(!body.contains(planted), "{planted} reached the comment:\n{body}");
    }
    // Our own <details> still open and close in pairs: none was closed for us.
    assert_eq!(body.matches("<details").count(), body.matches("</details>").count(), "{body}");
    assert!(!body.contains("</summary></details> "), "{body}");
}

/// A suite whose trials each write a file in their work dir (kept for re-grading).
const WRITER: &str = r#"local evalua = require("evalua")
local suite = evalua.suite { name = "writer", trials = 1, sandbox = { clock = "2026-11-03T10:00:00Z" },
  agent = evalua.agent.scripted(function(task, env) env.call("w", {}) return "ok" end) }
suite:tool { name = "w", effect = "write", params = { type = "object" },
  run = function(ctx, a) ctx.write_file("a.txt", "kept by the trial") return { ok = true } end }
for i = 1, 4 do suite:case { id = "c" .. i, input = "go", expect = { function(t) return true end } } end
return suite
"#;

/// The kept-files folders of a part: `traces/<case>.<trial>.files`.
fn kept_dirs(part: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(part.join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".files"))
        .collect();
    v.sort();
    v
}

#[test]
fn merge_refuses_a_part_whose_kept_state_is_a_symlink_or_tampered() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("a.txt"), "OUTSIDE-SECRET-45").unwrap();
    let dir = project(&[("s.lua", WRITER)]);
    let d = dir.path();
    let parts = |tag: &str| {
        for i in 1..=2 {
            let out = format!("{tag}{i}");
            let o = evalua(d, &["run", "s.lua", "--out", &out, "-q", "--partition", &format!("hash:{i}/2")]);
            assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
        }
        let kept = kept_dirs(&d.join(format!("{tag}1")));
        assert!(!kept.is_empty(), "the trials kept their files");
        kept[0].clone()
    };
    let secret_in = |out: &str| {
        let mut found = false;
        for e in walk(&d.join(out)) {
            found |= std::fs::read(&e).is_ok_and(|b| String::from_utf8_lossy(&b).contains("OUTSIDE-SECRET-45"));
        }
        found
    };
    // A kept-files folder that is a symlink to a folder outside: before, merge copied the outside file.
    let kept = parts("a");
    std::fs::remove_dir_all(&kept).unwrap();
    std::os::unix::fs::symlink(outside.path(), &kept).unwrap();
    assert_user_error(&evalua(d, &["merge", "a1", "a2", "--out", "ma"]), "symlink");
    assert!(!d.join("ma").exists() || !secret_in("ma"), "the outside file reached the merged run dir");
    // A kept file that is a symlink out.
    let kept = parts("b");
    std::fs::remove_file(kept.join("a.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("a.txt"), kept.join("a.txt")).unwrap();
    assert_user_error(&evalua(d, &["merge", "b1", "b2", "--out", "mb"]), "symlink");
    // A kept file whose bytes are not those its trace recorded.
    let kept = parts("c");
    std::fs::write(kept.join("a.txt"), "tampered").unwrap();
    assert_user_error(&evalua(d, &["merge", "c1", "c2", "--out", "mc"]), "sha256");
    // Untouched parts merge, their kept files along.
    parts("e");
    let o = evalua(d, &["merge", "e1", "e2", "--out", "me"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert_eq!(kept_dirs(&d.join("me")).len(), 4);
}

/// Every file below `root`, not through symlinks.
fn walk(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(p) = todo.pop() {
        let Ok(m) = std::fs::symlink_metadata(&p) else { continue };
        if m.is_dir() {
            todo.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else {
            out.push(p);
        }
    }
    out
}

/// `evalua mcp --root ROOT` driven over stdio: one `tools/call` per request after
/// the handshake; each answer's (is_error, text).
fn mcp_calls(root: &std::path::Path, calls: &[(&str, Value)]) -> Vec<(bool, String)> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = bin()
        .args(["mcp", "--root"])
        .arg(root)
        .current_dir(root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    let mut answer = |id: u64| -> Value {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "evalua mcp closed its stdout");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    send(serde_json::json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "attack", "version": "1" } } }));
    answer(0);
    send(serde_json::json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let mut got = Vec::new();
    for (i, (name, args)) in calls.iter().enumerate() {
        let id = i as u64 + 1;
        send(serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": name, "arguments": args } }));
        let r = answer(id);
        let res = &r["result"];
        got.push((res["isError"] == true, res["content"][0]["text"].as_str().unwrap_or_default().to_string()));
    }
    drop(stdin);
    let _ = child.wait();
    got
}

#[test]
fn evalua_mcp_follows_no_link_out_of_the_project_root() {
    let outside = tempfile::tempdir().unwrap();
    let dir = project(&[("s.lua", WRITER)]);
    let root = dir.path().canonicalize().unwrap();
    let o = evalua(&root, &["run", "s.lua", "--out", "runs/good", "-q"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    // A run dir of the project whose trace store is a link to another run dir outside it.
    let o = evalua(outside.path(), &["run", &root.join("s.lua").display().to_string(), "--out", "secret-run", "-q"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    std::fs::create_dir_all(root.join("runs/linked")).unwrap();
    for f in ["manifest.json", "trials.jsonl", "summary.json"] {
        std::fs::copy(root.join("runs/good").join(f), root.join("runs/linked").join(f)).unwrap();
    }
    std::os::unix::fs::symlink(outside.path().join("secret-run/traces"), root.join("runs/linked/traces")).unwrap();
    let show = |run_dir: &str| ("show_trial", serde_json::json!({ "run_dir": run_dir, "case": "c1", "trial": 1 }));
    let got = mcp_calls(&root, &[show("runs/good"), show("runs/linked")]);
    assert!(!got[0].0, "the project's own run is shown: {}", got[0].1);
    assert!(got[1].0 && got[1].1.contains("outside the project root"), "{:?}", got[1]);
    // runs/ itself a link out: a run would write outside the root.
    std::fs::rename(root.join("runs"), root.join("old-runs")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("runs")).unwrap();
    let before = std::fs::read_dir(outside.path()).unwrap().count();
    let got = mcp_calls(&root, &[("run_suite", serde_json::json!({ "suite": "s.lua", "trials": 1 }))]);
    assert!(got[0].0 && got[0].1.contains("outside the project root"), "{:?}", got[0]);
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), before, "nothing written outside the root");
}

#[test]
fn evalua_init_never_writes_through_a_symlink_nor_into_a_special_file() {
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("bashrc");
    std::fs::write(&victim, "export PATH=$HOME/bin:$PATH\n").unwrap();
    let init = |dir: &std::path::Path| output_within(bin().current_dir(dir).args(["init", "."]), PATIENCE);
    // .gitignore a link to a file outside (before: rewritten with the ignore lines appended).
    let a = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&victim, a.path().join(".gitignore")).unwrap();
    assert_user_error(&init(a.path()), "symlink");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "export PATH=$HOME/bin:$PATH\n");
    assert!(!a.path().join("suites").exists(), "nothing written");
    // A folder of the project a link outside (before: the suite was written there).
    let b = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), b.path().join("suites")).unwrap();
    assert_user_error(&init(b.path()), "symlink");
    assert!(!outside.path().join("tickets.lua").exists());
    // .gitignore a FIFO: refused, not waited on.
    let c = tempfile::tempdir().unwrap();
    let fifo = std::ffi::CString::new(c.path().join(".gitignore").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    assert_user_error(&init(c.path()), "not a regular file");
    // A regular .gitignore gets the lines it lacks, appended.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join(".gitignore"), "node_modules/").unwrap();
    let o = init(d.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let gi = std::fs::read_to_string(d.path().join(".gitignore")).unwrap();
    assert!(gi.starts_with("node_modules/\n") && gi.contains("/runs"), "{gi}");
}

#[test]
fn labels_agree_is_linear_in_the_store_not_quadratic_in_its_annotators() {
    // 3,000 annotators in a chain: item i labelled by annotators i and i+1, on a
    // criterion of its own. Before: a pass over every unit per pair of annotators
    // (4.5 M pairs) and per criterion over every item: hours, where now it is a moment.
    let n = 3000;
    let mut store = String::new();
    for i in 0..n {
        for who in [i, i + 1] {
            let verdict = if (i + who) % 3 == 0 { "fail" } else { "pass" };
            store.push_str(&format!(
                "{{\"item\":\"i{i}\",\"annotator\":\"a{who}\",\"criterion\":\"c{}\",\"verdict\":\"{verdict}\",\"at\":\"2026-12-01T00:00:00Z\"}}\n",
                i % 500
            ));
        }
    }
    let dir = project(&[("labels/s.jsonl", &store)]);
    let o =
        output_within(bin().current_dir(dir.path()).args(["labels", "agree", "labels/s.jsonl", "--json"]), PATIENCE);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["annotators"].as_array().unwrap().len(), n + 1);
    assert_eq!(v["overall"]["pairs"].as_array().map(Vec::len), Some(n), "{}", v["overall"]["pairs"]);
}

/// `evalua grade` of the example suite on `traces`, in `dir`: its exit code and peak memory (MiB).
fn grade_peak(dir: &std::path::Path, traces: &std::path::Path) -> (Option<i32>, i64, String) {
    let suite = repo().join("suites/refunds_prod.lua");
    let mut child = bin()
        .current_dir(dir)
        .args(["grade", suite.to_str().unwrap(), "--traces", traces.to_str().unwrap(), "--out", "g", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || std::io::read_to_string(err).unwrap_or_default());
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: wait4 writes into the two locals; the pid is our child's.
    assert_eq!(unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) }, child.id() as i32);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let _ = std::fs::remove_dir_all(dir.join("g"));
    (code, usage.ru_maxrss / 1024, err.join().unwrap())
}

#[test]
fn a_trace_file_of_many_small_values_is_read_in_bounded_memory() {
    // 48 MB of `0,` inside one JSON array: as OTLP JSON (one document) and as
    // τ-bench's results (its first entry says so). Before: parsed whole into
    // values, about 40 times the file (2 GiB); now one element at a
    // time, the file's bytes plus a little.
    let dir = tempfile::tempdir().unwrap();
    let zeros = "0,".repeat(24 << 20);
    for (name, head) in [
        ("otlp.json", "[".to_string()),
        ("taubench.json", r#"[{"task_id": 1, "trial": 0, "info": {}, "traj": []}, "#.to_string()),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, format!("{head}{zeros}0]")).unwrap();
        let (code, peak, err) = grade_peak(dir.path(), &p);
        assert!(matches!(code, Some(0..=2)), "{name}: {code:?} {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(peak < 400, "{name}: evalua's peak memory was {peak} MiB for a 48 MB file");
        // The warnings are bounded too: the first ones, then a count.
        assert!(err.lines().count() < 20_000, "{name}: {} lines of warnings", err.lines().count());
    }
}

/// An agent that writes 64 MiB into /tmp and into its home, and says how far each got.
const FILLER: &str = r#"import json, os, sys
sys.stdin.readline()
def fill(d):
    try:
        with open(os.path.join(d, "fill"), "wb") as f:
            for _ in range(64):
                f.write(b"x" * (1 << 20))
        return "wrote 64 MiB"
    except OSError as e:
        return "stopped at %d MiB" % (os.path.getsize(os.path.join(d, "fill")) >> 20)
out = "tmp: %s; home: %s" % (fill("/tmp"), fill(os.environ["HOME"]))
sys.stdout.write(json.dumps({"type": "final", "content": out}) + "\n")
sys.stdout.flush()
"#;

#[test]
fn the_sandboxs_tmp_and_home_are_bounded_by_max_trial_mb() {
    if !crate::isolation::sandbox_available() {
        return;
    }
    let dir = project(&[("filler.py", FILLER)]);
    let agent = dir.path().join("filler.py").display().to_string();
    let suite = format!(
        r#"local evalua = require("evalua")
local suite = evalua.suite {{ name = "filler", trials = 1, sandbox = {{ max_trial_mb = 8 }},
  agent = evalua.agent.command {{ cmd = {{ "python3", {agent:?} }} }} }}
suite:case {{ id = "fill", input = "x", expect = {{ {{ name = "ran", run = function(t) return true, t.answer end }} }} }}
return suite
"#
    );
    std::fs::write(dir.path().join("s.lua"), suite).unwrap();
    let o = evalua(dir.path(), &["run", "s.lua", "--out", "out", "-q"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let recs = trials(&dir.path().join("out"));
    let answer = recs[0]["answer"].as_str().unwrap_or_default().to_string();
    // Before: /tmp and the home were tmpfs of the kernel's default size (half the RAM): 64 MiB went in.
    assert_eq!(answer, "tmp: stopped at 8 MiB; home: stopped at 8 MiB", "{}", recs[0]);
}

/// An agent that opens 100 connections to its MCP server and holds them: what
/// the last one is answered, what a held one answers, then its final message.
const HOARDER: &str = r#"import json, os, socket, sys
from urllib.parse import urlparse
sys.stdin.readline()
u = urlparse(os.environ["EVALUA_MCP_URL"])
held = [socket.create_connection((u.hostname, u.port)) for _ in range(100)]
def first_line(s, send=None):
    if send:
        s.sendall(send)
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    rest = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
        if len(rest) > 100000:
            break
    return data.split(b"\r\n")[0].decode(), (data + rest).decode("utf-8", "replace")
last, last_all = first_line(held[-1])
req = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n" % (u.path, u.hostname, u.port)).encode()
kept, _ = first_line(held[0], req)
for s in held:
    s.close()
why = "limit" if "the most one trial may" in last_all else "no reason"
sys.stdout.write(json.dumps({"type": "final", "content": "last: %s (%s); held: %s" % (last, why, kept)}) + "\n")
sys.stdout.flush()
"#;

#[test]
fn an_agent_cannot_hold_more_than_its_cap_of_connections_to_its_mcp_server() {
    let dir = project(&[("hoarder.py", HOARDER)]);
    let agent = dir.path().join("hoarder.py").display().to_string();
    let suite = format!(
        r#"local evalua = require("evalua")
local suite = evalua.suite {{ name = "hoard", trials = 1, budget = {{ deadline_s = 60 }} }}
suite:tool {{ name = "noop", params = {{ type = "object" }}, run = function(ctx, a) return {{ ok = true }} end }}
local ran = {{ name = "ran", run = function(t) return true, t.answer end }}
suite:case {{ id = "hoards", input = "x", expect = {{ ran }},
  agent = evalua.agent.command {{ cmd = {{ "python3", {agent:?} }}, tools = "mcp" }} }}
suite:case {{ id = "other", input = "x", expect = {{ ran }}, agent = evalua.agent.scripted(function() return "fine" end) }}
return suite
"#
    );
    std::fs::write(dir.path().join("s.lua"), suite).unwrap();
    let o = evalua(dir.path(), &["run", "s.lua", "--out", "out", "-q", "--isolation", "none", "--jobs", "2"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let recs = trials(&dir.path().join("out"));
    let hoards = recs.iter().find(|r| r["case"] == "hoards").unwrap();
    // Before: every connection was taken (the last one waited for its request, as the others).
    let answer = hoards["answer"].as_str().unwrap_or_default();
    assert!(answer.starts_with("last: HTTP/1.1 503 Service Unavailable (limit); held: HTTP/1.1 "), "{hoards}");
    assert!(!answer.ends_with("503 Service Unavailable"), "a held connection is served: {answer}");
    assert_eq!(recs.iter().find(|r| r["case"] == "other").unwrap()["outcome"], "accepted");
}

#[test]
fn a_trials_model_proxy_holds_at_most_its_budget_of_request_bodies() {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    let ep = evalua::model::Endpoint::new(evalua::model::Provider::OpenAI, "http://127.0.0.1:9/v1", "m");
    let now = std::time::Instant::now();
    let proxy = evalua::model::proxy::Proxy::start(Some(ep), None, Default::default(), now + PATIENCE, now).unwrap();
    // Five requests of 31 MiB each (under the 32 MiB a request may have), each one byte short,
    // so none completes: 155 MiB held at once unless the proxy refuses. Before: all held.
    let size = 31 << 20;
    let chunk = vec![b' '; 1 << 20];
    let mut conns = Vec::new();
    for _ in 0..5 {
        let mut s = std::net::TcpStream::connect(proxy.addr).unwrap();
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n",
            proxy.addr, proxy.dummy_key
        );
        let _ = s.write_all(head.as_bytes());
        for i in 0..31 {
            let n = if i == 30 { chunk.len() - 1 } else { chunk.len() };
            if s.write_all(&chunk[..n]).is_err() {
                break; // refused and closed while sending
            }
        }
        conns.push(s);
    }
    // Wait for the first connection the proxy answers: it must be a refusal saying why
    // (before: none was answered; a hang is a failure after PATIENCE, never a hung test run).
    let mut fds: Vec<libc::pollfd> =
        conns.iter().map(|s| libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    // SAFETY: poll reads and writes the array we own.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, PATIENCE.as_millis() as i32) };
    assert!(n > 0, "no request was answered: the proxy held every body");
    let i = fds.iter().position(|f| f.revents != 0).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") || !String::from_utf8_lossy(&answer).contains('}') {
        match conns[i].read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(k) => answer.extend_from_slice(&buf[..k]),
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("the most one trial may"), "{answer}");
}

/// An agent that starts 700 processes (each sleeping) and says how many it could.
const FORKER: &str = r#"import json, subprocess, sys
sys.stdin.readline()
kids, why = [], "all started"
for _ in range(700):
    try:
        kids.append(subprocess.Popen(["sleep", "600"]))
    except OSError as e:
        why = "stopped: %s" % e.strerror
        break
n = len(kids)
for k in kids:
    k.kill()
for k in kids:
    k.wait()
sys.stdout.write(json.dumps({"type": "final", "content": "%d %s" % (n, why)}) + "\n")
sys.stdout.flush()
"#;

/// The forker suite in a fresh project (its folder open to any user, for the run as `nobody`).
fn forker_project() -> tempfile::TempDir {
    let dir = project(&[("forker.py", FORKER)]);
    let agent = dir.path().join("forker.py").display().to_string();
    let suite = format!(
        r#"local evalua = require("evalua")
local suite = evalua.suite {{ name = "forker", trials = 1, agent = evalua.agent.command {{ cmd = {{ "/usr/bin/python3", {agent:?} }} }} }}
suite:case {{ id = "fork", input = "x", expect = {{ {{ name = "ran", run = function(t) return true, t.answer end }} }} }}
return suite
"#
    );
    std::fs::write(dir.path().join("s.lua"), suite).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// How many processes the forker could start, from its answer (and that it was stopped).
fn forked(dir: &std::path::Path, o: &std::process::Output) -> usize {
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(o));
    let recs = trials(&dir.join("out"));
    let answer = recs[0]["answer"].as_str().unwrap_or_default().to_string();
    let n: usize = answer.split(' ').next().unwrap_or("").parse().unwrap_or(0);
    assert!(answer.contains("stopped"), "{answer}: {}", recs[0]);
    n
}

#[test]
fn a_sandboxed_agent_cannot_start_processes_without_end() {
    if !crate::isolation::sandbox_available() {
        return;
    }
    // Where evalua can make a pids cgroup (cgroup v1 writable: root, or delegated); elsewhere
    // the next test's RLIMIT_NPROC is the limit (docs/design/isolation.md).
    if !std::path::Path::new("/sys/fs/cgroup/pids/tasks").exists()
        || std::fs::create_dir("/sys/fs/cgroup/pids/evalua-test-probe").is_err()
    {
        eprintln!("\n*** SKIPPED: no writable cgroup v1 pids hierarchy here: the next test covers the limit ***\n");
        return;
    }
    let _ = std::fs::remove_dir("/sys/fs/cgroup/pids/evalua-test-probe");
    let dir = forker_project();
    // Three trials: the second and third reuse the first's cgroup (issue 45's overhead), which
    // must be empty and limited again.
    let o = evalua(dir.path(), &["run", "s.lua", "--out", "out", "-q", "--trials", "3", "--jobs", "1"]);
    // Before: all 700 started. Now the tree stops at 512 (the agent, its python and the relay count too).
    for rec in trials(&dir.path().join("out")) {
        let answer = rec["answer"].as_str().unwrap_or_default();
        let n: usize = answer.split(' ').next().unwrap_or("").parse().unwrap_or(0);
        assert!(n > 400 && n < 512 && answer.contains("stopped"), "{answer}: {rec}");
    }
    forked(dir.path(), &o);
}

/// As a user who cannot make a cgroup (no delegation: the common case of cgroup v2 or a
/// non-root user), the relay sets RLIMIT_NPROC in the sandbox's own user namespace, where
/// processes are counted per namespace: the tree stops at 512. Run as `nobody` when the tests
/// run as root (where the kernel would exempt root from the limit); failed before: 700 started.
#[test]
fn without_a_cgroup_the_sandbox_s_user_namespace_limits_its_processes() {
    if !crate::isolation::sandbox_available() {
        return;
    }
    let dir = forker_project();
    let root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_evalua")]);
        c
    } else {
        std::process::Command::new(env!("CARGO_BIN_EXE_evalua"))
    };
    let o = cmd
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .args(["run", "s.lua", "--out", "out", "-q"])
        .output()
        .unwrap();
    let n = forked(dir.path(), &o);
    assert!(n > 400 && n < 512, "{n} processes started");
}
