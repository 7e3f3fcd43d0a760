//! The trials of one run as compact rows, for filtering and paging on the
//! server: the browser only ever gets one page. A row holds what the filters
//! and the trial list need (case, trial, outcome, ended, failed checks,
//! failure modes, a few numbers) and where its record lies in trials.jsonl,
//! so the full record is read again only when a trial is opened. About 100
//! bytes per trial, plus the names, each stored once.

use std::collections::{HashMap, HashSet};

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};

use crate::record::{Outcome, TrialRecord};
use crate::stats::CaseInfo;

/// Names stored once, referred to by number.
#[derive(Debug, Default)]
pub struct Names {
    pub list: Vec<String>,
    map: HashMap<String, u32>,
}

impl Names {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.map.get(s) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(s.to_string());
        self.map.insert(s.to_string(), i);
        i
    }
    pub fn get(&self, s: &str) -> Option<u32> {
        self.map.get(s).copied()
    }
    pub fn name(&self, i: u32) -> &str {
        &self.list[i as usize]
    }
}

/// One trial.
#[derive(Debug)]
pub struct Row {
    pub case: u32,
    pub trial: u32,
    pub outcome: Outcome,
    pub ended: u32,
    /// Where its line lies in trials.jsonl.
    pub offset: u64,
    pub len: u32,
    pub wall_ms: f64,
    pub cost_usd: f64,
    pub calls: u32,
    /// Checks that failed (passed = false), and checks that raised (grader errors).
    pub failed: Box<[u32]>,
    pub errored: Box<[u32]>,
    pub modes: Box<[u32]>,
}

/// Every trial of a run, in file order, with counts for the filter menus.
#[derive(Debug, Default)]
pub struct TrialIndex {
    pub rows: Vec<Row>,
    /// Row numbers of each case's trials (manifest order of cases).
    pub by_case: Vec<Vec<u32>>,
    pub checks: Names,
    pub modes: Names,
    pub ended: Names,
    pub tags: Names,
    /// Each case's tags (numbers into `tags`).
    pub case_tags: Vec<Vec<u32>>,
    pub case_ids: Vec<String>,
    /// Trials per failed check / failure mode / ended reason (by number), and per outcome.
    pub check_failed: Vec<u32>,
    pub check_critical: Vec<bool>,
    pub mode_count: Vec<u32>,
    pub ended_count: Vec<u32>,
    pub outcome_count: [u32; 5],
    at: HashMap<(u32, u32), u32>,
    /// A graded item's source (conversation or trace id), by row number: its id for labelling.
    pub sources: HashMap<u32, Box<str>>,
}

fn outcome_no(o: Outcome) -> usize {
    Outcome::ALL.iter().position(|x| *x == o).unwrap_or(0)
}

impl TrialIndex {
    pub fn new(cases: &[CaseInfo]) -> Self {
        let mut ix = TrialIndex { by_case: vec![Vec::new(); cases.len()], ..Default::default() };
        for c in cases {
            let tags = c.tags.iter().map(|t| ix.tags.intern(t)).collect();
            ix.case_tags.push(tags);
            ix.case_ids.push(c.id.clone());
        }
        ix
    }

    /// Add a record of case number `case`, whose line lies at `offset` (`len` bytes).
    pub fn push(&mut self, case: usize, rec: &TrialRecord, modes: &[String], offset: u64, len: usize) {
        let mut failed = Vec::new();
        let mut errored = Vec::new();
        for c in &rec.checks {
            let i = self.checks.intern(&c.name) as usize;
            if self.check_failed.len() <= i {
                self.check_failed.resize(i + 1, 0);
                self.check_critical.resize(i + 1, false);
            }
            self.check_critical[i] |= c.critical;
            match c.passed {
                Some(false) => {
                    failed.push(i as u32);
                    self.check_failed[i] += 1;
                }
                None if !c.skipped => errored.push(i as u32),
                _ => {}
            }
        }
        let modes: Vec<u32> = modes
            .iter()
            .map(|m| {
                let i = self.modes.intern(m);
                if self.mode_count.len() <= i as usize {
                    self.mode_count.resize(i as usize + 1, 0);
                }
                self.mode_count[i as usize] += 1;
                i
            })
            .collect();
        let ended = self.ended.intern(rec.ended.as_str());
        if self.ended_count.len() <= ended as usize {
            self.ended_count.resize(ended as usize + 1, 0);
        }
        self.ended_count[ended as usize] += 1;
        self.outcome_count[outcome_no(rec.outcome)] += 1;
        let n = self.rows.len() as u32;
        self.at.entry((case as u32, rec.trial)).or_insert(n);
        if let Some(id) = crate::view::labels::source_id(rec) {
            self.sources.insert(n, id.into());
        }
        self.by_case[case].push(n);
        self.rows.push(Row {
            case: case as u32,
            trial: rec.trial,
            outcome: rec.outcome,
            ended,
            offset,
            len: len as u32,
            wall_ms: rec.wall_ms,
            cost_usd: rec.usage.cost_usd,
            calls: rec.calls.requested,
            failed: failed.into(),
            errored: errored.into(),
            modes: modes.into(),
        });
    }

