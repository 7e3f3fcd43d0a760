//! The suite's agents as loading finishes them: the default agent, every
//! agent by name (`agents = { … }`), the adversaries; a model agent's
//! endpoint resolved and its system prompt file read.

use std::path::Path;

use crate::spec::{AgentSpec, DEFAULT_AGENT_NAME, NamedAgent, SuiteTable};
use crate::util::digest::sha256_hex;
use crate::util::paths::display_path;

/// A declared agent, finished: `resolve`: a model agent's endpoint must
/// resolve now (not for a named agent that is not the default: it resolves
/// when a run picks it, so a suite whose `model` agent needs a key still
/// loads without one). A model agent's system prompt file is read now.
pub(super) fn finish_agent(spec: Option<AgentSpec>, resolve: bool) -> std::result::Result<Option<AgentSpec>, String> {
    let Some(mut spec) = spec else { return Ok(None) };
    if let AgentSpec::Model(a) = &mut spec {
        let what = format!("evalua.agent.{}", a.model.provider);
        if resolve {
            crate::model::Endpoint::resolve(&a.model, true).map_err(|e| format!("{what}: {e}"))?;
        }
        if let Some(p) = a.system_path.take() {
            let text = std::fs::read_to_string(&p)
                .map_err(|e| format!("{what}: cannot read the system prompt {}: {e}", display_path(p.as_ref())))?;
            a.system = Some(text);
            a.system_path = Some(display_path(Path::new(&p)));
        }
        a.system_sha256 = a.system.as_ref().map(|s| sha256_hex(s.as_bytes()));
    }
    Ok(Some(spec))
}

/// The suite's own adversaries (`suite:adversary { name, agent }`, SPEC §19), by name.
pub(super) fn finish_adversaries(s: &mut SuiteTable) -> std::result::Result<Vec<NamedAgent>, String> {
    let mut out = Vec::new();
    for (name, spec) in s.adversaries.take().unwrap_or_default() {
        let spec = finish_agent(Some(spec), false)
            .map_err(|e| format!("adversary '{name}': {e}"))?
            .ok_or_else(|| format!("adversary '{name}': not an agent"))?;
        out.push(NamedAgent { name, spec });
    }
    Ok(out)
}

/// The suite's default agent and every agent by name (see `named_agents` in
/// the stdlib): `agent = …` alone is one agent named "default".
pub(super) fn finish_agents(s: &mut SuiteTable) -> std::result::Result<(Option<AgentSpec>, Vec<NamedAgent>), String> {
    let Some(named) = s.agents.take() else {
        let agent = finish_agent(s.agent.take(), true)?;
        let agents =
            agent.iter().map(|a| NamedAgent { name: DEFAULT_AGENT_NAME.to_string(), spec: a.clone() }).collect();
        return Ok((agent, agents));
    };
    let mut agents = Vec::new();
    // By name, in order (a BTreeMap's).
    for (name, spec) in named {
        let is_default = s.default_agent.as_deref() == Some(name.as_str());
        let spec = finish_agent(Some(spec), is_default)
            .map_err(|e| format!("agent '{name}': {e}"))?
            .ok_or_else(|| format!("agent '{name}': not an agent"))?;
        agents.push(NamedAgent { name, spec });
    }
    let agent = s.default_agent.as_deref().and_then(|d| agents.iter().find(|a| a.name == d)).map(|a| a.spec.clone());
    Ok((agent, agents))
}
