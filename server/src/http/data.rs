//! REST for the exported resources, under `/data/`: `GET <path>/` searches,
//! `POST <path>/` creates, `GET|PUT|PATCH|DELETE <path>/<id>` one record,
//! and `GET /data/openapi.json` describes them. A call carries an
//! `x-api-key` (scope `operations`, a key of a user) or an admin's session,
//! as `/operation` does; the engine runs the caller's permissions.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engine::auth::Viewer;
use engine::operations::{self, Credentials};
use engine::resources::{self, Caller, RestMethod, RestRequest};
use engine::settings::Secret;

use super::error::ApiError;
use super::public::API_KEY_HEADER;
use crate::AppState;

/// Who calls, from the key or the session.
async fn caller(
    state: &AppState,
    viewer: Option<&Viewer>,
    headers: &HeaderMap,
) -> Result<(Caller, Option<String>), ApiError> {
    let text = |name| headers.get(name).and_then(|v: &axum::http::HeaderValue| v.to_str().ok());
    let raw = text(API_KEY_HEADER);
    let credentials = match (raw, viewer) {
        (Some(raw), _) => Credentials::Key { raw, origin: text(header::ORIGIN.as_str()) },
        (None, Some(viewer)) => Credentials::Session(viewer),
        (None, None) => Credentials::None,
    };
    let (principal, key_id) = operations::authenticate(&state.lore, credentials).await?;
    Ok((Caller { principal: Some(principal), key: raw.map(Secret::new) }, key_id))
}

pub async fn openapi(
    State(state): State<AppState>,
    viewer: Option<Extension<Viewer>>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ApiError> {
    caller(&state, viewer.as_deref(), &headers).await?;
    Ok(Json(resources::openapi(&state.lore).await?))
}

pub async fn data(
    State(state): State<AppState>,
    viewer: Option<Extension<Viewer>>,
    method: Method,
    headers: HeaderMap,
    Path(path): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let method = match method {
        Method::GET => RestMethod::Get,
        Method::POST => RestMethod::Post,
        Method::PUT => RestMethod::Put,
        Method::PATCH => RestMethod::Patch,
        Method::DELETE => RestMethod::Delete,
        _ => return Err(ApiError::MethodNotAllowed),
    };
    let body = if body.is_empty() {
        None
    } else {
        let parsed = serde_json::from_slice(&body)
            .map_err(|err| engine::Error::InvalidInput(format!("the body is not JSON: {err}")))?;
        Some(parsed)
    };
    let (caller, key_id) = caller(&state, viewer.as_deref(), &headers).await?;
    let result = resources::rest(&state.lore, &caller, RestRequest { method, path, query, body }).await;
    if let Some(key_id) = key_id {
        if let Err(err) = state.lore.recorder().key_usage(&key_id, 0.0).await {
            tracing::warn!(error = %err, "could not record key usage");
        }
    }
    Ok(match app::wire::data_response(result?) {
        (201, body) => (StatusCode::CREATED, Json(body)).into_response(),
        (_, serde_json::Value::Null) => StatusCode::NO_CONTENT.into_response(),
        (_, body) => Json(body).into_response(),
    })
}
