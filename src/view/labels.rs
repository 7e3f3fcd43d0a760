//! Labelling in `evalua view` (SPEC §15): what a trial offers to label (its
//! case's rubric criteria, from the manifest, and the trial as a whole),
//! where its labels go (the label store beside the run's suite, or
//! `--labels STORE`), and the store read back and followed as it grows.
//!
//! Writes are guarded in the server (a per-session token the page carries,
//! the Host and Origin checked); here, the store a run dir leads to must lie
//! under the viewer's working directory or the folder above one of the
//! folders it serves: a run dir is untrusted, and its manifest must not be
//! able to make the viewer write elsewhere. The store is untrusted too: a
//! line that is not a label is a warning with `file:line`, never a panic.

use std::collections::{BTreeSet, HashMap};
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::IgnoredAny;
use serde_json::{Value as Json, json};

use crate::judge::prompt::strip_call;
use crate::record::labels::{self, Label, Verdict};
use crate::record::{Manifest, Trace, TrialRecord};
use crate::util::paths::display_path;

/// One label as the viewer keeps it (no trial data).
#[derive(Debug, Clone, Serialize)]
pub struct Mark {
    pub annotator: String,
    pub criterion: Option<String>,
    pub verdict: Verdict,
    pub tags: Vec<String>,
    pub note: String,
    pub at: String,
}

/// A store read and followed: the labels in force per item.
#[derive(Debug, Default)]
pub struct StoreIndex {
    offset: u64,
    line: usize,
    pub by_item: HashMap<String, Vec<Mark>>,
    /// Tags used in the store, for suggestions.
    pub tags: BTreeSet<String>,
    pub warnings: Vec<String>,
}

impl StoreIndex {
    /// Read what was appended since the last read (whole lines only; a
    /// shrunk file is read again from the start).
    pub fn refresh(&mut self, path: &Path) {
        // Never a FIFO waited on, nor a symlink followed: the store's path may come from a run dir.
        let Ok(mut f) = labels::open_store(path, false) else { return };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len < self.offset {
            *self = StoreIndex::default();
        }
        if len == self.offset || f.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let shown = display_path(path);
        let mut r = std::io::BufReader::with_capacity(1 << 16, f);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let Ok((n, too_long)) = labels::read_line(&mut r, &mut buf) else { return };
            if n == 0 {
                return;
            }
            let whole = too_long || buf.last() == Some(&b'\n');
            if !whole {
                // Being written (or torn): read again next time.
                return;
            }
            self.offset += n as u64;
            self.line += 1;
            let no = self.line;
            if too_long {
                self.warnings.push(format!("{shown}:{no}: longer than {} MB: skipped", labels::MAX_LINE >> 20));
                continue;
            }
            let text = buf.trim_ascii();
            if text.is_empty() {
                continue;
            }
            match serde_json::from_slice::<Label<IgnoredAny>>(text) {
                Ok(l) => match l.problem() {
                    None => self.add(l),
                    Some(p) => self.warnings.push(format!("{shown}:{no}: {p}: skipped")),
                },
                Err(e) => self.warnings.push(format!("{shown}:{no}: not a label: {e}: skipped")),
            }
        }
    }

    fn add(&mut self, l: Label<IgnoredAny>) {
        self.tags.extend(l.tags.iter().cloned());
        let marks = self.by_item.entry(l.item).or_default();
        let m = Mark {
            annotator: l.annotator,
            criterion: l.criterion,
            verdict: l.verdict,
            tags: l.tags,
            note: l.note,
            at: l.at,
        };
        match marks.iter_mut().find(|x| x.annotator == m.annotator && x.criterion == m.criterion) {
            Some(x) => *x = m,
            None => marks.push(m),
        }
    }

    /// Has `annotator` given a verdict on every one of `criteria` of `item`?
    pub fn done(&self, item: &str, annotator: &str, criteria: &[Option<String>]) -> bool {
        let Some(marks) = self.by_item.get(item) else { return false };
        criteria.iter().all(|c| marks.iter().any(|m| m.annotator == annotator && &m.criterion == c))
    }
}

/// A rubric of the run's suite, as its manifest lists it.
#[derive(Debug, Clone)]
pub struct Rubric {
    pub name: String,
    pub criteria: Vec<String>,
    pub cases: Vec<String>,
}

/// What a run needs for labelling.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// Where its labels go, or why they cannot be written.
    pub store: Result<PathBuf, String>,
    /// The run whose agent produced the trajectories (a re-grade's source run).
    pub trajectories_run_id: String,
    pub rubrics: Vec<Rubric>,
    pub monitors: Vec<String>,
    pub graded: bool,
    /// `--review users`: this run's sampled trials and its simulated users.
    pub review: Option<super::review::RunReview>,
}

