//! `GET /openapi.json`: the OpenAPI 3.0.3 document of the public API,
//! written with `lore_openapi::Document` (the generator of every document
//! Lore serves) from the request and response types the handlers use (their
//! JSON schemas come from `schemars` with its OpenAPI 3.0 settings), so the
//! document cannot drift from the code.

use axum::extract::State;
use axum::Json;
use schemars::generate::SchemaSettings;
use serde_json::{json, Value};

use crate::AppState;
use app::wire::{
    AnswerRequest, AnswerResponse, AnswerToken, ErrorBody, FeedbackRequest, FeedbackResponse,
    ObservabilityRequest, ObservabilityResponse, RetrieveRequest, RetrieveResponse, StageView,
};

/// The `text/event-stream` reply of `POST /answer`. OpenAPI 3.0.3 has no
/// type for a stream of events; the schema describes one event as tools
/// that read streams (schemathesis among them) parse it, `{"event", "data"}`,
/// with each event's data schema as `contentSchema` of its JSON text, and
/// `x-sse-events` repeats them by name.
const EVENT_STREAM_DESCRIPTION: &str = "Server-sent events (the `text/event-stream` format): each event is an `event:` line with its name and a `data:` line with one JSON object, then a blank line. Lines starting with `:` are comments that keep the connection open during a slow generation; ignore them. The events, in order: `stage` (zero or more), as each stage of the run ends, with the trace's stage object (`StageView`: `stage`, `decision`, `reason`, `duration_ms`, `cost_usd`?); then `token` (zero or more), with `{\"text\"}`, the next piece of the answer's text (`AnswerToken`; the pieces joined are the answer, and they are sent only for an answer that passed the grounding check, or for the refusal text); then exactly one of `answer`, with the whole `AnswerResponse`, or `error`, with the error body (`ErrorBody`) of a failure after the stream started (for example `provider_unavailable`). The stream ends after that event. Each event's `data` is a JSON text whose schema its name gives (`contentSchema` in the `oneOf` variant, and `x-sse-events` by name).";

/// One server-sent event: its name, and its data, a JSON text whose schema
/// depends on the name.
fn event_schema(events: &[(&str, &serde_json::Value)]) -> serde_json::Value {
    let names: Vec<&str> = events.iter().map(|(name, _)| *name).collect();
    let variants: Vec<serde_json::Value> = events
        .iter()
        .map(|(name, schema)| {
            json!({
                "type": "object",
                "properties": {
                    "event": {"type": "string", "enum": [name]},
                    "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": schema},
                },
            })
        })
        .collect();
    json!({
        "type": "object",
        "description": EVENT_STREAM_DESCRIPTION,
        "required": ["event", "data"],
        "properties": {
            "event": {"type": "string", "enum": names},
            "data": {"type": "string", "description": "The event's data: one JSON object, whose schema the event's name gives."},
        },
        "oneOf": variants,
    })
}

/// The stable error codes `POST /answer` can answer with, by status. These
/// tables are prose; a test holds every code they name to the status
/// `ApiError::parts` answers it with.
pub const ANSWER_ERRORS: &[(&str, &str)] = &[
    ("400", "Malformed JSON (`malformed_json`)."),
    ("401", "No key, an unknown key or a revoked key (`missing_api_key`, `invalid_api_key`, `key_revoked`)."),
    ("403", "The key lacks the scope, or a widget key is used from an origin it does not list (`insufficient_scope`, `origin_not_allowed`)."),
    ("405", "Another method than POST (`method_not_allowed`)."),
    ("413", "The body is over 2 MB (`payload_too_large`)."),
    ("415", "The body is not JSON (`unsupported_media_type`)."),
    ("422", "A body that is not a JSON object, wrong field types, unknown fields, a question that is empty or too long once normalised (`invalid_input`)."),
    ("429", "A widget key's rate limit is reached (`rate_limited`)."),
    ("500", "Something failed on Lore's side (`internal`); the log has the details."),
    ("502", "The model provider failed (`provider_unavailable`)."),
    ("503", "Lore cannot answer yet (`not_answerable`, with the failing readiness checks), retrieval is failing closed (`retrieval_failing_closed`), or the embedding model is not available (`embedding_unavailable`)."),
];

