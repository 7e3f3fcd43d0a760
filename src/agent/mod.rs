//! Agents: whatever plays the agent speaks to the same executor.
//! `drive` runs the case's agent to its end and says how it ended.

pub mod command;
pub mod mcp;
pub mod model;
pub mod protocol;
pub mod replay;
pub mod scripted;

use crate::spec::AgentSpec;
use crate::trial::{AgentEnd, Trial};

/// Run the case's agent to its end.
pub fn drive(trial: &Trial<'_>) -> AgentEnd {
    match trial.agent_choice.spec {
        Some(AgentSpec::Scripted { .. }) => scripted::run(trial),
        Some(AgentSpec::Command(spec)) => command::run(trial, spec),
        Some(AgentSpec::Replay { path }) => replay::run(trial, path),
        Some(AgentSpec::Model(m)) => model::run(trial, m),
        None => AgentEnd::infra("no agent declared".into()),
    }
}
