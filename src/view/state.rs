//! A run as the viewer holds it: the run read back (figures and gates, as
//! `evalua report` computes them) and its trial index, read from trials.jsonl
//! once and then followed: when the file grows (a run still writing), only
//! the new lines are read and the figures recomputed. Full records are not
//! kept; a trial's record is read again from its line when it is opened.

use crate::record::files;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Instant, SystemTime};

use super::catalog::RunRef;
use super::index::TrialIndex;
use crate::error::Result;
use crate::record::manifest::RunKind;
use crate::record::{Manifest, TrialRecord};
use crate::stats::{RunData, Tally};

/// Size and modification time of a file (None when absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp(Option<(u64, SystemTime)>);

impl Stamp {
    pub fn of(path: &std::path::Path) -> Stamp {
        Stamp(std::fs::metadata(path).ok().map(|m| (m.len(), m.modified().unwrap_or(SystemTime::UNIX_EPOCH))))
    }
    pub fn exists(&self) -> bool {
        self.0.is_some()
    }
    pub fn size(&self) -> u64 {
        self.0.map(|s| s.0).unwrap_or(0)
    }
    pub fn modified(&self) -> Option<SystemTime> {
        self.0.map(|s| s.1)
    }
}

/// What kind of run a run dir holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `evalua run`: an agent ran.
    Run,
    /// `evalua grade`: recorded traces graded.
    Graded,
    /// `evalua regrade`: a run's recorded final states graded again.
    Regraded,
}

impl Kind {
    /// The kind of a run, and the run dir it was re-graded from.
    pub fn of(m: &Manifest) -> (Kind, Option<String>) {
        let kind = match m.kind {
            RunKind::Run => Kind::Run,
            RunKind::Regraded => Kind::Regraded,
            RunKind::Graded => Kind::Graded,
        };
        (kind, m.regraded_from.as_ref().map(|r| r.dir.clone()))
    }
}

/// A run read back and indexed.
pub struct Loaded {
    pub run: RunData,
    pub tally: Tally,
    pub index: TrialIndex,
    /// Where reading trials.jsonl stopped.
    offset: u64,
    line: usize,
    trials_stamp: Stamp,
    manifest_stamp: Stamp,
    /// Bumped whenever the figures change.
    pub version: u64,
    pub loaded_at: Instant,
    pub load_ms: f64,
}

impl Loaded {
    pub fn load(r: &RunRef) -> Result<Loaded> {
        let t0 = Instant::now();
        let run = RunData::open(&r.dir, false)?;
        let tally = run.tally();
        let index = TrialIndex::new(&run.infos);
        let mut l = Loaded {
            manifest_stamp: Stamp::of(&r.dir.join(files::MANIFEST)),
            run,
            tally,
            index,
            offset: 0,
            line: 0,
            trials_stamp: Stamp::default(),
            version: 0,
            loaded_at: t0,
            load_ms: 0.0,
        };
        l.read_more(r)?;
        l.load_ms = t0.elapsed().as_secs_f64() * 1000.0;
        Ok(l)
    }

    /// Read what was appended to trials.jsonl since the last read.
    fn read_more(&mut self, r: &RunRef) -> Result<bool> {
        let path = r.dir.join(files::TRIALS);
        let stamp = Stamp::of(&path);
        if stamp == self.trials_stamp && self.version > 0 {
            return Ok(false);
        }
        self.trials_stamp = stamp;
        let mut added = 0;
        let mut failure = None;
        if stamp.exists() {
            let mut it = self.run.run_dir.records_from(self.offset, self.line)?;
            for item in it.by_ref() {
                let counted = item.and_then(|at| {
                    let case = self.run.add(&mut self.tally, at.line, &at.record)?;
                    self.push(case, &at.record, at.offset, at.len);
                    Ok(())
                });
                if let Err(e) = counted {
                    failure = Some(e);
                    break;
                }
                added += 1;
            }
            // Where the next read starts, also after a bad line (it is read again, and refused again).
            self.offset = it.offset;
            self.line = it.line;
        }
        if added > 0 || self.version == 0 {
            self.run.refigure(&self.tally);
            self.version += 1;
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(added > 0),
        }
    }

