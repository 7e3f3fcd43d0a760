//! `budget = { … }`: the limits of one trial, and its deadline.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{de, keys};

/// The trial deadline when the suite's budget sets none.
pub const DEFAULT_DEADLINE_S: f64 = 300.0;
/// The longest trial deadline a suite may set: a week.
pub const MAX_DEADLINE_S: f64 = 7.0 * 24.0 * 3600.0;

/// `budget = { … }` (the DSL checks it at the suite's line; the host reads
/// it again through these fields: counts whole, amounts finite).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    #[serde(default, deserialize_with = "Budget::read_deadline_s")]
    pub deadline_s: Option<f64>,
    #[serde(default, deserialize_with = "de::count")]
    pub max_tool_calls: Option<u32>,
    #[serde(default, deserialize_with = "de::count")]
    pub max_turns: Option<u32>,
    #[serde(default, deserialize_with = "de::count")]
    pub max_tokens: Option<u64>,
    #[serde(default, deserialize_with = "de::amount")]
    pub max_cost_usd: Option<f64>,
}

impl Budget {
    /// `deadline_s`: above 0 and at most [`MAX_DEADLINE_S`].
    fn read_deadline_s<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        match de::amount(d)? {
            Some(v) if v <= 0.0 || v > MAX_DEADLINE_S => {
                Err(serde::de::Error::custom(format_args!("must be above 0 and at most {MAX_DEADLINE_S} s, got {v}")))
            }
            v => Ok(v),
        }
    }

    /// How long a trial's agent may run: `deadline_s`, else [`DEFAULT_DEADLINE_S`].
    /// Never panics: the loader refuses a deadline that is not a positive number
    /// of at most [`MAX_DEADLINE_S`], and a value that slips through anyway is
    /// clamped into that range.
    pub fn deadline(&self) -> Duration {
        let s = self.deadline_s.unwrap_or(DEFAULT_DEADLINE_S);
        let s = if s.is_nan() { DEFAULT_DEADLINE_S } else { s.clamp(0.0, MAX_DEADLINE_S) };
        Duration::try_from_secs_f64(s).unwrap_or(Duration::from_secs(DEFAULT_DEADLINE_S as u64))
    }

    /// The instant a trial that starts `now` must end by.
    pub fn deadline_from(&self, now: std::time::Instant) -> std::time::Instant {
        now.checked_add(self.deadline()).unwrap_or(now + Duration::from_secs(DEFAULT_DEADLINE_S as u64))
    }
}

impl keys::Keys for Budget {}
