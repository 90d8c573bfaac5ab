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
    let found = engine::search::diagnose(
        &state.lore,
        &engine::sources::Reader::Everything,
        &request.query,
        request.top_k,
        request.raw,
    )
    .await?;
    Ok(Json(SearchResults::from(found)))
}
