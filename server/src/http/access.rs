//! Admin endpoints of the Access screen: create (the raw key, once), list
//! with 7-day usage, revoke.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use engine::audit::Actor;
use engine::keys::{self, KeySummary, NewKey};
use serde::Deserialize;

use app::wire::{CreatedKey, KeyView};

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use super::sources::time;
use crate::AppState;

pub fn key_view(summary: KeySummary) -> KeyView {
    let key = summary.key;
    KeyView {
        id: key.id,
        name: key.name,
        kind: key.kind,
        prefix: key.prefix,
        scopes: summary.scopes,
        status: key.status,
        origins: summary.origins,
        rate_limit_per_minute: key.rate_limit_per_minute.map(i64::from),
        created_at: time(key.created_at),
        last_used_at: key.last_used_at.map(time),
        revoked_at: key.revoked_at.map(time),
        queries_7d: summary.queries_7d,
        estimated_cost_7d: summary.estimated_cost_7d,
    }
}

pub async fn list(State(state): State<AppState>, _admin: Admin) -> Result<Json<Vec<KeyView>>, ApiError> {
    Ok(Json(keys::list(&state.lore).await?.into_iter().map(key_view).collect()))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateKeyRequest {
    pub name: String,
    pub kind: String,
    #[serde(default)]
    pub scopes: Vec<String>,
    #[serde(default)]
    pub origins: Vec<String>,
    #[serde(default)]
    pub rate_limit_per_minute: Option<u32>,
}

/// `POST /admin/keys`: the only response that ever carries the raw key.
pub async fn create(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(r): ApiJson<CreateKeyRequest>,
) -> Result<(StatusCode, Json<CreatedKey>), ApiError> {
    let new = NewKey {
        name: r.name,
        kind: r.kind,
        scopes: r.scopes,
        origins: r.origins,
        rate_limit_per_minute: r.rate_limit_per_minute,
    };
    let lore = &state.lore;
    let (key, raw_key) = keys::create(lore, &Actor::Account(admin.0.account_id.clone()), new).await?;
    Ok((StatusCode::CREATED, Json(created_key(lore, key, raw_key))))
}

/// The creation reply: the key, its raw value and, for a widget key, the
/// snippet that embeds the widget.
pub fn created_key(
    lore: &engine::Lore,
    key: engine::entities::access_key::Model,
    raw_key: String,
) -> CreatedKey {
    let snippet = (key.kind == keys::KeyKind::Widget.key()).then(|| {
        format!(
            "<script src=\"{}/widget.js\" data-key=\"{raw_key}\" async></script>",
            lore.settings.base_url()
        )
    });
    CreatedKey { key: key_view(KeySummary::of(key, 0, 0.0)), raw_key, snippet }
}

pub async fn revoke(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<KeyView>, ApiError> {
    let lore = &state.lore;
    let revoked = keys::revoke(lore, &Actor::Account(admin.0.account_id.clone()), &id).await?;
    Ok(Json(key_view(revoked)))
}