    /// The number of the row of (case number, trial).
    pub fn row_no(&self, case: usize, trial: u32) -> Option<usize> {
        self.at.get(&(case as u32, trial)).map(|&i| i as usize)
    }

    /// The row of (case number, trial).
    pub fn find(&self, case: usize, trial: u32) -> Option<&Row> {
        self.at.get(&(case as u32, trial)).map(|&i| &self.rows[i as usize])
    }
}

/// The filters of the trial list and the grid, as the query string gives them.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Filter {
    /// A case: the one with exactly this id if there is one, else a glob
    /// when it has `*`, `?` or `[`, else a part of the id (any case).
    #[serde(default)]
    pub case: Option<String>,
    #[serde(default)]
    pub tag: Option<String>,
    /// An outcome, `not_accepted`, or several joined by commas.
    #[serde(default)]
    pub outcome: Option<String>,
    /// A check that failed in the trial.
    #[serde(default)]
    pub check: Option<String>,
    /// A failure mode (a monitor that fired).
    #[serde(default)]
    pub mode: Option<String>,
    /// How the agent's run ended.
    #[serde(default)]
    pub ended: Option<String>,
    /// `unlabelled` / `labelled`: by the viewer's annotator, on every criterion of the trial.
    #[serde(default)]
    pub labels: Option<String>,
}

fn given(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// A filter checked against one index.
pub struct Compiled {
    /// Cases the case and tag filters keep (None: all).
    cases: Option<Vec<bool>>,
    outcomes: [bool; 5],
    check: Option<Option<u32>>,
    mode: Option<Option<u32>>,
    ended: Option<Option<u32>>,
    /// `labels`: keep the trials the annotator labelled (true) or not (false)…
    pub labels: Option<bool>,
    /// …which are these (case, trial) pairs (the server fills it in).
    pub labelled: HashSet<(u32, u32)>,
    /// Whether anything below the case level is filtered.
    pub by_trial: bool,
}

enum CasePattern {
    Exact(String),
    Glob(GlobMatcher),
    Sub(String),
}

impl Filter {
    /// Check the filter against `ix`; a malformed glob or outcome is an error
    /// (said to the user), an unknown check or mode simply matches nothing.
    pub fn compile(&self, ix: &TrialIndex) -> Result<Compiled, String> {
        let pattern = match given(&self.case) {
            Some(p) if ix.case_ids.iter().any(|id| id == p) => Some(CasePattern::Exact(p.to_string())),
            Some(p) if p.contains(['*', '?', '[']) => {
                Some(CasePattern::Glob(Glob::new(p).map_err(|e| format!("case filter {p:?}: {e}"))?.compile_matcher()))
            }
            Some(p) => Some(CasePattern::Sub(p.to_lowercase())),
            None => None,
        };
        let tag = given(&self.tag).map(|t| ix.tags.get(t));
        let cases = (pattern.is_some() || tag.is_some()).then(|| {
            ix.case_ids
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    let by_id = match &pattern {
                        Some(CasePattern::Exact(e)) => id == e,
                        Some(CasePattern::Glob(g)) => g.is_match(id),
                        Some(CasePattern::Sub(s)) => id.to_lowercase().contains(s.as_str()),
                        None => true,
                    };
                    let by_tag = match tag {
                        Some(Some(t)) => ix.case_tags[i].contains(&t),
                        Some(None) => false,
                        None => true,
                    };
                    by_id && by_tag
                })
                .collect()
        });
        let mut outcomes = [true; 5];
        if let Some(list) = given(&self.outcome) {
            outcomes = [false; 5];
            for o in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                if o == "not_accepted" {
                    // Every outcome but accepted (the first of Outcome::ALL).
                    outcomes[1..].fill(true);
                    continue;
                }
                let i = Outcome::ALL.iter().position(|x| x.as_str() == o).ok_or_else(|| {
                    format!("outcome {o:?}: use accepted, failed, critical, grader_error, infra_error or not_accepted")
                })?;
                outcomes[i] = true;
            }
        }
        let check = given(&self.check).map(|c| ix.checks.get(c));
        let mode = given(&self.mode).map(|m| ix.modes.get(m));
        let ended = given(&self.ended).map(|e| ix.ended.get(e));
        let labels = match given(&self.labels) {
            None => None,
            Some("unlabelled") => Some(false),
            Some("labelled") => Some(true),
            Some(other) => return Err(format!("labels {other:?}: use unlabelled or labelled")),
        };
        let by_trial =
            outcomes != [true; 5] || check.is_some() || mode.is_some() || ended.is_some() || labels.is_some();
        Ok(Compiled { cases, outcomes, check, mode, ended, labels, labelled: HashSet::new(), by_trial })
    }
}

