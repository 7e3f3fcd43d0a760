//! Interfaces for machines (SPEC §16): `--json` on every command that has it
//! (one document on stdout, human text on stderr, the exit codes unchanged),
//! `evalua report --format github`, and `evalua init`.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::*;

/// The one JSON document a `--json` command printed: stdout parses as exactly
/// one value, with the schema of its command and the process's exit code.
fn doc(o: &Output, command: &str) -> Value {
    let out = stdout(o);
    let mut values = serde_json::Deserializer::from_str(&out).into_iter::<Value>();
    let first = values
        .next()
        .unwrap_or_else(|| panic!("no JSON on stdout; stderr:\n{}", stderr(o)))
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{out}"));
    assert!(values.next().is_none(), "more than one document on stdout:\n{out}");
    assert_eq!(first["schema"], format!("evalua.{command}/1"), "{first}");
    assert_eq!(first["exit_code"].as_i64(), o.status.code().map(i64::from), "{first}");
    assert!(first["errors"].is_array() && first["warnings"].is_array(), "{first}");
    first
}

fn tmp_out(tmp: &Path, name: &str) -> String {
    tmp.join(name).display().to_string()
}

#[test]
fn run_json_is_one_document_with_the_run_dir_gates_figures_and_failing_trials() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp_out(tmp.path(), "r");
    let o = evalua(&repo(), &["run", "suites/refunds.lua", "--out", &out, "--json"]);
    // The same exit code as without --json: the refunds gates fail by design.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let d = doc(&o, "run");
    // The human summary went to stderr, untouched.
    assert!(stderr(&o).contains("gates:") && stderr(&o).contains("report: "), "{}", stderr(&o));
    let r = &d["runs"][0];
    assert_eq!(r["suite"], "refunds");
    assert_eq!(Path::new(r["run_dir"].as_str().unwrap()), tmp.path().join("r"));
    assert!(Path::new(r["files"]["summary"].as_str().unwrap()).is_file());
    assert_eq!(r["gates_passed"], false);
    let p3 = r["gates"].as_array().unwrap().iter().find(|g| g["name"] == "pass^3").unwrap();
    assert_eq!(p3["passed"], false);
    assert_eq!(p3["threshold"], 0.5);
    // Figures with intervals, equal to summary.json's.
    let summary = json(&tmp.path().join("r/summary.json"));
    let f = &r["figures"]["pass^3"];
    let lo = f["interval"][0].as_f64().unwrap();
    let hi = f["interval"][1].as_f64().unwrap();
    let v = f["value"].as_f64().unwrap();
    assert!(lo <= v && v <= hi, "{f}");
    assert_eq!(summary["gates"].as_array().unwrap().len(), r["gates"].as_array().unwrap().len());
    assert_eq!(r["counts"]["trials"], 15);
    // The failing trials: every one not accepted, each readable with `evalua show`.
    let records = trials(&tmp.path().join("r"));
    let failing = records.iter().filter(|t| t["outcome"] != "accepted").count();
    assert!(failing > 0);
    assert_eq!(r["failing_trials"]["total"], failing);
    let first = &r["failing_trials"]["shown"][0];
    let trial = first["trial"].to_string();
    let o = evalua(&repo(), &["show", &out, first["case"].as_str().unwrap(), &trial]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(r["comparison"], Value::Null);

    // With --baseline: the comparison in brief.
    let out2 = tmp_out(tmp.path(), "r2");
    let o =
        evalua(&repo(), &["run", "suites/refunds.lua", "--out", &out2, "--seed", "9", "--baseline", &out, "--json"]);
    let d = doc(&o, "run");
    let c = &d["runs"][0]["comparison"];
    assert_eq!(Path::new(c["base_dir"].as_str().unwrap()), tmp.path().join("r"), "{c}");
    assert!(c["regressed"].is_array() && c["counts"]["regressed"].is_number(), "{c}");
    assert_eq!(c["measurement_change"], false);
}

