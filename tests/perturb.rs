//! Perturbations (SPEC §17, issue 38): declared in the suite and in a case,
//! and checked like cases: a bad one is one line naming its file:line, exit 2.

use crate::common::*;

/// A suite with two tools whose `evalua.suite {}` (line 3) holds `suite_keys`,
/// then `body` (from line 8).
fn suite(suite_keys: &str, body: &str) -> tempfile::TempDir {
    let src = r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "p", agent = evalua.agent.scripted(function() return "" end),
  sandbox = { db = "sqlite", schema = "schema.sql" }, {suite_keys} }
suite:tool { name = "lookup_order", effect = "read", run = function() return {} end }
suite:tool { name = "issue_refund", effect = "write", run = function() return {} end }
suite:case { id = "a", input = "hola", expect = {} }
{body}
return suite
"#
    .replace("{suite_keys}", suite_keys)
    .replace("{body}", body);
    project(&[("p.lua", &src), ("schema.sql", "CREATE TABLE t (x);\n"), ("other.sql", "INSERT INTO t VALUES (1);\n")])
}

#[test]
fn perturbations_of_the_suite_and_of_a_case_check_ok() {
    let dir = suite(
        r#"perturb = { no_lookup = { drop_tools = { "lookup_order" } },
    refund_429 = { faults = { issue_refund = { kind = "rate_limit", on_call = 1 } } } }"#,
        r#"suite:case { id = "b", input = "x", expect = {},
  perturb = { reworded = { input = "y", fixture = "other.sql", expect = { check.answer { contains = "y" } } },
              no_lookup = { drop_tools = { "issue_refund" } } } }"#,
    );
    let o = evalua(dir.path(), &["check", "p.lua"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_bad_perturbation_is_an_error_at_its_line() {
    let cases: [(&str, &str, &str); 6] = [
        (
            r#"perturb = { x = { drop_tool = { "lookup_order" } } }"#,
            "",
            "p.lua:3: evalua.suite.perturb.x: unknown key 'drop_tool'",
        ),
        (
            r#"perturb = { x = { drop_tools = { "lookup_ordr" } } }"#,
            "",
            "p.lua:3: perturbation 'x': 'drop_tools' names an unknown tool 'lookup_ordr' (did you mean 'lookup_order'?)",
        ),
        (
            r#"perturb = { x = { faults = { refund = { kind = "error", on_call = 1 } } } }"#,
            "",
            "p.lua:3: perturbation 'x': 'faults' names an unknown tool 'refund'",
        ),
        (r#"perturb = { x = 3 }"#, "", "p.lua:3: evalua.suite.perturb.x: a perturbation is a table"),
        (
            "",
            r#"suite:case { id = "b", input = "x", expect = {}, perturb = { y = { input = 3 } } }"#,
            "p.lua:8: suite:case 'b'.perturb.y: 'input' must be a string",
        ),
        (
            "",
            r#"suite:case { id = "b", input = "x", expect = {}, perturb = { y = { drop_tools = { "nope" } } } }"#,
            "p.lua:8: case 'b': perturbation 'y': 'drop_tools' names an unknown tool 'nope'",
        ),
    ];
    for (keys, body, needle) in cases {
        let dir = suite(keys, body);
        assert_user_error(&evalua(dir.path(), &["check", "p.lua"]), needle);
    }
}

/// A scripted agent whose recovery is known: it looks the order up, then
/// refunds, retrying a failed refund once. Without `lookup` it refunds
/// blind (one call more, and case `b` needs the lookup: it fails there);
/// with the refund's first call faulted it recovers on its retry (one call more).
const ROBUST: &str = r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "rob", trials = 2,
  sandbox = { db = "sqlite", schema = "schema.sql" },
  agent = evalua.agent.scripted(function(task, env)
    local _, st = env.call("lookup", {})
    if st ~= "ok" and task.input == "b" then return "no lookup" end
    local _, st2 = env.call("refund", {})
    if st2 ~= "ok" then env.call("refund", {}) end
    return task.input
  end),
  perturb = { no_lookup = { drop_tools = { "lookup" } },
              refund_err = { faults = { refund = { kind = "error", on_call = 1 } } } },
}
suite:tool { name = "lookup", effect = "read", run = function() return { ok = true } end }
suite:tool { name = "refund", effect = "write", run = function(ctx) ctx.db:exec("INSERT INTO t VALUES (1)") return {} end }
suite:case { id = "a", input = "a", expect = { check.sql("SELECT count(*) FROM t", { equals = 1 }) },
  perturb = { reworded = { input = "otra", expect = { check.answer { contains = "otra" } } } } }
suite:case { id = "b", input = "b", expect = { check.sql("SELECT count(*) FROM t", { equals = 1 }) } }
return suite
"#;

fn robust() -> tempfile::TempDir {
    project(&[("rob.lua", ROBUST), ("schema.sql", "CREATE TABLE t (x);\n")])
}

fn lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn a_run_of_perturbations_interleaves_them_with_the_baseline_and_records_each() {
    let dir = robust();
    let o = evalua(dir.path(), &["run", "rob.lua", "--perturb", "--out", "out", "-q", "--seed", "5"]);
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", stderr(&o));
    let out = dir.path().join("out");
    let m = json(&out.join("interleaved.json"));
    assert_eq!(m["perturbations"], serde_json::json!(["no_lookup", "refund_err", "reworded"]));
    // Each condition's part is a run dir; a perturbation runs only for the cases it applies to.
    let part = |n: &str| lines(&out.join("conditions").join(n).join("trials.jsonl"));
    let (base, drop, fault, reworded) = (part("baseline"), part("no_lookup"), part("refund_err"), part("reworded"));
    assert_eq!((base.len(), drop.len(), fault.len(), reworded.len()), (4, 4, 4, 2));
    assert!(base.iter().all(|r| r.get("perturbation").is_none()));
    assert!(drop.iter().all(|r| r["perturbation"] == "no_lookup"));
    assert!(reworded.iter().all(|r| r["case"] == "a" && r["perturbation"] == "reworded"));
    // The baseline: every trial accepted. A dropped tool is rejected as unknown.
    assert!(base.iter().all(|r| r["outcome"] == "accepted"), "{base:?}");
    let t = trace(&out.join("conditions/no_lookup"), "a", 1);
    assert_eq!(t["calls"][0]["name"], "lookup");
    assert_eq!(t["calls"][0]["status"], "rejected");
    assert!(drop.iter().all(|r| (r["case"] == "a") == (r["outcome"] == "accepted")), "{drop:?}");
    // The faulted refund is retried: accepted, one call more.
    let t = trace(&out.join("conditions/refund_err"), "b", 2);
    let statuses: Vec<&str> = t["calls"].as_array().unwrap().iter().map(|c| c["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["executed", "faulted", "executed"]);
    // The reworded case: its input and its own checks replace the case's.
    assert!(reworded.iter().all(|r| r["outcome"] == "accepted" && r["answer"] == "otra"), "{reworded:?}");
    // blocks.jsonl: every condition of a block from the block's seed, the order rotating.
    let blocks = lines(&out.join("blocks.jsonl"));
    assert_eq!(blocks.len(), 4);
    for b in &blocks {
        let n = if b["case"] == "a" { 4 } else { 3 };
        assert_eq!(b["order"].as_array().unwrap().len(), n, "{b}");
        assert_eq!(b["trials"].as_array().unwrap().len(), n, "{b}");
        let seeds: Vec<&serde_json::Value> = [&base, &drop, &fault, &reworded]
            .iter()
            .flat_map(|p| p.iter())
            .filter(|r| r["case"] == b["case"] && r["trial"] == b["trial"])
            .map(|r| &r["seed"])
            .collect();
        assert!(seeds.len() == n && seeds.iter().all(|s| **s == b["seed"]), "{b}: {seeds:?}");
    }
    // A perturbed part is not re-graded as if it were the baseline's.
    assert_user_error(
        &evalua(dir.path(), &["regrade", "out/conditions/no_lookup", "--out", "rg"]),
        "ran under 'no_lookup': it cannot be re-graded yet",
    );
    let firsts: std::collections::BTreeSet<String> =
        blocks.iter().map(|b| b["order"][0].as_str().unwrap().to_string()).collect();
    assert!(firsts.len() > 1, "the order rotates: {firsts:?}");
}

#[test]
fn perturb_names_the_perturbations_to_run_and_refuses_what_it_cannot_run() {
    let dir = robust();
    let o = evalua(dir.path(), &["run", "rob.lua", "--perturb", "no_lookup", "--out", "out", "-q"]);
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", stderr(&o));
    let m = json(&dir.path().join("out/interleaved.json"));
    assert_eq!(m["perturbations"], serde_json::json!(["no_lookup"]));
    assert!(!dir.path().join("out/conditions/refund_err").exists());
    assert_user_error(
        &evalua(dir.path(), &["run", "rob.lua", "--perturb", "no_lookp", "--out", "o2"]),
        "--perturb no_lookp: the suite declares no perturbation 'no_lookp' (did you mean 'no_lookup'?)",
    );
    assert_user_error(
        &evalua(dir.path(), &["run", "rob.lua", "--perturb", "--partition", "hash:1/2", "--out", "o3"]),
        "--perturb with --partition",
    );
}

#[test]
fn robustness_in_summary_json_has_the_exact_figures_of_a_known_agent() {
    let dir = robust();
    let o = evalua(dir.path(), &["run", "rob.lua", "--perturb", "--out", "out", "-q", "--seed", "5"]);
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", stderr(&o));
    let s = json(&dir.path().join("out/summary.json"));
    let r = s["robustness"].as_array().expect("robustness");
    let names: Vec<&str> = r.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["no_lookup", "refund_err", "reworded"]);
    let (drop, fault, reworded) = (&r[0], &r[1], &r[2]);
    // Without the lookup: case a recovers at no extra call, case b breaks.
    assert_eq!((&drop["cases"], &drop["pairs"]), (&serde_json::json!(2), &serde_json::json!(4)));
    assert_eq!(drop["baseline"], serde_json::json!({ "accepted": 4, "n": 4 }));
    assert_eq!(drop["perturbed"], serde_json::json!({ "accepted": 2, "n": 4 }));
    assert_eq!(drop["drop"], serde_json::json!({ "value": 0.5, "low": 0.0, "high": 1.0 }));
    assert_eq!((&drop["recovery"]["value"], &drop["recovery"]["n"]), (&serde_json::json!(0.5), &serde_json::json!(4)));
    let (lo, hi) = (drop["recovery"]["low"].as_f64().unwrap(), drop["recovery"]["high"].as_f64().unwrap());
    assert!((lo - 0.1500).abs() < 1e-4 && (hi - 0.8500).abs() < 1e-4, "Wilson 2 of 4: {lo} {hi}");
    assert_eq!(drop["cost_to_recover"]["calls"], serde_json::json!({ "median": 0.0, "n": 2, "low": 0.0, "high": 0.0 }));
    assert_eq!(drop["cost_to_recover"]["tokens"]["median"], serde_json::json!(0.0));
    assert_eq!(drop["cost_to_recover"]["wall_ms"]["n"], serde_json::json!(2));
    assert_eq!(drop["broke"], serde_json::json!(["b"]));
    // A faulted refund: every pair recovers, at one call more.
    assert_eq!(fault["drop"], serde_json::json!({ "value": 0.0, "low": 0.0, "high": 0.0 }));
    assert_eq!(
        (&fault["recovery"]["value"], &fault["recovery"]["n"]),
        (&serde_json::json!(1.0), &serde_json::json!(4))
    );
    assert_eq!(
        fault["cost_to_recover"]["calls"],
        serde_json::json!({ "median": 1.0, "n": 4, "low": 1.0, "high": 1.0 })
    );
    assert_eq!(fault["broke"], serde_json::json!([]));
    // A case's own perturbation: its one case, paired with that case's baseline trials only.
    assert_eq!((&reworded["cases"], &reworded["pairs"]), (&serde_json::json!(1), &serde_json::json!(2)));
    assert_eq!(reworded["baseline"], serde_json::json!({ "accepted": 2, "n": 2 }));
    assert_eq!(reworded["recovery"]["value"], serde_json::json!(1.0));
    // A run of agents has no robustness.
    assert!(json(&dir.path().join("out/conditions/baseline/summary.json")).get("robustness").is_none());
}

#[test]
fn robustness_gates_decide_on_the_drop_and_the_recovery_and_plain_gates_on_the_baseline() {
    let gates =
        r#"trials = 2, gate = { accepted = 0.9, ["drop pass^1 @no_lookup"] = 0.2, ["recovery @refund_err"] = 0.9 },"#;
    let dir = project(&[("rob.lua", &ROBUST.replace("trials = 2,", gates)), ("schema.sql", "CREATE TABLE t (x);\n")]);
    let o = evalua(dir.path(), &["run", "rob.lua", "--perturb", "--out", "out", "-q", "--seed", "5"]);
    assert_eq!(o.status.code(), Some(1), "the drop gate fails: {}", stdout(&o));
    let s = json(&dir.path().join("out/summary.json"));
    let verdict = |name: &str| -> serde_json::Value {
        s["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name}: {}", s["gates"]))
    };
    assert_eq!(s["gates"].as_array().unwrap().len(), 3, "{}", s["gates"]);
    assert_eq!(
        (verdict("accepted")["passed"].clone(), verdict("accepted")["value"].clone()),
        (serde_json::json!(true), serde_json::json!(1.0))
    );
    let drop = verdict("drop pass^1 @no_lookup");
    assert_eq!((drop["passed"].clone(), drop["value"].clone()), (serde_json::json!(false), serde_json::json!(0.5)));
    let rec = verdict("recovery @refund_err");
    assert_eq!((rec["passed"].clone(), rec["value"].clone()), (serde_json::json!(true), serde_json::json!(1.0)));
    assert!(stdout(&o).contains("FAIL drop pass^1 @no_lookup: +50.0 pt"), "{}", stdout(&o));
    // A gate naming a perturbation the suite does not declare: exit 2 at the suite's line.
    let bad = r#"trials = 2, gate = { ["recovery @no_lokup"] = 0.5 },"#;
    let dir = project(&[("rob.lua", &ROBUST.replace("trials = 2,", bad)), ("schema.sql", "CREATE TABLE t (x);\n")]);
    assert_user_error(
        &evalua(dir.path(), &["check", "rob.lua"]),
        "rob.lua:3: evalua.suite.gate: 'recovery @no_lokup' names perturbation 'no_lokup', which the suite does not declare",
    );
}

#[test]
fn the_console_the_reports_and_the_pull_request_comment_show_the_robustness_table() {
    let dir = robust();
    let o = evalua(dir.path(), &["run", "rob.lua", "--perturb", "--out", "out", "--seed", "5"]);
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", stderr(&o));
    let console = stdout(&o);
    assert!(console.contains("robustness (each perturbation paired with the baseline"), "{console}");
    assert!(console.contains("50.0% (2 of 4) [15.0%, 85.0%]"), "{console}");
    let row = "| no_lookup | 2 (4) | +50.0 pt [+0.0 pt, +100.0 pt] | 50.0% (2 of 4) [15.0%, 85.0%] | +0.0 (n=2) [+0.0, +0.0] | +0.0 (n=2) [+0.0, +0.0] | b |";
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("## Robustness") && md.contains(row), "{md}");
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(html.contains("<h2>Robustness</h2>") && html.contains("<td>refund_err</td>"), "{html}");
    let gh = evalua(dir.path(), &["report", "out", "--format", "github"]);
    assert!(stdout(&gh).contains(row), "{}", stdout(&gh));
}

/// The guide's robustness section shows a run of the example suite: the
/// figures it prints are the ones that run gives.
#[test]
fn the_example_suite_reproduces_the_guides_robustness_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = evalua(
        &repo(),
        &["run", "suites/refunds_robustness.lua", "--perturb", "--seed", "7", "-q", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(1), "the recovery gate fails: {}", stderr(&o));
    let guide = std::fs::read_to_string(repo().join("docs/guide.md")).unwrap();
    let section = &guide[guide.find("### Robustness: what a changed detail").expect("the guide's section")..];
    let console = stdout(&o);
    let table: Vec<&str> = console.lines().skip_while(|l| !l.starts_with("robustness (")).skip(1).take(7).collect();
    assert_eq!(table.len(), 7, "{console}");
    for line in table {
        assert!(section.contains(line), "the guide does not show: {line}");
    }
    let s = json(&out.join("summary.json"));
    let r = &s["robustness"];
    assert_eq!(r[1]["name"], "refund_429");
    assert_eq!((&r[1]["recovery"]["n"], &r[0]["drop"]["value"]), (&serde_json::json!(9), &serde_json::json!(0.6)));
}

/// `evalua view` lists each condition's part, pairs each perturbation's with
/// the baseline's, and shows the pair's robustness in the paired view.
#[test]
fn the_viewer_pairs_each_perturbed_part_with_the_baseline() {
    let dir = robust();
    let o = evalua(dir.path(), &["run", "rob.lua", "--perturb", "no_lookup", "--out", "out", "-q", "--seed", "5"]);
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", stderr(&o));
    let v = crate::view::Viewer::start(dir.path(), &["out"]);
    let runs = v.runs();
    let part = |name: &str| {
        runs.iter()
            .find(|r| r["path"].as_str().unwrap().ends_with(&format!("conditions/{name}")))
            .unwrap_or_else(|| panic!("{name}: {runs:?}"))
            .clone()
    };
    let (base, drop) = (part("baseline"), part("no_lookup"));
    assert_eq!(drop["interleaved"]["agents"], serde_json::json!(["baseline", "no_lookup"]));
    assert_eq!(drop["interleaved"]["agent"], "no_lookup");
    assert_eq!(drop["interleaved"]["base_id"], base["id"]);
    // The paired view of the two shows the perturbation's robustness row.
    let enc = |v: &serde_json::Value| crate::view::enc(v.as_str().unwrap());
    let (status, page) = v.get(&format!("/compare?a={}&b={}", enc(&base["id"]), enc(&drop["id"])));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<h2>Robustness</h2>") && page.contains("<td>no_lookup</td>"), "{page}");
    assert!(page.contains("<td>50.0% (2 of 4) [15.0%, 85.0%]</td>"), "{page}");
}

/// A perturbation's fixture replaces the case's starting state: its trials
/// start from the perturbed fixture's database, the baseline's from the case's.
#[test]
fn a_perturbations_fixture_is_the_starting_state_of_its_trials() {
    let suite = ROBUST.replace(
        r#"perturb = { no_lookup = { drop_tools = { "lookup" } },"#,
        r#"perturb = { seeded = { fixture = "one_row.sql" }, no_lookup = { drop_tools = { "lookup" } },"#,
    );
    let dir = project(&[
        ("rob.lua", &suite),
        ("schema.sql", "CREATE TABLE t (x);\n"),
        ("one_row.sql", "INSERT INTO t VALUES (0);\n"),
    ]);
    let o = evalua(dir.path(), &["run", "rob.lua", "--perturb", "seeded", "--out", "out", "-q", "--seed", "5"]);
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", stderr(&o));
    let part = |n: &str| lines(&dir.path().join("out/conditions").join(n).join("trials.jsonl"));
    // The refund adds a second row to the seeded table: "exactly one" fails there only.
    assert!(part("baseline").iter().all(|r| r["outcome"] == "accepted"));
    assert!(part("seeded").iter().all(|r| r["outcome"] == "failed"), "{:?}", part("seeded"));
    let s = json(&dir.path().join("out/summary.json"));
    assert_eq!(s["robustness"][0]["broke"], serde_json::json!(["a", "b"]));
}

/// A perturbation's user replaces the case's: the agent hears the perturbed user's turns.
#[test]
fn a_perturbations_user_replaces_the_cases() {
    let src = r#"local evalua = require("evalua")
local check = require("evalua.check")
local suite = evalua.suite { name = "u", trials = 1, sandbox = { db = "sqlite" },
  agent = evalua.agent.scripted(function(task, env) return env.say("postal code?") or "" end),
  perturb = { other_user = { user = evalua.user.script { "08001" } } },
}
suite:case { id = "a", input = "x", user = evalua.user.script { "28013" },
  expect = { check.answer { contains = "28013" } } }
return suite
"#;
    let dir = project(&[("u.lua", src)]);
    let o = evalua(dir.path(), &["run", "u.lua", "--perturb", "--out", "out", "-q"]);
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1), "{}", stderr(&o));
    let part = |n: &str| lines(&dir.path().join("out/conditions").join(n).join("trials.jsonl"));
    assert_eq!(part("baseline")[0]["answer"], "28013");
    assert_eq!(part("other_user")[0]["answer"], "08001");
    assert_eq!(part("other_user")[0]["outcome"], "failed");
}
