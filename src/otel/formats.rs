//! The whole-trajectory formats `evalua grade` knows (`trajectories`), in
//! the order they are asked, and the reading of a file one of them claims.

use std::io::Read as _;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::agentdojo::AgentDojo;
use super::atif::Atif;
use super::taubench::TauBench;
use super::trajectories::{Trajectory, TrajectoryFormat};
use crate::error::{Error, Result};
use crate::record::manifest::TraceInput;

/// A file holding whole trajectories larger than this is not read.
const MAX_DOCUMENT_BYTES: u64 = 256 << 20;

/// Every whole-trajectory format, in the order they are asked.
pub static FORMATS: &[&dyn TrajectoryFormat] = &[&TauBench, &Atif, &AgentDojo];

/// The format that claims a file beginning with `head`, if one does.
pub fn claimed(head: &[u8]) -> Option<&'static dyn TrajectoryFormat> {
    FORMATS.iter().copied().find(|f| f.claims(head))
}

/// The first 4 KiB of a file.
pub fn head(p: &Path) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(p)?.take(4096).read_to_end(&mut head)?;
    Ok(head)
}

/// Read `p` whole when a format claims it, each trajectory to `emit`; None:
/// no format claims it (it is read as spans).
pub fn read_file(
    p: &Path,
    display: &str,
    warn: &mut dyn FnMut(String),
    emit: &mut dyn FnMut(Trajectory) -> Result<()>,
) -> Result<Option<TraceInput>> {
    let cannot = |e: std::io::Error| Error::Input(format!("{display}: cannot read: {e}"));
    let Some(format) = claimed(&head(p).map_err(cannot)?) else { return Ok(None) };
    let bytes = std::fs::metadata(p).map_err(cannot)?.len();
    let mut stat = TraceInput { path: display.to_string(), format: "trajectories".into(), bytes, ..Default::default() };
    if bytes > MAX_DOCUMENT_BYTES {
        warn(format!(
            "{display}: {bytes} bytes, more than the {MAX_DOCUMENT_BYTES} a trajectory file may have: not read"
        ));
        return Ok(Some(stat));
    }
    let data = std::fs::read(p).map_err(cannot)?;
    stat.sha256 = Some(const_hex::encode(Sha256::digest(&data)));
    let (mut items, mut calls) = (0u64, 0u64);
    let mut counted = |t: Trajectory| {
        items += 1;
        calls += t.recorded.calls.len() as u64;
        emit(t)
    };
    if format.read(&data, display, warn, &mut counted)? {
        stat.format = format.name().into();
    } else {
        let all: Vec<&str> = FORMATS.iter().map(|f| f.describe()).collect();
        warn(format!("{display}: neither {}: not read", all.join(" nor ")));
    }
    (stat.items, stat.spans) = (items, calls);
    Ok(Some(stat))
}
