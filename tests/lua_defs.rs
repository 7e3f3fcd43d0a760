//! The lua-language-server definitions under lua/ keep up with the stdlib:
//! every public function of stdlib/evalua/{init,check,judge}.lua and every
//! `evalua.host` primitive registered in src/lua/host.rs is declared, nothing
//! declared there is gone from the stdlib, and .luarc.json points the
//! language server at lua/.
//!
//! Convention in lua/: a stdlib `function M.x(` is declared as
//! `function evalua.x(` (`M.agent.x` as `evalua.agent.x`, `M.user.x` as
//! `evalua.user.x`), a `function Suite:x(` as `function Suite:x(` on
//! `---@class evalua.Suite` / `local Suite = {}`, `check.x`, `check.cmp.x`,
//! `judge.x` and `host.x` under their own names. A value (`M.null = ...`,
//! `check.cmp = {}`) is declared as an assignment `evalua.null = ...`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use regex::Regex;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let p = root().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// A public name a stdlib file defines at its top level.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Def {
    /// The table it lives in, as written (`M.agent`, `Suite`, `check.cmp`).
    prefix: String,
    /// `.` or `:`.
    sep: char,
    name: String,
    /// A function (`function P.name(`) or a value (`P.name = ...`).
    is_fn: bool,
}

impl Def {
    fn show(&self, prefix: &str) -> String {
        if self.is_fn {
            format!("function {prefix}{}{}(", self.sep, self.name)
        } else {
            format!("{prefix}.{} =", self.name)
        }
    }
}

/// `function P.name(` / `function P:name(` anywhere at the start of a line, and
/// `P.name = ...` at the top level (no indentation). Names starting with `_` are private.
fn public_defs(src: &str) -> Vec<Def> {
    let functions = Regex::new(
        r"(?m)^[ \t]*function[ \t]+([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)([.:])([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(",
    )
    .unwrap();
    let values =
        Regex::new(r"(?m)^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\.([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[^=]")
            .unwrap();
    let mut out = Vec::new();
    for c in functions.captures_iter(src) {
        out.push(Def {
            prefix: c[1].to_string(),
            sep: c[2].chars().next().unwrap(),
            name: c[3].to_string(),
            is_fn: true,
        });
    }
    for c in values.captures_iter(src) {
        out.push(Def { prefix: c[1].to_string(), sep: '.', name: c[2].to_string(), is_fn: false });
    }
    out.retain(|d| !d.name.starts_with('_') && !d.prefix.split('.').any(|p| p.starts_with('_')));
    out.sort();
    out.dedup();
    out
}

/// Whether `defs` (a definition file's text) declares `name` in table `prefix`.
fn declares(defs: &str, prefix: &str, sep: char, name: &str) -> bool {
    let (p, n) = (regex::escape(prefix), regex::escape(name));
    let s = regex::escape(&sep.to_string());
    let function = Regex::new(&format!(r"(?m)^[ \t]*function[ \t]+{p}[ \t]*{s}[ \t]*{n}[ \t]*\(")).unwrap();
    let value = Regex::new(&format!(r"(?m)^[ \t]*{p}\.{n}[ \t]*=[^=]")).unwrap();
    function.is_match(defs) || (sep == '.' && value.is_match(defs))
}

/// A stdlib file, its definition file, and how its tables are named in the latter.
struct Module {
    stdlib: &'static str,
    defs: &'static str,
    prefixes: &'static [(&'static str, &'static str)],
    /// Names the parse must find, so a regex that finds nothing cannot pass.
    anchors: &'static [&'static str],
    min_functions: usize,
}

const MODULES: &[Module] = &[
    Module {
        stdlib: "stdlib/evalua/init.lua",
        defs: "lua/evalua.lua",
        prefixes: &[("M", "evalua"), ("M.agent", "evalua.agent"), ("M.user", "evalua.user"), ("Suite", "Suite")],
        anchors: &["M.suite", "M.agent.scripted", "M.user.script", "Suite:tool", "Suite:case", "M.null"],
        min_functions: 7,
    },
    Module {
        stdlib: "stdlib/evalua/check.lua",
        defs: "lua/evalua/check.lua",
        prefixes: &[("check", "check"), ("check.cmp", "check.cmp")],
        anchors: &["check.sql", "check.answer", "check.tools", "check.cmp.number", "check.cmp"],
        min_functions: 15,
    },
    Module {
        stdlib: "stdlib/evalua/tools.lua",
        defs: "lua/evalua/tools.lua",
        prefixes: &[("tools", "tools")],
        anchors: &["tools.read_file", "tools.run", "tools.register"],
        min_functions: 5,
    },
    Module {
        stdlib: "stdlib/evalua/judge.lua",
        defs: "lua/evalua/judge.lua",
        prefixes: &[("judge", "judge")],
        anchors: &["judge.rubric"],
        min_functions: 1,
    },
];

