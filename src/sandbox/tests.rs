//! Test runners on a finished tree, the SWE-bench way: each test id runs as
//! `runner ++ [id]` (pass = exit status 0), bounded like every command.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::process;

/// Bytes kept of a test's output (stdout, then stderr) in the evidence.
pub const TEST_TAIL: usize = 2000;
/// Output after which a test run is killed.
pub const TEST_MAX_OUTPUT: usize = 8 * 1024 * 1024;

/// One test id's run.
#[derive(Debug, Clone, Serialize)]
pub struct TestRun {
    pub id: String,
    pub passed: bool,
    /// `exit 0`, `exit 1`, `timed out after 60.0s`, ...
    pub status: String,
    pub duration_ms: f64,
    /// The end of its output (stdout then stderr).
    pub output: String,
}

/// Run each test id as `runner ++ [id]` in `dir`; Err when the runner cannot start.
pub fn run_tests(
    dir: &Path,
    runner: &[String],
    ids: &[String],
    timeout: Duration,
    view: &process::View,
) -> Result<Vec<TestRun>, process::StartError> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let mut argv = runner.to_vec();
        argv.push(id.clone());
        let spec = process::Spec { argv: &argv, cwd: dir, timeout, max_output: TEST_MAX_OUTPUT, tail: TEST_TAIL, view };
        let o = process::run(&spec)?;
        let mut output = o.stdout.clone();
        output.push_str(&o.stderr);
        if output.len() > TEST_TAIL {
            let mut cut = output.len() - TEST_TAIL;
            while !output.is_char_boundary(cut) {
                cut += 1;
            }
            output = format!("…{}", &output[cut..]);
        }
        out.push(TestRun {
            id: id.clone(),
            passed: o.success(),
            status: o.describe(),
            duration_ms: o.duration_ms,
            output,
        });
    }
    Ok(out)
}
