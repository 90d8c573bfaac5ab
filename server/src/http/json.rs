//! `ApiJson<T>`: axum's `Json` extractor whose rejections (wrong content
//! type, malformed JSON, wrong field types, unknown fields) answer in Lore's
//! error shape with a stable code instead of axum's plain text.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::Json;

use super::error::ApiError;

pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        Json::<T>::from_request(request, state)
            .await
            .map(|Json(value)| ApiJson(value))
            .map_err(ApiError::Json)
    }
}

/// For a PATCH field that can be cleared: a key that is present becomes
/// `Some`, even when its value is `null` (`Some(None)`: clear it), so that only
/// an absent key (`#[serde(default)]`: `None`) means "leave it as it is".
/// Plain `Option<Option<T>>` would read `null` as absent.
pub fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(deserializer).map(Some)
}
