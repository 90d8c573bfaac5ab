//! `POST /operation`: the operations API. A call carries an `x-api-key`
//! (scope `operations`, a key of a user) or an admin's session; the engine
//! decides who it acts as, runs the operation through its one permission
//! check, and the response is the operation's own.

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::{Extension, Json};
use engine::auth::Viewer;
use engine::operations::{self, Credentials};

use super::error::ApiError;
use super::json::ApiJson;
use super::public::API_KEY_HEADER;
use crate::AppState;

pub async fn operation(
    State(state): State<AppState>,
    viewer: Option<Extension<Viewer>>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let lore = &state.lore;
    let text = |name| headers.get(name).and_then(|v: &axum::http::HeaderValue| v.to_str().ok());
    let credentials = match (text(API_KEY_HEADER), &viewer) {
        (Some(raw), _) => Credentials::Key { raw, origin: text(header::ORIGIN.as_str()) },
        (None, Some(Extension(viewer))) => Credentials::Session(viewer),
        (None, None) => Credentials::None,
    };
    let (principal, key_id) = operations::authenticate(lore, credentials).await?;
    let result = operations::dispatch(lore, &principal, body).await;
    if let Some(key_id) = key_id {
        if let Err(err) = lore.recorder().key_usage(&key_id, 0.0).await {
            tracing::warn!(error = %err, "could not record key usage");
        }
    }
    Ok(Json(app::wire::operation_response(result?)?))
}
