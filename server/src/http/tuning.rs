//! Advanced tuning: `GET /admin/tuning` (effective values, stored or
//! default), `PUT /admin/tuning` (a blank field keeps its value; a chunking
//! change of an indexed corpus needs `acknowledge_reindex`, and without it
//! nothing at all is persisted) and `PUT /admin/tuning/chunking`
//! (`{"max_tokens", "overlap_tokens", "acknowledge_reindex"?}`: 200 with the
//! queued reindex, or none). Source volatility is set per source
//! (`sources::set_volatility`).

use axum::extract::State;
use axum::Json;

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use crate::AppState;
use app::wire::{ChunkingApplied, ChunkingRequest, TuningApplied, TuningChange, TuningView};

pub async fn get_tuning(State(state): State<AppState>, _admin: Admin) -> Result<Json<TuningView>, ApiError> {
    Ok(Json(engine::tuning::overview(&state.lore).await?.into()))
}

pub async fn put_tuning(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(change): ApiJson<TuningChange>,
) -> Result<Json<TuningApplied>, ApiError> {
    let lore = &state.lore;
    let applied = engine::tuning::apply(lore, &admin.actor(), change.into()).await?;
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

/// `PUT /admin/tuning/chunking`: 200 with the queued reindex (or none).
pub async fn set_chunking(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(request): ApiJson<ChunkingRequest>,
) -> Result<Json<ChunkingApplied>, ApiError> {
    let params = engine::chunk::ChunkingParams {
        max_tokens: request.max_tokens,
        overlap_tokens: request.overlap_tokens,
    };
    let change =
        engine::tuning::set_chunking(&state.lore, &admin.actor(), params, request.acknowledge_reindex)
            .await?;
    let applied = match change {
        engine::tuning::ChunkingChange::Unchanged => ChunkingApplied { changed: false, reindex: None },
        engine::tuning::ChunkingChange::Stored => ChunkingApplied { changed: true, reindex: None },
        engine::tuning::ChunkingChange::Reindexing(job) => {
            ChunkingApplied { changed: true, reindex: Some((*job).into()) }
        }
    };
    Ok(Json(applied))
}