fn qualified(d: &Def) -> String {
    format!("{}{}{}", d.prefix, d.sep, d.name)
}

#[test]
fn every_stdlib_function_has_a_definition() {
    // `function Suite:x(` declares a method of evalua.Suite only on this local.
    let class = Regex::new(r"---@class evalua\.Suite\b[^\n]*\n(?:---[^\n]*\n)*local Suite = \{\}").unwrap();
    let mut missing = Vec::new();
    for m in MODULES {
        let src = read(m.stdlib);
        let defs = read(m.defs);
        let found = public_defs(&src);
        let names: BTreeSet<String> = found.iter().map(qualified).collect();
        for a in m.anchors {
            assert!(names.contains(*a), "{}: the parse did not find {a} (found: {names:?})", m.stdlib);
        }
        let functions = found.iter().filter(|d| d.is_fn).count();
        assert!(
            functions >= m.min_functions,
            "{}: the parse found {functions} functions, expected at least {}",
            m.stdlib,
            m.min_functions
        );
        for d in &found {
            let Some((_, target)) = m.prefixes.iter().find(|(p, _)| *p == d.prefix) else {
                missing.push(format!(
                    "{}: {} is in a table tests/lua_defs.rs does not map to {} (add it to MODULES)",
                    m.stdlib,
                    qualified(d),
                    m.defs
                ));
                continue;
            };
            if !declares(&defs, target, d.sep, &d.name) {
                missing.push(format!(
                    "{}: {} has no definition in {} (expected `{}`)",
                    m.stdlib,
                    qualified(d),
                    m.defs,
                    d.show(target)
                ));
            }
        }
        if m.prefixes.iter().any(|(p, _)| *p == "Suite") {
            assert!(class.is_match(&defs), "{}: `local Suite = {{}}` must follow `---@class evalua.Suite`", m.defs);
        }
    }
    assert!(missing.is_empty(), "missing Lua definitions:\n  {}", missing.join("\n  "));
}

#[test]
fn no_definition_outlives_the_stdlib() {
    let mut stale = Vec::new();
    for m in MODULES {
        let src: BTreeSet<String> = public_defs(&read(m.stdlib)).iter().map(qualified).collect();
        for d in public_defs(&read(m.defs)) {
            // Only the module's own tables: classes (Ctx, Env, Db, ...) exist only as definitions.
            let Some((stdlib_prefix, _)) = m.prefixes.iter().find(|(_, t)| *t == d.prefix) else { continue };
            let name = format!("{stdlib_prefix}{}{}", d.sep, d.name);
            if !src.contains(&name) {
                stale.push(format!("{} declares {} but {} has no {name}", m.defs, d.show(&d.prefix), m.stdlib));
            }
        }
    }
    assert!(stale.is_empty(), "definitions of functions the stdlib no longer has:\n  {}", stale.join("\n  "));
}

