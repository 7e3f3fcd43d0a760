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
    summary_without_timings(dir)
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
    assert_user_error(&evalua(d, &["merge", "p1", "--out", "m1"]), "part hash:2/2 is missing");
    assert_user_error(&evalua(d, &["merge", "p1", "p2", "p1", "--out", "m2"]), "are both part hash:1/2");
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
    std::fs::write(dir.path().join("p1/summary.json"), "{}").unwrap(); // a finished part
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

/// The variables `--partition auto` reads, cleared so the test's own
/// environment (a CI job inside Slurm, say) does not leak in.
const ENGINE_VARS: [&str; 8] = [
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_JOB_ID",
    "JOB_COMPLETION_INDEX",
    "EVALUA_PARTITIONS",
    "EVALUA_PARTITION",
];

fn run_auto(out: &std::path::Path, vars: &[(&str, &str)]) -> std::process::Output {
    let mut c = bin();
    c.current_dir(repo()).args([
        "run",
        "suites/refunds.lua",
        "--out",
        out.to_str().unwrap(),
        "-q",
        "--seed",
        "5",
        "--trials",
        "7",
        "--partition",
        "auto",
    ]);
    for v in ENGINE_VARS {
        c.env_remove(v);
    }
    for (k, v) in vars {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn partition_auto_reads_the_engine_and_refuses_without_one_or_with_disagreeing_ones() {
    let dir = project(&[]);
    let d = dir.path();
    let slurm = [
        ("SLURM_ARRAY_TASK_ID", "11"),
        ("SLURM_ARRAY_TASK_MIN", "10"),
        ("SLURM_ARRAY_TASK_MAX", "12"),
        ("SLURM_ARRAY_TASK_COUNT", "3"),
    ];
    let o = run_auto(&d.join("slurm"), &slurm);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let m = json(&d.join("slurm/manifest.json"));
    assert_eq!(m["partition"], "hash:2/3");
    assert_eq!(m["partition_from"], "SLURM_ARRAY_TASK_ID=11 of 10..12");
    // The same share as hash:2/3 given by hand.
    let by_hand = run(d, "by_hand", &["--partition", "hash:2/3"]);
    assert!(matches!(by_hand.status.code(), Some(0 | 1)));
    assert_eq!(without_timings(&d.join("slurm")), without_timings(&d.join("by_hand")));

    let o = run_auto(&d.join("k8s"), &[("JOB_COMPLETION_INDEX", "0"), ("EVALUA_PARTITIONS", "3")]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert_eq!(json(&d.join("k8s/manifest.json"))["partition"], "hash:1/3");

    assert_user_error(&run_auto(&d.join("none"), &[]), "--partition auto: none of SLURM_ARRAY_TASK_ID");
    assert_user_error(&run_auto(&d.join("job"), &[("SLURM_JOB_ID", "4711")]), "not an array task");
    let mut both = slurm.to_vec();
    both.push(("EVALUA_PARTITION", "1/3"));
    assert_user_error(&run_auto(&d.join("both"), &both), "says part hash:2/3 but EVALUA_PARTITION=1/3 says hash:1/3");
    assert_user_error(
        &run_auto(&d.join("k"), &[("JOB_COMPLETION_INDEX", "3"), ("EVALUA_PARTITIONS", "3")]),
        "JOB_COMPLETION_INDEX=3 is not below EVALUA_PARTITIONS=3",
    );
    for refused in ["none", "job", "both", "k"] {
        assert!(!d.join(refused).exists(), "{refused}: nothing is written before the share is known");
    }
}

#[test]
fn merge_takes_a_folder_of_parts_and_refuses_failed_or_missing_ones_by_name() {
    let dir = project(&[]);
    let d = dir.path();
    let whole = run(d, "whole", &[]);
    let parts = d.join("parts");
    for i in 1..=3 {
        let o = run_auto(&parts.join(i.to_string()), &[("EVALUA_PARTITION", &format!("{i}/3"))]);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    }
    let m = evalua(d, &["merge", "parts", "--out", "merged"]);
    assert_eq!(m.status.code(), whole.status.code(), "{}", stderr(&m));
    assert!(stdout(&m).contains("merged 3 parts (21 trials)"), "{}", stdout(&m));
    assert_eq!(without_timings(&d.join("merged")), without_timings(&d.join("whole")));
    assert_eq!(figures(&d.join("merged")), figures(&d.join("whole")));

    // A part whose run was killed (no summary.json), or interrupted.
    let summary = parts.join("2/summary.json");
    let kept = std::fs::read_to_string(&summary).unwrap();
    std::fs::remove_file(&summary).unwrap();
    assert_user_error(&evalua(d, &["merge", "parts", "--out", "m1"]), "parts/2 did not finish (no summary.json");
    let mut v: Value = serde_json::from_str(&kept).unwrap();
    v["complete"] = Value::Bool(false);
    std::fs::write(&summary, v.to_string()).unwrap();
    assert_user_error(&evalua(d, &["merge", "parts", "--out", "m2"]), "parts/2 is incomplete (its run was interrupted");
    std::fs::write(&summary, &kept).unwrap();
    // A task that never started its run: a folder without a manifest.
    std::fs::create_dir_all(parts.join("4")).unwrap();
    assert_user_error(&evalua(d, &["merge", "parts", "--out", "m3"]), "parts/4: not a run dir (no manifest.json)");
    std::fs::remove_dir(parts.join("4")).unwrap();
    // A part that is not there at all.
    std::fs::rename(parts.join("3"), d.join("elsewhere")).unwrap();
    assert_user_error(&evalua(d, &["merge", "parts", "--out", "m4"]), "part hash:3/3 is missing");
    // Parts of two different splits.
    let o = run_auto(&parts.join("3"), &[("EVALUA_PARTITION", "2/2")]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert_user_error(&evalua(d, &["merge", "parts", "--out", "m5"]), "of a split into 2");
    for m in ["m1", "m2", "m3", "m4", "m5"] {
        assert!(!d.join(m).exists(), "{m}: nothing is written when the parts are refused");
    }
    assert_user_error(&evalua(d, &["merge", "nothing-here", "--out", "m6"]), "nothing-here: not a run dir");
}

#[test]
fn a_part_killed_half_way_is_finished_with_resume_and_then_merges() {
    let dir = project(&[]);
    let d = dir.path();
    let whole = run(d, "whole", &[]);
    let parts = d.join("parts");
    for i in 1..=3 {
        let o = run_auto(&parts.join(i.to_string()), &[("EVALUA_PARTITION", &format!("{i}/3"))]);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    }
    // Task 2 killed half-way: some records written, no summary.json.
    let records = parts.join("2/trials.jsonl");
    let text = std::fs::read_to_string(&records).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 4, "{}", lines.len());
    std::fs::write(&records, lines[..lines.len() / 2].iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    std::fs::remove_file(parts.join("2/summary.json")).unwrap();
    let m = evalua(d, &["merge", "parts", "--out", "refused"]);
    assert_user_error(&m, "parts/2 did not finish (no summary.json");
    assert!(stderr(&m).contains("--resume"), "{}", stderr(&m));

    // The task runs again with --resume on its own folder: the share comes
    // from the engine (and must agree with the manifest's); only the missing
    // trials run.
    let part = parts.join("2");
    let mut c = bin();
    c.current_dir(repo()).args(["run", "suites/refunds.lua", "--resume", part.to_str().unwrap(), "-q"]);
    c.args(["--partition", "auto"]);
    for v in ENGINE_VARS {
        c.env_remove(v);
    }
    let wrong = c.env("EVALUA_PARTITION", "1/3").output().unwrap();
    assert_user_error(&wrong, "--partition");
    let o = c.env("EVALUA_PARTITION", "2/3").output().unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("{} kept", lines.len() / 2)), "{}", stderr(&o));
    assert_eq!(json(&part.join("manifest.json"))["partition_from"], "EVALUA_PARTITION=2/3");

    let m = evalua(d, &["merge", "parts", "--out", "merged"]);
    assert_eq!(m.status.code(), whole.status.code(), "{}", stderr(&m));
    assert_eq!(without_timings(&d.join("merged")), without_timings(&d.join("whole")));
    assert_eq!(figures(&d.join("merged")), figures(&d.join("whole")));
}

#[test]
fn a_partition_of_a_suite_without_a_fixed_clock_is_refused() {
    // Without sandbox.clock each part's clock is its own start time: the
    // cases' revisions differ between parts and merge could never join them.
    let suite = r#"
local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "clockless", agent = evalua.agent.scripted(function() return "ok" end) }
suite:case { id = "one", input = "x", expect = { check.answer { equals = "ok" } } }
return suite
"#;
    let dir = project(&[("s.lua", suite)]);
    let o = evalua(dir.path(), &["run", "s.lua", "--partition", "hash:1/2", "--out", "p1", "-q"]);
    assert_user_error(&o, "s.lua: --partition: the suite sets no sandbox.clock (nor case 'one' a clock of its own)");
    assert!(!dir.path().join("p1").exists());
    let fixed =
        suite.replace("name = \"clockless\",", "name = \"clockless\", sandbox = { clock = \"2026-11-03T10:00:00Z\" },");
    assert_ne!(fixed, suite);
    std::fs::write(dir.path().join("s.lua"), fixed).unwrap();
    for i in 1..=2 {
        let o = evalua(
            dir.path(),
            &["run", "s.lua", "--partition", &format!("hash:{i}/2"), "--out", &format!("p{i}"), "-q"],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        std::thread::sleep(std::time::Duration::from_millis(1100)); // a later start second
    }
    let o = evalua(dir.path(), &["merge", "p1", "p2", "--out", "m"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