    fn push(&mut self, case: usize, rec: &TrialRecord, offset: u64, len: usize) {
        self.index.push(case, rec, rec.failure_modes.as_deref().unwrap_or_default(), offset, len);
    }

    /// Has nothing changed since the last read (two `stat`s)?
    fn current(&self, r: &RunRef) -> bool {
        Stamp::of(&r.dir.join(files::TRIALS)) == self.trials_stamp
            && Stamp::of(&r.dir.join(files::MANIFEST)) == self.manifest_stamp
    }

    /// Is the file behind this state different (shrunk, rewritten, manifest changed)?
    fn replaced(&self, r: &RunRef) -> bool {
        let t = Stamp::of(&r.dir.join(files::TRIALS));
        Stamp::of(&r.dir.join(files::MANIFEST)) != self.manifest_stamp || t.size() < self.offset
    }

    /// The record of a trial, read again from its line, with its failure modes.
    pub fn record(&self, case: usize, trial: u32) -> Option<Result<(TrialRecord, Vec<String>)>> {
        let row = self.index.find(case, trial)?;
        Some(self.run.run_dir.record_at(row.offset, row.len as usize).map(|rec| {
            let modes = row.modes.iter().map(|&m| self.index.modes.name(m).to_string()).collect();
            (rec, modes)
        }))
    }
}

/// One run's slot in the cache: loaded at most once at a time.
#[derive(Default)]
pub struct Slot {
    state: RwLock<Option<Loaded>>,
    loading: Mutex<()>,
    used: Mutex<Option<Instant>>,
}

/// Runs kept read at once; the least recently used beyond this are let go
/// (and read again when next asked for).
pub const MAX_LOADED: usize = 8;

/// The runs the viewer has read, by canonical path.
#[derive(Default)]
pub struct Cache {
    slots: Mutex<HashMap<std::path::PathBuf, Arc<Slot>>>,
}

impl Cache {
    /// The run, read (or brought up to date) as needed; `f` sees it.
    pub fn with<T>(&self, r: &RunRef, f: impl FnOnce(&Loaded) -> T) -> Result<T> {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            let slot = slots.entry(r.dir.clone()).or_default().clone();
            *slot.used.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            if slots.len() > MAX_LOADED {
                let mut by_use: Vec<(Option<Instant>, std::path::PathBuf)> =
                    slots.iter().map(|(k, s)| (*s.used.lock().unwrap_or_else(|e| e.into_inner()), k.clone())).collect();
                by_use.sort();
                for (_, k) in by_use.into_iter().take(slots.len() - MAX_LOADED) {
                    slots.remove(&k);
                }
            }
            slot
        };
        {
            let guard = slot.state.read().unwrap_or_else(|e| e.into_inner());
            if let Some(l) = guard.as_ref()
                && l.current(r)
            {
                return Ok(f(l));
            }
        }
        {
            let _one = slot.loading.lock().unwrap_or_else(|e| e.into_inner());
            let stale = {
                let guard = slot.state.read().unwrap_or_else(|e| e.into_inner());
                match guard.as_ref() {
                    None => None,
                    Some(l) if l.current(r) => Some(false),
                    Some(l) => Some(l.replaced(r)),
                }
            };
            match stale {
                // Not read yet, or replaced: read from the start (outside the write lock).
                None | Some(true) => {
                    let fresh = Loaded::load(r)?;
                    *slot.state.write().unwrap_or_else(|e| e.into_inner()) = Some(fresh);
                }
                Some(false) => {
                    let mut guard = slot.state.write().unwrap_or_else(|e| e.into_inner());
                    if let Some(l) = guard.as_mut() {
                        l.read_more(r)?;
                    }
                }
            }
        }
        let guard = slot.state.read().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            Some(l) => Ok(f(l)),
            None => Err(crate::error::Error::Input(format!("{}: could not be read", r.dir.display()))),
        }
    }
}
