//! `evalua harden` (SPEC §19): adversary agents, each trying to pass a case
//! without doing its task, played through the same executor, sandbox,
//! budgets and checks as a run's agent. A case whose check passes one of
//! them has a hole.
//!
//! Each adversary sees only what an agent sees: the case's input, the tools
//! offered (names, effects, schemas), the results of its own calls and its
//! work dir ([`sight`]). One module per family: the lazy ones ([`lazy`]:
//! `claim`, `bystander`), the over-broad and the careless ([`broad`]:
//! `everything`, `wrong_args`), the coding ones ([`coding`]: `forge`,
//! `tamper`, `peek`), the judge's ([`judge`]: `judge_inject`). [`engine`]
//! plays them all over a plan through `run::Scheduler`; [`advice`] says what
//! a hole's grader misses.

pub mod adversary;
pub mod advice;
pub mod broad;
pub mod coding;
pub mod engine;
pub mod judge;
pub mod lazy;
pub mod play;
pub mod schema;
pub mod sight;

pub use adversary::{Adversary, Builtin};
pub use engine::{Options, harden};
