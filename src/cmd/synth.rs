//! `evalua synth SUITE --from FILE… --into FILE.lua [--n N] [--families F,…]
//! [--model M] [--json]` (SPEC §23): ask an OpenAI-compatible model (the
//! judges' client and model options) for drafted cases from requirement
//! files, validate each (`synth::validate`), and add the valid ones to the
//! module FILE.lua, pending a person's review. Every draft is listed with its
//! fate. An answer that is not drafts stops the command (exit 2) and writes
//! nothing.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::flags;
use crate::error::{Error, Result};
use crate::judge::client::{self, Request};
use crate::lua::load;
use crate::spec::{ModelSpec, Suite};
use crate::synth::checked::{Checked, Context, Fate};
use crate::synth::validate;
use crate::synth::{draft, inputs, module, prompt};
use crate::util::paths::display_path;

/// `evalua synth`'s flags.
#[derive(clap::Args, Debug)]
pub struct SynthArgs {
    #[command(flatten)]
    pub machine: flags::Machine,
    #[arg(value_name = "SUITE.lua")]
    pub suite: PathBuf,
    /// Requirement files (product requirements, policies, state machines): sent to the model as they are
    #[arg(long, required = true, num_args = 1.., value_name = "FILE")]
    pub from: Vec<PathBuf>,
    /// The module of drafted cases to create or add to (declare it with suite:cases(require("…")))
    #[arg(long, value_name = "FILE.lua")]
    pub into: PathBuf,
    /// How many cases to ask for
    #[arg(long, value_name = "N", default_value_t = 7, value_parser = flags::positive)]
    pub n: u32,
    /// The failure families to cover (default: happy, wrong_permissions, missing_identity_check,
    /// stale_tool_result, ambiguous_date, rate_limit_retry, contradictory_tool_output)
    #[arg(long, value_name = "F,…", value_delimiter = ',')]
    pub families: Vec<String>,
    /// The model (OpenAI-compatible; base URL and key as for judges: EVALUA_OPENAI_BASE_URL, OPENAI_API_KEY);
    /// default: the suite's first judge model, else EVALUA_OPENAI_MODEL
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
}

/// The model options: the suite's first judge's (as judges'), the name from `--model`.
fn model_spec(suite: &Suite, model: Option<&str>) -> ModelSpec {
    let mut spec = suite
        .judges
        .iter()
        .find_map(|j| match &j.spec {
            crate::spec::JudgeSpec::Rubric { models, .. } | crate::spec::JudgeSpec::Pairwise { models, .. } => {
                models.first().cloned()
            }
            _ => None,
        })
        .unwrap_or_default();
    if let Some(m) = model {
        spec.model = Some(m.to_string());
    }
    spec
}

/// Ask the model; the drafts, the model's name, or why there are none (exit 2).
fn ask(suite: &Suite, model: Option<&str>, p: &prompt::Prompt) -> Result<(Vec<draft::Draft>, String)> {
    let spec = model_spec(suite, model);
    let judge = crate::judge::resolve::resolve(&spec).map_err(|e| Error::Input(format!("evalua synth: {e}")))?;
    let req =
        Request { name: draft::SCHEMA_NAME, system: p.system.clone(), user: p.user.clone(), schema: draft::schema() };
    let reply = client::ask(&judge, &req).map_err(|e| {
        let first = e.message.lines().next().unwrap_or("").to_string();
        match first.strip_prefix("the judge's answer is not JSON ") {
            Some(rest) => Error::Input(format!("evalua synth: {}", draft::ShapeError::NotJson(rest.to_string()))),
            None => Error::Environment(format!("evalua synth: {}", first.replace("judge call", "model call"))),
        }
    })?;
    let drafts = draft::parse(&reply.answer).map_err(|e| Error::Input(format!("evalua synth: {e}")))?;
    Ok((drafts, judge.endpoint.model.clone()))
}

