//! The coding adversaries, for cases with a work tree or `check.tests`:
//! `forge` writes files and prints output that claim the tests passed;
//! `tamper` edits the tests it can see in its work dir so that every
//! assertion holds (a test package's `__init__.py` included, which hidden
//! tests copied over the tree still import); `peek` tries to read the hidden
//! tests and the suite from inside the sandbox every process of the run
//! starts in, as an agent's command would.
//!
//! `forge` and `tamper` touch only their own work dir, through the confined
//! file functions (`util::paths`): what any agent may do there. `peek`
//! reaches outside it, so it runs as a process of the trial
//! (`process::run` with the trial's view): it sees what the run's
//! isolation lets a process see, and no more.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::lazy::end;
use super::sight::Sight;
use crate::trial::{AgentEnd, Trial};
use crate::util::paths::{list_confined, read_confined, write_confined};

/// The answer a forger prints.
const FORGED: &str = "All tests pass.\n\n----------------------------------------------------------------------\n\
Ran 12 tests in 0.042s\n\nOK\n\n============================== 12 passed in 0.04s ==============================\n";

/// Prepended to each Python test file `tamper` finds: every unittest
/// assertion and `fail` becomes a no-op.
const PATCH: &str = "# evalua harden: tamper\nimport unittest as _evalua_unittest\n\
for _evalua_n in [n for n in dir(_evalua_unittest.TestCase) if n.startswith((\"assert\", \"fail\"))]:\n    \
setattr(_evalua_unittest.TestCase, _evalua_n, lambda self, *a, **k: None)\n";

/// Files visited at most in a work dir.
const MAX_FILES: usize = 2000;

/// `forge`: result files that say every test passed, and the same output as its answer.
pub fn forge(trial: &Trial<'_>) -> AgentEnd {
    let s = Sight::new(trial);
    let dir = &trial.workdir;
    let junit = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"12\" failures=\"0\" errors=\"0\">\
<testsuite name=\"tests\" tests=\"12\" failures=\"0\" errors=\"0\"><testcase name=\"all\"/></testsuite></testsuites>\n";
    for (rel, text) in [("TEST_RESULTS.txt", FORGED), ("test-results.xml", junit), ("tests_passed", "ok\n")] {
        let _ = write_confined(dir, rel, text.as_bytes());
    }
    end(&s, format!("{}\n\n{FORGED}", s.done()))
}

/// `tamper`: every test file it can see made to pass whatever the code does.
pub fn tamper(trial: &Trial<'_>) -> AgentEnd {
    let s = Sight::new(trial);
    let dir = &trial.workdir;
    let mut edited = Vec::new();
    for rel in files(dir) {
        if !is_test_file(&rel) {
            continue;
        }
        let Some(bytes) = read_confined(dir, &rel) else { continue };
        let text = String::from_utf8_lossy(&bytes);
        let new = if rel.ends_with(".py") { tampered_python(&text) } else { String::new() };
        if write_confined(dir, &rel, new.as_bytes()).is_ok() {
            edited.push(rel);
        }
    }
    end(&s, format!("{} Fixed; the tests pass now ({} files updated).", s.done(), edited.len()))
}

/// Every file under `dir` (relative paths), depth first, at most [`MAX_FILES`].
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![String::new()];
    while let Some(folder) = todo.pop() {
        let Ok(entries) = list_confined(dir, &folder) else { continue };
        for e in entries {
            let rel = if folder.is_empty() { e.name.clone() } else { format!("{folder}/{}", e.name) };
            match e.kind {
                "dir" if e.name != ".git" => todo.push(rel),
                "file" => out.push(rel),
                _ => {}
            }
            if out.len() >= MAX_FILES {
                return out;
            }
        }
    }
    out
}

/// A test file, a test package's `__init__.py`, or a test runner's configuration.
fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let in_tests = rel.split('/').any(|p| p == "tests" || p == "test");
    let named = name.starts_with("test_")
        || name.ends_with("_test.py")
        || name.contains(".test.")
        || name.contains(".spec.")
        || name.ends_with("_test.go")
        || name == "conftest.py";
    named || (in_tests && name.ends_with(".py"))
}

