//! One adversary's trial: what the harness knows of the case (its checks'
//! kinds, the tools its trajectory checks name, the hidden tests' folders),
//! which it keeps for the report and hands to the adversaries that act on
//! it, and the adversary driven to its end.

use std::path::PathBuf;

use mlua::Table;

use super::adversary::Builtin;
use super::{broad, coding, judge, lazy};
use crate::trial::{AgentEnd, Trial};

/// What the harness knows of a case and saw of its adversary's trial.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// The case's checks' kinds (`sql`, `tools`, `prohibited`, `tests`, `judge`, …), each once.
    pub kinds: Vec<String>,
    /// The tools its trajectory checks name, in their order, each once.
    pub trajectory: Vec<String>,
    /// The adversary had nothing to act on here (`wrong_args` with no trajectory check).
    pub not_applicable: bool,
    /// What `peek` could read of the hidden tests and the suite.
    pub peeked: Vec<String>,
}

/// The case's checks as its table holds them: kinds and the tools the
/// trajectory checks name (a prohibited query names none).
pub fn observe(trial: &Trial<'_>) -> Observed {
    let mut o = Observed::default();
    let checks: Vec<Table> = trial
        .case_table
        .raw_get::<Table>("checks")
        .map(|c| c.sequence_values::<Table>().filter_map(|c| c.ok()).collect())
        .unwrap_or_default();
    for c in checks {
        let kind = c.raw_get::<Option<String>>("kind").ok().flatten().unwrap_or_else(|| "custom".into());
        if kind != "prohibited"
            && let Ok(Some(tools)) = c.raw_get::<Option<Table>>("tools")
        {
            for t in tools.sequence_values::<String>().flatten() {
                if !o.trajectory.contains(&t) {
                    o.trajectory.push(t);
                }
            }
        }
        if !o.kinds.contains(&kind) {
            o.kinds.push(kind);
        }
    }
    o
}

/// What `peek` tries to read: the hidden tests of the case's `check.tests`,
/// the suite file and the suite's folder.
pub fn peek_targets(trial: &Trial<'_>) -> Vec<PathBuf> {
    let mut t: Vec<PathBuf> = trial.case.spec.tests.iter().filter_map(|c| c.spec.inject.clone()).collect();
    t.push(trial.plan.suite.path.clone());
    t.push(trial.plan.suite.dir.clone());
    t
}

/// Play built-in adversary `b` in `trial`; what the harness saw goes to `seen`.
pub fn play(b: Builtin, trial: &Trial<'_>, seen: &mut Observed) -> AgentEnd {
    match b {
        Builtin::Claim => lazy::claim(trial),
        Builtin::Bystander => lazy::bystander(trial),
        Builtin::Everything => broad::everything(trial),
        Builtin::WrongArgs => {
            seen.not_applicable = seen.trajectory.is_empty();
            broad::wrong_args(trial, &seen.trajectory.clone())
        }
        Builtin::Forge => coding::forge(trial),
        Builtin::Tamper => coding::tamper(trial),
        Builtin::Peek => {
            let (end, read) = coding::peek(trial, &peek_targets(trial));
            seen.peeked = read;
            end
        }
        Builtin::JudgeInject => judge::judge_inject(trial),
    }
}
