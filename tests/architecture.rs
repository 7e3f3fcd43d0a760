//! The layers of ARCHITECTURE.md hold: no module of src/ names a module of a
//! layer above its own (through `crate::…`, whether in a `use` or inline).
//! A module may use its own submodules and any lower layer.

use std::path::Path;

use regex::Regex;

/// Bottom to top. A path's layer is that of its longest listed prefix.
const LAYERS: &[&[&str]] = &[
    &["util", "error"],
    &["process", "spec"],
    &["record"],
    &["stats", "sandbox", "model", "otel"],
    &["judge"],
    &["lua::engine"],
    &["lua::api"],
    &["lua::load", "lua"],
    &["executor"],
    &["trial"],
    &["agent", "grade"],
    &["run", "synth"],
    &["harden"],
    &["report"],
    &["view"],
    &["cmd"],
];

/// (layer, the top-level module) of a module path like `lua::api::ctx`.
fn layer_of(path: &[&str]) -> Option<(usize, String)> {
    let mut best: Option<(usize, usize, String)> = None;
    for (i, names) in LAYERS.iter().enumerate() {
        for name in *names {
            let parts: Vec<&str> = name.split("::").collect();
            if path.len() >= parts.len() && path[..parts.len()] == parts[..] {
                let key = name.to_string();
                if best.as_ref().is_none_or(|b| parts.len() > b.1) {
                    best = Some((i, parts.len(), key));
                }
            }
        }
    }
    best.map(|(i, _, k)| (i, k))
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_module_imports_a_module_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let comment = Regex::new(r"//[^\n]*").unwrap();
    let path = Regex::new(r"crate::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)").unwrap();
    let group = Regex::new(r"crate::\{([^;]*?)\}\s*;").unwrap();
    let mut upward = Vec::new();
    let mut checked = 0;
    for f in &all {
        let rel = f.strip_prefix(&src).unwrap().with_extension("");
        let mut module: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
        if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
            module.pop();
        }
        let me: Vec<&str> = module.iter().map(String::as_str).collect();
        let Some((mine, my_top)) = layer_of(&me) else { continue };
        let text = std::fs::read_to_string(f).unwrap();
        let text = comment.replace_all(&text, "");
        let mut targets: Vec<String> = path.captures_iter(&text).map(|c| c[1].to_string()).collect();
        for g in group.captures_iter(&text) {
            targets.extend(g[1].split(',').map(|s| s.trim().split("::").next().unwrap_or("").to_string()));
        }
        for t in targets {
            let parts: Vec<&str> = t.split("::").collect();
            let Some((theirs, their_top)) = layer_of(&parts) else { continue };
            checked += 1;
            if their_top != my_top && theirs >= mine {
                upward.push(format!("src/{}.rs uses crate::{t} ({their_top} is not below {my_top})", rel.display()));
            }
        }
    }
    assert!(checked > 200, "the scan found only {checked} crate paths: is it still reading src/?");
    upward.sort();
    upward.dedup();
    assert!(upward.is_empty(), "imports that point up or sideways:\n{}", upward.join("\n"));
}

/// The files of src/ each module path names (`lua/api/mod.rs` is `lua::api`).
fn modules(src: &Path) -> std::collections::BTreeMap<Vec<String>, String> {
    let mut all = Vec::new();
    files(src, &mut all);
    all.iter()
        .map(|f| {
            let rel = f.strip_prefix(src).unwrap().to_string_lossy().into_owned();
            let mut parts: Vec<String> = rel.trim_end_matches(".rs").split('/').map(String::from).collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                parts.pop();
            }
            (parts, rel)
        })
        .collect()
}

/// Expand one `use` tree (`a::{b, c::{d as e}}`) under `prefix` into paths.
fn expand(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if let Some(inner) = tree.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        let (mut depth, mut start) = (0, 0);
        for (i, ch) in inner.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(prefix, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(prefix, &inner[start..], out);
    } else if let Some((head, rest)) = tree.split_once("::") {
        let mut p = prefix.to_vec();
        p.push(head.trim().to_string());
        expand(&p, rest, out);
    } else {
        let name = tree.split(" as ").next().unwrap_or("").trim();
        if name.is_empty() {
            return;
        }
        let mut p = prefix.to_vec();
        if name != "self" && name != "*" {
            p.push(name.to_string());
        }
        out.push(p);
    }
}

