//! `--partition hash:I/N`: a deterministic share of a run's (case, trial)
//! pairs for one CI job (`evalua merge` puts the shares back together), and
//! `--partition auto`, which reads I and N from the engine running evalua
//! (SPEC §12): a Slurm job array, a Kubernetes Indexed Job, or
//! `EVALUA_PARTITION=I/N` in a CI matrix.
//!
//! The share of a pair is a stable hash (SHA-256 of the case id and trial
//! number, not Rust's randomly seeded hasher), so every job of a matrix agrees on
//! it whatever the machine, and the seed of each trial does not depend on the
//! partition: a merged run holds the very records an unpartitioned run would.

use std::fmt;

use sha2::{Digest, Sha256};

/// Part `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    pub index: u32,
    pub count: u32,
}

impl Partition {
    /// Parse `hash:I/N` with 1 ≤ I ≤ N.
    pub fn parse(s: &str) -> std::result::Result<Partition, String> {
        let bad = || format!("expected hash:I/N with 1 ≤ I ≤ N (e.g. hash:1/4), got {s:?}");
        let rest = s.strip_prefix("hash:").ok_or_else(bad)?;
        let (i, n) = rest.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Partition { index, count })
    }

    /// Whether (case, trial) falls in this part.
    pub fn contains(&self, case: &str, trial: u32) -> bool {
        bucket(case, trial, self.count) == self.index - 1
    }
}

/// `--partition` as given: a share, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionArg {
    Fixed(Partition),
    Auto,
}

impl PartitionArg {
    /// Parse `hash:I/N` or `auto`.
    pub fn parse(s: &str) -> std::result::Result<PartitionArg, String> {
        if s == "auto" {
            return Ok(PartitionArg::Auto);
        }
        Partition::parse(s).map(PartitionArg::Fixed).map_err(|e| format!("{e}, or auto"))
    }

    /// The share: as given, or from the environment (`auto`), with where it came from.
    pub fn resolve(self, var: &dyn Fn(&str) -> Option<String>) -> std::result::Result<Resolved, String> {
        match self {
            PartitionArg::Fixed(partition) => Ok(Resolved { partition, source: None }),
            PartitionArg::Auto => from_env(var),
        }
    }
}

/// A share and, for `auto`, the variables it was read from (for the manifest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub partition: Partition,
    pub source: Option<String>,
}

/// The variables `--partition auto` reads, for error messages.
const ENGINES: &str = "SLURM_ARRAY_TASK_ID (a Slurm job array), JOB_COMPLETION_INDEX with EVALUA_PARTITIONS \
                       (a Kubernetes Indexed Job) or EVALUA_PARTITION=I/N (a CI matrix)";

