//! `evalua mcp`: an MCP server on stdio, so a coding agent can drive evalua
//! (SPEC §16). Its tools list suites and cases, check a suite, run a suite (or
//! one case) with trials, show a trial, compare two runs and grade traces.
//!
//! Each tool call runs this same binary as a child process with `--json`
//! (`evalua run … --json`, `evalua compare … --json`, …) in the project root,
//! and answers with that command's document: one contract for scripts and
//! agents, and a run that crashes, or sets process-wide state (isolation,
//! judge cache, signal handlers), does so in its own process. A long run
//! reports each finished trial as a progress notification when the client
//! asked for progress (the child prints `@evalua-progress {json}` lines on
//! stderr, `EVALUA_PROGRESS=jsonl`); a cancelled call kills the child's
//! process group.
//!
//! Every path argument is confined to the project root: resolved against it,
//! symlinks followed (`canonicalize`), and refused unless the result lies
//! inside it; a folder's contents too (no link below it may lead out), and
//! `runs/`, where a run or a grade writes. The child gets only absolute, checked paths, and values that
//! are not paths are passed as `--flag=value` or after `--`, so no argument
//! can become a flag.

use std::borrow::Cow;
use std::io::{BufRead, BufReader, Read};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value as Json, json};

use crate::error::{Error, Result};

/// The prefix of a progress line a child prints on stderr (`EVALUA_PROGRESS=jsonl`).
pub const PROGRESS_PREFIX: &str = "@evalua-progress ";
/// A tool's text answer is cut past this many bytes (the structured content is whole).
const MAX_TEXT: usize = 200_000;
/// Suite files found by `list_suites` at most, and how deep it looks.
const MAX_SUITES: usize = 2000;
const MAX_DEPTH: usize = 8;

const SUPPORTED: &[ProtocolVersion] =
    &[ProtocolVersion::V_2025_03_26, ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25];

#[derive(Clone)]
struct Server {
    root: Arc<PathBuf>,
    exe: Arc<PathBuf>,
    tools: Arc<Vec<Tool>>,
}

/// Serve MCP on stdin/stdout until the client closes stdin. `root`: the
/// project root every path is confined to (default: the current directory).
pub fn mcp(root: Option<&Path>) -> Result<u8> {
    let root = match root {
        Some(r) => r.to_path_buf(),
        None => std::env::current_dir().map_err(|e| Error::Environment(format!("the current directory: {e}")))?,
    };
    let root = root.canonicalize().map_err(|e| Error::Input(format!("{}: not a project root: {e}", root.display())))?;
    if !root.is_dir() {
        return Err(Error::Input(format!("{}: not a directory", root.display())));
    }
    let exe =
        std::env::current_exe().map_err(|e| Error::Environment(format!("cannot find evalua's own binary: {e}")))?;
    // The protocol owns stdout; anything printed by mistake goes to stderr.
    let out = crate::util::stdio::divert().map_err(|e| Error::Environment(format!("cannot set stdout aside: {e}")))?;
    let server = Server { root: Arc::new(root.clone()), exe: Arc::new(exe), tools: Arc::new(tools()) };
    eprintln!("evalua mcp: serving on stdio; project root {}", root.display());
    // The process's one runtime: the session's tasks are blocking children and stdio.
    let rt = crate::model::runtime();
    rt.block_on(async move {
        let stdin = tokio::io::stdin();
        let stdout = tokio::fs::File::from_std(out);
        let running = rmcp::serve_server(server, (stdin, stdout))
            .await
            .map_err(|e| Error::Environment(format!("MCP: the session did not start: {e}")))?;
        running.waiting().await.map_err(|e| Error::Environment(format!("MCP: {e}")))?;
        Ok::<(), Error>(())
    })?;
    // stdin may still be read by a blocking thread: the process ends without waiting for it.
    Ok(0)
}

fn tool(name: &str, description: &str, schema: Json) -> Tool {
    serde_json::from_value(json!({ "name": name, "description": description, "inputSchema": schema }))
        .expect("a well-formed tool definition")
}

