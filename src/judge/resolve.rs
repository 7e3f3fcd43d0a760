//! A judge's model resolved against the environment, or why it cannot be
//! reached by configuration (then the check is skipped, never passed).

use serde_json::json;

use crate::spec::ModelSpec;

/// A judge model resolved against the environment: where to send requests.
#[derive(Debug, Clone)]
pub struct Judge {
    pub spec: ModelSpec,
    pub endpoint: crate::model::Endpoint,
}

impl Judge {
    pub fn id(&self) -> String {
        self.spec.id()
    }
    /// Model and server: the same model name on another server may answer otherwise.
    pub fn endpoint_id(&self) -> String {
        format!("{}@{}", self.spec.id(), self.endpoint.base_url)
    }
    /// Everything about the judge that can change its answer: part of the cache key.
    pub fn cache_id(&self) -> String {
        let s = &self.spec;
        json!([self.endpoint_id(), s.temperature, s.seed, s.max_tokens]).to_string()
    }
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Resolve a model spec, or say why it is not reachable by configuration
/// (then the check is skipped). Reachable: a base URL (in the spec, or
/// `EVALUA_<P>_BASE_URL` / `<P>_BASE_URL`) or the API key variable set. The
/// endpoint itself is built as for model agents (`model::Endpoint::resolve`).
pub fn resolve(spec: &ModelSpec) -> Result<Judge, String> {
    let pre = spec.provider.env_prefix();
    let key_env = spec.api_key_env.clone().unwrap_or_else(|| format!("{pre}_API_KEY"));
    let has_base = spec.base_url.is_some()
        || env_nonempty(&format!("EVALUA_{pre}_BASE_URL")).is_some()
        || env_nonempty(&format!("{pre}_BASE_URL")).is_some();
    if !has_base && env_nonempty(&key_env).is_none() {
        return Err(format!(
            "no judge model reachable for {}: set {key_env} (or {pre}_BASE_URL, or base_url in the judge's model)",
            spec.id()
        ));
    }
    let endpoint = crate::model::Endpoint::resolve(spec, true)?;
    Ok(Judge { spec: spec.clone(), endpoint })
}
