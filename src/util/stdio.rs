//! Standard output kept for a machine: with `--json` (and under `evalua mcp`)
//! stdout must carry exactly one JSON document (or the MCP protocol), while
//! every human line — printed anywhere, by evalua or by a process it starts
//! with an inherited stdout — goes to stderr.
//!
//! [`divert`] does that at the file-descriptor level, so no `println!` can
//! slip through: the original stdout is duplicated onto a new descriptor
//! (close-on-exec, so child processes never see it) that only the caller
//! writes to, and descriptor 1 is made a copy of descriptor 2.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::FromRawFd;

/// Move the process's stdout aside and point descriptor 1 at stderr. Returns
/// the original stdout, for the machine's output only.
pub fn divert() -> io::Result<File> {
    io::stdout().flush()?;
    // SAFETY: plain descriptor calls on descriptors this process owns; the
    // duplicate is owned by the File returned and by nothing else.
    unsafe {
        let saved = libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3);
        if saved < 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::dup2(2, 1) < 0 {
            let e = io::Error::last_os_error();
            libc::close(saved);
            return Err(e);
        }
        Ok(File::from_raw_fd(saved))
    }
}
