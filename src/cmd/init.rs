//! `evalua init [DIR]`: write a starting project (SPEC §16) that `evalua run`
//! and `evalua test` accept as is: a suite with one tool, one case and a
//! fixture; a Python agent speaking the JSON Lines protocol; a grader with
//! its `evalua test` examples; `.luarc.json` pointing lua-language-server at
//! evalua's Lua types (written into `.evalua/types/`, the ones of this very
//! binary); a GitHub workflow that runs the suite with evalua's action.
//!
//! The files are embedded in the binary (`templates/init/`, `types/`), so a
//! pip-installed evalua writes the same project as a source build. Nothing
//! is ever overwritten: when one of the files exists already, `init` says
//! which and writes none (exit 2). `.gitignore` is the exception: the lines
//! it lacks are appended. Nothing is written through a symlink or into a
//! special file (a FIFO is refused, not waited on): DIR may be a folder
//! someone else prepared.

use std::path::Path;

use crate::error::{Error, Result};

/// Where the workflow takes evalua's action from, unless `--action` says
/// otherwise: the copy `init` writes into the project (the action and its
/// script, embedded in this binary), so the workflow names nothing to fill in.
pub const DEFAULT_ACTION: &str = "./.github/actions/evalua";

/// (path in the project, contents).
const FILES: &[(&str, &str)] = &[
    ("evalua.toml", include_str!("../../templates/init/evalua.toml")),
    ("suites/tickets.lua", include_str!("../../templates/init/suites/tickets.lua")),
    ("suites/fixtures/schema.sql", include_str!("../../templates/init/suites/fixtures/schema.sql")),
    ("suites/fixtures/tickets.sql", include_str!("../../templates/init/suites/fixtures/tickets.sql")),
    ("agents/agent.py", include_str!("../../templates/init/agents/agent.py")),
    ("graders/tickets.lua", include_str!("../../templates/init/graders/tickets.lua")),
    ("graders/tickets_test.lua", include_str!("../../templates/init/graders/tickets_test.lua")),
    (".luarc.json", include_str!("../../templates/init/.luarc.json")),
    (".github/workflows/evalua.yml", include_str!("../../templates/init/.github/workflows/evalua.yml")),
    (".github/actions/evalua/action.yml", include_str!("../../action.yml")),
    (".github/actions/evalua/action/evalua_action.py", include_str!("../../action/evalua_action.py")),
    (".evalua/types/evalua.lua", include_str!("../../types/evalua.lua")),
    (".evalua/types/evalua/check.lua", include_str!("../../types/evalua/check.lua")),
    (".evalua/types/evalua/host.lua", include_str!("../../types/evalua/host.lua")),
    (".evalua/types/evalua/judge.lua", include_str!("../../types/evalua/judge.lua")),
    (".evalua/types/evalua/tools.lua", include_str!("../../types/evalua/tools.lua")),
];

const GITIGNORE: &str = include_str!("../../templates/init/.gitignore");

/// The Lua type files shipped with this binary (path under `types/`, contents):
/// the test that keeps `FILES` complete compares them with the `types/` folder.
pub fn embedded_types() -> impl Iterator<Item = (&'static str, &'static str)> {
    FILES.iter().filter_map(|(p, c)| p.strip_prefix(".evalua/types/").map(|p| (p, *c)))
}

