//! The tallies trial records stream into (SPEC §7): per case, per check,
//! per monitor, tool and judge cascade. Memory grows with cases and names,
//! not with trials; `summary.rs` turns a tally into figures.

use std::collections::BTreeMap;

use serde::Serialize;

use super::blame::BlameTally;
use super::efficiency::EffTrial;
use super::estimators::CaseInfo;
use super::published::PublishedTally;
use super::safety::SafetyTally;
use crate::record::{CallStatus, Outcome, TrialRecord, Verdict as CheckVerdict};

/// Per-case tallies, accumulated as records stream in.
#[derive(Debug, Clone, Default)]
pub struct CaseTally {
    pub outcomes: BTreeMap<Outcome, u32>,
    /// Trials the capability view leaves out (the suite's `exclude`, a
    /// contaminated success; infrastructure errors are apart), and the
    /// accepted ones among them (SPEC §22).
    pub excluded: u32,
    pub excluded_accepted: u32,
    /// Counted trials blamed on the simulated user (SPEC §18).
    pub user_blamed: u32,
    pub cost_usd: f64,
    pub safety: SafetyTally,
    /// The trials that ran, in brief, when the case declares a reference
    /// solution (the efficiency figures); `None` otherwise.
    pub efficiency: Option<Vec<EffTrial>>,
}

