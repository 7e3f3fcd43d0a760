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

/// The exit code a command ends with when its reader goes away (a closed
/// pipe: `evalua show … | head`): 0, or what the command already decided
/// (a run whose gates failed says 1 before it prints its summary).
static CLOSED_EXIT: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// From now on, a closed stdout ends the process with `code`.
pub fn exit_if_closed(code: u8) {
    CLOSED_EXIT.store(code, std::sync::atomic::Ordering::Relaxed);
}

/// The code [`exit_if_closed`] set (0 unless a command said otherwise).
pub fn closed_exit() -> u8 {
    CLOSED_EXIT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether a panic's message is std's failure to print on a closed pipe
/// (`print!`/`eprint!` panic on EPIPE: Rust ignores SIGPIPE, so the write
/// fails instead of the process being killed).
pub fn is_closed_pipe(message: &str) -> bool {
    let epipe = io::Error::from_raw_os_error(libc::EPIPE).to_string();
    (message.starts_with("failed printing to stdout") || message.starts_with("failed printing to stderr"))
        && message.contains(&epipe)
}

/// Whether an error writing to stdout is its reader having gone away.
pub fn is_closed(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_print_on_a_closed_pipe_is_told_from_other_panics() {
        let epipe = std::io::Error::from_raw_os_error(libc::EPIPE);
        assert!(super::is_closed_pipe(&format!("failed printing to stdout: {epipe}")));
        assert!(super::is_closed_pipe(&format!("failed printing to stderr: {epipe}")));
        assert!(!super::is_closed_pipe("failed printing to stdout: No space left on device (os error 28)"));
        assert!(!super::is_closed_pipe(&format!("index out of bounds {epipe}")));
    }
}
