//! `GET /openapi.json`: the OpenAPI 3.0.3 document of the public API,
//! generated from the request and response types the handlers use (their
//! JSON schemas come from `schemars` with its OpenAPI 3.0 settings), so the
//! document cannot drift from the code.

use axum::extract::State;
use axum::Json;
use schemars::generate::SchemaSettings;
use serde_json::{json, Value};

use super::answer::AnswerRequest;
use super::public::{RetrieveRequest, RetrieveResponse};
use crate::AppState;
use app::wire::{AnswerResponse, ErrorBody, ObservabilityRequest, ObservabilityResponse};

/// The stable error codes `POST /answer` can answer with, by status. These
/// tables are prose; a test holds every code they name to the status
/// `ApiError::parts` answers it with.
const ANSWER_ERRORS: &[(&str, &str)] = &[
    ("400", "Malformed JSON (`malformed_json`)."),
    ("401", "No key, an unknown key or a revoked key (`missing_api_key`, `invalid_api_key`, `key_revoked`)."),
    ("403", "The key lacks the scope, or a widget key is used from an origin it does not list (`insufficient_scope`, `origin_not_allowed`)."),
    ("405", "Another method than POST (`method_not_allowed`)."),
    ("413", "The body is over 2 MB (`payload_too_large`)."),
    ("415", "The body is not JSON (`unsupported_media_type`)."),
    ("422", "Wrong field types, unknown fields, an empty or too long question (`invalid_input`)."),
    ("429", "A widget key's rate limit is reached (`rate_limited`)."),
    ("500", "Something failed on Lore's side (`internal`); the log has the details."),
    ("502", "The model provider failed (`provider_unavailable`)."),
    ("503", "Lore cannot answer yet (`not_answerable`, with the failing readiness checks), retrieval is failing closed (`retrieval_failing_closed`), or the embedding model is not available (`embedding_unavailable`)."),
];

/// The stable error codes `POST /retrieve` can answer with, by status.
/// Retrieval needs no model provider, so it has no readiness gate.
const RETRIEVE_ERRORS: &[(&str, &str)] = &[
    ("400", "Malformed JSON (`malformed_json`)."),
    ("401", "No key, an unknown key or a revoked key (`missing_api_key`, `invalid_api_key`, `key_revoked`)."),
    ("403", "The key lacks the `retrieve` scope (a widget key never has it), or a widget key is used from an origin it does not list (`insufficient_scope`, `origin_not_allowed`)."),
    ("405", "Another method than POST (`method_not_allowed`)."),
    ("413", "The body is over 2 MB (`payload_too_large`)."),
    ("415", "The body is not JSON (`unsupported_media_type`)."),
    ("422", "Wrong field types, unknown fields, an empty or too long query, `top_k` outside 1 to 50 (`invalid_input`)."),
    ("500", "Something failed on Lore's side (`internal`); the log has the details."),
    ("503", "Retrieval is failing closed (`retrieval_failing_closed`) or the embedding model is not available (`embedding_unavailable`)."),
];

/// The error codes of the admin routes documented here.
const ADMIN_ERRORS: &[(&str, &str)] = &[
    ("400", "Malformed JSON (`malformed_json`)."),
    ("401", "No admin session (`unauthenticated`)."),
    ("403", "The signed-in account is not an admin, or the request is cross-origin (`admin_unavailable`, `cross_origin_rejected`)."),
    ("415", "The body is not JSON (`unsupported_media_type`)."),
    ("422", "A malformed or too long range, or unknown fields (`invalid_input`)."),
];

pub fn document(base_url: &str) -> Value {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let mut schema = |f: fn(&mut schemars::SchemaGenerator) -> schemars::Schema| f(&mut generator).to_value();
    let answer_request = schema(|g| g.subschema_for::<AnswerRequest>());
    let answer_response = schema(|g| g.subschema_for::<AnswerResponse>());
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
                (
                    (*status).to_owned(),
                    json!({"description": description, "content": {"application/json": {"schema": error}}}),
                )
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

    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Lore public API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Grounded answers and retrieval over the indexed knowledge base, and the Dashboard's aggregates. Public requests carry an access key in `x-api-key`; errors have the body `{\"error\": {\"code\", \"message\", \"details\"?}}` with a stable code.",
        },
        "servers": [{"url": base_url}],
        "security": [{"apiKey": []}],
        "paths": {
            "/answer": {"post": {
                "operationId": "answer",
                "summary": "Answer a question from the indexed content, with citations and a trace; or refuse.",
                "description": "Needs the `answer` scope. A widget key is public, so its callers get a trimmed trace: the id and each stage's name, decision and duration, with empty reasons, no passages, no model and zero usage (the recorded run keeps the whole trace under the same id). With `stream: true` (or, when `stream` is absent, an `Accept` that prefers `text/event-stream` to JSON) the response is server-sent events: a `stage` event as each stage of the run ends (the trace's stage objects, live), then `token` events (`{\"text\"}`) with the answer's text, sent only once it passed the grounding check, then one `answer` event with the object below. The stream starts once the readiness gate has passed; a failure after that ends it with an `error` event carrying the error body (for example `provider_unavailable`).",
                "requestBody": {"required": true, "content": {"application/json": {"schema": answer_request}}},
                "responses": with_ok(json!({
                    "description": "The answer (or refusal).",
                    "content": {
                        "application/json": {"schema": answer_response},
                        "text/event-stream": {"schema": {"type": "string"}},
                    },
                }), ANSWER_ERRORS),
            }},
            "/retrieve": {"post": {
                "operationId": "retrieve",
                "summary": "Hybrid retrieval with the active profile version's settings.",
                "description": "Needs the `retrieve` scope.",
                "requestBody": {"required": true, "content": {"application/json": {"schema": retrieve_request}}},
                "responses": with_ok(json!({
                    "description": "The passages that passed the cutoff, best first.",
                    "content": {"application/json": {"schema": retrieve_response}},
                }), RETRIEVE_ERRORS),
            }},
            "/admin/observability/": {"post": {
                "operationId": "observability",
                "summary": "The Dashboard's aggregates for a time range, from rollups only.",
                "description": "For signed-in admins (the console's session cookie). Usage over time (hourly up to 72 hours, daily beyond), cache hit rate, estimated spend and savings (from configured pricing), latency p95, refusals, top queries, content gaps, per-key usage and the cost funnel. Lists are kept per UTC day and cover the whole days the range touches.",
                "security": [{"adminSession": []}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": observability_request}}},
                "responses": with_ok(json!({
                    "description": "The aggregates.",
                    "content": {"application/json": {"schema": observability_response}},
                }), ADMIN_ERRORS),
            }},
        },
        "components": {
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
                "adminSession": {"type": "apiKey", "in": "cookie", "name": super::auth::SESSION_COOKIE},
            },
            "schemas": schemas,
        },
    })
}

