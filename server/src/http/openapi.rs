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
const ANSWER_ERRORS: &[(&str, &str)] = &[
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
const RETRIEVE_ERRORS: &[(&str, &str)] = &[
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
const FEEDBACK_ERRORS: &[(&str, &str)] = &[
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
const ADMIN_ERRORS: &[(&str, &str)] = &[
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use app::wire::{visible_text_pattern, QUERY_DESCRIPTION, QUESTION_DESCRIPTION, WHITESPACE};
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
            ApiError::NotAnObject,
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
            ApiError::Engine(E::Profile(engine::profile::ProfileError::UnknownAnswer("t".into()))),
            ApiError::Engine(E::Profile(engine::profile::ProfileError::NotYourAnswer)),
        ];
        let mut answered: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for example in &examples {
            let (status, code, _) = example.parts();
            answered.entry(code).or_default().push(status.as_str().to_owned());
        }
        for (route, table) in [
            ("/answer", ANSWER_ERRORS),
            ("/answer/feedback", FEEDBACK_ERRORS),
            ("/retrieve", RETRIEVE_ERRORS),
            ("admin", ADMIN_ERRORS),
        ] {
            for (status, description) in table {
                let listed = codes(description);
                assert!(!listed.is_empty(), "{route} {status} names no code");
                for code in listed {
                    let known = crate::http::codes::find(code)
                        .unwrap_or_else(|| panic!("{route}: `{code}` is not in the table of codes"));
                    assert_eq!(
                        known.status.as_str(),
                        *status,
                        "{route}: `{code}` is documented under {status}"
                    );
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

    /// The browser's and the document's comment limit is the engine's.
    #[test]
    fn the_comment_limit_is_the_engines() {
        assert_eq!(app::wire::MAX_COMMENT_CHARS, engine::answer::feedback::MAX_COMMENT_CHARS);
        let schema = document("http://127.0.0.1")["components"]["schemas"]["FeedbackRequest"].clone();
        assert_eq!(
            schema["properties"]["comment"]["maxLength"],
            engine::answer::feedback::MAX_COMMENT_CHARS,
            "{schema}"
        );
    }

    /// The whitespace table is Rust's `char::is_whitespace`, which the
    /// engine's trimming and collapsing use, over every character.
    #[test]
    fn the_whitespace_table_is_rusts() {
        let listed = |c: char| WHITESPACE.iter().any(|&(first, last)| (first..=last).contains(&c));
        for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            assert_eq!(listed(c), c.is_whitespace(), "U+{:04X}", u32::from(c));
        }
        assert_eq!(
            visible_text_pattern(),
            r"[^\u0009-\u000D\u0020\u0085\u00A0\u1680\u2000-\u200A\u2028-\u2029\u202F\u205F\u3000]"
        );
    }

    /// The document and the engine agree on the question: a text the
    /// engine's normalisation leaves empty is exactly one the `pattern`
    /// refuses (one character at a time, and mixed), and the documented
    /// bounds are the engine's.
    #[test]
    fn the_documented_question_and_query_are_the_ones_the_engine_takes() {
        let visible = |text: &str| {
            text.chars().any(|c| !WHITESPACE.iter().any(|&(first, last)| (first..=last).contains(&c)))
        };
        for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
            let text = c.to_string();
            assert_eq!(engine::answer::normalise(&text).is_ok(), visible(&text), "U+{:04X}", u32::from(c));
        }
        for text in ["\u{85}", " \u{85}\t\u{3000} ", "\u{85}a\u{85}", "\u{0}", "\u{feff}", "a"] {
            assert_eq!(engine::answer::normalise(text).is_ok(), visible(text), "{text:?}");
            // The query is trimmed, not collapsed: empty exactly when the question is.
            assert_eq!(text.trim().is_empty(), !visible(text), "{text:?}");
        }
        // Over the bound once normalised; under it, though the raw text is
        // longer, when what is over is whitespace.
        let max = engine::answer::MAX_QUESTION_CHARS;
        assert!(engine::answer::normalise(&"x".repeat(max + 1)).is_err());
        assert!(engine::answer::normalise(&format!("{}\u{85}\u{85}", "x".repeat(max))).is_ok());

        let document = document("http://lore.test");
        let schemas = &document["components"]["schemas"];
        for (field, limit, description) in [
            (&schemas["AnswerRequest"]["properties"]["question"], max, QUESTION_DESCRIPTION),
            (
                &schemas["RetrieveRequest"]["properties"]["query"],
                engine::search::MAX_QUERY_CHARS,
                QUERY_DESCRIPTION,
            ),
        ] {
            assert_eq!(field["pattern"], visible_text_pattern(), "{field}");
            assert_eq!(field["description"], description, "{field}");
            assert_eq!(field["minLength"], 1, "{field}");
            assert_eq!(field["maxLength"], limit, "{field}");
            assert!(description.contains(&format!("from 1 to {limit} characters")), "{description}");
            assert!(description.contains("422 `invalid_input`") && description.contains("U+0085"));
        }
    }

    /// One event of the stream is `{"event", "data"}` (OpenAPI 3.0.3 has no
    /// stream type); the description names every event, and both the
    /// `oneOf` variants (as `contentSchema`) and `x-sse-events` point each at
    /// the schema of its data, which the document defines.
    #[test]
    fn the_event_stream_names_its_events_and_their_schemas() {
        let document = document("http://lore.test");
        let stream =
            &document["paths"]["/answer"]["post"]["responses"]["200"]["content"]["text/event-stream"];
        assert_eq!(stream["schema"]["type"], "object");
        assert_eq!(stream["schema"]["required"], json!(["event", "data"]));
        assert_eq!(
            stream["schema"]["properties"]["event"]["enum"],
            json!(["stage", "token", "answer", "error"])
        );
        let description = stream["schema"]["description"].as_str().unwrap();
        for (event, schema) in [
            ("stage", "StageView"),
            ("token", "AnswerToken"),
            ("answer", "AnswerResponse"),
            ("error", "ErrorBody"),
        ] {
            assert!(description.contains(&format!("`{event}`")), "{event}");
            let reference = format!("#/components/schemas/{schema}");
            assert_eq!(stream["x-sse-events"][event]["schema"]["$ref"], reference.as_str(), "{event}");
            let variant = stream["schema"]["oneOf"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["properties"]["event"]["enum"] == json!([event]))
                .unwrap_or_else(|| panic!("no variant for {event}"));
            assert_eq!(variant["properties"]["data"]["contentSchema"]["$ref"], reference.as_str(), "{event}");
            assert!(document["components"]["schemas"][schema].is_object(), "{schema}");
        }
        let token = &document["components"]["schemas"]["AnswerToken"];
        assert_eq!(token["properties"]["text"]["type"], "string", "{token}");
        assert_eq!(token["required"], json!(["text"]), "{token}");
    }
}
