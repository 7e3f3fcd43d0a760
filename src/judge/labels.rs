//! A label store (SPEC §15) read as calibration items: for each item, the
//! majority verdict of its annotators per criterion, in the format
//! `evalua calibrate --labels` reads (`{ id, rubric, case, input, answer,
//! calls, messages, outbox, labels: { criterion: bool } }`). Ties, criteria
//! with only `unsure` verdicts and whole-item labels are left out and
//! counted. A store with a split gives either the calibration part (the
//! items not held out) or the held-out part.

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value as Json, json};

use crate::error::{Error, Result};
use crate::record::labels::{self, Label, Split};
use crate::stats::agree::{Majority, Ratings};
use crate::util::paths::display_path;

/// The criterion a reviewer of a simulated user's conversation labels
/// (`evalua view --review users`, SPEC §18): the adherence judge's verdict as a whole.
pub const USER_CRITERION: &str = "the simulated user followed its profile";
/// The rubric name of that criterion when the case's user has no adherence judge.
pub const USER_RUBRIC: &str = "user_adherence";

/// Which items of a store to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Every item not held out (all of them when the store has no split).
    Calibration,
    /// Only the held-out items (the store must have a split).
    HeldOut,
}

/// What reading a store as calibration items left out, and why.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Counts {
    /// Items in the store (labels in force).
    pub items: usize,
    /// Items of the other part, not used.
    pub other_part: usize,
    /// (item, criterion) units whose annotators tied pass/fail.
    pub ties: usize,
    /// Units with only `unsure` verdicts.
    pub unsure_only: usize,
    /// Units labelling an item as a whole (criterion null): calibration grades criteria.
    pub whole_item: usize,
    /// Items that gave a calibration line.
    pub used: usize,
    /// Items left with no criterion decided.
    pub undecided_items: usize,
}

/// A store as calibration items.
#[derive(Debug)]
pub struct FromStore {
    /// (the store line of the item's first label, the calibration item).
    pub items: Vec<(usize, Json)>,
    pub counts: Counts,
    pub warnings: Vec<String>,
    pub split: Option<Split>,
    /// Each item id used, in order (held-out use is counted in the ledger by these).
    pub ids: Vec<String>,
}

/// Whether `path` holds a label store (rather than the calibration format):
/// its first line that is a JSON object has `annotator` and `verdict`.
pub fn is_store(path: &Path) -> bool {
    use std::io::BufRead;
    let Ok(f) = std::fs::File::open(path) else { return false };
    let mut r = std::io::BufReader::new(f);
    let mut line = String::new();
    for _ in 0..64 {
        line.clear();
        match std::io::Read::take(&mut r, labels::MAX_LINE as u64).read_line(&mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) => {}
        }
        if line.trim().is_empty() {
            continue;
        }
        return match serde_json::from_str::<Json>(&line) {
            Ok(Json::Object(o)) => o.contains_key("annotator") && o.contains_key("verdict"),
            _ => false,
        };
    }
    false
}

/// The data keys a calibration item takes from a label's `data`.
const DATA_KEYS: [&str; 5] = ["input", "answer", "calls", "messages", "outbox"];

fn data_of(l: &Label) -> Option<&Map<String, Json>> {
    l.data.as_object().filter(|o| o.get("answer").is_some_and(Json::is_string))
}

/// Read `path` as calibration items of `part`.
pub fn read(path: &Path, part: Part) -> Result<FromStore> {
    let store: labels::Store = labels::read(path)?;
    let split = labels::read_split(path)?;
    let shown = display_path(path);
    if part == Part::HeldOut && split.is_none() {
        return Err(Error::Input(format!(
            "{shown} has no held-out split ({} is missing): evalua labels split {shown} --held-out 0.3 --seed N",
            display_path(&labels::split_path(path))
        )));
    }
    let held: std::collections::HashSet<&str> =
        split.iter().flat_map(|s| s.held_out.iter().map(String::as_str)).collect();
    let current = store.current();
    let ratings = Ratings::of(&current);
    let mut counts = Counts { items: ratings.items.len(), ..Default::default() };
    // The data of each item: its last label with usable data; and the line of its first label.
    let mut data: HashMap<&str, &Label> = HashMap::new();
    let mut first_line: HashMap<&str, usize> = HashMap::new();
    for (line, l) in &store.labels {
        first_line.entry(&l.item).or_insert(*line);
        if data_of(l).is_some() {
            data.insert(&l.item, l);
        }
    }
    // Each unit's rubric: from the data of the labels of that criterion (the item's otherwise).
    let mut rubric_of: HashMap<(&str, Option<&str>), Option<&str>> = HashMap::new();
    for l in &current {
        let r = l.data.get("rubric").and_then(Json::as_str);
        rubric_of.entry((&l.item, l.criterion.as_deref())).and_modify(|x| *x = x.or(r)).or_insert(r);
    }
    let mut decided: Vec<Vec<(Option<&str>, &str, bool)>> = vec![Vec::new(); ratings.items.len()];
    for u in &ratings.units {
        let item = ratings.items[u.item].as_str();
        let in_part = held.contains(item) == (part == Part::HeldOut);
        if !in_part {
            continue;
        }
        let Some(criterion) = ratings.criteria[u.criterion].as_deref() else {
            counts.whole_item += 1;
            continue;
        };
        match u.majority() {
            Majority::Pass | Majority::Fail => {
                let rubric = rubric_of.get(&(item, Some(criterion))).copied().flatten();
                decided[u.item].push((rubric, criterion, u.majority() == Majority::Pass));
            }
            Majority::Tie => counts.ties += 1,
            Majority::None => counts.unsure_only += 1,
        }
    }
    let mut warnings = store.warnings.clone();
    let mut items = Vec::new();
    let mut ids = Vec::new();
    for (i, id) in ratings.items.iter().enumerate() {
        if held.contains(id.as_str()) != (part == Part::HeldOut) {
            counts.other_part += 1;
            continue;
        }
        if decided[i].is_empty() {
            counts.undecided_items += 1;
            continue;
        }
        let line = first_line.get(id.as_str()).copied().unwrap_or(0);
        let Some(src) = data.get(id.as_str()).and_then(|l| data_of(l)) else {
            warnings.push(format!(
                "{shown}:{line}: item {id:?} has no label whose data holds the trial (an 'answer' at least): left out"
            ));
            counts.undecided_items += 1;
            continue;
        };
        // One calibration line per rubric the item's criteria belong to.
        let mut rubrics: Vec<Option<&str>> = decided[i].iter().map(|(r, _, _)| *r).collect();
        rubrics.dedup();
        rubrics.sort();
        rubrics.dedup();
        for r in rubrics {
            let mut o = Map::new();
            o.insert("id".into(), json!(id));
            if let Some(r) = r {
                o.insert("rubric".into(), json!(r));
            }
            for k in DATA_KEYS {
                if let Some(v) = src.get(k) {
                    o.insert(k.into(), v.clone());
                }
            }
            let labels: Map<String, Json> = decided[i]
                .iter()
                .filter(|(x, _, _)| *x == r)
                .map(|(_, c, pass)| (c.to_string(), json!(pass)))
                .collect();
            o.insert("labels".into(), Json::Object(labels));
            items.push((line, Json::Object(o)));
        }
        ids.push(id.clone());
        counts.used += 1;
    }
    Ok(FromStore { items, counts, warnings, split, ids })
}

