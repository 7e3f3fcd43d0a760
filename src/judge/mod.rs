//! LLM judges (SPEC §5): `judge.rubric` (a binary verdict per criterion, one
//! judge or a panel voting by majority) and `judge.pairwise` (two outputs
//! compared in both orders).
//!
//! Honest by construction: an invalid answer, a refusal or an API failure is a
//! grader error, never a score; an undeterminable criterion is a grader error
//! with its own verdict; a judge that cannot be reached by configuration (no
//! key, no base URL) makes the check *skipped*, never passed. Valid answers
//! are cached on disk (see [`cache`]), so an unchanged re-run makes no calls.

pub mod cache;
pub mod calibrate;
pub mod client;
pub mod labels;
pub mod mock;
pub mod prompt;
pub mod records;
pub mod resolve;
pub mod verdict;

pub use prompt::{Mark, prompt_hash};
pub use records::{Calibration, calibration, calibration_path, calibration_warnings, manifest, suite_judges};
pub use resolve::{Judge, resolve};
pub use verdict::{Conclusion, JudgeCall, JudgeCalls, Status, pairwise, rubric};
