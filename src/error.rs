//! Errors that are the user's to fix (a bad suite, flag or input file): exit 2,
//! one line, `file:line` where there is one. Everything else is a trial outcome.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct UserError(pub String);

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UserError {}

pub type Result<T> = std::result::Result<T, UserError>;

/// Build a [`UserError`] with `format!` syntax.
#[macro_export]
macro_rules! user_error {
    ($($arg:tt)*) => { $crate::error::UserError(format!($($arg)*)) };
}

impl From<std::io::Error> for UserError {
    fn from(e: std::io::Error) -> Self {
        UserError(e.to_string())
    }
}
