//! `evalua mcp`, driven by the official MCP Python SDK's stdio client
//! (tests/clients/mcp_client.py, in the venv of `EVALUA_SDK_PYTHON`): the
//! tools are listed, suites/refunds.lua runs through `run_suite` with
//! progress notifications, a failing trial is read back with `show_trial`,
//! recorded traces are graded with `grade_traces`, and every path that leaves the project root is refused.

use std::path::Path;

use serde_json::Value;

use crate::common::repo;

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().unwrap().is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

fn sdk_python() -> Option<String> {
    match std::env::var("EVALUA_SDK_PYTHON") {
        Ok(p) if !p.trim().is_empty() => Some(p),
        _ if std::env::var("EVALUA_REQUIRE_SDK").as_deref() == Ok("1") => {
            panic!("EVALUA_REQUIRE_SDK=1 but EVALUA_SDK_PYTHON is not set")
        }
        _ => {
            eprintln!("\n*** SKIPPED: evalua mcp's client test needs EVALUA_SDK_PYTHON (the official MCP SDK) ***\n");
            None
        }
    }
}

#[test]
fn an_mcp_client_lists_runs_reads_a_failing_trial_and_cannot_leave_the_root() {
    let Some(python) = sdk_python() else { return };
    // A project of its own (the runs go under its runs/), with a way out planted in it.
    let project = tempfile::tempdir().unwrap();
    let root = project.path().join("project");
    copy_tree(&repo().join("suites"), &root.join("suites"));
    copy_tree(&repo().join("graders"), &root.join("graders"));
    copy_tree(&repo().join("tests/fixtures/traces/pydantic_ai"), &root.join("traces/pydantic_ai"));
    std::fs::write(root.join("evalua.toml"), "").unwrap();
    std::fs::write(
        root.join("suites/broken.lua"),
        "local evalua = require('evalua')\nreturn evalua.suite { nmae = 'x' }\n",
    )
    .unwrap();
    std::fs::write(project.path().join("outside.lua"), "return evalua.suite {}").unwrap();
    std::os::unix::fs::symlink(project.path(), root.join("escape")).unwrap();

    let o = std::process::Command::new(&python)
        .arg(repo().join("tests/clients/mcp_client.py"))
        .arg(env!("CARGO_BIN_EXE_evalua"))
        .arg(&root)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "the client failed:\n{stderr}");
    let seen: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));

    assert_eq!(seen["server"], "evalua");
    let tools: Vec<&str> = seen["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(
        tools,
        ["check_suite", "compare_runs", "grade_traces", "list_cases", "list_suites", "run_suite", "show_trial"]
    );
    let suites = &seen["suites"]["structured"]["suites"];
    assert!(suites.as_array().unwrap().iter().any(|s| s == "suites/refunds.lua"), "{suites}");
    assert!(!suites.as_array().unwrap().iter().any(|s| s.as_str().unwrap().contains("outside")), "{suites}");
    let cases = &seen["cases"]["structured"];
    assert_eq!(cases["schema"], "evalua.list/1");
    assert_eq!(cases["cases"].as_array().unwrap().len(), 3, "{cases}");
    assert_eq!(seen["check"]["structured"]["suites"][0]["ok"], true, "{}", seen["check"]);
    // A broken suite: an error result naming the file and line.
    let bad = &seen["check_bad"];
    assert_eq!(bad["is_error"], true, "{bad}");
    assert_eq!(bad["structured"]["exit_code"], 2);
    assert!(bad["structured"]["errors"][0]["file"].as_str().unwrap().ends_with("broken.lua"), "{bad}");
    assert_eq!(bad["structured"]["errors"][0]["line"], 2, "{bad}");

    // The run: 3 cases × 5 trials, gates failing by design (not a tool error), a progress note per trial.
    let run = &seen["run"];
    assert_eq!(run["is_error"], false, "{run}");
    let doc = &run["structured"];
    assert_eq!(doc["schema"], "evalua.run/1");
    assert_eq!(doc["exit_code"], 1);
    let entry = &doc["runs"][0];
    assert!(entry["run_dir"].as_str().unwrap().starts_with(root.canonicalize().unwrap().to_str().unwrap()), "{entry}");
    assert!(Path::new(entry["run_dir"].as_str().unwrap()).join("summary.json").is_file());
    assert_eq!(entry["counts"]["trials"], 15);
    assert!(entry["figures"]["pass^3"]["interval"].is_array(), "{entry}");
    assert_eq!(entry["gates_passed"], false);
    let progress = seen["progress"].as_array().unwrap();
    assert_eq!(progress.len(), 15, "one notification per trial: {progress:?}");
    assert_eq!(progress.last().unwrap()["done"], 15.0);
    assert_eq!(progress.last().unwrap()["total"], 15.0);
    eprintln!("evalua mcp: a 15-trial run_suite round trip took {:.2} s", seen["run_seconds"].as_f64().unwrap());
    // One case only.
    let one = &seen["run_one"]["structured"]["runs"][0];
    assert_eq!(one["counts"]["cases"], 1, "{one}");
    assert_eq!(one["counts"]["trials"], 2, "{one}");

    // A failing trial, read back.
    let f = &seen["failing"][0];
    let show = &seen["show"];
    assert_eq!(show["is_error"], false, "{show}");
    let text = show["text"].as_str().unwrap();
    assert!(text.contains(f["case"].as_str().unwrap()), "{text}");
    assert!(text.contains("calls") || text.contains("checks"), "{text}");
    assert_eq!(seen["compare"]["structured"]["schema"], "evalua.compare/1", "{}", seen["compare"]);

    // Recorded traces graded: a new run dir inside the root, with its figures.
    let g = &seen["grade"];
    assert_eq!(g["is_error"], false, "{g}");
    assert_eq!(g["structured"]["schema"], "evalua.grade/1", "{g}");
    let graded = &g["structured"]["run"];
    assert_eq!(graded["kind"], "graded", "{g}");
    assert!(graded["counts"]["trials"].as_u64().unwrap() > 0, "{g}");
    assert!(graded["figures"]["accepted"]["value"].is_number(), "{g}");
    let gdir = Path::new(graded["run_dir"].as_str().unwrap());
    assert!(gdir.starts_with(root.canonicalize().unwrap()) && gdir.join("summary.json").is_file(), "{g}");

    // Every way out is refused, before anything runs.
    for a in seen["attacks"].as_array().unwrap() {
        assert_eq!(a["is_error"], true, "{a}");
        let t = a["text"].as_str().unwrap();
        assert!(t.contains("outside the project root") || t.contains("unknown argument"), "{a}");
    }
    assert!(!project.path().join("runs").exists());
}
