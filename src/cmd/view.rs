//! `evalua view [DIR…]`: serve the local page over the run dirs under DIR
//! (default `runs/`) until stopped.

use std::path::PathBuf;

use crate::error::Result;
use crate::view;

/// What `--review` queues for labelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReviewKind {
    /// The conversations of simulated users: did the user follow its profile?
    Users,
    /// Drafted cases awaiting a person's review (`evalua synth`, SPEC §23): approve or reject each
    Synthetic,
}

/// `--review users [--sample N] [--seed S]` (SPEC §18).
#[derive(Debug, Clone, clap::Args)]
pub struct Review {
    /// Queue a seeded random sample of the trials with a simulated user for labelling, with the criterion "the simulated user followed its profile" (needs --annotator)
    #[arg(long, value_name = "WHAT")]
    pub review: Option<ReviewKind>,
    /// How many trials --review samples (all when fewer)
    #[arg(long, value_name = "N", requires = "review", default_value_t = view::review::DEFAULT_SAMPLE)]
    pub sample: usize,
    /// The seed of --review's sample: the same seed gives the same sample
    #[arg(long, value_name = "S", requires = "review", default_value_t = 0)]
    pub seed: u64,
}

pub fn view(
    dirs: Vec<PathBuf>,
    port: Option<u16>,
    open: bool,
    trace_url: Option<String>,
    annotator: Option<String>,
    labels: Option<PathBuf>,
    review: Review,
) -> Result<u8> {
    let dirs = if dirs.is_empty() { vec![PathBuf::from("runs")] } else { dirs };
    let synthetic = review.review == Some(ReviewKind::Synthetic);
    let review = (review.review == Some(ReviewKind::Users)).then_some((review.sample, review.seed));
    view::serve(view::Options { dirs, port, open, trace_url, annotator, labels, review, synthetic })?;
    Ok(0)
}
