//! The adversarial suite of issue 24, "isolation, round three": each test is
//! one attack that got through the sandbox of issue 13, reproduced as a
//! hostile agent (or a careless suite) made it. Each failed on the code as it
//! was before its fix, for the reason its comment gives; each must keep
//! failing if the fix goes away. `docs/design/isolation.md` names the test
//! that guards each promise.
//!
//! Tests that need the process sandbox (bubblewrap) skip with a loud message
//! when `bwrap` cannot run here, unless EVALUA_REQUIRE_BWRAP=1 (set by .ci/run).

use std::path::Path;
use std::process::{Output, Stdio};

use crate::common::*;
use crate::isolation::{HEAD, bounded, run_within, sandbox_available};

/// Every marker a test plants where an agent must never read it.
fn leaked<'a>(text: &str, markers: &[&'a str]) -> Vec<&'a str> {
    markers.iter().copied().filter(|m| text.contains(m)).collect()
}

// ---------------------------------------------------------------------------
// 1. Nothing an agent names is exposed; protected paths never are.

/// Before: the sandbox bound, read-only, the folder of every absolute path to
/// an existing file on a process's command line. For the `run` tool that
/// command line is the agent's: naming `$HOME/.bashrc` exposed the whole home
/// (`.gitconfig`, `.ssh/`) over the sandbox's empty one, naming a hidden test
/// exposed the hidden tests, naming the suite file exposed it, naming a file
/// of the work-dir template (in the suite's folder or in the run's scratch
/// folder) exposed the template, and so on for any file on the host.
#[test]
fn the_run_tool_exposes_nothing_the_agent_names() {
    if !sandbox_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join(".gitconfig"), "[user]\n  name = HOME-SECRET-24\n").unwrap();
    std::fs::write(home.path().join(".bashrc"), "# nothing here\n").unwrap();
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_ed25519"), "SSH-SECRET-24\n").unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("notes.txt"), "ELSEWHERE-SECRET-24\n").unwrap();
    let dir =
        project(&[("repo/app.py", "print('TEMPLATE-SECRET-24')\n"), ("hidden/test_secret.py", "HIDDEN-SECRET-24\n")]);
    let suite_dir = dir.path().canonicalize().unwrap().display().to_string();
    let home_dir = home.path().display().to_string();
    let agent = format!(
        r#"
  local function run(cmd)
    local r, status, err = env.call('run', {{ cmd = cmd }})
    if not r then return '(' .. tostring(status) .. ': ' .. tostring(err) .. ')' end
    return r.stdout .. r.stderr
  end
  local wd = run({{ 'pwd' }}):gsub('%s+$', '')
  run({{ 'rm', '-f', 'app.py' }})
  local out = {{ 'wd:' .. wd }}
  local function try(name, script, file) out[#out + 1] = name .. ': ' .. run({{ 'sh', '-c', script, 'sh', file }}) end
  try('home', 'd=$(dirname "$1"); cat "$d/.gitconfig" "$d/.ssh/id_ed25519" 2>/dev/null; ls -a "$d" 2>/dev/null', {home:?} .. '/.bashrc')
  try('hidden tests', 'cat "$1"', {suite:?} .. '/hidden/test_secret.py')
  try('suite file', 'cat "$1"', {suite:?} .. '/suite.lua')
  try('template in the suite', 'cat "$1"', {suite:?} .. '/repo/app.py')
  try('template in the scratch folder', 'cat "$1"', wd .. '/../template-1/app.py')
  try('elsewhere', 'cat "$1"', {elsewhere:?} .. '/notes.txt')
  return table.concat(out, '\n')
"#,
        home = home_dir,
        suite = suite_dir,
        elsewhere = elsewhere.path().display().to_string(),
    );
    let suite = format!(
        "-- SUITE-SECRET-24\n{HEAD}local tools = require('evalua.tools')\n\
         local suite = evalua.suite {{ name = 's', budget = {{ deadline_s = 60 }}, sandbox = {{ workdir = 'repo' }} }}\n\
         tools.register(suite, {{ only = {{ 'run' }} }})\n\
         suite:case {{ id = 'c', input = 'go', agent = evalua.agent.scripted(function(task, env)\n{agent}\nend),\n\
         expect = {{ function(t) return true end }} }}\nreturn suite\n"
    );
    std::fs::write(dir.path().join("suite.lua"), suite).unwrap();
    let (_, recs) = run_within(dir.path(), &[], &[("HOME", &home_dir)], PATIENCE);
    let answer = recs[0]["answer"].as_str().unwrap_or_default().to_string();
    assert!(answer.contains("wd:/"), "the run tool ran: {}", recs[0]);
    let markers = [
        "HOME-SECRET-24",
        "SSH-SECRET-24",
        ".ssh",
        "HIDDEN-SECRET-24",
        "SUITE-SECRET-24",
        "TEMPLATE-SECRET-24",
        "ELSEWHERE-SECRET-24",
    ];
    assert_eq!(leaked(&answer, &markers), Vec::<&str>::new(), "what the agent read by naming it:\n{answer}");
}

