//! What `evalua harden` found (SPEC §19): per case, each adversary whose
//! trial was accepted (a hole) and the checks that passed it. Printed by
//! `evalua harden`, given by its `--json`, and kept in the manifest of a run
//! that hardened its suite first (`run --harden`, `gate = { hardened = true }`).

use serde::{Deserialize, Serialize};

/// The result of hardening a suite.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hardened {
    /// Every case played, in plan order, with its holes (none: it held).
    pub cases: Vec<CaseHoles>,
    /// The adversaries played (built-in, then the suite's own), by name.
    pub adversaries: Vec<String>,
    /// Holes in all: (case, adversary) pairs whose trial was accepted.
    pub holes: usize,
    /// Trials played.
    #[serde(default)]
    pub trials: usize,
    /// Trials that could not be played (an infrastructure error), each `case / adversary: why`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_played: Vec<String>,
    /// Adversaries a case leaves out (`harden = { skip, reason }`), with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

/// One case and its holes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseHoles {
    pub case: String,
    pub holes: Vec<Hole>,
}

/// An adversary a case accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hole {
    pub adversary: String,
    /// The case's checks that passed it (monitors left out).
    pub passed_checks: Vec<String>,
    /// What the grader is missing, in a line.
    #[serde(default)]
    pub advice: String,
}

/// Adversaries a case leaves out, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub case: String,
    pub adversaries: Vec<String>,
    pub reason: String,
}

impl Hardened {
    /// The cases with at least one hole.
    pub fn with_holes(&self) -> impl Iterator<Item = &CaseHoles> {
        self.cases.iter().filter(|c| !c.holes.is_empty())
    }
}
