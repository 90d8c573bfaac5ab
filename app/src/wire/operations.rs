//! The operations API (`POST /operation`): its request is
//! `{"operation": name, ...args}`, read by the engine itself (each
//! operation's arguments are typed there, HarperDB-compatible), and its
//! response is what the operation returns: HarperDB's shapes for the
//! application database, and for Lore's own operations the same views the
//! console shows.

use serde::{Deserialize, Serialize};

/// What applying the schema file did (`lore schema apply --json`), by
/// `database.table`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaAppliedView {
    pub created: Vec<String>,
    pub changed: Vec<String>,
    pub unchanged: Vec<String>,
}

#[cfg(feature = "ssr")]
impl From<engine::appdb::schema::Applied> for SchemaAppliedView {
    fn from(applied: engine::appdb::schema::Applied) -> Self {
        Self { created: applied.created, changed: applied.changed, unchanged: applied.unchanged }
    }
}

#[cfg(feature = "ssr")]
mod from_engine {
    use crate::wire::{
        AnswerResponse, JobView, KeyView, ObservabilityResponse, ProfileVersionView, RetrieveResponse,
        SetupState, SourceView,
    };
    use engine::operations::Outcome;

    fn to_json<T: serde::Serialize>(value: T) -> Result<serde_json::Value, engine::Error> {
        serde_json::to_value(value).map_err(|err| engine::Error::Internal(err.to_string()))
    }

    /// A REST call's result as its status and body (`Null`: no content).
    pub fn data_response(outcome: engine::resources::RestOutcome) -> (u16, serde_json::Value) {
        use engine::resources::RestOutcome;
        match outcome {
            RestOutcome::Record(record) => (200, serde_json::Value::Object(record)),
            RestOutcome::Page(page) => {
                let page = super::DataPage { records: page.records, next_cursor: page.next_cursor };
                (200, serde_json::to_value(page).unwrap_or_default())
            }
            RestOutcome::Created(id) => (201, serde_json::json!({ "id": id })),
            RestOutcome::Done => (204, serde_json::Value::Null),
        }
    }

    /// A tool call's result as its structured content: an object (a
    /// list or a value is wrapped as `{"result": ...}`, since the
    /// session-era revisions want an object).
    pub fn tool_response(output: engine::mcp::Output) -> Result<serde_json::Value, engine::Error> {
        use engine::resources::ToolOutput;
        let value = match output {
            engine::mcp::Output::Operation(outcome) => operation_response(outcome)?,
            engine::mcp::Output::Json(value) => value,
            engine::mcp::Output::Custom(ToolOutput::Json(value)) => value,
            engine::mcp::Output::Custom(ToolOutput::Answer(answer)) => {
                to_json(AnswerResponse::from(*answer))?
            }
            engine::mcp::Output::Custom(ToolOutput::Retrieved(traced)) => {
                to_json(RetrieveResponse::from(traced))?
            }
        };
        Ok(match value {
            serde_json::Value::Object(_) => value,
            other => serde_json::json!({ "result": other }),
        })
    }

    /// An operation's result as its response body.
    pub fn operation_response(outcome: Outcome) -> Result<serde_json::Value, engine::Error> {
        match outcome {
            Outcome::Json(value) => Ok(value),
            Outcome::Sources(sources) => {
                to_json(sources.into_iter().map(SourceView::from).collect::<Vec<_>>())
            }
            Outcome::Job(job) => to_json(JobView::from(job)),
            Outcome::Keys(keys) => to_json(keys.into_iter().map(KeyView::from).collect::<Vec<_>>()),
            Outcome::ProfileVersions(versions) => to_json(
                versions.into_iter().map(ProfileVersionView::try_from).collect::<Result<Vec<_>, _>>()?,
            ),
            Outcome::Retrieved(traced) => to_json(RetrieveResponse::from(traced)),
            Outcome::Answer(answer) => to_json(AnswerResponse::from(*answer)),
            Outcome::Status(state) => to_json(SetupState::from(state)),
            Outcome::Jobs(jobs) => to_json(jobs.into_iter().map(JobView::from).collect::<Vec<_>>()),
            Outcome::Source(overview) => to_json(SourceView::from(*overview)),
            Outcome::Analytics(dashboard) => to_json(ObservabilityResponse::from(*dashboard)),
        }
    }
}

#[cfg(feature = "ssr")]
pub use from_engine::{data_response, operation_response, tool_response};

/// A role as the operations API lists it (`list_roles`, `add_role`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoleRow {
    pub id: String,
    pub role: String,
    pub permission: serde_json::Value,
}

/// A user as the operations API lists it (`list_users`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserRow {
    pub username: String,
    pub active: bool,
    pub role: RoleRow,
}

/// A page of a REST search under `/data/` (`next_cursor` when there is more).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DataPage {
    pub records: Vec<serde_json::Map<String, serde_json::Value>>,
    pub next_cursor: Option<String>,
}