/// A check.tests suite whose hidden tests are `hidden/`, and its agent.
fn hidden_tests_suite(sandbox: &str, agent: &str) -> String {
    format!(
        "-- SUITE-SECRET-24\n{HEAD}local suite = evalua.suite {{ name = 's', budget = {{ deadline_s = 30 }},\n\
           sandbox = {{ workdir = 'repo', {sandbox} }} }}\n\
         suite:case {{ id = 'c', input = evalua.path('.'), agent = {agent},\n\
           expect = {{ check.tests {{ runner = {{ 'sh', '-c', 'test -f \"$0\"' }}, inject = 'hidden', fail_to_pass = {{ 'fixed.txt' }} }} }} }}\n\
         return suite\n"
    )
}

const HIDDEN_FILES: [(&str, &str); 2] =
    [("repo/app.py", "print('TEMPLATE-SECRET-24')\n"), ("hidden/test_secret.py", "HIDDEN-SECRET-24\n")];

/// Before: only the folders holding a protected one (the suite's folder, the
/// run's scratch folder) were kept from a command line, and `sandbox.expose`
/// refused only a folder holding the scratch folder. A suite could expose its
/// own hidden tests by mistake (the run went ahead, exit 1), and a folder
/// holding them exposed them along with the rest.
#[test]
fn a_protected_path_is_never_exposed_whoever_names_it() {
    if !sandbox_available() {
        return;
    }
    // The suite exposes its hidden tests: a one-line error, no trial runs.
    let dir = project(&HIDDEN_FILES);
    let agent = "evalua.agent.command { cmd = { 'true' }, io = 'plain' }";
    std::fs::write(dir.path().join("suite.lua"), hidden_tests_suite("expose = { 'hidden' }", agent)).unwrap();
    let (out, took) = bounded(dir.path(), &["run", "suite.lua", "--out", "out", "-q"], &[], PATIENCE);
    let out = out.unwrap_or_else(|| panic!("evalua run hung: killed after {took:?}"));
    assert_user_error(&out, "hidden");
    assert!(!dir.path().join("out/trials.jsonl").exists(), "no trial ran");

    let _ = std::fs::remove_dir_all(dir.path().join("out"));
    // The suite exposes its whole folder: the agent reads its helpers, never
    // the hidden tests, the suite file or the work-dir template.
    let script = r#"cat "$1/helper.txt" "$1/hidden/test_secret.py" "$1/suite.lua" "$1/repo/app.py" 2>/dev/null; true"#;
    let agent = format!("evalua.agent.command {{ cmd = {{ 'sh', '-c', {script:?}, 'agent' }}, io = 'plain' }}");
    std::fs::write(dir.path().join("helper.txt"), "HELPER-24\n").unwrap();
    std::fs::write(dir.path().join("suite.lua"), hidden_tests_suite("expose = { '.' }", &agent)).unwrap();
    let (_, recs) = run_within(dir.path(), &[], &[], PATIENCE);
    let answer = recs[0]["answer"].as_str().unwrap_or_default();
    assert!(answer.contains("HELPER-24"), "the exposed folder is there: {}", recs[0]);
    let markers = ["HIDDEN-SECRET-24", "SUITE-SECRET-24", "TEMPLATE-SECRET-24"];
    assert_eq!(leaked(answer, &markers), Vec::<&str>::new(), "read through an exposed folder:\n{answer}");

    // The agent's own command line names a hidden test: refused, not exposed.
    // `evalua check` refuses it, so `evalua run` does too, before any trial
    // (issue 43 item 9; it used to be each trial's infra_error).
    let agent = "evalua.agent.command { cmd = { 'sh', '-c', 'cat \"$1\"', 'agent', evalua.path('hidden/test_secret.py') }, io = 'plain' }";
    std::fs::write(dir.path().join("suite.lua"), hidden_tests_suite("", agent)).unwrap();
    let _ = std::fs::remove_dir_all(dir.path().join("out"));
    let (out, took) = bounded(dir.path(), &["run", "suite.lua", "--out", "out", "-q"], &[], PATIENCE);
    let out = out.unwrap_or_else(|| panic!("evalua run hung: killed after {took:?}"));
    assert_user_error(&out, "it is inside a protected path");
    assert_eq!(leaked(&(stdout(&out) + &stderr(&out)), &["HIDDEN-SECRET-24"]), Vec::<&str>::new());
    assert!(!dir.path().join("out/trials.jsonl").exists(), "no trial ran");
}

