//! The declarations the DSL reads by name (`host.fields`), from the spec
//! types' serde fields (`spec::keys`), and the test that fails when the
//! editor stubs or the reference tables drift from them.

use crate::spec::keys::{fields, suite_keys};
use crate::spec::{
    Budget, CaseTable, CheckInfo, CommandAgentSpec, FaultRule, GradeSpec, LlmUserSpec, ModelSpec, Perturbation,
    Provider, Reference, SandboxSpec, SuiteTable, TestsSpec, ToolSpec, WorkdirSpec,
};

/// A default the DSL needs at run time, set once in Rust (`host.default(name)`).
pub fn default_of(name: &str) -> Option<f64> {
    Some(match name {
        "tests.timeout_s" => TestsSpec::DEFAULT_TIMEOUT_S,
        "reference.max_ratio" => Reference::DEFAULT_MAX_RATIO,
        _ => return None,
    })
}

/// The keys of a declaration the DSL asks for by name.
pub fn declared(name: &str) -> Option<Vec<&'static str>> {
    Some(match name {
        "model" => suite_keys::<ModelSpec>(),
        "providers" => Provider::ALL.iter().map(|p| p.as_str()).collect(),
        "budget" => suite_keys::<Budget>(),
        "fault" => fields::<FaultRule>().to_vec(),
        "reference" => suite_keys::<Reference>(),
        "tests" => suite_keys::<TestsSpec>(),
        "check" => suite_keys::<CheckInfo>(),
        "suite" => suite_keys::<SuiteTable>(),
        "grade" => suite_keys::<GradeSpec>(),
        "case" => suite_keys::<CaseTable>(),
        "tool" => suite_keys::<ToolSpec>(),
        "workdir" => suite_keys::<WorkdirSpec>(),
        "command" => suite_keys::<CommandAgentSpec>(),
        "user.llm" => suite_keys::<LlmUserSpec>(),
        "sandbox" => suite_keys::<SandboxSpec>(),
        "perturb" => suite_keys::<Perturbation>(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use crate::spec::keys::{Keys, fields, suite_keys};
    use crate::spec::{
        Budget, CaseTable, CheckInfo, CommandAgentSpec, FaultKind, FaultRule, GradeSpec, LlmUserSpec, ModelSpec,
        Provider, Reference, SandboxSpec, SuiteTable, TestsSpec, ToolSpec, WorkdirSpec,
    };

    fn read(rel: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// The `---@field` lines of `---@class NAME` in a types/ stub: name → type and text.
    fn stub_fields(src: &str, class: &str) -> Vec<(String, String)> {
        let head = format!("---@class {class}");
        let mut lines = src.lines().skip_while(|l| l.trim_end() != head && !l.starts_with(&format!("{head}:")));
        assert!(lines.next().is_some(), "types/evalua.lua: no `{head}`");
        lines
            .map_while(|l| l.strip_prefix("---@field "))
            .map(|l| {
                let (name, rest) = l.split_once(' ').unwrap_or((l, ""));
                (name.trim_end_matches('?').to_string(), rest.to_string())
            })
            .collect()
    }

    /// The first column's keys (`` `key` ``) of the first table after `marker` in a doc.
    fn doc_keys(src: &str, marker: &str) -> Vec<String> {
        let at = src.find(marker).unwrap_or_else(|| panic!("docs: no `{marker}`"));
        src[at..]
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .filter_map(|l| l.split('|').nth(1)?.trim().strip_prefix('`')?.split('`').next().map(String::from))
            .collect()
    }

    fn same(what: &str, rust: &[&str], other: &[String]) {
        let mut a: Vec<&str> = rust.to_vec();
        let mut b: Vec<&str> = other.iter().map(String::as_str).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "{what} drifted from the Rust declaration (left: Rust, right: the file)");
    }

    /// The editor stubs and the reference tables name exactly the fields
    /// the Rust declarations have: a field added, renamed or removed in
    /// `spec/` fails here until types/evalua.lua and docs/reference say so.
    #[test]
    fn the_stubs_and_the_reference_tables_match_the_spec_types() {
        let stubs = read("types/evalua.lua");
        let docs = read("docs/reference/lua-api.md");
        let names = |fs: Vec<(String, String)>| fs.into_iter().map(|(n, _)| n).collect::<Vec<_>>();

        // Model options as a suite gives them, and the DSL's mark on the normalised table.
        same(
            "types/evalua.lua evalua.ModelOptions",
            &suite_keys::<ModelSpec>(),
            &names(stub_fields(&stubs, "evalua.ModelOptions")),
        );
        same("types/evalua.lua evalua.Model", ModelSpec::DSL_KEYS, &names(stub_fields(&stubs, "evalua.Model")));
        same("lua-api.md ### Model options", &suite_keys::<ModelSpec>(), &doc_keys(&docs, "### Model options"));
        let providers: Vec<String> = Provider::ALL.iter().map(|p| format!("\"{}\"", p.as_str())).collect();
        let provider_type =
            stub_fields(&stubs, "evalua.ModelOptions").into_iter().find(|(n, _)| n == "provider").unwrap().1;
        assert!(
            provider_type.starts_with(&(providers.join("|") + " ")),
            "evalua.ModelOptions.provider: {provider_type}"
        );

        same("types/evalua.lua evalua.Budget", fields::<Budget>(), &names(stub_fields(&stubs, "evalua.Budget")));
        same("lua-api.md budget", fields::<Budget>(), &doc_keys(&docs, "**`budget`**"));

        // A reference as declared, and as `t.case.reference` holds it (with the DSL's keys).
        same(
            "types/evalua.lua evalua.ReferenceSpec",
            &suite_keys::<Reference>(),
            &names(stub_fields(&stubs, "evalua.ReferenceSpec")),
        );
        same(
            "types/evalua.lua evalua.Reference",
            fields::<Reference>(),
            &names(stub_fields(&stubs, "evalua.Reference")),
        );

        // suite:tool: the keys a suite gives (and `run`, the handler, which stays in Lua).
        let tool_keys = suite_keys::<ToolSpec>();
        same("types/evalua.lua evalua.ToolSpec", &tool_keys, &names(stub_fields(&stubs, "evalua.ToolSpec")));
        same("lua-api.md ### `suite:tool(spec)`", &tool_keys, &doc_keys(&docs, "### `suite:tool(spec)`"));

        // A git work dir (the folder form is a string).
        same(
            "types/evalua.lua evalua.GitWorkdir",
            &suite_keys::<WorkdirSpec>(),
            &names(stub_fields(&stubs, "evalua.GitWorkdir")),
        );

        // The sandbox.
        same(
            "types/evalua.lua evalua.Sandbox",
            &suite_keys::<SandboxSpec>(),
            &names(stub_fields(&stubs, "evalua.Sandbox")),
        );
        same("lua-api.md sandbox", &suite_keys::<SandboxSpec>(), &doc_keys(&docs, "**`sandbox`**"));

        // Agents and users.
        same(
            "types/evalua.lua evalua.CommandAgentSpec",
            &suite_keys::<CommandAgentSpec>(),
            &names(stub_fields(&stubs, "evalua.CommandAgentSpec")),
        );
        same(
            "types/evalua.lua evalua.LlmUserSpec",
            &suite_keys::<LlmUserSpec>(),
            &names(stub_fields(&stubs, "evalua.LlmUserSpec")),
        );
        same(
            "lua-api.md evalua.agent.command",
            &suite_keys::<CommandAgentSpec>(),
            &doc_keys(&docs, "**`evalua.agent.command { … }`**"),
        );
        let line = docs.lines().find(|l| l.starts_with("| `evalua.user.llm {")).expect("lua-api.md: user.llm's row");
        let inner = line.split('{').nth(1).and_then(|r| r.split('}').next()).unwrap_or("");
        let doc_user: Vec<String> = inner.split(',').map(|k| k.trim().to_string()).collect();
        same("lua-api.md evalua.user.llm", &suite_keys::<LlmUserSpec>(), &doc_user);

        // check.tests: the options' class, the reference line and its default.
        let check_stubs = read("types/evalua/check.lua");
        same(
            "types/evalua/check.lua evalua.check.TestsOpts",
            fields::<TestsSpec>(),
            &names(stub_fields(&check_stubs, "evalua.check.TestsOpts")),
        );
        let line = docs.lines().find(|l| l.starts_with("| `check.tests {")).expect("lua-api.md: check.tests' row");
        let inner = line.split('{').nth(1).and_then(|r| r.split('}').next()).unwrap_or("");
        let doc_tests: Vec<String> =
            inner.split(',').map(|k| k.split('=').next().unwrap_or("").trim().to_string()).collect();
        same("lua-api.md check.tests", fields::<TestsSpec>(), &doc_tests);
        let shown_default = format!("timeout_s = {}", TestsSpec::DEFAULT_TIMEOUT_S);
        assert!(inner.contains(&shown_default), "lua-api.md check.tests: expected `{shown_default}` in {inner:?}");

        // The suite's table, its `grade`, and the defaults its reference table shows.
        let suite_table_keys = suite_keys::<SuiteTable>();
        same("types/evalua.lua evalua.SuiteSpec", &suite_table_keys, &names(stub_fields(&stubs, "evalua.SuiteSpec")));
        same("lua-api.md ### `evalua.suite(spec)`", &suite_table_keys, &doc_keys(&docs, "### `evalua.suite(spec)`"));
        let row = |key: &str| {
            let start = format!("| `{key}` |");
            let at = docs.find("### `evalua.suite(spec)`").expect("lua-api.md: evalua.suite");
            let line = docs[at..].lines().find(|l| l.starts_with(&start));
            line.unwrap_or_else(|| panic!("lua-api.md: evalua.suite: no row `{key}`")).to_string()
        };
        for (key, default) in
            [("trials", crate::spec::DEFAULT_TRIALS), ("held_out_max_runs", crate::spec::DEFAULT_HELD_OUT_MAX_RUNS)]
        {
            let shown = row(key).split('|').nth(3).unwrap_or("").trim().to_string();
            assert_eq!(shown, default.to_string(), "lua-api.md evalua.suite `{key}`'s default");
        }
        let inline = |text: &str, open: &str, sep: char| -> Vec<String> {
            let inner = text.split(open).nth(1).and_then(|r| r.split('}').next()).unwrap_or("");
            inner
                .split(',')
                .map(|k| k.split(sep).next().unwrap_or("").trim().trim_end_matches('?').to_string())
                .collect()
        };
        let grade_stub = stub_fields(&stubs, "evalua.SuiteSpec").into_iter().find(|(n, _)| n == "grade").unwrap().1;
        same("types/evalua.lua evalua.SuiteSpec.grade", &suite_keys::<GradeSpec>(), &inline(&grade_stub, "{", ':'));
        same("lua-api.md evalua.suite `grade`", &suite_keys::<GradeSpec>(), &inline(&row("grade"), "`{", '='));

        // A case as declared, and as `t.case` holds it (with the DSL's `checks`; `_where` is the host's).
        same(
            "types/evalua.lua evalua.CaseSpec",
            &suite_keys::<CaseTable>(),
            &names(stub_fields(&stubs, "evalua.CaseSpec")),
        );
        same(
            "lua-api.md ### `suite:case(spec)`",
            &suite_keys::<CaseTable>(),
            &doc_keys(&docs, "### `suite:case(spec)`"),
        );
        let seen: Vec<&str> = fields::<CaseTable>().iter().copied().filter(|k| *k != "_where").collect();
        same("types/evalua.lua evalua.Case", &seen, &names(stub_fields(&stubs, "evalua.Case")));

        // A check's table: its keys (and `run`).
        same("types/evalua.lua evalua.Check", &suite_keys::<CheckInfo>(), &names(stub_fields(&stubs, "evalua.Check")));

        // Faults: the rule's keys, the kinds, and each kind's extra keys.
        same("types/evalua.lua evalua.Fault", fields::<FaultRule>(), &names(stub_fields(&stubs, "evalua.Fault")));
        let kinds: Vec<String> = FaultKind::ALL.iter().map(|k| format!("\"{}\"", k.as_str())).collect();
        let kind_type = stub_fields(&stubs, "evalua.Fault").into_iter().find(|(n, _)| n == "kind").unwrap().1;
        assert!(kind_type.starts_with(&(kinds.join("|") + " ")), "evalua.Fault.kind: {kind_type}");
        same("lua-api.md fault rules", &["kind", "on_call", "probability"], &doc_keys(&docs, "declared.\n\n| key |"));
        let at = docs.find("| kind | the handler |").expect("lua-api.md: the fault kinds' table");
        let rows: Vec<&str> = docs[at..].lines().skip(2).take_while(|l| l.starts_with('|')).collect();
        let doc_kinds: Vec<String> =
            rows.iter().map(|r| r.split('|').nth(1).unwrap().trim().trim_matches('`').to_string()).collect();
        same("lua-api.md fault kinds", &FaultKind::ALL.map(FaultKind::as_str), &doc_kinds);
        for (kind, row) in FaultKind::ALL.iter().zip(&rows) {
            let extra = row.split('|').nth(4).unwrap_or("");
            // The extra keys: each `key` that starts the column or follows ", ".
            let keys: Vec<String> = std::iter::once(extra.trim())
                .chain(extra.split(", ").skip(1))
                .filter_map(|k| k.trim().strip_prefix('`')?.split('`').next().map(String::from))
                .filter(|k| fields::<FaultRule>().contains(&k.as_str()))
                .collect();
            same(&format!("lua-api.md fault kind `{}`'s extra keys", kind.as_str()), kind.keys(), &keys);
        }
    }
}
