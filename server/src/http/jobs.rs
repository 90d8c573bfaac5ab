//! Indexing runs, as the Sources screen starts and follows them:
//!
//! | method | path | does |
//! | --- | --- | --- |
//! | POST | /admin/sources/{id}/sync | queue a run of one source now |
//! | POST | /admin/reindex | queue a full reindex of every source |
//! | GET | /admin/jobs/{id} | one run with its progress |

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use engine::ingest::{jobs, lifecycle};

use app::wire::JobView;

use super::admin::Admin;
use super::error::ApiError;
use crate::AppState;

pub async fn sync(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<JobView>), ApiError> {
    let job = lifecycle::start_run(&state.lore, Some(&id), false, "admin").await?;
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
