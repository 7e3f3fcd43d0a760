//! The lua-language-server definitions under types/ keep up with the API
//! the host really builds: every public function and value of the stdlib
//! modules (read from the tables a real state returns for `require`, not
//! from the source text) and every `evalua.host` primitive (read from the
//! host table of a real state) is declared, nothing declared is gone, and
//! .luarc.json points the language server at types/.
//!
//! Convention in types/: a stdlib `M.x` is declared as `function evalua.x(`
//! (`M.agent.x` as `evalua.agent.x`, `M.user.x` as `evalua.user.x`), a
//! `Suite` method as `function Suite:x(` on `---@class evalua.Suite` /
//! `local Suite = {}`, `check.x`, `check.cmp.x`, `judge.x`, `tools.x` and
//! `host.x` under their own names. A value (`evalua.null`, `check.cmp`) is
//! declared as an assignment `evalua.null = ...`.

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

/// A stdlib module, its definition file, and the name its table has there.
struct Module {
    module: &'static str,
    defs: &'static str,
    /// The module's table in the definitions (`evalua`, `check`, ...).
    prefix: &'static str,
    /// Names the walk must find, so a walk that finds nothing cannot pass.
    anchors: &'static [&'static str],
    min_functions: usize,
}

const MODULES: &[Module] = &[
    Module {
        module: "evalua",
        defs: "types/evalua.lua",
        prefix: "evalua",
        anchors: &[
            "evalua.suite",
            "evalua.agent.scripted",
            "evalua.user.script",
            "Suite:tool",
            "Suite:case",
            "evalua.null",
            "evalua.json.encode",
            "evalua.regex.is_match",
            "evalua.SKIP",
        ],
        min_functions: 7,
    },
    Module {
        module: "evalua.check",
        defs: "types/evalua/check.lua",
        prefix: "check",
        anchors: &["check.sql", "check.answer", "check.tools", "check.cmp.number", "check.cmp", "check.retries"],
        min_functions: 15,
    },
    Module {
        module: "evalua.tools",
        defs: "types/evalua/tools.lua",
        prefix: "tools",
        anchors: &["tools.read_file", "tools.run", "tools.register"],
        min_functions: 5,
    },
    Module {
        module: "evalua.judge",
        defs: "types/evalua/judge.lua",
        prefix: "judge",
        anchors: &["judge.rubric"],
        min_functions: 1,
    },
];

fn qualified(d: &Def) -> String {
    format!("{}{}{}", d.prefix, d.sep, d.name)
}

/// A state as a suite is loaded in, built by the library itself.
fn state() -> mlua::Lua {
    let suite = root().join("suites/refunds.lua");
    let cfg = evalua::lua::load::state_config(&suite, std::sync::Arc::new(evalua::spec::Sources::default()), 0, true);
    evalua::lua::api::new_state(cfg).expect("a Lua state")
}

