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
//!   their real paths, read-only what the suite exposes and, for a command
//!   the suite declared (a command agent's), what its command line names (the
//!   agent's program and script) — never what a `ctx.exec` or check command
//!   names, never a protected path (the scratch folder, the suite file, the
//!   templates' sources, hidden tests), and nothing else of the host;
//! - only descriptors 0–2, its stdin and stdout relayed past bubblewrap's
//!   own processes (see [`RELAY`] and `super::relay`);
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

/// The first command inside the sandbox when the caller's stdin and stdout
/// come in as descriptors 3 and 4 (bwrap itself gets /dev/null on 0 and 1):
/// it puts them back on 0 and 1, closes 3 and 4 and becomes the program.
/// bubblewrap's own two processes (outside, and the sandbox's pid 1) close
/// every descriptor above 2 but keep 0–2 until the sandbox ends; were the
/// agent's pipes there, an agent that closed its stdout would never be seen
/// to end its stream. The static relay program (`super::relay`) does the
/// same without a shell's loading; this line is its fallback.
pub const RELAY: &str = r#"exec "$@" <&3 >&4 3<&- 4>&-"#;

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
    /// Whether the read-only paths its command line names are exposed (see
    /// [`named_by`]): only for a command the suite itself declares (a command
    /// agent's `cmd` and `setup`), never for one whose arguments an agent or a
    /// check may choose (`ctx.exec`, so the `run` tool; check commands; test
    /// runners).
    pub expose_named: bool,
    /// Paths no process may see, whoever names them (canonical): the run's
    /// scratch folder (every trial's work dir and template), the suite file,
    /// the work-dir templates' sources, the hidden tests. A command line
    /// naming a path inside one is refused; an exposed folder holding one
    /// shows it empty.
    pub protect: Vec<PathBuf>,
    /// Folders (canonical) a command line never exposes whole (the suite's
    /// folder): a file named directly inside one is exposed alone. So are the
    /// protected paths, and the home.
    pub shield: Vec<PathBuf>,
    /// The size of its `/tmp` and its home (each a tmpfs): the suite's
    /// `sandbox.max_trial_mb`. None: the kernel's default (half the RAM).
    pub tmp_bytes: Option<u64>,
}

/// A path with its symlinks resolved (as bubblewrap resolves a bind's
/// source), or as it is when it does not exist.
pub fn real(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// The protected path `p` lies in (or is), if any.
pub fn protected_by<'a>(p: &Path, protect: &'a [PathBuf]) -> Option<&'a PathBuf> {
    let r = real(p);
    protect.iter().find(|x| r.starts_with(x))
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
    /// Whether it knows `--perms` (bubblewrap 0.5 and later), which the
    /// relay program needs to be executable in the sandbox.
    perms: bool,
}

/// Whether `bubblewrap X.Y.Z` is 0.5 or later.
fn knows_perms(version: &str) -> bool {
    let v = version.rsplit(' ').next().unwrap_or("");
    let mut parts = v.split('.').map(|x| x.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    major > 0 || minor >= 5
}

impl Bwrap {
    /// Whether a relayed spawn hands bubblewrap the relay program on
    /// descriptor `super::relay::FD` (its path in this process, `/proc/self/fd/N`).
    pub fn relay_source(&self) -> Option<&'static std::ffi::CString> {
        if self.perms { super::relay::source() } else { None }
    }
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
        let b = Bwrap { path: path.clone(), version: version.clone(), userns, perms: knows_perms(&version) };
        let true_bin = ["/usr/bin/true", "/bin/true"].into_iter().find(|p| Path::new(p).exists()).unwrap_or("true");
        let args = b.args(&[true_bin.to_string()], dir.path(), &[], &View::default(), false, false);
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

/// The read-only paths a command line the suite declared names (with
/// `view.expose_named`; nothing otherwise): the program (for one in a `bin/`
/// folder, its whole prefix, e.g. a virtualenv) and, for any argument that is
/// an absolute path to an existing file (a script), its folder (so it can
/// import its siblings), or the file alone when that folder holds a
/// protected path, a shielded folder or the home (an agent at the top of the
/// suite's folder does not expose the suite). A folder argument is exposed
/// only through `sandbox.expose`. Err(why) when a named path lies inside a
/// protected one.
fn named_by(argv: &[String], view: &View) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    if !view.expose_named {
        return Ok(out);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).filter(|h| h.is_absolute()).map(|h| real(&h));
    let holds = |d: &Path| {
        let d = real(d);
        view.protect.iter().chain(&view.shield).chain(&home).any(|x| x.starts_with(&d))
    };
    let mut add = |p: PathBuf| -> Result<(), String> {
        if let Some(x) = protected_by(&p, &view.protect) {
            return Err(format!(
                "the sandbox refuses to expose {}: it is inside a protected path ({})",
                p.display(),
                x.display()
            ));
        }
        if !is_system(&p) && !too_wide(&p) && !out.contains(&p) {
            out.push(p);
        }
        Ok(())
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
                .filter(|p| !too_wide(p) && !is_system(p) && !holds(p));
            add(prefix.map(Path::to_path_buf).unwrap_or(t))?;
        }
    }
    for a in argv.iter().skip(1) {
        let p = Path::new(a);
        if p.is_absolute() && p.is_file() {
            match p.parent().filter(|d| !too_wide(d) && !is_system(d) && !holds(d)) {
                Some(d) => add(d.to_path_buf())?,
                None => add(p.to_path_buf())?,
            }
        }
    }
    Ok(out)
}

