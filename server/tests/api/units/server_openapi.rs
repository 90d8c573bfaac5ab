//! `lore_server::http::openapi`: the public API's OpenAPI document against the codes, the engine's bounds and the event stream.

use std::collections::BTreeMap;

use app::wire::{visible_text_pattern, AnswerRequest, QUERY_DESCRIPTION, QUESTION_DESCRIPTION, WHITESPACE};
use axum::body::Body;
use axum::extract::FromRequest;
use axum::http::{header, Request};
use axum::Json;
use engine::auth::AuthError;
use engine::embed::EmbedError;
use engine::keys::KeyError;
use engine::Error as E;
use lore_server::http::error::ApiError;
use lore_server::http::openapi::{document, ADMIN_ERRORS, ANSWER_ERRORS, FEEDBACK_ERRORS, RETRIEVE_ERRORS};
use serde_json::json;

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
                let known = lore_server::http::codes::find(code)
                    .unwrap_or_else(|| panic!("{route}: `{code}` is not in the table of codes"));
                assert_eq!(known.status.as_str(), *status, "{route}: `{code}` is documented under {status}");
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
    let stream = &document["paths"]["/answer"]["post"]["responses"]["200"]["content"]["text/event-stream"];
    assert_eq!(stream["schema"]["type"], "object");
    assert_eq!(stream["schema"]["required"], json!(["event", "data"]));
    assert_eq!(stream["schema"]["properties"]["event"]["enum"], json!(["stage", "token", "answer", "error"]));
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
