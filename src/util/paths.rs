//! Paths as users read them, lexical resolution, and the one confinement
//! rule for every path an agent, a handler or a check names inside a
//! trial's work dir.

use std::path::{Component, Path, PathBuf};

/// A path as users should read it in messages: relative to the working
/// directory when below it.
pub fn display_path(path: &Path) -> String {
    if let Ok(cwd) = std::env::current_dir()
        && let Ok(rel) = path.strip_prefix(&cwd)
    {
        return rel.display().to_string();
    }
    path.display().to_string()
}

/// Resolve `rel` against `base`, lexically (no symlink resolution).
pub fn resolve(base: &Path, rel: &str) -> PathBuf {
    let joined = if Path::new(rel).is_absolute() { PathBuf::from(rel) } else { base.join(rel) };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The project a folder belongs to: the nearest folder, from `dir` up, that
/// holds `evalua.toml` or `.git`.
pub fn project_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.join("evalua.toml").exists() || d.join(".git").exists()).map(Path::to_path_buf)
}

/// Where a suite's `require` looks for project modules, in order: the
/// suite's folder, each folder above it up to the project root (when the
/// suite is inside a project), then the working directory.
pub fn module_dirs(suite_dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = match project_root(suite_dir) {
        Some(root) => {
            let mut v = Vec::new();
            for d in suite_dir.ancestors() {
                v.push(d.to_path_buf());
                if d == root {
                    break;
                }
            }
            v
        }
        None => vec![suite_dir.to_path_buf()],
    };
    if let Ok(cwd) = std::env::current_dir()
        && !dirs.contains(&cwd)
    {
        dirs.push(cwd);
    }
    dirs
}

/// Resolve `rel` inside `root`, refusing anything that would land outside:
/// an absolute path, `..`, or any symlink on the way (including the last
/// component) that resolves outside or dangles. `root` is created when it
/// does not exist yet (work dirs are made on first use).
pub fn confine(root: &Path, rel: &str) -> Result<PathBuf, String> {
    let p = Path::new(rel);
    if rel.is_empty() || p.is_absolute() {
        return Err(format!("path {rel:?} is outside the work dir (use a relative path)"));
    }
    if p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(format!("path {rel:?} is outside the work dir (no '..')"));
    }
    if !root.exists() {
        std::fs::create_dir_all(root).map_err(|e| format!("cannot create the work dir: {e}"))?;
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

/// The bytes of the regular file `rel` inside `root` (confined as
/// [`confine`]); None when it is not there, not a regular file, or outside.
pub fn read_confined(root: &Path, rel: &str) -> Option<Vec<u8>> {
    if !root.exists() {
        return None;
    }
    let p = confine(root, rel).ok()?;
    if !p.is_file() {
        return None;
    }
    std::fs::read(p).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_are_found_up_to_the_project_root() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("evalua.toml"), "").unwrap();
        let deep = root.path().join("suites/team");
        std::fs::create_dir_all(&deep).unwrap();
        let dirs = module_dirs(&deep);
        assert_eq!(dirs[..3], [deep.clone(), root.path().join("suites"), root.path().to_path_buf()]);
        assert_eq!(project_root(&deep).as_deref(), Some(root.path()));
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
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        assert_eq!(read_confined(root.path(), "out/secret"), None);
    }
}
