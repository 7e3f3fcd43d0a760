//! `evalua review SUITE CASE --approve|--reject --reviewer NAME [--note T]
//! [--labels STORE]` (SPEC §23): a person's decision on a drafted case,
//! recorded in the label store and in the case's `review` (`synth::review`).

use std::path::PathBuf;

use super::flags;
use crate::error::Result;
use crate::spec::synthetic::ReviewStatus;
use crate::synth::review::{self, Decision};
use crate::util::paths::display_path;

/// `evalua review`'s flags.
#[derive(clap::Args, Debug)]
pub struct ReviewArgs {
    #[command(flatten)]
    pub machine: flags::Machine,
    #[arg(value_name = "SUITE.lua")]
    pub suite: PathBuf,
    /// The drafted case's id
    #[arg(value_name = "CASE")]
    pub case: String,
    /// Its expected result is right: it counts from the next run
    #[arg(long, conflicts_with = "reject", required_unless_present = "reject")]
    pub approve: bool,
    /// It is wrong: kept in its module, skipped by every run
    #[arg(long)]
    pub reject: bool,
    /// Who decided (recorded with the decision)
    #[arg(long, value_name = "NAME")]
    pub reviewer: String,
    /// Why, in a few words
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// The label store (default: labels/<suite>.jsonl beside the suite)
    #[arg(long, value_name = "STORE")]
    pub labels: Option<PathBuf>,
}

pub fn review(a: ReviewArgs) -> Result<u8> {
    let status = if a.approve { ReviewStatus::Approved } else { ReviewStatus::Rejected };
    let r = review::record(&Decision {
        suite: &a.suite,
        case: &a.case,
        status,
        reviewer: &a.reviewer,
        note: a.note.as_deref(),
        store: a.labels.as_deref(),
    })?;
    println!(
        "{}: {} by {} (written to {} and {})",
        crate::util::inert::console(&r.case),
        r.status.as_str(),
        crate::util::inert::console(&r.reviewer),
        display_path(&r.module),
        display_path(&r.store)
    );
    super::json::set("review", serde_json::to_value(&r).unwrap_or_default());
    Ok(0)
}
