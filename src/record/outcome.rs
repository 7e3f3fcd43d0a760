//! How a trial ended and what its checks said, and the outcome decided
//! from both by the three-valued logic of SPEC §8.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Accepted,
    Failed,
    Critical,
    GraderError,
    #[default]
    InfraError,
}

impl Outcome {
    pub const ALL: [Outcome; 5] =
        [Outcome::Accepted, Outcome::Failed, Outcome::Critical, Outcome::GraderError, Outcome::InfraError];
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Failed => "failed",
            Outcome::Critical => "critical",
            Outcome::GraderError => "grader_error",
            Outcome::InfraError => "infra_error",
        }
    }
}

/// How the agent's run ended (`t.ended`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    Final,
    /// The agent declined the task with a reason (SPEC §22): right where its
    /// case requires abstaining (`should_abstain`), an unsolved task elsewhere.
    Abstained,
    Deadline,
    Budget,
    Crashed,
    ProtocolError,
    /// Something the harness provides (the agent's model endpoint, a
    /// simulated user's model) failed after the agent had acted: the trial is
    /// graded on what the agent did, its `infra_error` says what failed.
    InfraError,
    /// The agent never got its chance (an infrastructure error).
    #[default]
    NotStarted,
    /// The run was stopped (SIGINT, SIGTERM) while the trial ran: an
    /// infrastructure error, run again by `--resume`.
    Interrupted,
}

impl Ended {
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::Final => "final",
            Ended::Abstained => "abstained",
            Ended::Deadline => "deadline",
            Ended::Budget => "budget",
            Ended::Crashed => "crashed",
            Ended::ProtocolError => "protocol_error",
            Ended::InfraError => "infra_error",
            Ended::NotStarted => "not_started",
            Ended::Interrupted => "interrupted",
        }
    }

    /// The agent did not end its part normally: it crashed (a non-zero
    /// exit, a signal) or broke the protocol. Such a trial is never accepted
    /// unless its case says why it may be ([`outcome_after`]).
    pub fn abnormal(self) -> bool {
        matches!(self, Ended::Crashed | Ended::ProtocolError)
    }

    /// The agent ended its part itself: an answer or an abstention.
    pub fn by_agent(self) -> bool {
        matches!(self, Ended::Final | Ended::Abstained)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CheckResult {
    pub name: String,
    /// true / false; null when the check raised (a grader error), was skipped
    /// or was not applicable.
    pub passed: Option<bool>,
    pub critical: bool,
    pub evidence: Json,
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
    /// Why the check could not apply: it needs what the trial does not have
    /// (a recorded trace has no `t.db`, `t.files`, …). Counted apart, never a pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<String>,
    /// The monitor this result comes from (`monitors = { name = check }`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<String>,
}

/// What a check's result says, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// The check raised, hit a limit or could not decide: a grader error.
    Error,
    /// No judge was reachable (or the check returned `evalua.SKIP`).
    Skipped,
    /// The check needs state the trial does not have (a recorded trace).
    NotApplicable,
}

impl Verdict {
    /// The label of `gen_ai.evaluation.score.label`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
            Verdict::Skipped => "skipped",
            Verdict::NotApplicable => "not_applicable",
        }
    }
}

/// A judge cascade's verdict, as its check's evidence records it
/// (`judge.cascade`, SPEC §15): which judge decided, and what each stage did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CascadeEvidence {
    /// "first" or "then".
    pub decided_by: String,
    pub escalated: bool,
    #[serde(default)]
    pub stages: Vec<CascadeStage>,
}

/// One stage of a cascade on one item.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CascadeStage {
    /// "first" or "then".
    pub stage: String,
    /// The stage's model id.
    pub judge: String,
    #[serde(default)]
    pub calls: u32,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cost_usd: f64,
}

impl CheckResult {
    /// The cascade this check's verdict came from, if it was a `judge.cascade`.
    pub fn cascade(&self) -> Option<CascadeEvidence> {
        self.evidence.get("decided_by")?;
        CascadeEvidence::deserialize(&self.evidence).ok()
    }

    pub fn verdict(&self) -> Verdict {
        match self.passed {
            Some(true) => Verdict::Pass,
            Some(false) => Verdict::Fail,
            None if self.not_applicable.is_some() => Verdict::NotApplicable,
            None if self.skipped => Verdict::Skipped,
            None => Verdict::Error,
        }
    }
}

