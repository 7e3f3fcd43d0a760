//! Planning a run: select the cases, build each case's template database and
//! work tree, compile the tools' schemas. Everything that can be wrong with
//! the suite fails here, before any agent runs.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::executor::ToolDef;
use crate::record::manifest::Filters;
use crate::sandbox::db::{self, Backend, Database, DbTemplate};
use crate::sandbox::workdir::Templates;
use crate::spec::{CaseSpec, Suite, WorkdirSpec, fault};
use crate::trial::{CasePlan, Condition, Plan};
use crate::util::paths::display_path;
use crate::util::schema;
use crate::util::time::instant;

/// An input error about a case: say where it is declared, and which case.
fn in_case(e: Error, spec: &CaseSpec) -> Error {
    match e {
        Error::Input(m) => Error::Input(format!("{}: case '{}': {m}", spec.location, spec.id)),
        other => other,
    }
}

/// Keep an input error to say with the others; any other error ends the plan.
fn keep(errors: &mut Vec<String>, e: Error) -> Result<()> {
    match e {
        Error::Input(m) => {
            errors.extend(m.lines().map(String::from));
            Ok(())
        }
        other => Err(other),
    }
}

/// Prepare every SQL query the checks run (`check.sql`, `prohibited`)
/// against the initial database of the fixture it is used with, once per
/// distinct query and fixture (`used`: the fixtures of the selected cases): a
/// typo in a table or column name is an error now, not a grader error in
/// every trial. On PostgreSQL the server prepares them.
fn check_queries(
    suite: &Suite,
    templates: &HashMap<(Option<PathBuf>, Option<PathBuf>), Option<DbTemplate>>,
    used: &HashSet<Option<PathBuf>>,
    errors: &mut Vec<String>,
) -> Result<()> {
    let mut conns: HashMap<Option<PathBuf>, std::rc::Rc<dyn Database>> = HashMap::new();
    for q in suite.queries.iter().filter(|q| used.contains(&q.fixture)) {
        let conn = match conns.entry(q.fixture.clone()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let template = templates.get(&(suite.schema.clone(), q.fixture.clone())).and_then(|t| t.as_ref());
                let conn = match template {
                    Some(t) => t.open_initial(),
                    None => db::empty(true),
                }
                .map_err(|e| Error::Environment(format!("cannot open the case's initial database: {e}")))?;
                e.insert(conn)
            }
        };
        if let Err(e) = conn.prepare(&q.sql) {
            errors.push(format!(
                "{}: check '{}' (case '{}'): the query does not prepare against the case's fixture: {e}",
                q.at, q.check, q.case,
            ));
        }
    }
    Ok(())
}

