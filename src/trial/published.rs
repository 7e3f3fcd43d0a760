//! What a trial's calls say for the figures the background reading asks to
//! publish (SPEC §22): how many interventions it made, which sources it read,
//! and whether it touched a published solution.

use crate::record::{CallRecord, CallStatus, ContaminationHit, Published};
use crate::spec::ToolSpec;
use crate::util::regex::with_regex;

/// How much of a matched text a contamination hit keeps.
const EXCERPT: usize = 120;

/// The trial's interventions, sources and contamination, from its calls.
/// `tool` finds a call's tool declaration; `patterns` are the suite's
/// `contamination.sources` (regexes, checked when the suite loaded).
pub fn of<'a>(calls: &[CallRecord], tool: impl Fn(&str) -> Option<&'a ToolSpec>, patterns: &[String]) -> Published {
    let mut p = Published::default();
    for c in calls.iter().filter(|c| c.status == CallStatus::Executed) {
        let Some(spec) = tool(&c.name) else { continue };
        p.interventions += spec.intervention as u32;
        if let Some(param) = &spec.source
            && let Some(v) = c.args.get(param)
        {
            let source = text(v);
            if !p.sources.contains(&source) {
                p.sources.push(source);
            }
        }
    }
    if !patterns.is_empty() {
        p.contamination = contamination(calls, &p.sources, patterns);
    }
    p
}

/// Each pattern with the first place it matched: the sources, then every
/// call's arguments and result, in call order.
fn contamination(calls: &[CallRecord], sources: &[String], patterns: &[String]) -> Vec<ContaminationHit> {
    let mut places: Vec<(String, String)> = sources.iter().map(|s| ("source".to_string(), s.clone())).collect();
    for c in calls {
        places.push((format!("arguments of call {} ({})", c.id, c.name), text(&c.args)));
        if let Some(r) = &c.result {
            places.push((format!("result of call {} ({})", c.id, c.name), text(r)));
        }
    }
    let mut hits = Vec::new();
    for pattern in patterns {
        let found = with_regex(pattern, |re| {
            places.iter().find_map(|(at, text)| re.find(text).map(|m| (at.clone(), excerpt(m.as_str()))))
        });
        if let Ok(Some((found_in, text))) = found {
            hits.push(ContaminationHit { pattern: pattern.clone(), found_in, text });
        }
    }
    hits
}

fn text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn excerpt(s: &str) -> String {
    if s.chars().count() > EXCERPT { format!("{}…", s.chars().take(EXCERPT).collect::<String>()) } else { s.into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, intervention: bool, source: Option<&str>) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            params: json!({}),
            effect: "read".into(),
            requires: Vec::new(),
            forbidden_in_attack: false,
            validate: true,
            ends: false,
            intervention,
            source: source.map(String::from),
            location: String::new(),
        }
    }

    fn call(id: &str, name: &str, args: serde_json::Value, status: CallStatus, result: &str) -> CallRecord {
        CallRecord {
            id: id.into(),
            requested_id: None,
            name: name.into(),
            args,
            status,
            effect: None,
            result: Some(json!(result)),
            error: None,
            error_type: None,
            started_ms: 0.0,
            ended_ms: 0.0,
            diverged: false,
            recorded: None,
        }
    }

    #[test]
    fn interventions_sources_and_contamination_come_from_executed_calls() {
        let tools = [tool("fetch", false, Some("url")), tool("escalate", true, None)];
        let find = |n: &str| tools.iter().find(|t| t.name == n);
        let calls = [
            call("c1", "fetch", json!({"url": "https://docs.example/a"}), CallStatus::Executed, "doc a"),
            call("c2", "fetch", json!({"url": "https://docs.example/a"}), CallStatus::Executed, "doc a"),
            call("c3", "fetch", json!({"url": "https://solutions.example/42"}), CallStatus::Denied, "-"),
            call("c4", "escalate", json!({}), CallStatus::Executed, "ok"),
            call("c5", "escalate", json!({}), CallStatus::Rejected, "-"),
        ];
        let p = of(&calls, find, &[]);
        assert_eq!(p.interventions, 1);
        assert_eq!(p.sources, vec!["https://docs.example/a".to_string()]);
        assert!(p.contamination.is_empty());
        // A denied read of the solution still touched it in its arguments.
        let p = of(&calls, find, &["solutions\\.example".to_string(), "nowhere".to_string()]);
        assert_eq!(p.contamination.len(), 1);
        assert_eq!(p.contamination[0].found_in, "arguments of call c3 (fetch)");
        assert_eq!(p.contamination[0].text, "solutions.example");
    }
}