/// Walks a table as Lua sees it (`pairs`, so the read-only views' contents
/// count; a shared table is a userdata proxy), one level into nested tables:
/// `prefix.name<TAB>type` lines.
const WALK: &str = r#"
local t, prefix = ...
local out = {}
local function walk(prefix, t, depth)
  for k, v in pairs(t) do
    if type(k) == "string" and k:sub(1, 1) ~= "_" then
      local kind = type(v)
      -- A read-only proxy iterates; a plain userdata (evalua.null) does not.
      if kind == "userdata" and pcall(function() for _ in pairs(v) do break end end) then kind = "table" end
      out[#out + 1] = prefix .. "." .. k .. "\t" .. kind
      if kind == "table" and depth == 0 then walk(prefix .. "." .. k, v, 1) end
    end
  end
end
walk(prefix, t, 0)
return out
"#;

fn defs_of(lua: &mlua::Lua, t: mlua::Value, prefix: &str) -> Vec<Def> {
    let lines: Vec<String> = lua.load(WALK).call((t, prefix.to_string())).expect("walk");
    let mut out: Vec<Def> = lines
        .iter()
        .map(|l| {
            let (path, kind) = l.split_once('\t').unwrap();
            let (p, name) = path.rsplit_once('.').unwrap();
            Def { prefix: p.to_string(), sep: '.', name: name.to_string(), is_fn: kind == "function" }
        })
        .collect();
    out.sort();
    out
}

/// The public names a stdlib module really has, as a state returns it.
fn runtime_defs(lua: &mlua::Lua, m: &Module) -> Vec<Def> {
    let table: mlua::Value = lua.load(format!("return require({:?})", m.module)).eval().expect("require");
    let mut defs = defs_of(lua, table, m.prefix);
    if m.module == "evalua" {
        // Suite methods: the __index of a suite's (hidden) metatable.
        let suite: mlua::Table = lua.load(r#"return require("evalua").suite { name = "x" }"#).eval().expect("a suite");
        let index: mlua::Value = suite.metatable().expect("a metatable").raw_get("__index").expect("__index");
        let methods: Vec<String> = lua
            .load(
                "local o = {} for k, v in pairs(...) do \
                 if type(k) == 'string' and k:sub(1, 1) ~= '_' and type(v) == 'function' then o[#o + 1] = k end end return o",
            )
            .call(index)
            .expect("the suite's methods");
        for k in methods {
            defs.push(Def { prefix: "Suite".into(), sep: ':', name: k, is_fn: true });
        }
        defs.sort();
    }
    defs
}

#[test]
fn every_stdlib_function_has_a_definition() {
    // `function Suite:x(` declares a method of evalua.Suite only on this local.
    let class = Regex::new(r"---@class evalua\.Suite\b[^\n]*\n(?:---[^\n]*\n)*local Suite = \{\}").unwrap();
    let lua = state();
    let mut missing = Vec::new();
    for m in MODULES {
        let defs = read(m.defs);
        let found = runtime_defs(&lua, m);
        let names: BTreeSet<String> = found.iter().map(qualified).collect();
        for a in m.anchors {
            assert!(names.contains(*a), "{}: the walk did not find {a} (found: {names:?})", m.module);
        }
        let functions = found.iter().filter(|d| d.is_fn).count();
        assert!(functions >= m.min_functions, "{}: the walk found {functions} functions", m.module);
        for d in &found {
            if !declares(&defs, &d.prefix, d.sep, &d.name) {
                missing.push(format!(
                    "{}: {} has no definition in {} (expected `{}`)",
                    m.module,
                    qualified(d),
                    m.defs,
                    d.show(&d.prefix)
                ));
            }
        }
        if m.module == "evalua" {
            assert!(class.is_match(&defs), "{}: `local Suite = {{}}` must follow `---@class evalua.Suite`", m.defs);
        }
    }
    assert!(missing.is_empty(), "missing Lua definitions:\n  {}", missing.join("\n  "));
}

#[test]
fn no_definition_outlives_the_stdlib() {
    let lua = state();
    let mut stale = Vec::new();
    for m in MODULES {
        let runtime = runtime_defs(&lua, m);
        let real: BTreeSet<String> = runtime.iter().map(qualified).collect();
        // The module's own tables: classes (Ctx, Env, Db, ...) exist only as definitions.
        let own: BTreeSet<String> = std::iter::once(m.prefix.to_string())
            .chain(std::iter::once("Suite".to_string()).filter(|_| m.module == "evalua"))
            .chain(runtime.iter().filter(|d| !d.is_fn).map(|d| format!("{}.{}", d.prefix, d.name)))
            .collect();
        for d in public_defs(&read(m.defs)) {
            if own.contains(&d.prefix) && !real.contains(&qualified(&d)) {
                stale.push(format!(
                    "{} declares {} but require({:?}) has no such name",
                    m.defs,
                    d.show(&d.prefix),
                    m.module
                ));
            }
        }
    }
    assert!(stale.is_empty(), "definitions of names the stdlib no longer has:\n  {}", stale.join("\n  "));
}

/// The names of `evalua.host` in a real state.
fn host_names() -> Vec<String> {
    let lua = state();
    let host: mlua::Table = lua.named_registry_value("evalua.host").expect("the host table");
    let mut names: Vec<String> = host.pairs::<String, mlua::Value>().map(|p| p.unwrap().0).collect();
    names.sort();
    names
}

#[test]
fn every_host_function_has_a_definition() {
    let names = host_names();
    for a in ["null", "SKIP", "regex_is_match", "json_encode", "instant", "print", "readonly"] {
        assert!(names.iter().any(|n| n == a), "the host table has no {a} (found: {names:?})");
    }
    let defs = read("types/evalua/host.lua");
    let missing: Vec<String> = names
        .iter()
        .filter(|n| !declares(&defs, "host", '.', n))
        .map(|n| format!("evalua.host.{n} (expected `function host.{n}(` or `host.{n} =` in types/evalua/host.lua)"))
        .collect();
    assert!(missing.is_empty(), "host primitives without a definition:\n  {}", missing.join("\n  "));
    let registered: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    let stale: Vec<String> = public_defs(&defs)
        .into_iter()
        .filter(|d| d.prefix == "host" && !registered.contains(d.name.as_str()))
        .map(|d| format!("host.{} (not in the host table a state builds)", d.name))
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
        library.iter().any(|l| l.trim_end_matches('/') == "types" || l.trim_end_matches('/') == "./types"),
        ".luarc.json: workspace.library must contain \"types\", got {library:?}"
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

/// Every file under types/, relative to it, with `/` separators.
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
    let base = root().join("types");
    let mut out = Vec::new();
    walk(&base, &base, &mut out);
    out.sort();
    out
}

#[test]
fn definition_files_are_documented_meta_modules() {
    let files = definition_files();
    for want in ["evalua.lua", "evalua/check.lua", "evalua/judge.lua", "evalua/host.lua"] {
        assert!(files.iter().any(|f| f == want), "types/{want} is missing (found: {files:?})");
    }
    let mut problems = Vec::new();
    for f in &files {
        let text = read(&format!("types/{f}"));
        // types/evalua/check.lua is `require("evalua.check")`: its header names that module.
        let module = f.trim_end_matches(".lua").trim_end_matches("/init").replace('/', ".");
        let first = text.lines().next().unwrap_or("");
        if first.trim_end() != format!("---@meta {module}") {
            problems.push(format!("types/{f}: the first line must be `---@meta {module}`, got `{first}`"));
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
                problems.push(format!("types/{f}:{}: `{}` has no `--- description` line", i + 1, line.trim()));
            }
        }
    }
    assert!(problems.is_empty(), "definition files:\n  {}", problems.join("\n  "));
}
