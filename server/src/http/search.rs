//! `POST /admin/search`: the corpus diagnostic, hybrid search with each
//! mode's raw score (the Playground's Corpus mode).

use axum::extract::State;
use axum::Json;

use app::wire::{SearchRequest, SearchResults};

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use crate::AppState;

pub async fn search(
    State(state): State<AppState>,
    _admin: Admin,
    ApiJson(request): ApiJson<SearchRequest>,
) -> Result<Json<SearchResults>, ApiError> {
    let asker = engine::asker::Asker::Admin;
    let found =
        engine::asker::diagnose(&state.lore, &asker, &request.query, request.top_k, request.raw).await?;
    Ok(Json(SearchResults::from(found)))
}
