//! The relay program (src/process/relay.c, built by build.rs) that a
//! sandboxed command starts through, instead of `/bin/sh -c RELAY`: the
//! same three steps (3 on 0, 4 on 1, exec), without a dynamically linked
//! shell's loading (issue 24: the sandbox's cost per trial).
//!
//! It reaches the sandbox without touching the disk: its bytes sit in a
//! sealed memfd made once per process; each spawn opens that memfd afresh on
//! descriptor [`FD`] (a new open file, so concurrent spawns do not share an
//! offset), and bubblewrap copies it to [`PATH`] inside the sandbox
//! (`--perms 0555 --ro-bind-data`, bubblewrap 0.5 or later). The relay
//! closes [`FD`] before it runs the program.

use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;

/// The relay's bytes; empty where build.rs could not build it.
static BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/relay"));

/// Where the relay is inside the sandbox.
pub const PATH: &str = "/.evalua-relay";

/// The descriptor bubblewrap reads the relay from.
pub const FD: i32 = 5;

/// The descriptor the relay joins its process limit's cgroup through (`c` in its limits word).
pub const CGROUP_FD: i32 = 6;

/// The relay's first argument: the process limit it applies before it
/// becomes the program (relay.c): join the cgroup on [`CGROUP_FD`], and/or
/// RLIMIT_NPROC = `nproc` (in the sandbox's own user namespace only, where
/// processes are counted per namespace).
pub fn limits_word(cgroup: bool, nproc: Option<u32>) -> String {
    let mut w = String::new();
    if cgroup {
        w.push('c');
    }
    if let Some(n) = nproc {
        w.push_str(&format!("n{n}"));
    }
    if w.is_empty() { "-".into() } else { w }
}

/// `/proc/self/fd/N` of the sealed memfd holding the relay, or None when
/// there is no relay to use (not built here, or no memfd): the shell line
/// is used instead.
pub fn source() -> Option<&'static CString> {
    static SOURCE: OnceLock<Option<(OwnedFd, CString)>> = OnceLock::new();
    SOURCE.get_or_init(make).as_ref().map(|(_, path)| path)
}

fn make() -> Option<(OwnedFd, CString)> {
    if BYTES.is_empty() {
        return None;
    }
    // SAFETY: memfd_create takes a static C string and flags, and returns a
    // new descriptor that we then own.
    let raw = unsafe { libc::memfd_create(c"evalua-relay".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if raw < 0 {
        return None;
    }
    // Moved above the descriptors a spawn's actions write (0–5): were the
    // memfd itself on 5, opening `/proc/self/fd/5` onto 5 would first close it.
    // SAFETY: fcntl duplicates a descriptor we own; `raw` is closed once.
    let high = unsafe {
        let high = libc::fcntl(raw, libc::F_DUPFD_CLOEXEC, 10);
        libc::close(raw);
        high
    };
    if high < 0 {
        return None;
    }
    // SAFETY: `high` was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(high) };
    let mut file = std::fs::File::from(fd);
    file.write_all(BYTES).ok()?;
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on a descriptor we own.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return None;
    }
    let fd = OwnedFd::from(file);
    let path = CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()?;
    // A spawn opens this path; where /proc does not show it, use the shell.
    std::fs::File::open(path.to_str().ok()?).ok()?;
    Some((fd, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relay_is_built_and_readable_through_its_memfd() {
        // The CI machines are x86_64 Linux with gcc: the relay must be there,
        // or every sandboxed command silently pays for a shell again.
        assert!(!BYTES.is_empty(), "build.rs did not build the relay");
        assert_eq!(&BYTES[..4], b"\x7fELF");
        let path = source().expect("a memfd for the relay");
        // Never on a descriptor a spawn's actions write (0–5).
        let n: i32 = path.to_str().unwrap().rsplit('/').next().unwrap().parse().unwrap();
        assert!(n >= 10, "the relay's memfd is on {n}");
        let read = std::fs::read(path.to_str().unwrap()).unwrap();
        assert_eq!(read, BYTES);
        // Sealed: nobody in this process can change what sandboxes run.
        let w = std::fs::OpenOptions::new().write(true).open(path.to_str().unwrap());
        assert!(w.is_err() || std::io::Write::write_all(&mut w.unwrap(), b"x").is_err());
    }
}
