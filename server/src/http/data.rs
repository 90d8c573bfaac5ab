//! REST for the exported resources, under `/data/`: `GET <path>/` searches,
//! `POST <path>/` creates, `GET|PUT|PATCH|DELETE <path>/<id>` one record,
//! and `GET /data/openapi.json` describes them. A call carries an
//! `x-api-key` (scope `operations`, a key of a user) or an admin's session,
//! as `/operation` does; the engine runs the caller's permissions.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engine::auth::Viewer;
use engine::resources::{self, Caller, RestMethod, RestRequest};
use engine::settings::Secret;

use super::error::ApiError;
use super::public::API_KEY_HEADER;
use crate::AppState;

/// Who calls, from the key or the session (as `/operation` reads it).
async fn caller(
    state: &AppState,
    viewer: Option<&Viewer>,
    headers: &HeaderMap,
) -> Result<(Caller, Option<String>), ApiError> {
    let (principal, key_id) = super::operation::authenticate(state, viewer, headers).await?;
    let raw = headers.get(API_KEY_HEADER).and_then(|v| v.to_str().ok());
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
    super::operation::count_usage(&state, key_id).await;
    Ok(match app::wire::data_response(result?) {
        (201, body) => (StatusCode::CREATED, Json(body)).into_response(),
        (_, serde_json::Value::Null) => StatusCode::NO_CONTENT.into_response(),
        (_, body) => Json(body).into_response(),
    })
}