impl Compiled {
    pub fn case(&self, case: u32) -> bool {
        self.cases.as_ref().is_none_or(|c| c[case as usize])
    }

    pub fn matches(&self, r: &Row) -> bool {
        let within = |want: Option<Option<u32>>, have: &[u32]| match want {
            None => true,
            Some(None) => false,
            Some(Some(x)) => have.contains(&x),
        };
        self.case(r.case)
            && self.outcomes[outcome_no(r.outcome)]
            && within(self.check, &r.failed)
            && within(self.mode, &r.modes)
            && within(self.ended, std::slice::from_ref(&r.ended))
            && self.labels.is_none_or(|want| self.labelled.contains(&(r.case, r.trial)) == want)
    }
}

/// A page of the trial list.
#[derive(Debug, Serialize)]
pub struct TrialPage {
    pub total: usize,
    pub page: usize,
    pub per: usize,
    pub rows: Vec<TrialRow>,
}

#[derive(Debug, Serialize)]
pub struct TrialRow {
    pub case: String,
    pub trial: u32,
    pub outcome: &'static str,
    pub ended: String,
    pub failed: Vec<String>,
    pub errored: Vec<String>,
    pub modes: Vec<String>,
    pub calls: u32,
    pub wall_ms: f64,
    pub cost_usd: f64,
}

pub const MAX_PER_PAGE: usize = 500;

impl TrialIndex {
    fn row_out(&self, r: &Row) -> TrialRow {
        let names = |ns: &Names, xs: &[u32]| xs.iter().map(|&x| ns.name(x).to_string()).collect();
        TrialRow {
            case: self.case_ids[r.case as usize].clone(),
            trial: r.trial,
            outcome: r.outcome.as_str(),
            ended: self.ended.name(r.ended).to_string(),
            failed: names(&self.checks, &r.failed),
            errored: names(&self.checks, &r.errored),
            modes: names(&self.modes, &r.modes),
            calls: r.calls,
            wall_ms: r.wall_ms,
            cost_usd: r.cost_usd,
        }
    }

    /// The trials that match, in file order: page `page` of `per`.
    pub fn page(&self, f: &Compiled, page: usize, per: usize) -> TrialPage {
        let per = per.clamp(1, MAX_PER_PAGE);
        let skip = page.saturating_mul(per);
        let mut total = 0;
        let mut rows = Vec::new();
        for r in self.rows.iter().filter(|r| f.matches(r)) {
            if total >= skip && rows.len() < per {
                rows.push(self.row_out(r));
            }
            total += 1;
        }
        TrialPage { total, page, per, rows }
    }
}

/// A page of the case × trial grid.
#[derive(Debug, Serialize)]
pub struct GridPage {
    /// Cases shown under the filter, in all pages.
    pub total: usize,
    pub page: usize,
    pub per: usize,
    pub rows: Vec<GridRow>,
}

#[derive(Debug, Serialize)]
pub struct GridRow {
    pub id: String,
    pub n: usize,
    pub accepted: usize,
    /// One letter per trial, in trial order (a accepted, f failed, c critical,
    /// g grader error, i infra error), at most `MAX_CELLS`.
    pub cells: String,
    pub trials: Vec<u32>,
    /// Per cell, whether the trial matches the filter ("1"/"0"); empty when
    /// no trial-level filter is set.
    pub matched: String,
    /// Trials not drawn (beyond `MAX_CELLS`).
    pub more: usize,
}