// ---------------------------------------------------------------------------
// 2. Only fds 0–2 reach a child.

/// Start `evalua run` with `secret` open on fd 7 (as `evalua run suite.lua 7<secret`).
fn run_with_fd7(dir: &Path, secret: &Path, extra: &[&str]) -> Output {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let file = std::fs::File::open(secret).unwrap();
    let fd = file.as_raw_fd();
    let mut c = bin();
    c.current_dir(dir).args(["run", "suite.lua", "--out", "out", "-q"]).args(extra);
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: dup2 is async-signal-safe; it puts the test's file on fd 7 of
    // the child (without close-on-exec), as a shell's `7<file` does.
    unsafe {
        c.pre_exec(move || if libc::dup2(fd, 7) < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
    }
    let out = c.output().unwrap();
    drop(file);
    out
}

/// Before: the process runner left evalua's own inherited descriptors open
/// in every child, sandboxed or not (bubblewrap passes them on): started as
/// `evalua run suite.lua 7<secret.txt`, the agent, its `setup`, and the `run`
/// tool's commands each read the secret through `/proc/self/fd/7`.
#[test]
fn inherited_file_descriptors_never_reach_a_child() {
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "FD-SECRET-24\n").unwrap();
    // Each process lists its open descriptors and reads fd 7.
    // (`test -e` opens nothing itself, unlike ls, a glob or a `$(…)`.)
    let probe = "printf 'open:'; n=0; while [ $n -lt 1024 ]; do [ -e /proc/$$/fd/$n ] && printf ' %s' $n; n=$((n+1)); done; \
                 echo; cat /proc/self/fd/7 2>/dev/null; true";
    let suite = format!(
        "{HEAD}local tools = require('evalua.tools')\n\
         local suite = evalua.suite {{ name = 's', budget = {{ deadline_s = 30 }} }}\n\
         tools.register(suite, {{ only = {{ 'run' }} }})\n\
         suite:case {{ id = 'agent', input = 'go', agent = evalua.agent.command {{ cmd = {{ 'sh', '-c', {probe:?}, 'agent' }}, io = 'plain',\n\
            setup = {{ 'sh', '-c', 'cat /proc/self/fd/7 > setup.txt 2>/dev/null; true' }} }},\n\
            expect = {{ {{ name = 'setup', run = function(t) return t.files['setup.txt'] == '', {{ read = t.files['setup.txt'] }} end }} }} }}\n\
         suite:case {{ id = 'exec', input = 'go', agent = evalua.agent.scripted(function(task, env)\n\
            local r = env.call('run', {{ cmd = {{ 'sh', '-c', {probe:?} }} }}); return r and r.stdout or 'no result' end),\n\
            expect = {{ function(t) return true end }} }}\nreturn suite\n"
    );
    let dir = project(&[("suite.lua", &suite)]);
    let mut modes: Vec<&[&str]> = vec![&["--isolation", "none"]];
    if sandbox_available() {
        modes.push(&[]);
    }
    for extra in modes {
        let _ = std::fs::remove_dir_all(dir.path().join("out"));
        let out = run_with_fd7(dir.path(), secret.path(), extra);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{extra:?}: {}", stderr(&out));
        for r in trials(&dir.path().join("out")) {
            let answer = r["answer"].as_str().unwrap_or_default();
            assert!(!answer.contains("FD-SECRET-24"), "{extra:?} {}: read fd 7:\n{answer}", r["case"]);
            let fds = answer.lines().next().unwrap_or_default().trim();
            assert_eq!(fds, "open: 0 1 2", "{extra:?} {}: open descriptors\n{r}", r["case"]);
            if r["case"] == "agent" {
                assert_eq!(check(&r, "setup")["passed"], true, "{extra:?}: setup read fd 7: {r}");
            }
        }
    }
}