/// The protected paths inside an exposed path `p`, each with where it shows
/// in the sandbox (`p` is bound at its own path): masked there.
fn masks(p: &Path, protect: &[PathBuf]) -> Vec<(PathBuf, bool)> {
    let r = real(p);
    protect
        .iter()
        .filter(|x| x.starts_with(&r) && **x != r)
        .filter_map(|x| Some((p.join(x.strip_prefix(&r).ok()?), x.is_dir())))
        .collect()
}

impl Bwrap {
    /// bwrap's arguments to run `argv` in `cwd` (writable) with `env`. With
    /// `relay`, the program's stdin and stdout are the descriptors 3 and 4
    /// bwrap was started with (see [`RELAY`]); with `cgroup` too, the relay
    /// program joins the process limit's cgroup open on its descriptor 6
    /// (`super::relay::CGROUP_FD`).
    pub fn args(
        &self,
        argv: &[String],
        cwd: &Path,
        env: &[(String, OsString)],
        view: &View,
        relay: bool,
        cgroup: bool,
    ) -> Vec<OsString> {
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
        // /tmp and the home are memory: bounded by the suite's max_trial_mb
        // (bubblewrap 0.5 and later, as `--perms`), not half the host's RAM.
        let size: Option<String> = view.tmp_bytes.filter(|_| self.perms).map(|n| n.max(1 << 20).to_string());
        push(&[&"--proc", &"/proc", &"--dev", &"/dev"]);
        if let Some(n) = &size {
            push(&[&"--size", n]);
        }
        push(&[&"--tmpfs", &"/tmp"]);
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
                if let Some(n) = &size {
                    push(&[&"--size", n]);
                }
                push(&[&"--tmpfs", &home]);
            }
        }
        // What the command line names (refused before starting when it names
        // a protected path: see `refuse`).
        let named = named_by(argv, view).unwrap_or_default();
        for p in view.read_only.iter().chain(named.iter()) {
            push(&[&"--ro-bind-try", p, p]);
            for (m, dir) in masks(p, &view.protect) {
                if dir {
                    push(&[&"--tmpfs", &m, &"--remount-ro", &m]);
                } else {
                    push(&[&"--ro-bind", &"/dev/null", &m]);
                }
            }
        }
        for p in std::iter::once(&cwd.to_path_buf()).chain(view.writable.iter()) {
            push(&[&"--bind", p, p]);
        }
        push(&[&"--chdir", &cwd]);
        for (k, v) in env {
            push(&[&"--setenv", k, v]);
        }
        // The relay program (see `super::relay`), or the shell line where it is missing.
        let program = relay && self.relay_source().is_some();
        if program {
            push(&[&"--perms", &"0555", &"--ro-bind-data", &super::relay::FD.to_string(), &super::relay::PATH]);
        }
        push(&[&"--"]);
        if program {
            // In its own user namespace the tree's processes are counted apart
            // from the user's others, so RLIMIT_NPROC bounds it alone.
            let nproc = self.userns.then_some(super::pids::MAX_PROCESSES);
            push(&[&super::relay::PATH, &super::relay::limits_word(cgroup, nproc)]);
        } else if relay {
            push(&[&"/bin/sh", &"-c", &RELAY, &"sh"]);
        }
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
    let named = match named_by(argv, view) {
        Ok(named) => named,
        Err(why) => return Some(why),
    };
    // What the process will find inside the sandbox.
    let visible = |d: &Path| {
        is_system(d)
            || d.starts_with(cwd)
            || view.read_only.iter().chain(view.writable.iter()).chain(named.iter()).any(|r| d.starts_with(r))
    };
    let prog = argv.first()?;
    if prog.contains('/') {
        let p = cwd.join(prog);
        if !visible(&p) {
            return Some(format!(
                "{} is not visible inside the sandbox (only the system folders, the work dir and `sandbox.expose` are there; expose its folder)",
                p.display()
            ));
        }
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
        let base = dir.path().canonicalize().unwrap();
        let hidden = base.join("hidden");
        std::fs::create_dir_all(&hidden).unwrap();
        std::fs::write(hidden.join("test_x.py"), "").unwrap();
        let view =
            View { expose_named: true, shield: vec![base.clone()], protect: vec![hidden.clone()], ..View::default() };
        assert_eq!(
            named_by(&argv, &view),
            Ok(vec![venv, agents.clone(), top]),
            "the venv, the script's folder, the shielded folder's own script alone; never a folder argument nor /"
        );
        let system = View { expose_named: true, ..View::default() };
        assert_eq!(named_by(&["/usr/bin/python3".into()], &system), Ok(vec![]), "system programs are there anyway");
        let unnamed = View { expose_named: false, ..view.clone() };
        assert_eq!(named_by(&argv, &unnamed), Ok(vec![]), "a command an agent may shape exposes nothing");
        let naming_hidden = ["sh".to_string(), hidden.join("test_x.py").display().to_string()];
        let refused = named_by(&naming_hidden, &view).unwrap_err();
        assert!(refused.contains("protected"), "{refused}");
        // An exposed folder holding a protected one shows it masked.
        assert_eq!(masks(dir.path(), &view.protect), vec![(dir.path().join("hidden"), true)]);
        assert!(masks(&agents, &view.protect).is_empty());
        assert!(too_wide(Path::new("/")) && too_wide(Path::new("/usr")) && !too_wide(Path::new("/tmp/x")));
    }
}
