//! The `lore` commands beside `serve`: each one a file, each acting through
//! the same engine calls as the console and the API, on the same data
//! directory and database, and printing (under `--json`) the same views.
//! Runs started here execute in this process with a progress bar; a run the
//! server's worker already holds is followed instead.

pub mod ask;
pub mod evals;
pub mod ingest;
pub mod jobs;
pub mod keys;
pub mod models;
pub mod output;
pub mod providers;
pub mod rollups;
pub mod schema;
pub mod search;
pub mod sources;
pub mod users;

use anyhow::Context;
use engine::audit::Actor;
use engine::{Lore, Settings};

/// The CLI acts as the system (audit entries say `system`).
pub(crate) const ACTOR: Actor = Actor::System;

pub(crate) async fn open(settings: Settings) -> anyhow::Result<Lore> {
    Lore::open(settings).await.context("opening Lore")
}
