//! `ApiJson<T>`: axum's `Json` extractor whose rejections (wrong content
//! type, malformed JSON, wrong field types, unknown fields) answer in Lore's
//! error shape with a stable code instead of axum's plain text, and which
//! takes only a JSON object.

use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, JsonRejection};
use axum::extract::{FromRequest, Request};
use axum::Json;
use serde::de::IgnoredAny;

use super::error::ApiError;

/// The body of every JSON route is an object. Serde reads a struct from an
/// array too (its fields in order), so `["a question", true]` would pass as
/// `{"question": "a question", "stream": true}`; and a scalar would be
/// refused with a message about the struct's name. Both are refused here
/// (422 `invalid_input`, "The body must be a JSON object."), after the size,
/// the content type and the syntax are checked as axum checks them, and
/// before the fields are.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    Json<T>: FromRequest<S, Rejection = JsonRejection>,
    Bytes: FromRequest<S, Rejection = BytesRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        // The body is read once, under the route's body limit (which the
        // request's extensions carry), and kept to look at its first byte;
        // axum's extractor then judges the content type and the JSON. So a
        // body over the limit is 413 whatever its content type says.
        let (parts, body) = request.into_parts();
        let bytes = Bytes::from_request(Request::from_parts(parts.clone(), body), state)
            .await
            .map_err(|rejection| ApiError::Json(rejection.into()))?;
        let object = is_object(&bytes);
        let parsed =
            Json::<T>::from_request(Request::from_parts(parts, Body::from(bytes.clone())), state).await;
        match parsed {
            // Not sent as JSON, or not JSON: those answers come first.
            Err(
                rejection @ (JsonRejection::MissingJsonContentType(_) | JsonRejection::JsonSyntaxError(_)),
            ) => Err(ApiError::Json(rejection)),
            // Reading `T` can stop at a wrong type before the parser reaches a
            // syntax error further on (`[42, ` for a struct whose first field
            // is a string), so a body that is not an object is read through
            // once more, as any JSON, to answer a malformed one as malformed.
            _ if !object => match Json::<IgnoredAny>::from_bytes(&bytes) {
                Err(rejection) => Err(ApiError::Json(rejection)),
                Ok(_) => Err(ApiError::NotAnObject),
            },
            Ok(Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(ApiError::Json(rejection)),
        }
    }
}

/// Whether a JSON text is an object: its first byte after the whitespace
/// JSON allows is `{`. (Whether it is valid JSON is axum's check.)
fn is_object(bytes: &[u8]) -> bool {
    bytes.iter().find(|byte| !matches!(byte, b' ' | b'\t' | b'\n' | b'\r')) == Some(&b'{')
}

#[cfg(test)]
mod tests {
    use axum::http::{header, StatusCode};
    use serde::Deserialize;

    use super::*;

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
        let taken =
            extract("application/json", " \n\t{\"question\": \"hi\", \"stream\": true}").await.unwrap();
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
}