/// Select the cases, build each case's template database and compile the
/// tools' schemas: everything that can be wrong with the suite fails here,
/// before any agent runs (every input error at once, one a line).
pub fn plan(mut suite: Suite, trials: Option<u32>, filters: &Filters, seed: u64) -> Result<Plan> {
    let glob = match &filters.case {
        Some(g) => {
            Some(globset::Glob::new(g).map_err(|e| Error::Input(format!("--case {g:?}: {e}")))?.compile_matcher())
        }
        None => None,
    };
    let now = jiff::Timestamp::now();
    let default_clock = jiff::Timestamp::from_second(now.as_second()).unwrap_or(now);

    let mut errors: Vec<String> = Vec::new();
    let mut tools: HashMap<String, Arc<ToolDef>> = HashMap::new();
    for t in &suite.tools {
        match schema::compile(&t.params) {
            Ok(validator) => {
                tools.insert(t.name.clone(), Arc::new(ToolDef { spec: t.clone(), validator }));
            }
            Err(e) => errors.push(format!("{}: tool '{}': {e}", t.location, t.name)),
        }
    }

    let all_tools: Arc<Vec<Arc<ToolDef>>> =
        Arc::new(suite.tools.iter().filter_map(|t| tools.get(&t.name).cloned()).collect());
    let scratch = tempfile::Builder::new()
        .prefix("evalua-run-")
        .tempdir()
        .map_err(|e| Error::Environment(format!("cannot create a temp dir for the trials' work dirs: {e}")))?;
    if let Some(p) = suite.expose.iter().find(|p| scratch.path().starts_with(p)) {
        return Err(Error::Input(format!(
            "{}: sandbox.expose: {} holds every trial's work dir ({}); expose a narrower path",
            crate::util::paths::display_path(&suite.path),
            p.display(),
            scratch.path().display()
        )));
    }
    let mut work_templates = Templates::default();
    let db = Backend::connect(&suite.db)?;
    let mut templates: HashMap<(Option<PathBuf>, Option<PathBuf>), Option<DbTemplate>> = HashMap::new();
    // Fixtures whose template could not be built (said once each).
    let mut broken: HashSet<(Option<PathBuf>, Option<PathBuf>)> = HashSet::new();
    let mut broken_work: HashSet<crate::spec::WorkdirSpec> = HashSet::new();
    let mut cases = Vec::with_capacity(suite.cases.len());
    // Most cases have no fault rules of their own: they share the suite's.
    let suite_faults = Arc::new(fault::effective(&suite.faults, None));
    // Safety figures when the suite (not only the selection) has attack cases or forbidden tools.
    let safety = suite.has_safety();
    // The fixtures of the selected cases (for the checks' queries).
    let mut used: HashSet<Option<PathBuf>> = HashSet::new();
    // The plan owns the selected cases' specs (the suite keeps none: one copy of each).
    for spec in std::mem::take(&mut suite.cases) {
        if glob.as_ref().is_some_and(|g| !g.is_match(&spec.id)) {
            continue;
        }
        if !filters.tags.is_empty() && !filters.tags.iter().any(|t| spec.tags.contains(t)) {
            continue;
        }
        if filters.split.as_ref().is_some_and(|s| s != &spec.split) {
            continue;
        }
        let key = (suite.schema.clone(), spec.fixture.clone());
        let template = match templates.get(&key) {
            Some(t) => t.clone(),
            None if broken.contains(&key) => None,
            None => {
                let files: Vec<&Path> = key.0.iter().chain(key.1.iter()).map(|p| p.as_path()).collect();
                match db.template(&files, suite.max_fixture_bytes) {
                    Ok(t) => {
                        templates.insert(key, t.clone());
                        t
                    }
                    // Said once per fixture; its cases' queries are not prepared.
                    Err(e) => {
                        keep(&mut errors, in_case(e, &spec))?;
                        broken.insert(key);
                        None
                    }
                }
            }
        };
        if !broken.contains(&(suite.schema.clone(), spec.fixture.clone())) {
            used.insert(spec.fixture.clone());
        }
        let clock_text =
            spec.clock.clone().or_else(|| suite.clock.clone()).unwrap_or_else(|| default_clock.to_string());
        let clock = match instant(&clock_text, "UTC") {
            Ok(c) => c as i64,
            Err(e) => {
                errors.push(format!("{}: case '{}': clock: {e}", spec.location, spec.id));
                0
            }
        };
        let offered = match &spec.tools {
            Some(names) => Arc::new(names.iter().filter_map(|n| tools.get(n).cloned()).collect()),
            None => all_tools.clone(),
        };
        let work = match suite.case_workdir(&spec) {
            // Said once per work tree.
            Some(w) if broken_work.contains(w) => None,
            Some(w) => match work_templates.get(w, scratch.path()) {
                Ok(t) => Some(t),
                Err(e) => {
                    keep(&mut errors, in_case(e, &spec))?;
                    broken_work.insert(w.clone());
                    None
                }
            },
            None => None,
        };
        cases.push(CasePlan {
            faults: match &spec.faults {
                None => suite_faults.clone(),
                own => Arc::new(fault::effective(&suite.faults, own.as_ref())),
            },
            work,
            trials: trials.or(spec.trials).unwrap_or(suite.trials),
            spec,
            template,
            tools: offered,
            clock,
            clock_text,
            variants: Default::default(),
        });
    }
    if cases.is_empty() {
        let mut given = Vec::new();
        if let Some(c) = &filters.case {
            given.push(format!("--case {c}"));
        }
        for t in &filters.tags {
            given.push(format!("--tag {t}"));
        }
        if let Some(s) = &filters.split {
            given.push(format!("--split {s}"));
        }
        let given = if given.is_empty() { "no filter".to_string() } else { given.join(" ") };
        return Err(Error::Input(format!(
            "{}: no case matches {given}; `evalua list` shows the cases",
            display_path(&suite.path),
        )));
    }
    // Filters may have left most of the capacity unused.
    cases.shrink_to_fit();
    let id = crate::trial::worker::new_owner();
    check_queries(&suite, &templates, &used, &mut errors)?;
    if !errors.is_empty() {
        errors.dedup();
        return Err(Error::Input(errors.join("\n")));
    }
    let ids = Arc::new(cases.iter().enumerate().map(|(i, c)| (c.spec.id.clone(), i)).collect());
    // A PostgreSQL database's changes cannot be kept as a SQLite changeset:
    // such a run keeps no trial state (the manifest says so; regrade refuses it).
    let keep_state = matches!(db, Backend::Sqlite);
    let protected = protected_paths(&suite, cases.iter().map(|c| &c.spec), Some(scratch.path()));
    if let Some((e, p)) = suite.expose.iter().find_map(|e| crate::process::protected_by(e, &protected).map(|p| (e, p)))
    {
        let place = if crate::process::real_path(e) == *p {
            format!("{} is protected", e.display())
        } else {
            format!("{} is inside {}, which is protected", e.display(), p.display())
        };
        return Err(Error::Input(format!(
            "{}: sandbox.expose: {place}: no process may see the hidden tests, the work-dir templates, the suite file or the trials' work dirs",
            display_path(&suite.path),
        )));
    }
    Ok(Plan {
        id,
        suite,
        cases,
        ids,
        seed,
        scratch,
        protected,
        invalid: Vec::new(),
        db,
        safety,
        keep_state,
        conditions: vec![crate::trial::Condition::default()],
        switches: Default::default(),
    })
}

