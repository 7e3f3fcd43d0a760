//! PostgreSQL sandboxes (`sandbox = { db = "postgres", url_env = "EVALUA_PG_URL" }`).
//!
//! Per run, per distinct (schema, fixture): a template database, loaded once
//! from the SQL files and then closed to connections. Per trial: a database
//! of its own, `CREATE DATABASE … TEMPLATE` that template, dropped when the
//! trial ends (after grading; also when the trial panics, by a guard). `t.initial`
//! reads one more copy per template, made the first time a check asks.
//!
//! The trial's connection logs in as a role made for the trial (no
//! superuser, CREATEDB or CREATEROLE, no membership, a random password sent
//! as a SCRAM verifier), dropped after its database: PUBLIC's CONNECT is
//! revoked on every database of the run, and the trial's role is granted
//! CONNECT on its own copy only; in the template, PUBLIC is granted the
//! fixture's tables and sequences and CREATE on its schemas, so the trial's
//! role may use them there (the admin role keeps loading fixtures and
//! making and dropping databases and roles; it must have CREATEDB and
//! CREATEROLE, else [`Server::connect`] refuses it).
//!
//! Every database and role a run creates is named `evalua_<token>_…`, where the token
//! is the run's own (16 hex digits), and every connection the run opens
//! carries `application_name = evalua:<token>`. Nothing is left behind:
//! - the run drops all of its databases and roles when it ends ([`Server::shutdown`]);
//! - a run that could not (killed, the machine died) leaves databases and roles whose
//!   token no live session carries: the next run against the same server
//!   drops them when it starts ([`Server::connect`]). The check is by session,
//!   not by host, so runs on many machines sharing one server (a Slurm array)
//!   never drop each other's databases.
//!
//! Statements take `?` placeholders, as on SQLite (turned into `$1`, `$2`, …
//! outside quotes and comments), or PostgreSQL's own `$1`. Parameters are sent
//! as text and typed by the server; results are read by type (integers,
//! floats, numeric, text, booleans, bytea, json, uuid, dates and times;
//! anything else asks for a cast). A read-only handle runs each statement in
//! its own `READ ONLY` transaction, rolled back after.
//!
//! Its parts: the server and the run's lifecycle on it (`server`), the
//! templates and their copies (`template`), a connection as a `Database`
//! (`handle`), placeholder rewriting (`placeholders`), and the wire format
//! (`wire`).

mod handle;
mod placeholders;
mod server;
mod template;
mod wire;

pub use handle::PgDb;
pub use placeholders::placeholders;
pub use server::{Server, shutdown_all};
pub use template::Template;
