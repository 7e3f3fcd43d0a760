//! Beyond one machine (SPEC §12) with the shipped deploy files:
//! - a real Slurm cluster runs `deploy/slurm/evalua-array.sbatch` as
//!   `sbatch --array=1-3 --wait`, each task `evalua run --partition auto`, and
//!   `deploy/slurm/merge.sbatch` joins the parts into the run one process
//!   would have written; a task that fails makes the merge job refuse, naming
//!   the part (`deploy/slurm/submit.sh`, with its `afterany` dependency);
//! - the Kubernetes manifests validate against the API's schemas
//!   (`deploy/k8s/validate.sh`), and the Indexed Job's container script, run
//!   with the real binary for each completion index, writes parts the merge
//!   Job's command joins into the unpartitioned run.
//!
//! Slurm: needs SLURM_CONF and EVALUA_SLURM=1 (.ci/run starts a one-node
//! cluster); the validator: EVALUA_K8S_VALIDATE_VENV (.ci/run installs it).
//! Each skips loudly without, unless EVALUA_REQUIRE_SLURM=1 /
//! EVALUA_REQUIRE_K8S_VALIDATE=1, where its absence fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

fn required(var: &str) -> bool {
    std::env::var(var).as_deref() == Ok("1")
}

fn slurm_up() -> bool {
    let up = std::env::var_os("SLURM_CONF").is_some() && required("EVALUA_SLURM");
    if !up {
        if required("EVALUA_REQUIRE_SLURM") {
            panic!(
                "EVALUA_REQUIRE_SLURM=1 but no Slurm cluster is up (SLURM_CONF, EVALUA_SLURM=1): .ci/services.sh ci_slurm_start"
            );
        }
        eprintln!(
            "\n*** SKIPPED: the Slurm tests need a cluster (SLURM_CONF and EVALUA_SLURM=1; .ci/run starts one) ***\n"
        );
    }
    up
}

fn evalua_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_evalua"))
}

/// summary.json without the timing figures and the run id.
fn figures(dir: &Path) -> Value {
    summary_without_timings(dir)
}

