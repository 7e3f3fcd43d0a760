//! `evalua view [DIR…]`: serve the local page over the run dirs under DIR
//! (default `runs/`) until stopped.

use std::path::PathBuf;

use crate::error::Result;
use crate::view;

pub fn view(
    dirs: Vec<PathBuf>,
    port: Option<u16>,
    open: bool,
    trace_url: Option<String>,
    annotator: Option<String>,
    labels: Option<PathBuf>,
) -> Result<u8> {
    let dirs = if dirs.is_empty() { vec![PathBuf::from("runs")] } else { dirs };
    view::serve(view::Options { dirs, port, open, trace_url, annotator, labels })?;
    Ok(0)
}
