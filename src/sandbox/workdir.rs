//! Work-dir fixtures for coding agents: a folder or a git bundle becomes the
//! case's template tree once per run; each trial gets its own copy; the
//! trial's change is the difference between the template and the final tree.
//!
//! Trees are compared in Rust (no `git` needed for diffs): regular files by
//! content, symlinks by target. Unified diffs come from the `similar` crate.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::record::state::KeptFile;
use crate::spec::WorkdirSpec;
use crate::util::paths::display_path;
use crate::util::tree::{self, Entry, Git, copy_tree, tree_hash};

fn describe(spec: &WorkdirSpec) -> String {
    match spec {
        WorkdirSpec::Dir { path } => display_path(path),
        WorkdirSpec::Git { bundle, rev } => format!("{}@{}", display_path(bundle), rev.as_deref().unwrap_or("HEAD")),
    }
}

/// A case's initial work tree, materialised once per run in the run's scratch folder.
#[derive(Debug)]
pub struct Template {
    pub spec: WorkdirSpec,
    pub dir: PathBuf,
    /// sha256 over the sorted (path, kind, mode, content hash) of the tree.
    pub hash: String,
    pub files: usize,
}

/// Builds each distinct template once per run.
#[derive(Default)]
pub struct Templates {
    built: HashMap<WorkdirSpec, Arc<Template>>,
}

impl Templates {
    pub fn get(&mut self, spec: &WorkdirSpec, scratch: &Path) -> Result<Arc<Template>> {
        if let Some(t) = self.built.get(spec) {
            return Ok(t.clone());
        }
        let dir = scratch.join(format!("template-{}", self.built.len() + 1));
        let made = match spec {
            WorkdirSpec::Dir { path } if !path.is_dir() => {
                Err(Error::Input(format!("sandbox.workdir: {} is not a folder", display_path(path))))
            }
            WorkdirSpec::Dir { path } => copy_tree(path, &dir)
                .map_err(|e| Error::Input(format!("sandbox.workdir: cannot copy {}: {e}", display_path(path)))),
            WorkdirSpec::Git { bundle, rev } => clone_bundle(bundle, rev.as_deref(), &dir),
        };
        if let Err(e) = made {
            // The next template is built in the same place.
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
        let hash = tree_hash(&dir).map_err(|e| Error::Input(format!("sandbox.workdir {}: {e}", describe(spec))))?;
        let files = tree::walk(&dir, Git::Skip).map(|s| s.len()).unwrap_or(0);
        let t = Arc::new(Template { spec: spec.clone(), dir, hash, files });
        self.built.insert(spec.clone(), t.clone());
        Ok(t)
    }
}

/// Clone a bundle into `dest` and check out `rev`; the `.git` folder is
/// dropped, so every trial starts from the same plain tree.
fn clone_bundle(bundle: &Path, rev: Option<&str>, dest: &Path) -> Result<()> {
    let shown = display_path(bundle);
    if !bundle.is_file() {
        return Err(Error::Input(format!("sandbox.workdir: git bundle not found: {shown}")));
    }
    let git = |args: &[&std::ffi::OsStr], what: &str| -> Result<()> {
        let out = Command::new("git")
            .args(["-c", "advice.detachedHead=false", "-c", "core.hooksPath=/dev/null"])
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .output()
            .map_err(|e| Error::Input(format!("sandbox.workdir: cannot run git ({e}); it is needed for {shown}")))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let line = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
            return Err(Error::Input(format!("sandbox.workdir: {what} {shown}: {line}")));
        }
        Ok(())
    };
    git(&["clone".as_ref(), "--quiet".as_ref(), bundle.as_os_str(), dest.as_os_str()], "git clone of")?;
    if let Some(rev) = rev {
        git(
            &[
                "-C".as_ref(),
                dest.as_os_str(),
                "checkout".as_ref(),
                "--quiet".as_ref(),
                "--detach".as_ref(),
                rev.as_ref(),
            ],
            &format!("git checkout of rev {rev:?} in"),
        )?;
    }
    std::fs::remove_dir_all(dest.join(".git"))
        .map_err(|e| Error::Input(format!("sandbox.workdir: {shown}: cannot drop .git: {e}")))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Added,
    Modified,
    Deleted,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Added => "added",
            Status::Modified => "modified",
            Status::Deleted => "deleted",
        }
    }
}

/// Past this size, `t.diff.text` names further changed files without their lines
/// (`t.diff.files` stays complete).
pub const MAX_DIFF_TEXT: usize = 16 * 1024 * 1024;

/// The change a trial made to its work tree.
#[derive(Debug, Default, Clone)]
pub struct Diff {
    pub files: Vec<(String, Status)>,
    pub text: String,
}

/// Bytes of one side of a change, as diff text sees it.
fn side(root: &Path, rel: &str, entry: Option<&Entry>) -> Option<Vec<u8>> {
    match entry? {
        Entry::File { .. } => std::fs::read(root.join(rel)).ok(),
        Entry::Symlink(t) => Some(format!("symlink -> {}\n", t.display()).into_bytes()),
    }
}

