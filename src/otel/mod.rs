//! OpenTelemetry traces, both ways (SPEC §9): a run's trials out as GenAI
//! spans over OTLP ([`export`]), and recorded traces in, read into the items
//! `evalua grade` grades ([`read`] the files, [`item`] the conventions;
//! whole trajectories of other harnesses through [`trajectories`]' formats,
//! one file each: [`taubench`], [`atif`]).

pub mod agentdojo;
pub mod atif;
pub mod export;
pub mod formats;
pub mod item;
pub mod read;
pub mod records;
pub mod span;
pub mod stream;
pub mod taubench;
pub mod trajectories;

pub use span::Span;
