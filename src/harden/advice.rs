//! What a hole's grader is missing, in one line, from the adversary that
//! passed and the kinds of the case's checks.

use super::adversary::{Adversary, Builtin};

/// Kinds of check that read what a trial left (its database, outbox, files, tests).
const STATE: &[&str] = &["sql", "outbox", "files", "same_state", "tests", "command", "no_writes", "custom"];

/// The advice for a hole of `adv` on a case whose checks have these kinds.
pub fn advice(adv: &Adversary, kinds: &[String]) -> String {
    let has = |k: &str| kinds.iter().any(|x| x == k);
    let b = match adv {
        Adversary::Builtin(b) => *b,
        Adversary::Suite(n) => {
            return format!("the suite's adversary '{n}' passed: the checks above accept what it does");
        }
    };
    match b {
        Builtin::Claim | Builtin::Bystander if !STATE.iter().any(|k| has(k)) => {
            "no check reads what the task must change: add a final-state check (check.sql, check.outbox, check.files)".into()
        }
        Builtin::Claim | Builtin::Bystander => format!(
            "its final-state checks hold when nothing is done: check what the task must change, or, if doing nothing is right here, declare harden = {{ skip = {{ \"{}\" }}, reason = \"…\" }}",
            b.name()
        ),
        Builtin::Everything if !has("prohibited") && !has("scope") && !has("no_writes") => {
            "nothing forbids the over-broad action: add a prohibited query on what must stay untouched (prohibited = { … }) or a scope check".into()
        }
        Builtin::Everything => {
            "its prohibited queries miss what the over-broad calls changed: prohibit any change beyond the entity the task names".into()
        }
        Builtin::WrongArgs if !has("args") => {
            "its trajectory checks name tools, not their arguments: add check.args or a final-state check on the ids the input names".into()
        }
        Builtin::WrongArgs => "its argument checks accept other ids and amounts: compare them with the input's".into(),
        Builtin::Forge => {
            "it believes what the agent wrote or printed: run tests the agent cannot write (hidden tests: check.tests { inject = … })".into()
        }
        Builtin::Tamper if !has("scope") => {
            "the agent may edit the tests: add a scope check (check.scope { forbidden = { \"tests/**\" } }) and hidden tests".into()
        }
        Builtin::Tamper => "its scope check lets the edited tests through: forbid the test and config files".into(),
        Builtin::Peek => {
            "the hidden tests or the suite are readable from the agent's sandbox: keep them out of sandbox.expose and run under --isolation sandbox".into()
        }
        Builtin::JudgeInject => {
            "the judge obeys the answer it judges: add a deterministic check beside it (check.sql, check.answer) or a judge that ignores instructions in the answer".into()
        }
    }
}
