//! Which run dirs the viewer may show: those under the folders it was given,
//! found by walking them (not through symlinks), and addressed by an id made of the folder's number
//! and the run dir's path inside it (`0:refunds/20261129T170152Z-fce6a1`).
//! An id from a request is resolved again every time, and refused unless it
//! lands inside its folder: no `..`, no absolute path, no symlink that leads
//! out (its target is canonicalised and must lie under the folder's own
//! canonical path). Files of a run dir are read through the same rule
//! ([`crate::util::paths::read_confined`]).

use crate::record::files;
use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};
use crate::util::paths::confine;

/// A folder given on the command line.
#[derive(Debug, Clone)]
pub struct Root {
    /// As given (for messages).
    pub given: PathBuf,
    pub canon: PathBuf,
}

/// A run dir inside a root.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RunRef {
    pub id: String,
    pub root: usize,
    /// Path inside the root, `/`-separated ("." for the root itself).
    pub rel: String,
    /// Canonical path of the run dir.
    pub dir: PathBuf,
}

impl RunRef {
    /// How the user reads its path: the root as given, joined with `rel`.
    pub fn display(&self, roots: &[Root]) -> String {
        let base = &roots[self.root].given;
        if self.rel == "." { base.display().to_string() } else { base.join(&self.rel).display().to_string() }
    }
}

/// Something under a root the viewer will not show, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// How deep below a root run dirs are looked for (`runs/<suite>/<id>/` is 2).
const MAX_DEPTH: usize = 6;

pub fn roots(dirs: &[PathBuf]) -> Result<Vec<Root>> {
    let mut out = Vec::new();
    for d in dirs {
        if !d.is_dir() {
            return Err(Error::Input(format!(
                "{}: no such folder (give the folders that hold run dirs: evalua view DIR…)",
                d.display()
            )));
        }
        let canon = d.canonicalize().map_err(|e| Error::Input(format!("{}: {e}", d.display())))?;
        out.push(Root { given: d.clone(), canon });
    }
    Ok(out)
}

/// Every run dir under the roots, and what was left out.
pub fn discover(roots: &[Root]) -> (Vec<RunRef>, Vec<Skipped>) {
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    let mut seen = HashSet::new();
    for (i, root) in roots.iter().enumerate() {
        walk(roots, i, &root.canon, String::new(), 0, &mut seen, &mut runs, &mut skipped);
    }
    (runs, skipped)
}

#[allow(clippy::too_many_arguments)]
fn walk(
    roots: &[Root],
    root: usize,
    dir: &Path,
    rel: String,
    depth: usize,
    seen: &mut HashSet<PathBuf>,
    runs: &mut Vec<RunRef>,
    skipped: &mut Vec<Skipped>,
) {
    if !seen.insert(dir.to_path_buf()) {
        return;
    }
    if files::is_run_dir(dir) {
        let rel = if rel.is_empty() { ".".to_string() } else { rel };
        match check_files(dir) {
            Ok(()) => runs.push(RunRef { id: format!("{root}:{rel}"), root, rel, dir: dir.to_path_buf() }),
            Err(reason) => skipped.push(Skipped { path: roots[root].given.join(&rel).display().to_string(), reason }),
        }
        return;
    }
    if depth >= MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') {
            continue;
        }
        let child_rel = if rel.is_empty() { name.to_string() } else { format!("{rel}/{name}") };
        let path = e.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if meta.file_type().is_symlink() {
            // A link inside the folder is found under its real path; one out of it is refused.
            if let Ok(t) = path.canonicalize()
                && t.is_dir()
                && !t.starts_with(&roots[root].canon)
            {
                skipped.push(Skipped {
                    path: roots[root].given.join(&child_rel).display().to_string(),
                    reason: format!("a symlink to {}, outside {}: not shown", t.display(), roots[root].given.display()),
                });
            }
            continue;
        }
        if meta.is_dir() {
            walk(roots, root, &path, child_rel, depth + 1, seen, runs, skipped);
        }
    }
}

/// The files the viewer opens by name must not lead out of the run dir.
fn check_files(dir: &Path) -> std::result::Result<(), String> {
    for name in [files::MANIFEST, files::TRIALS, files::SUMMARY] {
        confine(dir, name).map_err(|_| format!("{name} is a symlink out of the run dir: not shown"))?;
    }
    Ok(())
}

/// Resolve a run id from a request; None unless it names a run dir inside its root.
pub fn resolve(roots: &[Root], id: &str) -> Option<RunRef> {
    let (root, rel) = id.split_once(':')?;
    let root: usize = root.parse().ok()?;
    let r = roots.get(root)?;
    let rel = rel.trim_end_matches('/');
    let dir = if rel == "." || rel.is_empty() {
        r.canon.clone()
    } else {
        let p = Path::new(rel);
        if !p.components().all(|c| matches!(c, Component::Normal(_))) {
            return None;
        }
        r.canon.join(p)
    };
    let canon = dir.canonicalize().ok()?;
    if !canon.starts_with(&r.canon) || !files::is_run_dir(&canon) || check_files(&canon).is_err() {
        return None;
    }
    let rel = if rel.is_empty() { "." } else { rel };
    Some(RunRef { id: format!("{root}:{rel}"), root, rel: rel.to_string(), dir: canon })
}

/// Is `rel` a plain relative path (no `..`, not absolute)?
pub fn plain_relative(rel: &str) -> bool {
    !rel.is_empty() && Path::new(rel).components().all(|c| matches!(c, Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(files::MANIFEST), "{}").unwrap();
    }

    #[test]
    fn finds_runs_and_refuses_ways_out() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        run(&root.path().join("refunds/r1"));
        run(&root.path().join("refunds/r2"));
        run(&outside.path().join("secret_run"));
        std::os::unix::fs::symlink(outside.path().join("secret_run"), root.path().join("refunds/linked")).unwrap();
        std::os::unix::fs::symlink(root.path().join("refunds/r1"), root.path().join("alias")).unwrap();
        // A run dir whose trials.jsonl leads out.
        run(&root.path().join("refunds/r3"));
        std::fs::write(outside.path().join(files::TRIALS), "").unwrap();
        std::os::unix::fs::symlink(outside.path().join(files::TRIALS), root.path().join("refunds/r3/trials.jsonl"))
            .unwrap();
        let roots = roots(&[root.path().to_path_buf()]).unwrap();
        let (runs, skipped) = discover(&roots);
        let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        // The alias leads to r1, which is listed once, under its own path.
        assert_eq!(ids, ["0:refunds/r1", "0:refunds/r2"], "{skipped:?}");
        assert!(skipped.iter().any(|s| s.path.ends_with("refunds/linked") && s.reason.contains("outside")));
        assert!(skipped.iter().any(|s| s.path.ends_with("refunds/r3") && s.reason.contains(files::TRIALS)));

        assert!(resolve(&roots, "0:refunds/r1").is_some());
        assert!(resolve(&roots, "0:refunds/r1/").is_some());
        assert!(resolve(&roots, "0:refunds/linked").is_none());
        assert!(resolve(&roots, "0:refunds/r3").is_none());
        assert!(resolve(&roots, "0:refunds/../refunds/r1").is_none());
        assert!(resolve(&roots, "0:/etc").is_none());
        assert!(resolve(&roots, &format!("0:{}", outside.path().join("secret_run").display())).is_none());
        assert!(resolve(&roots, "1:refunds/r1").is_none());
        assert!(resolve(&roots, "0:refunds").is_none());
        assert!(resolve(&roots, "refunds/r1").is_none());
    }
}
