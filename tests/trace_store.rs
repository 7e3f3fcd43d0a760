//! The run dir's trace store: every trace one line of traces/traces.jsonl,
//! found through traces/index.jsonl; `evalua show` prints one; run dirs of
//! the earlier layout (one file per trial) are still read.

use std::path::Path;

use serde_json::Value;

use crate::common::*;

const SUITE: &str = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "store", trials = 3,
  agent = evalua.agent.scripted(function(task, env)
    local r = env.call("echo", { text = task.input })
    print("agent ran for " .. task.input)
    return "said " .. r.text
  end) }
suite:tool { name = "echo", params = { type = "object", properties = { text = { type = "string" } } },
  run = function(ctx, args) return { text = args.text } end }
for i = 1, 7 do
  suite:case { id = "c" .. i, input = "hello " .. i,
    expect = { check.answer { contains = (i == 3) and "nope" or "said" } } }
end
return suite
"#;

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The pack's traces with their timings blanked.
fn pack_without_timings(run: &Path) -> String {
    let re = regex::Regex::new(r#""(wall_ms|started_ms|ended_ms|started_at)":("[^"]*"|[0-9.eE+-]+)"#).unwrap();
    re.replace_all(&std::fs::read_to_string(run.join("traces/traces.jsonl")).unwrap(), "\"$1\":0").into_owned()
}

#[test]
fn traces_are_packed_in_plan_order_with_an_index() {
    let dir = project(&[("s.lua", SUITE)]);
    let d = dir.path();
    let o = evalua(d, &["run", "s.lua", "--out", "j2", "-q", "--jobs", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = d.join("j2");
    let files: Vec<String> = std::fs::read_dir(run.join("traces"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(sorted, vec!["index.jsonl", "traces.jsonl"], "no file per trial");
    let recs = trials(&run);
    let traces = lines(&run.join("traces/traces.jsonl"));
    let index = lines(&run.join("traces/index.jsonl"));
    assert_eq!((recs.len(), traces.len(), index.len()), (21, 21, 21));
    let pack = std::fs::read(run.join("traces/traces.jsonl")).unwrap();
    for ((rec, trace), entry) in recs.iter().zip(&traces).zip(&index) {
        assert_eq!(rec["trace"], "traces/traces.jsonl");
        // Plan order, and each index line points at its trace's bytes.
        assert_eq!((&trace["case"], &trace["trial"]), (&rec["case"], &rec["trial"]));
        assert_eq!((&entry["case"], &entry["trial"]), (&rec["case"], &rec["trial"]));
        let (off, len) = (entry["offset"].as_u64().unwrap() as usize, entry["length"].as_u64().unwrap() as usize);
        let at: Value = serde_json::from_slice(&pack[off..off + len]).unwrap();
        assert_eq!(&at, trace);
    }
    assert_eq!(traces[0]["log"][0], "agent ran for hello 1");

    // The same seed gives the same pack whatever --jobs is.
    let o = evalua(d, &["run", "s.lua", "--out", "j1", "-q", "--jobs", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(pack_without_timings(&d.join("j1")), pack_without_timings(&run));

    // The report links each shown trace to its line of the pack.
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    let line = recs.iter().position(|r| r["case"] == "c3" && r["trial"] == 1).unwrap() + 1;
    assert!(md.contains(&format!("[failed](traces/traces.jsonl#L{line})")), "{md}");
}

#[test]
fn show_prints_one_trace() {
    let dir = project(&[("s.lua", SUITE)]);
    let d = dir.path();
    run_suite(d, "s.lua", &["--jobs", "2"]);
    let o = evalua(d, &["show", "out", "c3", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    for needle in [
        "c3 · trial 2",
        "failed (ended: final)",
        "hello 3",
        "echo {\"text\":\"hello 3\"} → executed",
        "said hello 3",
        "FAIL",
    ] {
        assert!(text.contains(needle), "{needle:?} in:\n{text}");
    }
    let o = evalua(d, &["show", "out", "c5", "1", "--json"]);
    let t: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (t["case"].as_str(), t["trial"].as_u64(), t["answer"].as_str()),
        (Some("c5"), Some(1), Some("said hello 5"))
    );
    assert_user_error(&evalua(d, &["show", "out", "c9", "1"]), "no trace of case 'c9' trial 1");
    assert_user_error(&evalua(d, &["show", "nowhere", "c1", "1"]), "not a run dir");

    // A run stopped half-way through an append leaves a torn last line: the
    // traces before it still read.
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(d.join("out/traces/traces.jsonl")).unwrap();
    f.write_all(b"{\"case\":\"c1\",\"tri").unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(d.join("out/traces/index.jsonl")).unwrap();
    f.write_all(b"{\"case\":\"c1\",\"trial\":9,\"off").unwrap();
    let o = evalua(d, &["show", "out", "c7", "3", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // `evalua report` re-renders from the store.
    let o = evalua(d, &["report", "out"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn run_dirs_of_the_earlier_layout_still_read() {
    use crate::synth::{self, Synth};
    let dir = project(&[]);
    synth::write(&dir.path().join("old"), &Synth::new(&[("a", "af")]));
    let o = evalua(dir.path(), &["show", "old", "a", "2", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!((t["case"].as_str(), t["trial"].as_u64()), (Some("a"), Some(2)));
    let o = evalua(dir.path(), &["report", "old"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let md = std::fs::read_to_string(dir.path().join("old/report.md")).unwrap();
    assert!(md.contains("[failed](traces/a.2.json)"), "{md}");
}
