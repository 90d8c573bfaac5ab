//! `POST /admin/search`: the corpus diagnostic, hybrid search with each
//! mode's raw score (the Playground's Corpus mode).

use axum::extract::State;
use axum::Json;
use serde::Deserialize;

use app::wire::SearchResults;

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use crate::AppState;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    pub query: String,
    #[serde(default)]
    pub top_k: Option<usize>,
    /// The Playground's corpus diagnostic: no score cutoff, and disabled
    /// sources searched too.
    #[serde(default)]
    pub raw: bool,
}

pub async fn search(
    State(state): State<AppState>,
    _admin: Admin,
    ApiJson(request): ApiJson<SearchRequest>,
) -> Result<Json<SearchResults>, ApiError> {
    let found = engine::search::diagnose(&state.lore, &request.query, request.top_k, request.raw).await?;
    Ok(Json(SearchResults::from(found)))
}
