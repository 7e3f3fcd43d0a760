//! The careless adversaries: `everything` calls every write tool on every
//! entity it found (the over-broad action a scope check or a prohibited
//! query must catch); `wrong_args` calls the tools the case's trajectory
//! checks name, in their order, with ids and amounts other than the input's
//! (what a check of names without arguments lets through).

use super::lazy::{end, read_all};
use super::schema::{self, Aim};
use super::sight::Sight;
use crate::trial::{AgentEnd, Trial};

/// Most rounds over the write tools (each round: every tool, its next argument set).
const MAX_ROUNDS: usize = schema::MAX_SETS;

/// `everything`: read what it can, then every write tool with every
/// argument set it can build, round by round, within the budget.
pub fn everything(trial: &Trial<'_>) -> AgentEnd {
    let mut s = Sight::new(trial);
    read_all(&mut s);
    let writes = s.writes();
    let rounds = writes.iter().map(|w| schema::variety(w, &s)).max().unwrap_or(0).min(MAX_ROUNDS);
    let mut made = Vec::new();
    for i in 0..rounds {
        for w in &writes {
            let (args, valid) = schema::args(w, &s, Aim::Right(i));
            let key = (w.spec.name.clone(), args.clone());
            if (valid || !w.spec.validate) && !made.contains(&key) && s.room() {
                made.push(key);
                s.call(&w.spec.name, args);
            }
        }
    }
    end(&s, s.done())
}

/// `wrong_args`: the trajectory's tools in order, each with other ids and amounts.
pub fn wrong_args(trial: &Trial<'_>, trajectory: &[String]) -> AgentEnd {
    let mut s = Sight::new(trial);
    for name in trajectory {
        let Some(t) = s.tool(name) else { continue };
        let (args, _) = schema::args(&t, &s, Aim::Wrong);
        s.call(name, args);
    }
    end(&s, s.done())
}