/// What no process of the run may see, whoever names it: the scratch
/// folder (every trial's work dir, the templates' copies, the checks'
/// copies), the suite file, each case's work-dir template source and hidden
/// tests. Canonical, as the sandbox compares them.
pub fn protected_paths<'a>(
    suite: &Suite,
    cases: impl Iterator<Item = &'a CaseSpec>,
    scratch: Option<&Path>,
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut add = |p: &Path| {
        let p = crate::process::real_path(p);
        if !out.contains(&p) {
            out.push(p);
        }
    };
    if let Some(s) = scratch {
        add(s);
    }
    add(&suite.path);
    for c in cases {
        match suite.case_workdir(c) {
            Some(WorkdirSpec::Dir { path }) => add(path),
            Some(WorkdirSpec::Git { bundle, .. }) => add(bundle),
            None => {}
        }
        for t in &c.tests {
            if let Some(inj) = &t.spec.inject {
                add(inj);
            }
        }
    }
    out
}

/// Pick the suite's agent named `name` for the run (`--agent NAME`; see
/// [`check_agent`]): the plan's one condition.
pub fn select_agent(plan: &mut Plan, name: Option<&str>) -> Result<()> {
    check_agent(plan, name)?;
    plan.conditions = vec![Condition { agent: name.map(str::to_string), perturbation: None }];
    Ok(())
}

/// Pick several of the suite's agents (`--agent A --agent B`, each checked):
/// the plan's conditions, one per agent, in the order given.
pub fn select_agents(plan: &mut Plan, names: &[String]) -> Result<()> {
    for name in names {
        check_agent(plan, Some(name))?;
    }
    plan.conditions = names.iter().map(|n| Condition { agent: Some(n.clone()), perturbation: None }).collect();
    Ok(())
}

/// Whether the suite's agent named `name` (None: its default) can play: an
/// unknown name is an input error listing the known ones; a model agent's
/// endpoint must resolve, and a model must be reachable by configuration
/// (a key or a base URL), said in one line.
pub fn check_agent(plan: &Plan, name: Option<&str>) -> Result<()> {
    let suite = &plan.suite;
    let where_ = display_path(&suite.path);
    if let Some(name) = name
        && suite.agent_named(name).is_none()
    {
        return Err(Error::Input(format!(
            "{where_}: --agent {name}: the suite has no agent named '{name}' (known: {})",
            suite.agent_names()
        )));
    }
    let chosen = name.or(suite.default_agent.as_deref());
    if let Some(n) = chosen
        && let Some(crate::spec::AgentSpec::Model(m)) = suite.agent_named(n)
    {
        let what = format!("{where_}: agent '{n}' (evalua.agent.{})", m.model.provider);
        crate::model::Endpoint::resolve(&m.model, true).map_err(|e| Error::Input(format!("{what}: {e}")))?;
        let explicit = m.model.base_url.as_deref().is_some_and(|u| !u.is_empty());
        if !explicit && !crate::model::configured(m.model.provider) {
            let pre = m.model.provider.env_prefix();
            return Err(Error::Input(format!(
                "{what}: no model endpoint is configured: set {pre}_API_KEY, or EVALUA_{pre}_BASE_URL for another compatible server"
            )));
        }
    }
    Ok(())
}
