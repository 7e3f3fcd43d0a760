//! `evalua mock-judge RULES.json`: an OpenAI-compatible judge server on
//! 127.0.0.1 that answers evalua's rubric and pairwise requests from a rules
//! file, offline, with no model and no key. For trying judges, calibration
//! and cascades before paying for a model, and for tests.
//!
//! The rules file (JSON):
//!
//! ```json
//! { "rubric": [
//!     { "criterion": "refunded amount", "matches": "19[,.]90", "verdict": "pass" },
//!     { "criterion": "refunded amount", "verdict": "fail", "failure_mode": "amount missing from the reply" },
//!     { "verdict": "pass" } ],
//!   "pairwise": [ { "prefer": "P-9930" } ] }
//! ```
//!
//! For each criterion of a rubric request the first rule that fits decides:
//! `criterion` (a case-insensitive part of the criterion's text; absent: any)
//! and `matches` (a regex searched in the data block `in`: `final_answer`
//! (the default), `task`, `conversation`, `tool_calls`, `outbox` or `any`;
//! absent: always). Its `verdict` is `pass`, `fail` or `undeterminable`; the
//! quote is `quote`, else the text the regex matched. No rule fits: the
//! criterion is undeterminable. A pairwise request takes the first rule whose
//! `question` fits and whose `prefer` regex matches exactly one of the two
//! responses (that one is better), or that gives `better` outright; else a tie.
//! `about`, on the file or on a rule, is free text for the reader.
//!
//! `"synth": {"cases": [...]}` answers `evalua synth`'s drafting requests
//! (SPEC §23; a request whose user message starts with [`SYNTH_MARKER`]) with
//! those drafts, as they are.

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use regex::Regex;
use serde::Deserialize;
use serde_json::{Value as Json, json};

use super::prompt::{Asked, read_user};
use crate::error::{Error, Result};
use crate::util::paths::display_path;

/// The first line of `evalua synth`'s drafting requests.
pub const SYNTH_MARKER: &str = "evalua synth: draft evaluation cases";

