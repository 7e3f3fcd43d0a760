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
            copy_file(&e.path(), &dest)?;
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
            copy_file(&e.path(), &dest)?;
        }
    }
    Ok(())
}

/// Bytes read or compared at a time: memory never depends on a file's size.
const CHUNK: usize = 64 * 1024;

/// A file's sha256, read a chunk at a time, and its length.
pub fn hash_file(p: &Path) -> std::io::Result<([u8; 32], u64)> {
    use std::io::Read;
    let mut f = std::fs::File::open(p)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf)?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        n += k as u64;
    }
    Ok((h.finalize().into(), n))
}

/// Whether two regular files hold the same bytes: their lengths, then their
/// contents a chunk at a time (stopping at the first difference).
pub fn same_content(a: &Path, b: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    if std::fs::metadata(a)?.len() != std::fs::metadata(b)?.len() {
        return Ok(false);
    }
    let (mut fa, mut fb) = (std::fs::File::open(a)?, std::fs::File::open(b)?);
    let (mut ba, mut bb) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    loop {
        let k = fa.read(&mut ba)?;
        if k == 0 {
            // Equal lengths: b is at its end too, unless it grew meanwhile.
            return Ok(fb.read(&mut bb[..1])? == 0);
        }
        fb.read_exact(&mut bb[..k]).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", b.display())))?;
        if ba[..k] != bb[..k] {
            return Ok(false);
        }
    }
}

/// Copy a regular file with its permissions, writing only its data: the
/// holes of a sparse file stay holes (`truncate -s 100G` in a work dir
/// costs no disk in each copy), found with SEEK_DATA / SEEK_HOLE; the data
/// between them goes through `copy_file_range`, or reads and writes where
/// the kernel or the file system has neither.
pub fn copy_file(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::fd::AsRawFd;
    let mut src = std::fs::File::open(from)?;
    let meta = src.metadata()?;
    let len = meta.len();
    let mut dst = std::fs::File::create(to)?;
    dst.set_len(len)?;
    let (sfd, dfd) = (src.as_raw_fd(), dst.as_raw_fd());
    let mut pos: i64 = 0;
    let mut buf: Vec<u8> = Vec::new();
    while (pos as u64) < len {
        // SAFETY: lseek only moves the offset of a descriptor we own.
        let data = unsafe { libc::lseek(sfd, pos, libc::SEEK_DATA) };
        if data < 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::ENXIO) => break, // only a hole is left
                Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) if pos == 0 => {
                    // No SEEK_DATA here: copy it whole.
                    drop((src, dst));
                    std::fs::copy(from, to)?;
                    return Ok(());
                }
                _ => return Err(std::io::Error::last_os_error()),
            }
        }
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(sfd, data, libc::SEEK_HOLE) };
        let end = if hole < 0 { len as i64 } else { hole.min(len as i64) };
        let (mut off_in, mut off_out) = (data, data);
        while off_in < end {
            let want = (end - off_in) as usize;
            // SAFETY: both descriptors are ours and open; the offsets are locals.
            let n = unsafe { libc::copy_file_range(sfd, &mut off_in, dfd, &mut off_out, want, 0) };
            if n > 0 {
                continue;
            }
            if n == 0 {
                break; // the file shrank meanwhile
            }
            // No copy_file_range across these files: read and write this range.
            if buf.is_empty() {
                buf = vec![0u8; CHUNK];
            }
            src.seek(SeekFrom::Start(off_in as u64))?;
            dst.seek(SeekFrom::Start(off_out as u64))?;
            while off_in < end {
                let k = src.read(&mut buf[..CHUNK.min((end - off_in) as usize)])?;
                if k == 0 {
                    break;
                }
                dst.write_all(&buf[..k])?;
                off_in += k as i64;
            }
            break;
        }
        pos = end;
    }
    dst.set_permissions(meta.permissions())?;
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
                h.update(hash_file(&root.join(&rel))?.0);
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
    fn a_sparse_file_is_copied_sparse_and_hashed_and_compared_in_chunks() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("c"));
        // 1 GiB apparent, a few bytes of data in the middle and at the end.
        let f = std::fs::File::create(&a).unwrap();
        f.set_len(1 << 30).unwrap();
        use std::os::unix::fs::FileExt;
        f.write_at(b"middle", 1 << 29).unwrap();
        f.write_at(b"end", (1 << 30) - 3).unwrap();
        drop(f);
        copy_file(&a, &b).unwrap();
        let (ma, mb) = (std::fs::metadata(&a).unwrap(), std::fs::metadata(&b).unwrap());
        assert_eq!(mb.len(), 1 << 30);
        assert!(mb.blocks() * 512 <= ma.blocks() * 512 + (1 << 20), "the copy stays sparse: {} blocks", mb.blocks());
        assert!(same_content(&a, &b).unwrap());
        assert_eq!(hash_file(&a).unwrap(), hash_file(&b).unwrap());
        std::fs::write(&c, b"short").unwrap();
        assert!(!same_content(&a, &c).unwrap());
        let mut buf = vec![0u8; 6];
        std::fs::File::open(&b).unwrap().read_exact_at(&mut buf, 1 << 29).unwrap();
        assert_eq!(&buf, b"middle");
    }

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
