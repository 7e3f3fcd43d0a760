//! docs/reference/cli.md against the binary's own `--help` (issue 44 step 5):
//! every command has its section, and every flag of a command (and of its
//! subcommands) is named in that section, or in the shared `--json` section.
//! A flag added without its line in the reference fails here.

use std::collections::BTreeMap;

use regex::Regex;

use crate::common::*;

/// The sections of the reference, by command (`## \`evalua NAME\``), with their text.
fn sections(doc: &str) -> (BTreeMap<String, String>, String) {
    let head = Regex::new(r"^## `evalua ([\w-]+)`").unwrap();
    let (mut out, mut shared) = (BTreeMap::new(), String::new());
    let mut cur: Option<String> = None;
    let mut in_shared = false;
    for line in doc.lines() {
        if let Some(m) = head.captures(line) {
            cur = Some(m[1].to_string());
            out.insert(m[1].to_string(), String::new());
            in_shared = false;
            continue;
        }
        if line.starts_with("## ") {
            cur = None;
            in_shared = line.contains("--json");
            continue;
        }
        if let Some(c) = &cur {
            let text = out.get_mut(c).unwrap();
            text.push_str(line);
            text.push('\n');
        } else if in_shared {
            shared.push_str(line);
            shared.push('\n');
        }
    }
    (out, shared)
}

/// The subcommands a `--help` lists (without `help`).
fn commands(help: &str) -> Vec<String> {
    let Some(list) = help.split("Commands:").nth(1) else { return Vec::new() };
    let list = list.split("Options:").next().unwrap_or("");
    let name = Regex::new(r"(?m)^  ([\w-]+)\s{2,}").unwrap();
    name.captures_iter(list).map(|c| c[1].to_string()).filter(|c| c != "help").collect()
}

fn help(args: &[&str]) -> String {
    let o = bin().args(args).arg("--help").output().unwrap();
    assert!(o.status.success(), "{args:?} --help: {}", stderr(&o));
    stdout(&o)
}

#[test]
fn the_cli_reference_names_every_command_and_every_flag() {
    let doc = std::fs::read_to_string(repo().join("docs/reference/cli.md")).unwrap();
    let (secs, shared) = sections(&doc);
    let flag = Regex::new(r"(--[a-z][a-z0-9-]*)").unwrap();
    let top = commands(&help(&[]));
    assert!(top.len() > 15 && top.contains(&"run".to_string()), "{top:?}");
    let mut missing = Vec::new();
    for c in &top {
        let Some(text) = secs.get(c) else {
            missing.push(format!("no section `evalua {c}`"));
            continue;
        };
        let own = help(&[c]);
        let mut helps = vec![own.clone()];
        helps.extend(commands(&own).iter().map(|s| help(&[c, s])));
        for h in &helps {
            for f in flag.find_iter(h).map(|m| m.as_str()) {
                // The flag as a whole word: `--case` is not documented by `--cases`.
                let word = Regex::new(&format!(r"{}([^a-z0-9-]|$)", regex::escape(f))).unwrap();
                let documented = word.is_match(text) || word.is_match(&shared);
                if !["--help", "--version"].contains(&f) && !documented && !missing.iter().any(|m| m.ends_with(f)) {
                    missing.push(format!("evalua {c}: {f}"));
                }
            }
        }
    }
    // And no section for a command that is gone.
    for s in secs.keys().filter(|s| !top.contains(s)) {
        missing.push(format!("a section for `evalua {s}`, which is no command"));
    }
    assert!(missing.is_empty(), "docs/reference/cli.md lacks (or has too much):\n{}", missing.join("\n"));
}

/// The check itself fails on a reference that lacks a flag (a check never seen to fail proves nothing).
#[test]
fn the_reference_check_sees_a_missing_flag() {
    let (secs, _) = sections("## `evalua run`\nuse --trials N\n## Output for machines: `--json`\nx\n");
    assert!(secs["run"].contains("--trials") && !secs["run"].contains("--jobs"));
    assert_eq!(commands("Commands:\n  run   Run\n  help  Help\nOptions:\n"), vec!["run"]);
}