impl CaseTally {
    pub fn count(&self, o: Outcome) -> u32 {
        self.outcomes.get(&o).copied().unwrap_or(0)
    }
    pub fn total(&self) -> u32 {
        self.outcomes.values().sum()
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckTally {
    pub name: String,
    pub critical: bool,
    pub passed: u32,
    pub failed: u32,
    pub errors: u32,
    pub skipped: u32,
    /// Needed state the trial did not have (a recorded trace): never a pass.
    #[serde(skip_serializing_if = "is_zero")]
    pub not_applicable: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A judge cascade's items, escalations and stages over the run.
#[derive(Debug, Clone, Default)]
pub struct CascadeTally {
    pub items: u32,
    pub escalated: u32,
    /// Per stage ("first", "then"): its judge, the items it graded, calls, tokens, cost.
    pub stages: Vec<StageFigures>,
}

/// What one stage of a cascade did over a run (summary.json `judge_cascades`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct StageFigures {
    pub stage: String,
    pub judge: String,
    /// Items it graded.
    pub items: u32,
    /// Model calls it made (none for a cached answer).
    pub calls: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

/// A monitor's violations over the trials it decided.
#[derive(Debug, Clone, Copy, Default)]
pub struct MonitorTally {
    pub violations: u32,
    pub n: u32,
}

/// One tool's calls: how many went wrong and how long the ones that ran took.
#[derive(Debug, Clone, Default)]
pub struct ToolTally {
    pub calls: u32,
    /// `failed` and `faulted` calls: the tool went wrong.
    pub errors: u32,
    /// `denied` and `rejected` calls: refused before they ran.
    pub refused: u32,
    /// Durations of the calls that ran (executed, failed, faulted).
    pub durations_ms: Vec<f64>,
}

/// Streams trial records into the totals the summary needs; memory grows with
/// cases and check names, not with trials (apart from one latency per trial).
#[derive(Debug, Default)]
pub struct Tally {
    pub cases: Vec<CaseTally>,
    pub checks: BTreeMap<String, CheckTally>,
    pub latencies_ms: Vec<f64>,
    pub total_cost_usd: f64,
    pub total_tokens: u64,
    pub total_tool_calls: u64,
    pub trials_run: u64,
    pub skipped_checks: u32,
    pub not_applicable_checks: u32,
    /// Per monitor (declared ones first, with n = 0 until a trial is graded).
    pub monitors: BTreeMap<String, MonitorTally>,
    pub tools: BTreeMap<String, ToolTally>,
    /// Graded trials whose agent was cut short by an infrastructure failure.
    pub infra_after_start: u32,
    /// Some record carried the safety view (SPEC §13).
    pub safety_seen: bool,
    /// Per judge cascade (by check name).
    pub cascades: BTreeMap<String, CascadeTally>,
    /// The suite's declared exclusions (`exclude`, SPEC §22).
    pub exclude: Vec<String>,
    /// Coverage, abandonment, interventions, contamination, exclusions.
    pub published: PublishedTally,
    /// Which cases require abstaining (by index).
    should_abstain: Vec<bool>,
    /// Who is to blame for the trials not accepted (SPEC §18).
    pub blame: BlameTally,
    /// The trials of cases awaiting review (SPEC §23), counted nowhere else.
    pub pending: super::pending::PendingTally,
    /// What graded items' sources scored, against evalua's verdicts.
    pub verdicts: super::verdicts::RecordedVerdicts,
}

impl Tally {
    /// An empty tally for these cases (in the order records name them by index).
    pub fn new(infos: &[CaseInfo]) -> Self {
        let cases = infos
            .iter()
            .map(|i| CaseTally { efficiency: i.reference.as_ref().map(|_| Vec::new()), ..Default::default() })
            .collect();
        let should_abstain = infos.iter().map(|i| i.should_abstain).collect();
        let pending = super::pending::PendingTally::new(infos.iter().map(|i| i.pending_review).collect());
        Tally { cases, should_abstain, pending, ..Default::default() }
    }

    /// An empty tally that leaves out of the capability view what the suite's
    /// `exclude` names (SPEC §22).
    pub fn excluding(infos: &[CaseInfo], exclude: &[String]) -> Self {
        Tally { exclude: exclude.to_vec(), ..Tally::new(infos) }
    }

    /// List the suite's monitors, so one that never ran still shows (n = 0).
    pub fn declare_monitors(&mut self, names: &[String]) {
        for n in names {
            self.monitors.entry(n.clone()).or_default();
        }
    }

    pub fn add(&mut self, case: usize, r: &TrialRecord) {
        // A case awaiting review is played and reported apart, never counted (SPEC §23).
        if self.pending.add(case, r) {
            return;
        }
        self.verdicts.add(r);
        let should_abstain = self.should_abstain.get(case).copied().unwrap_or(false);
        let excluded = self.published.add(r, should_abstain, &self.exclude);
        let on_user = self.blame.add(r);
        let ct = &mut self.cases[case];
        *ct.outcomes.entry(r.outcome).or_default() += 1;
        if excluded {
            ct.excluded += 1;
            ct.excluded_accepted += (r.outcome == Outcome::Accepted) as u32;
        } else if on_user {
            ct.user_blamed += 1;
        }
        ct.cost_usd += r.usage.cost_usd;
        self.total_cost_usd += r.usage.cost_usd;
        if r.outcome != Outcome::InfraError && r.infra_error.is_some() {
            self.infra_after_start += 1;
        }
        if let Some(s) = &r.safety {
            self.safety_seen = true;
            if r.outcome != Outcome::InfraError {
                ct.safety.add(s);
            }
        }
        if r.outcome != Outcome::InfraError {
            self.latencies_ms.push(r.wall_ms);
            self.trials_run += 1;
            self.total_tokens += r.usage.input_tokens + r.usage.output_tokens;
            self.total_tool_calls += r.calls.requested as u64;
            if let Some(eff) = &mut ct.efficiency {
                eff.push(EffTrial {
                    trial: r.trial,
                    requested: r.calls.requested,
                    executed: r.calls.executed,
                    tokens: r.usage.input_tokens + r.usage.output_tokens,
                    accepted: r.outcome == Outcome::Accepted,
                });
            }
        }
        for c in &r.checks {
            let t = self.checks.entry(c.name.clone()).or_insert_with(|| CheckTally {
                name: c.name.clone(),
                critical: c.critical,
                ..Default::default()
            });
            let verdict = c.verdict();
            match verdict {
                CheckVerdict::Pass => t.passed += 1,
                CheckVerdict::Fail => t.failed += 1,
                CheckVerdict::Skipped => {
                    t.skipped += 1;
                    self.skipped_checks += 1;
                }
                CheckVerdict::NotApplicable => {
                    t.not_applicable += 1;
                    self.not_applicable_checks += 1;
                }
                CheckVerdict::Error => t.errors += 1,
            }
            if let Some(cas) = c.cascade() {
                let ct = self.cascades.entry(c.name.clone()).or_default();
                ct.items += 1;
                ct.escalated += cas.escalated as u32;
                for s in &cas.stages {
                    let i = match ct.stages.iter().position(|x| x.stage == s.stage && x.judge == s.judge) {
                        Some(i) => i,
                        None => {
                            ct.stages.push(StageFigures {
                                stage: s.stage.clone(),
                                judge: s.judge.clone(),
                                ..Default::default()
                            });
                            ct.stages.len() - 1
                        }
                    };
                    let st = &mut ct.stages[i];
                    st.items += 1;
                    st.calls += s.calls;
                    st.input_tokens += s.input_tokens;
                    st.output_tokens += s.output_tokens;
                    st.cost_usd += s.cost_usd;
                }
            }
            if let Some(m) = &c.monitor {
                let mt = self.monitors.entry(m.clone()).or_default();
                match verdict {
                    CheckVerdict::Pass => mt.n += 1,
                    CheckVerdict::Fail => {
                        mt.n += 1;
                        mt.violations += 1;
                    }
                    _ => {}
                }
            }
        }
        for s in &r.tool_spans {
            let tt = self.tools.entry(s.tool.clone()).or_default();
            tt.calls += 1;
            match s.status {
                CallStatus::Failed | CallStatus::Faulted(_) => tt.errors += 1,
                CallStatus::Denied | CallStatus::Rejected => tt.refused += 1,
                CallStatus::Executed => {}
            }
            if matches!(s.status, CallStatus::Executed | CallStatus::Failed | CallStatus::Faulted(_)) {
                tt.durations_ms.push(s.duration_ms);
            }
        }
    }
}
