//! What a suite declares for `evalua harden` (SPEC §19): a case's skipped
//! adversaries with the reason, and the suite's own adversaries.

use serde::{Deserialize, Serialize};

use super::de;

/// `harden = { skip = { "claim" }, reason = "…" }` on a case: the adversaries
/// whose behaviour is this case's right answer (a case whose right answer
/// is to do nothing is passed by `claim`), and why. The reason is shown in
/// harden's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardenSpec {
    #[serde(deserialize_with = "de::list")]
    pub skip: Vec<String>,
    pub reason: String,
}

/// The prefix of a suite adversary's name among a harden run's agents
/// (`adversary:NAME`): never a name a suite's `agents` can hold.
pub const ADVERSARY_PREFIX: &str = "adversary:";
