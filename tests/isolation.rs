//! The adversarial suite of issue 13: each test is one attack a hostile agent
//! or a careless grader made on evalua, reproduced. Every test failed on the
//! code as it was before the sandbox, the limits and the read-only objects
//! existed; each must keep failing if one of them goes away.
//!
//! Tests that need the process sandbox (bubblewrap) skip with a loud message
//! when `bwrap` cannot run here, unless EVALUA_REQUIRE_BWRAP=1 (set by .ci/run).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

/// Whether the sandbox tests can run (else they skip, or fail under EVALUA_REQUIRE_BWRAP=1).
pub(crate) fn sandbox_available() -> bool {
    let ok = Command::new("bwrap")
        .args(["--unshare-all", "--share-net", "--die-with-parent", "--ro-bind", "/usr", "/usr"])
        .args(["--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64"])
        .args(["--proc", "/proc", "--dev", "/dev", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        if std::env::var("EVALUA_REQUIRE_BWRAP").as_deref() == Ok("1") {
            panic!("EVALUA_REQUIRE_BWRAP=1 but bwrap cannot run here: apt-get install bubblewrap");
        }
        eprintln!("\n*** SKIPPED: the sandbox tests need bubblewrap (apt-get install bubblewrap) ***\n");
    }
    ok
}

/// Run evalua with a hard timeout: a hang is a failed test, never a hung test run.
pub(crate) fn bounded(cwd: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration) -> (Option<Output>, Duration) {
    use std::os::unix::process::CommandExt;
    let started = Instant::now();
    let mut c = bin();
    c.current_dir(cwd).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
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
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let stdout = out_t.join().unwrap();
            let stderr = err_t.join().unwrap();
            return (Some(Output { status, stdout, stderr }), started.elapsed());
        }
        if started.elapsed() > limit {
            // SAFETY: killpg only sends a signal, to the group this test started.
            unsafe { libc::killpg(child.id() as i32, libc::SIGKILL) };
            let _ = child.wait();
            return (None, started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Run `suite.lua` in `dir` into `out/`, within `limit`; panics on a hang.
pub(crate) fn run_within(dir: &Path, extra: &[&str], env: &[(&str, &str)], limit: Duration) -> (Output, Vec<Value>) {
    let mut args = vec!["run", "suite.lua", "--out", "out", "-q"];
    args.extend_from_slice(extra);
    let (out, took) = bounded(dir, &args, env, limit);
    let out = out.unwrap_or_else(|| panic!("evalua run hung: killed after {took:?}"));
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "the run must go on and exit normally: {:?}\n{}",
        out.status,
        stderr(&out)
    );
    let recs = trials(&dir.join("out"));
    (out, recs)
}

pub(crate) const HEAD: &str = "local evalua = require('evalua')\nlocal check = require('evalua.check')\n";

fn scripted_suite(budget: &str, agent_body: &str, checks: &str) -> String {
    format!(
        "{HEAD}local suite = evalua.suite {{ name = 's', trials = 1, budget = {{ {budget} }} }}\n\
         suite:case {{ id = 'c', input = 'go', agent = evalua.agent.scripted(function(task, env)\n{agent_body}\nend),\n\
         expect = {{ {checks} }} }}\nreturn suite\n"
    )
}

// ---------------------------------------------------------------------------
// 1. Lua limits that cannot be bypassed.

#[test]
fn xpcall_handler_cannot_outlive_a_scripted_agents_deadline() {
    let dir = project(&[(
        "suite.lua",
        &scripted_suite(
            "deadline_s = 1",
            "xpcall(error, function() while true do end end)\nreturn 'never'",
            "function(t) return true end",
        ),
    )]);
    let (_, recs) = run_within(dir.path(), &[], &[], PATIENCE);
    assert_eq!(recs[0]["ended"], "deadline", "{}", recs[0]);
}

#[test]
fn xpcall_handler_cannot_outlive_a_checks_limit() {
    let dir = project(&[(
        "suite.lua",
        &scripted_suite(
            "",
            "return 'ok'",
            "{ name = 'spins', run = function(t) xpcall(error, function() while true do end end) return true end }",
        ),
    )]);
    let (_, recs) = run_within(dir.path(), &[], &[], PATIENCE);
    assert_eq!(recs[0]["outcome"], "grader_error", "{}", recs[0]);
    let err = check(&recs[0], "spins")["error"].as_str().unwrap_or("").to_string();
    assert!(err.contains("limit"), "{err}");
}

#[test]
fn close_metamethod_cannot_outlive_a_scripted_agents_deadline() {
    let dir = project(&[(
        "suite.lua",
        &scripted_suite(
            "deadline_s = 1",
            "local x <close> = setmetatable({}, { __close = function() while true do end end })\nwhile true do end",
            "function(t) return true end",
        ),
    )]);
    let (_, recs) = run_within(dir.path(), &[], &[], PATIENCE);
    assert_eq!(recs[0]["ended"], "deadline", "{}", recs[0]);
}

#[test]
fn xpcall_at_the_top_of_a_suite_file_cannot_outlive_the_load_limit() {
    let dir = project(&[(
        "suite.lua",
        &format!("{HEAD}xpcall(error, function() while true do end end)\nreturn evalua.suite {{ name = 's' }}\n"),
    )]);
    let (out, took) = bounded(dir.path(), &["check", "suite.lua"], &[], PATIENCE);
    let out = out.unwrap_or_else(|| panic!("evalua check hung: killed after {took:?}"));
    assert_user_error(&out, "limit");
}

// ---------------------------------------------------------------------------
// 2. Shared objects that really are read-only; handles that die.

/// Every trial first reports whether it starts pristine, then tries to poison
/// every shared object; the answer lists what it found and what it could write.
const POISONER: &str = r#"
  local host = require("evalua.host")
  local tools = require("evalua.tools")
  local evil = function() return "POISONED" end
  local dirty = {}
  if string.upper("a") ~= "A" then dirty[#dirty + 1] = "string.upper" end
  if ("a"):upper() ~= "A" then dirty[#dirty + 1] = "string methods" end
  if table.concat({ "a", "b" }) ~= "ab" then dirty[#dirty + 1] = "table.concat" end
  if math.floor(1.5) ~= 1 then dirty[#dirty + 1] = "math.floor" end
  if type(os.time()) ~= "number" then dirty[#dirty + 1] = "os.time" end
  if evalua.suite == evil or type(evalua.path) ~= "function" then dirty[#dirty + 1] = "evalua" end
  if check.answer == evil then dirty[#dirty + 1] = "check.answer" end
  if host.regex_is_match("^a$", "b") then dirty[#dirty + 1] = "host.regex_is_match" end
  if suite.case == evil then dirty[#dirty + 1] = "Suite" end
  if tools.read_file().params.properties.path.type ~= "string" then dirty[#dirty + 1] = "tools schema" end
  if evalua.array({})[1] ~= nil then dirty[#dirty + 1] = "array metatable" end

  local writable = {}
  local function try(name, t, k, v)
    if (type(t) == "table" or type(t) == "userdata") and pcall(rawset, t, k, v) then writable[#writable + 1] = name end
  end
  try("string", string, "upper", evil)
  try("table", table, "concat", evil)
  try("math", math, "floor", evil)
  try("os", os, "time", evil)
  try("evalua", evalua, "suite", evil)
  try("evalua.check", check, "answer", evil)
  try("evalua.host", host, "regex_is_match", function() return true end)
  try("evalua.tools", tools, "read_file", evil)
  try("Suite via suite.__index", suite.__index, "case", evil)
  local _, shadow = pairs(string)
  try("string via pairs", shadow, "upper", evil)
  local _, hshadow = pairs(host)
  try("host via pairs", hshadow, "regex_is_match", function() return true end)
  local mt = getmetatable(evalua.array({}))
  try("array metatable", mt, "__index", function() return "POISONED" end)
  -- A kit's schema may be changed (it is the suite's own copy), but never for a later trial.
  pcall(function() tools.read_file().params.properties.path.type = "number" end)
  return "dirty:" .. table.concat(dirty, ",") .. " writable:" .. table.concat(writable, ",")
"#;

#[test]
fn shared_tables_refuse_rawset_and_nothing_reaches_a_later_trial() {
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 's', trials = 4 }}\n\
         suite:case {{ id = 'c', input = 'go', agent = evalua.agent.scripted(function(task, env)\n{POISONER}\nend),\n\
         expect = {{ function(t) return true end }} }}\n\
         suite:case {{ id = 'd', input = 'go', agent = evalua.agent.scripted(function(task, env)\n{POISONER}\nend),\n\
         expect = {{ function(t) return true end }} }}\nreturn suite\n"
    );
    let dir = project(&[("suite.lua", &suite)]);
    let (_, recs) = run_within(dir.path(), &["--jobs", "1"], &[], PATIENCE);
    assert_eq!(recs.len(), 8);
    for r in &recs {
        assert_eq!(r["answer"], "dirty: writable:", "{}#{}: {}", r["case"], r["trial"], r["answer"]);
    }
}

#[test]
fn agent_cannot_replace_the_checks_primitives() {
    let agent = r#"
  local host = require("evalua.host")
  pcall(rawset, host, "regex_is_match", function() return true end)
  pcall(rawset, host, "find_secrets", function() return evalua.array({}), evalua.array({}) end)
  local _, shadow = pairs(host)
  if type(shadow) == "table" then
    rawset(shadow, "regex_is_match", function() return true end)
    rawset(shadow, "find_secrets", function() return evalua.array({}), evalua.array({}) end)
  end
  return "wrong, and here is a key: sk-live-0123456789abcdef"
"#;
    let checks = "check.answer { matches = '^right$', name = 'right answer' },\n\
                  check.no_secrets { patterns = { 'sk-live-[0-9a-f]+' }, critical = true, name = 'no key' }";
    let dir = project(&[("suite.lua", &scripted_suite("", agent, checks))]);
    let (_, recs) = run_within(dir.path(), &[], &[], PATIENCE);
    let r = &recs[0];
    assert_eq!(check(r, "right answer")["passed"], false, "{r}");
    assert_eq!(check(r, "no key")["passed"], false, "{r}");
    assert_eq!(r["outcome"], "critical", "{r}");
}

#[test]
fn stashed_ctx_env_and_db_handles_die_when_their_phase_ends() {
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 's', sandbox = {{ schema = 'schema.sql' }} }}\n\
         local stash = {{}}\n\
         suite:tool {{ name = 'grab', effect = 'write', run = function(ctx, a) stash.ctx = ctx; stash.db = ctx.db; return {{}} end }}\n\
         local function refused(f) local ok = pcall(f); return not ok, {{ worked = ok }} end\n\
         suite:case {{ id = 'c', input = 'go',\n\
           agent = evalua.agent.scripted(function(task, env) stash.env = env; env.call('grab', {{}}); return 'done' end),\n\
           expect = {{\n\
             {{ name = 'ctx.db after the agent', run = function(t) return refused(function() stash.db:exec('INSERT INTO k VALUES (1)') end) end }},\n\
             {{ name = 'ctx.write_file after the agent', run = function(t) return refused(function() stash.ctx.write_file('x.txt', 'x') end) end }},\n\
             {{ name = 'ctx.send after the agent', run = function(t) return refused(function() stash.ctx.send('email', 'a@b', 'hi') end) end }},\n\
             {{ name = 'env.call after the agent', run = function(t) return refused(function() assert(stash.env.call('grab', {{}}) ~= nil) end) end }},\n\
             {{ name = 'final state untouched', run = function(t) return t.db:one('SELECT count(*) FROM k') == 0 and #t.outbox == 0 and t.files['x.txt'] == nil end }},\n\
           }} }}\nreturn suite\n"
    );
    let dir = project(&[("suite.lua", &suite), ("schema.sql", "CREATE TABLE k (x INTEGER);")]);
    let (_, recs) = run_within(dir.path(), &[], &[], PATIENCE);
    let r = &recs[0];
    for c in r["checks"].as_array().unwrap() {
        assert_eq!(c["passed"], true, "{}: {c}", c["name"]);
    }
    assert_eq!(r["calls"]["executed"], 1, "only the agent's own call ran: {r}");
}

// ---------------------------------------------------------------------------
// 3–5, 7. Processes in a sandbox.

fn plain_agent(script: &str) -> String {
    format!("evalua.agent.command {{ cmd = {{ 'sh', '-c', {script:?}, 'agent' }}, io = 'plain' }}")
}

#[test]
fn agent_cannot_read_the_harness_environ_cwd_or_command_line() {
    if !sandbox_available() {
        return;
    }
    let script = "for p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null | tr '\\0' '\\n'; \
                  readlink $p/cwd 2>/dev/null; done; cat /proc/$PPID/environ 2>/dev/null | tr '\\0' '\\n'; true";
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 's' }}\n\
         suite:case {{ id = 'c', input = 'go', agent = {}, expect = {{ function(t) return true end }} }}\nreturn suite\n",
        plain_agent(script)
    );
    let dir = project(&[("suite.lua", &suite)]);
    let env = [("OPENAI_API_KEY", "sk-harness-openai-0451"), ("ANTHROPIC_API_KEY", "sk-ant-harness-0451")];
    let (_, recs) = run_within(dir.path(), &[], &env, PATIENCE);
    let answer = recs[0]["answer"].as_str().unwrap().to_string();
    assert_eq!(recs[0]["ended"], "final", "{}", recs[0]);
    assert!(!answer.contains("sk-harness-openai-0451"), "the harness's OpenAI key leaked:\n{answer}");
    assert!(!answer.contains("sk-ant-harness-0451"), "the harness's Anthropic key leaked:\n{answer}");
    let cwd = dir.path().canonicalize().unwrap();
    assert!(!answer.contains(cwd.to_str().unwrap()), "the harness's cwd leaked:\n{answer}");
    assert!(!answer.contains("suite.lua"), "the harness's command line leaked:\n{answer}");
}

#[test]
fn agent_cannot_see_the_template_other_trials_or_the_suite_folder() {
    if !sandbox_available() {
        return;
    }
    // The agent is told where the suite lives and looks everywhere near its work dir.
    let script = r#"S="$1"; saw=""
cat "$S/hidden/test_secret.py" >/dev/null 2>&1 && saw="$saw suite-read"
echo TAMPERED >> "$S/hidden/test_secret.py" 2>/dev/null && saw="$saw suite-write"
P=$(readlink /proc/$PPID/cwd 2>/dev/null); [ -n "$P" ] && [ -e "$P/suite.lua" ] && saw="$saw harness-cwd"
me=$(realpath app.py)
for f in ../*/app.py ../../*/*/app.py /tmp/*/*/app.py; do
  [ -f "$f" ] || continue
  [ "$(realpath "$f")" = "$me" ] && continue
  echo TAMPERED >> "$f" 2>/dev/null && saw="$saw wrote:$f"
done
grep -q TAMPERED app.py && saw="$saw started-tampered"
sleep 0.5
echo "saw:$saw"
"#;
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 's', trials = 4, sandbox = {{ workdir = 'repo' }} }}\n\
         suite:case {{ id = 'c', input = evalua.path('.'), agent = {}, expect = {{ function(t) return true end }} }}\nreturn suite\n",
        plain_agent(script)
    );
    let dir =
        project(&[("suite.lua", &suite), ("repo/app.py", "print('hello')\n"), ("hidden/test_secret.py", "ORIGINAL\n")]);
    let (_, recs) = run_within(dir.path(), &["--jobs", "2"], &[], PATIENCE);
    assert_eq!(std::fs::read_to_string(dir.path().join("hidden/test_secret.py")).unwrap(), "ORIGINAL\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("repo/app.py")).unwrap(), "print('hello')\n");
    for r in &recs {
        assert_eq!(r["answer"], "saw:", "trial {}: {}", r["trial"], r["answer"]);
    }
}

#[test]
fn trial_cannot_find_another_trials_mcp_url_or_proxy_key() {
    if !sandbox_available() {
        return;
    }
    // The pattern does not match its own command line (grep's is visible to the agent: it is its own process).
    let script = "sleep 1.5; for p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null | tr '\\0' '\\n'; done \
                  | grep -oE 'EVALUA_MCP_UR[L]=http[^ ]+|evalua-proxy-[0-9a-f]+' | sort -u; true";
    let agent = format!(
        "evalua.agent.command {{ cmd = {{ 'sh', '-c', {script:?}, 'agent' }}, io = 'plain', tools = 'mcp', model_proxy = true }}"
    );
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 's', trials = 2 }}\n\
         suite:tool {{ name = 'noop', run = function(ctx, a) return {{}} end }}\n\
         suite:case {{ id = 'c', input = 'go', agent = {agent}, expect = {{ function(t) return true end }} }}\nreturn suite\n"
    );
    let dir = project(&[("suite.lua", &suite)]);
    let (_, recs) = run_within(dir.path(), &["--jobs", "2"], &[], PATIENCE);
    for r in &recs {
        let a = r["answer"].as_str().unwrap();
        let urls = a.lines().filter(|l| l.starts_with("EVALUA_MCP_URL=")).count();
        let keys = a.lines().filter(|l| l.starts_with("evalua-proxy-")).count();
        assert_eq!((urls, keys), (1, 1), "trial {} sees only its own credentials:\n{a}", r["trial"]);
    }
}

/// Processes on the host whose command line holds `token`.
fn host_processes_with(token: &str) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = std::fs::read(e.path().join("cmdline"))
            && String::from_utf8_lossy(&c).contains(token)
        {
            n += 1;
        }
    }
    n
}

