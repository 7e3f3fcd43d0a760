//! `perturb = { … }` (SPEC §17): what a perturbation changes in a case.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::check::CheckInfo;
use super::fault::{self, Faults};
use super::model::UserSpec;
use super::{de, keys};

/// Perturbations (SPEC §17): a changed detail or a cut tool, declared in the
/// suite (for every case) or in a case (that case only; it replaces the
/// suite's of the same name), run beside the unperturbed baseline.
/// One perturbation as the DSL normalised it: what it changes in a case.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Perturbation {
    /// The case's input, replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The case's fixture, replaced (made absolute by the DSL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixture: Option<PathBuf>,
    /// Fault rules, replacing the case's tool by tool.
    #[serde(default, deserialize_with = "fault::read_faults", skip_serializing_if = "Option::is_none")]
    pub faults: Option<Faults>,
    /// Tools not offered at all: a request for one is rejected as unknown.
    #[serde(default, deserialize_with = "de::opt_list", skip_serializing_if = "Option::is_none")]
    pub drop_tools: Option<Vec<String>>,
    /// The (scripted or simulated) user, replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserSpec>,
    /// The DSL's: `expect` normalised into checks, which replace the case's.
    #[serde(default, deserialize_with = "de::opt_list", skip_serializing_if = "Option::is_none")]
    pub checks: Option<Vec<CheckInfo>>,
    /// `file:line` of the declaration that holds it (the suite's or the case's).
    #[serde(rename = "_where", default, skip_serializing)]
    pub location: String,
}

impl keys::Keys for Perturbation {
    const DSL_KEYS: &[&str] = &["checks", "_where"];
    /// The checks as written: the DSL turns them into `checks`.
    const LUA_KEYS: &[&str] = &["expect"];
}

/// The name of a run's unperturbed condition (no perturbation may take it).
pub const BASELINE: &str = "baseline";

/// Perturbations by name.
pub type Perturbations = std::collections::BTreeMap<String, Perturbation>;
