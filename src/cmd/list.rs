//! `evalua list`: the cases with split, tags and difficulty.

use std::path::Path;

use crate::error::Result;
use crate::lua::load;
use crate::record::manifest::Filters;
use crate::run;

pub fn list(path: &Path, filters: &Filters) -> Result<u8> {
    let s = load::load(path)?;
    let plan = run::plan(s, None, filters, 1)?;
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
    t.set_header(vec!["case", "split", "tags", "difficulty", "trials", "checks", "declared at"]);
    for c in &plan.cases {
        t.add_row(vec![
            c.spec.id.clone(),
            c.spec.split.clone(),
            c.spec.tags.join(", "),
            c.spec.difficulty.clone().unwrap_or_default(),
            c.trials.to_string(),
            c.spec.checks.to_string(),
            c.spec.location.clone(),
        ]);
    }
    println!("{t}");
    if plan.suite.agents.len() > 1 {
        println!("agents: {} (pick one with `evalua run --agent NAME`)", plan.suite.agent_names());
    }
    Ok(0)
}