/// The relay that puts a sandboxed process's pipes back on 0 and 1 is
/// evalua's own static program (src/process/relay.c), not a shell: a
/// dynamically linked `sh` cost about a millisecond per sandbox (issue 24's
/// measure). The agent finds it executable and read-only, cannot replace it,
/// and still gets its program looked up on PATH (`sh`, `cat` here) with only
/// descriptors 0–2 open (see the test above).
#[test]
fn the_sandboxs_relay_is_evaluas_static_program_and_read_only() {
    if !sandbox_available() {
        return;
    }
    let probe = "stat -c 'mode %a' /.evalua-relay; \
                 (echo x > /.evalua-relay) 2>&1 | grep -o 'Read-only file system'; \
                 head -c 4 /.evalua-relay | od -An -c | tr -d ' '; echo done | cat";
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 's', budget = {{ deadline_s = 30 }} }}\n\
         suite:case {{ id = 'c', input = 'go', agent = evalua.agent.command {{ cmd = {{ 'sh', '-c', {probe:?} }}, io = 'plain' }},\n\
            expect = {{ function(t) return true end }} }}\nreturn suite\n"
    );
    let dir = project(&[("suite.lua", &suite)]);
    let (_, recs) = run_within(dir.path(), &[], &[], std::time::Duration::from_secs(60));
    let r = &recs[0];
    let answer: Vec<&str> = r["answer"].as_str().unwrap_or_default().lines().collect();
    assert_eq!(answer, ["mode 555", "Read-only file system", "177ELF", "done"], "{r}");
}

// ---------------------------------------------------------------------------
// 4. No C function the Lua sandbox offers runs unbounded.

