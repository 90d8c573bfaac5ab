//! `lore_server::http::json`: `ApiJson` takes only a JSON object, and its rejections keep their codes.

use axum::body::Body;
use axum::extract::FromRequest;
use axum::http::{header, StatusCode};
use lore_server::http::json::ApiJson;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Question {
    question: String,
    #[serde(default)]
    stream: Option<bool>,
}

async fn extract(content_type: &str, body: &str) -> Result<Question, (StatusCode, &'static str, String)> {
    let request = axum::http::Request::post("/")
        .header(header::CONTENT_TYPE, content_type)
        .body(Body::from(body.to_owned()))
        .unwrap();
    ApiJson::<Question>::from_request(request, &()).await.map(|ApiJson(q)| q).map_err(|err| err.parts())
}

#[tokio::test]
async fn only_an_object_is_taken() {
    let taken = extract("application/json", " \n\t{\"question\": \"hi\", \"stream\": true}").await.unwrap();
    assert_eq!((taken.question.as_str(), taken.stream), ("hi", Some(true)));
    // Serde alone would read these as the struct's fields in order (the
    // first), or refuse them naming the struct.
    for body in ["[\"hi\", true]", "[\"hi\"]", "[]", "\"hi\"", "3", "null", "true", " [null, null]"] {
        let (status, code, message) = extract("application/json", body).await.unwrap_err();
        assert_eq!((status, code), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_input"), "{body}");
        assert_eq!(message, "The body must be a JSON object.", "{body}");
    }
}

#[tokio::test]
async fn the_other_rejections_keep_their_codes_and_order() {
    let cases = [
        ("application/json", "{\"question\":", StatusCode::BAD_REQUEST, "malformed_json"),
        // Not JSON at all: malformed, not "not an object".
        ("application/json", "[\"hi\",", StatusCode::BAD_REQUEST, "malformed_json"),
        ("application/json", "hello", StatusCode::BAD_REQUEST, "malformed_json"),
        // A wrong type comes before the syntax error here; still malformed.
        ("application/json", "[42, ", StatusCode::BAD_REQUEST, "malformed_json"),
        ("application/json", "\"hi\" \"there\"", StatusCode::BAD_REQUEST, "malformed_json"),
        ("application/json", "", StatusCode::BAD_REQUEST, "malformed_json"),
        ("text/plain", "[\"hi\"]", StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
        ("application/json", "{\"question\": 42}", StatusCode::UNPROCESSABLE_ENTITY, "invalid_input"),
        (
            "application/json",
            "{\"question\": \"hi\", \"colour\": 1}",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_input",
        ),
    ];
    for (content_type, body, status, code) in cases {
        let (answered, answered_code, message) = extract(content_type, body).await.unwrap_err();
        assert_eq!((answered, answered_code), (status, code), "{body}");
        assert_ne!(message, "The body must be a JSON object.", "{body}");
    }
    // Over axum's default 2 MB body limit.
    let huge = format!("[\"{}\"]", "x".repeat(3 * 1024 * 1024));
    let (status, code, _) = extract("application/json", &huge).await.unwrap_err();
    assert_eq!((status, code), (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"));
}
