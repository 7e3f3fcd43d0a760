//! The judge cache: one small JSON file per valid judge answer, keyed by
//! (judge model and endpoint, prompt hash, input hash, panel seat). Errors are
//! never cached, so a failed call is retried on the next run.
//!
//! Location: `$EVALUA_JUDGE_CACHE` when set, else `.evalua/judge-cache/`
//! beside the suite file. `evalua run --no-cache` neither reads nor writes it:
//! the run's [`Cache`] is off (a value the run passes down, not a switch of
//! the process).

use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};

use crate::util::digest::sha256_hex;

/// A run's judge cache: its folder, or none (`--no-cache`: every judge call
/// goes to the model and nothing is stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache(Option<PathBuf>);

impl Cache {
    /// The cache of a suite in `suite_dir`, or none when `on` is false.
    pub fn of(suite_dir: &Path, on: bool) -> Cache {
        Cache(on.then(|| dir(suite_dir)))
    }

    /// The stored answer under `key`, if any (and if the cache is on).
    pub fn get(&self, key: &str) -> Option<Json> {
        get(self.0.as_deref()?, key)
    }

    /// Store a valid answer (if the cache is on).
    pub fn put(&self, key: &str, meta: Json, answer: &Json) {
        if let Some(dir) = &self.0 {
            put(dir, key, meta, answer);
        }
    }

    /// For the manifest: the folder, or "off".
    pub fn describe(&self) -> String {
        self.0.as_deref().map(crate::util::paths::display_path).unwrap_or_else(|| "off".to_string())
    }
}

/// The cache folder for a suite in `suite_dir`.
pub fn dir(suite_dir: &Path) -> PathBuf {
    match std::env::var_os("EVALUA_JUDGE_CACHE") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => suite_dir.join(".evalua").join("judge-cache"),
    }
}

pub fn key(endpoint_id: &str, prompt_hash: &str, input_hash: &str, seat: &str) -> String {
    sha256_hex(json!([endpoint_id, prompt_hash, input_hash, seat]).to_string().as_bytes())
}

fn path(dir: &Path, key: &str) -> PathBuf {
    dir.join(&key[..2]).join(format!("{key}.json"))
}

fn get(dir: &Path, key: &str) -> Option<Json> {
    let text = std::fs::read_to_string(path(dir, key)).ok()?;
    let v: Json = serde_json::from_str(&text).ok()?;
    v.get("answer").cloned()
}

/// Store a valid answer. Written to a temp file and renamed, so a reader never
/// sees half a file; a failure to write only costs a future call.
fn put(dir: &Path, key: &str, meta: Json, answer: &Json) {
    let p = path(dir, key);
    let Some(parent) = p.parent() else { return };
    if std::fs::create_dir_all(parent).is_err() {
        return;
    }
    let mut v = meta;
    v["answer"] = answer.clone();
    v["stored_at"] = json!(jiff::Timestamp::now().to_string());
    let tmp = parent.join(format!(".{key}.{:08x}.tmp", fastrand::u32(..)));
    if std::fs::write(&tmp, serde_json::to_vec_pretty(&v).unwrap_or_default()).is_ok() {
        let _ = std::fs::rename(&tmp, &p);
    }
    let _ = std::fs::remove_file(&tmp);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_that_is_off_neither_reads_nor_writes_and_another_in_the_same_process_does() {
        let suite = tempfile::tempdir().unwrap();
        let dir = suite.path().join(".evalua").join("judge-cache");
        let (on, off) = (Cache(Some(dir.clone())), Cache(None));
        let k = key("m", "p", "i", "0");
        off.put(&k, json!({}), &json!({"verdict": "pass"}));
        assert!(!dir.exists(), "a cache that is off wrote {}", dir.display());
        on.put(&k, json!({}), &json!({"verdict": "pass"}));
        assert_eq!(on.get(&k), Some(json!({"verdict": "pass"})));
        assert_eq!(off.get(&k), None, "a cache that is off read a stored answer");
        assert_eq!(off.describe(), "off");
    }
}