fn tools() -> Vec<Tool> {
    let path = |what: &str| json!({ "type": "string", "description": format!("{what}, relative to the project root") });
    let select = |mut props: Map<String, Json>| {
        props
            .insert("case".into(), json!({ "type": "string", "description": "only cases whose id matches this glob" }));
        props.insert("tag".into(), json!({ "type": "string", "description": "only cases with this tag" }));
        props.insert("split".into(), json!({ "type": "string", "enum": ["dev", "held_out"] }));
        props
    };
    let obj = |props: Map<String, Json>, required: &[&str]| json!({ "type": "object", "properties": props, "required": required, "additionalProperties": false });
    let mut suite = Map::new();
    suite.insert("suite".into(), path("the suite file (.lua)"));
    let mut run = select(suite.clone());
    run.insert("trials".into(), json!({ "type": "integer", "minimum": 1, "description": "trials per case" }));
    run.insert("seed".into(), json!({ "type": "integer", "minimum": 0 }));
    run.insert("jobs".into(), json!({ "type": "integer", "minimum": 1, "description": "trials at once" }));
    run.insert("baseline".into(), path("a run dir to compare with"));
    let mut show = Map::new();
    show.insert("run_dir".into(), path("the run dir"));
    show.insert("case".into(), json!({ "type": "string", "description": "the case id" }));
    show.insert("trial".into(), json!({ "type": "integer", "minimum": 1 }));
    let mut cmp = Map::new();
    cmp.insert("base".into(), path("the base run dir"));
    cmp.insert("candidate".into(), path("the candidate run dir"));
    let mut grade = suite.clone();
    grade.insert(
        "traces".into(),
        json!({ "type": "array", "minItems": 1, "items": path("a trace file or folder, or a run dir") }),
    );
    vec![
        tool(
            "list_suites",
            "The suite files (.lua files that declare an evalua.suite) under the project root.",
            obj(Map::new(), &[]),
        ),
        tool(
            "list_cases",
            "A suite's cases with split, tags, difficulty, trials and checks (evalua list --json).",
            obj(select(suite.clone()), &["suite"]),
        ),
        tool(
            "check_suite",
            "Load and validate a suite without running an agent (evalua check --json): errors with file:line.",
            obj(suite.clone(), &["suite"]),
        ),
        tool(
            "run_suite",
            "Run a suite, or the cases a glob selects, with N trials each (evalua run --json): the run dir, gates \
             with verdicts, headline figures with 95% intervals, the failing trials. Reports progress per trial.",
            obj(run, &["suite"]),
        ),
        tool(
            "show_trial",
            "One trial's stored trace and record: calls, messages, checks and why it failed (evalua show --json).",
            obj(show, &["run_dir", "case", "trial"]),
        ),
        tool(
            "compare_runs",
            "Two runs paired case by case: improved, regressed, measurement changes (evalua compare --json).",
            obj(cmp, &["base", "candidate"]),
        ),
        tool(
            "grade_traces",
            "Grade recorded traces with a suite's monitors and checks (evalua grade --json): a new run dir and its figures.",
            obj(grade, &["suite", "traces"]),
        ),
    ]
}

/// A tool's arguments, read strictly.
struct Args<'a>(&'a Map<String, Json>);

impl Args<'_> {
    fn str(&self, k: &str) -> std::result::Result<Option<&str>, String> {
        match self.0.get(k) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("'{k}' must be a string")),
        }
    }
    fn need(&self, k: &str) -> std::result::Result<&str, String> {
        self.str(k)?.ok_or_else(|| format!("'{k}' is required"))
    }
    fn int(&self, k: &str) -> std::result::Result<Option<u64>, String> {
        match self.0.get(k) {
            None | Some(Json::Null) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| format!("'{k}' must be a non-negative integer")),
        }
    }
}

/// `arg` resolved inside `root` (symlinks followed); an error unless it
/// exists and lies inside the root.
pub fn confine(root: &Path, arg: &str) -> std::result::Result<PathBuf, String> {
    if arg.is_empty() || arg.contains('\0') {
        return Err(format!("{arg:?}: not a path"));
    }
    let p = Path::new(arg);
    let joined = if p.is_absolute() { p.to_path_buf() } else { root.join(p) };
    // Said before touching the file system: a path that climbs out reads as such.
    let lexical_escape = !p.is_absolute() && {
        let mut depth: i64 = 0;
        p.components().any(|c| {
            match c {
                Component::ParentDir => depth -= 1,
                Component::Normal(_) => depth += 1,
                _ => {}
            }
            depth < 0
        })
    };
    let outside = || format!("{arg}: outside the project root {}", root.display());
    if lexical_escape {
        return Err(outside());
    }
    let real =
        joined.canonicalize().map_err(|e| if joined.starts_with(root) { format!("{arg}: {e}") } else { outside() })?;
    if !real.starts_with(root) {
        return Err(outside());
    }
    Ok(real)
}

