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
//! it lacks are appended.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Where the workflow takes evalua's action from, unless `--action` says otherwise.
pub const DEFAULT_ACTION: &str = "evalua/evalua@v0";

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
    let write = |rel: &str, text: &str| -> Result<PathBuf> {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::Environment(format!("{}: cannot create: {e}", parent.display())))?;
        }
        std::fs::write(&path, text)
            .map_err(|e| Error::Environment(format!("{}: cannot write: {e}", path.display())))?;
        Ok(path)
    };
    for (rel, text) in FILES {
        let text = text.replace("{{ACTION}}", action);
        let path = write(rel, &text)?;
        if rel.ends_with(".py") {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755));
        }
    }
    // .gitignore: the lines it lacks, appended.
    let gi = dir.join(".gitignore");
    let old = std::fs::read_to_string(&gi).unwrap_or_default();
    let missing: Vec<&str> =
        GITIGNORE.lines().filter(|l| !l.is_empty() && !old.lines().any(|o| o.trim() == *l)).collect();
    if !missing.is_empty() {
        let mut text = old.clone();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&missing.join("\n"));
        text.push('\n');
        write(".gitignore", &text)?;
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