/// Before: `string.rep` with an empty result ran its C loop 2^53 times (a
/// `memcpy` of nothing each), where the instruction hook never fires: at a
/// suite's top level, `evalua check` was still running after 60 s although
/// loading has a 20 s limit.
#[test]
fn string_rep_of_nothing_at_the_top_of_a_suite_cannot_hang_loading() {
    let dir = project(&[(
        "suite.lua",
        &format!(
            "{HEAD}local s = string.rep('', 2^53) .. ('x'):rep(2^53 // 2^53) .. string.rep('', 2^40, '')\n\
             assert(s == 'x')\nlocal suite = evalua.suite {{ name = 's' }}\n\
             suite:case {{ id = 'c', input = 'go', agent = evalua.agent.scripted(function() return 'ok' end), expect = {{ function(t) return true end }} }}\n\
             return suite\n"
        ),
    )]);
    let (out, took) = bounded(dir.path(), &["check", "suite.lua"], &[], PATIENCE);
    let out = out.unwrap_or_else(|| panic!("evalua check hung: killed after {took:?}"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Before: `table.insert(t, 1, v)` and `table.remove(t, 1)` shift every
/// element up to `#t` in C; with a `__len` that says 2^62 they spun past the
/// check's 10 s limit until the watchdog abandoned the worker (an
/// `infra_error`), and the abandoned thread kept a core busy until the run
/// exited. A check's string.rep of nothing did the same.
#[test]
fn c_loops_in_a_check_are_stopped_by_its_limit() {
    let checks = "{ name = 'insert', run = function(t)\n\
                    table.insert(setmetatable({}, { __len = function() return 2^62 end }), 1, 'x') return true end },\n\
                  { name = 'remove', run = function(t)\n\
                    table.remove(setmetatable({}, { __len = function() return 2^62 end }), 1) return true end },\n\
                  { name = 'rep', run = function(t) return string.rep('', 2^53) == '' end },\n\
                  { name = 'still a table library', run = function(t)\n\
                    local a = { 1, 2, 3 } table.insert(a, 1, 0) table.insert(a, 4) local r = table.remove(a, 2)\n\
                    local ok, err = pcall(table.insert, a, 9, 1)\n\
                    return r == 1 and table.concat(a, ',') == '0,2,3,4' and table.remove(a) == 4 and not ok\n\
                      and err:find('position out of bounds', 1, true) ~= nil, { err = err } end }";
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 's', trials = 1 }}\n\
         suite:case {{ id = 'c', input = 'go', agent = evalua.agent.scripted(function() return 'ok' end),\n\
         expect = {{ {checks} }} }}\nreturn suite\n"
    );
    let dir = project(&[("suite.lua", &suite)]);
    let (_, recs) = run_within(dir.path(), &[], &[], PATIENCE);
    let r = &recs[0];
    assert_ne!(r["outcome"], "infra_error", "a worker was abandoned: {r}");
    for name in ["insert", "remove"] {
        let err = check(r, name)["error"].as_str().unwrap_or_default().to_string();
        assert!(err.contains("limit"), "{name}: stopped by the check's limit: {r}");
    }
    assert_eq!(check(r, "rep")["passed"], true, "{r}");
    assert_eq!(check(r, "still a table library")["passed"], true, "{r}");
}

// ---------------------------------------------------------------------------
// 5. An agent that closes its stdout has crashed.

/// Before: both bubblewrap processes (the one outside and the sandbox's pid 1)
/// kept the agent's stdout pipe open, so an agent that closed its stdout and
/// kept running was never seen to end its stream: the trial waited for its
/// deadline and ended `deadline` (with `--isolation none`, `crashed` at once).
/// Here the deadline is an hour: on the old code the run hangs until the
/// test gives up after PATIENCE.
#[test]
fn an_agent_that_closes_stdout_has_crashed() {
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 's', budget = {{ deadline_s = 3600 }} }}\n\
         suite:case {{ id = 'c', input = 'go',\n\
           agent = evalua.agent.command {{ cmd = {{ 'sh', '-c', 'read -r line; exec >&-; sleep 3600', 'agent' }} }},\n\
           expect = {{ function(t) return true end }} }}\nreturn suite\n"
    );
    let dir = project(&[("suite.lua", &suite)]);
    let mut modes: Vec<&[&str]> = vec![&["--isolation", "none"]];
    if sandbox_available() {
        modes.push(&[]);
    }
    for extra in modes {
        let _ = std::fs::remove_dir_all(dir.path().join("out"));
        let (_, recs) = run_within(dir.path(), extra, &[], PATIENCE);
        assert_eq!(recs[0]["ended"], "crashed", "{extra:?}: {}", recs[0]);
    }
}

// ---------------------------------------------------------------------------
// 6. Smaller holes.