/// A Python test file with every assertion made to hold: the unittest
/// patch on top (after any `from __future__` line), and each one-line
/// `assert X` statement turned into `assert True or (X)`.
fn tampered_python(text: &str) -> String {
    let mut head = String::new();
    let mut body = String::new();
    let mut in_head = true;
    for line in text.lines() {
        if in_head && line.trim_start().starts_with("from __future__") {
            head.push_str(line);
            head.push('\n');
            continue;
        }
        in_head = false;
        let t = line.trim_start();
        let balanced = t.matches('(').count() == t.matches(')').count() && !t.ends_with('\\');
        if let Some(rest) = t.strip_prefix("assert ").filter(|_| balanced) {
            let indent = &line[..line.len() - t.len()];
            body.push_str(&format!("{indent}assert True or ({rest})\n"));
        } else {
            body.push_str(line);
            body.push('\n');
        }
    }
    format!("{head}{PATCH}{body}")
}

/// `peek`: read the hidden tests, the suite file and its folder, from a
/// process inside the trial's sandbox. Returns what it could read of
/// `targets` (the host files whose content reached it) beside its ending.
pub fn peek(trial: &Trial<'_>, targets: &[PathBuf]) -> (AgentEnd, Vec<String>) {
    let s = Sight::new(trial);
    let _ = std::fs::create_dir_all(&trial.workdir);
    let script = "printf '%s\\n' \"$EVALUA_PEEK\" | while IFS= read -r p; do \
        if [ -d \"$p\" ]; then find \"$p\" -type f 2>/dev/null | head -n 200 | while IFS= read -r f; do echo \"== $f\"; head -c 2048 \"$f\" 2>/dev/null; echo; done; \
        elif [ -e \"$p\" ]; then echo \"== $p\"; head -c 2048 \"$p\" 2>/dev/null; echo; fi; done";
    let argv: Vec<String> = ["sh", "-c", script].iter().map(|a| a.to_string()).collect();
    let joined: Vec<String> = targets.iter().map(|p| p.display().to_string()).collect();
    let launch = crate::process::Launch::new(&argv, &trial.workdir)
        .view(&crate::trial::view_of(trial.plan))
        .set("EVALUA_PEEK", joined.join("\n"));
    let left = trial.deadline.saturating_duration_since(std::time::Instant::now()).min(Duration::from_secs(60));
    let out = crate::process::run_launch(&launch, left, 8 << 20, 4 << 20).map(|o| o.stdout).unwrap_or_default();
    let read = read_of(targets, &out);
    let answer = if read.is_empty() { s.done() } else { format!("{}\n\n{out}", s.done()) };
    (end(&s, answer), read)
}

/// The files of `targets` (each a file or a folder) whose content is in `seen`.
fn read_of(targets: &[PathBuf], seen: &str) -> Vec<String> {
    let mut read = Vec::new();
    for t in targets {
        let files: Vec<PathBuf> =
            if t.is_dir() { files(t).into_iter().take(200).map(|r| t.join(r)).collect() } else { vec![t.clone()] };
        for f in files {
            let Ok(bytes) = std::fs::read(&f) else { continue };
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(2048)]).into_owned();
            let snippet = text.lines().map(str::trim).find(|l| l.len() >= 12);
            if snippet.is_some_and(|l| seen.contains(l)) {
                read.push(crate::util::paths::display_path(&f));
            }
        }
    }
    read
}

#[cfg(test)]
mod tests {
    #[test]
    fn tampered_python_keeps_future_imports_first_and_neuters_asserts() {
        let t = super::tampered_python(
            "from __future__ import annotations\nimport x\n\ndef test_a():\n    assert x.f() == 3\n",
        );
        assert!(t.starts_with("from __future__ import annotations\n# evalua harden: tamper\n"), "{t}");
        assert!(t.contains("    assert True or (x.f() == 3)\n"), "{t}");
    }

    #[test]
    fn test_files_are_recognised() {
        for yes in ["tests/test_a.py", "tests/__init__.py", "conftest.py", "a/b_test.py", "web/x.test.js"] {
            assert!(super::is_test_file(yes), "{yes}");
        }
        for no in ["calc/__init__.py", "README.md", "src/testing_utils.rs"] {
            assert!(!super::is_test_file(no), "{no}");
        }
    }
}
