//! Liveness and readiness for orchestrators.

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::error::ApiError;
use crate::AppState;

/// The process is up and serving HTTP.
pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// The database answers and every migration is applied.
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    match engine::store::check_ready(&state.lore.db).await {
        Ok(()) => Ok(Json(json!({ "status": "ready" }))),
        Err(err) => {
            tracing::warn!(error = %err, "not ready");
            Err(ApiError::NotReady)
        }
    }
}
