//! Traces (SPEC §9): `evalua grade` on the real-framework fixtures of
//! tests/fixtures/traces/ (checked against their ground truth in expected/),
//! the bad inputs a trace store produces, monitors and failure modes, checks
//! that are not applicable to a trace, the OTLP export (file and HTTP), and
//! the trace → golden flywheel (`evalua promote`, `suite:goldens`).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use serde_json::{Value, json};

use crate::common::*;

fn fixtures() -> PathBuf {
    repo().join("tests/fixtures/traces")
}

/// `evalua grade SUITE --traces PATHS… --out <tmp>/g` from the repo root.
fn grade(tmp: &Path, suite: &str, traces: &[&Path], extra: &[&str]) -> (std::process::Output, PathBuf) {
    let out = tmp.join(format!("g{}", fastrand::u32(..)));
    let mut args: Vec<String> = vec!["grade".into(), suite.into(), "--traces".into()];
    args.extend(traces.iter().map(|p| p.display().to_string()));
    args.extend(["--out".into(), out.display().to_string(), "-q".into()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (evalua(&repo(), &args), out)
}

/// Nothing could be graded: exit 2, the warnings first, then one error line.
fn no_items(o: &std::process::Output, warning: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.trim_end().lines().last().unwrap().contains("no item could be graded"), "{err}");
    assert!(err.contains(warning), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

fn graded_ok(o: &std::process::Output) {
    assert!(matches!(o.status.code(), Some(0 | 1)), "grade failed: {}{}", stdout(o), stderr(o));
    assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
}

/// The conversations of an expected/*.json file, by every key an item may carry.
fn expected(name: &str) -> (Vec<Value>, HashMap<String, usize>) {
    let e = json(&fixtures().join("expected").join(name));
    let convs = e["conversations"].as_array().unwrap().clone();
    let mut by = HashMap::new();
    for (i, c) in convs.iter().enumerate() {
        for k in ["conversation_id", "session_id", "trace_id"] {
            if let Some(s) = c[k].as_str() {
                by.insert(s.to_string(), i);
            }
        }
        for t in c["trace_ids"].as_array().into_iter().flatten() {
            by.insert(t.as_str().unwrap().to_string(), i);
        }
    }
    (convs, by)
}

fn sorted(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v.as_array().into_iter().flatten().map(|s| s.as_str().unwrap().to_string()).collect();
    out.sort();
    out
}

/// Every graded item agrees with the generator's ground truth: failure modes,
/// tool calls with their status, first user message and answer.
fn agrees_with_ground_truth(run: &Path, name: &str) {
    let (convs, by) = expected(name);
    let records = trials(run);
    assert_eq!(records.len(), convs.len(), "one item per conversation of {name}");
    let mut seen = vec![false; convs.len()];
    for r in &records {
        let src = &r["source"];
        let i = src["conversation_id"]
            .as_str()
            .and_then(|k| by.get(k))
            .or_else(|| src["trace_id"].as_str().and_then(|k| by.get(k)))
            .copied()
            .unwrap_or_else(|| panic!("no expected conversation for {src}"));
        seen[i] = true;
        let e = &convs[i];
        let what = format!("{} ({})", e["behaviour"], src);
        assert_eq!(sorted(&r["failure_modes"]), sorted(&e["expected_failure_modes"]), "failure modes of {what}");
        let calls: Vec<(String, String)> = r["tool_spans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["tool"].as_str().unwrap().into(), s["status"].as_str().unwrap().into()))
            .collect();
        let want: Vec<(String, String)> = e["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["tool"].as_str().unwrap().into(), c["status"].as_str().unwrap().into()))
            .collect();
        assert_eq!(calls, want, "tool calls of {what}");
        let trace = trace_of(run, r);
        assert_eq!(trace["input"], e["input"], "first user message of {what}");
        assert_eq!(r["answer"].as_str().unwrap(), e["answer"].as_str().unwrap_or(""), "answer of {what}");
        // A failed call carries its error text, as checks read it.
        for (c, w) in trace["calls"].as_array().unwrap().iter().zip(e["tool_calls"].as_array().unwrap()) {
            if w["status"] == "failed" {
                assert_eq!(c["error"], w["error"], "error of a failed call of {what}");
            }
        }
    }
    assert!(seen.iter().all(|s| *s), "every conversation of {name} graded");
}

fn sha256_of(p: &Path) -> String {
    use sha2::Digest;
    const_hex::encode(sha2::Sha256::digest(std::fs::read(p).unwrap()))
}

#[test]
fn grade_reads_pydantic_ai_traces_as_their_ground_truth_says() {
    let tmp = tempfile::tempdir().unwrap();
    let (o, run) = grade(tmp.path(), "suites/refunds_prod.lua", &[&fixtures().join("pydantic_ai")], &[]);
    graded_ok(&o);
    agrees_with_ground_truth(&run, "pydantic_ai.json");
    let m = json(&run.join("manifest.json"));
    assert_eq!(m["kind"], "graded");
    let inputs = m["trace_inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 3, "the folder's three files: {inputs:?}");
    for i in inputs {
        let p = repo().join(i["path"].as_str().unwrap());
        assert_eq!(i["sha256"].as_str().unwrap(), sha256_of(&p), "sha256 of {}", p.display());
    }
    let b64 = inputs.iter().find(|i| i["path"].as_str().unwrap().ends_with("base64_ids.pb.json")).unwrap();
    assert_eq!(b64["items"], 2, "base64 ids and enum names are read: {b64}");
    // Records name their source: file, trace and conversation.
    let r = &trials(&run)[0];
    assert!(
        r["source"]["file"].as_str().unwrap().ends_with(".json")
            || r["source"]["file"].as_str().unwrap().ends_with(".jsonl")
    );
    assert_eq!(r["source"]["trace_id"].as_str().unwrap().len(), 32);
    // A multi-turn conversation is one item over its two traces.
    let multi = trials(&run).into_iter().find(|r| r["source"]["trace_ids"].as_array().is_some_and(|a| a.len() == 2));
    assert!(multi.is_some(), "a two-trace conversation lists both traces");
    let s = json(&run.join("summary.json"));
    assert_eq!(s["monitors"]["tool_loop"]["n"], 32);
    assert_eq!(s["monitors"]["tool_loop"]["violations"], 7, "{}", s["monitors"]);
    assert!(stdout(&o).contains("monitors (failure modes"), "{}", stdout(&o));
    assert!(run.join("report.html").is_file() && run.join("report.md").is_file());
}

#[test]
fn grade_reads_llm_only_openinference_traces() {
    let tmp = tempfile::tempdir().unwrap();
    let (o, run) = grade(tmp.path(), "suites/refunds_prod.lua", &[&fixtures().join("openinference")], &[]);
    graded_ok(&o);
    agrees_with_ground_truth(&run, "openinference.json");
    // Usage comes from the model spans.
    let r = &trials(&run)[0];
    assert!(r["usage"]["input_tokens"].as_u64().unwrap() > 0, "{}", r["usage"]);
}

#[test]
fn trace_adapter_reads_a_home_grown_tracer() {
    let tmp = tempfile::tempdir().unwrap();
    let spans = fixtures().join("homegrown/spans.jsonl");
    // Without an adapter nothing in these spans is a known convention.
    // Each item is skipped with a warning naming the file and the trace.
    let (o, _) = grade(tmp.path(), "suites/refunds.lua", &[&spans], &[]);
    no_items(&o, "spans.jsonl: trace 935816921fe2361e7b99d3e7d6a2b3e0: no GenAI, OpenInference or adapted span");
    // With the suite's adapter: the same ground truth as the OTLP fixtures.
    let (o, run) = grade(tmp.path(), "suites/refunds_prod.lua", &[&spans], &[]);
    graded_ok(&o);
    agrees_with_ground_truth(&run, "homegrown.json");
    let r = &trials(&run)[0];
    assert!(r["usage"]["output_tokens"].as_u64().unwrap() > 0, "the adapter's usage: {}", r["usage"]);
}

#[test]
fn an_adapter_that_fails_skips_its_items_and_says_why() {
    let dir = project(&[(
        "s.lua",
        r#"local evalua = require("evalua")
           return evalua.suite { name = "s", monitors = { ok = function(t) return true end },
             trace_adapter = function(span)
               if span.name == "ticket" and span.attributes["acme.channel"] == "chat" then error("boom") end
               if span.attributes["acme.tool"] then return { call = { name = span.attributes["acme.tool"] }, weird = 1 } end
               return nil
             end }"#,
    )]);
    let spans = fixtures().join("homegrown/spans.jsonl");
    let o = evalua(dir.path(), &["grade", "s.lua", "--traces", spans.to_str().unwrap(), "--out", "out", "-q"]);
    let err = stderr(&o);
    assert!(err.contains("trace_adapter failed") && err.contains("unknown key"), "{err}");
    assert!(err.contains("spans.jsonl: trace "), "names the file and trace: {err}");
}

#[test]
fn grade_goes_on_past_bad_records_and_names_them() {
    let tmp = tempfile::tempdir().unwrap();
    let edge = fixtures().join("edge");
    let cases: [(&str, Option<usize>, &[&str]); 7] = [
        ("malformed_line.otlp.jsonl", Some(2), &["malformed_line.otlp.jsonl:2: not readable"]),
        ("truncated_last_line.otlp.jsonl", Some(2), &["truncated_last_line.otlp.jsonl:3:", "truncated"]),
        ("blank_lines_crlf.otlp.jsonl", Some(2), &[]),
        ("duplicated_batch.otlp.jsonl", Some(1), &["appear more than once"]),
        (
            "orphans.otlp.jsonl",
            Some(2),
            &["trace 6a87df73c6fe259cef21532d858e463f: 4 span(s) point at a parent span that is not in the input"],
        ),
        ("empty.otlp.jsonl", None, &["empty.otlp.jsonl: empty file"]),
        ("no_known_spans.otlp.jsonl", None, &["trace 7f96d9d34323ff120fde3897d941bf30: no GenAI"]),
    ];
    for (file, items, warnings) in cases {
        let (o, run) = grade(tmp.path(), "suites/refunds_prod.lua", &[&edge.join(file)], &[]);
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{file}: {err}");
        for w in warnings {
            assert!(err.contains(w), "{file}: expected a warning containing {w:?}: {err}");
        }
        match items {
            Some(n) => {
                graded_ok(&o);
                assert_eq!(trials(&run).len(), n, "{file}: items");
                for w in warnings {
                    let m = json(&run.join("manifest.json"));
                    assert!(
                        m["warnings"].as_array().unwrap().iter().any(|x| x.as_str().unwrap().contains(w)),
                        "{file}: manifest warnings"
                    );
                }
            }
            None => no_items(&o, warnings[0]),
        }
    }
    // Duplicated batch: one lookup_order call, not two.
    let (_, run) = grade(tmp.path(), "suites/refunds_prod.lua", &[&edge.join("duplicated_batch.otlp.jsonl")], &[]);
    assert_eq!(trials(&run)[0]["calls"]["requested"], 1);
    // Orphans: the answer comes from the last chat span, so the false claim is still caught.
    let (_, run) = grade(tmp.path(), "suites/refunds_prod.lua", &[&edge.join("orphans.otlp.jsonl")], &[]);
    let modes: Vec<Vec<String>> = trials(&run).iter().map(|r| sorted(&r["failure_modes"])).collect();
    assert!(modes.contains(&vec!["stopped_before_database_update".to_string()]), "{modes:?}");
    assert!(modes.contains(&vec!["missing_identity_verification".to_string()]), "{modes:?}");
    // One bad file among good ones: the others are graded.
    let (o, run) = grade(
        tmp.path(),
        "suites/refunds_prod.lua",
        &[&edge.join("empty.otlp.jsonl"), &fixtures().join("pydantic_ai/one_trace.otlp.json")],
        &[],
    );
    graded_ok(&o);
    assert_eq!(trials(&run).len(), 1);
}

#[test]
fn bad_trace_paths_are_input_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let (o, _) = grade(tmp.path(), "suites/refunds_prod.lua", &[Path::new("no/such/dir")], &[]);
    assert_user_error(&o, "no/such/dir: no such file or folder");
    let empty = tempfile::tempdir().unwrap();
    let (o, _) = grade(tmp.path(), "suites/refunds_prod.lua", &[empty.path()], &[]);
    assert_user_error(&o, "no trace files");
}

/// A copy of refunds_prod.otlp.jsonl with every id made unique for copy `n`.
fn fresh_ids(line: &str, n: usize) -> String {
    let re = regex::Regex::new(r#""(traceId|spanId|parentSpanId)":"([0-9a-f]{8})"#).unwrap();
    let line = re.replace_all(line, |c: &regex::Captures| format!("\"{}\":\"{n:08x}", &c[1]));
    let conv = regex::Regex::new(r#"("key":"gen_ai.conversation.id","value":\{"stringValue":")([0-9a-f]{8})"#).unwrap();
    conv.replace_all(&line, |c: &regex::Captures| format!("{}{n:08x}", &c[1])).into_owned()
}

/// Peak RSS of a child in MB, from /proc while it runs.
fn run_measuring(cmd: &mut std::process::Command) -> (std::process::Output, f64) {
    let child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let peak = Arc::new(Mutex::new(0f64));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (p2, d2) = (peak.clone(), done.clone());
    let sampler = std::thread::spawn(move || {
        while !d2.load(std::sync::atomic::Ordering::Relaxed) {
            if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status"))
                && let Some(l) = s.lines().find(|l| l.starts_with("VmHWM:"))
            {
                let kb: f64 = l.split_whitespace().nth(1).unwrap().parse().unwrap();
                let mut p = p2.lock().unwrap();
                *p = p.max(kb / 1024.0);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    });
    let out = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    sampler.join().unwrap();
    let p = *peak.lock().unwrap();
    (out, p)
}

/// 100 MB of production traces (made here, not committed) are streamed: every
/// conversation graded, memory far below the input's size.
#[test]
fn a_huge_trace_file_is_streamed_in_flat_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(fixtures().join("pydantic_ai/refunds_prod.otlp.jsonl")).unwrap();
    let lines: Vec<&str> = src.lines().collect();
    let big = tmp.path().join("big.otlp.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
    let mut copies = 0;
    let mut written = 0usize;
    while written < 100_000_000 {
        for l in &lines {
            let l = fresh_ids(l, copies + 1);
            written += l.len() + 1;
            writeln!(f, "{l}").unwrap();
        }
        copies += 1;
    }
    drop(f);
    let size_mb = std::fs::metadata(&big).unwrap().len() as f64 / 1e6;
    let out = tmp.path().join("run");
    let (o, peak) = run_measuring(bin().current_dir(repo()).args([
        "grade",
        "suites/refunds_prod.lua",
        "--traces",
        big.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]));
    graded_ok(&o);
    assert_eq!(trials(&out).len(), 29 * copies, "every conversation of every copy is graded");
    eprintln!("grade of {size_mb:.0} MB ({copies} copies, {} items): peak RSS {peak:.0} MB", 29 * copies);
    // The input is never held: the peak (which includes the binary and the
    // reports written at the end) stays below the file's size.
    assert!(peak < size_mb * 0.8, "memory stays below the input's size: {peak:.0} MB for {size_mb:.0} MB");
}

/// A single line larger than a record may be (64 MiB) is named and skipped;
/// the lines around it are graded.
#[test]
fn an_oversized_line_is_refused_and_the_others_are_graded() {
    let tmp = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(fixtures().join("pydantic_ai/refunds_prod.otlp.jsonl")).unwrap();
    let lines: Vec<&str> = src.lines().collect();
    let p = tmp.path().join("huge_line.otlp.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    for l in &lines[..lines.len() - 1] {
        writeln!(f, "{l}").unwrap();
    }
    write!(f, r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"ffffffffffffffffffffffffffffffff","spanId":"ffffffffffffffff","name":"x","attributes":[{{"key":"blob","value":{{"stringValue":""#).unwrap();
    let chunk = "a".repeat(1 << 20);
    for _ in 0..70 {
        f.write_all(chunk.as_bytes()).unwrap();
    }
    writeln!(f, r#""}}}}]}}]}}]}}]}}"#).unwrap();
    writeln!(f, "{}", lines[lines.len() - 1]).unwrap();
    drop(f);
    let (o, run) = grade(tmp.path(), "suites/refunds_prod.lua", &[&p], &[]);
    graded_ok(&o);
    let err = stderr(&o);
    let n = lines.len();
    assert!(
        err.contains(&format!(
            "huge_line.otlp.jsonl:{n}: a line of 73 MB, more than the 64 MiB a record may have: skipped"
        )),
        "{err}"
    );
    assert_eq!(trials(&run).len(), 29, "every conversation around the huge line is graded");
}

#[test]
fn checks_that_need_state_are_not_applicable_never_a_pass() {
    let dir = project(&[(
        "s.lua",
        r#"local evalua = require("evalua")
           local check = require("evalua.check")
           local suite = evalua.suite { name = "na", sandbox = { db = "sqlite" },
             agent = evalua.agent.scripted(function() return "x" end),
             match = function(item) if item.input:find("P%-9930") then return "c1" end end }
           suite:tool { name = "lookup_order", effect = "read", run = function() return {} end }
           suite:case { id = "c1", input = "x", expect = {
             check.sql("SELECT 1", { equals = 1 }),
             check.outbox { count = 1 },
             { name = "sneaky", run = function(t) pcall(function() return t.db end); return true, "ok" end },
             { name = "spans", run = function(t)
                 local tools = 0
                 for _, s in ipairs(t.spans) do if s.attributes["gen_ai.tool.name"] then tools = tools + 1 end end
                 return tools == #t.calls and #t.spans > 0, { spans = #t.spans, tools = tools } end },
             check.tools({ "lookup_order" }),
           } }
           return suite"#,
    )]);
    let trace = fixtures().join("pydantic_ai/one_trace.otlp.json");
    let o = evalua(dir.path(), &["grade", "s.lua", "--traces", trace.to_str().unwrap(), "--out", "out", "-q"]);
    graded_ok(&o);
    let r = &trials(&dir.path().join("out"))[0];
    assert_eq!(r["case"], "c1", "match assigned the item to its case");
    for name in ["sql: SELECT 1", "outbox", "sneaky"] {
        let c = check(r, name);
        assert_eq!(c["passed"], Value::Null, "{name}: {c}");
        assert!(c["not_applicable"].as_str().unwrap().contains("recorded trace"), "{name}: {c}");
        assert_eq!(c["error"], Value::Null, "not a grader error: {c}");
    }
    assert_eq!(check(r, "spans")["passed"], true, "{}", check(r, "spans"));
    assert_eq!(r["outcome"], "accepted", "the verdict comes from the checks that apply");
    let s = json(&dir.path().join("out/summary.json"));
    assert_eq!(s["figures"]["not_applicable_checks"], 3);
    assert_eq!(s["figures"]["grader_errors"], 0);
    let sql = s["checks"].as_array().unwrap().iter().find(|c| c["name"] == "sql: SELECT 1").unwrap();
    assert_eq!(
        (sql["not_applicable"].as_u64(), sql["passed"].as_u64(), sql["pass_rate"].clone()),
        (Some(1), Some(0), Value::Null)
    );
    assert!(stdout(&o).contains("not applicable 3"), "{}", stdout(&o));
}

#[test]
fn monitors_label_run_trials_and_checks_see_the_failure_modes() {
    let dir = project(&[(
        "s.lua",
        r#"local evalua = require("evalua")
           local check = require("evalua.check")
           local suite = evalua.suite { name = "m", trials = 4,
             agent = evalua.agent.scripted(function(task, env)
               env.call("ping", {}); env.call("ping", {}); env.call("ping", {})
               if task.trial % 2 == 0 then env.call("ping", {}) end
               return "done" end),
             monitors = { looping = check.no_loops { max_repeats = 3 }, never = function(t) return true end } }
           suite:tool { name = "ping", run = function() return {} end }
           suite:case { id = "c", input = "x", expect = {
             { name = "sees modes", run = function(t) return true, table.concat(t.failure_modes, ",") end } } }
           return suite"#,
    )]);
    let o = run_suite(dir.path(), "s.lua", &[]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let recs = trials(&dir.path().join("out"));
    for r in &recs {
        let t = r["trial"].as_u64().unwrap();
        let want: Vec<&str> = if t % 2 == 0 { vec!["looping"] } else { vec![] };
        assert_eq!(r["failure_modes"], json!(want), "trial {t}");
        assert_eq!(check(r, "sees modes")["evidence"], json!(want.join(",")), "t.failure_modes in trial {t}");
        assert_eq!(check(r, "looping")["monitor"], "looping");
        assert_eq!(r["outcome"], if t % 2 == 0 { "failed" } else { "accepted" });
    }
    let s = json(&dir.path().join("out/summary.json"));
    let m = &s["monitors"]["looping"];
    assert_eq!((m["violations"].as_u64(), m["n"].as_u64()), (Some(2), Some(4)));
    // Wilson 95% for 2 of 4.
    let (z, n, p) = (1.959963984540054f64, 4.0f64, 0.5f64);
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
    assert!(
        close(m["low"].as_f64().unwrap(), centre - half) && close(m["high"].as_f64().unwrap(), centre + half),
        "{m}"
    );
    assert_eq!(s["monitors"]["never"]["violations"], 0);
    let report = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(report.contains("<h2>Monitors</h2>") && report.contains("looping"), "report.html shows the monitors");
    assert!(stdout(&o).contains("looping") && stdout(&o).contains("2 / 4"), "{}", stdout(&o));
    // Per-tool figures: 14 pings, none failed, latencies.
    let ping = &s["tools"]["ping"];
    assert_eq!((ping["calls"].as_u64(), ping["errors"].as_u64()), (Some(14), Some(0)), "{ping}");
    assert!(ping["p95_ms"].as_f64().unwrap() >= ping["p50_ms"].as_f64().unwrap());
}

#[test]
fn monitors_are_declared_strictly() {
    let dir = project(&[(
        "s.lua",
        "local evalua = require('evalua')\nlocal s = evalua.suite { name = 's',\n  monitors = { loop = 42 } }\nreturn s",
    )]);
    assert_user_error(
        &evalua(dir.path(), &["check", "s.lua"]),
        "s.lua:2: evalua.suite.monitors.loop: a monitor is a check",
    );
}

#[test]
fn first_failing_span_is_recorded_and_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let (o, run) =
        grade(tmp.path(), "suites/refunds_prod.lua", &[&fixtures().join("pydantic_ai/one_trace.otlp.json")], &[]);
    graded_ok(&o);
    let r = &trials(&run)[0];
    // refund_failed_then_claims: issue_refund (the third call) failed with "database is locked".
    let f = &r["first_failure"];
    assert_eq!(
        (f["kind"].as_str(), f["name"].as_str(), f["call"].as_u64()),
        (Some("tool"), Some("issue_refund"), Some(3)),
        "{f}"
    );
    assert_eq!(f["error"], "database is locked");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        html.contains("first failing span") && html.contains("issue_refund (call 3, failed"),
        "report.html names it"
    );
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(md.contains("first failing span: issue_refund (call 3, failed"), "{md}");
    // In a run: the refunds bot's denied refunds.
    let dir = tempfile::tempdir().unwrap();
    let o = evalua(
        &repo(),
        &["run", "suites/refunds.lua", "--seed", "7", "-q", "--out", dir.path().join("r").to_str().unwrap()],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)));
    let recs = trials(&dir.path().join("r"));
    let denied = recs.iter().find(|r| r["calls"]["denied"].as_u64() > Some(0)).expect("a denied call");
    assert_eq!(denied["first_failure"]["status"], "denied", "{}", denied["first_failure"]);
    assert!(
        recs.iter().filter(|r| r["calls"]["requested"] == r["calls"]["executed"]).all(|r| r["first_failure"].is_null())
    );
}

// ---------------------------------------------------------------------------
// Export.

fn requests_of_file(p: &Path) -> Vec<ExportTraceServiceRequest> {
    std::fs::read_to_string(p).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn attr<'a>(kvs: &'a [opentelemetry_proto::tonic::common::v1::KeyValue], key: &str) -> Option<&'a any_value::Value> {
    kvs.iter().find(|k| k.key == key).and_then(|k| k.value.as_ref()).and_then(|v| v.value.as_ref())
}

fn text(v: Option<&any_value::Value>) -> String {
    match v {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        other => format!("{other:?}"),
    }
}

/// Spans by name kind: (roots, tool spans) of a set of requests.
fn spans_of(reqs: &[ExportTraceServiceRequest]) -> Vec<opentelemetry_proto::tonic::trace::v1::Span> {
    reqs.iter()
        .flat_map(|r| r.resource_spans.iter())
        .flat_map(|rs| rs.scope_spans.iter())
        .flat_map(|ss| ss.spans.clone())
        .collect()
}

/// The spans of a run follow SPEC §9's table.
fn check_run_spans(spans: &[opentelemetry_proto::tonic::trace::v1::Span], run: &Path, content: bool) {
    let records = trials(run);
    let manifest = json(&run.join("manifest.json"));
    let run_id = manifest["run_id"].as_str().unwrap();
    let roots: Vec<_> = spans.iter().filter(|s| s.parent_span_id.is_empty()).collect();
    assert_eq!(roots.len(), records.len(), "one root span per trial");
    for r in &records {
        let (case, trial) = (r["case"].as_str().unwrap(), r["trial"].as_u64().unwrap());
        let want_id = {
            use sha2::Digest;
            const_hex::encode(&sha2::Sha256::digest(format!("evalua/{run_id}/{case}/{trial}").as_bytes())[..16])
        };
        let root =
            roots.iter().find(|s| const_hex::encode(&s.trace_id) == want_id).expect("the trace id follows the rule");
        assert_eq!(root.name, "invoke_agent refunds");
        assert_eq!(text(attr(&root.attributes, "gen_ai.operation.name")), "invoke_agent");
        assert_eq!(text(attr(&root.attributes, "gen_ai.conversation.id")), format!("{run_id}/{case}/{trial}"));
        assert_eq!(text(attr(&root.attributes, "evalua.outcome")), r["outcome"].as_str().unwrap());
        assert_eq!(text(attr(&root.attributes, "evalua.case")), case);
        assert_eq!(attr(&root.attributes, "gen_ai.input.messages").is_some(), content);
        let evals: Vec<_> = root.events.iter().filter(|e| e.name == "gen_ai.evaluation.result").collect();
        assert_eq!(evals.len(), r["checks"].as_array().unwrap().len(), "one evaluation event per check");
        for (e, c) in evals.iter().zip(r["checks"].as_array().unwrap()) {
            assert_eq!(text(attr(&e.attributes, "gen_ai.evaluation.name")), c["name"].as_str().unwrap());
            let label = match c["passed"].as_bool() {
                Some(true) => "pass",
                Some(false) => "fail",
                None => "error",
            };
            assert_eq!(text(attr(&e.attributes, "gen_ai.evaluation.score.label")), label);
        }
        let tools: Vec<_> =
            spans.iter().filter(|s| s.trace_id == root.trace_id && s.name.starts_with("execute_tool ")).collect();
        assert_eq!(tools.len() as u64, r["calls"]["requested"].as_u64().unwrap(), "one execute_tool span per call");
        for t in tools {
            assert_eq!(t.parent_span_id, root.span_id);
            let status = text(attr(&t.attributes, "evalua.tool.status"));
            let code = t.status.as_ref().map(|s| s.code).unwrap_or(0);
            assert_eq!(code == 2, status != "executed", "status ERROR unless executed ({status})");
            if status != "executed" {
                assert_eq!(text(attr(&t.attributes, "error.type")), status);
            }
            assert_eq!(attr(&t.attributes, "gen_ai.tool.call.arguments").is_some(), content);
        }
    }
}

#[test]
fn a_run_exports_to_a_file_and_the_file_grades_back_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let file = tmp.path().join("spans.jsonl");
    let o = evalua(
        &repo(),
        &[
            "run",
            "suites/refunds.lua",
            "--seed",
            "7",
            "-q",
            "--out",
            run.to_str().unwrap(),
            "--otlp-file",
            file.to_str().unwrap(),
        ],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(stdout(&o).contains(&format!("exported 15 trial trace(s) to {}", file.display())), "{}", stdout(&o));
    let m = json(&run.join("manifest.json"));
    let e = &m["exports"][0];
    assert_eq!(e["file"], file.display().to_string());
    assert_eq!(e["project"], "refunds");
    assert!(e["semconv"].as_str().unwrap().starts_with("https://opentelemetry.io/schemas/"));
    let reqs = requests_of_file(&file);
    let rs = &reqs[0].resource_spans[0];
    let res = &rs.resource.as_ref().unwrap().attributes;
    assert_eq!(text(attr(res, "service.name")), "evalua");
    assert_eq!(text(attr(res, "openinference.project.name")), "refunds");
    assert_eq!(text(attr(res, "evalua.run_id")), m["run_id"].as_str().unwrap());
    check_run_spans(&spans_of(&reqs), &run, true);

    // Grade the exported traces back: the same calls, answers and failure modes.
    let (o, graded) = grade(tmp.path(), "suites/refunds.lua", &[&file], &[]);
    graded_ok(&o);
    let by: BTreeMap<(String, u64), Value> = trials(&run)
        .into_iter()
        .map(|r| ((r["case"].as_str().unwrap().to_string(), r["trial"].as_u64().unwrap()), r))
        .collect();
    let back = trials(&graded);
    assert_eq!(back.len(), 15);
    for g in &back {
        let r = &by[&(g["case"].as_str().unwrap().to_string(), g["trial"].as_u64().unwrap())];
        assert_eq!(g["failure_modes"], r["failure_modes"]);
        assert_eq!(g["answer"], r["answer"]);
        assert_eq!(g["calls"], r["calls"], "statuses survive the round trip, denied ones too");
        // The case's database checks are not applicable to a trace; the trajectory checks agree.
        for (a, b) in g["checks"].as_array().unwrap().iter().zip(r["checks"].as_array().unwrap()) {
            assert_eq!(a["name"], b["name"]);
            let state = ["sql:", "exactly one refund", "one email", "no refund", "prohibited:"];
            if state.iter().any(|p| a["name"].as_str().unwrap().starts_with(p)) {
                assert!(a["not_applicable"].is_string(), "{a}");
            } else {
                assert_eq!(a["passed"], b["passed"], "{a} vs {b}");
            }
        }
    }

    // Without content: no arguments, results, messages.
    let bare = tmp.path().join("bare.jsonl");
    let o =
        evalua(&repo(), &["export", run.to_str().unwrap(), "--otlp-file", bare.to_str().unwrap(), "--otlp-no-content"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    check_run_spans(&spans_of(&requests_of_file(&bare)), &run, false);
    let m = json(&run.join("manifest.json"));
    assert_eq!(m["exports"].as_array().unwrap().len(), 2, "evalua export records itself in the manifest");
    assert_eq!(m["exports"][1]["content"], false);
}

/// Each request a collector received: its headers and body.
type Requests = Arc<Mutex<Vec<(HashMap<String, String>, Vec<u8>)>>>;

/// A minimal OTLP/HTTP collector: records each request's headers and body.
struct Collector {
    url: String,
    requests: Requests,
}

fn collector() -> Collector {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let r2 = requests.clone();
    std::thread::spawn(move || {
        for stream in l.incoming() {
            let Ok(stream) = stream else { continue };
            let r3 = r2.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut headers = HashMap::new();
                    headers.insert(":path".to_string(), line.split_whitespace().nth(1).unwrap_or("").to_string());
                    loop {
                        let mut h = String::new();
                        reader.read_line(&mut h).unwrap();
                        let h = h.trim_end();
                        if h.is_empty() {
                            break;
                        }
                        let (k, v) = h.split_once(':').unwrap();
                        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
                    }
                    let n: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
                    let mut body = vec![0; n];
                    reader.read_exact(&mut body).unwrap();
                    r3.lock().unwrap().push((headers, body));
                    let _ = out.write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
                    );
                }
            });
        }
    });
    Collector { url, requests }
}

#[test]
fn otlp_http_sends_protobuf_where_the_standard_variables_say() {
    use prost::Message;
    let c = collector();
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    // No --otlp: OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces) and OTEL_EXPORTER_OTLP_HEADERS.
    let o = bin()
        .current_dir(repo())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &c.url)
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-team=refunds,authorization=Bearer%20t0k")
        .args(["run", "suites/refunds.lua", "--seed", "7", "-q", "--out", run.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(stdout(&o).contains("exported 15 trial trace(s) to"), "{}", stdout(&o));
    let reqs = c.requests.lock().unwrap().clone();
    assert!(!reqs.is_empty());
    let mut decoded = Vec::new();
    for (h, body) in &reqs {
        assert_eq!(h[":path"], "/v1/traces");
        assert_eq!(h["content-type"], "application/x-protobuf", "exactly, as Phoenix requires");
        assert_eq!(h["x-team"], "refunds");
        assert_eq!(h["authorization"], "Bearer t0k");
        decoded.push(ExportTraceServiceRequest::decode(body.as_slice()).unwrap());
    }
    check_run_spans(&spans_of(&decoded), &run, true);
    let m = json(&run.join("manifest.json"));
    assert_eq!(m["exports"][0]["endpoint"], format!("{}/v1/traces", c.url));
}

#[test]
fn a_dead_collector_changes_no_outcome_and_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let plain = evalua(&repo(), &["run", "suites/refunds.lua", "--seed", "7", "-q", "--out", a.to_str().unwrap()]);
    let url = format!("http://127.0.0.1:{port}");
    let dead = evalua(
        &repo(),
        &["run", "suites/refunds.lua", "--seed", "7", "-q", "--out", b.to_str().unwrap(), "--otlp", &url],
    );
    assert_eq!(plain.status.code(), dead.status.code(), "{}", stderr(&dead));
    assert_eq!(without_timings(&a), without_timings(&b), "the same trials");
    assert!(
        stdout(&dead).contains(&format!("export to {url}/v1/traces: 15 of 15 trial trace(s) not delivered")),
        "{}",
        stdout(&dead)
    );
    assert!(stdout(&dead).contains("outcomes are unaffected"));
    // `evalua export` to a dead collector is evalua's environment failing: exit 3, one line.
    let o = evalua(&repo(), &["export", a.to_str().unwrap(), "--otlp", &url]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("not delivered"));
    // Bad URLs are input errors.
    assert_user_error(
        &evalua(&repo(), &["export", a.to_str().unwrap(), "--otlp", "localhost:4318"]),
        "is not an http:// or https:// URL",
    );
    assert_user_error(&evalua(&repo(), &["export", a.to_str().unwrap()]), "give --otlp URL or --otlp-file FILE");
}

#[test]
fn grade_reads_an_evalua_run_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let o = evalua(&repo(), &["run", "suites/refunds.lua", "--seed", "7", "-q", "--out", run.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)));
    let (o, g) = grade(tmp.path(), "suites/refunds.lua", &[&run], &[]);
    graded_ok(&o);
    let a = trials(&run);
    let b = trials(&g);
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!((&x["case"], &x["trial"], &x["failure_modes"]), (&y["case"], &y["trial"], &y["failure_modes"]));
        assert_eq!((&x["calls"], &x["answer"]), (&y["calls"], &y["answer"]));
        let sql = y["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"].as_str().unwrap().starts_with("prohibited:"))
            .unwrap();
        assert!(sql["not_applicable"].is_string(), "{sql}");
    }
    assert_eq!(json(&g.join("manifest.json"))["trace_inputs"][0]["format"], "run_dir");
}

// ---------------------------------------------------------------------------
// The flywheel.

#[test]
fn promote_clusters_dedupes_and_versions_and_goldens_run() {
    let tmp = tempfile::tempdir().unwrap();
    let pd = fixtures().join("pydantic_ai");
    // First the bulk of production, then the two other files.
    let (_, first) = grade(tmp.path(), "suites/refunds_prod.lua", &[&pd.join("refunds_prod.otlp.jsonl")], &[]);
    let (_, second) = grade(
        tmp.path(),
        "suites/refunds_prod.lua",
        &[&pd.join("one_trace.otlp.json"), &pd.join("base64_ids.pb.json")],
        &[],
    );
    let goldens = tmp.path().join("goldens/refunds.lua");
    let g = goldens.to_str().unwrap();
    // promote writes the module, not its folder.
    std::fs::create_dir(tmp.path().join("goldens")).unwrap();
    let o = evalua(&repo(), &["promote", first.to_str().unwrap(), "--into", g]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Up to three wordings a cluster: 17 cases for 10 clusters.
    assert!(stdout(&o).contains("18 flagged item(s) in 10 cluster(s): 17 new golden case(s)"), "{}", stdout(&o));
    let v1 = std::fs::read_to_string(&goldens).unwrap();
    assert!(v1.contains("version = 1,"));
    // Promoting the same run again changes nothing, byte for byte.
    let o = evalua(&repo(), &["promote", first.to_str().unwrap(), "--into", g]);
    assert!(stdout(&o).contains("unchanged (version 1, 17 case(s))"), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(&goldens).unwrap(), v1);
    // New traces of known clusters: one is a new wording (a case while its
    // cluster has room), one joins its case; a case was added: version 2.
    let o = evalua(&repo(), &["promote", second.to_str().unwrap(), "--into", g]);
    assert!(
        stdout(&o).contains("1 new golden case(s), 1 case(s) with new traces (2 trace id(s) added)"),
        "{}",
        stdout(&o)
    );
    let v2 = std::fs::read_to_string(&goldens).unwrap();
    assert!(v2.contains("version = 2,"));
    let (convs, _) = expected("pydantic_ai.json");
    let b64 = convs
        .iter()
        .find(|c| {
            c["file"].as_str().unwrap().ends_with("base64_ids.pb.json")
                && c["behaviour"] == "missing_identity_verification"
        })
        .unwrap();
    assert!(v2.contains(b64["trace_ids"][0].as_str().unwrap()), "the base64 conversation's trace joins its cluster");
    // --mode keeps one failure mode's items.
    let only = tmp.path().join("loops.lua");
    let o =
        evalua(&repo(), &["promote", first.to_str().unwrap(), "--into", only.to_str().unwrap(), "--mode", "tool_loop"]);
    assert!(stdout(&o).contains("7 flagged item(s) in 5 cluster(s)"), "{}", stdout(&o));
    assert_user_error(
        &evalua(&repo(), &["promote", first.to_str().unwrap(), "--into", g, "--mode", "nope"]),
        "--mode nope: not a monitor",
    );
}

#[test]
fn the_example_flywheel_runs() {
    // suites/refunds_goldens.lua declares suites/goldens/refunds.lua's cases.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("gold");
    let o =
        evalua(&repo(), &["run", "suites/refunds_goldens.lua", "--seed", "3", "-q", "--out", out.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let m = json(&out.join("manifest.json"));
    assert_eq!(m["cases"].as_array().unwrap().len(), 10);
    let recs = trials(&out);
    let r =
        recs.iter().find(|r| r["case"].as_str().unwrap().starts_with("golden_missing_identity_verification")).unwrap();
    assert!(
        r["checks"].as_array().unwrap().iter().any(|c| c["name"] == "does not re-fire missing_identity_verification")
    );
    // A golden case whose trial re-fires its mode fails.
    for r in &recs {
        for c in r["checks"].as_array().unwrap() {
            if let Some(mode) = c["name"].as_str().unwrap().strip_prefix("does not re-fire ") {
                let fired = r["failure_modes"].as_array().unwrap().iter().any(|m| m == mode);
                assert_eq!(c["passed"], !fired, "{}: {mode}", r["case"]);
            }
        }
    }
}

#[test]
fn goldens_must_name_the_suites_monitors() {
    let dir = project(&[
        (
            "goldens/x.lua",
            r#"return { version = 1, cases = { { id = "g1", input = "hola", failure_modes = { "nope" } } } }"#,
        ),
        (
            "s.lua",
            "local evalua = require('evalua')\nlocal s = evalua.suite { name = 's', agent = evalua.agent.scripted(function() return '' end) }\ns:goldens(require('goldens.x'))\nreturn s",
        ),
    ]);
    assert_user_error(
        &evalua(dir.path(), &["check", "s.lua"]),
        "s.lua:3: suite:goldens: cases[1] ('g1') names failure mode 'nope', which is not a monitor of this suite",
    );
    std::fs::write(dir.path().join("goldens/x.lua"), "return { cases = 3 }").unwrap();
    assert_user_error(&evalua(dir.path(), &["check", "s.lua"]), "suite:goldens: expects a goldens module");
}

/// `grade` and `regrade` go through the same engine and sinks as `run`: their
/// trials reach the OTLP export (and the manifest says so), and the progress
/// display follows them.
#[test]
fn graded_and_regraded_runs_reach_the_same_sinks_as_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let o = evalua(&repo(), &["run", "suites/refunds.lua", "--seed", "7", "-q", "--out", run.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));

    // A grade of the run dir, exported to a file.
    let file = tmp.path().join("graded.jsonl");
    let (o, graded) = grade(tmp.path(), "suites/refunds.lua", &[&run], &["--otlp-file", file.to_str().unwrap()]);
    graded_ok(&o);
    assert!(stdout(&o).contains(&format!("exported 15 trial trace(s) to {}", file.display())), "{}", stdout(&o));
    let m = json(&graded.join("manifest.json"));
    assert_eq!(m["exports"][0]["file"], file.display().to_string(), "{}", m["exports"]);
    let ids: std::collections::BTreeSet<Vec<u8>> =
        spans_of(&requests_of_file(&file)).iter().map(|s| s.trace_id.clone()).collect();
    assert_eq!(ids.len(), 15, "one trace per graded trial");

    // A re-grade, exported too, with the line display of its progress.
    let file = tmp.path().join("regraded.jsonl");
    let out = tmp.path().join("regraded");
    let o = bin()
        .current_dir(repo())
        .args(["regrade", run.to_str().unwrap(), "--jobs", "1", "--out", out.to_str().unwrap()])
        .args(["--otlp-file", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(stderr(&o).contains("running 3 cases of refunds (15 trials)"), "{}", stderr(&o));
    assert!(stdout(&o).contains(&format!("exported 15 trial trace(s) to {}", file.display())), "{}", stdout(&o));
    assert_eq!(json(&out.join("manifest.json"))["exports"][0]["file"], file.display().to_string());

    // Grading without -q and without a terminal: a start line.
    let o = bin()
        .current_dir(repo())
        .args(["grade", "suites/refunds.lua", "--traces", run.to_str().unwrap()])
        .args(["--out", tmp.path().join("g2").to_str().unwrap()])
        .output()
        .unwrap();
    graded_ok(&o);
    assert!(stderr(&o).contains("grading with refunds"), "{}", stderr(&o));
}
