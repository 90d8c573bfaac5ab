//! Shapes that cross the wire: every request and response body of the JSON
//! endpoints, seen by the server (which reads the requests and fills the
//! responses from engine types) and the browser (which sends the requests
//! and reads the responses). The CLI prints the same views. SeaORM models
//! never appear here.
//!
//! One module per screen or surface; every item is re-exported here, so
//! `app::wire::SourceView` is the one path both sides use. Each module keeps
//! its conversions from engine types (and, for request bodies, to engine
//! inputs) next to its types, in a `from_engine` module compiled only with
//! `ssr`: the browser's build never sees the engine.

use serde::{Deserialize, Serialize};

mod answer;
mod errors;
mod feedback;
mod keys;
mod observability;
mod operations;
mod profile;
mod providers;
mod setup;
mod sources;
mod tuning;

pub use answer::*;
pub use errors::*;
pub use feedback::*;
pub use keys::*;
pub use observability::*;
pub use operations::*;
pub use profile::*;
pub use providers::*;
pub use setup::*;
pub use sources::*;
pub use tuning::*;

/// The body of a request to an endpoint that reads none (revoke, probe,
/// sync, enable, disable, reindex, the wizard's `next`, `back` and `index`).
/// It serializes to `{}`, what the console has always sent there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoBody {}

/// A time on the wire: RFC 3339 in UTC, to the second.
#[cfg(feature = "ssr")]
pub fn time(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// For a PATCH field that can be cleared: a key that is present becomes
/// `Some`, even when its value is `null` (`Some(None)`: clear it), so that only
/// an absent key (`#[serde(default)]`: `None`) means "leave it as it is".
/// Plain `Option<Option<T>>` would read `null` as absent. (Serialize such a
/// field with `skip_serializing_if = "Option::is_none"`, so that `None` stays
/// absent and `Some(None)` is sent as `null`.)
pub fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(deserializer).map(Some)
}
