//! Advanced tuning: `GET /admin/tuning` (effective values, stored or
//! default) and `PUT /admin/tuning` (a blank field keeps its value; a
//! chunking change of an indexed corpus needs `acknowledge_reindex`, and
//! without it nothing at all is persisted). Source volatility is set per
//! source with `PUT /admin/sources/{id}/volatility`.

use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use super::sources::{actor, source_view};
use crate::AppState;
use app::wire::{SourceView, TuningApplied, TuningChange, TuningView};

pub async fn get_tuning(State(state): State<AppState>, _admin: Admin) -> Result<Json<TuningView>, ApiError> {
    Ok(Json(engine::tuning::overview(&state.lore).await?.into()))
}

pub async fn put_tuning(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(change): ApiJson<TuningChange>,
) -> Result<Json<TuningApplied>, ApiError> {
    let lore = &state.lore;
    let applied = engine::tuning::apply(lore, &actor(&admin), change.into()).await?;
    let reindex_job = match applied.chunking {
        engine::tuning::ChunkingChange::Reindexing(job) => Some(job.id),
        _ => None,
    };
    Ok(Json(TuningApplied {
        profile_version: applied.profile_version,
        reindex_job,
        tuning: engine::tuning::overview(lore).await?.into(),
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VolatilityRequest {
    /// `static`, `low`, `medium` or `high`.
    pub volatility: String,
}

pub async fn set_volatility(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<VolatilityRequest>,
) -> Result<Json<SourceView>, ApiError> {
    let lore = &state.lore;
    let updated = engine::sources::set_volatility(lore, &actor(&admin), &id, &request.volatility).await?;
    Ok(Json(source_view(lore, updated).await?))
}
