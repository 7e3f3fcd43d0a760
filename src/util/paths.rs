//! Paths as users read them, lexical resolution, and the one confinement
//! of every path an agent, a handler or a check names inside a trial's work
//! dir: `cap-std`, which resolves each path beneath the work dir in the
//! kernel, so it holds against symlinks swapped in while a call runs.

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

/// A word as a POSIX shell reads it back (for commands printed to copy):
/// quoted only when it must be.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
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

/// The lexical rule for a path inside a work dir: relative, not empty, no `..`.
fn lexical(rel: &str) -> Result<(), String> {
    let p = Path::new(rel);
    if rel.is_empty() || p.is_absolute() {
        return Err(format!("path {rel:?} is outside the work dir (use a relative path)"));
    }
    if p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(format!("path {rel:?} is outside the work dir (no '..')"));
    }
    Ok(())
}

/// The work dir `root` as a capability (`cap-std`): every path opened
/// through it is resolved by the kernel beneath it (`openat2` with
/// `RESOLVE_BENEATH` where available), so no `..`, absolute symlink or
/// symlink swapped in mid-call (a rename race) can lead outside. `root` is
/// created when it does not exist yet (work dirs are made on first use).
fn open_root(root: &Path) -> Result<cap_std::fs::Dir, String> {
    if !root.exists() {
        std::fs::create_dir_all(root).map_err(|e| format!("cannot create the work dir: {e}"))?;
    }
    cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority()).map_err(|e| format!("work dir: {e}"))
}

/// An I/O error from a confined call, as users should read it.
fn io_error(rel: &str, e: std::io::Error) -> String {
    // cap-std refuses an escape with PermissionDenied ("a path led outside of the filesystem").
    if e.kind() == std::io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(libc::EXDEV) {
        return format!("path {rel:?} goes through a symlink that points outside the work dir");
    }
    format!("{rel}: {e}")
}

/// Check `rel` inside `root`: lexically, then every existing part of it
/// through the work dir's capability (a symlink pointing outside, or
/// dangling outside, is refused). Returns the path as it would be opened.
/// The answer is advice for early denials; the file functions below do not
/// rely on it: each of them opens the path beneath the work dir itself.
pub fn confine(root: &Path, rel: &str) -> Result<PathBuf, String> {
    lexical(rel)?;
    let dir = open_root(root)?;
    let parts: Vec<&std::ffi::OsStr> =
        Path::new(rel).components().filter_map(|c| if let Component::Normal(n) = c { Some(n) } else { None }).collect();
    let mut cur = PathBuf::new();
    for name in parts {
        cur.push(name);
        match dir.symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Err(e) = dir.metadata(&cur) {
                    return Err(match e.kind() {
                        std::io::ErrorKind::NotFound => {
                            format!("path {rel:?} goes through a symlink that points nowhere inside the work dir")
                        }
                        _ => io_error(rel, e),
                    });
                }
            }
            Ok(_) => {}
            // Nothing below a missing part can be a symlink yet.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => return Err(io_error(rel, e)),
        }
    }
    Ok(root.join(rel))
}

/// Write `content` to `rel` inside `root`, creating its folders; race-free.
pub fn write_confined(root: &Path, rel: &str, content: &[u8]) -> Result<(), String> {
    lexical(rel)?;
    let dir = open_root(root)?;
    if let Some(parent) = Path::new(rel).parent().filter(|p| !p.as_os_str().is_empty()) {
        dir.create_dir_all(parent).map_err(|e| io_error(rel, e))?;
    }
    dir.write(rel, content).map_err(|e| io_error(rel, e))
}

/// The bytes of `rel` inside `root`: Ok(None) when it does not exist; race-free.
pub fn read_file_confined(root: &Path, rel: &str) -> Result<Option<Vec<u8>>, String> {
    lexical(rel)?;
    let dir = open_root(root)?;
    match dir.read(rel) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(rel, e)),
    }
}

/// One entry of a confined folder listing.
pub struct Entry {
    pub name: String,
    /// `file`, `dir` or `symlink`.
    pub kind: &'static str,
    pub size: u64,
}

/// The entries of folder `rel` (`""` or `"."`: the root) inside `root`, sorted by name; race-free.
pub fn list_confined(root: &Path, rel: &str) -> Result<Vec<Entry>, String> {
    let dir = open_root(root)?;
    let rd = if rel.is_empty() || rel == "." {
        dir.entries()
    } else {
        lexical(rel)?;
        dir.read_dir(rel)
    }
    .map_err(|e| io_error(rel, e))?;
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        let kind = if ft.is_symlink() {
            "symlink"
        } else if ft.is_dir() {
            "dir"
        } else {
            "file"
        };
        let size = if kind == "file" { e.metadata().map(|m| m.len()).unwrap_or(0) } else { 0 };
        out.push(Entry { name: e.file_name().to_string_lossy().into_owned(), kind, size });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The bytes of the regular file `rel` inside `root` (confined, race-free);
/// None when it is not there, not a regular file, or outside.
pub fn read_confined(root: &Path, rel: &str) -> Option<Vec<u8>> {
    if !root.exists() || lexical(rel).is_err() {
        return None;
    }
    let dir = cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority()).ok()?;
    if !dir.metadata(rel).ok()?.is_file() {
        return None;
    }
    dir.read(rel).ok()
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
        assert!(write_confined(root.path(), "out/x", b"x").is_err());
        assert!(!outside.path().join("x").exists());
        assert!(read_file_confined(root.path(), "out/secret").is_err());
        assert!(list_confined(root.path(), "out").is_err());
        write_confined(root.path(), "a/b/c.txt", b"hi").unwrap();
        assert_eq!(read_file_confined(root.path(), "a/b/c.txt").unwrap().unwrap(), b"hi");
        assert_eq!(read_file_confined(root.path(), "a/none.txt").unwrap(), None);
        let names: Vec<String> = list_confined(root.path(), ".").unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["a", "dangling", "out", "sub"]);
    }

    /// A folder swapped for a symlink to outside (renameat2 RENAME_EXCHANGE)
    /// while writes go on: not one write lands outside.
    #[test]
    fn a_symlink_swap_race_never_escapes() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("d")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("l")).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (d, l) = (root.path().join("d"), root.path().join("l"));
        let s = stop.clone();
        let swapper = std::thread::spawn(move || {
            let d = std::ffi::CString::new(d.as_os_str().as_encoded_bytes()).unwrap();
            let l = std::ffi::CString::new(l.as_os_str().as_encoded_bytes()).unwrap();
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: renameat2 only reads the two NUL-terminated paths we own.
                unsafe {
                    libc::syscall(libc::SYS_renameat2, libc::AT_FDCWD, d.as_ptr(), libc::AT_FDCWD, l.as_ptr(), 2)
                };
            }
        });
        for i in 0..2000 {
            let _ = write_confined(root.path(), &format!("d/f{i}"), b"x");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swapper.join().unwrap();
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }
}
