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
