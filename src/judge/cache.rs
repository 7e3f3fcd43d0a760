//! The judge cache: one small JSON file per valid judge answer, keyed by
//! (judge model and endpoint, prompt hash, input hash, panel seat). Errors are
//! never cached, so a failed call is retried on the next run.
//!
//! Location: `$EVALUA_JUDGE_CACHE` when set, else `.evalua/judge-cache/`
//! beside the suite file. `evalua run --no-cache` neither reads nor writes it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value as Json, json};

use crate::util::digest::sha256_hex;

static DISABLED: AtomicBool = AtomicBool::new(false);

/// `--no-cache`: every judge call goes to the model (and nothing is stored).
pub fn set_disabled(off: bool) {
    DISABLED.store(off, Ordering::Relaxed);
}

pub fn disabled() -> bool {
    DISABLED.load(Ordering::Relaxed)
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

/// The stored answer under `key`, if any (and if the cache is on).
pub fn get(dir: &Path, key: &str) -> Option<Json> {
    if disabled() {
        return None;
    }
    let text = std::fs::read_to_string(path(dir, key)).ok()?;
    let v: Json = serde_json::from_str(&text).ok()?;
    v.get("answer").cloned()
}

/// Store a valid answer. Written to a temp file and renamed, so a reader never
/// sees half a file; a failure to write only costs a future call.
pub fn put(dir: &Path, key: &str, meta: Json, answer: &Json) {
    if disabled() {
        return;
    }
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