/// Decide a trial's outcome by the three-valued logic of SPEC §8.
pub fn outcome_of(infra_error: bool, checks: &[CheckResult]) -> Outcome {
    if infra_error {
        Outcome::InfraError
    } else if checks.iter().any(|c| c.critical && c.passed == Some(false)) {
        Outcome::Critical
    } else if checks.iter().any(|c| c.passed == Some(false)) {
        Outcome::Failed
    } else if checks.iter().any(|c| c.verdict() == Verdict::Error) {
        Outcome::GraderError
    } else {
        Outcome::Accepted
    }
}

/// A trial's outcome (SPEC §8): its checks' ([`outcome_of`]), except that a
/// trial whose agent ended abnormally ([`Ended::abnormal`]) is `failed` where
/// its checks would have accepted it (or could not decide), unless its case
/// accepts such an ending (`accept_abnormal_end`, with its reason). The
/// seed's contract: success is observable *and* the run respected its
/// contract; an agent that crashed or broke the protocol did not.
///
/// Likewise an abstention (SPEC §22) is an unsolved task, `failed`, except
/// on a case whose contract requires abstaining (`should_abstain`), where its
/// checks decide (by default `check.abstained()`).
pub fn outcome_after(infra_error: bool, ended: Ended, case: EndRules, checks: &[CheckResult]) -> Outcome {
    let refused = (ended.abnormal() && !case.abnormal_accepted) || (ended == Ended::Abstained && !case.should_abstain);
    match outcome_of(infra_error, checks) {
        Outcome::Accepted | Outcome::GraderError if refused => Outcome::Failed,
        o => o,
    }
}

/// What a case says about how its agent may end (for [`outcome_after`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndRules {
    /// `accept_abnormal_end` is given: a crash or protocol error may pass.
    pub abnormal_accepted: bool,
    /// `should_abstain = true`: abstaining is the case's right answer.
    pub should_abstain: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_that_ended_abnormally_is_never_accepted_unless_its_case_says_why() {
        let passed = [CheckResult { name: "state".into(), passed: Some(true), ..Default::default() }];
        let raised = [CheckResult { name: "judge".into(), error: Some("boom".into()), ..Default::default() }];
        let critical = [CheckResult { name: "p".into(), passed: Some(false), critical: true, ..Default::default() }];
        for ended in [Ended::Crashed, Ended::ProtocolError] {
            assert_eq!(outcome_after(false, ended, NONE, &passed), Outcome::Failed);
            assert_eq!(outcome_after(false, ended, NONE, &raised), Outcome::Failed);
            assert_eq!(outcome_after(false, ended, NONE, &critical), Outcome::Critical);
            assert_eq!(outcome_after(false, ended, ABNORMAL, &passed), Outcome::Accepted);
            assert_eq!(outcome_after(true, ended, NONE, &passed), Outcome::InfraError);
        }
        for ended in [Ended::Final, Ended::Deadline, Ended::Budget, Ended::InfraError] {
            assert_eq!(outcome_after(false, ended, NONE, &passed), Outcome::Accepted, "{ended:?}");
        }
    }

    const NONE: EndRules = EndRules { abnormal_accepted: false, should_abstain: false };
    const ABNORMAL: EndRules = EndRules { abnormal_accepted: true, should_abstain: false };

    #[test]
    fn an_abstention_is_an_unsolved_task_unless_the_case_requires_abstaining() {
        let passed = [CheckResult { name: "state".into(), passed: Some(true), ..Default::default() }];
        let failed = [CheckResult { name: "abstained".into(), passed: Some(false), ..Default::default() }];
        let abstain = EndRules { abnormal_accepted: false, should_abstain: true };
        assert_eq!(outcome_after(false, Ended::Abstained, NONE, &passed), Outcome::Failed);
        assert_eq!(outcome_after(false, Ended::Abstained, ABNORMAL, &passed), Outcome::Failed);
        assert_eq!(outcome_after(false, Ended::Abstained, abstain, &passed), Outcome::Accepted);
        assert_eq!(outcome_after(false, Ended::Final, abstain, &failed), Outcome::Failed);
    }
}
