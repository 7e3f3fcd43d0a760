//! `run --partition hash:I/N` and `evalua merge`: the merged parts equal the
//! unpartitioned run (figures, and trials.jsonl apart from timings).

use serde_json::Value;

use crate::common::*;

fn run(dir: &std::path::Path, out: &str, extra: &[&str]) -> std::process::Output {
    let o = dir.join(out);
    let mut args =
        vec!["run", "suites/refunds.lua", "--out", o.to_str().unwrap(), "-q", "--seed", "5", "--trials", "7"];
    args.extend_from_slice(extra);
    bin().current_dir(repo()).args(&args).output().unwrap()
}

/// summary.json without the timing figures and the run id.
fn figures(dir: &std::path::Path) -> Value {
    let mut s = json(&dir.join("summary.json"));
    for k in ["p50_ms", "p95_ms"] {
        s["figures"].as_object_mut().unwrap().remove(k);
    }
    // Per-tool latencies are timings too.
    if let Some(tools) = s["tools"].as_object_mut() {
        for t in tools.values_mut() {
            for k in ["p50_ms", "p95_ms"] {
                t.as_object_mut().unwrap().remove(k);
            }
        }
    }
    s.as_object_mut().unwrap().remove("run_id");
    s
}

#[test]
fn merged_partitions_equal_the_unpartitioned_run() {
    let dir = project(&[]);
    let d = dir.path();
    let whole = run(d, "whole", &[]);
    let mut sizes = Vec::new();
    for i in 1..=3 {
        let o = run(d, &format!("p{i}"), &["--partition", &format!("hash:{i}/3")]);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
        assert_eq!(json(&d.join(format!("p{i}/manifest.json")))["partition"], format!("hash:{i}/3"));
        sizes.push(trials(&d.join(format!("p{i}"))).len());
    }
    assert_eq!(sizes.iter().sum::<usize>(), 21);
    assert!(sizes.iter().all(|s| *s > 0 && *s < 21), "each part holds a share: {sizes:?}");
    let m = evalua(d, &["merge", "p1", "p2", "p3", "--out", "merged"]);
    assert_eq!(m.status.code(), whole.status.code(), "merge's exit code follows the gates: {}", stderr(&m));
    assert!(stdout(&m).contains("merged 3 parts (21 trials)"), "{}", stdout(&m));
    let merged = d.join("merged");
    assert_eq!(without_timings(&merged), without_timings(&d.join("whole")));
    assert_eq!(figures(&merged), figures(&d.join("whole")));
    for f in ["report.md", "report.html", "junit.xml"] {
        assert!(merged.join(f).is_file(), "{f}");
    }
    // Every trace copied into the merged run's store, in plan order like the whole run's.
    let index = std::fs::read_to_string(merged.join("traces/index.jsonl")).unwrap();
    assert_eq!(index.lines().count(), 21);
    let whole_index: Vec<String> = std::fs::read_to_string(d.join("whole/traces/index.jsonl"))
        .unwrap()
        .lines()
        .map(|l| l.split(",\"offset\"").next().unwrap().to_string())
        .collect();
    let merged_index: Vec<String> = index.lines().map(|l| l.split(",\"offset\"").next().unwrap().to_string()).collect();
    assert_eq!(merged_index, whole_index);
    for l in index.lines().take(3) {
        let e: serde_json::Value = serde_json::from_str(l).unwrap();
        let o = evalua(d, &["show", "merged", e["case"].as_str().unwrap(), &e["trial"].to_string(), "--json"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    assert_eq!(json(&merged.join("manifest.json"))["merged_from"].as_array().unwrap().len(), 3);
}

#[test]
fn merge_refuses_missing_duplicate_and_foreign_parts() {
    let dir = project(&[]);
    let d = dir.path();
    for i in 1..=2 {
        run(d, &format!("p{i}"), &["--partition", &format!("hash:{i}/2")]);
    }
    assert_user_error(&evalua(d, &["merge", "p1", "--out", "m1"]), "the parts lack");
    assert_user_error(&evalua(d, &["merge", "p1", "p2", "p1", "--out", "m2"]), "is in both");
    let o = d.join("other");
    bin()
        .current_dir(repo())
        .args([
            "run",
            "suites/refunds.lua",
            "--out",
            o.to_str().unwrap(),
            "-q",
            "--seed",
            "6",
            "--trials",
            "7",
            "--partition",
            "hash:2/2",
        ])
        .output()
        .unwrap();
    assert_user_error(
        &evalua(d, &["merge", "p1", "other", "--out", "m3"]),
        "are not parts of one run: their seed differ",
    );
    assert!(!d.join("m1").exists() && !d.join("m2").exists() && !d.join("m3").exists());
    let o = run(d, "bad", &["--partition", "hash:3/2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("expected hash:I/N"), "{}", stderr(&o));
}

#[test]
fn merge_refuses_a_trace_path_outside_the_run_dir() {
    use crate::synth::{self, Synth};
    let dir = project(&[]);
    let mut s = Synth::new(&[("a", "af")]);
    s.partition = Some("hash:1/1");
    synth::write(&dir.path().join("p1"), &s);
    let path = dir.path().join("p1/trials.jsonl");
    let text = std::fs::read_to_string(&path).unwrap().replace("traces/a.2.json", "../../evil.json");
    std::fs::write(&path, text).unwrap();
    assert_user_error(&evalua(dir.path(), &["merge", "p1", "--out", "m"]), "is not under traces/");
}

/// The figures recomputed from a run dir (here by merging one whole run) equal
/// the ones the run wrote: weights, tags and difficulty come from the manifest.
#[test]
fn figures_recomputed_from_the_run_dir_equal_the_runs_own() {
    const SUITE: &str = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite {
  name = "weighted",
  agent = evalua.agent.scripted(function(task, env) return task.trial % 3 == 0 and "fail" or "pass" end),
  gate = { accepted = { min = 0.5, on = "lower" } },
}
suite:case { id = "light", input = "x", trials = 4, tags = { "a" }, expect = { check.answer { equals = "pass" } } }
suite:case { id = "heavy", input = "x", trials = 6, weight = 3, difficulty = "hard", tags = { "a", "b" },
             expect = { check.answer { equals = "pass" } } }
return suite
"#;
    let dir = project(&[("w.lua", SUITE)]);
    let o = run_suite(dir.path(), "w.lua", &[]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let m = evalua(dir.path(), &["merge", "out", "--out", "again"]);
    assert_eq!(m.status.code(), o.status.code(), "{}", stderr(&m));
    let strip = |p: &str| {
        let mut s = json(&dir.path().join(p).join("summary.json"));
        s.as_object_mut().unwrap().remove("run_id");
        s
    };
    let (a, b) = (strip("out"), strip("again"));
    assert_eq!(a, b);
    assert!(a["tags"]["b"]["cases"] == 1 && a["difficulty"]["hard"]["cases"] == 1, "{a}");
}
