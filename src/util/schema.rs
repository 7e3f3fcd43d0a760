//! JSON Schema: compile (validating the schema itself first) and report
//! every error of a value as `path: message` lines.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value as Json;

thread_local! {
    static SCHEMAS: RefCell<HashMap<String, Arc<jsonschema::Validator>>> = RefCell::new(HashMap::new());
}

/// Compile a schema, after checking it against the meta-schema.
pub fn compile(schema: &Json) -> Result<jsonschema::Validator, String> {
    jsonschema::meta::validate(schema).map_err(|e| {
        let at = e.instance_path().to_string();
        if at.is_empty() { e.to_string() } else { format!("{e} (at {at})") }
    })?;
    jsonschema::validator_for(schema).map_err(|e| e.to_string())
}

/// Compile (once per thread) a schema.
pub fn validator(schema: &Json) -> Result<Arc<jsonschema::Validator>, String> {
    let key = schema.to_string();
    SCHEMAS.with(|cache| {
        if let Some(v) = cache.borrow().get(&key) {
            return Ok(v.clone());
        }
        let v = Arc::new(compile(schema)?);
        let mut cache = cache.borrow_mut();
        if cache.len() > 256 {
            cache.clear();
        }
        cache.insert(key, v.clone());
        Ok(v)
    })
}

/// Every error of `value` against the schema, as `path: message` lines.
pub fn errors(v: &jsonschema::Validator, value: &Json) -> Vec<String> {
    v.iter_errors(value)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() { e.to_string() } else { format!("{at}: {e}") }
        })
        .collect()
}
