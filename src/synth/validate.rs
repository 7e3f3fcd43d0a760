//! Every draft is validated before it is written (SPEC §23), each step on
//! the drafts the ones before kept:
//!
//! 1. its id is usable (letters, digits, `_`, `-`, `.`); one the suite or the
//!    module already has gets a suffix (`_2`, …);
//! 2. it duplicates no case the suite, the module or an earlier draft holds:
//!    the same input (case and spacing aside), or the same fixture rows and
//!    expected state (`duplicate`);
//! 3. its `fixture_sql` applies cleanly after the suite's schema, and its
//!    `expect_sql` and `prohibited` queries prepare on the result;
//! 4. it loads as a case (`suite:cases`, as the suite will declare it);
//! 5. its `reference_calls`, replayed through the executor on its fixture by
//!    a one-trial run, satisfy its `expect_sql` and reach no `prohibited`
//!    state (`replay.rs`).
//!
//! A draft failing 1 or 3–5 is `invalid`, with the reason.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};

use super::checked::{Checked, Context, Fate};
use super::draft::Draft;
use super::module;
use crate::error::{Error, Result};
use crate::sandbox::db::{Backend, OpenOptions};

/// Validate the drafts; each comes back with its fate.
pub fn validate(ctx: &Context, drafts: &[Draft]) -> Result<Vec<Checked>> {
    let mut taken: Vec<String> = ctx.suite.cases.iter().map(|c| c.id.clone()).collect();
    taken.extend(ctx.existing.iter().filter_map(|c| c["id"].as_str().map(String::from)));
    let mut all: Vec<Checked> = drafts.iter().map(|d| candidate(ctx, d, &mut taken)).collect();
    duplicates(ctx, &mut all)?;
    fixtures(ctx, &mut all)?;
    super::replay::loads(ctx, &mut all)?;
    super::replay::replay(ctx, &mut all)?;
    Ok(all)
}

fn usable_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 200 && id.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

/// The case a draft becomes, under an id no other case has.
fn candidate(ctx: &Context, d: &Draft, taken: &mut Vec<String>) -> Checked {
    let raw = d.raw.as_object().cloned().unwrap_or_default();
    let given = d.id();
    let mut fate = Fate::Valid;
    let mut id = given.clone();
    if d.str("id").is_none_or(|i| !usable_id(i)) {
        fate = Fate::Invalid(format!("its id {given:?} is not letters, digits, '_', '-', '.'"));
    } else {
        let mut n = 1;
        while taken.contains(&id) {
            n += 1;
            id = format!("{given}_{n}");
        }
        taken.push(id.clone());
    }
    let fixture_sql = raw.get("fixture_sql").and_then(|v| v.as_str()).filter(|s| !s.trim().is_empty());
    let mut case = json!({ "id": id });
    for key in ["family", "input", "expect_sql", "prohibited", "rationale"] {
        if let Some(v) = raw.get(key).filter(|v| !v.is_null()) {
            case[key] = v.clone();
        }
    }
    if fixture_sql.is_some() {
        let rel = pathdiff(&module::fixture_path(ctx.module, &id), &ctx.suite.dir);
        case["fixture"] = json!(rel);
    }
    if let Some(calls) = raw.get("reference_calls").and_then(|c| c.as_array()).filter(|c| !c.is_empty()) {
        let calls: Vec<Json> = calls
            .iter()
            .map(|c| match c.as_object() {
                Some(o) => json!({ "name": o.get("name"), "args": o.get("arguments").cloned().unwrap_or(json!({})) }),
                None => c.clone(),
            })
            .collect();
        case["reference"] = json!({ "calls": calls });
    } else if let Some(other) = raw.get("reference_calls").filter(|c| !c.is_array() && !c.is_null()) {
        case["reference"] = json!({ "calls": other });
    }
    case["source"] = ctx.source.clone();
    case["review"] = json!({ "status": "pending" });
    Checked { index: d.index, id, case, fixture_sql: fixture_sql.map(String::from), fate }
}

/// `path` relative to `base` when it lies beneath it, else absolute.
fn pathdiff(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => {
            // Up from the suite's folder to the common ancestor.
            let (p, b): (Vec<_>, Vec<_>) = (path.components().collect(), base.components().collect());
            let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
            if common == 0 {
                return path.display().to_string();
            }
            let mut rel = PathBuf::new();
            for _ in common..b.len() {
                rel.push("..");
            }
            for c in &p[common..] {
                rel.push(c);
            }
            rel.display().to_string()
        }
    }
}

