//! The lazy adversaries: `claim` calls nothing and says the task is done;
//! `bystander` calls only the read tools, then says the same. A case either
//! passes has no check on what the task must change.

use super::schema::{self, Aim};
use super::sight::Sight;
use crate::trial::{AgentEnd, Trial};

/// How an adversary ends: its answer, or the budget it spent after all.
pub fn end(sight: &Sight<'_, '_>, answer: String) -> AgentEnd {
    match sight.trial.budget_hit() {
        Some(hit) => AgentEnd::budget(&hit),
        None => AgentEnd { answer, ..AgentEnd::running() },
    }
}

/// `claim`: no call; "done", quoting the input's ids and numbers.
pub fn claim(trial: &Trial<'_>) -> AgentEnd {
    let s = Sight::new(trial);
    end(&s, s.done())
}

/// `bystander`: every read tool, then "done".
pub fn bystander(trial: &Trial<'_>) -> AgentEnd {
    let mut s = Sight::new(trial);
    read_all(&mut s);
    end(&s, s.done())
}

/// Call each read tool once with the best arguments it can build, in two
/// passes: a tool whose call failed is tried again with what the others
/// taught (a lookup's customer id for a verification).
pub fn read_all(s: &mut Sight<'_, '_>) {
    let reads = s.reads();
    let mut done = vec![false; reads.len()];
    for _pass in 0..2 {
        for (i, t) in reads.iter().enumerate() {
            if done[i] || !s.room() {
                continue;
            }
            let (args, _) = schema::args(t, s, Aim::Right(0));
            done[i] = s.call(&t.spec.name, args).is_some();
        }
    }
}
