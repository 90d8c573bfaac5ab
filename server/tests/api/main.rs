//! Integration tests of Lore over HTTP: one binary (quick to link), many tests.
//! Each test spawns its own app on 127.0.0.1:0 with a fresh data directory.

// A test crate: a failed precondition should fail the test, loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod access;
mod answer;
mod auth;
mod cli;
mod cli_admin;
mod data;
mod embedded;
mod embedding_role;
mod extension;
mod feedback;
mod health;
mod helpers;
mod hosted;
mod indexing_jobs;
mod llama;
mod mcp;
mod metrics;
mod oauth;
#[path = "../../../engine/tests/engine/support/object_store.rs"]
mod object_store;
mod operations;
mod providers;
mod replicas;
mod request_bodies;
mod schema_file;
mod setup_state;
#[path = "../../../engine/tests/engine/support/site.rs"]
mod site;
mod sources;
mod storage;
mod toolserver;
mod tuning;
mod units;