/// Entries below a folder argument checked for links at most.
const MAX_ENTRIES: usize = 200_000;

/// Nothing below `dir` leads out of `root`: every symlink in it (folders
/// followed down to `MAX_DEPTH`) resolves inside the root. A folder inside
/// the root can still hold a link out (a run dir's `traces/`, a trace in a
/// traces folder), and the child would read, and answer with, what it
/// points at. A link that resolves nowhere is refused too.
fn confine_below(root: &Path, dir: &Path) -> std::result::Result<(), String> {
    let shown = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(format!("{}: more than {MAX_ENTRIES} entries to check", shown(dir)));
            }
            let (Ok(ft), p) = (e.file_type(), e.path()) else { continue };
            if ft.is_symlink() {
                if !p.canonicalize().is_ok_and(|real| real.starts_with(root)) {
                    return Err(format!(
                        "{}: a link outside the project root {} (or to nothing)",
                        shown(&p),
                        root.display()
                    ));
                }
            } else if ft.is_dir() && depth < MAX_DEPTH {
                stack.push((p, depth + 1));
            }
        }
    }
    Ok(())
}

impl Server {
    /// A path argument resolved inside the root, and, for a folder, everything below it.
    fn confine(&self, arg: &str) -> std::result::Result<PathBuf, String> {
        let real = confine(&self.root, arg)?;
        if real.is_dir() {
            confine_below(&self.root, &real)?;
        }
        Ok(real)
    }

    /// Where a run or a grade writes its run dir (`runs/<suite>/<run id>` in
    /// the root): `runs/` and the folders in it must not lead out either.
    fn confine_runs(&self) -> std::result::Result<(), String> {
        let runs = self.root.join("runs");
        if std::fs::symlink_metadata(&runs).is_err() {
            return Ok(());
        }
        if !runs.canonicalize().is_ok_and(|r| r.starts_with(self.root.as_path())) {
            return Err(format!("runs: a link outside the project root {}", self.root.display()));
        }
        let Ok(entries) = std::fs::read_dir(&runs) else { return Ok(()) };
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_symlink())
                && !e.path().canonicalize().is_ok_and(|r| r.starts_with(self.root.as_path()))
            {
                let name = e.file_name().to_string_lossy().into_owned();
                return Err(format!("runs/{name}: a link outside the project root {}", self.root.display()));
            }
        }
        Ok(())
    }

    /// The child's command line for a tool call.
    fn argv(&self, name: &str, a: &Args) -> std::result::Result<Vec<String>, String> {
        let p =
            |k: &str| -> std::result::Result<String, String> { Ok(self.confine(a.need(k)?)?.display().to_string()) };
        let select = |v: &mut Vec<String>| -> std::result::Result<(), String> {
            for k in ["case", "tag", "split"] {
                if let Some(x) = a.str(k)? {
                    v.push(format!("--{k}={x}"));
                }
            }
            Ok(())
        };
        let mut v: Vec<String> = Vec::new();
        match name {
            "list_cases" => {
                v.extend(["list".into(), "--json".into(), p("suite")?]);
                select(&mut v)?;
            }
            "check_suite" => v.extend(["check".into(), "--json".into(), p("suite")?]),
            "run_suite" => {
                self.confine_runs()?;
                v.extend(["run".into(), "--json".into(), "--quiet".into(), p("suite")?]);
                select(&mut v)?;
                for k in ["trials", "seed", "jobs"] {
                    if let Some(n) = a.int(k)? {
                        v.push(format!("--{k}={n}"));
                    }
                }
                if a.str("baseline")?.is_some() {
                    v.push(format!("--baseline={}", p("baseline")?));
                }
            }
            "show_trial" => {
                let trial = a.int("trial")?.ok_or("'trial' is required")?;
                v.extend(["show".into(), "--json".into(), p("run_dir")?, "--".into(), a.need("case")?.into()]);
                v.push(trial.to_string());
            }
            "compare_runs" => v.extend(["compare".into(), "--json".into(), p("base")?, p("candidate")?]),
            "grade_traces" => {
                self.confine_runs()?;
                v.extend(["grade".into(), "--json".into(), "--quiet".into(), p("suite")?, "--traces".into()]);
                let traces = match a.0.get("traces") {
                    Some(Json::Array(t)) if !t.is_empty() => t,
                    _ => return Err("'traces' must be a non-empty array of paths".into()),
                };
                for t in traces {
                    let t = t.as_str().ok_or("'traces' must hold strings")?;
                    v.push(self.confine(t)?.display().to_string());
                }
            }
            other => return Err(format!("no tool named '{other}'")),
        }
        for k in a.0.keys() {
            let known: &[&str] = match name {
                "list_cases" => &["suite", "case", "tag", "split"],
                "check_suite" => &["suite"],
                "run_suite" => &["suite", "case", "tag", "split", "trials", "seed", "jobs", "baseline"],
                "show_trial" => &["run_dir", "case", "trial"],
                "compare_runs" => &["base", "candidate"],
                "grade_traces" => &["suite", "traces"],
                _ => &[],
            };
            if !known.contains(&k.as_str()) {
                return Err(format!("unknown argument '{k}' (known: {})", known.join(", ")));
            }
        }
        Ok(v)
    }

    /// The suite files under the root: `.lua` files (not `*_test.lua`) that
    /// declare `evalua.suite`, outside hidden folders, `runs/` and `target/`.
    fn suites(&self) -> Vec<String> {
        let mut found = Vec::new();
        let mut stack = vec![(self.root.to_path_buf(), 0usize)];
        while let Some((dir, depth)) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            let mut entries: Vec<_> = entries.flatten().collect();
            entries.sort_by_key(|e| e.file_name());
            for e in entries {
                let name = e.file_name().to_string_lossy().into_owned();
                let Ok(ft) = e.file_type() else { continue };
                let path = e.path();
                if ft.is_dir() {
                    let skip = name.starts_with('.')
                        || ["runs", "target", "node_modules", "__pycache__"].contains(&name.as_str());
                    if !skip && depth < MAX_DEPTH {
                        stack.push((path, depth + 1));
                    }
                } else if ft.is_file()
                    && name.ends_with(".lua")
                    && !name.ends_with("_test.lua")
                    && declares_suite(&path)
                    && let Ok(rel) = path.strip_prefix(self.root.as_path())
                {
                    found.push(rel.display().to_string());
                    if found.len() >= MAX_SUITES {
                        return found;
                    }
                }
            }
        }
        found.sort();
        found
    }
}