/// A criterion offered for labelling: (rubric name, criterion text); a None criterion is the trial as a whole.
pub type Offer = (Option<String>, Option<String>);

impl RunContext {
    /// The criteria of `case`, in rubric order, then the trial as a whole.
    /// Runs written before the manifest listed criteria: from the judge checks' evidence.
    pub fn offers(&self, case: &str, rec: Option<&TrialRecord>) -> Vec<Offer> {
        let mut out: Vec<Offer> = Vec::new();
        for r in self.rubrics.iter().filter(|r| r.cases.iter().any(|c| c == case)) {
            let mut criteria = r.criteria.clone();
            if criteria.is_empty()
                && let Some(rec) = rec
                && let Some(c) = rec.checks.iter().find(|c| c.name == r.name)
            {
                criteria = c.evidence["criteria"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|x| x["criterion"].as_str().map(String::from))
                    .collect();
            }
            for c in criteria {
                if !out.iter().any(|(_, x)| x.as_deref() == Some(c.as_str())) {
                    out.push((Some(r.name.clone()), Some(c)));
                }
            }
        }
        out.push((None, None));
        out
    }

    /// Whether the trial is one of the `--review users` sample.
    pub fn reviewed(&self, case: &str, trial: u32) -> Option<&super::review::RunReview> {
        self.review.as_ref().filter(|r| r.has(case, trial))
    }

    /// What a trial offers: its simulated user's conduct when it is in the
    /// review's sample, else its case's criteria and the trial as a whole.
    pub fn offers_of(&self, case: &str, trial: u32, rec: Option<&TrialRecord>) -> Vec<Offer> {
        match self.reviewed(case, trial) {
            Some(r) => vec![(Some(r.rubric(case)), Some(crate::judge::labels::USER_CRITERION.to_string()))],
            None => self.offers(case, rec),
        }
    }

    /// The item a trial's labels go under (its user's in the review's sample).
    pub fn item_of(&self, case: &str, trial: u32, source: Option<&str>) -> String {
        match self.reviewed(case, trial) {
            // Apart from the trial's own item, whose data differs.
            Some(_) => format!("{}/user", self.item_id(case, trial, source)),
            None => self.item_id(case, trial, source),
        }
    }

    /// The item id of a trial: a graded item's source conversation (or
    /// trace), else `<run that produced it>/<case>/<trial>`.
    pub fn item_id(&self, case: &str, trial: u32, source: Option<&str>) -> String {
        match source {
            Some(s) => s.to_string(),
            None => format!("{}/{case}/{trial}", self.trajectories_run_id),
        }
    }
}

/// The source id of a graded record.
pub fn source_id(rec: &TrialRecord) -> Option<String> {
    rec.source.as_ref().and_then(|s| s.conversation_id.clone().or_else(|| s.trace_id.clone()))
}

/// Labelling in a viewer session.
pub struct Labelling {
    pub annotator: Option<String>,
    /// The per-session token a write must carry.
    pub token: String,
    store_override: Option<PathBuf>,
    /// Folders a store found through a run dir may lie under.
    allowed: Vec<PathBuf>,
    stores: Mutex<HashMap<PathBuf, Arc<Mutex<StoreIndex>>>>,
}

/// 128 random bits, hex: from the kernel (a token must not be guessable).
fn random_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Check an annotator's name (from --annotator or EVALUA_ANNOTATOR).
pub fn check_annotator(name: &str) -> Result<String, String> {
    let n = name.trim();
    if n.is_empty() || n.len() > 100 || n.chars().any(char::is_control) {
        return Err(format!("--annotator {name:?}: give a name of 1 to 100 characters, no control characters"));
    }
    Ok(n.to_string())
}

impl Labelling {
    pub fn new(annotator: Option<String>, store: Option<PathBuf>, roots: &[PathBuf]) -> std::io::Result<Labelling> {
        let mut allowed: Vec<PathBuf> =
            std::env::current_dir().ok().and_then(|d| d.canonicalize().ok()).into_iter().collect();
        for r in roots {
            if let Some(p) = r.parent() {
                allowed.push(p.to_path_buf());
            }
        }
        Ok(Labelling { annotator, token: random_token()?, store_override: store, allowed, stores: Mutex::default() })
    }

    /// `--labels STORE`, when given: where every decision goes.
    pub fn store_override(&self) -> Option<&Path> {
        self.store_override.as_deref()
    }

