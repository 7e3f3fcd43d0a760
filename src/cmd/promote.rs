//! `evalua promote GRADED_RUN --into FILE.lua [--mode NAME]`: turn flagged
//! items (records with failure modes) into golden cases (SPEC §9).
//!
//! Items are clustered by (their sorted failure modes, their tool-name
//! sequence with repeats collapsed). A cluster keeps up to `--per-cluster`
//! (default 3) golden cases, one per distinct input (an item's first user
//! message): the other wordings of the same failure are run again too. Each
//! case's `source_traces` lists the traces of its input; traces of inputs past
//! the cluster's N go to its first case. A case the file already has only gets
//! the trace ids it does not list yet. FILE is a Lua module returning
//! `{ version = N, cases = { … } }`; `version` goes up when a case is added,
//! not when only trace ids are; a promote that changes nothing leaves the
//! file byte for byte.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value as Json, json};

use crate::error::{Error, Result};
use crate::record::manifest::RunKind;
use crate::record::{RunDir, TrialRecord};
use crate::util::digest::sha256_hex;
use crate::util::lua_literal;
use crate::util::paths::display_path;

/// A cluster's identity.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    modes: Vec<String>,
    tools: Vec<String>,
}

struct Cluster {
    key: Key,
    /// Its distinct inputs in the order first seen, each with its traces.
    inputs: Vec<(String, Vec<String>)>,
}

fn add_traces(to: &mut Vec<String>, ids: impl IntoIterator<Item = String>) {
    for t in ids {
        if !to.contains(&t) {
            to.push(t);
        }
    }
}

fn collapsed(r: &TrialRecord) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in &r.tool_spans {
        if out.last() != Some(&s.tool) {
            out.push(s.tool.clone());
        }
    }
    out
}

/// The trace ids of a record: a graded item's traces (or its conversation), a run trial's conversation id.
fn trace_ids(r: &TrialRecord, run_id: &str) -> Vec<String> {
    match &r.source {
        Some(s) if !s.trace_ids.is_empty() => s.trace_ids.clone(),
        Some(s) => s.trace_id.clone().or(s.conversation_id.clone()).into_iter().collect(),
        None => vec![format!("{run_id}/{}/{}", r.case, r.trial)],
    }
}

/// A stable case id for a cluster: its modes and a short hash of its key.
fn case_id(k: &Key) -> String {
    let h = sha256_hex(format!("{:?}\n{:?}", k.modes, k.tools).as_bytes());
    let mut slug: String =
        k.modes.join("+").chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    slug.truncate(60);
    format!("golden_{slug}_{}", &h[..8])
}

/// Read an existing goldens module (a Lua file returning a table) as JSON.
fn read_goldens(path: &Path) -> Result<Json> {
    let display = display_path(path);
    let j = crate::lua::data::module_json(path, "a goldens module")?;
    let ok = j.get("cases").is_some_and(|c| c.is_array() || c.as_object().is_some_and(|o| o.is_empty()));
    if !ok || !j.get("version").is_some_and(|v| v.is_u64()) {
        return Err(Error::Input(format!(
            "{display}: not a goldens module: it must return {{ version = N, cases = {{ ... }} }}"
        )));
    }
    Ok(j)
}