/// Before: `evalua merge` compared the parts' suite hash, seed, cases and
/// gates, but not the suite they name: a part whose manifest named another
/// suite was merged into the run (exit 0).
#[test]
fn merge_refuses_a_part_of_another_suite() {
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 'merged', trials = 2, sandbox = {{ clock = '2026-11-03T10:00:00Z' }} }}\n\
         for i = 1, 4 do suite:case {{ id = 'c' .. i, input = 'go', agent = evalua.agent.scripted(function() return 'ok' end),\n\
           expect = {{ function(t) return true end }} }} end\nreturn suite\n"
    );
    let dir = project(&[("suite.lua", &suite)]);
    let d = dir.path();
    for i in 1..=2 {
        let o =
            evalua(d, &["run", "suite.lua", "--out", &format!("p{i}"), "-q", "--partition", &format!("hash:{i}/2")]);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    }
    let manifest = d.join("p2/manifest.json");
    let mut m = json(&manifest);
    m["suite"]["name"] = "another_suite".into();
    std::fs::write(&manifest, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    assert_user_error(&evalua(d, &["merge", "p1", "p2", "--out", "m"]), "suite");
    assert!(!d.join("m").exists());
}

/// Before: an error object with its own `__tostring`, and `error("msg", 0)`,
/// raised at a suite's top level, reached the command line as the bare
/// message: `error: custom failure`, naming no place (SPEC §2 wants
/// `file:line` where there is one).
#[test]
fn a_suites_error_without_a_place_still_names_its_line() {
    let cases = [
        ("error(setmetatable({}, { __tostring = function() return 'custom failure' end }))", "custom failure"),
        ("error('bare message', 0)", "bare message"),
        ("local ok = pcall(error, 'caught', 0)\nerror('after a caught one', 0)", "after a caught one"),
    ];
    for (raise, msg) in cases {
        let dir =
            project(&[("suite.lua", &format!("{HEAD}local x = 1\n{raise}\nreturn evalua.suite {{ name = 's' }}\n"))]);
        let line = 4 + raise.lines().count() - 1;
        assert_user_error(&evalua(dir.path(), &["check", "suite.lua"]), &format!("suite.lua:{line}: {msg}"));
    }
    // A message that names its place keeps it, once.
    let dir =
        project(&[("suite.lua", &format!("{HEAD}error('with a place')\nreturn evalua.suite {{ name = 's' }}\n"))]);
    let o = evalua(dir.path(), &["check", "suite.lua"]);
    assert_user_error(&o, "suite.lua:3: with a place");
    assert_eq!(stderr(&o).matches("suite.lua:3").count(), 1, "{}", stderr(&o));
}

/// Before: a tool handler had its own 10 s whatever was left of the trial: a
/// command agent's tool ran a runaway SQL query for 10 s under an 8 s trial
/// deadline, the agent then answered, and the trial ended `final`, accepted.
#[test]
fn a_tool_handler_never_runs_past_the_trials_deadline() {
    let cte = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r";
    let agent = r#"read -r start; echo '{"type":"tool_call","id":"q","name":"query","arguments":{}}'; read -r result; echo '{"type":"final","content":"done"}'"#;
    let suite = format!(
        "{HEAD}local suite = evalua.suite {{ name = 's', budget = {{ deadline_s = 8 }}, sandbox = {{ schema = 'schema.sql' }} }}\n\
         suite:tool {{ name = 'query', run = function(ctx, a) return {{ n = ctx.db:one({cte:?}) }} end }}\n\
         suite:case {{ id = 'c', input = 'go', agent = evalua.agent.command {{ cmd = {{ 'sh', '-c', {agent:?} }} }},\n\
           expect = {{ function(t) return true end }} }}\nreturn suite\n"
    );
    let dir = project(&[("suite.lua", &suite), ("schema.sql", "CREATE TABLE k (x INTEGER);")]);
    let (_, recs) = run_within(dir.path(), &["--isolation", "none"], &[], PATIENCE);
    let r = &recs[0];
    assert_eq!(r["ended"], "deadline", "{r}");
    assert_eq!(r["calls"]["failed"], 1, "the query was stopped: {r}");
}

// ---------------------------------------------------------------------------
// 3. A file in the work dir is never read whole.

/// Every file under `dir`: the disk it takes (allocated blocks, not apparent size).
fn disk_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.blocks() * 512;
            }
        }
    }
    total
}