    /// Whether `token` is this session's (compared in constant time).
    pub fn token_ok(&self, token: &str) -> bool {
        let (a, b) = (self.token.as_bytes(), token.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }

    /// The labelling context of a run from its manifest.
    pub fn context(&self, m: &Manifest, run_dir: &Path) -> RunContext {
        let mut rubrics = Vec::new();
        for j in &m.judges {
            if j.kind != "rubric" && j.kind != "cascade" {
                continue;
            }
            rubrics.push(Rubric {
                name: j.name.clone(),
                criteria: j.criteria.clone().unwrap_or_default(),
                cases: j.cases.clone(),
            });
        }
        RunContext {
            store: self.store_of(m, run_dir),
            trajectories_run_id: m.trajectories_run_id().to_string(),
            rubrics,
            monitors: m.monitors.clone(),
            graded: matches!(m.kind, crate::record::manifest::RunKind::Graded),
            review: None,
        }
    }

    /// Where a run's labels go: `--labels STORE`, else `labels/<suite>.jsonl` beside its suite.
    fn store_of(&self, m: &Manifest, run_dir: &Path) -> Result<PathBuf, String> {
        if let Some(s) = &self.store_override {
            return Ok(s.clone());
        }
        let rel = Path::new(&m.suite.path);
        if m.suite.path.is_empty() || rel.extension().is_none_or(|e| e != "lua") {
            return Err(format!(
                "the run's manifest names no suite file ({:?}): give evalua view --labels STORE",
                m.suite.path
            ));
        }
        // The suite as the run named it: from here, else from a folder above the run dir.
        let mut tries: Vec<PathBuf> = vec![rel.to_path_buf()];
        if rel.is_relative() {
            tries.extend(run_dir.ancestors().skip(1).map(|a| a.join(rel)));
        }
        let Some(suite) = tries.iter().find(|p| p.is_file()).and_then(|p| p.canonicalize().ok()) else {
            return Err(format!(
                "the run's suite {} is not found from here or above the run dir: start evalua view in the folder the \
                 run was started from, or give --labels STORE",
                m.suite.path
            ));
        };
        // A suite the run dir carries is its content's choice, and so would its store be.
        if run_dir.canonicalize().is_ok_and(|r| suite.starts_with(r)) {
            return Err(format!(
                "the run's suite {} lies inside the run dir: labels are written only beside a project's suite (or give --labels STORE)",
                display_path(&suite)
            ));
        }
        let dir = suite.parent().unwrap_or(Path::new("/")).to_path_buf();
        let store = labels::default_path(&dir, &m.suite.name);
        // The store's folder, as it resolves (a symlinked labels/ must not lead out either).
        let real = store.parent().and_then(|d| d.canonicalize().ok()).unwrap_or(dir.clone());
        if !self.allowed.iter().any(|a| real.starts_with(a) && dir.starts_with(a)) {
            return Err(format!(
                "the run's suite {} lies outside this viewer's folders: labels are written only under them (or give --labels STORE)",
                suite.display()
            ));
        }
        // Found as a symlink, a FIFO or a hard link: refused now, and again by the append itself.
        match labels::open_store(&store, false) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(format!("the label store {}: {e} (labels go only to a regular file)", display_path(&store)))
            }
            _ => Ok(store),
        }
    }

    /// The index of a store, brought up to date.
    pub fn index(&self, store: &Path) -> Arc<Mutex<StoreIndex>> {
        let ix = {
            let mut all = self.stores.lock().unwrap_or_else(|e| e.into_inner());
            all.entry(store.to_path_buf()).or_default().clone()
        };
        ix.lock().unwrap_or_else(|e| e.into_inner()).refresh(store);
        ix
    }
}

/// What the page shows of a trial's labels.
#[derive(Debug, Serialize)]
pub struct TrialLabels {
    pub enabled: bool,
    /// Why labelling is off for this trial.
    pub why: Option<String>,
    pub annotator: Option<String>,
    pub store: Option<String>,
    pub item: String,
    pub criteria: Vec<Json>,
    /// This annotator's labels in force.
    pub mine: Vec<Mark>,
    /// How many other annotators labelled the item (their verdicts are not shown: labels stay independent).
    pub others: usize,
    /// Tag suggestions: the suite's monitors first, then tags used in the store.
    pub tags: Vec<String>,
    pub monitors: Vec<String>,
    pub warnings: Vec<String>,
    pub warning_count: usize,
}

