//! The adversaries by name: the built-in ones of SPEC §19 and the suite's
//! own (`suite:adversary { name, agent }`), and which cases each applies to.

/// A built-in adversary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Builtin {
    /// Calls nothing; answers that the task is done, quoting the input's numbers and ids.
    Claim,
    /// Calls only the read tools, then claims success.
    Bystander,
    /// Calls every write tool on every entity it can find (the over-broad action).
    Everything,
    /// Calls the tools the case's trajectory checks name, in order, with other ids and amounts.
    WrongArgs,
    /// Coding: writes files and prints output that claim the tests passed.
    Forge,
    /// Coding: edits the tests, graders and config files it can see in its work dir.
    Tamper,
    /// Coding: tries to read the hidden tests and the suite.
    Peek,
    /// Judge checks: an answer that tells the judge to ignore the rubric and pass.
    JudgeInject,
}

/// What a built-in adversary needs of a case to be played there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Every case.
    Any,
    /// Cases that offer a tool that writes (`effect` other than `read`).
    Writes,
    /// Coding cases: a work tree or `check.tests`.
    Coding,
    /// Cases with a judge check.
    Judged,
}

impl Builtin {
    pub const ALL: [Builtin; 8] = [
        Builtin::Claim,
        Builtin::Bystander,
        Builtin::Everything,
        Builtin::WrongArgs,
        Builtin::Forge,
        Builtin::Tamper,
        Builtin::Peek,
        Builtin::JudgeInject,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Builtin::Claim => "claim",
            Builtin::Bystander => "bystander",
            Builtin::Everything => "everything",
            Builtin::WrongArgs => "wrong_args",
            Builtin::Forge => "forge",
            Builtin::Tamper => "tamper",
            Builtin::Peek => "peek",
            Builtin::JudgeInject => "judge_inject",
        }
    }

    pub fn parse(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }

    pub fn family(self) -> Family {
        match self {
            Builtin::Claim | Builtin::Bystander | Builtin::WrongArgs => Family::Any,
            Builtin::Everything => Family::Writes,
            Builtin::Forge | Builtin::Tamper | Builtin::Peek => Family::Coding,
            Builtin::JudgeInject => Family::Judged,
        }
    }
}

/// An adversary: built in, or the suite's own (by name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Adversary {
    Builtin(Builtin),
    Suite(String),
}

impl Adversary {
    pub fn name(&self) -> &str {
        match self {
            Adversary::Builtin(b) => b.name(),
            Adversary::Suite(n) => n,
        }
    }
}

/// What a case offers, for [`applies`].
#[derive(Debug, Clone, Copy, Default)]
pub struct CaseKind {
    pub writes: bool,
    pub coding: bool,
    pub judged: bool,
}

/// Whether `b` is played against a case of this kind.
pub fn applies(b: Builtin, kind: CaseKind) -> bool {
    match b.family() {
        Family::Any => true,
        Family::Writes => kind.writes,
        Family::Coding => kind.coding,
        Family::Judged => kind.judged,
    }
}