/// `--partition auto`: read the share from the engine's variables. Every
/// source that is set must agree; none set, or one set inconsistently, is an
/// error saying which variable and why.
pub fn from_env(var: &dyn Fn(&str) -> Option<String>) -> std::result::Result<Resolved, String> {
    let get = |name: &str| var(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let int = |name: &str| -> std::result::Result<Option<u64>, String> {
        match get(name) {
            None => Ok(None),
            Some(v) => v
                .parse::<u64>()
                .map(Some)
                .map_err(|_| format!("--partition auto: {name}={v:?} is not a non-negative integer")),
        }
    };
    let mut found: Vec<(Partition, String)> = Vec::new();

    // Slurm: the array's ids min..max become parts 1..count.
    if let Some(id) = int("SLURM_ARRAY_TASK_ID")? {
        let (min, max, count) =
            (int("SLURM_ARRAY_TASK_MIN")?, int("SLURM_ARRAY_TASK_MAX")?, int("SLURM_ARRAY_TASK_COUNT")?);
        let (Some(min), Some(max), Some(count)) = (min, max, count) else {
            return Err(format!(
                "--partition auto: SLURM_ARRAY_TASK_ID={id} is set but not SLURM_ARRAY_TASK_MIN, _MAX and _COUNT \
                 (Slurm sets all four in an array task)"
            ));
        };
        if !(min <= id && id <= max) {
            return Err(format!("--partition auto: SLURM_ARRAY_TASK_ID={id} is outside the array's ids {min}..{max}"));
        }
        if max - min + 1 != count {
            return Err(format!(
                "--partition auto: the Slurm array's ids {min}..{max} are not contiguous ({count} tasks): \
                 a step (--array=1-15:2) or a list with gaps leaves ids that are not parts; use --array={min}-{}",
                min + count - 1
            ));
        }
        let p = Partition { index: to_u32(id - min + 1)?, count: to_u32(count)? };
        found.push((p, format!("SLURM_ARRAY_TASK_ID={id} of {min}..{max}")));
    }

    // Kubernetes: a 0-based completion index, and the count the Job was given.
    let k8s_count = int("EVALUA_PARTITIONS")?;
    match (int("JOB_COMPLETION_INDEX")?, k8s_count) {
        (Some(idx), Some(n)) => {
            if n == 0 || idx >= n {
                return Err(format!(
                    "--partition auto: JOB_COMPLETION_INDEX={idx} is not below EVALUA_PARTITIONS={n}: \
                     set EVALUA_PARTITIONS to the Job's spec.completions"
                ));
            }
            let p = Partition { index: to_u32(idx + 1)?, count: to_u32(n)? };
            found.push((p, format!("JOB_COMPLETION_INDEX={idx} with EVALUA_PARTITIONS={n}")));
        }
        (Some(idx), None) => {
            return Err(format!(
                "--partition auto: JOB_COMPLETION_INDEX={idx} is set but EVALUA_PARTITIONS is not: \
                 set it to the Indexed Job's spec.completions"
            ));
        }
        (None, _) => {}
    }

    // A CI matrix: I/N (hash:I/N accepted too).
    if let Some(v) = get("EVALUA_PARTITION") {
        let text = if v.starts_with("hash:") { v.clone() } else { format!("hash:{v}") };
        let p = Partition::parse(&text)
            .map_err(|_| format!("--partition auto: EVALUA_PARTITION={v:?}: expected I/N with 1 ≤ I ≤ N (e.g. 2/4)"))?;
        if let Some(n) = k8s_count
            && n != p.count as u64
        {
            return Err(format!("--partition auto: EVALUA_PARTITION={v} but EVALUA_PARTITIONS={n}: the counts differ"));
        }
        found.push((p, format!("EVALUA_PARTITION={v}")));
    }

    match found.as_slice() {
        [] => {
            let hint = if let Some(n) = k8s_count {
                format!(" (EVALUA_PARTITIONS={n} is set but JOB_COMPLETION_INDEX is not: is this an Indexed Job?)")
            } else if let Some(job) = get("SLURM_JOB_ID") {
                format!(" (this is Slurm job {job}, but not an array task: submit with sbatch --array=1-N)")
            } else {
                String::new()
            };
            Err(format!("--partition auto: none of {ENGINES} is set{hint}"))
        }
        [(first, source), rest @ ..] => {
            if let Some((other, other_source)) = rest.iter().find(|(p, _)| p != first) {
                return Err(format!(
                    "--partition auto: {source} says part {first} but {other_source} says {other}: \
                     unset the one that does not apply"
                ));
            }
            let all: Vec<&str> = found.iter().map(|(_, s)| s.as_str()).collect();
            Ok(Resolved { partition: *first, source: Some(all.join("; ")) })
        }
    }
}

fn to_u32(n: u64) -> std::result::Result<u32, String> {
    u32::try_from(n).map_err(|_| format!("--partition auto: {n} parts is more than evalua supports"))
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hash:{}/{}", self.index, self.count)
    }
}