/// The unpartitioned run the parts must add up to, run from `cwd`.
fn whole_run(cwd: &Path, out: &Path, seed: &str, extra: &[&str]) -> Output {
    let mut args = vec!["run", "suites/refunds.lua", "--out", out.to_str().unwrap(), "-q", "--seed", seed];
    args.extend_from_slice(extra);
    let o = bin().current_dir(cwd).args(&args).output().unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    o
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A project folder as on a cluster's shared filesystem: the example suites
/// and graders, and a logs/ folder (Slurm does not create it).
fn shared_project() -> tempfile::TempDir {
    let dir = project(&[]);
    for sub in ["suites", "graders"] {
        copy_dir(&repo().join(sub), &dir.path().join(sub));
    }
    std::fs::create_dir_all(dir.path().join("logs")).unwrap();
    dir
}

fn logs(dir: &Path) -> String {
    let mut text = String::new();
    if let Ok(rd) = std::fs::read_dir(dir.join("logs")) {
        let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        files.sort();
        for f in files {
            text.push_str(&format!("== {}\n{}\n", f.display(), std::fs::read_to_string(&f).unwrap_or_default()));
        }
    }
    text
}

/// sbatch with the test's environment (sbatch exports it to the job) plus `env`.
fn sbatch(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("sbatch");
    c.current_dir(dir).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("sbatch")
}

/// Resources that fit the one-node CI cluster (two tasks at once on 2 CPUs).
const SMALL: [&str; 2] = ["--cpus-per-task=1", "--mem=256M"];

#[test]
fn a_slurm_array_runs_the_parts_and_the_merge_job_joins_them_into_the_unpartitioned_run() {
    if !slurm_up() {
        return;
    }
    let dir = shared_project();
    let d = dir.path();
    let whole = whole_run(d, &d.join("whole"), "5", &["--trials", "7"]);

    let parts = d.join("parts");
    let bin = evalua_bin();
    let env = [
        ("EVALUA", bin.to_str().unwrap()),
        ("SUITE", "suites/refunds.lua"),
        ("PARTS", parts.to_str().unwrap()),
        ("SEED", "5"),
        ("JOBS", "1"),
        ("EVALUA_RUN_ARGS", "--trials 7"),
    ];
    let script = repo().join("deploy/slurm/evalua-array.sbatch");
    let chdir = format!("--chdir={}", d.display());
    let t0 = Instant::now();
    let mut args = vec!["--wait", "--array=1-3", chdir.as_str()];
    args.extend(SMALL);
    args.push(script.to_str().unwrap());
    let o = sbatch(d, &args, &env);
    assert!(o.status.success(), "sbatch: {}{}\n{}", stdout(&o), stderr(&o), logs(d));
    eprintln!("sbatch --wait --array=1-3: {:.1} s", t0.elapsed().as_secs_f64());

    let mut total = 0;
    for i in 1..=3 {
        let p = parts.join(i.to_string());
        let m = json(&p.join("manifest.json"));
        assert_eq!(m["partition"], format!("hash:{i}/3"), "{}", logs(d));
        let from = m["partition_from"].as_str().unwrap();
        assert_eq!(from, format!("SLURM_ARRAY_TASK_ID={i} of 1..3"));
        total += trials(&p).len();
    }
    assert_eq!(total, 21);

    // The merge job, as deploy/slurm/merge.sbatch runs it: `evalua merge PARTS`.
    let merged = d.join("merged");
    let merge_env =
        [("EVALUA", bin.to_str().unwrap()), ("PARTS", parts.to_str().unwrap()), ("MERGED", merged.to_str().unwrap())];
    let merge_script = repo().join("deploy/slurm/merge.sbatch");
    let o = sbatch(d, &["--wait", chdir.as_str(), SMALL[0], SMALL[1], merge_script.to_str().unwrap()], &merge_env);
    assert_eq!(o.status.code(), whole.status.code(), "the merge job's exit follows the gates\n{}", logs(d));
    assert_eq!(without_timings(&merged), without_timings(&d.join("whole")));
    assert_eq!(figures(&merged), figures(&d.join("whole")));
    assert_eq!(json(&merged.join("manifest.json"))["merged_from"].as_array().unwrap().len(), 3);
    assert!(logs(d).contains("merged 3 parts (21 trials)"), "{}", logs(d));
}

/// Wait until the file exists and contains `needle`.
fn wait_for_text(path: &Path, needle: &str, timeout: Duration) -> String {
    let t0 = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(t0.elapsed() < timeout, "timed out waiting for {needle:?} in {}: {text}", path.display());
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_failed_slurm_task_makes_the_merge_job_refuse_naming_the_part() {
    if !slurm_up() {
        return;
    }
    let dir = shared_project();
    let d = dir.path();
    let bin = evalua_bin();
    let submit = repo().join("deploy/slurm/submit.sh");
    // Task 2 cannot write its part: a file stands where its folder goes, so
    // evalua exits 3 and the task fails. The parts folder is parts/<array job
    // id>, known only once submitted: hold the array until the file is there.
    let o = Command::new(&submit)
        .current_dir(d)
        .arg("3")
        .env("WORKDIR", d)
        .env("EVALUA", &bin)
        .env("SUITE", "suites/refunds.lua")
        .env("SBATCH_ARGS", format!("{} {} --hold", SMALL[0], SMALL[1]))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    let id = |prefix: &str| -> String {
        let rest = &text[text.find(prefix).unwrap_or_else(|| panic!("{prefix} in {text}")) + prefix.len()..];
        rest.split_whitespace().next().unwrap().to_string()
    };
    let (array, merge) = (id("array job "), id("merge job "));
    std::fs::create_dir_all(d.join("parts").join(&array)).unwrap();
    std::fs::write(d.join("parts").join(&array).join("2"), "not a folder").unwrap();
    let o = Command::new("scontrol").args(["release", &array, &merge]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    let log = d.join(format!("logs/evalua-merge-{merge}.err"));
    let text = wait_for_text(&log, "merge.sbatch: not merged", PATIENCE);
    assert!(text.contains("part hash:2/3 is missing"), "{text}\n{}", logs(d));
    let task = std::fs::read_to_string(d.join(format!("logs/evalua-{array}_2.err"))).unwrap();
    assert!(task.contains("task 2 failed: evalua exited 3"), "{task}");
    assert!(!d.join(format!("parts/{array}.merged/summary.json")).exists());
}

/// A value of the manifest's pod template: the `value:` under `- name: NAME`.
fn env_value(yaml: &str, name: &str) -> String {
    let mut lines = yaml.lines();
    while let Some(l) = lines.next() {
        if l.trim().starts_with(&format!("- name: {name}")) {
            let v = lines.next().unwrap().trim().strip_prefix("value:").unwrap().trim();
            return v.trim_matches('"').to_string();
        }
    }
    panic!("no env {name}");
}

/// The container script: the block scalar under `args:`.
fn container_script(yaml: &str) -> String {
    let lines: Vec<&str> = yaml.lines().collect();
    let start = lines.iter().position(|l| l.trim() == "- |").expect("a `- |` block under args");
    let indent = lines[start + 1].len() - lines[start + 1].trim_start().len();
    lines[start + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_indexed_job_script_runs_each_index_with_the_real_binary_and_the_merge_job_joins_them() {
    let yaml = std::fs::read_to_string(repo().join("deploy/k8s/evalua-indexed-job.yaml")).unwrap();
    let merge_yaml = std::fs::read_to_string(repo().join("deploy/k8s/evalua-merge-job.yaml")).unwrap();
    let dir = project(&[]);
    let d = dir.path();
    let (parts, attempts) = (d.join("parts"), d.join("attempts"));
    std::fs::create_dir_all(&parts).unwrap();
    std::fs::create_dir_all(&attempts).unwrap();
    // The pod's mounts, /parts and /attempts, become folders of the test.
    let script = container_script(&yaml)
        .replace("/parts/", &format!("{}/", parts.display()))
        .replace("/attempts/", &format!("{}/", attempts.display()));
    let n = env_value(&yaml, "EVALUA_PARTITIONS");
    assert_eq!(n, "3");
    let (suite, seed) = (env_value(&yaml, "SUITE"), env_value(&yaml, "SEED"));
    let path = format!("{}:{}", evalua_bin().parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let pod = |index: Option<&str>, partition: Option<&str>| {
        let mut c = Command::new("sh");
        c.current_dir(repo())
            .args(["-c", &script])
            .env("PATH", &path)
            .env("SUITE", &suite)
            .env("SEED", &seed)
            .env("EVALUA_RUN_ARGS", env_value(&yaml, "EVALUA_RUN_ARGS"))
            .env("EVALUA_JUDGE_CACHE", d.join("judge-cache"))
            .env("HOSTNAME", "evalua-run-pod");
        for v in ["JOB_COMPLETION_INDEX", "EVALUA_PARTITION", "EVALUA_PARTITIONS", "SLURM_ARRAY_TASK_ID"] {
            c.env_remove(v);
        }
        if let Some(i) = index {
            c.env("JOB_COMPLETION_INDEX", i).env("EVALUA_PARTITIONS", &n);
        }
        if let Some(p) = partition {
            c.env("EVALUA_PARTITION", p);
        }
        c.output().unwrap()
    };
    for i in 0..3 {
        let o = pod(Some(&i.to_string()), None);
        assert_eq!(o.status.code(), Some(0), "index {i}: {}", stderr(&o));
        let m = json(&parts.join(i.to_string()).join("manifest.json"));
        assert_eq!(m["partition"], format!("hash:{}/3", i + 1));
        assert_eq!(m["partition_from"], format!("JOB_COMPLETION_INDEX={i} with EVALUA_PARTITIONS=3"));
    }
    // A one-off re-run of the third part (README: EVALUA_PARTITION=I/N, no
    // index) moves the earlier attempt aside and writes /parts/2 again.
    let o = pod(None, Some("3/3"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&attempts).unwrap().count(), 1);
    assert_eq!(json(&parts.join("2/manifest.json"))["partition_from"], "EVALUA_PARTITION=3/3");

    // The merge Job's command, with the folders of the test.
    let line = merge_yaml.lines().find(|l| l.trim().starts_with("command:")).unwrap();
    assert_eq!(line.trim(), r#"command: ["evalua", "merge", "/parts", "--out", "/merged"]"#);
    let merged = d.join("merged");
    let m = evalua(d, &["merge", parts.to_str().unwrap(), "--out", merged.to_str().unwrap()]);
    let whole = whole_run(&repo(), &d.join("whole"), &seed, &[]);
    assert_eq!(m.status.code(), whole.status.code(), "{}", stderr(&m));
    assert_eq!(without_timings(&merged), without_timings(&d.join("whole")));
    assert_eq!(figures(&merged), figures(&d.join("whole")));
}

fn validator() -> Option<PathBuf> {
    let venv = std::env::var_os("EVALUA_K8S_VALIDATE_VENV").map(PathBuf::from);
    match venv {
        Some(v) if v.join("bin/kubernetes-validate").is_file() => Some(v),
        _ => {
            if required("EVALUA_REQUIRE_K8S_VALIDATE") {
                panic!("EVALUA_REQUIRE_K8S_VALIDATE=1 but EVALUA_K8S_VALIDATE_VENV holds no kubernetes-validate");
            }
            eprintln!(
                "\n*** SKIPPED: the Kubernetes manifest test needs kubernetes-validate (EVALUA_K8S_VALIDATE_VENV; .ci/run installs it) ***\n"
            );
            None
        }
    }
}

fn validate(folder: &Path, venv: &Path) -> Output {
    Command::new(folder.join("validate.sh")).env("VALIDATE_VENV", venv).output().unwrap()
}

#[test]
fn the_kubernetes_manifests_validate_against_the_api_schemas_and_each_other() {
    let Some(venv) = validator() else { return };
    let shipped = repo().join("deploy/k8s");
    let o = validate(&shipped, &venv);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    for (file, v) in
        [("evalua-indexed-job.yaml", "1.33"), ("evalua-merge-job.yaml", "1.37"), ("evalua-parts-pvc.yaml", "1.37")]
    {
        assert!(stdout(&o).contains(&format!("{file} passed")) && stdout(&o).contains(v), "{}", stdout(&o));
    }
    // Broken copies fail: a misspelt field (schema), a count that does not
    // match completions (consistency), a claim one node only can write.
    let breakages = [
        ("evalua-indexed-job.yaml", "completionMode: Indexed", "completionsMode: Indexed", "completionsMode"),
        ("evalua-indexed-job.yaml", "value: \"3\"", "value: \"4\"", "EVALUA_PARTITIONS is '4' but completions is 3"),
        ("evalua-parts-pvc.yaml", "- ReadWriteMany", "- ReadWriteOnce", "ReadWriteMany"),
    ];
    for (file, from, to, says) in breakages {
        let dir = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(&shipped).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), dir.path().join(e.file_name())).unwrap();
        }
        let p = dir.path().join(file);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains(from), "{file}: {from}");
        std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
        let o = validate(dir.path(), &venv);
        assert!(!o.status.success(), "{file} with {to:?} passed validation");
        let out = format!("{}{}", stdout(&o), stderr(&o));
        assert!(out.contains(says), "{file} with {to:?}: {out}");
    }
}
