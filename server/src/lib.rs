//! The HTTP edge of Lore and its command line. Handlers here are thin: they
//! parse input, call one engine function and map the result; see
//! `ARCHITECTURE.md` for the map.

pub mod bench;
pub mod cli;
pub mod commands;
pub mod config;
pub mod console;
pub mod http;
pub mod serve;
pub mod telemetry;

use axum::extract::FromRef;
use leptos::config::LeptosOptions;

/// What every handler can reach. Cheap to clone.
#[derive(Clone, FromRef)]
pub struct AppState {
    pub lore: engine::Lore,
    /// The tool server over `lore` (its push channels are this process's).
    pub tools: lore_toolserver::ToolServer,
    pub leptos: LeptosOptions,
    /// Request counters for `/metrics`.
    pub http_metrics: http::prometheus::HttpMetrics,
}
