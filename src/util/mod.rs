//! The bottom layer: small, general helpers with no knowledge of suites,
//! trials or Lua. Everything above may use them; they use nothing above.

pub mod cancel;
pub mod capped;
pub mod dataset;
pub mod digest;
pub mod inert;
pub mod lua_literal;
pub mod memory;
pub mod names;
pub mod paths;
pub mod regex;
pub mod schema;
pub mod stdio;
pub mod time;
pub mod tls;
pub mod tree;
pub mod watch;