#[test]
fn setsid_double_fork_daemons_do_not_outlive_the_trial() {
    if !sandbox_available() {
        return;
    }
    // The daemons would sleep for hours (longer than PATIENCE): gone means killed.
    let token_agent = format!("9931.{}", std::process::id());
    let token_exec = format!("9932.{}", std::process::id());
    let daemon = |t: &str| {
        format!(
            "setsid sh -c 'sleep {t} </dev/null >/dev/null 2>&1 &' </dev/null >/dev/null 2>&1; sleep 0.2; echo started"
        )
    };
    let suite = format!(
        "{HEAD}local tools = require('evalua.tools')\n\
         local suite = evalua.suite {{ name = 's' }}\n\
         tools.register(suite, {{ only = {{ 'run' }} }})\n\
         suite:case {{ id = 'agent', input = 'go', agent = {}, expect = {{ function(t) return true end }} }}\n\
         suite:case {{ id = 'exec', input = 'go', agent = evalua.agent.scripted(function(task, env)\n\
            local r = env.call('run', {{ cmd = {:?} }}); return r and r.stdout or 'no result' end),\n\
            expect = {{ function(t) return true end }} }}\nreturn suite\n",
        plain_agent(&daemon(&token_agent)),
        daemon(&token_exec)
    );
    let dir = project(&[("suite.lua", &suite)]);
    let (_, recs) = run_within(dir.path(), &[], &[], PATIENCE);
    for r in &recs {
        assert!(r["answer"].as_str().unwrap().contains("started"), "{r}");
    }
    // Killed with the trials' sandboxes; on a busy machine dying takes a moment.
    let left = || (host_processes_with(&token_agent), host_processes_with(&token_exec));
    eventually(|| left() == (0, 0));
    let left = left();
    // Clean up after a failing run.
    for t in [&token_agent, &token_exec] {
        let _ = Command::new("pkill").args(["-f", &format!("sleep {t}")]).status();
    }
    assert_eq!(left, (0, 0), "daemons (agent's, ctx.exec's) still running after the run");
}