/// The names `evalua.host` gets in src/lua/host.rs and the modules it
/// registers (src/lua/work.rs, src/lua/judge_host.rs): `h.raw_set("NAME", ...)`.
fn host_names() -> Vec<String> {
    let src = read("src/lua/api/host.rs")
        + &read("src/lua/api/scan.rs")
        + &read("src/lua/api/judge.rs")
        + &read("src/lua/api/declare.rs");
    let re = Regex::new(r#"\bh\.raw_set\(\s*"([A-Za-z_][A-Za-z0-9_]*)""#).unwrap();
    let mut names: Vec<String> = re.captures_iter(&src).map(|c| c[1].to_string()).collect();
    names.sort();
    names.dedup();
    names
}

/// Names Lua code embedded in src/lua/*.rs adds to the host table (`host.readonly = readonly` in the prelude).
fn host_names_set_from_lua() -> Vec<String> {
    let re = Regex::new(r"(?m)^[ \t]*host\.([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[^=]").unwrap();
    let dir = root().join("src/lua/engine");
    let mut names = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "rs") {
            let src = std::fs::read_to_string(&p).unwrap();
            names.extend(re.captures_iter(&src).map(|c| c[1].to_string()));
        }
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn every_host_function_has_a_definition() {
    let names = host_names();
    for a in ["null", "SKIP", "regex_is_match", "json_encode", "instant", "print"] {
        assert!(names.iter().any(|n| n == a), "src/lua/host.rs: the parse did not find {a} (found: {names:?})");
    }
    assert!(names.len() >= 15, "src/lua/host.rs: the parse found only {names:?}");
    let defs = read("lua/evalua/host.lua");
    let missing: Vec<String> = names
        .iter()
        .filter(|n| !declares(&defs, "host", '.', n))
        .map(|n| format!("evalua.host.{n} (expected `function host.{n}(` or `host.{n} =` in lua/evalua/host.lua)"))
        .collect();
    assert!(missing.is_empty(), "host primitives without a definition:\n  {}", missing.join("\n  "));

    let from_lua = host_names_set_from_lua();
    let missing: Vec<String> = from_lua
        .iter()
        .filter(|n| !declares(&defs, "host", '.', n))
        .map(|n| format!("evalua.host.{n}, set by the prelude (expected `function host.{n}(` in lua/evalua/host.lua)"))
        .collect();
    assert!(missing.is_empty(), "host functions without a definition:\n  {}", missing.join("\n  "));

    let registered: BTreeSet<&str> = names.iter().chain(&from_lua).map(String::as_str).collect();
    let stale: Vec<String> = public_defs(&defs)
        .into_iter()
        .filter(|d| d.prefix == "host" && !registered.contains(d.name.as_str()))
        .map(|d| format!("host.{} (not registered in src/lua/host.rs nor set in src/lua/*.rs)", d.name))
        .collect();
    assert!(stale.is_empty(), "stale host definitions:\n  {}", stale.join("\n  "));
}

#[test]
fn luarc_points_at_the_definitions() {
    let text = read(".luarc.json");
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!(".luarc.json is not valid JSON: {e}"));
    // Nested (`workspace: { library }`) or flat (`"workspace.library"`) keys.
    let get = |section: &str, key: &str| -> Value {
        let nested = &v[section][key];
        if nested.is_null() { v[format!("{section}.{key}")].clone() } else { nested.clone() }
    };
    let strings = |x: &Value| -> Vec<String> {
        x.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect()).unwrap_or_default()
    };
    let library = strings(&get("workspace", "library"));
    assert!(
        library.iter().any(|l| l.trim_end_matches('/') == "lua" || l.trim_end_matches('/') == "./lua"),
        ".luarc.json: workspace.library must contain \"lua\", got {library:?}"
    );
    assert_eq!(get("runtime", "version").as_str(), Some("Lua 5.4"), ".luarc.json: runtime.version must be \"Lua 5.4\"");
    let path = strings(&get("runtime", "path"));
    for p in ["?.lua", "?/init.lua"] {
        assert!(path.iter().any(|x| x == p), ".luarc.json: runtime.path must contain {p:?}, got {path:?}");
    }
    let globals = get("diagnostics", "globals");
    assert!(
        globals.is_null() || globals.as_array().is_some_and(|a| a.is_empty()),
        ".luarc.json: diagnostics.globals must be empty, got {globals}"
    );
    assert_eq!(get("workspace", "checkThirdParty"), Value::Bool(false), ".luarc.json: workspace.checkThirdParty");
}

/// Every file under lua/, relative to it, with `/` separators.
fn definition_files() -> Vec<String> {
    fn walk(dir: &std::path::Path, base: &std::path::Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, out);
            } else if p.extension().is_some_and(|x| x == "lua") {
                out.push(p.strip_prefix(base).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let base = root().join("lua");
    let mut out = Vec::new();
    walk(&base, &base, &mut out);
    out.sort();
    out
}

#[test]
fn definition_files_are_documented_meta_modules() {
    let files = definition_files();
    for want in ["evalua.lua", "evalua/check.lua", "evalua/judge.lua", "evalua/host.lua"] {
        assert!(files.iter().any(|f| f == want), "lua/{want} is missing (found: {files:?})");
    }
    let mut problems = Vec::new();
    for f in &files {
        let text = read(&format!("lua/{f}"));
        // lua/evalua/check.lua is `require("evalua.check")`: its header names that module.
        let module = f.trim_end_matches(".lua").trim_end_matches("/init").replace('/', ".");
        let first = text.lines().next().unwrap_or("");
        if first.trim_end() != format!("---@meta {module}") {
            problems.push(format!("lua/{f}: the first line must be `---@meta {module}`, got `{first}`"));
        }
        // Each function has a one-line description above its annotations.
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.starts_with("function ") {
                continue;
            }
            let mut doc = lines[..i].iter().rev().take_while(|l| l.starts_with("---"));
            let described = doc.any(|l| !l.starts_with("---@") && !l.trim_start_matches('-').trim().is_empty());
            if !described {
                problems.push(format!("lua/{f}:{}: `{}` has no `--- description` line", i + 1, line.trim()));
            }
        }
    }
    assert!(problems.is_empty(), "definition files:\n  {}", problems.join("\n  "));
}
