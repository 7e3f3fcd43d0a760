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
