//! Prices in USD per million tokens. The built-in table covers common hosted
//! models (list prices as of late 2026; a suite overrides them with
//! `prices = { input = ..., output = ... }`). Local models are not in it:
//! their cost is unknown (`None`), not zero.

pub use crate::spec::Prices;

/// What `input` and `output` tokens cost at `p`.
pub fn cost(p: &Prices, input_tokens: u64, output_tokens: u64) -> f64 {
    (input_tokens as f64 * p.input + output_tokens as f64 * p.output) / 1_000_000.0
}

/// (model name prefix, input, output). The longest matching prefix wins, so
/// `gpt-4.1-mini-2025-04-14` prices as `gpt-4.1-mini`, not `gpt-4.1`.
const TABLE: &[(&str, f64, f64)] = &[
    ("gpt-4.1", 2.00, 8.00),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4o", 2.50, 10.00),
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-5", 1.25, 10.00),
    ("gpt-5-mini", 0.25, 2.00),
    ("gpt-5-nano", 0.05, 0.40),
    ("o3", 2.00, 8.00),
    ("o4-mini", 1.10, 4.40),
    ("claude-opus-4", 15.00, 75.00),
    ("claude-sonnet-4", 3.00, 15.00),
    ("claude-3-7-sonnet", 3.00, 15.00),
    ("claude-3-5-sonnet", 3.00, 15.00),
    ("claude-haiku-4", 1.00, 5.00),
    ("claude-3-5-haiku", 0.80, 4.00),
];

pub fn lookup(model: &str) -> Option<Prices> {
    TABLE
        .iter()
        .filter(|(prefix, _, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map(|&(_, input, output)| Prices { input, output })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins() {
        assert_eq!(lookup("gpt-4.1-mini-2025-04-14"), Some(Prices { input: 0.40, output: 1.60 }));
        assert_eq!(lookup("gpt-4.1"), Some(Prices { input: 2.0, output: 8.0 }));
        assert_eq!(lookup("smollm2-135m"), None);
    }

    #[test]
    fn cost_is_per_million() {
        let p = Prices { input: 2.0, output: 8.0 };
        let c = cost(&p, 1000, 500);
        assert!((c - 0.006).abs() < 1e-12);
    }
}
