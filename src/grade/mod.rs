//! Grading one recorded item (`evalua grade`): a production trace read by
//! [`crate::otel`], or a trial of an evalua run dir, graded with the same
//! checks that grade a run's trials.
//!
//! Each worker thread keeps a Lua state with the suite evaluated once (in
//! full: any case may match an item) and reuses it while the reachability
//! walk of `lua::engine::reuse` proves an item changed nothing in it. Per
//! item: the suite's `trace_adapter` reads each span (if it has one), the
//! conventions build the calls, messages, answer and usage, the item is
//! matched to a case (`evalua.case` on its agent span, else the suite's
//! `match`), and the monitors run, then the case's checks. A check that
//! reaches for `t.db`, `t.files`, `t.outbox` or the work dir is *not
//! applicable*: a trace has no final state.

pub mod adapter;
pub mod context;
pub mod item;
pub mod suite;

pub use adapter::span_table;
pub use context::{Context, Done, Graded};
pub use item::grade;