/// Whether a Lua file declares a suite (read up to 1 MB).
fn declares_suite(path: &Path) -> bool {
    let Ok(f) = std::fs::File::open(path) else { return false };
    let mut text = String::new();
    let _ = f.take(1 << 20).read_to_string(&mut text);
    text.contains("evalua.suite")
}

fn text_result(v: &Json, is_error: bool) -> CallToolResult {
    let mut text = serde_json::to_string_pretty(v).unwrap_or_default();
    if text.len() > MAX_TEXT {
        let mut cut = MAX_TEXT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n… (cut; the whole document is in structuredContent)");
    }
    let mut r = json!({ "content": [{ "type": "text", "text": text }], "isError": is_error });
    if v.is_object() {
        r["structuredContent"] = v.clone();
    }
    serde_json::from_value(r).unwrap_or_else(|_| CallToolResult::error(Vec::new()))
}

fn error_result(msg: &str) -> CallToolResult {
    serde_json::from_value(json!({ "content": [{ "type": "text", "text": msg }], "isError": true }))
        .unwrap_or_else(|_| CallToolResult::error(Vec::new()))
}

/// What a child printed and how it ended.
struct Ran {
    code: Option<i32>,
    stdout: Vec<u8>,
    /// The last lines of its stderr (progress lines left out).
    stderr_tail: Vec<String>,
}

/// Run the child to its end; each progress line goes to `progress`; `cancel`
/// is polled, and when it says so the child's process group is killed.
fn run_child(
    exe: &Path,
    root: &Path,
    argv: &[String],
    progress: tokio::sync::mpsc::UnboundedSender<Json>,
    cancel: Cancel,
) -> std::io::Result<Ran> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(exe)
        .args(argv)
        .current_dir(root)
        .env("EVALUA_PROGRESS", "jsonl")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let pgid = child.id() as i32;
    let mut out = child.stdout.take().expect("piped stdout");
    let err = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let errs = std::thread::spawn(move || {
        let mut tail: std::collections::VecDeque<String> = Default::default();
        for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
            if let Some(p) = line.strip_prefix(PROGRESS_PREFIX) {
                if let Ok(v) = serde_json::from_str::<Json>(p) {
                    let _ = progress.send(v);
                }
                continue;
            }
            eprintln!("{line}");
            tail.push_back(line);
            if tail.len() > 20 {
                tail.pop_front();
            }
        }
        tail.into_iter().collect::<Vec<_>>()
    });
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if cancel.is_set() {
            // SAFETY: signalling the child's own process group.
            unsafe { libc::kill(-pgid, libc::SIGTERM) };
            std::thread::sleep(std::time::Duration::from_millis(500));
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            break child.wait()?;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let stdout = reader.join().unwrap_or_default();
    let stderr_tail = errs.join().unwrap_or_default();
    Ok(Ran { code: status.code(), stdout, stderr_tail })
}