/// `GET /openapi.json`.
pub async fn openapi(State(state): State<AppState>) -> Json<Value> {
    Json(document(&state.lore.settings.base_url()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use axum::body::Body;
    use axum::extract::FromRequest;
    use axum::http::{header, Request};
    use engine::auth::AuthError;
    use engine::embed::EmbedError;
    use engine::keys::KeyError;
    use engine::Error as E;

    use super::*;
    use crate::http::error::ApiError;

    /// What axum's JSON extractor rejects `body` (sent as `content_type`) with.
    async fn rejected(content_type: &str, body: Vec<u8>) -> ApiError {
        let request =
            Request::post("/").header(header::CONTENT_TYPE, content_type).body(Body::from(body)).unwrap();
        let rejection = Json::<AnswerRequest>::from_request(request, &()).await.err().unwrap();
        ApiError::Json(rejection)
    }

    /// The codes a table's description names: each is written as `code`
    /// inside parentheses (outside them, backticks mark fields and scopes).
    fn codes(description: &str) -> Vec<&str> {
        description
            .split('(')
            .skip(1)
            .filter_map(|group| group.split(')').next())
            .flat_map(|group| group.split('`').skip(1).step_by(2))
            .collect()
    }

    /// The tables are prose, so this checks them against the one status and
    /// code table, `ApiError::parts`: every code a table lists is under the
    /// status the code is answered with. A code with no example here fails,
    /// so a new code cannot be documented without being checked.
    #[tokio::test]
    async fn every_documented_code_is_under_the_status_it_is_answered_with() {
        let examples = vec![
            rejected("application/json", b"{\"question\":".to_vec()).await,
            rejected("application/json", b"{\"question\": 42}".to_vec()).await,
            rejected("text/plain", b"{}".to_vec()).await,
            // Over axum's default 2 MB body limit, which the router keeps.
            rejected("application/json", vec![b' '; 3 * 1024 * 1024]).await,
            ApiError::MethodNotAllowed,
            ApiError::ProviderUnavailable,
            ApiError::CrossOriginRejected,
            ApiError::Engine(E::Key(KeyError::Missing)),
            ApiError::Engine(E::Key(KeyError::Unknown)),
            ApiError::Engine(E::Key(KeyError::Revoked)),
            ApiError::Engine(E::Key(KeyError::Scope("answer"))),
            ApiError::Engine(E::Key(KeyError::Origin("https://elsewhere.example".into()))),
            ApiError::Engine(E::Key(KeyError::RateLimited(30))),
            ApiError::Engine(E::Auth(AuthError::Unauthenticated)),
            ApiError::Engine(E::Auth(AuthError::AdminUnavailable)),
            ApiError::Engine(E::InvalidInput("the question is empty".into())),
            ApiError::Engine(E::Internal("a bug".into())),
            ApiError::Engine(E::NotAnswerable(vec!["provider".into()])),
            ApiError::Engine(E::RetrievalFailingClosed("a reindex is needed".into())),
            ApiError::Engine(E::Embedding(EmbedError::Model("no files".into()))),
        ];
        let mut answered: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for example in &examples {
            let (status, code, _) = example.parts();
            answered.entry(code).or_default().push(status.as_str().to_owned());
        }
        for (route, table) in
            [("/answer", ANSWER_ERRORS), ("/retrieve", RETRIEVE_ERRORS), ("admin", ADMIN_ERRORS)]
        {
            for (status, description) in table {
                let listed = codes(description);
                assert!(!listed.is_empty(), "{route} {status} names no code");
                for code in listed {
                    let statuses =
                        answered.get(code).unwrap_or_else(|| panic!("{route}: no example of `{code}`"));
                    assert!(
                        statuses.iter().all(|answered| answered == status),
                        "{route}: `{code}` is documented under {status} but answered with {statuses:?}"
                    );
                }
            }
        }
    }
}