/// Which files each file of src/ imports (through `use` or an inline
/// `crate::` / `super::` path), by relative path. A file's own unit tests are
/// left out.
fn import_edges(
    src: &Path,
    mods: &std::collections::BTreeMap<Vec<String>, String>,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    // The file a path names: the longest prefix that is a module.
    let resolve = |path: &[String]| (1..=path.len()).rev().find_map(|i| mods.get(&path[..i]).cloned());
    let comment = Regex::new(r"//[^\n]*").unwrap();
    let uses = Regex::new(r"use\s+(crate|super)::([^;]+);").unwrap();
    let inline = Regex::new(r"(crate|super)::((?:[a-z_0-9]+::)*[A-Za-z_0-9]+)").unwrap();
    let mut edges: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
    for (module, rel) in mods {
        let text = std::fs::read_to_string(src.join(rel)).unwrap();
        let mut text = comment.replace_all(&text, "").into_owned();
        if let Some(i) = text.find("#[cfg(test)]\nmod tests") {
            text.truncate(i);
        }
        let parent: Vec<String> = module[..module.len().saturating_sub(1)].to_vec();
        let base = |root: &str| if root == "crate" { Vec::new() } else { parent.clone() };
        let mut paths = Vec::new();
        for c in uses.captures_iter(&text) {
            expand(&base(&c[1]), &c[2], &mut paths);
        }
        for c in inline.captures_iter(&text) {
            if text[..c.get(0).unwrap().start()].ends_with("use ") {
                continue;
            }
            let mut p = base(&c[1]);
            p.extend(c[2].split("::").map(String::from));
            paths.push(p);
        }
        let out = edges.entry(rel.clone()).or_default();
        for p in paths {
            if let Some(t) = resolve(&p).filter(|t| t != rel) {
                out.insert(t);
            }
        }
    }
    edges
}

