//! REST for the exported resources, under `/data/`: `GET <path>/` searches,
//! `POST <path>/` creates, `GET|PUT|PATCH|DELETE <path>/<id>` one record,
//! and `GET /data/openapi.json` describes them. A call carries an
//! `x-api-key` (scope `operations`, a key of a user) or an admin's session,
//! as `/operation` does; the engine runs the caller's permissions.

use app::wire::{CreatedView, DataPage};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engine::appdb::records::SearchType;
use engine::appdb::AppDbError;
use engine::auth::Viewer;
use engine::resources::{
    self, Caller, RestCondition, RestMethod, RestOutcome, RestQuery, RestRequest, MAX_PAGE,
};
use engine::settings::Secret;

use super::error::ApiError;
use super::public::API_KEY_HEADER;
use crate::AppState;

/// Who calls, from the key or the session (as `/operation` reads it).
async fn caller(
    state: &AppState,
    viewer: Option<&Viewer>,
    headers: &HeaderMap,
) -> Result<(Caller, Option<String>), ApiError> {
    let (principal, key_id) = super::operation::authenticate(state, viewer, headers).await?;
    let raw = headers.get(API_KEY_HEADER).and_then(|v| v.to_str().ok());
    Ok((Caller { principal: Some(principal), key: raw.map(Secret::new), oauth: false }, key_id))
}

pub async fn openapi(
    State(state): State<AppState>,
    viewer: Option<Extension<Viewer>>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ApiError> {
    caller(&state, viewer.as_deref(), &headers).await?;
    let exports = resources::http_exports(&state.lore).await?;
    Ok(Json(lore_openapi::data_document(&exports, &state.lore.settings.base_url())))
}

pub async fn data(
    State(state): State<AppState>,
    viewer: Option<Extension<Viewer>>,
    method: Method,
    headers: HeaderMap,
    Path(path): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let method = match method {
        Method::GET => RestMethod::Get,
        Method::POST => RestMethod::Post,
        Method::PUT => RestMethod::Put,
        Method::PATCH => RestMethod::Patch,
        Method::DELETE => RestMethod::Delete,
        _ => return Err(ApiError::MethodNotAllowed),
    };
    let body = if body.is_empty() {
        None
    } else {
        let parsed = serde_json::from_slice(&body)
            .map_err(|err| engine::Error::InvalidInput(format!("the body is not JSON: {err}")))?;
        Some(parsed)
    };
    let (caller, key_id) = caller(&state, viewer.as_deref(), &headers).await?;
    let result = match rest_query(query) {
        Ok(query) => resources::rest(&state.lore, &caller, RestRequest { method, path, query, body }).await,
        Err(wrong) => Err(wrong),
    };
    super::operation::count_usage(&state, key_id).await;
    Ok(match result? {
        RestOutcome::Record(record) => Json(record).into_response(),
        RestOutcome::Page(page) => {
            Json(DataPage { records: page.records, next_cursor: page.next_cursor }).into_response()
        }
        RestOutcome::Created(id) => (StatusCode::CREATED, Json(CreatedView { id })).into_response(),
        RestOutcome::Done => StatusCode::NO_CONTENT.into_response(),
    })
}

/// A REST query string: `select=a,b` (the attributes to return, repeatable),
/// `limit` (1 to [`MAX_PAGE`]), `cursor`, and any other name a condition on
/// that attribute, all of which must hold: `name=value` is equality,
/// `name=gt=5` (also `ge`, `lt`, `le`, `ne`, `sw` starts with, `ew` ends
/// with, `ct` contains) compares, FIQL-style as HarperDB's REST does. The
/// engine types each value by its attribute.
pub fn rest_query(pairs: Vec<(String, String)>) -> Result<RestQuery, engine::Error> {
    let mut query = RestQuery::default();
    for (name, value) in pairs {
        match name.as_str() {
            "select" => query
                .select
                .extend(value.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_owned)),
            "limit" => {
                let limit =
                    value.parse::<u64>().ok().filter(|n| (1..=MAX_PAGE).contains(n)).ok_or_else(|| {
                        AppDbError::Invalid(format!("`limit` must be a whole number from 1 to {MAX_PAGE}"))
                    })?;
                query.limit = Some(limit);
            }
            "cursor" => query.cursor = Some(value),
            _ => {
                let (search_type, text) = match value.split_once('=') {
                    Some(("gt", rest)) => (SearchType::GreaterThan, rest),
                    Some(("ge", rest)) => (SearchType::GreaterThanEqual, rest),
                    Some(("lt", rest)) => (SearchType::LessThan, rest),
                    Some(("le", rest)) => (SearchType::LessThanEqual, rest),
                    Some(("ne", rest)) => (SearchType::NotEqual, rest),
                    Some(("sw", rest)) => (SearchType::StartsWith, rest),
                    Some(("ew", rest)) => (SearchType::EndsWith, rest),
                    Some(("ct", rest)) => (SearchType::Contains, rest),
                    _ => (SearchType::Equals, value.as_str()),
                };
                let text = text.to_owned();
                query.conditions.push(RestCondition { attribute: name, search_type, text });
            }
        }
    }
    Ok(query)
}