impl Counts {
    /// One line saying what was used and what was left out.
    pub fn line(&self, part: Part, has_split: bool) -> String {
        let mut s = format!("{} of {} labelled items used", self.used, self.items);
        if has_split {
            let other = match part {
                Part::Calibration => "held out",
                Part::HeldOut => "not held out",
            };
            s.push_str(&format!(", {} {other} left aside", self.other_part));
        }
        let mut out = Vec::new();
        if self.ties > 0 {
            out.push(format!("{} tied (as many pass as fail)", self.ties));
        }
        if self.unsure_only > 0 {
            out.push(format!("{} only unsure", self.unsure_only));
        }
        if self.whole_item > 0 {
            out.push(format!("{} whole-item labels (no criterion)", self.whole_item));
        }
        if !out.is_empty() {
            s.push_str(&format!("; criterion labels left out: {}", out.join(", ")));
        }
        if self.undecided_items > 0 {
            s.push_str(&format!("; {} items with no criterion decided", self.undecided_items));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::labels::{Verdict, append};

    fn put(p: &Path, item: &str, who: &str, c: Option<&str>, v: Verdict) {
        let l = Label {
            item: item.into(),
            annotator: who.into(),
            criterion: c.map(String::from),
            verdict: v,
            tags: vec![],
            note: String::new(),
            data: json!({ "input": "task", "answer": format!("answer of {item}"), "rubric": "reply", "calls": [] }),
            run: Some("r1".into()),
            trace_id: None,
            at: "2026-12-01T00:00:00Z".into(),
        };
        append(p, &l).unwrap();
    }

    #[test]
    fn majority_decides_ties_and_unsure_are_counted_and_the_split_is_applied() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        use Verdict::*;
        // i1: 2 pass 1 fail → pass; i2: 1–1 → tie; i3: unsure only; i4: whole item + c fail.
        for (item, who, c, v) in [
            ("i1", "a", Some("c"), Pass),
            ("i1", "b", Some("c"), Pass),
            ("i1", "c", Some("c"), Fail),
            ("i2", "a", Some("c"), Pass),
            ("i2", "b", Some("c"), Fail),
            ("i3", "a", Some("c"), Unsure),
            ("i4", "a", None, Fail),
            ("i4", "a", Some("c"), Fail),
            // superseded: b first said pass on i4, then fail
            ("i4", "b", Some("c"), Pass),
            ("i4", "b", Some("c"), Fail),
        ] {
            put(&p, item, who, c, v);
        }
        assert!(is_store(&p));
        let f = read(&p, Part::Calibration).unwrap();
        let got: Vec<(String, Json)> =
            f.items.iter().map(|(_, v)| (v["id"].as_str().unwrap().to_string(), v["labels"].clone())).collect();
        assert_eq!(got, [("i1".to_string(), json!({ "c": true })), ("i4".to_string(), json!({ "c": false }))]);
        assert_eq!(f.items[0].1["rubric"], "reply");
        assert_eq!(f.items[0].1["answer"], "answer of i1");
        assert_eq!((f.counts.ties, f.counts.unsure_only, f.counts.whole_item, f.counts.used), (1, 1, 1, 2));
        assert!(read(&p, Part::HeldOut).unwrap_err().to_string().contains("labels split"));
        labels::write_split(&p, &Split { seed: 1, fraction: 0.25, held_out: vec!["i4".into()] }).unwrap();
        let f = read(&p, Part::Calibration).unwrap();
        assert_eq!(f.ids, ["i1"]);
        assert_eq!(f.counts.other_part, 1);
        let h = read(&p, Part::HeldOut).unwrap();
        assert_eq!(h.ids, ["i4"]);
        let calib = dir.path().join("c.jsonl");
        std::fs::write(&calib, "{\"answer\": \"x\", \"labels\": [true]}\n").unwrap();
        assert!(!is_store(&calib));
    }
}