/// Compare the template (`None`: an empty tree) with the final tree.
pub fn diff(before: Option<&Path>, after: &Path) -> std::io::Result<Diff> {
    let old = match before {
        Some(b) => tree::walk(b, Git::Skip)?,
        None => BTreeMap::new(),
    };
    let new = tree::walk(after, Git::Skip)?;
    let paths: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let mut out = Diff::default();
    for rel in paths {
        let (o, n) = (old.get(rel), new.get(rel));
        let a = before.and_then(|b| side(b, rel, o));
        let b = side(after, rel, n);
        let status = match (o, n) {
            (None, Some(_)) => Status::Added,
            (Some(_), None) => Status::Deleted,
            _ if o == n && a == b => continue,
            _ => Status::Modified,
        };
        out.files.push((rel.clone(), status));
        let (a, b) = (a.unwrap_or_default(), b.unwrap_or_default());
        let left = if status == Status::Added { "/dev/null".to_string() } else { format!("a/{rel}") };
        let right = if status == Status::Deleted { "/dev/null".to_string() } else { format!("b/{rel}") };
        out.text.push_str(&format!("diff --evalua a/{rel} b/{rel}\n"));
        if let (Some(Entry::File { exec: x }), Some(Entry::File { exec: y })) = (o, n)
            && x != y
        {
            let mode = |e: bool| if e { "100755" } else { "100644" };
            out.text.push_str(&format!("old mode {}\nnew mode {}\n", mode(*x), mode(*y)));
        }
        match (std::str::from_utf8(&a), std::str::from_utf8(&b)) {
            (Ok(sa), Ok(sb)) if !a.contains(&0) && !b.contains(&0) => {
                if sa != sb && out.text.len() < MAX_DIFF_TEXT {
                    // A pathological pair of files degrades to a coarser (still correct) diff, not a stall.
                    let d = similar::TextDiff::configure().timeout(Duration::from_secs(2)).diff_lines(sa, sb);
                    out.text.push_str(&d.unified_diff().context_radius(3).header(&left, &right).to_string());
                } else if sa != sb {
                    out.text
                        .push_str(&format!("(diff text of {rel} left out: the diff is over {MAX_DIFF_TEXT} bytes)\n"));
                }
            }
            _ => out.text.push_str(&format!("Binary files {left} and {right} differ\n")),
        }
    }
    Ok(out)
}

/// The change as files to keep (SPEC §10): each added or modified path with
/// its content hash and executable bit (or, for a symlink, its target), and
/// the deleted paths. `after` is the final tree the diff was taken of.
pub fn kept_changes(d: &Diff, after: &Path) -> std::io::Result<(Vec<KeptFile>, Vec<String>)> {
    use std::os::unix::fs::PermissionsExt;
    let (mut kept, mut deleted) = (Vec::new(), Vec::new());
    for (rel, status) in &d.files {
        if *status == Status::Deleted {
            deleted.push(rel.clone());
            continue;
        }
        let p = after.join(rel);
        let m = std::fs::symlink_metadata(&p)?;
        if m.file_type().is_symlink() {
            let target = std::fs::read_link(&p)?.to_string_lossy().into_owned();
            kept.push(KeptFile { path: rel.clone(), sha256: None, exec: false, symlink: Some(target) });
        } else {
            let bytes = std::fs::read(&p)?;
            kept.push(KeptFile {
                path: rel.clone(),
                sha256: Some(crate::util::digest::sha256_hex(&bytes)),
                exec: m.permissions().mode() & 0o111 != 0,
                symlink: None,
            });
        }
    }
    Ok((kept, deleted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_reports_added_modified_deleted() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        std::fs::write(a.path().join("same.txt"), "x\n").unwrap();
        std::fs::write(b.path().join("same.txt"), "x\n").unwrap();
        std::fs::write(a.path().join("gone.txt"), "bye\n").unwrap();
        std::fs::write(a.path().join("m.txt"), "1\n2\n3\n").unwrap();
        std::fs::write(b.path().join("m.txt"), "1\ntwo\n3\n").unwrap();
        std::fs::create_dir(b.path().join("d")).unwrap();
        std::fs::write(b.path().join("d/new.txt"), "hi\n").unwrap();
        let d = diff(Some(a.path()), b.path()).unwrap();
        let files: Vec<(&str, &str)> = d.files.iter().map(|(p, s)| (p.as_str(), s.as_str())).collect();
        assert_eq!(files, vec![("d/new.txt", "added"), ("gone.txt", "deleted"), ("m.txt", "modified")]);
        assert!(d.text.contains("--- a/m.txt\n+++ b/m.txt\n"), "{}", d.text);
        assert!(d.text.contains("-2\n+two\n"), "{}", d.text);
        assert!(d.text.contains("--- /dev/null\n+++ b/d/new.txt\n"), "{}", d.text);
        assert!(!d.text.contains("same.txt"));
        assert_ne!(tree_hash(a.path()).unwrap(), tree_hash(b.path()).unwrap());
    }
}
