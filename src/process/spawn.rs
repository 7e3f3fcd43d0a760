//! Starting a sandboxed command with `posix_spawn` and explicit descriptor
//! actions, so no process has to be forked (std forks all of evalua as soon
//! as a spawn needs anything it cannot express, such as putting a pipe on
//! descriptor 3) and no shell has to be started to move descriptors around.
//!
//! bubblewrap is started with /dev/null on 0 and 1, stderr on 2, and the
//! caller's stdin and stdout on 3 and 4 for the sandbox's relay (see
//! [`super::sandbox::RELAY`]), and the relay program on 5 (`super::relay`).
//! Those are the only descriptors above 2 it gets: every descriptor evalua
//! holds is close-on-exec, 3 and 4 are reserved for the process's life by
//! `fds::init`, so a pipe never lands on them before the actions run, and 5
//! is opened last.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What one of the child's standard streams is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// /dev/null.
    Null,
    /// A pipe whose other end the caller gets.
    Piped,
}

/// The parent's ends of the child's piped streams.
pub struct Ends {
    pub stdin: Option<OwnedFd>,
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`, which we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn cstring(s: &std::ffi::OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in an argument"))
}

/// Check a posix_spawn* call's result (they return the error number).
fn check(r: libc::c_int) -> io::Result<()> {
    if r == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(r)) }
}

/// The spawn's attributes and descriptor actions, destroyed on drop.
struct Actions {
    fa: libc::posix_spawn_file_actions_t,
    attr: libc::posix_spawnattr_t,
}

impl Actions {
    fn new() -> io::Result<Box<Actions>> {
        // SAFETY: both are plain C structs, initialised by their init calls
        // before any other use; boxed so their address never changes.
        unsafe {
            let mut a: Box<Actions> = Box::new(std::mem::zeroed());
            check(libc::posix_spawn_file_actions_init(&mut a.fa))?;
            if let Err(e) = check(libc::posix_spawnattr_init(&mut a.attr)) {
                libc::posix_spawn_file_actions_destroy(&mut a.fa);
                return Err(e);
            }
            Ok(a)
        }
    }

    /// Descriptor `to` of the child: `from`'s file, or /dev/null.
    fn put(&mut self, to: RawFd, from: Option<&OwnedFd>, write: bool) -> io::Result<()> {
        static NULL: &std::ffi::CStr = c"/dev/null";
        // SAFETY: the actions were initialised; the path is a static C string.
        unsafe {
            match from {
                Some(fd) => check(libc::posix_spawn_file_actions_adddup2(&mut self.fa, fd.as_raw_fd(), to)),
                None => {
                    let flags = if write { libc::O_WRONLY } else { libc::O_RDONLY };
                    check(libc::posix_spawn_file_actions_addopen(&mut self.fa, to, NULL.as_ptr(), flags, 0))
                }
            }
        }
    }
}

impl Drop for Actions {
    fn drop(&mut self) {
        // SAFETY: both were initialised in `new` and are destroyed once.
        unsafe {
            libc::posix_spawn_file_actions_destroy(&mut self.fa);
            libc::posix_spawnattr_destroy(&mut self.attr);
        }
    }
}

/// The relay program a sandboxed spawn starts through: its path in this
/// process (`/proc/self/fd/N`), and the process limit's `tasks` for
/// it to join, where there is one.
#[derive(Clone, Copy)]
pub struct Relay<'a> {
    pub source: &'a std::ffi::CStr,
    pub cgroup: Option<std::os::fd::BorrowedFd<'a>>,
}

/// Start `program` (an absolute path) with `args`, no environment, in `cwd`,
/// in a process group of its own, with default signal handling and an empty
/// signal mask: /dev/null on 0 and 1, `stderr` on 2, `stdin` on 3,
/// `stdout` on 4 and, given, the relay program (`relay`, a path) on
/// `super::relay::FD`. Returns its pid and the parent's ends of the pipes.
pub fn relayed(
    program: &Path,
    args: &[OsString],
    cwd: &Path,
    stdin: Io,
    stdout: Io,
    stderr: Io,
    relay: Option<Relay<'_>>,
) -> io::Result<(u32, Ends)> {
    let path = cstring(program.as_os_str())?;
    let mut argv_c = vec![path.clone()];
    for a in args {
        argv_c.push(cstring(a)?);
    }
    let mut argv: Vec<*mut libc::c_char> = argv_c.iter().map(|c| c.as_ptr() as *mut libc::c_char).collect();
    argv.push(std::ptr::null_mut());
    let mut envp: [*mut libc::c_char; 1] = [std::ptr::null_mut()];
    let dir = cstring(cwd.as_os_str())?;

    let piped = |io: Io| if io == Io::Piped { pipe().map(Some) } else { Ok(None) };
    let (inp, out, err) = (piped(stdin)?, piped(stdout)?, piped(stderr)?);
    let mut a = Actions::new()?;
    a.put(3, inp.as_ref().map(|(r, _)| r), false)?;
    a.put(4, out.as_ref().map(|(_, w)| w), true)?;
    a.put(0, None, false)?;
    a.put(1, None, true)?;
    a.put(2, err.as_ref().map(|(_, w)| w), true)?;
    // Last, so no descriptor above is still to be moved: the relay program
    // (`/proc/self/fd/N` of its memfd) opened afresh on its descriptor.
    if let Some(Relay { source, .. }) = relay {
        // SAFETY: the actions were initialised; the path outlives posix_spawn.
        check(unsafe {
            libc::posix_spawn_file_actions_addopen(&mut a.fa, super::relay::FD, source.as_ptr(), libc::O_RDONLY, 0)
        })?;
    }
    // The process limit's `tasks` for the relay to join (a descriptor of 10 or more: no
    // action above reads it after it is put on 6).
    if let Some(fd) = relay.and_then(|r| r.cgroup) {
        // SAFETY: the actions were initialised; the descriptor outlives posix_spawn.
        check(unsafe { libc::posix_spawn_file_actions_adddup2(&mut a.fa, fd.as_raw_fd(), super::relay::CGROUP_FD) })?;
    }
    let mut pid: libc::pid_t = 0;
    // SAFETY: every pointer handed over (actions, attributes, signal sets,
    // argv, envp, paths) lives until posix_spawn returns; argv and envp end
    // with a null pointer.
    unsafe {
        check(libc::posix_spawn_file_actions_addchdir_np(&mut a.fa, dir.as_ptr()))?;
        let mut none: libc::sigset_t = std::mem::zeroed();
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigfillset(&mut all);
        check(libc::posix_spawnattr_setsigmask(&mut a.attr, &none))?;
        check(libc::posix_spawnattr_setsigdefault(&mut a.attr, &all))?;
        check(libc::posix_spawnattr_setpgroup(&mut a.attr, 0))?;
        let flags = libc::POSIX_SPAWN_SETPGROUP | libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF;
        check(libc::posix_spawnattr_setflags(&mut a.attr, flags as libc::c_short))?;
        check(libc::posix_spawn(&mut pid, path.as_ptr(), &a.fa, &a.attr, argv.as_ptr(), envp.as_mut_ptr()))?;
    }
    // The child's ends close here, in the parent.
    Ok((pid as u32, Ends { stdin: inp.map(|(_, w)| w), stdout: out.map(|(r, _)| r), stderr: err.map(|(r, _)| r) }))
}
