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
use sha2::{Digest, Sha256};

use crate::error::{Result, UserError};
use crate::lua::display_path;

/// Where a case's initial work tree comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkdirSpec {
    /// A folder, copied as it is.
    Dir { path: PathBuf },
    /// A git bundle, cloned once and checked out at `rev` (default: the bundle's HEAD).
    Git { bundle: PathBuf, rev: Option<String> },
}

impl WorkdirSpec {
    /// Read `sandbox.workdir` as normalised by the DSL: `{ dir = abs }` or `{ git = abs, rev = s }`.
    pub fn from_lua(t: &mlua::Table) -> std::result::Result<Self, String> {
        let get = |k: &str| t.get::<Option<String>>(k).map_err(|e| format!("workdir.{k}: {e}"));
        if let Some(dir) = get("dir")? {
            return Ok(WorkdirSpec::Dir { path: PathBuf::from(dir) });
        }
        match get("git")? {
            Some(bundle) => Ok(WorkdirSpec::Git { bundle: PathBuf::from(bundle), rev: get("rev")? }),
            None => Err("workdir: expected a folder or { git = bundle, rev = ... }".into()),
        }
    }

    fn describe(&self) -> String {
        match self {
            WorkdirSpec::Dir { path } => display_path(path),
            WorkdirSpec::Git { bundle, rev } => {
                format!("{}@{}", display_path(bundle), rev.as_deref().unwrap_or("HEAD"))
            }
        }
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
        match spec {
            WorkdirSpec::Dir { path } => {
                if !path.is_dir() {
                    return Err(UserError(format!("sandbox.workdir: {} is not a folder", display_path(path))));
                }
                copy_tree(path, &dir)
                    .map_err(|e| UserError(format!("sandbox.workdir: cannot copy {}: {e}", display_path(path))))?;
            }
            WorkdirSpec::Git { bundle, rev } => clone_bundle(bundle, rev.as_deref(), &dir)?,
        }
        let hash = tree_hash(&dir).map_err(|e| UserError(format!("sandbox.workdir {}: {e}", spec.describe())))?;
        let files = snapshot(&dir).map(|s| s.len()).unwrap_or(0);
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
        return Err(UserError(format!("sandbox.workdir: git bundle not found: {shown}")));
    }
    let git = |args: &[&std::ffi::OsStr], what: &str| -> Result<()> {
        let out = Command::new("git")
            .args(["-c", "advice.detachedHead=false", "-c", "core.hooksPath=/dev/null"])
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .output()
            .map_err(|e| UserError(format!("sandbox.workdir: cannot run git ({e}); it is needed for {shown}")))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let line = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
            return Err(UserError(format!("sandbox.workdir: {what} {shown}: {line}")));
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
        .map_err(|e| UserError(format!("sandbox.workdir: {shown}: cannot drop .git: {e}")))
}

/// Copy a tree: folders, regular files (with their permissions) and symlinks
/// (as symlinks, never followed). Other file types are skipped.
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let ft = e.file_type()?;
        let dest = to.join(e.file_name());
        if ft.is_dir() {
            copy_tree(&e.path(), &dest)?;
        } else if ft.is_file() {
            std::fs::copy(e.path(), &dest)?;
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path())?, &dest)?;
        }
    }
    Ok(())
}

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A regular file: executable bit.
    File {
        exec: bool,
    },
    Symlink(PathBuf),
}

/// Every file and symlink below `root`, by `/`-separated relative path.
/// `.git` (a folder or a worktree's `.git` file) is left out at any depth:
/// the tree is the project's working tree, as `git diff` sees it, so an agent
/// that commits its work does not change its diff.
pub fn snapshot(root: &Path) -> std::io::Result<BTreeMap<String, Entry>> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    if !root.exists() {
        return Ok(out);
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir)? {
            let e = e?;
            if e.file_name() == ".git" {
                continue;
            }
            let ft = e.file_type()?;
            let p = e.path();
            let rel = || p.strip_prefix(root).map(|r| r.to_string_lossy().replace('\\', "/")).unwrap_or_default();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                let exec = e.metadata()?.permissions().mode() & 0o111 != 0;
                out.insert(rel(), Entry::File { exec });
            } else if ft.is_symlink() {
                out.insert(rel(), Entry::Symlink(std::fs::read_link(&p)?));
            }
        }
    }
    Ok(out)
}

/// A hash of the whole tree: paths, kinds, executable bits and contents.
pub fn tree_hash(root: &Path) -> std::io::Result<String> {
    let mut h = Sha256::new();
    for (rel, entry) in snapshot(root)? {
        h.update(rel.as_bytes());
        h.update([0]);
        match entry {
            Entry::File { exec } => {
                h.update(if exec { b"x" } else { b"f" });
                h.update(Sha256::digest(std::fs::read(root.join(&rel))?));
            }
            Entry::Symlink(target) => {
                h.update(b"l");
                h.update(target.to_string_lossy().as_bytes());
            }
        }
        h.update([b'\n']);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
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
        Some(b) => snapshot(b)?,
        None => BTreeMap::new(),
    };
    let new = snapshot(after)?;
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

/// Resolve `rel` inside `root`, refusing anything that would land outside:
/// an absolute path, `..`, or any symlink on the way (including the last
/// component) that resolves outside or dangles.
pub fn confine(root: &Path, rel: &str) -> std::result::Result<PathBuf, String> {
    use std::path::Component;
    let p = Path::new(rel);
    if rel.is_empty() || p.is_absolute() {
        return Err(format!("path {rel:?} is outside the work dir (use a relative path)"));
    }
    if p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(format!("path {rel:?} is outside the work dir (no '..')"));
    }
    let root = root.canonicalize().map_err(|e| format!("work dir: {e}"))?;
    let mut cur = root.clone();
    let parts: Vec<&std::ffi::OsStr> =
        p.components().filter_map(|c| if let Component::Normal(n) = c { Some(n) } else { None }).collect();
    for (i, name) in parts.iter().enumerate() {
        cur.push(name);
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => {
                let real = cur.canonicalize().map_err(|_| {
                    format!("path {rel:?} goes through a symlink that points nowhere inside the work dir")
                })?;
                if !real.starts_with(&root) {
                    return Err(format!("path {rel:?} goes through a symlink that points outside the work dir"));
                }
                cur = real;
            }
            Ok(_) => {}
            Err(_) => {
                // Nothing below a missing component can be a symlink yet.
                cur.extend(&parts[i + 1..]);
                return Ok(cur);
            }
        }
    }
    Ok(cur)
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

    #[test]
    fn confine_refuses_escapes() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("out")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/x", root.path().join("dangling")).unwrap();
        std::fs::create_dir(root.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("../sub", root.path().join("sub/back")).unwrap();
        assert!(confine(root.path(), "../x").is_err());
        assert!(confine(root.path(), "/etc/passwd").is_err());
        assert!(confine(root.path(), "out/secret").is_err());
        assert!(confine(root.path(), "out").is_err());
        assert!(confine(root.path(), "dangling").is_err());
        assert!(confine(root.path(), "sub/back/new.txt").is_ok());
        assert!(confine(root.path(), "new/deeper/file.txt").is_ok());
    }
}