/// The port `evalua mock-judge` listens on unless told.
pub const DEFAULT_PORT: u16 = 8799;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    /// Free text for the reader (ignored).
    #[allow(dead_code)]
    about: Option<Json>,
    #[serde(default)]
    rubric: Vec<RubricRuleIn>,
    #[serde(default)]
    pairwise: Vec<PairwiseRuleIn>,
    /// The answer to a drafting request (`evalua synth`).
    #[serde(default)]
    synth: Option<Json>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RubricRuleIn {
    #[allow(dead_code)]
    about: Option<Json>,
    criterion: Option<String>,
    matches: Option<String>,
    #[serde(rename = "in")]
    within: Option<String>,
    verdict: String,
    quote: Option<String>,
    failure_mode: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PairwiseRuleIn {
    #[allow(dead_code)]
    about: Option<Json>,
    question: Option<String>,
    prefer: Option<String>,
    better: Option<String>,
}

const BLOCKS: [&str; 6] = ["final_answer", "task", "conversation", "tool_calls", "outbox", "any"];

struct RubricRule {
    criterion: Option<String>,
    matches: Option<Regex>,
    within: String,
    verdict: &'static str,
    quote: Option<String>,
    failure_mode: Option<String>,
}

struct PairwiseRule {
    question: Option<String>,
    prefer: Option<Regex>,
    better: Option<&'static str>,
}

/// A rules file, checked.
pub struct Rules {
    rubric: Vec<RubricRule>,
    pairwise: Vec<PairwiseRule>,
    synth: Option<Json>,
}

fn regex(shown: &str, what: &str, re: &str) -> Result<Regex> {
    Regex::new(re).map_err(|e| {
        let first = e.to_string().lines().last().unwrap_or("").trim().to_string();
        Error::Input(format!("{shown}: {what}: 'matches' {re:?} is not a regex: {first}"))
    })
}

impl Rules {
    pub fn read(path: &Path) -> Result<Rules> {
        let shown = display_path(path);
        let text = std::fs::read_to_string(path).map_err(|e| Error::Input(format!("{shown}: {e}")))?;
        let file: RulesFile = serde_json::from_str(&text).map_err(|e| {
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg);
            Error::Input(format!("{shown}:{}:{}: {msg}", e.line(), e.column()))
        })?;
        let mut rubric = Vec::new();
        for (i, r) in file.rubric.into_iter().enumerate() {
            let what = format!("rubric rule {}", i + 1);
            let verdict = match r.verdict.as_str() {
                "pass" => "pass",
                "fail" => "fail",
                "undeterminable" => "undeterminable",
                v => {
                    return Err(Error::Input(format!(
                        "{shown}: {what}: verdict {v:?} is not one of \"pass\", \"fail\", \"undeterminable\""
                    )));
                }
            };
            let within = r.within.unwrap_or_else(|| "final_answer".into());
            if !BLOCKS.contains(&within.as_str()) {
                return Err(Error::Input(format!("{shown}: {what}: 'in' {within:?} is not one of {BLOCKS:?}")));
            }
            let matches = r.matches.as_deref().map(|m| regex(&shown, &what, m)).transpose()?;
            rubric.push(RubricRule {
                criterion: r.criterion.map(|c| c.to_lowercase()),
                matches,
                within,
                verdict,
                quote: r.quote,
                failure_mode: r.failure_mode,
            });
        }
        let mut pairwise = Vec::new();
        for (i, r) in file.pairwise.into_iter().enumerate() {
            let what = format!("pairwise rule {}", i + 1);
            let better = match r.better.as_deref() {
                None => None,
                Some("first") => Some("first"),
                Some("second") => Some("second"),
                Some("tie") => Some("tie"),
                Some(b) => {
                    return Err(Error::Input(format!(
                        "{shown}: {what}: better {b:?} is not one of \"first\", \"second\", \"tie\""
                    )));
                }
            };
            if better.is_none() == r.prefer.is_none() {
                return Err(Error::Input(format!("{shown}: {what}: give 'prefer' (a regex) or 'better', one of them")));
            }
            let prefer = r.prefer.as_deref().map(|m| regex(&shown, &what, m)).transpose()?;
            pairwise.push(PairwiseRule { question: r.question.map(|q| q.to_lowercase()), prefer, better });
        }
        if rubric.is_empty() && pairwise.is_empty() && file.synth.is_none() {
            return Err(Error::Input(format!(
                "{shown}: no rules: give \"rubric\" and/or \"pairwise\" rules (or \"synth\" drafts)"
            )));
        }
        Ok(Rules { rubric, pairwise, synth: file.synth })
    }

    /// The verdict JSON for a rubric request, and a one-line account of it.
    fn rubric(&self, criteria: &[String], blocks: &[(String, String)]) -> (Json, String) {
        let text_of = |within: &str| -> String {
            if within == "any" {
                blocks.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join("\n")
            } else {
                blocks.iter().find(|(id, _)| id == within).map(|(_, t)| t.clone()).unwrap_or_default()
            }
        };
        let (mut passed, mut failed, mut unsure, mut evidence, mut shown) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut failure_mode = Json::Null;
        for (i, c) in criteria.iter().enumerate() {
            let n = i + 1;
            let lower = c.to_lowercase();
            let hit = self.rubric.iter().enumerate().find_map(|(k, r)| {
                if r.criterion.as_ref().is_some_and(|part| !lower.contains(part.as_str())) {
                    return None;
                }
                match &r.matches {
                    None => Some((k, r, String::new())),
                    Some(re) => re.find(&text_of(&r.within)).map(|m| (k, r, m.as_str().to_string())),
                }
            });
            let Some((k, r, found)) = hit else {
                unsure.push(n);
                shown.push(format!("{n} undeterminable (no rule)"));
                continue;
            };
            match r.verdict {
                "pass" => passed.push(n),
                "fail" => {
                    failed.push(n);
                    if failure_mode.is_null() {
                        failure_mode = json!(r.failure_mode.clone().unwrap_or_else(|| format!("failed: {c}")));
                    }
                }
                _ => unsure.push(n),
            }
            evidence.push(json!({ "criterion": n, "quote": r.quote.clone().unwrap_or(found) }));
            shown.push(format!("{n} {} (rule {})", r.verdict, k + 1));
        }
        let v = json!({ "evidence": evidence, "passed_criteria": passed, "failed_criteria": failed,
                        "undeterminable": unsure, "failure_mode": failure_mode });
        (v, format!("rubric: {}", shown.join(", ")))
    }

    /// The verdict JSON for a pairwise request, and a one-line account of it.
    fn pairwise(&self, question: &str, blocks: &[(String, String)]) -> (Json, String) {
        let get = |id: &str| blocks.iter().find(|(b, _)| b == id).map(|(_, t)| t.as_str()).unwrap_or("");
        let (first, second) = (get("first_response"), get("second_response"));
        let lower = question.to_lowercase();
        for (k, r) in self.pairwise.iter().enumerate() {
            if r.question.as_ref().is_some_and(|q| !lower.contains(q.as_str())) {
                continue;
            }
            let decided = match (&r.prefer, r.better) {
                (_, Some(b)) => Some((b, format!("rule {} says {b}", k + 1))),
                (Some(re), None) => match (re.is_match(first), re.is_match(second)) {
                    (true, false) => Some(("first", format!("only the first response matches /{re}/"))),
                    (false, true) => Some(("second", format!("only the second response matches /{re}/"))),
                    _ => None,
                },
                (None, None) => None,
            };
            if let Some((better, why)) = decided {
                return (json!({ "evidence": why, "better": better }), format!("pairwise: {better} (rule {})", k + 1));
            }
        }
        (json!({ "evidence": "no rule decided", "better": "tie" }), "pairwise: tie (no rule)".into())
    }
}