/// The 0-based part of (case, trial) among `count`.
pub fn bucket(case: &str, trial: u32, count: u32) -> u32 {
    let mut h = Sha256::new();
    h.update(b"evalua-partition\0");
    h.update(case.as_bytes());
    h.update([0]);
    h.update(trial.to_le_bytes());
    let d = h.finalize();
    (u64::from_le_bytes(d[..8].try_into().expect("8 bytes")) % count as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        assert_eq!(Partition::parse("hash:2/3"), Ok(Partition { index: 2, count: 3 }));
        for bad in ["hash:0/3", "hash:4/3", "hash:1/0", "2/3", "hash:a/3", "count:1/2"] {
            assert!(Partition::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Partition::parse("hash:2/3").unwrap().to_string(), "hash:2/3");
    }

    #[test]
    fn every_pair_lands_in_exactly_one_part_and_the_parts_are_balanced() {
        let n = 4;
        let mut sizes = [0u32; 4];
        for c in 0..250 {
            for t in 1..=4 {
                let case = format!("case_{c}");
                let owners: Vec<u32> =
                    (1..=n).filter(|i| Partition { index: *i, count: n }.contains(&case, t)).collect();
                assert_eq!(owners.len(), 1);
                sizes[(owners[0] - 1) as usize] += 1;
            }
        }
        for s in sizes {
            assert!((200..=300).contains(&s), "unbalanced parts: {sizes:?}");
        }
    }

    #[test]
    fn the_hash_is_stable_across_builds() {
        // A fixed value: changing the hash would silently reshuffle CI matrices.
        let v: Vec<u32> = (1..=6).map(|t| bucket("refund_partial", t, 7)).collect();
        assert_eq!(v, FIXED.to_vec());
    }
    const FIXED: [u32; 6] = [0, 6, 0, 4, 5, 4];

    fn auto(vars: &[(&str, &str)]) -> std::result::Result<Resolved, String> {
        let map: std::collections::HashMap<String, String> =
            vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        PartitionArg::Auto.resolve(&|k| map.get(k).cloned())
    }
    fn part(r: std::result::Result<Resolved, String>) -> (u32, u32) {
        let p = r.unwrap().partition;
        (p.index, p.count)
    }
    const SLURM: [(&str, &str); 4] = [
        ("SLURM_ARRAY_TASK_ID", "102"),
        ("SLURM_ARRAY_TASK_MIN", "101"),
        ("SLURM_ARRAY_TASK_MAX", "108"),
        ("SLURM_ARRAY_TASK_COUNT", "8"),
    ];

    #[test]
    fn auto_reads_slurm_arrays_mapping_ids_onto_parts() {
        assert_eq!(part(auto(&SLURM)), (2, 8));
        let zero = [
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "7"),
            ("SLURM_ARRAY_TASK_COUNT", "8"),
        ];
        assert_eq!(part(auto(&zero)), (1, 8));
        let r = auto(&SLURM).unwrap();
        assert_eq!(r.source.as_deref(), Some("SLURM_ARRAY_TASK_ID=102 of 101..108"));
        // A stepped array: ids 1, 3, .., 15 are 8 tasks over 15 ids.
        let stepped = [
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_MAX", "15"),
            ("SLURM_ARRAY_TASK_COUNT", "8"),
        ];
        assert!(auto(&stepped).unwrap_err().contains("not contiguous"), "{:?}", auto(&stepped));
        assert!(auto(&[("SLURM_ARRAY_TASK_ID", "3")]).unwrap_err().contains("SLURM_ARRAY_TASK_MIN"));
        let outside = [("SLURM_ARRAY_TASK_ID", "9"), SLURM[1], SLURM[2], SLURM[3]];
        assert!(auto(&outside).unwrap_err().contains("outside"));
        let bad = [("SLURM_ARRAY_TASK_ID", "x"), SLURM[1], SLURM[2], SLURM[3]];
        assert!(auto(&bad).unwrap_err().contains("not a non-negative integer"));
    }

    #[test]
    fn auto_reads_indexed_jobs_and_ci_matrices() {
        assert_eq!(part(auto(&[("JOB_COMPLETION_INDEX", "0"), ("EVALUA_PARTITIONS", "3")])), (1, 3));
        assert_eq!(part(auto(&[("JOB_COMPLETION_INDEX", "2"), ("EVALUA_PARTITIONS", "3")])), (3, 3));
        assert!(auto(&[("JOB_COMPLETION_INDEX", "3"), ("EVALUA_PARTITIONS", "3")]).unwrap_err().contains("not below"));
        assert!(auto(&[("JOB_COMPLETION_INDEX", "1")]).unwrap_err().contains("EVALUA_PARTITIONS is not"));
        assert_eq!(part(auto(&[("EVALUA_PARTITION", "2/4")])), (2, 4));
        assert_eq!(part(auto(&[("EVALUA_PARTITION", "hash:2/4")])), (2, 4));
        assert!(auto(&[("EVALUA_PARTITION", "5/4")]).unwrap_err().contains("EVALUA_PARTITION=\"5/4\""));
        // A one-off re-run of one part of an Indexed Job: EVALUA_PARTITION, no index.
        assert_eq!(part(auto(&[("EVALUA_PARTITION", "3/3"), ("EVALUA_PARTITIONS", "3")])), (3, 3));
        assert!(
            auto(&[("EVALUA_PARTITION", "3/4"), ("EVALUA_PARTITIONS", "3")]).unwrap_err().contains("counts differ")
        );
    }

    #[test]
    fn auto_refuses_no_source_and_disagreeing_sources() {
        let e = auto(&[]).unwrap_err();
        assert!(e.contains("none of SLURM_ARRAY_TASK_ID"), "{e}");
        let e = auto(&[("SLURM_JOB_ID", "77")]).unwrap_err();
        assert!(e.contains("not an array task"), "{e}");
        let e = auto(&[("EVALUA_PARTITIONS", "3")]).unwrap_err();
        assert!(e.contains("is this an Indexed Job"), "{e}");
        // Empty values count as unset.
        assert!(auto(&[("EVALUA_PARTITION", " ")]).is_err());
        let mut both = SLURM.to_vec();
        both.push(("EVALUA_PARTITION", "3/8"));
        let e = auto(&both).unwrap_err();
        assert!(e.contains("says part hash:2/8 but EVALUA_PARTITION=3/8 says hash:3/8"), "{e}");
        let mut agree = SLURM.to_vec();
        agree.push(("EVALUA_PARTITION", "2/8"));
        assert_eq!(part(auto(&agree)), (2, 8));
        assert_eq!(PartitionArg::parse("hash:1/2"), Ok(PartitionArg::Fixed(Partition { index: 1, count: 2 })));
        assert!(PartitionArg::parse("automatic").unwrap_err().contains("or auto"));
    }
}
