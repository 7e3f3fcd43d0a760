//! Cold start (SPEC §23): cases drafted by a model from requirements
//! (`evalua synth`), validated by replaying their reference path, written
//! to a module, and counted only once a person approves them (`evalua
//! review`, `evalua view --review synthetic`).

pub mod checked;
pub mod draft;
pub mod inputs;
pub mod module;
pub mod prompt;
pub mod replay;
pub mod review;
pub mod validate;
