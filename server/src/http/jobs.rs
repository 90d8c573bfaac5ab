//! Indexing runs, as the Sources screen starts and follows them:
//!
//! | method | path | does |
//! | --- | --- | --- |
//! | POST | /admin/sources/{id}/sync | queue a run of one source now |
//! | POST | /admin/reindex | queue a full reindex of every source |
//! | GET | /admin/jobs/{id} | one run with its progress |
//! | GET | /admin/index | the vector index: coverage, training, a training under way |

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use engine::auth::{AuthError, Viewer};
use engine::ingest::{jobs, lifecycle};
use engine::sources::connector::WebhookProof;

use app::wire::{JobView, VectorIndexView};

use super::admin::Admin;
use super::error::ApiError;
use crate::AppState;

/// An admin's session queues the run; without one, a forge's webhook call
/// may, proving the source's secret (`lifecycle::sync_by_webhook`).
pub async fn sync(
    State(state): State<AppState>,
    viewer: Option<axum::Extension<Viewer>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<JobView>), ApiError> {
    let job = match viewer {
        Some(axum::Extension(viewer)) => {
            viewer.require_admin()?;
            lifecycle::start_run(&state.lore, Some(&id), false, "admin").await?
        }
        None => {
            let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
            let proof = if let Some(signed) = header("x-hub-signature-256") {
                WebhookProof::Signature { hex: signed.strip_prefix("sha256=").unwrap_or(signed), body: &body }
            } else if let Some(token) = header("x-gitlab-token") {
                WebhookProof::Token(token)
            } else {
                return Err(AuthError::Unauthenticated.into());
            };
            lifecycle::sync_by_webhook(&state.lore, &id, &proof).await?
        }
    };
    Ok((StatusCode::ACCEPTED, Json(job.into())))
}

pub async fn reindex(
    State(state): State<AppState>,
    _admin: Admin,
) -> Result<(StatusCode, Json<JobView>), ApiError> {
    let job = lifecycle::start_run(&state.lore, None, true, "admin").await?;
    Ok((StatusCode::ACCEPTED, Json(job.into())))
}

pub async fn job(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<JobView>, ApiError> {
    Ok(Json(jobs::job(&state.lore, &id).await?.into()))
}

pub async fn vector_index(
    State(state): State<AppState>,
    _admin: Admin,
) -> Result<Json<VectorIndexView>, ApiError> {
    Ok(Json(engine::upkeep::status(&state.lore).await?.into()))
}
