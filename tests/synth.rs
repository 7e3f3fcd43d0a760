//! Synthetic run dirs with known figures: manifest.json, trials.jsonl and
//! traces/ written directly, as a run would leave them.

use std::path::Path;

use serde_json::{Value, json};

pub struct Synth<'a> {
    pub suite: &'a str,
    pub suite_sha256: &'a str,
    pub seed: u64,
    /// (case id, outcome letters by trial: a accepted, f failed, c critical, g grader error, i infra error)
    pub cases: Vec<(String, String)>,
    pub gates: Value,
    pub cost_per_trial: f64,
    pub partition: Option<&'a str>,
}

impl<'a> Synth<'a> {
    pub fn new(cases: &[(&str, &str)]) -> Self {
        Synth {
            suite: "synthetic",
            suite_sha256: "0123456789abcdef",
            seed: 1,
            cases: cases.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
            gates: json!([]),
            cost_per_trial: 0.01,
            partition: None,
        }
    }
}

fn check(name: &str, passed: Option<bool>, critical: bool, evidence: Value, error: Option<&str>) -> Value {
    json!({ "name": name, "passed": passed, "critical": critical, "evidence": evidence, "error": error })
}

/// Write the run dir; returns nothing, panics on I/O errors (tests only).
pub fn write(dir: &Path, s: &Synth) {
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    let cases: Vec<Value> = s
        .cases
        .iter()
        .map(|(id, o)| json!({ "id": id, "trials": o.len(), "revision": format!("rev-{id}"), "weight": 1.0, "tags": [], "difficulty": null }))
        .collect();
    let manifest = json!({
        "evalua_version": "test", "run_id": format!("synthetic-{}", s.seed), "suite": { "name": s.suite, "version": "1", "sha256": s.suite_sha256 },
        "cases": cases, "budget": { "max_tool_calls": 10 }, "trials": null, "seed": s.seed, "gates": s.gates, "partition": s.partition,
    });
    std::fs::write(dir.join("manifest.json"), serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    let mut lines = String::new();
    for (id, outcomes) in &s.cases {
        for (i, o) in outcomes.chars().enumerate() {
            let trial = i as u64 + 1;
            let outcome = match o {
                'a' => "accepted",
                'f' => "failed",
                'c' => "critical",
                'g' => "grader_error",
                'i' => "infra_error",
                _ => panic!("outcome letter {o}"),
            };
            let checks = if o == 'i' {
                vec![]
            } else {
                vec![
                    check(
                        "refund amount",
                        Some(o != 'f'),
                        false,
                        json!({ "expected": 19.9, "got": if o == 'f' { 59.7 } else { 19.9 } }),
                        None,
                    ),
                    check(
                        "no other order refunded",
                        Some(o != 'c'),
                        true,
                        json!({ "refunded": if o == 'c' { json!(["P-1"]) } else { json!([]) } }),
                        None,
                    ),
                    if o == 'g' {
                        check("judge: polite", None, false, Value::Null, Some("judge answered undeterminable"))
                    } else {
                        check("judge: polite", Some(true), false, json!("polite"), None)
                    },
                ]
            };
            let trace_path = format!("traces/{id}.{trial}.json");
            let calls = if o == 'i' {
                vec![]
            } else {
                vec![
                    json!({ "id": "c1", "name": "lookup_order", "args": { "order_id": "P-9930" }, "status": "executed", "effect": "read", "result": { "units": 3 }, "started_ms": 0.1, "ended_ms": 0.4 }),
                    json!({ "id": "c2", "name": "issue_refund", "args": { "order_id": if o == 'c' { "P-1" } else { "P-9930" }, "amount": if o == 'f' { 59.7 } else { 19.9 } }, "status": if o == 'f' { "denied" } else { "executed" }, "effect": "write", "error": if o == 'f' { json!("requires verify_identity") } else { Value::Null }, "started_ms": 0.5, "ended_ms": 0.9 }),
                ]
            };
            let usage = json!({ "input_tokens": 100, "output_tokens": 20, "cost_usd": s.cost_per_trial, "turns": 2, "tool_calls": calls.len(), "wall_ms": 10.0 });
            let wall = 10.0 + (trial as f64) + id.len() as f64;
            let error = if o == 'i' { json!("the agent would not start") } else { Value::Null };
            let ended = if o == 'i' { "not_started" } else { "final" };
            let record = json!({
                "case": id, "trial": trial, "seed": trial * 7 + id.len() as u64, "outcome": outcome, "ended": ended, "checks": checks,
                "calls": { "requested": calls.len(), "executed": calls.len() - (o == 'f') as usize, "failed": 0, "rejected": 0, "denied": (o == 'f') as usize, "faulted": 0 },
                "usage": usage, "wall_ms": wall, "answer": "Refunded 19.90", "error": error, "trace": trace_path,
            });
            lines.push_str(&record.to_string());
            lines.push('\n');
            let trace = json!({
                "case": id, "trial": trial, "seed": record["seed"], "input": "refund the missing unit", "outcome": outcome, "ended": ended,
                "answer": "Refunded 19.90", "error": error, "messages": [], "calls": calls, "outbox": [], "usage": usage,
                "checks": record["checks"], "log": [], "stderr_tail": null,
            });
            std::fs::write(dir.join(&trace_path), trace.to_string()).unwrap();
        }
    }
    std::fs::write(dir.join("trials.jsonl"), lines).unwrap();
}
