//! The engine's integration tests against the real components (SQLite,
//! PostgreSQL, LanceDB in temporary directories, the real model files, a
//! local site for crawls), one module per area. One binary: each test
//! binary links LanceDB, DataFusion and candle, so one per area cost a long
//! link each.

// A test crate: a failed precondition should fail the test, loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod appdb;
mod audiences;
mod crawl;
mod embedding;
mod floors;
mod generation;
mod git_source;
mod ingest;
mod keys;
mod model_files;
mod paraphrase;
mod profile;
mod provider_redaction;
mod replicas;
mod retrieval;
mod rollups;
mod sessions;
mod store;
mod table_source;
mod units;
mod wizard;
