//! File trees: the one walk (every file and symlink below a root), copies,
//! overlays and a content hash.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A regular file: executable bit.
    File {
        exec: bool,
    },
    Symlink(PathBuf),
}

/// Whether a walk lists what is below `.git` (a folder, or a worktree's `.git` file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Git {
    Include,
    /// Left out at any depth: the tree as `git diff` sees it, so an agent
    /// that commits its work does not change its diff.
    Skip,
}

/// Every file and symlink below `root`, by `/`-separated relative path
/// (sorted). Other file types are not listed; a missing root is empty.
pub fn walk(root: &Path, git: Git) -> std::io::Result<BTreeMap<String, Entry>> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    if !root.exists() {
        return Ok(out);
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir)? {
            let e = e?;
            if git == Git::Skip && e.file_name() == ".git" {
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

/// The regular files below `root` (relative paths, sorted); unreadable folders are skipped.
pub fn list_files(root: &Path) -> Vec<String> {
    walk(root, Git::Include)
        .map(|m| m.into_iter().filter(|(_, e)| matches!(e, Entry::File { .. })).map(|(p, _)| p).collect())
        .unwrap_or_default()
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

/// Copy `from`'s tree over `to` (hidden tests): files replace files; a
/// symlink in the way (planted by the agent) is removed first, so nothing is
/// ever written through it.
pub fn overlay(from: &Path, to: &Path) -> std::io::Result<()> {
    let clear = |p: &Path| -> std::io::Result<()> {
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.file_type().is_symlink() => std::fs::remove_file(p),
            _ => Ok(()),
        }
    };
    clear(to)?;
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let ft = e.file_type()?;
        let dest = to.join(e.file_name());
        clear(&dest)?;
        if ft.is_dir() {
            if dest.is_file() {
                std::fs::remove_file(&dest)?;
            }
            overlay(&e.path(), &dest)?;
        } else if ft.is_file() {
            if dest.is_dir() {
                std::fs::remove_dir_all(&dest)?;
            }
            std::fs::copy(e.path(), &dest)?;
        }
    }
    Ok(())
}

/// A hash of the whole tree (without `.git`): paths, kinds, executable bits and contents.
pub fn tree_hash(root: &Path) -> std::io::Result<String> {
    let mut h = Sha256::new();
    for (rel, entry) in walk(root, Git::Skip)? {
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
    Ok(super::digest::hex(&h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_never_writes_through_a_planted_symlink() {
        let hidden = tempfile::tempdir().unwrap();
        std::fs::create_dir(hidden.path().join("tests")).unwrap();
        std::fs::write(hidden.path().join("tests/test_hidden.py"), "hidden").unwrap();
        let tree = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), tree.path().join("tests")).unwrap();
        overlay(hidden.path(), tree.path()).unwrap();
        assert!(!outside.path().join("test_hidden.py").exists());
        assert_eq!(std::fs::read_to_string(tree.path().join("tests/test_hidden.py")).unwrap(), "hidden");
        assert!(!std::fs::symlink_metadata(tree.path().join("tests")).unwrap().file_type().is_symlink());
    }
}
