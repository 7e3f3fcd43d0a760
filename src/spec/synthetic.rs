//! A case's origin and its human review (SPEC §23): `source = { kind =
//! "synthetic", model, prompt_sha256, at }` and `review = { status, reviewer,
//! at, note }` on a case drafted by `evalua synth`. A case whose review is
//! pending is played but counted in no figure and no gate; a rejected one is
//! never declared (the DSL skips it).

use serde::{Deserialize, Serialize};

use super::keys;

/// Where a case came from, when not written by hand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseOrigin {
    /// `"synthetic"`: drafted by a model (`evalua synth`).
    pub kind: String,
    /// The model that drafted it.
    #[serde(default)]
    pub model: Option<String>,
    /// sha256 of the prompt it was drafted from.
    #[serde(default)]
    pub prompt_sha256: Option<String>,
    /// When it was drafted (RFC 3339).
    #[serde(default)]
    pub at: Option<String>,
}

impl keys::Keys for CaseOrigin {}

/// Where a person's review of a drafted case stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewStatus {
    /// Not reviewed yet: played, reported apart, counted nowhere.
    #[default]
    Pending,
    /// A person approved its expected result: it counts.
    Approved,
    /// A person rejected it: kept in its file, never declared.
    Rejected,
}

impl ReviewStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewStatus::Pending => "pending",
            ReviewStatus::Approved => "approved",
            ReviewStatus::Rejected => "rejected",
        }
    }
}

/// `review = { status, reviewer, at, note }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseReview {
    pub status: ReviewStatus,
    #[serde(default)]
    pub reviewer: Option<String>,
    #[serde(default)]
    pub at: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
}

impl keys::Keys for CaseReview {}
