//! The module `evalua synth --into FILE.lua` writes (SPEC §23): a Lua file
//! returning the list of drafted cases, declared in a suite with
//! `suite:cases(require("…"))`. evalua rewrites it whole (a later `synth
//! --into` the same file adds cases; a review changes one case's `review`),
//! keeping every case and review it holds. A draft's fixture rows live
//! beside it, in `FILE.synth/fixtures/<id>.sql`, and each drafting request
//! in `FILE.synth/prompts/<sha256>.md`.

use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};

use crate::error::{Error, Result};
use crate::util::lua_literal;
use crate::util::paths::display_path;

/// The order of a case's keys in the file.
const ORDER: [&str; 16] = [
    "id",
    "family",
    "input",
    "fixture",
    "expect_sql",
    "prohibited",
    "reference",
    "rationale",
    "source",
    "review",
    "query",
    "equals",
    "name",
    "args",
    "kind",
    "status",
];

/// Keys whose value is a list (a Lua `{}` reads back as an empty object).
const LISTS: [&str; 4] = ["expect_sql", "prohibited", "tags", "calls"];

/// The folder beside the module: `FILE.synth/`.
pub fn side_dir(module: &Path) -> PathBuf {
    let stem = module.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    module.with_file_name(format!("{stem}.synth"))
}

/// Where a drafted case's fixture rows go.
pub fn fixture_path(module: &Path, id: &str) -> PathBuf {
    side_dir(module).join("fixtures").join(format!("{id}.sql"))
}

/// The cases of the module (none when the file does not exist yet).
pub fn read(path: &Path) -> Result<Vec<Json>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let display = display_path(path);
    let j = crate::lua::data::module_json(path, "a cases module")?;
    let cases = match j {
        Json::Array(a) => a,
        Json::Object(o) if o.is_empty() => Vec::new(),
        _ => {
            return Err(Error::Input(format!(
                "{display}: not a cases module: it must return a list of cases {{ {{ id = …, … }}, … }}"
            )));
        }
    };
    if let Some(i) = cases.iter().position(|c| !c.get("id").is_some_and(|v| v.is_string())) {
        return Err(Error::Input(format!("{display}: case {} has no string 'id'", i + 1)));
    }
    Ok(cases.into_iter().map(lists).collect())
}

/// Empty objects where a list belongs read back as empty lists.
fn lists(mut v: Json) -> Json {
    if let Json::Object(o) = &mut v {
        for (k, x) in o.iter_mut() {
            if LISTS.contains(&k.as_str()) && x.as_object().is_some_and(|m| m.is_empty()) {
                *x = json!([]);
            } else {
                *x = lists(x.take());
            }
        }
    } else if let Json::Array(a) = &mut v {
        for x in a.iter_mut() {
            *x = lists(x.take());
        }
    }
    v
}

/// The module's text for these cases.
pub fn render(cases: &[Json]) -> String {
    let mut o = String::new();
    o.push_str("-- Synthetic cases drafted by `evalua synth` (SPEC §23), validated by replaying their\n");
    o.push_str("-- reference path. A case counts only once a person approves it:\n");
    o.push_str("--   evalua review SUITE CASE --approve|--reject --reviewer NAME [--note TEXT]\n");
    o.push_str("-- (or `evalua view --review synthetic`). Pending cases are played and reported apart;\n");
    o.push_str("-- rejected ones are kept here and skipped. evalua rewrites this file.\n");
    o.push_str("-- Declare them in a suite with suite:cases(require(\"...\")).\n");
    o.push_str("return {\n");
    for c in cases {
        o.push_str("  ");
        lua_literal::value(c, 1, &ORDER, &mut o);
        o.push_str(",\n");
    }
    o.push_str("}\n");
    o
}

/// Write the module (through a temporary file and a rename: a reader never sees half of it).
pub fn write(path: &Path, cases: &[Json]) -> Result<()> {
    write_file(path, render(cases).as_bytes())
}

/// Write a file whole, creating its folder.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let shown = display_path(path);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::Environment(format!("{}: {e}", display_path(dir))))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::Environment(format!("{shown}: {e}")))?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(|e| Error::Environment(format!("{shown}: {e}")))?;
    tmp.persist(path).map_err(|e| Error::Environment(format!("{shown}: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("drafts.lua");
        let cases = vec![json!({
            "id": "a_1", "family": "happy", "input": "dice \"hola\"\n\u{1}9 \u{202e}",
            "expect_sql": [{ "query": "SELECT 1", "equals": 1 }], "prohibited": [],
            "reference": { "calls": [{ "name": "t", "args": { "x": "y" } }] },
            "review": { "status": "pending" },
        })];
        write(&p, &cases).unwrap();
        assert_eq!(read(&p).unwrap(), cases);
        assert!(read(&dir.path().join("none.lua")).unwrap().is_empty());
    }
}
