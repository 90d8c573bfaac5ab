//! The public surfaces, authenticated by `x-api-key` instead of a session.
//!
//! [`api_key`] is the one layer in front of them: it picks the scope from the
//! path, lets `engine::keys::authenticate` decide (known, active, in scope,
//! widget origin and rate), puts the [`Caller`] on the request, records the
//! key's usage after the handler ran, and sends CORS headers only to origins
//! an active widget key allows, and on a success only for a widget key.
//! These routes sit outside the console's cross-origin guard: they carry no
//! cookie, so a foreign page cannot ride an admin's session through them.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engine::keys::{self, Caller, Scope};
use tokio::sync::watch;

use app::wire::{RetrieveRequest, RetrieveResponse};

use super::error::ApiError;
use super::json::ApiJson;
use crate::AppState;

pub const API_KEY_HEADER: &str = "x-api-key";

/// The estimated cost of a request, set by a handler on its response so the
/// layer can add it to the key's usage.
#[derive(Clone, Debug)]
pub enum EstimatedCost {
    Known(f64),
    /// A streamed answer's, known once its run ends (0 if it failed): the
    /// layer counts the request then.
    Later(watch::Receiver<Option<f64>>),
}

/// A rating of an answer: within the key's rate, but no query of it.
fn is_rating(path: &str) -> bool {
    path.trim_end_matches('/') == "/answer/feedback"
}

fn scope_for(path: &str) -> Option<Scope> {
    match path.trim_end_matches('/') {
        "/answer" | "/answer/feedback" => Some(Scope::Answer),
        "/retrieve" => Some(Scope::Retrieve),
        "/mcp" | "/operation/mcp" => Some(Scope::Mcp),
        _ => None,
    }
}

fn origin_of(headers: &HeaderMap) -> Option<String> {
    headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

fn add_cors(headers: &mut HeaderMap, origin: &str) {
    if let Ok(value) = HeaderValue::from_str(origin) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value);
        headers.insert(header::VARY, HeaderValue::from_static("Origin"));
    }
}

/// The `x-api-key` layer (see the module docs).
pub async fn api_key(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let lore = state.lore.clone();
    let origin = origin_of(request.headers());
    if request.method() == Method::OPTIONS {
        let allowed = listed(&lore, origin.as_deref()).await;
        return preflight(origin.as_deref(), allowed);
    }
    let Some(scope) = scope_for(request.uri().path()) else {
        return next.run(request).await;
    };
    let raw = request.headers().get(API_KEY_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (mut response, allowed_origin) =
        match keys::authenticate(&lore, raw.as_deref(), scope, origin.as_deref()).await {
            Ok(caller) => {
                // A widget key passed only from an origin it lists. A secret
                // key is never for a web page: no browser may read its
                // answers, whatever origin asked.
                let allowed_origin = caller.kind == keys::KeyKind::Widget;
                let key_id = caller.key_id.clone();
                // A rating is no query, whether it is stored or refused.
                let query = !is_rating(request.uri().path());
                request.extensions_mut().insert(caller);
                let response = next.run(request).await;
                // Counted behind the response: it must not slow the answer
                // down, nor fail it.
                match response.extensions().get::<EstimatedCost>().cloned() {
                    _ if !query => {}
                    Some(EstimatedCost::Later(mut ended)) => {
                        tokio::spawn(async move {
                            let cost = ended.wait_for(Option::is_some).await.ok().and_then(|cost| *cost);
                            record_usage(&lore, &key_id, cost.unwrap_or_default()).await;
                        });
                    }
                    Some(EstimatedCost::Known(cost)) => record_usage(&lore, &key_id, cost).await,
                    None => record_usage(&lore, &key_id, 0.0).await,
                }
                (response, allowed_origin)
            }
            // The widget reads its errors too (revoked, over the rate...).
            Err(err) => (ApiError::from(err).into_response(), listed(&lore, origin.as_deref()).await),
        };
    if let (Some(origin), true) = (&origin, allowed_origin) {
        add_cors(response.headers_mut(), origin);
    }
    response
}

/// Counts one call of key `key_id` and what it cost, behind the response:
/// the one usage counter of every keyed surface.
pub(super) async fn record_usage(lore: &engine::Lore, key_id: &str, cost: f64) {
    if let Err(err) = lore.recorder().key_usage(key_id, cost).await {
        tracing::warn!(error = %err, "could not record key usage");
    }
}

/// Whether some active widget key lists `origin`. A query, so the layer asks
/// only for preflights and errors (the widget reads its errors too).
async fn listed(lore: &engine::Lore, origin: Option<&str>) -> bool {
    match origin {
        Some(origin) => keys::origin_allowed(lore, origin).await.unwrap_or(false),
        None => false,
    }
}

/// A CORS preflight: allowed only for origins an active widget key lists;
/// refused in the one error shape (403 `origin_not_allowed`), with no CORS
/// headers, so a page's script cannot read even the refusal.
fn preflight(origin: Option<&str>, allowed: bool) -> Response {
    let Some(origin) = origin.filter(|_| allowed) else {
        return ApiError::PreflightRefused(origin.map(str::to_owned)).into_response();
    };
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    add_cors(headers, origin);
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("POST, OPTIONS"));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("content-type, accept, x-api-key"),
    );
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    response
}

/// `POST /retrieve`: hybrid retrieval with the active profile version's
/// settings (the defaults before a profile exists).
pub async fn retrieve(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiJson(request): ApiJson<RetrieveRequest>,
) -> Result<Json<RetrieveResponse>, ApiError> {
    let asker = engine::asker::Asker::Key(caller);
    let traced = engine::asker::retrieve(&state.lore, &asker, &request.query, request.top_k)
        .await
        .map_err(ApiError::public)?;
    Ok(Json(RetrieveResponse::from(traced)))
}
