//! The process sandbox: every program evalua starts runs inside bubblewrap
//! (`bwrap`, Debian's `bubblewrap`), unless the run opted out with
//! `--isolation none`.
//!
//! What a sandboxed process gets:
//!
//! - its own PID namespace with a fresh `/proc`: it sees only its own
//!   processes (never evalua's, so never evalua's environment, command line or
//!   working directory), and everything it started dies with it, daemons that
//!   left the process group included;
//! - its own mount view: the system directories (`/usr`, `/bin`, `/lib*`,
//!   `/etc` with its secret files masked) read-only, a fresh `/dev`, an empty
//!   `/tmp` and an empty home, its writable folders (the trial's work dir) at
//!   their real paths, and read-only whatever its command line names (the
//!   agent's program and script) and the suite exposes — nothing else of the
//!   host: not the suite's folder, the work-dir templates, other trials' work
//!   dirs nor hidden tests;
//! - its own user (no capabilities, no further user namespaces), IPC and UTS
//!   namespaces, a new session (no terminal to inject input into), and
//!   SIGKILL when evalua dies;
//! - exactly the environment evalua passes (bwrap itself is started with an
//!   empty one, so not even its own `/proc/1/environ` shows evalua's);
//! - the host network, unless the suite turns it off: per-trial servers (MCP,
//!   the model proxy) listen on the host's 127.0.0.1 and are guarded by
//!   per-trial secrets that no other trial can read.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// How a process is isolated: the run's `--isolation`, carried by each
/// [`View`] (never a process-wide switch: two runs in one process, or two
/// tests, may differ).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// bubblewrap (the default).
    #[default]
    Sandbox,
    /// `--isolation none`: processes run as the harness's user, unconfined.
    None,
}

/// Read-only system directories (a symlink stays a symlink).
const SYSTEM: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"];
/// Files and folders of /etc that hold secrets: masked (an empty file, an empty folder).
const MASK_FILES: &[&str] = &["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers"];
const MASK_DIRS: &[&str] = &["/etc/ssh", "/etc/sudoers.d", "/etc/munge", "/etc/ssl/private", "/etc/credstore"];

/// What a sandboxed process may see besides the system directories.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct View {
    /// Whether there is a sandbox at all (`--isolation none`: none of the rest applies).
    pub isolation: Isolation,
    /// Paths it may read (the suite's `sandbox.expose`).
    pub read_only: Vec<PathBuf>,
    /// Folders it may write besides its working directory.
    pub writable: Vec<PathBuf>,
    /// No network namespace of its own (`sandbox.network = false` gives one with only a loopback).
    pub no_network: bool,
    /// Folders the command line may not expose by naming a file inside
    /// them (the suite's folder, the run's scratch folder): only `read_only`
    /// can.
    pub protect: Vec<PathBuf>,
}

/// The probed bubblewrap.
#[derive(Debug)]
pub struct Bwrap {
    pub path: PathBuf,
    /// `bubblewrap 0.8.0`
    pub version: String,
    /// Whether `--unshare-user --disable-userns` work here (they do as root and
    /// where unprivileged user namespaces are allowed).
    userns: bool,
}

/// bubblewrap, probed once per process: Err(why) when it cannot run here.
pub fn ready() -> Result<&'static Bwrap, String> {
    static PROBE: OnceLock<Result<Bwrap, String>> = OnceLock::new();
    PROBE.get_or_init(probe).as_ref().map_err(Clone::clone)
}

/// The bwrap binary: `EVALUA_BWRAP`, else `bwrap` on PATH.
fn find_bwrap() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("EVALUA_BWRAP").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { Err(format!("EVALUA_BWRAP={} does not exist", p.display())) };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("bwrap"))
        .find(|p| p.is_file())
        .ok_or_else(|| "bubblewrap (`bwrap`) is not installed (Debian/Ubuntu: apt-get install bubblewrap)".to_string())
}