#[test]
fn errors_come_with_their_file_and_line_and_the_exit_code_stays() {
    let dir = project(&[("bad.lua", "local evalua = require('evalua')\n\nreturn evalua.suite { nmae = 'x' }\n")]);
    for cmd in ["check", "run", "list"] {
        let o = evalua(dir.path(), &[cmd, "bad.lua", "--json"]);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stderr(&o));
        let d = doc(&o, cmd);
        let e = &d["errors"][0];
        assert_eq!(e["kind"], "input", "{d}");
        assert_eq!(e["file"], "bad.lua", "{d}");
        assert_eq!(e["line"], 3, "{d}");
        assert!(e["message"].as_str().unwrap().contains("nmae"), "{d}");
        // And the same line on stderr as without --json.
        assert!(stderr(&o).contains("error: bad.lua:3:"), "{}", stderr(&o));
    }
    // A flag that does not parse: still one document, exit 2.
    let o = evalua(dir.path(), &["check", "bad.lua", "--json", "--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2));
    let d = doc(&o, "check");
    assert_eq!(d["errors"][0]["kind"], "usage", "{d}");
    assert!(d["errors"][0]["message"].as_str().unwrap().contains("--no-such-flag"), "{d}");
    // No --json: stdout as before (no document).
    let o = evalua(dir.path(), &["check", "bad.lua"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).trim().is_empty(), "{}", stdout(&o));
}

#[test]
fn check_list_test_and_compare_json() {
    let o = evalua(&repo(), &["check", "suites/refunds.lua", "suites/date_filter.lua", "--json"]);
    let d = doc(&o, "check");
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(d["suites"].as_array().unwrap().len(), 2);
    assert_eq!(d["suites"][0]["path"], "suites/refunds.lua");
    assert_eq!(d["suites"][0]["cases"], 3);
    assert!(stdout(&o).starts_with('{'), "the `ok:` lines went to stderr");
    assert!(stderr(&o).contains("ok: suites/refunds.lua"), "{}", stderr(&o));

    let o = evalua(&repo(), &["list", "suites/refunds.lua", "--json", "--case", "reembolso_*"]);
    let d = doc(&o, "list");
    let ids: Vec<&str> = d["cases"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["reembolso_parcial_01", "reembolso_total_02"]);
    assert!(d["cases"][0]["location"].as_str().unwrap().contains(".lua:"), "{d}");
    let o = evalua(&repo(), &["list", "suites/refunds.lua", "--json", "--case", "nothing_matches*"]);
    assert_eq!(o.status.code(), Some(2));
    let d = doc(&o, "list");
    assert!(d["errors"][0]["message"].as_str().unwrap().contains("no case matches"), "{d}");

    // `test`: a grader that gets an example wrong is exit 1 and says which.
    let dir = project(&[(
        "graders/g_test.lua",
        r#"local evalua = require("evalua")
local always = function(t) return true, "ok" end
return evalua.grader_tests(always, {
  { name = "must fail", expect = "fail" },
  { name = "must pass", expect = "pass" },
})
"#,
    )]);
    let o = evalua(dir.path(), &["test", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let d = doc(&o, "test");
    assert_eq!((d["passed"].as_u64(), d["failed"].as_u64()), (Some(1), Some(1)), "{d}");
    let ex = &d["files"][0]["examples"];
    assert_eq!(ex[0]["example"], "must fail");
    assert_eq!(ex[0]["ok"], false);
    assert_eq!(ex[0]["got"], "pass");
    assert!(ex[0]["location"].as_str().unwrap().contains("g_test.lua:"), "{d}");
    assert!(stderr(&o).contains("test result: FAILED"), "{}", stderr(&o));

    // compare: the comparison's keys plus the schema; the table on stderr.
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp_out(tmp.path(), "a"), tmp_out(tmp.path(), "b"));
    evalua(&repo(), &["run", "suites/refunds.lua", "--out", &a, "-q"]);
    evalua(&repo(), &["run", "suites/refunds.lua", "--out", &b, "-q", "--seed", "4"]);
    let o = evalua(&repo(), &["compare", &a, &b, "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let d = doc(&o, "compare");
    assert_eq!(d["suite"], "refunds");
    assert!(d["cases"].as_array().unwrap().len() == 3 && d["counts"]["regressed"].is_number(), "{d}");
    assert!(stderr(&o).contains("improved") || stderr(&o).contains("unchanged"), "{}", stderr(&o));
}

#[test]
fn regrade_and_grade_json_name_their_run() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp_out(tmp.path(), "base");
    evalua(&repo(), &["run", "suites/refunds.lua", "--out", &base, "-q"]);
    let re = tmp_out(tmp.path(), "re");
    let o = evalua(&repo(), &["regrade", &base, "--out", &re, "-q", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let d = doc(&o, "regrade");
    assert_eq!(d["run"]["kind"], "regraded");
    assert_eq!(Path::new(d["run"]["run_dir"].as_str().unwrap()), tmp.path().join("re"));
    assert!(d["run"]["regraded_from"]["run_id"].is_string(), "{d}");

    let g = tmp_out(tmp.path(), "g");
    let traces = repo().join("tests/fixtures/traces/pydantic_ai");
    let o = evalua(
        &repo(),
        &["grade", "suites/refunds_prod.lua", "--traces", traces.to_str().unwrap(), "--out", &g, "-q", "--json"],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let d = doc(&o, "grade");
    assert_eq!(d["run"]["kind"], "graded");
    assert!(d["run"]["counts"]["trials"].as_u64().unwrap() > 0, "{d}");
}

#[test]
fn the_github_comment_has_gates_figures_the_measurement_change_and_regressions() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp_out(tmp.path(), "base");
    let cand = tmp_out(tmp.path(), "cand");
    evalua(&repo(), &["run", "suites/refunds.lua", "--out", &base, "-q", "--seed", "1"]);
    // Alone: the verdict, the gates, the headline figures with intervals; no comparison.
    let o =
        evalua(&repo(), &["report", &base, "--format", "github", "--artifact-url", "https://ci.invalid/artifacts/9"]);
    assert_eq!(o.status.code(), Some(1), "the exit code is the gates'");
    let md = stdout(&o);
    assert!(md.starts_with("### ❌ evalua · <code>refunds</code>"), "{md}");
    assert!(md.contains("- ❌ FAIL pass^3:"), "{md}");
    assert!(md.contains("| pass^3 | ") && md.contains("| figure | value | 95% interval |"), "{md}");
    assert!(md.contains("No baseline"), "{md}");
    assert!(md.contains("[run dir (artifact)](https://ci.invalid/artifacts/9)"), "{md}");
    let files = std::fs::read_dir(&base).unwrap().count();

    // Against a baseline, as `run --baseline` recorded it: the regressed cases are listed.
    // (The first seed whose run regresses on the base's: the outcomes are seeded, so always the same one.)
    let mut regressed = Vec::new();
    for seed in 2..40 {
        let _ = std::fs::remove_dir_all(&cand);
        let seed = seed.to_string();
        evalua(&repo(), &["run", "suites/refunds.lua", "--out", &cand, "-q", "--seed", &seed, "--baseline", &base]);
        let cmp = json(&tmp.path().join("cand/compare.json"));
        regressed = cmp["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["class"] == "regressed")
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect();
        if !regressed.is_empty() {
            break;
        }
    }
    assert!(!regressed.is_empty(), "no seed regressed on the base run");
    let md = stdout(&evalua(&repo(), &["report", &cand, "--format", "github"]));
    assert!(md.contains("Against the baseline"), "{md}");
    for id in &regressed {
        assert!(md.contains(&format!("<code>{}</code>", id)), "{id} missing:\n{md}");
    }
    assert!(!md.contains("Measurement change"), "{md}");

    // A re-grade: its figures measure the graders; the comment says so.
    let re = tmp_out(tmp.path(), "re");
    evalua(&repo(), &["regrade", &base, "--out", &re, "-q"]);
    let md = stdout(&evalua(&repo(), &["report", &re, "--format", "github"]));
    assert!(md.contains("**Measurement change:** this run re-grades"), "{md}");
    let md = stdout(&evalua(&repo(), &["report", &re, "--format", "github", "--baseline", &base]));
    assert!(md.contains("**Measurement change:**") && md.contains("Against the baseline"), "{md}");
    // --format github writes nothing into the run dir.
    assert_eq!(std::fs::read_dir(&base).unwrap().count(), files);
}

#[test]
fn init_writes_a_project_that_runs_and_tests_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let o = evalua(tmp.path(), &["init", "proj"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let p = tmp.path().join("proj");
    for f in [
        "suites/tickets.lua",
        "suites/fixtures/schema.sql",
        "suites/fixtures/tickets.sql",
        "agents/agent.py",
        "graders/tickets.lua",
        "graders/tickets_test.lua",
        ".luarc.json",
        ".github/workflows/evalua.yml",
        ".evalua/types/evalua.lua",
        ".gitignore",
    ] {
        assert!(p.join(f).is_file(), "{f} missing");
    }
    // evalua check accepts it, evalua run works at once (its gates hold), and evalua test passes.
    let o = evalua(&p, &["check", "suites/tickets.lua", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let d = doc(&o, "check");
    assert_eq!((d["suites"][0]["ok"].as_bool(), d["suites"][0]["cases"].as_u64()), (Some(true), Some(1)), "{d}");
    assert_eq!(d["suites"][0]["tools"], 1, "one tool: {d}");
    let o = evalua(&p, &["run", "suites/tickets.lua", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let d = doc(&o, "run");
    assert_eq!(d["runs"][0]["counts"]["trials"], 3);
    assert_eq!(d["runs"][0]["gates_passed"], true);
    let o = evalua(&p, &["test"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("test result: ok. 4 passed; 0 failed"), "{}", stdout(&o));
    // Its grader is seen failing: break the agent so it closes the other ticket.
    let agent = std::fs::read_to_string(p.join("agents/agent.py")).unwrap();
    std::fs::write(p.join("agents/agent.py"), agent.replace("match.group(0)}", "\"T-43\"}")).unwrap();
    let o = evalua(&p, &["run", "suites/tickets.lua", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let d = doc(&o, "run");
    assert_eq!(d["runs"][0]["counts"]["critical_failures"], 3, "{d}");

    // .luarc.json points lua-language-server at the types it wrote, the very ones of this evalua.
    let luarc = json(&p.join(".luarc.json"));
    assert_eq!(luarc["workspace"]["library"][0], ".evalua/types");
    for (rel, text) in [("evalua.lua", "types/evalua.lua"), ("evalua/check.lua", "types/evalua/check.lua")] {
        assert_eq!(
            std::fs::read_to_string(p.join(".evalua/types").join(rel)).unwrap(),
            std::fs::read_to_string(repo().join(text)).unwrap()
        );
    }
    let types: Vec<_> = walk(&repo().join("types"));
    let written: Vec<_> = walk(&p.join(".evalua/types"));
    assert_eq!(types, written, "every type file of types/ is embedded");
    // The workflow uses the action with a suite that exists and an input the action has.
    let wf = std::fs::read_to_string(p.join(".github/workflows/evalua.yml")).unwrap();
    assert!(wf.contains("uses: ./.github/actions/evalua") && wf.contains("suites: suites/tickets.lua"), "{wf}");
    let action = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    assert!(action.contains("\n  suites:\n") && action.contains("\n  baseline-artifact:\n"));

    // Never overwrites: a second init writes nothing and says why.
    std::fs::write(p.join("graders/tickets.lua"), "-- mine").unwrap();
    let o = evalua(tmp.path(), &["init", "proj"]);
    assert_user_error(&o, "nothing written");
    assert_eq!(std::fs::read_to_string(p.join("graders/tickets.lua")).unwrap(), "-- mine");
    // Into an existing folder with a .gitignore of its own: lines appended.
    let q = tmp.path().join("q");
    std::fs::create_dir_all(&q).unwrap();
    std::fs::write(q.join(".gitignore"), "target").unwrap();
    let o = evalua(&q, &["init"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(q.join(".gitignore")).unwrap(),
        "target\n/runs\n**/.evalua/judge-cache/\n__pycache__/\n"
    );
}

#[test]
fn labels_json_is_a_document_also_when_it_fails() {
    let line = |item: &str, who: &str, verdict: &str| crate::labels::line(item, who, Some("c"), verdict, "x");
    let mut lines: Vec<String> = Vec::new();
    for i in 0..6 {
        lines.push(line(&format!("i{i}"), "ana", if i < 3 { "pass" } else { "fail" }));
        lines.push(line(&format!("i{i}"), "bo", if i < 4 { "pass" } else { "fail" }));
    }
    lines.insert(2, "not json".into());
    let dir = project(&[("labels/s.jsonl", &(lines.join("\n") + "\n"))]);
    let o = evalua(dir.path(), &["labels", "agree", "labels/s.jsonl", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let d = doc(&o, "labels");
    assert_eq!(d["command"], "agree");
    assert_eq!(d["annotators"], serde_json::json!(["ana", "bo"]), "{d}");
    // The skipped line is a warning with its file:line, in the document and on stderr.
    assert!(d["warnings"][0].as_str().unwrap().starts_with("labels/s.jsonl:3:"), "{d}");
    assert!(stderr(&o).contains("warning: labels/s.jsonl:3:"), "{}", stderr(&o));
    assert!(stderr(&o).contains("Krippendorff"), "the text went to stderr: {}", stderr(&o));
    let o = evalua(dir.path(), &["labels", "split", "labels/s.jsonl", "--held-out", "0.5", "--seed", "1", "--json"]);
    let d = doc(&o, "labels");
    assert_eq!((d["command"].as_str(), d["items"].as_u64()), (Some("split"), Some(6)), "{d}");
    // Failures: a missing store, a fraction out of range, a flag that does not parse.
    for (args, says) in [
        (vec!["labels", "agree", "labels/none.jsonl", "--json"], "labels/none.jsonl"),
        (vec!["labels", "split", "labels/s.jsonl", "--held-out", "2", "--seed", "1", "--json"], "--held-out 2"),
        (vec!["labels", "agree", "labels/s.jsonl", "--json", "--no-such-flag"], "--no-such-flag"),
    ] {
        let o = evalua(dir.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let d = doc(&o, "labels");
        assert!(d["errors"][0]["message"].as_str().unwrap().contains(says), "{args:?}: {d}");
    }
}

fn walk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}