pub fn trial_labels(l: &Labelling, ctx: &RunContext, rec: &TrialRecord) -> TrialLabels {
    let item = ctx.item_of(&rec.case, rec.trial, source_id(rec).as_deref());
    let offers = ctx.offers_of(&rec.case, rec.trial, Some(rec));
    let criteria = offers.iter().map(|(rubric, c)| json!({ "rubric": rubric, "criterion": c })).collect::<Vec<_>>();
    let mut out = TrialLabels {
        enabled: false,
        why: None,
        annotator: l.annotator.clone(),
        store: ctx.store.as_ref().ok().map(|p| display_path(p)),
        item: item.clone(),
        criteria,
        mine: Vec::new(),
        others: 0,
        tags: ctx.monitors.clone(),
        monitors: ctx.monitors.clone(),
        warnings: Vec::new(),
        warning_count: 0,
    };
    let store = match (&l.annotator, &ctx.store) {
        (None, _) => {
            out.why = Some("labelling is off: start evalua view with --annotator NAME (or EVALUA_ANNOTATOR)".into());
            return out;
        }
        (_, Err(why)) => {
            out.why = Some(why.clone());
            return out;
        }
        (Some(_), Ok(p)) => p,
    };
    out.enabled = true;
    let me = l.annotator.as_deref().unwrap_or_default();
    let ix = l.index(store);
    let ix = ix.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(marks) = ix.by_item.get(&item) {
        out.mine = marks.iter().filter(|m| m.annotator == me).cloned().collect();
        let mut others: Vec<&str> = marks.iter().filter(|m| m.annotator != me).map(|m| m.annotator.as_str()).collect();
        others.sort();
        others.dedup();
        out.others = others.len();
    }
    for t in &ix.tags {
        if !out.tags.contains(t) {
            out.tags.push(t.clone());
        }
    }
    out.warning_count = ix.warnings.len();
    out.warnings = ix.warnings.iter().take(5).cloned().collect();
    out
}

/// The trial as `evalua calibrate` reads an item (SPEC §15's `data`).
pub fn item_data(rec: &TrialRecord, trace: Option<&Trace>, rubric: Option<&str>) -> Json {
    let values = |v: serde_json::Result<Json>| match v {
        Ok(Json::Array(a)) => a,
        _ => Vec::new(),
    };
    let mut d = match trace {
        Some(t) => json!({
            "input": t.input,
            "answer": if t.record.answer.is_empty() { &rec.answer } else { &t.record.answer },
            "calls": values(serde_json::to_value(&t.calls)).iter().map(strip_call).collect::<Vec<_>>(),
            "messages": values(serde_json::to_value(&t.messages)),
            "outbox": values(serde_json::to_value(&t.outbox)),
        }),
        None => json!({ "input": "", "answer": rec.answer, "calls": [], "messages": [], "outbox": [] }),
    };
    d["case"] = json!(rec.case);
    if let Some(r) = rubric {
        d["rubric"] = json!(r);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_follows_appends_keeps_the_last_verdict_and_waits_for_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let line = |who: &str, v: &str| {
            format!(
                r#"{{"item":"i1","annotator":"{who}","criterion":"c","verdict":"{v}","tags":["x"],"note":"","data":{{}},"at":"t"}}"#
            )
        };
        std::fs::write(&p, format!("{}\n{{bad\n{}", line("ana", "pass"), &line("bo", "fail")[..10])).unwrap();
        let mut ix = StoreIndex::default();
        ix.refresh(&p);
        assert_eq!(ix.by_item["i1"].len(), 1);
        assert_eq!(ix.warnings.len(), 1, "{:?}", ix.warnings);
        assert!(ix.warnings[0].contains("s.jsonl:2"));
        // The torn line is ended by the next append and then refused once.
        labels::append(&p, &serde_json::from_str::<Label>(&line("ana", "fail")).unwrap()).unwrap();
        ix.refresh(&p);
        assert_eq!(ix.by_item["i1"][0].verdict, Verdict::Fail);
        assert_eq!(ix.warnings.len(), 2, "{:?}", ix.warnings);
        assert!(ix.done("i1", "ana", &[Some("c".into())]));
        assert!(!ix.done("i1", "ana", &[Some("c".into()), None]));
        assert_eq!(ix.tags.iter().collect::<Vec<_>>(), ["x"]);
    }

    #[test]
    fn tokens_are_random_and_compared_whole() {
        let l = Labelling::new(Some("ana".into()), None, &[]).unwrap();
        let m = Labelling::new(Some("ana".into()), None, &[]).unwrap();
        assert_eq!(l.token.len(), 32);
        assert_ne!(l.token, m.token);
        assert!(l.token_ok(&l.token.clone()));
        assert!(!l.token_ok(&m.token) && !l.token_ok("") && !l.token_ok(&l.token[..31]));
        assert!(check_annotator(" ana ").is_ok() && check_annotator("").is_err() && check_annotator("a\nb").is_err());
    }
}
