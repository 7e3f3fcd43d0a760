//! Command agents with `tools = "mcp"` (an MCP server in the harness) and
//! `io = "plain"` (argv in, stdout out): MCP calls go through the same executor
//! as protocol calls, and are validated, denied and recorded the same way.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::*;

fn agent() -> String {
    repo().join("suites/agents/mcp_agent.py").to_str().unwrap().to_string()
}

/// A suite of three tools (one with a `requires` policy, one whose handler can
/// fail) and the given cases (id, extra case fields, agent).
fn suite(budget: &str, cases: &[(&str, &str, String)]) -> String {
    let mut s = format!(
        r#"local evalua = require("evalua")
local suite = evalua.suite {{ name = "mcp", trials = 1, budget = {{ deadline_s = 300, {budget} }} }}
suite:tool {{ name = "lookup_order", description = "Look up an order",
  params = {{ type = "object", properties = {{ order_id = {{ type = "string", pattern = "^P-[0-9]+$" }} }},
             required = {{ "order_id" }}, additionalProperties = false }},
  run = function(ctx, a)
    return {{ order_id = a.order_id, customer_id = 4821, units = 3, delivered = 2, unit_price = 19.9, postal_code = "28013" }}
  end }}
suite:tool {{ name = "verify_identity", description = "Verify the customer's identity",
  params = {{ type = "object", properties = {{ customer_id = {{ type = "integer" }}, postal_code = {{ type = "string" }} }},
             required = {{ "customer_id", "postal_code" }} }},
  run = function(ctx, a)
    if a.postal_code ~= "28013" then error("identity not verified") end
    return {{ verified = true }}
  end }}
suite:tool {{ name = "issue_refund", description = "Refund an amount", effect = "write", requires = {{ "verify_identity" }},
  params = {{ type = "object", properties = {{ order_id = {{ type = "string" }}, amount = {{ type = "number" }} }},
             required = {{ "order_id", "amount" }} }},
  run = function(ctx, a) return {{ refunded = a.amount }} end }}
suite:tool {{ name = "send_email", description = "Email a customer", effect = "external",
  params = {{ type = "object", properties = {{ customer_id = {{ type = "integer" }}, subject = {{ type = "string" }}, body = {{ type = "string" }} }},
             required = {{ "customer_id", "subject", "body" }} }},
  run = function(ctx, a) return {{ sent = true }} end }}
local graded = {{ name = "graded", run = function(t) return true end }}
"#
    );
    for (id, extra, agent) in cases {
        s.push_str(&format!(
            "suite:case {{ id = {id:?}, input = 'P-9930' {extra}, agent = {agent}, expect = {{ graded }} }}\n"
        ));
    }
    s.push_str("return suite\n");
    s
}

/// `evalua.agent.command` running mcp_agent.py with `args`, plus extra spec fields.
fn mcp_agent(args: &[&str], fields: &str) -> String {
    let mut argv = vec![format!("{:?}", agent())];
    argv.extend(args.iter().map(|a| format!("{a:?}")));
    format!("evalua.agent.command {{ cmd = {{ 'python3', {} }}{fields} }}", argv.join(", "))
}

