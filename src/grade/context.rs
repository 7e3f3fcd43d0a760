//! What every worker grading items shares (the suite as declared, the plan
//! items are re-executed on), and what becomes of an item.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::record::Trace;
use crate::spec::Suite;
use crate::trial::Plan;

/// What every worker shares: the suite as declared.
pub struct Context {
    /// Unique in the process: the owner of its workers' states (`trial::worker`).
    pub(super) id: u64,
    pub suite: Suite,
    pub(super) effects: HashMap<String, String>,
    pub(super) cases: HashSet<String>,
    /// The plan items are re-executed on (SPEC §14), when any may be.
    pub(super) reexec: Option<Arc<Plan>>,
    /// Re-execute every item (`--reexecute`, `grade = { reexecute = true }`);
    /// else only the formats that ask for it (τ-bench's results).
    pub(super) reexecute_all: bool,
}

impl Context {
    pub fn new(suite: Suite) -> Context {
        Context {
            id: crate::trial::worker::new_owner(),
            effects: suite.tools.iter().map(|t| (t.name.clone(), t.effect.clone())).collect(),
            cases: suite.cases.iter().map(|c| c.id.clone()).collect(),
            suite,
            reexec: None,
            reexecute_all: false,
        }
    }

    /// Items are re-executed on `plan` (a plan of every case of the suite):
    /// all of them when `all`, else those whose format asks for it.
    pub fn reexecuting(mut self, plan: Plan, all: bool) -> Context {
        self.reexec = Some(Arc::new(plan));
        self.reexecute_all = all;
        self
    }
}

/// A graded item, before the run gives it its trial number.
pub struct Graded {
    /// The item's trace, its record within.
    pub trace: Trace,
    /// Whether the item belongs to one of the suite's cases (else its case is the item's own key).
    pub matched: bool,
    pub warnings: Vec<String>,
    /// The trial number the item says it is (τ-bench's `trial + 1`).
    pub trial: Option<u32>,
}

/// What became of an item.
pub enum Done {
    Graded(Box<Graded>),
    /// Not graded, and why (a warning naming the file and trace).
    Skipped(String),
}