fn strings(v: Option<&Json>) -> Vec<String> {
    v.and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

pub fn promote(run_dir: &Path, into: &Path, mode: Option<&str>, per_cluster: usize) -> Result<u8> {
    // A module in a folder that does not exist is a typo more often than a wish: say so.
    if let Some(parent) = into.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.is_dir()
    {
        return Err(Error::Input(format!(
            "--into {}: the folder {} does not exist (create it first: promote writes the module, not folders)",
            display_path(into),
            display_path(parent)
        )));
    }
    let run = RunDir::open(run_dir)?;
    let manifest = run.read_manifest()?;
    if manifest.kind != RunKind::Graded && manifest.monitors.is_empty() {
        return Err(Error::Input(format!(
            "{}: the run's suite has no monitors, so no trial is flagged with a failure mode",
            display_path(run_dir)
        )));
    }
    if let Some(m) = mode
        && !manifest.monitors.iter().any(|n| n == m)
    {
        return Err(Error::Input(format!(
            "--mode {m}: not a monitor of this run (its monitors: {})",
            manifest.monitors.join(", ")
        )));
    }

    // Cluster the flagged items, in the order they were graded.
    let mut clusters: Vec<Cluster> = Vec::new();
    let mut index: BTreeMap<Key, usize> = BTreeMap::new();
    let mut flagged = 0usize;
    for rec in run.records()? {
        let (_, _, r) = rec?;
        let Some(modes) = r.failure_modes.clone().filter(|m| !m.is_empty()) else { continue };
        if mode.is_some_and(|m| !modes.iter().any(|x| x == m)) {
            continue;
        }
        flagged += 1;
        let mut modes = modes;
        modes.sort();
        modes.dedup();
        let key = Key { modes, tools: collapsed(&r) };
        let ids = trace_ids(&r, &manifest.run_id);
        let input = run.read_trace(&r).map(|t| t.input).filter(|s| !s.is_empty());
        let Some(input) = input else {
            eprintln!("warning: {}#{}: no input recorded (no first user message): not promoted", r.case, r.trial);
            continue;
        };
        let i = *index.entry(key.clone()).or_insert_with(|| {
            clusters.push(Cluster { key, inputs: Vec::new() });
            clusters.len() - 1
        });
        let inputs = &mut clusters[i].inputs;
        match inputs.iter_mut().find(|(text, _)| *text == input) {
            Some((_, traces)) => add_traces(traces, ids),
            None => inputs.push((input, ids)),
        }
    }

    let display = display_path(into);
    let (mut version, mut cases) = if into.exists() {
        let j = read_goldens(into)?;
        (j["version"].as_u64().unwrap_or(0), j["cases"].as_array().cloned().unwrap_or_default())
    } else {
        (0, Vec::new())
    };
    let (mut added, mut new_traces) = (0usize, 0usize);
    // Existing cases given new trace ids (not the ones this promote adds).
    let mut touched = std::collections::BTreeSet::new();
    let existing = cases.len();
    for c in &clusters {
        let of_cluster = |e: &Json| {
            let mut modes = strings(e.get("failure_modes"));
            modes.sort();
            modes == c.key.modes && strings(e.get("tool_sequence")) == c.key.tools
        };
        for (input, traces) in &c.inputs {
            let mine: Vec<usize> = (0..cases.len()).filter(|&j| of_cluster(&cases[j])).collect();
            let same_input = mine.iter().copied().find(|&j| cases[j]["input"].as_str() == Some(input.as_str()));
            // Its own case; a new one while the cluster has room; else the cluster's first.
            let target = match (same_input, mine.first()) {
                (Some(j), _) => Some(j),
                (None, first) if mine.len() >= per_cluster => first.copied(),
                (None, _) => None,
            };
            match target {
                Some(j) => {
                    let mut have = strings(cases[j].get("source_traces"));
                    let before = have.len();
                    add_traces(&mut have, traces.iter().cloned());
                    if have.len() > before {
                        if j < existing {
                            touched.insert(j);
                        }
                        new_traces += have.len() - before;
                        cases[j]["source_traces"] = json!(have);
                    }
                }
                None => {
                    added += 1;
                    new_traces += traces.len();
                    // The cluster's first case keeps the id it always had; the others are numbered.
                    let base = case_id(&c.key);
                    let id = (1..)
                        .map(|n| if n == 1 { base.clone() } else { format!("{base}_{n}") })
                        .find(|id| !cases.iter().any(|e| e["id"].as_str() == Some(id.as_str())))
                        .unwrap_or(base);
                    cases.push(json!({
                        "id": id,
                        "input": input,
                        "failure_modes": c.key.modes,
                        "tool_sequence": c.key.tools,
                        "source_traces": traces,
                        "source_run": manifest.run_id,
                    }));
                }
            }
        }
    }
    let extended = touched.len();
    let changed = added + extended > 0;
    if changed || !into.exists() {
        // The version counts the cases: trace ids added to them leave it.
        if added > 0 {
            version += 1;
        }
        let text = render(version, &cases);
        let tmp = into.with_extension("lua.tmp");
        std::fs::write(&tmp, text)
            .and_then(|_| std::fs::rename(&tmp, into))
            .map_err(|e| Error::Environment(format!("{display}: cannot write: {e}")))?;
    }
    println!(
        "{flagged} flagged item(s) in {} cluster(s): {added} new golden case(s), {extended} case(s) with new traces ({new_traces} trace id(s) added)",
        clusters.len()
    );
    if added > 0 {
        println!("{display}: version {version}, {} case(s)", cases.len());
    } else if changed {
        println!("{display}: version {version} (unchanged: only trace ids added), {} case(s)", cases.len());
    } else {
        println!("{display}: unchanged (version {version}, {} case(s))", cases.len());
    }
    Ok(0)
}

const ORDER: [&str; 6] = ["id", "input", "failure_modes", "tool_sequence", "source_traces", "source_run"];
fn lua_value(v: &Json, indent: usize, out: &mut String) {
    lua_literal::value(v, indent, &ORDER, out)
}

fn render(version: u64, cases: &[Json]) -> String {
    let mut o = String::new();
    o.push_str("-- Golden cases promoted from flagged traces by `evalua promote` (SPEC §9).\n");
    o.push_str("-- Up to N cases per cluster of (failure modes, tool sequence), one per distinct input\n");
    o.push_str("-- (`evalua promote --per-cluster N`, default 3); `source_traces` lists the traces of\n");
    o.push_str("-- each. A promote that adds a case bumps `version`; new trace ids alone do not.\n");
    o.push_str("-- suite:goldens runs each with the monitors its failure modes name as its checks.\n");
    o.push_str("-- Declare them in a suite with suite:goldens(require(\"...\"), { fixture = ..., expect = ... }).\n");
    let _ = writeln!(o, "return {{\n  version = {version},\n  cases = {{");
    for c in cases {
        o.push_str("    ");
        lua_value(c, 2, &mut o);
        o.push_str(",\n");
    }
    o.push_str("  },\n}\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lua_text_escapes_and_orders_keys() {
        let c = json!({ "source_traces": ["a"], "id": "g1", "input": "dice \"hola\"\n", "end": 1 });
        let text = render(2, &[c]);
        assert!(text.contains("version = 2"), "{text}");
        assert!(text.contains(r#"input = "dice \"hola\"\n""#), "{text}");
        assert!(text.contains(r#"["end"] = 1"#), "{text}");
        assert!(text.find("id =").unwrap() < text.find("input =").unwrap());
    }

    /// Property: for arbitrary bytes (random lengths and values, biased to
    /// the troublesome ones: controls followed by digits, quotes, backslashes,
    /// invalid UTF-8, bidi controls), the literal loads in Lua as those bytes.
    #[test]
    fn lua_literals_round_trip_every_byte() {
        let lua = mlua::Lua::new();
        let tricky: &[&[u8]] = &[
            b"\x01" as &[u8],
            b"2",
            b"\"",
            b"\\",
            b"\n",
            b"\r",
            b"]]",
            b"\0",
            b"\xff",
            b"\xe2\x80\xae",
            b"\xc2\x9b",
            b"9",
        ];
        let mut rng = fastrand::Rng::with_seed(45);
        for i in 0..5000 {
            let mut bytes = Vec::new();
            for _ in 0..rng.usize(0..40) {
                if rng.bool() {
                    bytes.extend_from_slice(tricky[rng.usize(..tricky.len())]);
                } else {
                    bytes.push(rng.u8(..));
                }
            }
            if i < 256 {
                bytes = vec![i as u8, b'7'];
            }
            let lit = lua_literal::bytes(&bytes);
            assert!(!lit.contains('\n') && !lit.contains('\r'), "{lit:?}");
            let back: mlua::LuaString =
                lua.load(format!("return {lit}")).eval().unwrap_or_else(|e| panic!("{lit}: {e}"));
            assert_eq!(back.as_bytes().to_vec(), bytes, "{lit}");
        }
    }

    #[test]
    fn case_ids_are_stable_and_safe() {
        let k = Key { modes: vec!["tool_loop".into(), "x-y".into()], tools: vec!["a".into()] };
        assert_eq!(case_id(&k), case_id(&k.clone()));
        assert!(case_id(&k).starts_with("golden_tool_loop_x_y_"), "{}", case_id(&k));
    }
}
