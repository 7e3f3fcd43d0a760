//! Per-trial state that starts from a known point: the case's database (a
//! copy of a template: an SQLite image, or a PostgreSQL template database),
//! its work dir (a copy of a template tree), a seeded RNG, and the tests run
//! on a finished tree (`check.tests`).

pub mod changes;
pub mod db;
pub mod diff;
pub mod digest;
pub mod pg;
pub mod sql;
pub mod sqlite;
pub mod tests;
pub mod workdir;

use sha2::{Digest, Sha256};

pub use sqlite::{DbImage, open_copy, open_empty};

/// The trial's seed: a 53-bit number (exact in JSON, Lua and JavaScript)
/// derived from the run seed, the case id and the trial number.
pub fn trial_seed(run_seed: u64, case_id: &str, trial: u32) -> u64 {
    let mut h = Sha256::new();
    h.update(b"evalua-trial-seed\0");
    h.update(run_seed.to_le_bytes());
    h.update(case_id.as_bytes());
    h.update([0]);
    h.update(trial.to_le_bytes());
    let d = h.finalize();
    u64::from_le_bytes(d[..8].try_into().unwrap()) & ((1u64 << 53) - 1)
}

/// An RNG for one trial: `env.random()`, `ctx.random()`.
pub struct TrialRng(fastrand::Rng);

impl TrialRng {
    pub fn new(seed: u64) -> Self {
        TrialRng(fastrand::Rng::with_seed(seed))
    }
    /// A float in [0, 1), or an integer in [lo, hi] like `math.random`.
    pub fn float(&mut self) -> f64 {
        self.0.f64()
    }
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        self.0.i64(lo..=hi)
    }
}