// ---------------------------------------------------------------------------
// 6. C code sees the limits.

#[test]
fn lua_pattern_bomb_is_bounded() {
    let dir = project(&[(
        "suite.lua",
        &scripted_suite(
            "deadline_s = 2",
            "local ok, r = pcall(string.find, ('a'):rep(30000), '.-.-.-.-.-b')\nreturn tostring(ok) .. ' ' .. tostring(r)",
            "{ name = 'bomb', run = function(t) return (('a'):rep(30000):find('.-.-.-.-.-b')) == nil end }",
        ),
    )]);
    let (_, recs) = run_within(dir.path(), &[], &[], PATIENCE);
    let r = &recs[0];
    assert_eq!(r["outcome"], "grader_error", "the check could not finish: {r}");
    assert!(check(r, "bomb")["error"].as_str().is_some(), "{r}");
}

#[test]
fn recursive_sql_is_stopped_by_the_deadline_in_checks_prohibited_and_handlers() {
    let cte = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r";
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 's', budget = {{ deadline_s = 3 }}, sandbox = {{ schema = 'schema.sql' }} }}\n\
         suite:tool {{ name = 'query', run = function(ctx, a) return {{ n = ctx.db:one(a.sql) }} end }}\n\
         suite:case {{ id = 'c', input = 'go',\n\
           agent = evalua.agent.scripted(function(task, env) local r, status, err = env.call('query', {{ sql = {cte:?} }}); return status .. ': ' .. tostring(err) end),\n\
           expect = {{ check.sql({cte:?}, {{ equals = 1, name = 'cte check' }}) }},\n\
           prohibited = {{ {cte:?} }} }}\nreturn suite\n"
    );
    let dir = project(&[("suite.lua", &suite), ("schema.sql", "CREATE TABLE k (x INTEGER);")]);
    let (_, recs) = run_within(dir.path(), &[], &[], PATIENCE);
    let r = &recs[0];
    assert!(r["answer"].as_str().unwrap().starts_with("error"), "the handler's query was stopped: {r}");
    assert!(check(r, "cte check")["error"].as_str().is_some(), "{r}");
    assert!(check(r, &format!("prohibited: {cte}"))["error"].as_str().is_some(), "{r}");
}