pub fn init(dir: &Path, action: &str) -> Result<u8> {
    if action.trim().is_empty() || action.contains(char::is_whitespace) {
        return Err(Error::Input(format!("--action {action:?}: give an action reference like owner/repo@ref")));
    }
    if dir.exists() && !dir.is_dir() {
        return Err(Error::Input(format!("{}: exists and is not a folder", dir.display())));
    }
    let existing: Vec<&str> =
        FILES.iter().map(|(p, _)| *p).filter(|p| dir.join(p).symlink_metadata().is_ok()).collect();
    if !existing.is_empty() {
        return Err(Error::Input(format!(
            "{}: already holds {} of the files evalua init writes ({}); nothing written",
            dir.display(),
            existing.len(),
            existing.join(", ")
        )));
    }
    // Nothing is written through a symlink nor into a special file: every
    // path below DIR is checked before the first write, folders are created
    // one by one, files with O_CREAT|O_EXCL (which follows no link).
    for (rel, _) in FILES {
        no_link(dir, rel, false)?;
    }
    let gi = no_link(dir, ".gitignore", true)?;
    let old = match &gi {
        Some(f) => read_regular(f, &dir.join(".gitignore"))?,
        None => String::new(),
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::Environment(format!("{}: cannot create: {e}", dir.display())))?;
    for (rel, text) in FILES {
        // The action's own files are written as they are; the workflow gets the action and this evalua's version.
        let text = if rel.ends_with(".github/workflows/evalua.yml") {
            text.replace("{{ACTION}}", action).replace("{{VERSION}}", env!("CARGO_PKG_VERSION"))
        } else {
            text.to_string()
        };
        let mode = if rel.ends_with(".py") { 0o755 } else { 0o644 };
        create(dir, rel, text.as_bytes(), mode)?;
    }
    // .gitignore: the lines it lacks, appended.
    let missing: Vec<&str> =
        GITIGNORE.lines().filter(|l| !l.is_empty() && !old.lines().any(|o| o.trim() == *l)).collect();
    if !missing.is_empty() {
        let mut text = String::new();
        if !old.is_empty() && !old.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&missing.join("\n"));
        text.push('\n');
        match gi {
            Some(mut f) => {
                use std::io::Write;
                f.write_all(text.as_bytes()).map_err(|e| {
                    Error::Environment(format!("{}: cannot write: {e}", dir.join(".gitignore").display()))
                })?;
            }
            None => create(dir, ".gitignore", text.as_bytes(), 0o644)?,
        }
    }

    let shown = crate::util::paths::display_path(dir);
    let cd = if shown.is_empty() || shown == "." { String::new() } else { format!("cd {shown} && ") };
    println!("wrote a starting project in {}:", if shown.is_empty() { "." } else { &shown });
    for (rel, _) in FILES.iter().filter(|(p, _)| !p.starts_with(".evalua/types/")) {
        println!("  {rel}");
    }
    println!("  .evalua/types/          Lua types of this evalua, for lua-language-server (.luarc.json)");
    println!("  .gitignore              (runs/ and the judge cache left out)");
    println!();
    println!("next:");
    println!("  {cd}evalua run suites/tickets.lua     # 1 case × 3 trials; the agent is agents/agent.py (python3)");
    println!("  {cd}evalua test                       # the grader's examples in graders/tickets_test.lua");
    println!("Agents run in a bubblewrap sandbox (apt-get install bubblewrap), or pass --isolation none.");
    println!("The CI workflow uses the action {action} (.github/workflows/evalua.yml).");
    Ok(0)
}

/// Check `rel` below `dir` before anything is written: no part of it is a
/// symlink, its folders are folders, and the file is absent, or, with
/// `existing_ok`, a regular file, then opened (without following a link or
/// waiting on a FIFO) for appending.
fn no_link(dir: &Path, rel: &str, existing_ok: bool) -> Result<Option<std::fs::File>> {
    let parts: Vec<_> = Path::new(rel).components().collect();
    let mut cur = dir.to_path_buf();
    for (i, c) in parts.iter().enumerate() {
        cur.push(c);
        let last = i + 1 == parts.len();
        let refuse = |why: &str| Err(Error::Input(format!("{}: {why}: evalua init writes nothing", cur.display())));
        match cur.symlink_metadata() {
            Err(_) => return Ok(None),
            Ok(m) if m.file_type().is_symlink() => return refuse("a symlink (init never writes through one)"),
            Ok(m) if !last && !m.is_dir() => return refuse("not a folder"),
            Ok(m) if last && !(existing_ok && m.is_file()) => {
                return refuse(if m.is_file() { "exists" } else { "not a regular file" });
            }
            Ok(_) => {}
        }
    }
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&cur)
        .map(Some)
        .map_err(|e| Error::Input(format!("{}: {e}: evalua init writes nothing", cur.display())))
}

/// A regular file's text, read from its open descriptor (at most 16 MiB).
fn read_regular(f: &std::fs::File, path: &Path) -> Result<String> {
    use std::io::Read;
    let mut text = String::new();
    f.take(16 << 20)
        .read_to_string(&mut text)
        .map_err(|e| Error::Input(format!("{}: cannot read: {e}", path.display())))?;
    Ok(text)
}

/// Create `rel` below `dir`: its folders one by one (an existing one must
/// be a folder, not a link), then the file itself, new (`O_EXCL`).
fn create(dir: &Path, rel: &str, bytes: &[u8], mode: u32) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let env = |p: &Path, e: &dyn std::fmt::Display| Error::Environment(format!("{}: cannot write: {e}", p.display()));
    let path = dir.join(rel);
    let mut cur = dir.to_path_buf();
    for c in Path::new(rel).parent().into_iter().flat_map(|p| p.components()) {
        cur.push(c);
        match std::fs::create_dir(&cur) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if !cur.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                    return Err(env(&cur, &"not a folder (or a symlink)"));
                }
            }
            Err(e) => return Err(env(&cur, &e)),
        }
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| env(&path, &e))?;
    f.write_all(bytes).map_err(|e| env(&path, &e))
}