pub fn synth(a: SynthArgs) -> Result<u8> {
    let suite = load::load(&a.suite)?;
    let into = std::path::absolute(&a.into).map_err(|e| Error::Input(format!("{}: {e}", a.into.display())))?;
    if into.extension().is_none_or(|e| e != "lua") {
        return Err(Error::Input(format!("--into {}: the module must be a .lua file", display_path(&into))));
    }
    let existing = module::read(&into)?;
    let families: Vec<String> = if a.families.is_empty() {
        draft::DEFAULT_FAMILIES.iter().map(|f| f.to_string()).collect()
    } else {
        a.families.iter().map(|f| f.trim().to_string()).filter(|f| !f.is_empty()).collect()
    };
    let p = prompt::build(&suite, &a.from, &families, a.n)?;
    let sha = p.sha256();
    let (drafts, model) = ask(&suite, a.model.as_deref(), &p)?;
    let source =
        json!({ "kind": "synthetic", "model": model, "prompt_sha256": sha, "at": jiff::Timestamp::now().to_string() });
    let suite_inputs = inputs::of(&suite.path)?;
    let ctx = Context {
        suite: &suite,
        suite_path: &suite.path,
        module: &into,
        existing: &existing,
        suite_inputs: &suite_inputs,
        source,
    };
    let checked = validate::validate(&ctx, &drafts)?;
    let written = write(&into, &existing, &checked, &p)?;
    report(&a, &suite, &into, &checked, &model, &sha, written);
    Ok(0)
}

/// The valid drafts added to the module, their fixture rows and the prompt beside it.
fn write(into: &Path, existing: &[serde_json::Value], checked: &[Checked], p: &prompt::Prompt) -> Result<usize> {
    let valid: Vec<&Checked> = checked.iter().filter(|c| c.valid()).collect();
    if valid.is_empty() {
        return Ok(0);
    }
    for c in &valid {
        if let Some(sql) = &c.fixture_sql {
            module::write_file(&module::fixture_path(into, &c.id), sql.as_bytes())?;
        }
    }
    let prompt_file = module::side_dir(into).join("prompts").join(format!("{}.md", p.sha256()));
    module::write_file(&prompt_file, p.text().as_bytes())?;
    let mut cases = existing.to_vec();
    cases.extend(valid.iter().map(|c| c.case.clone()));
    module::write(into, &cases)?;
    Ok(valid.len())
}

fn report(a: &SynthArgs, suite: &Suite, into: &Path, checked: &[Checked], model: &str, sha: &str, written: usize) {
    let shown = crate::util::inert::console;
    let count = |f: fn(&Fate) -> bool| checked.iter().filter(|c| f(&c.fate)).count();
    let (invalid, duplicate) = (count(|f| matches!(f, Fate::Invalid(_))), count(|f| matches!(f, Fate::Duplicate(_))));
    println!("evalua synth: {} drafts from {model} (prompt sha256 {})", checked.len(), &sha[..12.min(sha.len())]);
    for c in checked {
        let (fate, why) = match &c.fate {
            Fate::Valid => ("valid", String::new()),
            Fate::Invalid(w) => ("invalid", format!(": {}", shown(w))),
            Fate::Duplicate(w) => ("duplicate", format!(": {}", shown(w))),
        };
        println!("  {fate:<9}  {}{why}", shown(&c.id));
        super::json::push(
            "drafts",
            json!({ "index": c.index, "id": c.id, "family": c.case.get("family"), "fate": fate,
                    "reason": match &c.fate { Fate::Valid => None, Fate::Invalid(w) | Fate::Duplicate(w) => Some(w) } }),
        );
    }
    println!("{written} valid, {invalid} invalid, {duplicate} duplicate");
    if written > 0 {
        println!(
            "wrote {} ({written} case(s) pending review: evalua review {} CASE --approve|--reject --reviewer NAME)",
            display_path(into),
            display_path(&a.suite)
        );
    }
    for (k, v) in [
        ("suite", json!(suite.name)),
        ("into", json!(display_path(into))),
        ("model", json!(model)),
        ("prompt_sha256", json!(sha)),
        ("written", json!(written)),
    ] {
        super::json::set(k, v);
    }
}