/// The stable error codes `POST /retrieve` can answer with, by status.
/// Retrieval needs no model provider, so it has no readiness gate.
pub const RETRIEVE_ERRORS: &[(&str, &str)] = &[
    ("400", "Malformed JSON (`malformed_json`)."),
    ("401", "No key, an unknown key or a revoked key (`missing_api_key`, `invalid_api_key`, `key_revoked`)."),
    ("403", "The key lacks the `retrieve` scope (a widget key never has it), or a widget key is used from an origin it does not list (`insufficient_scope`, `origin_not_allowed`)."),
    ("405", "Another method than POST (`method_not_allowed`)."),
    ("413", "The body is over 2 MB (`payload_too_large`)."),
    ("415", "The body is not JSON (`unsupported_media_type`)."),
    ("422", "A body that is not a JSON object, wrong field types, unknown fields, a query that is empty or too long once trimmed, `top_k` outside 1 to 50 (`invalid_input`)."),
    ("500", "Something failed on Lore's side (`internal`); the log has the details."),
    ("503", "Retrieval is failing closed (`retrieval_failing_closed`) or the embedding model is not available (`embedding_unavailable`)."),
];

/// The stable error codes `POST /answer/feedback` can answer with.
pub const FEEDBACK_ERRORS: &[(&str, &str)] = &[
    ("400", "Malformed JSON (`malformed_json`)."),
    ("401", "No key, an unknown key or a revoked key (`missing_api_key`, `invalid_api_key`, `key_revoked`)."),
    ("403", "The key lacks the `answer` scope, a widget key is used from an origin it does not list, or the answer was asked through another key (`insufficient_scope`, `origin_not_allowed`, `not_your_answer`)."),
    ("404", "The trace id names no answer Lore recorded: unknown, an eval's, a retrieval's, or one recorded before ratings (`answer_not_found`)."),
    ("405", "Another method than POST (`method_not_allowed`)."),
    ("413", "The body is over 2 MB (`payload_too_large`)."),
    ("415", "The body is not JSON (`unsupported_media_type`)."),
    ("422", "A body that is not a JSON object, wrong field types, unknown fields, a comment over 1000 characters (`invalid_input`)."),
    ("429", "A widget key's rate limit is reached (`rate_limited`)."),
    ("500", "Something failed on Lore's side (`internal`); the log has the details."),
];

/// The error codes of the admin routes documented here.
pub const ADMIN_ERRORS: &[(&str, &str)] = &[
    ("400", "Malformed JSON (`malformed_json`)."),
    ("401", "No admin session (`unauthenticated`)."),
    ("403", "The signed-in account is not an admin, or the request is cross-origin (`admin_unavailable`, `cross_origin_rejected`)."),
    ("415", "The body is not JSON (`unsupported_media_type`)."),
    ("422", "A body that is not a JSON object, a malformed or too long range, or unknown fields (`invalid_input`)."),
];