fn run(dir: &Path, suite_text: &str) -> Vec<Value> {
    std::fs::write(dir.join("mcp.lua"), suite_text).unwrap();
    let out = evalua(dir, &["run", "mcp.lua", "--out", "out", "-q", "--jobs", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    trials(&dir.join("out"))
}

fn trace(dir: &Path, rec: &Value) -> Value {
    trace_of(&dir.join("out"), rec)
}

/// No process whose command line holds `tag` is still running (once the
/// killed ones are gone: on a busy machine dying takes a moment).
fn assert_none_left(tag: &str) {
    let left = || {
        let ps = std::process::Command::new("ps").args(["-eo", "stat,args"]).output().unwrap();
        let ps = String::from_utf8_lossy(&ps.stdout).into_owned();
        ps.lines().filter(|l| l.contains(tag) && !l.starts_with('Z')).map(str::to_string).collect::<Vec<_>>()
    };
    assert!(eventually(|| left().is_empty()), "processes of the trial still alive: {:?}", left());
}

fn tag(dir: &Path) -> String {
    format!("--tag-{}", dir.file_name().unwrap().to_str().unwrap())
}

#[test]
fn mcp_calls_are_validated_denied_and_recorded_like_protocol_calls() {
    let dir = project(&[]);
    let tag = tag(dir.path());
    let cases = [
        ("mcp", "", mcp_agent(&["probe", &tag], ", tools = 'mcp'")),
        ("protocol", "", mcp_agent(&["probe", &tag], "")),
    ];
    let recs = run(dir.path(), &suite("max_tool_calls = 6", &cases));
    let statuses = ["rejected", "rejected", "denied", "executed", "failed", "executed", "denied"];
    let mut traces = Vec::new();
    for id in ["mcp", "protocol"] {
        let rec = record(&recs, id, 1);
        assert_eq!(rec["ended"], "budget", "{id}: {rec}");
        assert!(rec["error"].as_str().unwrap().contains("max_tool_calls (6)"), "{id}: {rec}");
        let t = trace(dir.path(), rec);
        let calls = t["calls"].as_array().unwrap().clone();
        let got: Vec<&str> = calls.iter().map(|c| c["status"].as_str().unwrap()).collect();
        assert_eq!(got, statuses, "{id}: {calls:?}");
        assert!(calls[0]["error"].as_str().unwrap().contains("unknown tool 'delete_everything'"), "{id}");
        assert!(calls[1]["error"].as_str().unwrap().contains("invalid arguments for lookup_order"), "{id}");
        assert!(calls[2]["error"].as_str().unwrap().contains("policy: issue_refund requires"), "{id}");
        assert!(calls[4]["error"].as_str().unwrap().contains("identity not verified"), "{id}");
        assert!(calls[6]["error"].as_str().unwrap().contains("budget: max_tool_calls (6) reached"), "{id}");
        assert_eq!(calls[3]["result"]["customer_id"], 4821, "{id}: the executed call's result is recorded");
        traces.push(calls);
    }
    // Recorded identically, whichever way the calls came (ids and times aside).
    let strip = |calls: &[Value]| -> Vec<Value> {
        calls.iter().map(|c| json!([c["name"], c["args"], c["status"], c["effect"], c["result"], c["error"]])).collect()
    };
    assert_eq!(strip(&traces[0]), strip(&traces[1]));
    assert_none_left(&tag);
}

#[test]
fn the_mcp_client_sees_each_verdict_as_a_tool_result() {
    // A budget large enough for the probe to finish: its answer is what it saw.
    let dir = project(&[]);
    let cases = [("mcp", "", mcp_agent(&["probe"], ", tools = 'mcp'")), ("protocol", "", mcp_agent(&["probe"], ""))];
    let recs = run(dir.path(), &suite("max_tool_calls = 40", &cases));
    let mcp = record(&recs, "mcp", 1);
    assert_eq!(mcp["ended"], "final", "{mcp}");
    let answer = mcp["answer"].as_str().unwrap();
    assert!(
        answer.starts_with(
            "delete_everything:rejected; lookup_order:rejected; issue_refund:denied; lookup_order:ok; verify_identity:failed; lookup_order:ok"
        ),
        "{answer}"
    );
    assert_eq!(mcp["calls"]["executed"], 21);
    // The protocol's tool_result says `error` for both rejected and failed calls.
    let protocol = record(&recs, "protocol", 1)["answer"].as_str().unwrap().to_string();
    assert_eq!(answer.replace(":rejected", ":error").replace(":failed", ":error"), protocol, "the same verdicts");
}

#[test]
fn tools_list_offers_exactly_the_cases_tools() {
    let dir = project(&[]);
    let cases = [("subset", ", tools = { 'lookup_order', 'issue_refund' }", mcp_agent(&["list"], ", tools = 'mcp'"))];
    let recs = run(dir.path(), &suite("", &cases));
    let rec = record(&recs, "subset", 1);
    assert_eq!(rec["ended"], "final", "{rec}");
    let listed: Value = serde_json::from_str(rec["answer"].as_str().unwrap()).unwrap();
    let mut listed = listed.as_array().unwrap().clone();
    listed.sort_by_key(|t| t["name"].as_str().unwrap().to_string());
    let names: Vec<&str> = listed.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["issue_refund", "lookup_order"]);
    assert_eq!(listed[1]["description"], "Look up an order");
    assert_eq!(
        listed[1]["inputSchema"],
        json!({ "type": "object", "properties": { "order_id": { "type": "string", "pattern": "^P-[0-9]+$" } },
                "required": ["order_id"], "additionalProperties": false })
    );
    assert_eq!(listed[0]["inputSchema"]["required"], json!(["order_id", "amount"]));
}

#[test]
fn the_refunds_suite_passes_over_mcp_with_plain_io() {
    let out_dir = project(&[]);
    let o = bin()
        .current_dir(repo())
        .args(["run", "suites/refunds_mcp.lua", "--trials", "1", "--out", out_dir.path().join("out").to_str().unwrap()])
        .arg("-q")
        .output()
        .unwrap();
    // One trial per case leaves the pass^3 gate undefined: exit 1, not 2.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let recs = trials(&out_dir.path().join("out"));
    assert_eq!(recs.len(), 3);
    for rec in &recs {
        assert_eq!(rec["ended"], "final", "{rec}");
        assert_eq!(rec["outcome"], "accepted", "{rec}");
    }
    let partial = record(&recs, "reembolso_parcial_01", 1);
    assert_eq!(partial["answer"], "Refunded 19.90 EUR for order P-9930; customer notified.");
    assert_eq!(partial["calls"]["executed"], 4);
    assert!(check(partial, "exactly one refund")["passed"].as_bool().unwrap(), "{partial}");
}

#[test]
fn plain_io_takes_stdout_as_the_answer_and_a_failing_exit_as_a_crash() {
    let dir = project(&[]);
    let tag = tag(dir.path());
    let cases = [
        (
            "echo",
            "",
            r#"evalua.agent.command { cmd = { "/bin/sh", "-c", "printf 'got: %s\n' \"$0\"" }, io = "plain" }"#.into(),
        ),
        ("crash", "", mcp_agent(&["--plain", "crash", &tag], ", tools = 'mcp', io = 'plain'")),
        (
            "flood",
            "",
            r#"evalua.agent.command { cmd = { "/bin/sh", "-c", "head -c 3000000 /dev/zero" }, io = "plain" }"#.into(),
        ),
        ("refund", "", mcp_agent(&["--plain", &tag], ", tools = 'mcp', io = 'plain'")),
    ];
    let recs = run(dir.path(), &suite("", &cases));
    let echo = record(&recs, "echo", 1);
    assert_eq!(echo["ended"], "final", "{echo}");
    assert_eq!(echo["answer"], "got: P-9930", "the input is the last argument; stdout is the answer");

    let crash = record(&recs, "crash", 1);
    assert_eq!(crash["ended"], "crashed", "{crash}");
    assert!(crash["error"].as_str().unwrap().contains("exit status 3"), "{crash}");
    assert!(
        trace(dir.path(), crash)["stderr_tail"].as_str().unwrap().contains("crashing on purpose after listing 4 tools")
    );

    let flood = record(&recs, "flood", 1);
    assert_eq!(flood["ended"], "protocol_error", "{flood}");
    assert!(flood["error"].as_str().unwrap().contains("bytes on stdout"), "{flood}");

    let refund = record(&recs, "refund", 1);
    assert_eq!(refund["answer"], "Refunded 19.90 EUR for order P-9930; customer notified.", "{refund}");
    assert_eq!(refund["calls"]["executed"], 4);
    assert_none_left(&tag);
}

#[test]
fn the_mcp_server_listens_on_loopback_only() {
    // The agent reports the URL it was given and the kernel's listening sockets on that port.
    let script = r#"
import os, sys, urllib.parse
u = urllib.parse.urlparse(os.environ["EVALUA_MCP_URL"])
port = "%04X" % u.port
seen = []
for f in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        lines = open(f).read().splitlines()[1:]
    except OSError:
        continue
    for l in lines:
        local, state = l.split()[1], l.split()[3]
        if local.endswith(":" + port) and state == "0A":
            seen.append(local.split(":")[0])
print(u.scheme, u.hostname, ",".join(seen), u.path)
"#;
    // With JSON Lines io, `start` carries the same URL.
    let start = r#"
import json, os, sys
start = json.loads(sys.stdin.readline())
same = start.get("mcp_url") == os.environ["EVALUA_MCP_URL"]
print(json.dumps({"type": "final", "content": "same url" if same else "differs"}), flush=True)
"#;
    let dir = project(&[("probe.py", script), ("start.py", start)]);
    let spec = |file: &str, io: &str| {
        format!(
            "evalua.agent.command {{ cmd = {{ 'python3', {:?} }}, tools = 'mcp'{io} }}",
            dir.path().join(file).to_str().unwrap()
        )
    };
    let cases = [("where", "", spec("probe.py", ", io = 'plain'")), ("start", "", spec("start.py", ""))];
    let recs = run(dir.path(), &suite("", &cases));
    assert_eq!(record(&recs, "start", 1)["answer"], "same url");
    let rec = record(&recs, "where", 1);
    let answer = rec["answer"].as_str().unwrap();
    let parts: Vec<&str> = answer.split(' ').collect();
    assert_eq!(parts[..3], ["http", "127.0.0.1", "0100007F"], "listening on 127.0.0.1 only: {answer}");
    assert!(parts[3].len() > 20, "a per-trial path nobody can guess: {answer}");
}

#[test]
fn unknown_tools_or_io_values_are_suite_errors_with_file_and_line() {
    for (field, needle) in
        [("tools = 'grpc'", "tools = \"grpc\" is not one of"), ("io = 'xml'", "io = \"xml\" is not one of")]
    {
        let dir = project(&[]);
        let spec = format!("evalua.agent.command {{ cmd = {{ 'true' }}, {field} }}");
        let text = suite("", &[("bad", "", spec)]);
        let line = text.lines().position(|l| l.starts_with("suite:case")).unwrap() + 1;
        std::fs::write(dir.path().join("mcp.lua"), text).unwrap();
        let o = evalua(dir.path(), &["check", "mcp.lua"]);
        assert_user_error(&o, needle);
        assert!(stderr(&o).contains(&format!("mcp.lua:{line}:")), "names the line: {}", stderr(&o));
    }
}

/// An agent that mixes MCP calls and JSON Lines `tool_call`s (reusing the id
/// `c1`), then ends its MCP session with a DELETE and reports its status.
const MIXED_AGENT: &str = r#"
import json, os, sys, urllib.request
sys.dont_write_bytecode = True  # keep suites/agents free of __pycache__
sys.path.insert(0, os.environ["AGENTS_DIR"])
from mcp_agent import Mcp
from evalua_protocol import recv, send
start = recv()
m = Mcp(start["mcp_url"])
m.initialize()
m.call("lookup_order", {"order_id": "P-9930"})
send({"type": "tool_call", "id": "c1", "name": "lookup_order", "arguments": {"order_id": "P-1"}})
reply = recv()
m.call("lookup_order", {"order_id": "P-2"})
req = urllib.request.Request(m.url, method="DELETE",
    headers={"Mcp-Session-Id": m.session, "MCP-Protocol-Version": m.version})
with urllib.request.urlopen(req, timeout=10) as resp:
    status = resp.status
send({"type": "final", "content": json.dumps({"reply_id": reply["id"], "delete": status})})
"#;

#[test]
fn call_ids_are_unique_in_a_trial_and_the_session_delete_is_answered_with_200() {
    let dir = project(&[("mixed.py", MIXED_AGENT)]);
    let agents = repo().join("suites/agents");
    let spec = format!(
        "evalua.agent.command {{ cmd = {{ 'python3', {:?} }}, tools = 'mcp', env = {{ 'AGENTS_DIR' }} }}",
        dir.path().join("mixed.py").to_str().unwrap()
    );
    // The agent imports from AGENTS_DIR, which its sandbox must show it.
    let s = suite("", &[("mixed", "", spec)]).replacen(
        "evalua.suite { name = \"mcp\",",
        &format!("evalua.suite {{ name = \"mcp\", sandbox = {{ expose = {{ {:?} }} }},", agents.display().to_string()),
        1,
    );
    assert!(s.contains("expose"), "{s}");
    std::fs::write(dir.path().join("mcp.lua"), s).unwrap();
    let out = bin()
        .current_dir(dir.path())
        .env("AGENTS_DIR", &agents)
        .args(["run", "mcp.lua", "--out", "out", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recs = trials(&dir.path().join("out"));
    let rec = record(&recs, "mixed", 1);
    assert_eq!(rec["ended"], "final", "{rec}");
    let answer: Value = serde_json::from_str(rec["answer"].as_str().unwrap()).unwrap();
    assert_eq!(answer["reply_id"], "c1", "the agent's tool_result carries the id it sent");
    assert!(answer["delete"] == 200 || answer["delete"] == 204, "the session DELETE: {answer}");
    let t = trace(dir.path(), rec);
    let ids: Vec<&str> = t["calls"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 3);
    let unique: std::collections::BTreeSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), 3, "call ids repeat in one trace: {ids:?}");
    // The protocol call keeps the id it asked for when it is free; what it asked for is recorded anyway.
    let second = &t["calls"][1];
    assert_eq!(second["args"]["order_id"], "P-1");
    assert!(second["id"] == "c1" || second["requested_id"] == "c1", "{second}");
}