/// Set by the async side when the call is cancelled; polled by the blocking child runner.
#[derive(Clone, Default)]
struct Cancel(Arc<std::sync::atomic::AtomicBool>);

impl Cancel {
    fn set(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    fn is_set(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Server {
    async fn call(&self, name: &str, args: Map<String, Json>, ctx: &RequestContext<RoleServer>) -> CallToolResult {
        if name == "list_suites" {
            if let Some(k) = args.keys().next() {
                return error_result(&format!("unknown argument '{k}' (list_suites takes none)"));
            }
            let root = self.root.clone();
            let me = self.clone();
            let suites = tokio::task::spawn_blocking(move || me.suites()).await.unwrap_or_default();
            return text_result(&json!({ "schema": "evalua.mcp.suites/1", "root": *root, "suites": suites }), false);
        }
        let argv = match self.argv(name, &Args(&args)) {
            Ok(v) => v,
            Err(e) => return error_result(&e),
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Json>();
        let cancel = Cancel::default();
        let (exe, root, flag) = (self.exe.clone(), self.root.clone(), cancel.clone());
        let mut task = tokio::task::spawn_blocking(move || run_child(&exe, &root, &argv, tx, flag));
        let token = ctx.meta.get_progress_token();
        let ran = loop {
            tokio::select! {
                done = &mut task => break done,
                Some(p) = rx.recv() => {
                    if let Some(token) = &token {
                        let done = p["done"].as_f64().unwrap_or(0.0);
                        let mut n = ProgressNotificationParam::new(token.clone(), done);
                        n.total = p["total"].as_f64();
                        n.message = p["message"].as_str().map(String::from);
                        let _ = ctx.peer.notify_progress(n).await;
                    }
                }
                _ = ctx.ct.cancelled() => cancel.set(),
            }
        };
        let ran = match ran {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return error_result(&format!("cannot start evalua: {e}")),
            Err(e) => return error_result(&format!("internal error: {e}")),
        };
        if cancel.is_set() {
            return error_result("cancelled: the command was stopped");
        }
        match serde_json::from_slice::<Json>(&ran.stdout) {
            Ok(doc) => {
                // show --json prints the stored trace (no document): wrap it.
                let doc = if name == "show_trial" && doc.get("schema").is_none() {
                    json!({ "schema": "evalua.show/1", "exit_code": ran.code, "trial": doc })
                } else {
                    doc
                };
                let failed = ran.code.is_none_or(|c| c >= 2);
                text_result(&doc, failed)
            }
            Err(_) => error_result(&format!(
                "evalua {} exited {}: {}",
                name,
                ran.code.map(|c| c.to_string()).unwrap_or_else(|| "on a signal".into()),
                ran.stderr_tail.join("\n")
            )),
        }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.protocol_version = ProtocolVersion::V_2025_11_25;
        info.server_info = Implementation::new("evalua", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(format!(
            "evalua evaluates LLM agents with repeated, isolated trials. Paths are relative to the project root {} \
             and may not leave it. Start with list_suites, then check_suite, run_suite (the answer has the run dir, \
             gates, figures and failing trials), show_trial on a failing trial, compare_runs.",
            self.root.display()
        ));
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        Ok(self.call(&request.name, args, &context).await.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("suites")).unwrap();
        std::fs::write(root.join("suites/a.lua"), "return evalua.suite{}").unwrap();
        assert_eq!(confine(&root, "suites/a.lua").unwrap(), root.join("suites/a.lua"));
        assert_eq!(confine(&root, "suites/../suites/a.lua").unwrap(), root.join("suites/a.lua"));
        for bad in ["../x", "suites/../../x", "/etc/passwd", "", "a\0b"] {
            assert!(confine(&root, bad).is_err(), "{bad}");
        }
        assert!(confine(&root, "../x").unwrap_err().contains("outside the project root"));
        std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
        assert!(confine(&root, "etc/passwd").unwrap_err().contains("outside the project root"));
        assert!(confine(&root, "nope.lua").unwrap_err().contains("No such file"));
    }
}
