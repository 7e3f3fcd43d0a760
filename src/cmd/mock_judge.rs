//! `evalua mock-judge RULES.json [--port N]`: an offline judge to try judges,
//! calibration and cascades with (see `judge::mock`); serves until stopped.

use std::path::Path;

use crate::error::Result;

pub fn mock_judge(rules: &Path, port: u16) -> Result<u8> {
    crate::judge::mock::serve(rules, port)?;
    Ok(0)
}
