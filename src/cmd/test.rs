//! `evalua test [PATH…]`: run graders on their examples (SPEC §10), the way
//! `cargo test` runs tests: a line per example, the failures with what the
//! grader said, a summary line; exit 1 when a grader accepts a must-fail or
//! rejects a must-pass example, 2 when a test file is malformed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::lua::grader_tests;
use crate::trial::grader_tests::{ExampleResult, Got, run_file};
use crate::util::paths::display_path;

/// The default place of grader tests.
pub const DEFAULT_PATH: &str = "graders";

/// Every `*_test.lua` below `path` (or `path` itself), sorted.
fn test_files(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !path.is_dir() {
        return Err(Error::Input(format!("{}: no such file or folder", path.display())));
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::Input(format!("{}: {e}", dir.display())))?;
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() && !name.starts_with('.') {
                stack.push(p);
            } else if name.ends_with("_test.lua") && p.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(Error::Input(format!("{}: no *_test.lua file there", path.display())));
    }
    Ok(out)
}

fn evidence(r: &ExampleResult) -> String {
    let mut o = String::new();
    for c in &r.checks {
        let verdict = match (c.passed, c.skipped) {
            (Some(true), _) => "passed".to_string(),
            (Some(false), _) => "failed".to_string(),
            (None, true) => "skipped".to_string(),
            (None, false) => format!("error: {}", c.error.as_deref().unwrap_or("?")),
        };
        let ev = if c.evidence.is_null() { String::new() } else { format!("; evidence: {}", c.evidence) };
        let _ = writeln!(o, "  {}: {verdict}{ev}", c.name);
    }
    o
}

pub fn test(paths: &[PathBuf], isolation: crate::process::Isolation) -> Result<u8> {
    let default = [PathBuf::from(DEFAULT_PATH)];
    let paths = if paths.is_empty() { &default[..] } else { paths };
    let mut files = Vec::new();
    for p in paths {
        files.extend(test_files(p)?);
    }
    // Every file loads (and every example builds) before any verdict is printed.
    let started = Instant::now();
    let mut loaded = Vec::new();
    for f in &files {
        let file = grader_tests::load(f).map_err(Error::Input)?;
        let results = run_file(&file, isolation).map_err(Error::Input)?;
        loaded.push((display_path(&file.path), results));
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    let mut failures = Vec::new();
    for (shown, results) in &loaded {
        println!("\nrunning {} example{} from {shown}", results.len(), if results.len() == 1 { "" } else { "s" });
        super::json::push(
            "files",
            serde_json::json!({
                "file": shown,
                "examples": results.iter().map(|r| serde_json::json!({
                    "grader": r.grader,
                    "example": r.example,
                    "location": r.location,
                    "expected": r.expected.as_str(),
                    "got": r.got.as_str(),
                    "error": match &r.got { Got::Error(e) => Some(e.as_str()), _ => None },
                    "ok": r.ok(),
                    "checks": r.checks,
                })).collect::<Vec<_>>(),
            }),
        );
        for r in results {
            let status = if r.ok() { "ok" } else { "FAILED" };
            println!("test {} :: {} ... {status}", r.grader, r.example);
            if r.ok() {
                passed += 1;
            } else {
                failed += 1;
                failures.push(r);
            }
        }
    }
    if !failures.is_empty() {
        println!("\nfailures:");
        for r in &failures {
            println!("\n---- {} :: {} ({}) ----", r.grader, r.example, r.location);
            let got = match &r.got {
                Got::Error(e) => format!("error ({e})"),
                g => g.as_str().to_string(),
            };
            println!("expected {}, got {got}", r.expected.as_str());
            print!("{}", evidence(r));
        }
        println!("\nfailures:");
        for r in &failures {
            println!("    {} :: {}", r.grader, r.example);
        }
    }
    super::json::set("passed", serde_json::json!(passed));
    super::json::set("failed", serde_json::json!(failed));
    println!(
        "\ntest result: {}. {passed} passed; {failed} failed; {} file{}; finished in {:.2}s",
        if failed == 0 { "ok" } else { "FAILED" },
        loaded.len(),
        if loaded.len() == 1 { "" } else { "s" },
        started.elapsed().as_secs_f64()
    );
    Ok(if failed == 0 { 0 } else { 1 })
}