// ---------------------------------------------------------------------------
// 8. SQLite writes no files.

#[test]
fn sqlite_attach_and_vacuum_into_write_no_files() {
    let dir = project(&[("schema.sql", "CREATE TABLE k (x INTEGER);")]);
    let p = |n: &str| dir.path().join(n).display().to_string();
    let (attached, vacuumed, from_check) = (p("attached.db"), p("vacuumed.db"), p("from_check.db"));
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 's', sandbox = {{ schema = 'schema.sql' }} }}\n\
         suite:tool {{ name = 'attach', effect = 'write', run = function(ctx, a)\n\
            ctx.db:exec(\"ATTACH '{attached}' AS a\"); ctx.db:exec('CREATE TABLE a.t (x)'); return {{}} end }}\n\
         suite:tool {{ name = 'vacuum', effect = 'write', run = function(ctx, a) ctx.db:exec(\"VACUUM INTO '{vacuumed}'\"); return {{}} end }}\n\
         suite:tool {{ name = 'extension', effect = 'write', run = function(ctx, a) return {{ r = ctx.db:one(\"SELECT load_extension('/nonexistent/ext')\") }} end }}\n\
         suite:case {{ id = 'c', input = 'go',\n\
           agent = evalua.agent.scripted(function(task, env) local s = {{}}\n\
             for _, n in ipairs({{ 'attach', 'vacuum', 'extension' }}) do local _, st = env.call(n, {{}}); s[#s + 1] = st end\n\
             return table.concat(s, ' ') end),\n\
           expect = {{ {{ name = 'attach from a check', run = function(t) return not pcall(function() t.db:all(\"ATTACH '{from_check}' AS c\") end) end }} }} }}\nreturn suite\n"
    );
    std::fs::write(dir.path().join("suite.lua"), suite).unwrap();
    let (_, recs) = run_within(dir.path(), &[], &[], PATIENCE);
    for f in [&attached, &vacuumed, &from_check] {
        assert!(!Path::new(f).exists(), "SQLite wrote {f}");
    }
    assert_eq!(recs[0]["answer"], "error error error", "{}", recs[0]);
    assert_eq!(check(&recs[0], "attach from a check")["passed"], true, "{}", recs[0]);
}

// ---------------------------------------------------------------------------
// 9. Path confinement that a race cannot get around.

/// The racer: `d` is a real folder and `l` a symlink to a folder outside the
/// work dir; a process of the racer's own exchanges the two names
/// (`renameat2(RENAME_EXCHANGE)`, one atomic step) as fast as it can while the
/// agent asks to write `d/f<i>`. What the test proves needs no particular
/// scheduling of the two:
/// - before the race, `d/before` (a real folder) is written and `d/static`
///   (the symlink, swapped in once) is refused: the tool works, and refuses
///   the plain escape;
/// - during the race, the racer counts its swaps and, for each call, whether a
///   swap completed between sending the call and reading its result (a call
///   the swap raced). It keeps calling until 200 calls were raced (at most
///   5000 calls), so the race is proven by counting, not inferred from how
///   many writes happened to go through (under load that can be none);
/// - the swapper checks every exchange (the call succeeded and `d` flipped
///   between folder and symlink): a filesystem without RENAME_EXCHANGE fails
///   the test instead of racing nothing.
/// It reports all of it as its final answer (JSON); the test reads the outside
/// folder for escapes.
const RACER: &str = r#"
import ctypes, json, mmap, os, sys
libc = ctypes.CDLL(None, use_errno=True)
start = json.loads(sys.stdin.readline())
outside = start["input"]
os.makedirs("d", exist_ok=True)
os.symlink(outside, "l")
n = 0
def write(path):
    global n
    n += 1
    call = {"type": "tool_call", "id": "c%d" % n, "name": "write_file", "arguments": {"path": path, "content": "x"}}
    print(json.dumps(call), flush=True)
    return json.loads(sys.stdin.readline()).get("status")
def exchange():
    if libc.renameat2(-100, b"d", -100, b"l", 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
        return ctypes.get_errno() or -1
    return 0
report = {"before": write("d/before")}
err = exchange()
report["d_is_link_after_one_swap"] = os.path.islink("d")
report["static"] = write("d/static")
err = err or exchange()
# The swapper is a process of its own (no lock shared with the caller, as a
# thread would share Python's); its counters live in shared memory:
# stop, swaps, seen as symlink, seen as folder, errno of a failed exchange,
# the swap after which d did not flip.
shared = mmap.mmap(-1, 64)
c = (ctypes.c_int64 * 6).from_buffer(shared)
c[4] = err
if err == 0 and os.fork() == 0:
    was_link = os.path.islink("d")
    while not c[0]:
        e = exchange()
        if e:
            c[4] = e
            break
        c[1] += 1
        is_link = os.path.islink("d")
        if is_link == was_link:
            c[5] = c[1]
            break
        c[2 if is_link else 3] += 1
        was_link = is_link
    os._exit(0)
calls = raced = 0
statuses = {}
while raced < 200 and calls < 5000 and c[4] == 0 and c[5] == 0:
    calls += 1
    before = c[1]
    s = write("d/f%d" % calls)
    statuses[s] = statuses.get(s, 0) + 1
    if c[1] > before:
        raced += 1
c[0] = 1
if err == 0:
    os.wait()
error = None
if c[4]:
    error = "renameat2: " + os.strerror(c[4])
elif c[5]:
    error = "d did not flip after swap %d" % c[5]
report.update(calls=calls, raced=raced, statuses=statuses, swaps=c[1], links=c[2], dirs=c[3], error=error)
print(json.dumps({"type": "final", "content": json.dumps(report)}), flush=True)
"#;

#[test]
fn write_file_cannot_be_raced_out_of_the_work_dir_with_a_symlink_swap() {
    let dir = project(&[("race.py", RACER)]);
    let outside = tempfile::tempdir().unwrap();
    // The deadline (240 s) and the kill (PATIENCE) are far above the need (1 to
    // 10 s, idle or beside stress-ng): a busy machine makes the race slower,
    // never the test red.
    let suite = format!(
        "{HEAD}local tools = require('evalua.tools')\n\
         local suite = evalua.suite {{ name = 's', budget = {{ deadline_s = 240, max_tool_calls = 5100 }} }}\n\
         tools.register(suite, {{ only = {{ 'write_file' }} }})\n\
         suite:case {{ id = 'c', input = {:?}, agent = evalua.agent.command {{ cmd = {{ 'python3', evalua.path('race.py') }} }},\n\
           expect = {{ function(t) return true end }} }}\nreturn suite\n",
        outside.path().display().to_string()
    );
    std::fs::write(dir.path().join("suite.lua"), suite).unwrap();
    let (_, recs) = run_within(dir.path(), &[], &[], PATIENCE);
    let r = &recs[0];
    assert_eq!(r["ended"], "final", "{r}");
    let escaped: Vec<_> = std::fs::read_dir(outside.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    let report: Value = serde_json::from_str(r["answer"].as_str().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {r}"));
    eprintln!("the race: {report}");
    assert!(escaped.is_empty(), "writes landed outside the work dir: {escaped:?}; {report}");
    // Not vacuous: the tool writes through a real folder and refuses the symlink.
    assert_eq!(report["before"], "ok", "write_file through the real folder: {report}");
    assert_eq!(report["d_is_link_after_one_swap"], true, "one exchange made d the symlink: {report}");
    assert_eq!(report["static"], "denied", "write_file through the symlink to outside: {report}");
    // The race really happened: every exchange succeeded and flipped d, and at
    // least 200 calls had a swap complete while they were in flight.
    assert_eq!(report["error"], Value::Null, "the swapping process failed: {report}");
    let n = |k: &str| report[k].as_u64().unwrap_or(0);
    assert!(n("raced") >= 200, "fewer than 200 of {} calls (at most 5000) were raced by a swap: {report}", n("calls"));
    assert!(n("links") > 0 && n("dirs") > 0, "the racer saw d as both a folder and a symlink: {report}");
    assert_eq!(n("swaps"), n("links") + n("dirs"), "{report}");
    let statuses: u64 = report["statuses"].as_object().map(|m| m.values().filter_map(Value::as_u64).sum()).unwrap_or(0);
    assert_eq!(statuses, n("calls"), "every raced call got a result: {report}");
    let calls = &r["calls"];
    let recorded: u64 = ["executed", "denied", "failed", "rejected"].iter().filter_map(|k| calls[k].as_u64()).sum();
    assert_eq!(recorded, n("calls") + 2, "every call was recorded: {r}");
}

// ---------------------------------------------------------------------------
// The sandbox is not optional: no sandbox, no run (unless opted out, loudly).

#[test]
fn without_a_sandbox_the_run_refuses_in_one_line_and_isolation_none_is_loud_and_recorded() {
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 's' }}\n\
         suite:case {{ id = 'c', input = 'go', agent = {}, expect = {{ function(t) return true end }} }}\nreturn suite\n",
        plain_agent("echo hi")
    );
    let dir = project(&[("suite.lua", &suite)]);
    let env = [("EVALUA_BWRAP", "/nonexistent/bwrap")];
    let (out, took) = bounded(dir.path(), &["run", "suite.lua", "--out", "out", "-q"], &env, PATIENCE);
    let out = out.unwrap_or_else(|| panic!("evalua run hung: killed after {took:?}"));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("sandbox cannot start") && err.contains("--isolation none"), "{err}");
    assert!(!dir.path().join("out/trials.jsonl").exists(), "no trial ran");

    let (out, recs) = run_within(dir.path(), &["--isolation", "none"], &env, PATIENCE);
    assert!(stderr(&out).contains("warning: --isolation none"), "{}", stderr(&out));
    assert_eq!(recs[0]["answer"].as_str().map(str::trim), Some("hi"), "{}", recs[0]);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["isolation"]["mode"], "none", "{manifest}");
}

#[test]
fn check_commands_run_in_the_same_sandbox() {
    if !sandbox_available() {
        return;
    }
    let dir = project(&[("hidden/secret_test.py", "SECRET\n")]);
    let suite_dir = dir.path().canonicalize().unwrap().display().to_string();
    // The command fails when it can read the harness's key or see the suite's folder.
    let cmd = format!(
        "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null; done | grep -q sk-harness-0451 && exit 7; \
         test -e '{suite_dir}/hidden/secret_test.py' && exit 8; exit 0"
    );
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 's' }}\n\
         suite:case {{ id = 'c', input = 'go', agent = evalua.agent.scripted(function() return 'ok' end),\n\
           expect = {{ check.command {{ cmd = {cmd:?}, name = 'confined' }} }} }}\nreturn suite\n"
    );
    std::fs::write(dir.path().join("suite.lua"), suite).unwrap();
    let (_, recs) = run_within(dir.path(), &[], &[("OPENAI_API_KEY", "sk-harness-0451")], PATIENCE);
    let c = check(&recs[0], "confined");
    assert_eq!(c["passed"], true, "{c}");
}
