//! Layers every request passes through: request logging, the session, and the
//! cross-origin guard for cookie-authenticated mutations.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Router;
use axum_extra::extract::cookie::CookieJar;
use chrono::Utc;
use engine::auth::{sessions, Viewer};
use tower_http::classify::ServerErrorsFailureClass;
use tower_http::trace::TraceLayer;
use tracing::Span;

use super::auth::{clear_session_cookie, session_cookie, SESSION_COOKIE};
use super::error::ApiError;
use crate::AppState;

/// Sends a signed-in admin who opens the console's home (`/`) on a fresh
/// install (no profile yet, the wizard not finished) to the setup wizard.
pub async fn land_on_wizard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let home = request.method() == Method::GET && request.uri().path() == "/";
    let admin = request.extensions().get::<Viewer>().is_some_and(|viewer| viewer.is_admin);
    if home && admin {
        match engine::wizard::lands_here(&state.lore).await {
            Ok(true) => return Redirect::to("/setup").into_response(),
            Ok(false) => {}
            Err(err) => return ApiError::from(err).into_response(),
        }
    }
    next.run(request).await
}

/// Adds request logging. Only the path is logged, never the query string:
/// sign-in links and OIDC callbacks carry secrets there. The orchestrator's
/// probes (`/healthz`, `/readyz`) are logged at DEBUG: they come every few
/// seconds from every checker and would bury the requests people make (a
/// 60 s load run logged 542 MB of them at INFO). A failing probe still
/// shows: readiness warns why, and a 5xx is logged as an error below.
pub fn observe<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router.layer(axum::middleware::from_fn(mark_probe)).layer(
        TraceLayer::new_for_http()
            .make_span_with(|request: &Request<Body>| {
                tracing::info_span!("request", method = %request.method(), path = %request.uri().path())
            })
            .on_request(())
            .on_response(|response: &Response, latency: Duration, _span: &Span| {
                let (status, latency_ms) = (response.status().as_u16(), latency.as_millis() as u64);
                if response.extensions().get::<Probe>().is_some() {
                    tracing::debug!(status, latency_ms, "served");
                } else {
                    tracing::info!(status, latency_ms, "served");
                }
            })
            .on_body_chunk(())
            .on_eos(())
            .on_failure(|class: ServerErrorsFailureClass, latency: Duration, _span: &Span| {
                tracing::error!(%class, latency_ms = latency.as_millis() as u64, "failed");
            }),
    )
}

/// Marks the response to a liveness or readiness probe, for the request log
/// (which sees the response, not the request, when it logs).
#[derive(Clone, Copy, Debug)]
struct Probe;

async fn mark_probe(request: Request, next: Next) -> Response {
    let probe = matches!(request.uri().path(), "/healthz" | "/readyz");
    let mut response = next.run(request).await;
    if probe {
        response.extensions_mut().insert(Probe);
    }
    response
}

/// Finds the session behind the cookie and stores the [`Viewer`] on the
/// request. Re-issues the cookie when its token is past half its life, clears
/// it when the session is gone, and sends signed-out page loads to sign-in.
pub async fn session(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let jar = CookieJar::from_headers(request.headers());
    let mut refreshed = None;
    let mut stale_cookie = false;
    if let Some(cookie) = jar.get(SESSION_COOKIE) {
        match sessions::authenticate(&state.lore, cookie.value(), Utc::now()).await {
            Ok(viewer) => {
                refreshed = viewer.refreshed.clone();
                request.extensions_mut().insert(viewer);
            }
            Err(engine::Error::Auth(_)) => stale_cookie = true,
            Err(other) => return ApiError::from(other).into_response(),
        }
    }

    let signed_out = request.extensions().get::<Viewer>().is_none();
    if signed_out && request.method() == Method::GET && app::pages::is_console_page(request.uri().path()) {
        let next_path = request.uri().path_and_query().map(|pq| pq.as_str()).unwrap_or("/");
        let target = format!(
            "/signin?next={}",
            url::form_urlencoded::byte_serialize(next_path.as_bytes()).collect::<String>()
        );
        return Redirect::to(&target).into_response();
    }

    let mut response = next.run(request).await;
    // A handler that set the session cookie itself (sign-in, sign-out) wins.
    if !sets_session_cookie(response.headers()) {
        let cookie = match (refreshed, stale_cookie) {
            (Some(token), _) => Some(session_cookie(&state.lore, &token)),
            (None, true) => Some(clear_session_cookie(&state.lore)),
            (None, false) => None,
        };
        if let Some(value) = cookie.and_then(|c| HeaderValue::from_str(&c.to_string()).ok()) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

fn sets_session_cookie(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::SET_COOKIE)
        .iter()
        .any(|value| value.as_bytes().starts_with(format!("{SESSION_COOKIE}=").as_bytes()))
}

/// Refuses state-changing requests that a browser sent from another origin,
/// so a signed-in admin's cookie cannot be ridden by another site (CSRF).
///
/// Browsers say where a request comes from: `Sec-Fetch-Site` (all current
/// browsers) or else `Origin`, which must then match `Host`. A request with
/// neither did not come from a browser, so it cannot carry a victim's cookie.
/// The session cookie is also `SameSite=Lax`, a second line of defence.
pub async fn reject_cross_origin(request: Request, next: Next) -> Response {
    if is_safe_method(request.method()) || is_same_origin(request.headers()) {
        next.run(request).await
    } else {
        tracing::warn!(path = %request.uri().path(), "refused a cross-origin request");
        ApiError::CrossOriginRejected.into_response()
    }
}

fn is_safe_method(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

pub fn is_same_origin(headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        return matches!(site.as_bytes(), b"same-origin" | b"none");
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let origin_host = origin.to_str().ok().and_then(|origin| url::Url::parse(origin).ok()).and_then(|url| {
        url.host_str().map(|host| match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        })
    });
    let host = headers.get(header::HOST).and_then(|host| host.to_str().ok());
    matches!((origin_host, host), (Some(origin), Some(host)) if origin.eq_ignore_ascii_case(host))
}