pub const GRID_CASES_PER_PAGE: usize = 50;
pub const MAX_CELLS: usize = 200;

pub use crate::report::html::code;

impl TrialIndex {
    /// Cases the filter keeps (with a trial-level filter: those with a matching trial).
    pub fn grid(&self, f: &Compiled, page: usize) -> GridPage {
        let per = GRID_CASES_PER_PAGE;
        let shown: Vec<usize> = (0..self.case_ids.len())
            .filter(|&c| {
                f.case(c as u32) && (!f.by_trial || self.by_case[c].iter().any(|&r| f.matches(&self.rows[r as usize])))
            })
            .collect();
        let rows = shown
            .iter()
            .skip(page.saturating_mul(per))
            .take(per)
            .map(|&c| {
                let mut rows: Vec<&Row> = self.by_case[c].iter().map(|&r| &self.rows[r as usize]).collect();
                rows.sort_by_key(|r| r.trial);
                let accepted = rows.iter().filter(|r| r.outcome == Outcome::Accepted).count();
                let drawn = &rows[..rows.len().min(MAX_CELLS)];
                GridRow {
                    id: self.case_ids[c].clone(),
                    n: rows.len(),
                    accepted,
                    cells: drawn.iter().map(|r| code(r.outcome)).collect(),
                    trials: drawn.iter().map(|r| r.trial).collect(),
                    matched: if f.by_trial {
                        drawn.iter().map(|r| if f.matches(r) { '1' } else { '0' }).collect()
                    } else {
                        String::new()
                    },
                    more: rows.len() - drawn.len(),
                }
            })
            .collect();
        GridPage { total: shown.len(), page, per, rows }
    }
}

