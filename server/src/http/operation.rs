//! `POST /operation`: the operations API. A call carries an `x-api-key`
//! (scope `operations`, a key of a user) or an admin's session; the engine
//! decides who it acts as, runs the operation through its one permission
//! check, and the response is the operation's own.

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::{Extension, Json};
use engine::appdb::Principal;
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
    let (principal, key_id) = authenticate(&state, viewer.as_deref(), &headers).await?;
    let result = operations::dispatch(&state.lore, &principal, body).await;
    count_usage(&state, key_id).await;
    Ok(Json(app::wire::operation_response(result?)?))
}

/// Who a call acts as, from its `x-api-key` or the admin's session (also
/// for REST under `/data/`), and the key it came with.
pub(super) async fn authenticate(
    state: &AppState,
    viewer: Option<&Viewer>,
    headers: &HeaderMap,
) -> Result<(Principal, Option<String>), ApiError> {
    let text = |name| headers.get(name).and_then(|v: &axum::http::HeaderValue| v.to_str().ok());
    let credentials = match (text(API_KEY_HEADER), viewer) {
        (Some(raw), _) => Credentials::Key { raw, origin: text(header::ORIGIN.as_str()) },
        (None, Some(viewer)) => Credentials::Session(viewer),
        (None, None) => Credentials::None,
    };
    Ok(operations::authenticate(&state.lore, credentials).await?)
}

/// Counts a keyed call (it costs nothing), behind the response.
pub(super) async fn count_usage(state: &AppState, key_id: Option<String>) {
    if let Some(key_id) = key_id {
        super::public::record_usage(&state.lore, &key_id, 0.0).await;
    }
}
