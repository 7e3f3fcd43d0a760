//! The command agents' JSON Lines parser (`agent::protocol::parse_line`):
//! whatever bytes an agent prints, a line is a message, blank, or a protocol
//! error whose quote stays short, and never a panic.
#![no_main]

use evalua::agent::protocol::{AgentMessage, parse_line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parse_line(data) {
        Ok(None) => assert!(data.iter().all(|b| b.is_ascii_whitespace())),
        Ok(Some(AgentMessage::Usage { cost_usd, .. })) => assert!(cost_usd.is_finite() && cost_usd >= 0.0),
        Ok(Some(_)) => {}
        // An error quotes at most 200 characters of the line (plus its own words).
        Err(why) => assert!(why.chars().count() < 400, "{why}"),
    }
});
