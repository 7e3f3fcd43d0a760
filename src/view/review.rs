//! `evalua view --review users [--sample N] [--seed S]` (SPEC §18): a
//! labelling queue of a seeded random sample of the served trials that had a
//! simulated user. A sampled trial offers one criterion, "the simulated user
//! followed its profile", under the name of its case's adherence judge (else
//! `user_adherence`), and its label stores what that judge reads, so that
//! `evalua calibrate --labels` measures the judge against people.

use std::collections::HashSet;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Value as Json, json};

use super::catalog::RunRef;
use crate::judge::labels::{USER_CRITERION, USER_RUBRIC};
use crate::record::manifest::UserPin;
use crate::record::{Manifest, RunDir, Trace, TrialRecord};
use crate::stats::agree::SplitMix;

/// The sample size when `--sample` is not given.
pub const DEFAULT_SAMPLE: usize = 20;

/// One sampled trial.
#[derive(Debug, Clone, Serialize)]
pub struct Picked {
    /// The run's id in this viewer (`/run?r=…`).
    pub r: String,
    #[serde(skip)]
    pub dir: PathBuf,
    pub case: String,
    pub trial: u32,
}

/// The sample this viewer session reviews.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub seed: u64,
    /// How many trials were asked for.
    pub sample: usize,
    /// How many trials with a simulated user the served runs hold.
    pub eligible: usize,
    pub trials: Vec<Picked>,
    pub criterion: &'static str,
}

/// The trials with a `user` record in the runs, in (run, case, trial) order;
/// a trial recorded twice (a resumed run) counts once.
fn eligible(runs: &[RunRef]) -> Vec<Picked> {
    let mut out = Vec::new();
    let mut runs: Vec<&RunRef> = runs.iter().collect();
    runs.sort_by(|a, b| a.id.cmp(&b.id));
    for r in runs {
        let Ok(records) = RunDir::open(&r.dir).and_then(|d| d.records()) else { continue };
        let mut seen = HashSet::new();
        let mut here: Vec<Picked> = records
            .filter_map(|x| x.ok())
            .filter(|(_, _, rec)| rec.user.is_some())
            .filter(|(_, _, rec)| seen.insert((rec.case.clone(), rec.trial)))
            .map(|(_, _, rec)| Picked { r: r.id.clone(), dir: r.dir.clone(), case: rec.case, trial: rec.trial })
            .collect();
        here.sort_by(|a, b| (&a.case, a.trial).cmp(&(&b.case, b.trial)));
        out.extend(here);
    }
    out
}

/// A seeded random sample of `n` of the trials with a simulated user (all
/// of them when fewer): the same runs and seed give the same sample.
pub fn sample(runs: &[RunRef], n: usize, seed: u64) -> Sample {
    let mut all = eligible(runs);
    let eligible = all.len();
    let take = n.min(all.len());
    // A partial Fisher–Yates shuffle with the project's stable PRNG.
    let mut rng = SplitMix::new(seed);
    for i in 0..take {
        let j = i + rng.below(all.len() - i);
        all.swap(i, j);
    }
    all.truncate(take);
    all.sort_by(|a, b| (&a.r, &a.case, a.trial).cmp(&(&b.r, &b.case, b.trial)));
    Sample { seed, sample: n, eligible, trials: all, criterion: USER_CRITERION }
}

impl Sample {
    /// What one run needs of the review: its sampled trials and its users.
    pub fn for_run(&self, dir: &std::path::Path, m: &Manifest) -> RunReview {
        RunReview {
            picked: self.trials.iter().filter(|p| p.dir == dir).map(|p| (p.case.clone(), p.trial)).collect(),
            users: m.users.clone(),
        }
    }

    /// The line the console and the run page show.
    pub fn describe(&self) -> String {
        format!(
            "reviewing simulated users: a random sample of {} of the {} trial(s) with a simulated user (--sample {}, --seed {}); criterion: \"{}\"",
            self.trials.len(),
            self.eligible,
            self.sample,
            self.seed,
            self.criterion
        )
    }
}

/// The review as one run sees it.
#[derive(Debug, Clone, Default)]
pub struct RunReview {
    pub picked: HashSet<(String, u32)>,
    users: Vec<UserPin>,
}

impl RunReview {
    pub fn has(&self, case: &str, trial: u32) -> bool {
        self.picked.contains(&(case.to_string(), trial))
    }

    fn pin(&self, case: &str) -> Option<&UserPin> {
        self.users.iter().find(|p| p.cases.iter().any(|c| c == case))
    }

    /// The rubric a label of `case`'s user is filed under: its adherence judge's name.
    pub fn rubric(&self, case: &str) -> String {
        self.pin(case).and_then(|p| p.adherence.clone()).unwrap_or_else(|| USER_RUBRIC.to_string())
    }

    /// What the case's adherence judge reads of the trial (SPEC §15's `data`).
    pub fn item_data(&self, rec: &TrialRecord, trace: Option<&Trace>) -> Json {
        let (profile, goal) = self.pin(&rec.case).map(|p| (p.profile.as_str(), p.goal.as_str())).unwrap_or(("", ""));
        let messages = trace.map(|t| t.messages.as_slice()).unwrap_or_default();
        let data = crate::trial::adherence::conduct_data(profile, goal, messages);
        let mut d = serde_json::to_value(data).unwrap_or_else(|_| json!({}));
        d["case"] = json!(rec.case);
        d["rubric"] = json!(self.rubric(&rec.case));
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs_with(n: u32) -> (tempfile::TempDir, Vec<RunRef>) {
        let dir = tempfile::tempdir().unwrap();
        let lines: String = (1..=n)
            .map(|t| {
                let user = (t % 5 != 0).then(crate::record::UserRecord::default);
                let r = TrialRecord { case: "c".into(), trial: t, user, ..Default::default() };
                serde_json::to_string(&r).unwrap() + "\n"
            })
            .collect();
        std::fs::write(dir.path().join(crate::record::files::TRIALS), lines).unwrap();
        std::fs::write(dir.path().join(crate::record::files::MANIFEST), "{}").unwrap();
        let r = RunRef { id: "0:r".into(), root: 0, rel: "r".into(), dir: dir.path().to_path_buf() };
        (dir, vec![r])
    }

    #[test]
    fn the_same_seed_gives_the_same_sample_and_another_seed_another() {
        let (_d, runs) = runs_with(100);
        let trials = |s: &Sample| s.trials.iter().map(|p| p.trial).collect::<Vec<_>>();
        let a = sample(&runs, 20, 7);
        assert_eq!(a.eligible, 80, "trials without a user record are not eligible");
        assert_eq!(a.trials.len(), 20);
        assert!(a.trials.iter().all(|p| p.trial % 5 != 0));
        assert_eq!(trials(&a), trials(&sample(&runs, 20, 7)));
        assert_ne!(trials(&a), trials(&sample(&runs, 20, 8)));
        let mut set = trials(&a);
        set.dedup();
        assert_eq!(set.len(), 20, "no trial twice");
        assert_eq!(sample(&runs, 500, 7).trials.len(), 80, "all of them when fewer");
    }
}
