//! Admin endpoints of the Access screen: keys (create, the raw key once;
//! list with 7-day usage; revoke) and the assistants signed in over OAuth
//! (list, revoke).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use engine::keys;

use app::wire::{ConnectionView, CreateKeyRequest, CreatedKey, KeyView};

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use crate::AppState;

pub async fn list(State(state): State<AppState>, _admin: Admin) -> Result<Json<Vec<KeyView>>, ApiError> {
    Ok(Json(keys::list(&state.lore).await?.into_iter().map(KeyView::from).collect()))
}

/// `POST /admin/keys`: the only response that ever carries the raw key.
pub async fn create(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(r): ApiJson<CreateKeyRequest>,
) -> Result<(StatusCode, Json<CreatedKey>), ApiError> {
    let issued = keys::issue(&state.lore, &admin.actor(), r.into()).await?;
    Ok((StatusCode::CREATED, Json(issued.into())))
}

pub async fn revoke(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<KeyView>, ApiError> {
    let lore = &state.lore;
    let revoked = keys::revoke(lore, &admin.actor(), &id).await?;
    Ok(Json(revoked.into()))
}

/// `GET /admin/oauth/connections`: every live grant, newest first.
pub async fn connections(
    State(state): State<AppState>,
    _admin: Admin,
) -> Result<Json<Vec<ConnectionView>>, ApiError> {
    let live = engine::oauth::connections(&state.lore).await?;
    Ok(Json(live.into_iter().map(ConnectionView::from).collect()))
}

/// `POST /admin/oauth/connections/{id}/revoke`: the client's tokens are
/// refused from their next request; answers the live grants left. One
/// already gone changes nothing.
pub async fn revoke_connection(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<Vec<ConnectionView>>, ApiError> {
    engine::oauth::revoke_grant(&state.lore, &admin.actor(), &id, "revoked by an admin").await?;
    let live = engine::oauth::connections(&state.lore).await?;
    Ok(Json(live.into_iter().map(ConnectionView::from).collect()))
}
