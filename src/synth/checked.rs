//! A draft as validation carries it (see `validate.rs`): the case it would
//! be written as, and its fate so far.

use std::path::Path;

use serde::Serialize;
use serde_json::Value as Json;

use crate::spec::Suite;

/// What became of a draft.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "fate", content = "reason", rename_all = "lowercase")]
pub enum Fate {
    Valid,
    Invalid(String),
    Duplicate(String),
}

/// A draft and what validation made of it.
#[derive(Debug, Clone)]
pub struct Checked {
    pub index: usize,
    /// The id it is written under (the model's, with a suffix when taken).
    pub id: String,
    /// The case as it is written to the module.
    pub case: Json,
    pub fixture_sql: Option<String>,
    pub fate: Fate,
}

impl Checked {
    pub fn valid(&self) -> bool {
        self.fate == Fate::Valid
    }
    pub fn reject(&mut self, fate: Fate) {
        if self.valid() {
            self.fate = fate;
        }
    }
}

/// What a draft is checked against.
pub struct Context<'a> {
    pub suite: &'a Suite,
    /// The suite file (absolute).
    pub suite_path: &'a Path,
    /// The module written (absolute).
    pub module: &'a Path,
    /// The cases the module already holds.
    pub existing: &'a [Json],
    /// The inputs of the suite's own cases, by id.
    pub suite_inputs: &'a [(String, String)],
    /// `source` of every case drafted now.
    pub source: Json,
}