#[test]
fn no_two_files_import_each_other_even_through_others() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&src);
    let edges = import_edges(&src, &mods);
    assert!(edges.values().map(|e| e.len()).sum::<usize>() > 300, "the scan found too few imports: {edges:?}");
    // Depth-first search; a grey node met again closes a cycle.
    fn visit<'a>(
        v: &'a str,
        edges: &'a std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        colour: &mut std::collections::HashMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        colour.insert(v, 1);
        stack.push(v);
        for w in edges.get(v).into_iter().flatten() {
            match colour.get(w.as_str()) {
                Some(1) => {
                    let from = stack.iter().position(|s| *s == w).unwrap();
                    let mut cycle: Vec<String> = stack[from..].iter().map(|s| s.to_string()).collect();
                    cycle.push(w.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(w, edges, colour, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        colour.insert(v, 2);
        None
    }
    let mut colour = std::collections::HashMap::new();
    for v in edges.keys() {
        if !colour.contains_key(v.as_str())
            && let Some(cycle) = visit(v, &edges, &mut colour, &mut Vec::new())
        {
            panic!("an import cycle between files of src/: {}", cycle.join(" → "));
        }
    }
}

/// A module never imports the module that declares it (its `mod.rs`, or the
/// `foo.rs` beside its folder): with the `mod` declaration that would be a
/// cycle. A child reaches a sibling by the sibling's own path
/// (`super::sibling::Item`), never through the parent's re-export.
#[test]
fn no_module_imports_the_parent_that_declares_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&src);
    let edges = import_edges(&src, &mods);
    let mut bad = Vec::new();
    for (module, rel) in &mods {
        if module.len() < 2 {
            continue;
        }
        let Some(parent) = mods.get(&module[..module.len() - 1]) else { continue };
        if edges.get(rel).is_some_and(|e| e.contains(parent)) {
            bad.push(format!("src/{rel} imports src/{parent}, which declares it"));
        }
    }
    assert!(bad.is_empty(), "children that import their parent:\n{}", bad.join("\n"));
}

/// The `mod.rs` files that still hold logic, each with why. Every other
/// `mod.rs` only declares modules and re-exports.
const MOD_RS_WITH_LOGIC: &[(&str, &str)] = &[
    ("agent/mod.rs", "drive: which agent kind runs a trial (to move to agent/drive.rs)"),
    ("lua/api/mod.rs", "new_state: the API installed into a state (to move to lua/api/state.rs)"),
    ("report/mod.rs", "write_all and the console entry points (to move to report/write.rs)"),
    ("sandbox/mod.rs", "trial seeds and the trial RNG (to move to sandbox/seed.rs)"),
];

/// What is left of a `mod.rs` once its comments, attributes, `mod` and
/// `use` declarations and unit tests are taken out: its logic.
fn logic_of(text: &str) -> String {
    let mut text = Regex::new(r"//[^\n]*").unwrap().replace_all(text, "").into_owned();
    if let Some(i) = text.find("#[cfg(test)]\nmod tests") {
        text.truncate(i);
    }
    let decl = Regex::new(r"(?s)#!?\[[^\]]*\]|(pub(\([a-z]+\))?\s+)?(use|mod)\s[^;{]*(\{[^;]*\})?[^;{]*;").unwrap();
    decl.replace_all(&text, "").trim().to_string()
}

#[test]
fn every_mod_rs_only_declares_and_reexports() {
    // The check itself, on a planted violation and on a clean file.
    assert!(!logic_of("//! doc\npub fn planted() {}\n").is_empty());
    assert_eq!(logic_of("//! doc\n#[cfg(unix)]\npub mod a;\nmod b;\npub use a::{X, y::{Z as W}};\nuse b::*;\n"), "");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut bad = Vec::new();
    for f in all.iter().filter(|f| f.file_name().is_some_and(|n| n == "mod.rs")) {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        let excepted = MOD_RS_WITH_LOGIC.iter().any(|(e, _)| *e == rel);
        let logic = logic_of(&std::fs::read_to_string(f).unwrap());
        match (logic.is_empty(), excepted) {
            (false, false) => bad.push(format!("src/{rel} holds logic: {}", logic.lines().next().unwrap_or(""))),
            (true, true) => bad.push(format!("src/{rel} is on MOD_RS_WITH_LOGIC but holds none: take it off")),
            _ => {}
        }
    }
    assert!(bad.is_empty(), "mod.rs files beyond declarations and re-exports:\n{}", bad.join("\n"));
}

/// What only one file may spell: (what, the file, why).
const ONE_PLACE: &[(&str, &str, &str)] = &[
    ("tokio::runtime::Builder", "model/net.rs", "the process has one tokio runtime (`model::runtime`)"),
    ("static UNCONFINED", "", "the isolation is the run's (`trial::Switches`, `process::View::isolation`)"),
    ("static DISABLED", "", "the judge cache is the run's (`judge::cache::Cache`)"),
];

#[test]
fn one_tokio_runtime_and_no_process_wide_run_switch() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut bad = Vec::new();
    for f in &all {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(f).unwrap();
        for (what, only, why) in ONE_PLACE {
            if text.contains(what) && rel != *only {
                bad.push(format!("src/{rel} has `{what}`: {why}"));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The run-dir files a reader parses as JSON (constants of `record/files.rs`).
const RUN_DIR_JSON: &[&str] = &["MANIFEST", "TRIALS", "SUMMARY", "COMPARE_JSON", "TRACES", "INTERLEAVED", "BLOCKS"];

/// Files that name a run-dir file and parse other JSON untyped, with why.
const UNTYPED_JSON_BESIDE_RUN_DIRS: &[(&str, &str)] =
    &[("otel/read.rs", "it sniffs trace files' shapes; of a run dir it only hashes trials.jsonl")];

/// Only `record/` (and `stats/`, for summary.json and compare.json) define
/// the serialized forms of a run dir's files: the marker of such a form
/// (`record::files::RunDirFile`, which `rundir::write_json` requires) is
/// implemented nowhere else, and no other file reads a run-dir file as
/// untyped JSON by string keys.
#[test]
fn only_record_and_stats_define_the_forms_of_run_dir_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let marker = Regex::new(r"impl\s*(<[^>]*>)?\s*[\w:]*RunDirFile\s+for\b").unwrap();
    let names = Regex::new(&format!(r"files::({})\b", RUN_DIR_JSON.join("|"))).unwrap();
    let untyped = Regex::new(r"from_(str|slice|reader)::<\s*(Json|serde_json::Value)\s*>|:\s*(Json|serde_json::Value)\s*=\s*serde_json::from_").unwrap();
    let mut bad = Vec::new();
    let mut marked = 0;
    for f in &all {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(f).unwrap();
        let home = rel.starts_with("record/") || rel.starts_with("stats/");
        let n = marker.find_iter(&text).count();
        marked += n;
        if n > 0 && !home {
            bad.push(format!("src/{rel} defines the form of a run-dir file (impl RunDirFile): it belongs in record/"));
        }
        if !home
            && names.is_match(&text)
            && untyped.is_match(&text)
            && !UNTYPED_JSON_BESIDE_RUN_DIRS.iter().any(|(f, _)| *f == rel)
        {
            bad.push(format!(
                "src/{rel} names a run-dir file and parses JSON untyped: read it through its type in record/ or stats/"
            ));
        }
    }
    assert!(marked >= 5, "the marker was not found: the test no longer sees the forms ({marked})");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Every file and folder ARCHITECTURE.md names (`judge/calibrate.rs`,
/// `record/`, `bench/guard.sh`) exists, under src/ or at the root: a claim
/// about a file that moved or went is false (issue 44: 4 of 8 claims checked
/// were).
#[test]
fn every_path_architecture_md_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let named = Regex::new(r"`([a-z_]+(?:/[a-z_0-9.]+)+/?)`").unwrap();
    let mut seen = 0;
    let mut gone = Vec::new();
    for c in named.captures_iter(&text) {
        let p = c[1].trim_end_matches('/');
        seen += 1;
        if !root.join("src").join(p).exists() && !root.join(p).exists() {
            gone.push(c[1].to_string());
        }
    }
    assert!(seen > 50, "the test no longer sees ARCHITECTURE.md's paths ({seen})");
    assert!(gone.is_empty(), "ARCHITECTURE.md names paths that do not exist: {gone:?}");
}
