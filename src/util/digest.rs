//! Content hashes written to manifests and cache keys.

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex SHA-256 of a regular file and its length, read a chunk at a
/// time and opened without following a symlink (`O_NOFOLLOW`).
pub fn sha256_file(path: &std::path::Path) -> std::io::Result<(String, u64)> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let (mut h, mut buf, mut n) = (Sha256::new(), vec![0u8; 1 << 16], 0u64);
    loop {
        match f.read(&mut buf)? {
            0 => return Ok((hex(&h.finalize()), n)),
            k => {
                h.update(&buf[..k]);
                n += k as u64;
            }
        }
    }
}

/// Lowercase hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `n` bytes from the operating system's random source (getrandom(2)), as
/// lowercase hex: for what must not be guessed (a trial's proxy key, its MCP
/// URL), where a fast generator whose outputs predict the next ones will not do.
pub fn random_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    let mut filled = 0;
    while filled < n {
        // SAFETY: getrandom writes at most `n - filled` bytes into our buffer.
        let r = unsafe { libc::getrandom(buf[filled..].as_mut_ptr().cast(), n - filled, 0) };
        if r > 0 {
            filled += r as usize;
        } else if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            // No getrandom (a kernel before 3.17): the device it reads.
            use std::io::Read;
            if let Ok(mut f) = std::fs::File::open("/dev/urandom")
                && f.read_exact(&mut buf[filled..]).is_ok()
            {
                break;
            }
            panic!("no random source: getrandom(2) and /dev/urandom both failed");
        }
    }
    hex(&buf)
}
