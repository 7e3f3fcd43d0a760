//! `evalua view`: a local web page over every run dir under the folders it
//! is given — the runs with their headline figures, a run with its report
//! and its trials filtered and paged on the server, one trial's trajectory
//! and state, two runs of a suite compared. Served on 127.0.0.1 from the
//! binary alone (no network), reading run dirs only through the confinement
//! rules of [`catalog`].

mod app;
pub mod catalog;
pub mod index;
pub mod label_api;
pub mod labels;
pub mod list;
pub mod pages;
pub mod review;
pub mod server;
pub mod state;
pub mod synthetic;
pub mod trial;

pub use server::{Options, serve};