fn probe() -> Result<Bwrap, String> {
    let path = find_bwrap()?;
    let version = std::process::Command::new(&path)
        .arg("--version")
        .env_clear()
        .output()
        .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a folder to probe bwrap in: {e}"))?;
    let mut last = String::new();
    for userns in [true, false] {
        let b = Bwrap { path: path.clone(), version: version.clone(), userns };
        let true_bin = ["/usr/bin/true", "/bin/true"].into_iter().find(|p| Path::new(p).exists()).unwrap_or("true");
        let args = b.args(&[true_bin.to_string()], dir.path(), &[], &View::default());
        let out = std::process::Command::new(&path).args(&args).env_clear().current_dir(dir.path()).output();
        match out {
            Ok(o) if o.status.success() => return Ok(b),
            Ok(o) => last = String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or("").trim().to_string(),
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("{} cannot start a sandbox here: {last}", path.display()))
}

/// True for a path that must never be bound writable nor exposed whole:
/// the root, or a folder holding a system directory.
fn too_wide(p: &Path) -> bool {
    p.parent().is_none() || SYSTEM.iter().any(|s| Path::new(s).starts_with(p))
}

/// True when `p` is inside a folder every sandbox sees anyway.
fn is_system(p: &Path) -> bool {
    SYSTEM.iter().any(|s| p.starts_with(s))
}

/// Whether a sandboxed process sees folder `d` (of its PATH): a system
/// folder, or one inside a path the suite exposes.
pub fn sees(d: &Path, expose: &[PathBuf]) -> bool {
    is_system(d) || expose.iter().any(|r| d.starts_with(r))
}

/// The read-only paths the command line names: the program (for one in a
/// `bin/` folder, its whole prefix, e.g. a virtualenv) and, for any argument
/// that is an absolute path to an existing file (a script), its folder (so
/// it can import its siblings), or the file alone when that folder holds a
/// protected one (an agent at the top of the suite's folder does not expose
/// the suite). A folder argument is exposed only through `sandbox.expose`.
fn named_by(argv: &[String], protect: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let shields = |p: &Path| protect.iter().any(|x| x.starts_with(p));
    let mut add = |p: PathBuf| {
        if !is_system(&p) && !too_wide(&p) && !out.contains(&p) {
            out.push(p);
        }
    };
    if let Some(prog) = argv.first().map(Path::new).filter(|p| p.is_absolute()) {
        let mut targets = vec![prog.to_path_buf()];
        if let Ok(real) = prog.canonicalize()
            && real != prog
        {
            targets.push(real);
        }
        for t in targets {
            let prefix = t
                .parent()
                .filter(|d| d.file_name().is_some_and(|n| n == "bin"))
                .and_then(Path::parent)
                .filter(|p| !too_wide(p) && !is_system(p) && !shields(p));
            add(prefix.map(Path::to_path_buf).unwrap_or(t));
        }
    }
    for a in argv.iter().skip(1) {
        let p = Path::new(a);
        if p.is_absolute() && p.is_file() {
            match p.parent().filter(|d| !too_wide(d) && !is_system(d) && !shields(d)) {
                Some(d) => add(d.to_path_buf()),
                None => add(p.to_path_buf()),
            }
        }
    }
    out
}

impl Bwrap {
    /// bwrap's arguments to run `argv` in `cwd` (writable) with `env`.
    pub fn args(&self, argv: &[String], cwd: &Path, env: &[(String, OsString)], view: &View) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut push = |xs: &[&dyn AsRef<std::ffi::OsStr>]| a.extend(xs.iter().map(|x| x.as_ref().to_os_string()));
        push(&[&"--die-with-parent", &"--new-session", &"--clearenv", &"--unshare-all"]);
        if !view.no_network {
            push(&[&"--share-net"]);
        }
        if self.userns {
            push(&[&"--unshare-user", &"--disable-userns"]);
        }
        push(&[&"--cap-drop", &"ALL", &"--hostname", &"evalua-sandbox"]);
        push(&[&"--proc", &"/proc", &"--dev", &"/dev", &"--tmpfs", &"/tmp"]);
        for s in SYSTEM {
            match std::fs::symlink_metadata(s) {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(target) = std::fs::read_link(s) {
                        push(&[&"--symlink", &target, s]);
                    }
                }
                Ok(m) if m.is_dir() => push(&[&"--ro-bind", s, s]),
                _ => {}
            }
        }
        for f in MASK_FILES {
            if Path::new(f).is_file() {
                push(&[&"--ro-bind", &"/dev/null", f]);
            }
        }
        for d in MASK_DIRS {
            if Path::new(d).is_dir() {
                push(&[&"--tmpfs", d]);
            }
        }
        // DNS for agents that call their APIs themselves: /etc/resolv.conf may point into /run.
        if let Ok(real) = Path::new("/etc/resolv.conf").canonicalize()
            && !is_system(&real)
        {
            push(&[&"--ro-bind-try", &real, &real]);
        }
        // An empty, writable home (a real one holds the user's credentials).
        if let Some((_, home)) = env.iter().find(|(k, _)| k == "HOME") {
            let home = Path::new(home);
            if home.is_absolute() && !too_wide(home) && !is_system(home) {
                push(&[&"--tmpfs", &home]);
            }
        }
        for p in view.read_only.iter().chain(named_by(argv, &view.protect).iter()) {
            push(&[&"--ro-bind-try", p, p]);
        }
        for p in std::iter::once(&cwd.to_path_buf()).chain(view.writable.iter()) {
            push(&[&"--bind", p, p]);
        }
        push(&[&"--chdir", &cwd]);
        for (k, v) in env {
            push(&[&"--setenv", k, v]);
        }
        push(&[&"--"]);
        a.extend(argv.iter().map(OsString::from));
        a
    }

    /// Why `argv` cannot run in a sandbox with `view` in `cwd`, found before
    /// starting it (bwrap would only say so on the process's stderr).
    pub fn refuse(&self, argv: &[String], cwd: &Path, path_var: Option<&OsString>, view: &View) -> Option<String> {
        refuse(argv, cwd, path_var, view)
    }
}

