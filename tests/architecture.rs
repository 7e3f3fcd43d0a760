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
    &["stats", "sandbox", "model"],
    &["judge"],
    &["lua::engine"],
    &["lua::api"],
    &["lua::load", "lua"],
    &["executor"],
    &["trial"],
    &["agent"],
    &["run"],
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
