//! The request `evalua synth` sends (SPEC §23): the requirement files, the
//! suite's tools (names, descriptions, parameter schemas, effects) and its
//! fixture's schema, the families to cover and how many drafts, and the JSON
//! shape to answer in. The prompt's sha256 goes on every case drafted from it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::spec::Suite;
use crate::util::paths::display_path;

/// The first line of every drafting request: how `evalua mock-judge` knows one.
pub const MARKER: &str = crate::judge::mock::SYNTH_MARKER;

/// The most of one requirement file or of the fixture's schema sent.
const MAX_FILE: usize = 200_000;

pub const SYSTEM: &str = "You write evaluation cases for an AI agent that acts through tools on a SQL database. \
Each case is a task for the agent, the database rows it starts from, the SQL queries whose answers prove the task \
was done right, the SQL queries that must return nothing (a state the agent must never reach), and the reference \
path: the exact tool calls a careful agent makes. Use only the tools listed, with arguments that satisfy their schemas. \
Cover the families asked for: happy paths and the failures that matter. Answer with JSON only.";

/// A drafting request: its text and where its parts came from.
pub struct Prompt {
    pub system: String,
    pub user: String,
}

impl Prompt {
    /// sha256 of exactly what was sent (system, a blank line, user).
    pub fn sha256(&self) -> String {
        crate::util::digest::sha256_hex(self.text().as_bytes())
    }
    pub fn text(&self) -> String {
        format!("{}\n\n{}", self.system, self.user)
    }
}

fn read_capped(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::Input(format!("{}: {e}", display_path(path))))?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if text.len() > MAX_FILE {
        let mut end = MAX_FILE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("\n[… cut]");
    }
    Ok(text)
}

/// Build the request for `n` drafts of `families` from the requirement files.
pub fn build(suite: &Suite, from: &[PathBuf], families: &[String], n: u32) -> Result<Prompt> {
    let mut u = String::new();
    let _ = writeln!(u, "{MARKER}\n");
    let _ = writeln!(u, "Suite: {}\n\n## Requirements", suite.name);
    for f in from {
        let _ = writeln!(u, "\n### {}\n\n{}", display_path(f), read_capped(f)?.trim_end());
    }
    let _ = writeln!(u, "\n## Tools");
    for t in &suite.tools {
        let _ = writeln!(u, "\n- {} (effect: {}): {}", t.name, t.effect, t.description);
        if !t.requires.is_empty() {
            let _ = writeln!(u, "  requires a successful call to {} first", t.requires.join(", "));
        }
        let _ = writeln!(u, "  parameters: {}", t.params);
    }
    match &suite.schema {
        Some(schema) => {
            let _ = writeln!(u, "\n## The database before any case's rows ({})\n", display_path(schema));
            let _ = writeln!(u, "```sql\n{}\n```", read_capped(schema)?.trim_end());
        }
        None => {
            let _ = writeln!(u, "\n## The database\n\nEmpty: a case's fixture_sql creates what it needs.");
        }
    }
    let _ = writeln!(
        u,
        "\n## What to write\n\nWrite {n} cases, covering these families: {}.\n\
         Answer {{\"cases\": [...]}}, each case {{\"id\", \"family\", \"input\", \"fixture_sql\" (SQL run after the \
         database above, or null), \"expect_sql\": [{{\"query\", \"equals\"}}] (each query's first value must equal \
         `equals` once the task is done right), \"prohibited\": [query, …] (each must return no row, 0 or NULL), \
         \"reference_calls\": [{{\"name\", \"arguments\"}}] (the calls a careful agent makes, in order), \"rationale\"}}. \
         Ids: letters, digits, '_', '-', '.'.",
        families.join(", ")
    );
    Ok(Prompt { system: SYSTEM.to_string(), user: u })
}