/// Why `argv` cannot run in a sandbox with `view` in `cwd` (its program not
/// found as the sandbox would look it up), found before starting it; also
/// what `evalua check` says of a command agent.
pub fn refuse(argv: &[String], cwd: &Path, path_var: Option<&OsString>, view: &View) -> Option<String> {
    if !cwd.is_absolute() || too_wide(cwd) {
        return Some(format!("the sandbox refuses to give write access to {}", cwd.display()));
    }
    if let Some(w) = view.writable.iter().find(|w| too_wide(w)) {
        return Some(format!("the sandbox refuses to give write access to {}", w.display()));
    }
    let prog = argv.first()?;
    if prog.contains('/') {
        let p = cwd.join(prog);
        return match std::fs::metadata(&p) {
            Err(e) => Some(format!("{}: {e}", p.display())),
            Ok(m) if m.is_dir() => Some(format!("{}: is a folder", p.display())),
            Ok(m) => {
                use std::os::unix::fs::PermissionsExt;
                (m.permissions().mode() & 0o111 == 0).then(|| format!("{}: Permission denied", p.display()))
            }
        };
    }
    // A program named without a path is looked up inside the sandbox,
    // where only the system folders and the exposed paths exist.
    let visible = |d: &Path| {
        is_system(d)
            || d.starts_with(cwd)
            || view.read_only.iter().chain(view.writable.iter()).any(|r| d.starts_with(r))
    };
    let dirs = path_var.map(std::env::split_paths).into_iter().flatten();
    let found = dirs.filter(|d| visible(d)).any(|d| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(d.join(prog)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    });
    (!found).then(|| {
        format!(
            "`{prog}` is not found on PATH inside the sandbox (only the system folders and `sandbox.expose` are there; give the program's absolute path or expose its folder)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_names_its_program_and_scripts() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(venv.join("bin/python"), "").unwrap();
        let agents = dir.path().join("agents");
        std::fs::create_dir_all(&agents).unwrap();
        let script = agents.join("agent.py");
        let top = dir.path().join("top.py");
        std::fs::write(&script, "").unwrap();
        std::fs::write(&top, "").unwrap();
        let argv: Vec<String> = [venv.join("bin/python"), script.clone(), top.clone(), dir.path().to_path_buf()]
            .iter()
            .map(|p| p.display().to_string())
            .chain(["-u".to_string(), "/".to_string()])
            .collect();
        let protect = [dir.path().to_path_buf()];
        assert_eq!(
            named_by(&argv, &protect),
            vec![venv, agents, top],
            "the venv, the script's folder, the protected folder's own script alone; never a folder argument nor /"
        );
        assert!(named_by(&["/usr/bin/python3".into()], &[]).is_empty(), "system programs are there anyway");
        assert!(too_wide(Path::new("/")) && too_wide(Path::new("/usr")) && !too_wide(Path::new("/tmp/x")));
    }
}