/// What the filter menus offer, with trial counts.
#[derive(Debug, Serialize)]
pub struct Facets {
    pub trials: usize,
    pub cases: usize,
    pub outcomes: Vec<(&'static str, u32)>,
    /// (check, trials where it failed, critical)
    pub checks: Vec<(String, u32, bool)>,
    pub modes: Vec<(String, u32)>,
    pub ended: Vec<(String, u32)>,
    pub tags: Vec<String>,
}

impl TrialIndex {
    pub fn facets(&self) -> Facets {
        let mut checks: Vec<(String, u32, bool)> = self
            .checks
            .list
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), self.check_failed[i], self.check_critical[i]))
            .collect();
        checks.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let counted = |ns: &Names, counts: &[u32]| -> Vec<(String, u32)> {
            let mut v: Vec<(String, u32)> =
                ns.list.iter().enumerate().map(|(i, n)| (n.clone(), counts.get(i).copied().unwrap_or(0))).collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v
        };
        let mut tags = self.tags.list.clone();
        tags.sort();
        Facets {
            trials: self.rows.len(),
            cases: self.case_ids.len(),
            outcomes: Outcome::ALL.iter().map(|o| (o.as_str(), self.outcome_count[outcome_no(*o)])).collect(),
            checks,
            modes: counted(&self.modes, &self.mode_count),
            ended: counted(&self.ended, &self.ended_count),
            tags,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{CallCounts, CheckResult, Ended, Usage};

    fn rec(case: &str, trial: u32, outcome: Outcome, failed: &[&str]) -> TrialRecord {
        let checks = ["a", "b", "c"]
            .iter()
            .map(|n| CheckResult {
                name: n.to_string(),
                passed: Some(!failed.contains(n)),
                critical: *n == "c",
                evidence: serde_json::Value::Null,
                error: None,
                skipped: false,
                ..Default::default()
            })
            .collect();
        TrialRecord {
            agent: None,
            perturbation: None,
            case: case.into(),
            trial,
            seed: 0,
            outcome,
            ended: Ended::Final,
            checks,
            calls: CallCounts::default(),
            usage: Usage::default(),
            wall_ms: 1.0,
            answer: String::new(),
            error: None,
            trace: String::new(),
            ..Default::default()
        }
    }

    fn index() -> TrialIndex {
        let cases = ["refund_1", "refund_2", "lookup"].map(|id| CaseInfo {
            id: id.into(),
            weight: 1.0,
            tags: if id.starts_with("refund") { vec!["refund".into()] } else { vec![] },
            difficulty: None,
            reference: None,
            should_abstain: false,
            pending_review: false,
        });
        let mut ix = TrialIndex::new(&cases);
        let mut off = 0;
        for (c, id) in ["refund_1", "refund_2", "lookup"].iter().enumerate() {
            for t in 1..=4u32 {
                let (o, failed): (Outcome, &[&str]) = match (c, t) {
                    (0, 2) => (Outcome::Failed, &["a"]),
                    (1, 1) => (Outcome::Failed, &["a", "b"]),
                    (1, 3) => (Outcome::Critical, &["c"]),
                    (2, 4) => (Outcome::Failed, &["b"]),
                    _ => (Outcome::Accepted, &[]),
                };
                let modes = if failed.contains(&"b") { vec!["tool_loop".to_string()] } else { vec![] };
                ix.push(c, &rec(id, t, o, failed), &modes, off, 10);
                off += 11;
            }
        }
        ix
    }

    fn count(ix: &TrialIndex, f: Filter) -> usize {
        ix.page(&f.compile(ix).unwrap(), 0, 500).total
    }

    #[test]
    fn filters_combine_and_count() {
        let ix = index();
        assert_eq!(count(&ix, Filter::default()), 12);
        assert_eq!(count(&ix, Filter { check: Some("a".into()), ..Default::default() }), 2);
        assert_eq!(count(&ix, Filter { check: Some("b".into()), ..Default::default() }), 2);
        assert_eq!(count(&ix, Filter { check: Some("b".into()), tag: Some("refund".into()), ..Default::default() }), 1);
        assert_eq!(count(&ix, Filter { outcome: Some("not_accepted".into()), ..Default::default() }), 4);
        assert_eq!(count(&ix, Filter { outcome: Some("critical, failed".into()), ..Default::default() }), 4);
        assert_eq!(count(&ix, Filter { outcome: Some("critical".into()), ..Default::default() }), 1);
        assert_eq!(count(&ix, Filter { mode: Some("tool_loop".into()), ..Default::default() }), 2);
        assert_eq!(count(&ix, Filter { case: Some("REFUND".into()), ..Default::default() }), 8);
        assert_eq!(count(&ix, Filter { case: Some("*_2".into()), ..Default::default() }), 4);
        // An exact id is that case alone, though it is part of another's.
        assert_eq!(count(&ix, Filter { case: Some("refund_1".into()), ..Default::default() }), 4);
        assert_eq!(count(&ix, Filter { case: Some("refund_".into()), ..Default::default() }), 8);
        assert_eq!(count(&ix, Filter { ended: Some("final".into()), ..Default::default() }), 12);
        assert_eq!(count(&ix, Filter { ended: Some("deadline".into()), ..Default::default() }), 0);
        assert_eq!(count(&ix, Filter { check: Some("no such check".into()), ..Default::default() }), 0);
        assert_eq!(count(&ix, Filter { tag: Some("no such tag".into()), ..Default::default() }), 0);
        assert!(Filter { outcome: Some("passed".into()), ..Default::default() }.compile(&ix).is_err());
        assert!(Filter { case: Some("[".into()), ..Default::default() }.compile(&ix).is_err());
    }

    #[test]
    fn pages_cover_every_match_once() {
        let ix = index();
        let f = Filter::default().compile(&ix).unwrap();
        let mut seen = Vec::new();
        for p in 0..5 {
            let page = ix.page(&f, p, 5);
            assert_eq!(page.total, 12);
            seen.extend(page.rows.into_iter().map(|r| (r.case, r.trial)));
        }
        assert_eq!(seen.len(), 12);
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 12);
    }

    #[test]
    fn the_grid_keeps_cases_with_a_matching_trial() {
        let ix = index();
        let f = Filter { check: Some("b".into()), ..Default::default() }.compile(&ix).unwrap();
        let g = ix.grid(&f, 0);
        assert_eq!(g.total, 2);
        assert_eq!(g.rows[0].id, "refund_2");
        assert_eq!(g.rows[0].cells, "faca");
        assert_eq!(g.rows[0].matched, "1000");
        let all = ix.grid(&Filter::default().compile(&ix).unwrap(), 0);
        assert_eq!(all.total, 3);
        assert_eq!(all.rows[2].matched, "");
        assert_eq!(ix.find(1, 3).map(|r| r.outcome), Some(Outcome::Critical));
    }
}