/// Before: each changed file of a trial's work dir was read whole to diff
/// it, read whole to hash it, copied whole into the run dir and into each
/// check's copy of the tree: an agent's `truncate -s 1G big.bin` (a sparse
/// file: no disk) took evalua past a GiB of memory and wrote a GiB into the
/// run dir and another into each check's copy.
#[test]
fn a_sparse_file_in_the_work_dir_is_never_read_whole() {
    if !sandbox_available() {
        return;
    }
    let make =
        "truncate -s 1G big.bin && printf small > small.txt && head -c 2097152 /dev/zero | tr '\\0' x > two_mb.txt";
    let suite = format!(
        "{HEAD}local tools = require('evalua.tools')\n\
         local suite = evalua.suite {{ name = 's', sandbox = {{ max_file_mb = 1 }} }}\n\
         tools.register(suite, {{ only = {{ 'run' }} }})\n\
         suite:case {{ id = 'c', input = 'go', agent = evalua.agent.scripted(function(task, env)\n\
            local r = env.call('run', {{ cmd = {make:?} }}); return r and tostring(r.exit_code) or 'no result' end),\n\
         expect = {{\n\
           check.command {{ name = 'a check sees the file', cmd = 'test $(stat -c %s big.bin) = 1073741824' }},\n\
           check.command {{ name = 'and so does the next', cmd = 'test $(stat -c %s big.bin) = 1073741824' }},\n\
           {{ name = 't.files refuses it', run = function(t)\n\
             local ok, err = pcall(function() return t.files['big.bin'] end)\n\
             return not ok and tostring(err):find('max_file_mb', 1, true) ~= nil and t.files['small.txt'] == 'small', {{ err = tostring(err) }} end }},\n\
           {{ name = 't.diff lists it', run = function(t)\n\
             return #t.diff.files == 3 and t.diff.text:find('left out', 1, true) ~= nil, {{ text = t.diff.text }} end }},\n\
         }} }}\nreturn suite\n"
    );
    let dir = project(&[("suite.lua", &suite)]);
    let mut child = bin()
        .current_dir(dir.path())
        .args(["run", "suite.lua", "--out", "out", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || std::io::read_to_string(err).unwrap_or_default());
    // wait4: the run's own peak memory and the bytes it wrote.
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: wait4 writes into the two locals; the pid is our child's.
    let waited = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(waited, child.id() as i32);
    let err = err.join().unwrap();
    assert!(libc::WIFEXITED(status) && matches!(libc::WEXITSTATUS(status), 0 | 1), "{status}: {err}");
    let recs = trials(&dir.path().join("out"));
    let r = &recs[0];
    assert_eq!(r["answer"], "0", "the agent made its files: {r}");
    for c in ["a check sees the file", "and so does the next", "t.files refuses it", "t.diff lists it"] {
        assert_eq!(check(r, c)["passed"], true, "{c}: {r}");
    }
    let peak_mib = usage.ru_maxrss / 1024;
    assert!(peak_mib < 512, "evalua's peak memory was {peak_mib} MiB for a 1 GiB sparse file");
    let written_mib = usage.ru_oublock * 512 >> 20;
    assert!(written_mib < 256, "evalua wrote {written_mib} MiB for a 1 GiB sparse file");
    let run_dir_mib = disk_bytes(&dir.path().join("out")) >> 20;
    assert!(run_dir_mib < 64, "the run dir takes {run_dir_mib} MiB");
    let state = &trace_of(&dir.path().join("out"), r)["state"];
    let file = |p: &str| {
        state["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == p)
            .cloned()
            .unwrap_or_else(|| panic!("{p}: {state}"))
    };
    assert_eq!(file("big.bin"), serde_json::json!({ "path": "big.bin", "size": 1073741824u64, "skipped": true }));
    assert_eq!(file("two_mb.txt"), serde_json::json!({ "path": "two_mb.txt", "size": 2097152, "skipped": true }));
    assert!(file("small.txt")["sha256"].is_string(), "{state}");
}