pub fn document(base_url: &str) -> Value {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let mut schema = |f: fn(&mut schemars::SchemaGenerator) -> schemars::Schema| f(&mut generator).to_value();
    let answer_request = schema(|g| g.subschema_for::<AnswerRequest>());
    let answer_response = schema(|g| g.subschema_for::<AnswerResponse>());
    let stage_event = schema(|g| g.subschema_for::<StageView>());
    let token_event = schema(|g| g.subschema_for::<AnswerToken>());
    let feedback_request = schema(|g| g.subschema_for::<FeedbackRequest>());
    let feedback_response = schema(|g| g.subschema_for::<FeedbackResponse>());
    let retrieve_request = schema(|g| g.subschema_for::<RetrieveRequest>());
    let retrieve_response = schema(|g| g.subschema_for::<RetrieveResponse>());
    let error = schema(|g| g.subschema_for::<ErrorBody>());
    let observability_request = schema(|g| g.subschema_for::<ObservabilityRequest>());
    let observability_response = schema(|g| g.subschema_for::<ObservabilityResponse>());
    let schemas = generator.take_definitions(true);

    let errors = |codes: &[(&str, &str)]| -> Value {
        codes
            .iter()
            .map(|(status, description)| {
                ((*status).to_owned(), lore_openapi::error_response(description, &error))
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let with_ok = |ok: Value, codes: &[(&str, &str)]| {
        let mut responses = errors(codes);
        if let Some(map) = responses.as_object_mut() {
            map.insert("200".into(), ok);
        }
        responses
    };

    let mut document = lore_openapi::Document::new(
        "Lore public API",
        "Grounded answers and retrieval over the indexed knowledge base, and the Dashboard's aggregates. Public requests carry an access key in `x-api-key`; errors have the body `{\"error\": {\"code\", \"message\", \"details\"?}}` with a stable code.",
        base_url,
    );
    document.security_scheme(
        "adminSession",
        json!({"type": "apiKey", "in": "cookie", "name": super::auth::SESSION_COOKIE}),
    );
    document.schemas(schemas);
    document.operation("/answer", "post", json!({
                "operationId": "answer",
                "summary": "Answer a question from the indexed content, with citations and a trace; or refuse.",
                "description": "Needs the `answer` scope. A widget key is public, so its callers get a trimmed trace: the id and each stage's name, decision and duration, with empty reasons, no passages, no model and zero usage (the recorded run keeps the whole trace under the same id). With `stream: true` (or, when `stream` is absent, an `Accept` that prefers `text/event-stream` to JSON) the response is server-sent events: a `stage` event as each stage of the run ends (the trace's stage objects, live), then `token` events (`{\"text\"}`) with the answer's text, sent only once it passed the grounding check, then one `answer` event with the object below. The stream starts once the readiness gate has passed; a failure after that ends it with an `error` event carrying the error body (for example `provider_unavailable`).",
                "requestBody": {"required": true, "content": {"application/json": {"schema": answer_request}}},
                "responses": with_ok(json!({
                    "description": "The answer (or refusal).",
                    "content": {
                        "application/json": {"schema": answer_response},
                        "text/event-stream": {
                            "schema": event_schema(&[
                                ("stage", &stage_event),
                                ("token", &token_event),
                                ("answer", &answer_response),
                                ("error", &error),
                            ]),
                            "x-sse-events": {
                                "stage": {"description": "A stage of the run ended (zero or more).", "schema": stage_event},
                                "token": {"description": "The next piece of the answer's text (zero or more, after the stages).", "schema": token_event},
                                "answer": {"description": "The final object; the last event of a run that succeeded.", "schema": answer_response},
                                "error": {"description": "A failure after the stream started; the last event.", "schema": error},
                            },
                        },
                    },
                }), ANSWER_ERRORS),
    }));
    document.operation("/answer/feedback", "post", json!({
                "operationId": "rateAnswer",
                "summary": "Rate an answer (or refusal) as helpful or not.",
                "description": "Needs the `answer` scope, and the key that asked the question (a widget key from a page it lists, within its rate): the answer's `feedback` names this path and its trace id. A second rating of the same answer replaces the first. The comment is plain text, kept as written (trimmed) and never shown as markup. A rating is not counted as a query of the key.",
                "requestBody": {"required": true, "content": {"application/json": {"schema": feedback_request}}},
                "responses": with_ok(json!({
                    "description": "The rating as stored.",
                    "content": {"application/json": {"schema": feedback_response}},
                }), FEEDBACK_ERRORS),
    }));
    document.operation("/retrieve", "post", json!({
                "operationId": "retrieve",
                "summary": "Hybrid retrieval with the active profile version's settings.",
                "description": "Needs the `retrieve` scope.",
                "requestBody": {"required": true, "content": {"application/json": {"schema": retrieve_request}}},
                "responses": with_ok(json!({
                    "description": "The passages that passed the cutoff, best first.",
                    "content": {"application/json": {"schema": retrieve_response}},
                }), RETRIEVE_ERRORS),
    }));
    document.operation("/admin/observability/", "post", json!({
                "operationId": "observability",
                "summary": "The Dashboard's aggregates for a time range, from rollups only.",
                "description": "For signed-in admins (the console's session cookie). Usage over time (hourly up to 72 hours, daily beyond), cache hit rate, estimated spend and savings (from configured pricing), latency p95, refusals, top queries, content gaps, per-key usage and the cost funnel. Lists are kept per UTC day and cover the whole days the range touches.",
                "security": [{"adminSession": []}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": observability_request}}},
                "responses": with_ok(json!({
                    "description": "The aggregates.",
                    "content": {"application/json": {"schema": observability_response}},
                }), ADMIN_ERRORS),
    }));
    document.into_value()
}

/// `GET /openapi.json`.
pub async fn openapi(State(state): State<AppState>) -> Json<Value> {
    Json(document(&state.lore.settings.base_url()))
}
