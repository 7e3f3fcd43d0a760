//! The simulated user on trial (SPEC §18): did it say what it had to withhold
//! before the agent asked for it, and who is to blame for a trial that was
//! not accepted: the harness (`infra`), the graders (`grader`), the simulated
//! user (`user`) or the agent (`agent`), decided in that order.

use crate::judge::prompt::TrialData;
use crate::judge::verdict::{Conclusion, Status};
use crate::record::{Blame, CheckResult, Leak, Message, Outcome, TrialRecord, UserRecord};
use crate::spec::{UserSpec, Withhold};
use crate::util::regex::with_regex;

/// The leaks in a conversation: each user turn that says a withheld text
/// before any agent message matched its `until_asked`. Turn 0 is the first
/// user message, counted only when the simulator wrote it (`opening`): the
/// case input is the suite's own text.
pub fn leaks(messages: &[Message], withhold: &[Withhold], opening: bool) -> Vec<Leak> {
    let mut asked = vec![false; withhold.len()];
    let mut out = Vec::new();
    let mut turn = 0u32;
    let mut first = true;
    for m in messages {
        match m.role.as_str() {
            "agent" => {
                for (w, asked) in withhold.iter().zip(asked.iter_mut()) {
                    if !*asked {
                        *asked = with_regex(&format!("(?i){}", w.until_asked), |re| re.is_match(&m.content))
                            .unwrap_or(false);
                    }
                }
            }
            "user" => {
                let counted = !first || opening;
                if !first {
                    turn += 1;
                }
                first = false;
                if !counted {
                    continue;
                }
                let said = m.content.to_lowercase();
                for (w, asked) in withhold.iter().zip(&asked) {
                    if !asked && said.contains(&w.text.to_lowercase()) {
                        out.push(Leak { turn, text: w.text.clone() });
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The trial's `user` record, for a case with a simulated user or a user
/// that must withhold something; None otherwise. `judged` is the adherence
/// judge's conclusion, when the user has one.
pub fn user_record(spec: Option<&UserSpec>, messages: &[Message], judged: Option<&Conclusion>) -> Option<UserRecord> {
    let spec = spec?;
    let withhold = spec.withhold();
    if !spec.simulated() && withhold.is_empty() {
        return None;
    }
    let opening = matches!(spec, UserSpec::Llm(u) if u.opening.is_some());
    let leaks = leaks(messages, withhold, opening);
    let failed_judge = judged.map(|c| c.status == Status::Failed);
    // Nothing checked its conduct (no withhold, no decided judge): adherence unknown.
    let adherent = match (withhold.is_empty(), failed_judge) {
        (true, None) => None,
        _ => Some(leaks.is_empty() && failed_judge != Some(true)),
    };
    let adherence = judged.map(|c| {
        let mut e = c.evidence.clone();
        if !e.is_object() {
            e = serde_json::json!({ "detail": e });
        }
        e["passed"] = match c.status {
            Status::Passed => true.into(),
            Status::Failed => false.into(),
            _ => serde_json::Value::Null,
        };
        e
    });
    Some(UserRecord { adherent, leaks, adherence })
}

/// Ask the user's adherence judge about its conduct in this conversation.
pub fn judge_conduct(
    spec: &crate::spec::LlmUserSpec,
    judge: &crate::spec::JudgeSpec,
    messages: &[Message],
    cache: &crate::judge::cache::Cache,
) -> Conclusion {
    crate::judge::verdict::rubric_of(judge, &conduct_data(&spec.profile, &spec.goal, messages), cache)
}

/// What an adherence judge reads, and what a reviewer labels in its place
/// (`evalua view --review users`): the profile and goal as the task, the
/// conversation as data (untrusted, inside the judge's nonce-delimited
/// blocks like any judge's evidence), the user's last turn as the answer.
pub fn conduct_data(profile: &str, goal: &str, messages: &[Message]) -> TrialData {
    let task = format!(
        "Judge the conduct of the SIMULATED USER in this conversation (not the agent's). \
         The simulated user's profile:\n{profile}\n\nIts goal:\n{goal}"
    );
    TrialData {
        input: task,
        answer: messages.iter().rev().find(|m| m.role == "user").map(|m| m.content.clone()).unwrap_or_default(),
        calls: Vec::new(),
        messages: messages
            .iter()
            .map(|m| serde_json::json!({ "role": if m.role == "user" { "simulated_user" } else { "agent" }, "content": m.content }))
            .collect(),
        outbox: Vec::new(),
    }
}

/// Who is to blame for a trial that was not accepted, with the evidence.
pub fn blame(r: &TrialRecord) -> Option<Blame> {
    if r.outcome == Outcome::Accepted {
        return None;
    }
    let (by, evidence) = if r.outcome == Outcome::InfraError {
        ("infra", r.infra_error.clone().or_else(|| r.error.clone()).unwrap_or_else(|| "an infrastructure error".into()))
    } else if let Some(why) = grader_doubt(r) {
        ("grader", why)
    } else if let Some(u) = r.user.as_ref().filter(|u| u.adherent == Some(false)) {
        let why = match u.leaks.first() {
            Some(l) => format!("the simulated user said {:?} at turn {} before the agent asked", l.text, l.turn),
            None => "the simulated user did not follow its profile (adherence judge)".to_string(),
        };
        ("user", why)
    } else {
        ("agent", agent_evidence(r))
    };
    Some(Blame { by: by.to_string(), evidence })
}

/// A grader error, or a failed check whose verdict the judges were unsure of
/// (the first stage of a cascade undecided, or its stages disagreeing).
fn grader_doubt(r: &TrialRecord) -> Option<String> {
    if r.outcome == Outcome::GraderError {
        let c = r.checks.iter().find(|c| c.error.is_some());
        return Some(match c {
            Some(c) => format!("check '{}' could not decide: {}", c.name, c.error.clone().unwrap_or_default()),
            None => "a check could not decide".into(),
        });
    }
    r.checks.iter().filter(|c| c.passed == Some(false)).find_map(doubtful)
}

fn doubtful(c: &CheckResult) -> Option<String> {
    let because = c.evidence.get("escalated_because").and_then(|v| v.as_str()).unwrap_or_default();
    if because.starts_with("uncertain") {
        return Some(format!("check '{}' failed on a cascade whose first judge was {because}", c.name));
    }
    let verdicts: Vec<&str> = c
        .evidence
        .get("stages")
        .and_then(|s| s.as_array())
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("verdict").and_then(|v| v.as_str()))
        .collect();
    (verdicts.len() > 1 && verdicts.iter().any(|v| *v != verdicts[0]))
        .then(|| format!("check '{}' failed, but its cascade's judges disagreed ({})", c.name, verdicts.join(" then ")))
}

fn agent_evidence(r: &TrialRecord) -> String {
    if r.ended.abnormal() || r.ended != crate::record::Ended::Final {
        let err = r.error.as_deref().unwrap_or_default();
        return format!(
            "ended {}{}",
            r.ended.as_str(),
            if err.is_empty() { String::new() } else { format!(": {err}") }
        );
    }
    match r.checks.iter().find(|c| c.passed == Some(false)) {
        Some(c) => format!("check '{}' failed", c.name),
        None => "not accepted".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: &str, content: &str) -> Message {
        Message { role: role.into(), content: content.into(), call_id: None }
    }

    fn rec(outcome: Outcome, checks: serde_json::Value, user: Option<UserRecord>) -> TrialRecord {
        let mut r: TrialRecord = serde_json::from_value(serde_json::json!({
            "case": "c", "trial": 1, "seed": 1, "outcome": outcome.as_str(), "ended": "final",
            "checks": checks, "calls": crate::record::CallCounts::default(), "usage": crate::record::Usage::default(),
            "wall_ms": 1.0, "answer": "", "error": null, "trace": "", "infra_error": "the model endpoint failed"
        }))
        .unwrap();
        r.user = user;
        r
    }

    #[test]
    fn blame_goes_to_infra_then_grader_then_user_then_agent() {
        use serde_json::json;
        let leaked = Some(UserRecord {
            adherent: Some(false),
            leaks: vec![Leak { turn: 1, text: "P-9930".into() }],
            adherence: None,
        });
        let failed = json!([{ "name": "state", "passed": false, "critical": false, "evidence": {}, "error": null }]);
        let raised = json!([{ "name": "judge", "passed": null, "critical": false, "evidence": {}, "error": "boom" }]);
        let disagreed = json!([{ "name": "tone", "passed": false, "critical": false, "error": null,
            "evidence": { "stages": [{ "verdict": "passed" }, { "verdict": "failed" }] } }]);
        let by = |r: TrialRecord| blame(&r).map(|b| (b.by, b.evidence));
        assert_eq!(by(rec(Outcome::Accepted, json!([]), leaked.clone())), None);
        assert_eq!(by(rec(Outcome::InfraError, json!([]), leaked.clone())).unwrap().0, "infra");
        let (who, why) = by(rec(Outcome::GraderError, raised, leaked.clone())).unwrap();
        assert_eq!((who.as_str(), why.as_str()), ("grader", "check 'judge' could not decide: boom"));
        let (who, why) = by(rec(Outcome::Failed, disagreed, leaked.clone())).unwrap();
        assert_eq!(who, "grader", "{why}");
        assert!(why.contains("passed then failed"), "{why}");
        let (who, why) = by(rec(Outcome::Failed, failed.clone(), leaked)).unwrap();
        assert_eq!(
            (who.as_str(), why.as_str()),
            ("user", "the simulated user said \"P-9930\" at turn 1 before the agent asked")
        );
        let clean = Some(UserRecord { adherent: Some(true), ..Default::default() });
        assert_eq!(by(rec(Outcome::Failed, failed, clean)).unwrap(), ("agent".into(), "check 'state' failed".into()));
    }

    #[test]
    fn a_withheld_text_said_before_the_agent_asked_is_a_leak() {
        let w = vec![Withhold { text: "P-9930".into(), until_asked: "pedido|order".into() }];
        let asked_first = [
            msg("user", "My refund is missing. It's P-9930."), // the case input: the suite's text
            msg("agent", "Which ORDER is it?"),
            msg("user", "p-9930"),
        ];
        assert_eq!(leaks(&asked_first, &w, false), vec![]);
        let unasked = [
            msg("user", "My refund is missing."),
            msg("agent", "I can help with that."),
            msg("user", "It is P-9930, by the way."),
            msg("agent", "Which order?"),
            msg("user", "P-9930"),
        ];
        assert_eq!(leaks(&unasked, &w, false), vec![Leak { turn: 1, text: "P-9930".into() }]);
        // A simulator that opens the conversation wrote its first message itself.
        assert_eq!(leaks(&unasked[..1].iter().cloned().chain([msg("user", "")]).collect::<Vec<_>>(), &w, true), vec![]);
        assert_eq!(
            leaks(&[msg("user", "Order P-9930 please")], &w, true),
            vec![Leak { turn: 0, text: "P-9930".into() }]
        );
    }
}
