//! ATIF (Harbor's Agent Trajectory Interchange Format) trajectories graded
//! from the command line: a Terminal-Bench style trajectory as Harbor's
//! claude-code agent writes it (tests/fixtures/atif/), with and without
//! re-executing its tool calls.

use serde_json::Value;

use crate::common::*;

/// A copy of tests/fixtures/atif in a temp dir (a test never writes into the repository).
fn fixture() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for f in ["terminal.lua", "hello-world.trajectory.json"] {
        std::fs::copy(repo().join("tests/fixtures/atif").join(f), tmp.path().join(f)).unwrap();
    }
    tmp
}

fn grade(dir: &std::path::Path, traces: &str, out: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["grade", "terminal.lua", "--traces", traces, "--out", out, "-q"];
    args.extend_from_slice(extra);
    let o = evalua(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    trials(&dir.join(out))
}

#[test]
fn an_atif_trajectory_is_graded_as_recorded_and_re_executed() {
    let tmp = fixture();
    let state_check = "hello.txt holds Hello, world!";

    // As recorded: matched to its case by its first user message; its calls,
    // answer and usage are the trajectory's; the work dir check cannot apply.
    let rec = grade(tmp.path(), "hello-world.trajectory.json", "as_recorded", &[]);
    assert_eq!(rec.len(), 1);
    let r = &rec[0];
    assert_eq!(r["case"], "hello-world", "{r}");
    assert_eq!(check(r, "tools in_order: Bash")["passed"], true, "{}", r["checks"]);
    let c = check(r, state_check);
    assert!(c["not_applicable"].is_string(), "{c}");
    assert_eq!(r["calls"]["requested"], 2, "{r}");
    assert_eq!(r["usage"]["input_tokens"], 13452 + 13618 + 13731);
    assert_eq!(r["usage"]["output_tokens"], 112 + 74 + 19);
    let t = trace_of(&tmp.path().join("as_recorded"), r);
    assert_eq!(t["answer"], "Created hello.txt containing 'Hello, world!'.");
    assert_eq!(t["calls"][1]["result"], "Hello, world!\n");
    assert_eq!(t["calls"][0]["args"]["command"], "echo 'Hello, world!' > hello.txt");

    // Re-executed: the commands run again in a fresh work dir, so the file check applies and passes.
    let rec = grade(tmp.path(), "hello-world.trajectory.json", "re", &["--reexecute"]);
    let r = &rec[0];
    assert_eq!(r["outcome"], "accepted", "{}", r["checks"]);
    assert_eq!(check(r, state_check)["passed"], true);
    let t = trace_of(&tmp.path().join("re"), r);
    assert!(t["calls"].as_array().unwrap().iter().all(|c| c["diverged"].is_null() || c["diverged"] == false), "{t}");

    // The same trajectory with the wrong text written: re-executed, it fails on
    // the file, and the `cat` that recorded the right text is marked diverged.
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("hello-world.trajectory.json")).unwrap())
            .unwrap();
    doc["steps"][1]["tool_calls"][0]["arguments"]["command"] = "echo 'Hello world' > hello.txt".into();
    std::fs::write(tmp.path().join("wrong.json"), doc.to_string()).unwrap();
    let rec = grade(tmp.path(), "wrong.json", "wrong", &["--reexecute"]);
    let r = &rec[0];
    assert_eq!(r["outcome"], "failed", "{}", r["checks"]);
    assert_eq!(check(r, state_check)["evidence"]["content"], "Hello world\n");
    let t = trace_of(&tmp.path().join("wrong"), r);
    assert_eq!(t["calls"][1]["diverged"], true, "{}", t["calls"][1]);
    assert_eq!(t["calls"][1]["recorded"], "Hello, world!\n", "{}", t["calls"][1]);
}

#[test]
fn a_bad_atif_document_is_a_one_line_error() {
    let tmp = fixture();
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("hello-world.trajectory.json")).unwrap())
            .unwrap();
    doc["steps"][1]["tool_calls"][0]["arguments"] = "not json".into();
    std::fs::write(tmp.path().join("bad.json"), doc.to_string()).unwrap();
    let o = evalua(tmp.path(), &["grade", "terminal.lua", "--traces", "bad.json", "--out", "bad", "-q"]);
    // Nothing gradable is left: exit 2, the reason named.
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("steps[1].tool_calls[0]: arguments are not JSON"), "{}", stderr(&o));
}