fn openai_error(status: StatusCode, message: &str) -> (StatusCode, axum::Json<Json>) {
    (status, axum::Json(json!({ "error": { "message": message, "type": "invalid_request_error" } })))
}

async fn chat_completions(State(rules): State<Arc<Rules>>, body: Bytes) -> (StatusCode, axum::Json<Json>) {
    let Ok(body) = serde_json::from_slice::<Json>(&body) else {
        return openai_error(StatusCode::BAD_REQUEST, "the body is not JSON");
    };
    let user: String = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let drafting = user.starts_with(SYNTH_MARKER);
    let (verdict, line) = match read_user(&user) {
        _ if drafting => match &rules.synth {
            Some(drafts) => (drafts.clone(), "synth: the rules file's drafts".to_string()),
            None => {
                return openai_error(StatusCode::BAD_REQUEST, "this rules file has no \"synth\" drafts");
            }
        },
        Some(Asked::Rubric { criteria, blocks }) => rules.rubric(&criteria, &blocks),
        Some(Asked::Pairwise { question, blocks }) => rules.pairwise(&question, &blocks),
        None => {
            eprintln!("mock-judge: refused a request that is not an evalua judge request");
            return openai_error(
                StatusCode::BAD_REQUEST,
                "evalua mock-judge answers evalua's rubric and pairwise judge requests only",
            );
        }
    };
    eprintln!("mock-judge: {line}");
    let content = verdict.to_string();
    let model = body["model"].as_str().unwrap_or("mock-judge");
    // About four characters a token, so cost and token figures are not all zero.
    let (input, output) = (user.len() as u64 / 4 + 1, content.len() as u64 / 4 + 1);
    let reply = json!({
        "id": format!("chatcmpl-mock-{:016x}", fastrand::u64(..)), "object": "chat.completion", "created": 0, "model": model,
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": content }, "finish_reason": "stop" }],
        "usage": { "prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output }
    });
    (StatusCode::OK, axum::Json(reply))
}

async fn models() -> axum::Json<Json> {
    axum::Json(json!({ "object": "list", "data": [{ "id": "mock-judge", "object": "model", "owned_by": "evalua" }] }))
}

/// Serve `rules` on 127.0.0.1:`port` (0: any free port) until the process is stopped.
pub fn serve(rules_path: &Path, port: u16) -> Result<()> {
    let rules = Rules::read(rules_path)?;
    let listener = std::net::TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| Error::Environment(format!("cannot listen on 127.0.0.1:{port}: {e} (--port N, or 0 for any)")))?;
    let addr = listener.local_addr().map_err(|e| Error::Environment(e.to_string()))?;
    listener.set_nonblocking(true).map_err(|e| Error::Environment(e.to_string()))?;
    let url = format!("http://{addr}/v1");
    println!(
        "evalua mock-judge: {} rubric and {} pairwise rule(s){} from {} at {url}\n  export EVALUA_OPENAI_BASE_URL={url}   (Ctrl-C to stop)",
        rules.rubric.len(),
        rules.pairwise.len(),
        if rules.synth.is_some() { " and drafts for evalua synth" } else { "" },
        display_path(rules_path)
    );
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let app = Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
        .route("/models", get(models))
        .layer(axum::extract::DefaultBodyLimit::max(16 << 20))
        .with_state(Arc::new(rules));
    crate::model::runtime().block_on(async move {
        let listener =
            tokio::net::TcpListener::from_std(listener).map_err(|e| Error::Environment(format!("{addr}: {e}")))?;
        axum::serve(listener, app).await.map_err(|e| Error::Environment(format!("{addr}: {e}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> Result<Rules> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rules.json");
        std::fs::write(&p, text).unwrap();
        Rules::read(&p)
    }

    #[test]
    fn the_first_fitting_rule_decides_each_criterion() {
        let r = rules(
            r#"{"rubric": [
                {"criterion": "AMOUNT", "matches": "19[,.]90", "verdict": "pass"},
                {"criterion": "amount", "verdict": "fail", "failure_mode": "no amount"},
                {"criterion": "tools", "in": "tool_calls", "matches": "refund", "verdict": "pass"}
            ]}"#,
        )
        .unwrap();
        let crit = ["states the amount".to_string(), "uses the tools".to_string(), "is polite".to_string()];
        let blocks = vec![("final_answer".to_string(), "Refunded 19,90 EUR".to_string())];
        let (v, _) = r.rubric(&crit, &blocks);
        assert_eq!(v["passed_criteria"], json!([1]));
        assert_eq!(v["undeterminable"], json!([2, 3]), "no tool call, no rule: undeterminable");
        assert_eq!(v["evidence"][0], json!({ "criterion": 1, "quote": "19,90" }));
        let blocks = vec![("final_answer".to_string(), "Done".to_string())];
        let (v, _) = r.rubric(&crit, &blocks);
        assert_eq!(v["failed_criteria"], json!([1]));
        assert_eq!(v["failure_mode"], "no amount");
    }

    #[test]
    fn bad_rules_are_refused_with_where() {
        assert!(
            rules("{\"rubric\": [\n{\"verdict\": \"pass\", \"nope\": 1}]}")
                .err()
                .unwrap()
                .to_string()
                .contains("rules.json:2:")
        );
        assert!(
            rules(r#"{"rubric": [{"verdict": "maybe"}]}"#)
                .err()
                .unwrap()
                .to_string()
                .contains("rubric rule 1: verdict")
        );
        assert!(
            rules(r#"{"rubric": [{"verdict": "pass", "matches": "("}]}"#)
                .err()
                .unwrap()
                .to_string()
                .contains("not a regex")
        );
        assert!(
            rules(r#"{"rubric": [{"verdict": "pass", "in": "answer"}]}"#).err().unwrap().to_string().contains("'in'")
        );
        assert!(rules(r#"{"pairwise": [{}]}"#).err().unwrap().to_string().contains("pairwise rule 1"));
        assert!(rules("{}").err().unwrap().to_string().contains("no rules"));
    }

    #[test]
    fn pairwise_prefers_the_one_response_that_matches() {
        let r = rules(r#"{"pairwise": [{"prefer": "P-9930"}]}"#).unwrap();
        let b = |a: &str, b: &str| {
            vec![("first_response".to_string(), a.to_string()), ("second_response".to_string(), b.to_string())]
        };
        assert_eq!(r.pairwise("q", &b("x", "order P-9930")).0["better"], "second");
        assert_eq!(r.pairwise("q", &b("P-9930", "P-9930")).0["better"], "tie");
    }
}
