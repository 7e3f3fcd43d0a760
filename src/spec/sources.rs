//! The source files a suite is made of (the suite file and the project
//! modules it requires), read once per run and shared by every Lua state,
//! so each file is read from disk once and its hash can go into the manifest.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::util::digest::sha256_hex;
use crate::util::paths::display_path;

#[derive(Default, Debug)]
pub struct Sources {
    files: Mutex<HashMap<PathBuf, Arc<SourceFile>>>,
}

#[derive(Debug)]
pub struct SourceFile {
    pub path: PathBuf,
    pub display: String,
    pub text: Arc<str>,
    pub sha256: String,
}

impl Sources {
    pub fn get(&self, path: &Path) -> std::io::Result<Arc<SourceFile>> {
        if let Some(f) = self.files.lock().unwrap_or_else(|p| p.into_inner()).get(path) {
            return Ok(f.clone());
        }
        let bytes = std::fs::read(path)?;
        if bytes.starts_with(b"\x1bLua") {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "compiled Lua bytecode: evalua loads only Lua source text",
            ));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|b| **b == b'\n').count();
            std::io::Error::new(std::io::ErrorKind::InvalidData, format!("line {line}: not UTF-8 text"))
        })?;
        let file = Arc::new(SourceFile {
            path: path.to_path_buf(),
            display: display_path(path),
            sha256: sha256_hex(text.as_bytes()),
            text: text.into(),
        });
        self.files.lock().unwrap_or_else(|p| p.into_inner()).insert(path.to_path_buf(), file.clone());
        Ok(file)
    }

    /// Every file read so far, sorted by path.
    pub fn all(&self) -> Vec<Arc<SourceFile>> {
        let mut v: Vec<_> = self.files.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        v
    }
}
