//! The suite loader fed random Lua tables through the DSL: `evalua.suite`,
//! `suite:tool` and `suite:case` called with arbitrary keys and values
//! (known and unknown keys, NaN and infinities, huge numbers, nested tables,
//! built-in checks with arbitrary arguments). Loading and planning must end
//! in a suite or an error, never a panic.
#![no_main]

use std::fmt::Write;
use std::sync::OnceLock;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

const KEYS: &[&str] = &[
    "name", "version", "description", "trials", "budget", "sandbox", "agent", "gate", "faults", "skip", "deadline_s",
    "max_tool_calls", "max_turns", "max_tokens", "max_cost_usd", "db", "schema", "clock", "max_fixture_mb", "id",
    "input", "expect", "prohibited", "tags", "weight", "tools", "split", "difficulty", "metadata", "params", "effect",
    "requires", "kind", "on_call", "probability", "retry_after_s", "message", "keep", "age_s", "pass^1", "pass@2",
    "accepted", "critical_failures", "min", "max", "on", "type", "properties", "required", "t", "lookup",
];
const CHECKS: &[&str] = &[
    "sql", "tools", "answer", "no_loops", "retries", "args", "before", "max_calls", "ended", "json_schema", "files",
    "outbox", "claims_only_after", "no_writes",
];
const SPECIALS: &[&str] = &["0/0", "math.huge", "-math.huge", "2^63-1", "1e300", "-0.0", "2^53", "-1", "0"];

#[derive(Arbitrary, Debug)]
enum Key {
    Known(u8),
    Any(String),
    Index(u8),
}

#[derive(Arbitrary, Debug)]
enum Val {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Special(u8),
    Str(String),
    Known(u8),
    Table(Vec<(Key, Val)>),
    List(Vec<Val>),
    Check(u8, Vec<Val>),
    Array,
    Null,
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// Start from a suite that loads (a name and an agent), so the fuzzer reaches tools and cases.
    base: bool,
    suite: Vec<(Key, Val)>,
    tools: Vec<Vec<(Key, Val)>>,
    cases: Vec<Vec<(Key, Val)>>,
}

fn lua_str(s: &str, out: &mut String) {
    out.push('"');
    for b in s.bytes().take(200) {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03}");
            }
        }
    }
    out.push('"');
}

fn key(k: &Key, out: &mut String) {
    match k {
        Key::Known(i) => {
            out.push('[');
            lua_str(KEYS[*i as usize % KEYS.len()], out);
            out.push(']');
        }
        Key::Any(s) => {
            out.push('[');
            lua_str(s, out);
            out.push(']');
        }
        Key::Index(i) => {
            let _ = write!(out, "[{}]", *i as i64 - 8);
        }
    }
}

fn val(v: &Val, depth: usize, out: &mut String) {
    if depth > 4 {
        out.push_str("nil");
        return;
    }
    match v {
        Val::Nil => out.push_str("nil"),
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Val::Int(i) => {
            let _ = write!(out, "({i})");
        }
        Val::Float(f) if f.is_finite() => {
            let _ = write!(out, "({f:e})");
        }
        Val::Float(_) => out.push_str("(0/0)"),
        Val::Special(i) => {
            let _ = write!(out, "({})", SPECIALS[*i as usize % SPECIALS.len()]);
        }
        Val::Str(s) => lua_str(s, out),
        Val::Known(i) => lua_str(KEYS[*i as usize % KEYS.len()], out),
        Val::Table(kv) => {
            out.push('{');
            for (k, v) in kv.iter().take(12) {
                key(k, out);
                out.push('=');
                val(v, depth + 1, out);
                out.push(',');
            }
            out.push('}');
        }
        Val::List(items) => {
            out.push('{');
            for v in items.iter().take(12) {
                val(v, depth + 1, out);
                out.push(',');
            }
            out.push('}');
        }
        Val::Check(i, args) => {
            let _ = write!(out, "check.{}(", CHECKS[*i as usize % CHECKS.len()]);
            for (n, a) in args.iter().take(3).enumerate() {
                if n > 0 {
                    out.push(',');
                }
                val(a, depth + 1, out);
            }
            out.push(')');
        }
        Val::Array => out.push_str("evalua.array()"),
        Val::Null => out.push_str("evalua.null"),
    }
}

fn table(kv: &[(Key, Val)], extra: &str, out: &mut String) {
    out.push('{');
    out.push_str(extra);
    for (k, v) in kv.iter().take(16) {
        key(k, out);
        out.push('=');
        val(v, 1, out);
        out.push(',');
    }
    out.push('}');
}

fn source(input: &Input) -> String {
    let mut s = String::from("local evalua = require(\"evalua\")\nlocal check = require(\"evalua.check\")\n");
    s.push_str("local suite = evalua.suite ");
    let base = if input.base {
        "name = \"fuzz\", agent = evalua.agent.scripted(function() return \"\" end), "
    } else {
        ""
    };
    table(&input.suite, base, &mut s);
    s.push('\n');
    for t in input.tools.iter().take(4) {
        s.push_str("suite:tool ");
        table(t, "run = function() return {} end, ", &mut s);
        s.push('\n');
    }
    for c in input.cases.iter().take(4) {
        s.push_str("suite:case ");
        table(c, "", &mut s);
        s.push('\n');
    }
    s.push_str("return suite\n");
    s
}

fn dir() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temp dir"))
}

fuzz_target!(|input: Input| {
    let path = dir().path().join("fuzz.lua");
    std::fs::write(&path, source(&input)).expect("write the suite");
    if let Ok(suite) = evalua::lua::load::load(&path) {
        let _ = evalua::run::plan(suite, None, &Default::default(), 1);
    }
});
