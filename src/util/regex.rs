//! Regexes compiled once per thread: checks match the same patterns in every trial.

use std::cell::RefCell;
use std::collections::HashMap;

use regex::Regex;

thread_local! {
    static REGEXES: RefCell<HashMap<String, Result<Regex, String>>> = RefCell::new(HashMap::new());
}

/// Compile (once per thread) and use a regex. Err: the pattern does not
/// compile, as one line (`bad regex /x(/: unclosed group`).
pub fn with_regex<R>(pattern: &str, f: impl FnOnce(&Regex) -> R) -> Result<R, String> {
    REGEXES.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() > 512 {
            cache.clear();
        }
        let re = cache.entry(pattern.to_string()).or_insert_with(|| {
            Regex::new(pattern).map_err(|e| e.to_string().lines().last().unwrap_or("").trim().to_string())
        });
        match re {
            Ok(re) => Ok(f(re)),
            Err(e) => Err(format!("bad regex /{pattern}/: {e}")),
        }
    })
}