/// An input as compared: case and spacing aside.
fn input_key(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Fixture rows and expected state as compared: spacing aside, queries in any order.
fn state_key(fixture: Option<&str>, expect: &Json) -> String {
    let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    let mut queries: Vec<String> = expect
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| format!("{} = {}", norm(e["query"].as_str().unwrap_or("")), e["equals"]))
        .collect();
    queries.sort();
    format!("{}\n{}", fixture.map(norm).unwrap_or_default(), queries.join("\n"))
}

/// Step 2: the same input as any case, or the same fixture and expected state as a drafted one.
fn duplicates(ctx: &Context, all: &mut [Checked]) -> Result<()> {
    let mut inputs: HashMap<String, String> =
        ctx.suite_inputs.iter().map(|(id, input)| (input_key(input), id.clone())).collect();
    let mut states: HashMap<String, String> = HashMap::new();
    for c in ctx.existing {
        let id = c["id"].as_str().unwrap_or("").to_string();
        if let Some(i) = c["input"].as_str() {
            inputs.insert(input_key(i), id.clone());
        }
        let fixture = std::fs::read_to_string(module::fixture_path(ctx.module, &id)).ok();
        states.insert(state_key(fixture.as_deref(), &c["expect_sql"]), id);
    }
    for c in all.iter_mut().filter(|c| c.valid()) {
        let input = c.case["input"].as_str().map(input_key);
        let state = state_key(c.fixture_sql.as_deref(), &c.case["expect_sql"]);
        if let Some(other) = input.as_ref().and_then(|i| inputs.get(i)) {
            c.reject(Fate::Duplicate(format!("the same input as case '{other}'")));
        } else if let Some(other) =
            states.get(&state).filter(|_| c.case["expect_sql"].as_array().is_some_and(|a| !a.is_empty()))
        {
            c.reject(Fate::Duplicate(format!("the same fixture rows and expected state as case '{other}'")));
        } else {
            if let Some(i) = input {
                inputs.insert(i, c.id.clone());
            }
            states.insert(state, c.id.clone());
        }
    }
    Ok(())
}

/// Step 3: the fixture rows apply after the suite's schema, and the queries prepare.
fn fixtures(ctx: &Context, all: &mut [Checked]) -> Result<()> {
    let backend = Backend::connect(&ctx.suite.db)?;
    let tmp = tempfile::tempdir().map_err(|e| Error::Environment(format!("cannot create a temporary folder: {e}")))?;
    for c in all.iter_mut().filter(|c| c.valid()) {
        let mut files: Vec<PathBuf> = ctx.suite.schema.iter().cloned().collect();
        if let Some(sql) = &c.fixture_sql {
            let f = tmp.path().join(format!("{}.sql", c.index));
            std::fs::write(&f, sql).map_err(|e| Error::Environment(format!("{}: {e}", f.display())))?;
            files.push(f);
        }
        let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        let template = match backend.template(&refs, ctx.suite.max_fixture_bytes) {
            Ok(t) => t,
            Err(Error::Input(m)) => {
                let m = m.replace(&tmp.path().join(format!("{}.sql", c.index)).display().to_string(), "fixture_sql");
                c.reject(Fate::Invalid(format!("its fixture_sql does not apply after the suite's schema: {m}")));
                continue;
            }
            Err(e) => return Err(e),
        };
        if let Some(why) = queries_fail(template.as_ref(), &c.case) {
            c.reject(Fate::Invalid(why));
        }
    }
    Ok(())
}

/// The first of the case's queries that does not prepare on its fixture, said.
fn queries_fail(template: Option<&crate::sandbox::db::DbTemplate>, case: &Json) -> Option<String> {
    let db = match template {
        Some(t) => t.open_trial(OpenOptions { statement_timeout: std::time::Duration::from_secs(10) }),
        None => crate::sandbox::db::empty(true),
    };
    let db = match db {
        Ok(db) => db,
        Err(e) => return Some(format!("its fixture cannot be opened: {e}")),
    };
    let expect = case["expect_sql"].as_array().cloned().unwrap_or_default();
    let prohibited = case["prohibited"].as_array().cloned().unwrap_or_default();
    let named = expect
        .iter()
        .enumerate()
        .map(|(i, e)| (format!("expect_sql[{}]", i + 1), e["query"].clone()))
        .chain(prohibited.iter().enumerate().map(|(i, q)| (format!("prohibited[{}]", i + 1), q.clone())));
    let mut why = None;
    for (name, q) in named {
        if let Some(q) = q.as_str()
            && let Err(e) = db.prepare(q)
        {
            why = Some(format!("its {name} does not run on its fixture: {e}"));
            break;
        }
    }
    db.close();
    why
}
