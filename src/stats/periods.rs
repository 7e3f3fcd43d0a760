//! Periods of an interleaved run: its blocks grouped by when they started
//! (the run's span cut into equal windows), with each agent's trials, wall
//! time, provider latency and errors in each. A slow or failing provider
//! shows as a period where every agent's figures move together; a period
//! that moved one agent only would say the comparison is not what it seems.

use serde::Serialize;

use super::estimators::quantile;
use crate::record::{BlockRecord, Outcome};

/// At most this many periods.
pub const MAX_PERIODS: usize = 10;

/// One agent in one period.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeriodAgent {
    pub agent: String,
    pub trials: u32,
    pub accepted: u32,
    pub infra_errors: u32,
    pub wall_p50_ms: Option<f64>,
    pub provider_calls: u32,
    pub provider_errors: u32,
    pub provider_p50_ms: Option<f64>,
    pub provider_p95_ms: Option<f64>,
}

/// One period: the blocks that started in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Period {
    /// 1-based.
    pub period: usize,
    /// Its window, in ms from the run's start (the last one holds its end).
    pub from_ms: f64,
    pub to_ms: f64,
    pub blocks: usize,
    /// Per agent, in the run's order of agents.
    pub agents: Vec<PeriodAgent>,
}

/// Group `blocks` into at most `max` periods of equal length by when each
/// block started (its first trial's start), and sum each agent's trials in
/// each. Both agents of a block fall in the same period by construction.
pub fn periods(blocks: &[BlockRecord], agents: &[String], max: usize) -> Vec<Period> {
    if blocks.is_empty() || agents.is_empty() {
        return Vec::new();
    }
    let start = |b: &BlockRecord| b.trials.iter().map(|t| t.started_ms).fold(f64::INFINITY, f64::min);
    let starts: Vec<f64> = blocks.iter().map(|b| start(b).min(f64::MAX)).collect();
    let t0 = starts.iter().copied().fold(f64::INFINITY, f64::min);
    let t1 = starts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let n = max.clamp(1, blocks.len());
    let width = (t1 - t0) / n as f64;
    let index = |s: f64| if width > 0.0 { (((s - t0) / width) as usize).min(n - 1) } else { 0 };
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, &s) in starts.iter().enumerate() {
        members[index(s)].push(i);
    }
    members
        .iter()
        .enumerate()
        .filter(|(_, m)| !m.is_empty())
        .map(|(p, m)| {
            let per_agent = agents
                .iter()
                .map(|a| {
                    let trials: Vec<_> =
                        m.iter().flat_map(|&i| blocks[i].trials.iter().filter(|t| &t.agent == a)).collect();
                    let mut wall: Vec<f64> = trials.iter().map(|t| t.wall_ms).collect();
                    wall.sort_by(f64::total_cmp);
                    let mut lat: Vec<f64> = trials.iter().flat_map(|t| t.provider_latency_ms.iter().copied()).collect();
                    lat.sort_by(f64::total_cmp);
                    PeriodAgent {
                        agent: a.clone(),
                        trials: trials.len() as u32,
                        accepted: trials.iter().filter(|t| t.outcome == Outcome::Accepted).count() as u32,
                        infra_errors: trials.iter().filter(|t| t.outcome == Outcome::InfraError).count() as u32,
                        wall_p50_ms: quantile(&wall, 0.5),
                        provider_calls: trials.iter().map(|t| t.provider_calls).sum(),
                        provider_errors: trials.iter().map(|t| t.provider_errors).sum(),
                        provider_p50_ms: quantile(&lat, 0.5),
                        provider_p95_ms: quantile(&lat, 0.95),
                    }
                })
                .collect();
            Period {
                period: p + 1,
                from_ms: t0 + width * p as f64,
                to_ms: if p + 1 == n { t1 } else { t0 + width * (p + 1) as f64 },
                blocks: m.len(),
                agents: per_agent,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{BlockTrial, Ended};

    fn block(i: usize, at: f64, slow: bool) -> BlockRecord {
        let t = |agent: &str, offset: f64| BlockTrial {
            agent: agent.into(),
            started_ms: at + offset,
            wall_ms: if slow { 900.0 } else { 10.0 },
            outcome: Outcome::Accepted,
            ended: Ended::Final,
            provider_calls: 2,
            provider_errors: if slow { 1 } else { 0 },
            provider_latency_ms: vec![if slow { 800.0 } else { 5.0 }; 2],
        };
        BlockRecord {
            block: i,
            case: format!("c{i}"),
            trial: 1,
            seed: 1,
            order: vec!["A".into(), "B".into()],
            trials: vec![t("A", 0.0), t("B", 10.0)],
        }
    }

    #[test]
    fn a_slow_stretch_shows_in_one_period_for_both_agents() {
        // 20 blocks, one every 100 ms; blocks 10-13 are slow.
        let blocks: Vec<BlockRecord> = (0..20).map(|i| block(i, i as f64 * 100.0, (10..14).contains(&i))).collect();
        let agents = ["A".to_string(), "B".to_string()];
        let p = periods(&blocks, &agents, 5);
        assert_eq!(p.len(), 5);
        assert_eq!(p.iter().map(|p| p.blocks).sum::<usize>(), 20);
        for period in &p {
            let (a, b) = (&period.agents[0], &period.agents[1]);
            assert_eq!(a.trials, b.trials, "both agents of a block are in its period");
            assert_eq!(a.provider_errors, b.provider_errors);
        }
        let slow: Vec<usize> =
            p.iter().filter(|p| p.agents.iter().all(|a| a.provider_errors > 0)).map(|p| p.period).collect();
        assert_eq!(slow, [3, 4], "{p:?}");
        assert_eq!(p[2].agents[0].provider_p95_ms, Some(800.0));
        assert_eq!(p[0].agents[1].wall_p50_ms, Some(10.0));
    }
}
