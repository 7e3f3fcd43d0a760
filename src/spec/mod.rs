//! What a suite declares, as typed data: the suite, its cases, tools,
//! checks, budget, agents, users, judges and gates. No Lua here: the Lua
//! loader (`lua::load`) builds these from the suite file's tables, and every
//! layer above plans and runs from them.
//!
//! `mod.rs` only declares and re-exports: each part has its file (`suite.rs`,
//! `case.rs`, `check.rs`, `tool.rs`, `agent.rs`, `sandbox.rs`, `budget.rs`,
//! `perturbation.rs`), and `spec::X` names each item as before.

pub mod agent;
pub mod budget;
pub mod case;
pub mod check;
pub mod de;
pub mod fault;
pub mod gate;
pub mod harden;
pub mod keys;
pub mod model;
pub mod perturbation;
pub mod sandbox;
pub mod sources;
pub mod suite;
pub mod synthetic;
pub mod tool;

pub use agent::*;
pub use budget::*;
pub use case::*;
pub use check::*;
pub use fault::{FaultEffect, FaultKind, FaultRule, Faults};
pub use gate::Gate;
pub use harden::HardenSpec;
pub use model::{
    JudgeSpec, LlmUserSpec, ModelAgentSpec, ModelSpec, Prices, Provider, ProxySpec, ToolResults, UserSpec, Withhold,
};
pub use perturbation::*;
pub use sandbox::*;
pub use sources::{SourceFile, Sources};
pub use suite::*;
pub use tool::*;
