//! The errors that end a command, and their exit codes (SPEC §2):
//! `2` the suite, a flag or an input file is wrong (one line, `file:line`
//! where there is one); `3` evalua itself could not go on (disk full, run dir
//! unwritable). Everything that goes wrong *inside* a trial is a recorded
//! outcome instead, never an error here.

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// The user's to fix: exit 2.
    #[error("{0}")]
    Input(String),
    /// evalua's environment failed it: exit 3.
    #[error("{0}")]
    Environment(String),
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Input(_) => 2,
            Error::Environment(_) => 3,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
