//! A phase of a trial (the agent's turn, the grading): the handles made for
//! it (`env`, `ctx` and `ctx.db`; `t` and `t.db`) stop working once it ends,
//! so a handle stashed in a suite-level local or a global cannot be used
//! later: not by a check to call tools or write the "read-only" final state,
//! not by a later trial.

use std::cell::Cell;
use std::rc::Rc;

#[derive(Clone, Default)]
pub struct Phase(Rc<Cell<bool>>);

impl Phase {
    pub fn new() -> Self {
        Phase::default()
    }

    /// End the phase: its handles refuse every call from now on.
    pub fn end(&self) {
        self.0.set(true);
    }

    /// Err when the phase has ended; `what` names the handle (`ctx.db`, `env.call`).
    pub fn check(&self, what: &str) -> mlua::Result<()> {
        if self.0.get() {
            return Err(mlua::Error::runtime(format!(
                "{what}: this handle belongs to a phase of the trial that has ended (a stashed handle cannot be used later)"
            )));
        }
        Ok(())
    }
}
