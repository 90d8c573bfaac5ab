//! Sign-in and sign-out routes. The flows themselves live in `engine::auth`;
//! this module moves tokens between cookies, query strings and redirects.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Redirect, Response};
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use chrono::Utc;
use engine::auth::{bootstrap, oidc, sessions, SessionToken, Viewer};
use serde::Deserialize;

use super::error::ApiError;
use crate::AppState;

/// The session cookie: a short-lived signed token naming a session row.
pub const SESSION_COOKIE: &str = "lore_session";
/// Binds a started OIDC sign-in to the browser that started it.
const OIDC_BINDING_COOKIE: &str = "lore_oidc";

fn secure(lore: &engine::Lore) -> bool {
    lore.settings.base_url().starts_with("https://")
}

pub fn session_cookie(lore: &engine::Lore, token: &SessionToken) -> Cookie<'static> {
    let remaining = (token.session_expires_at - Utc::now()).num_seconds().max(0);
    Cookie::build((SESSION_COOKIE, token.value.clone()))
        .path("/")
        .http_only(true)
        // Lax, not Strict: the sign-in redirect from the identity provider is
        // cross-site, and a Strict cookie would be withheld right after it.
        .same_site(SameSite::Lax)
        .secure(secure(lore))
        .max_age(cookie::time::Duration::seconds(remaining))
        .build()
}

pub fn clear_session_cookie(lore: &engine::Lore) -> Cookie<'static> {
    Cookie::build((SESSION_COOKIE, ""))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(secure(lore))
        .max_age(cookie::time::Duration::ZERO)
        .build()
}

#[derive(Deserialize)]
pub struct BootstrapQuery {
    token: String,
}

/// `GET /auth/bootstrap?token=…`: the one-time link printed by `lore serve`.
pub async fn bootstrap(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Query(query): Query<BootstrapQuery>,
    jar: CookieJar,
) -> Response {
    let origin = bootstrap::RequestOrigin {
        peer: peer.ip(),
        forwarded: headers.contains_key(header::FORWARDED) || headers.contains_key("x-forwarded-for"),
    };
    match bootstrap::redeem(&state.lore, &query.token, origin, Utc::now()).await {
        Ok(token) => (jar.add(session_cookie(&state.lore, &token)), Redirect::to("/")).into_response(),
        Err(err) => ApiError::from(err).into_response(),
    }
}

#[derive(Deserialize)]
pub struct StartQuery {
    return_to: Option<String>,
}

/// `GET /auth/oidc/start`: sends the browser to the identity provider.
pub async fn oidc_start(
    State(state): State<AppState>,
    Query(query): Query<StartQuery>,
    jar: CookieJar,
) -> Response {
    let return_to = query.return_to.as_deref().unwrap_or("/");
    match oidc::begin(&state.lore, return_to, Utc::now()).await {
        Ok(started) => {
            let binding = Cookie::build((OIDC_BINDING_COOKIE, started.browser_binding))
                .path("/auth/oidc")
                .http_only(true)
                .same_site(SameSite::Lax)
                .secure(secure(&state.lore))
                .max_age(cookie::time::Duration::minutes(10))
                .build();
            (jar.add(binding), Redirect::to(&started.authorize_url)).into_response()
        }
        Err(err) => sign_in_error_redirect(err.into()),
    }
}

#[derive(Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /auth/oidc/callback`: the identity provider sends the browser back.
pub async fn oidc_callback(
    State(state): State<AppState>,
    Query(query): Query<CallbackQuery>,
    jar: CookieJar,
) -> Response {
    let binding = jar.get(OIDC_BINDING_COOKIE).map(|c| c.value().to_owned());
    let jar = jar.remove(Cookie::build(OIDC_BINDING_COOKIE).path("/auth/oidc"));
    let (Some(code), Some(oauth_state)) = (query.code, query.state) else {
        let why = query.error.unwrap_or_else(|| "the callback carried no code".to_owned());
        tracing::warn!(reason = %why, "OIDC sign-in was not completed at the provider");
        return (jar, sign_in_error_redirect(engine::auth::AuthError::SignInFailed(why).into()))
            .into_response();
    };
    match oidc::complete(&state.lore, &code, &oauth_state, binding.as_deref(), Utc::now()).await {
        Ok(done) => {
            // Anyone may come back to an assistant's sign-in (it decides
            // whether they may sign it in); only admins to the console.
            let to_oauth = done.return_to.starts_with("/oauth/authorize?");
            let target = if done.is_admin || to_oauth { done.return_to } else { "/".to_owned() };
            (jar.add(session_cookie(&state.lore, &done.session)), Redirect::to(&target)).into_response()
        }
        Err(err) => (jar, sign_in_error_redirect(err.into())).into_response(),
    }
}

/// A browser mid-sign-in lands on the sign-in page with the error's code.
fn sign_in_error_redirect(err: ApiError) -> Response {
    let (_, code, _) = err.parts();
    if let ApiError::Engine(inner) = &err {
        tracing::warn!(code, error = %inner, "sign-in failed");
    }
    Redirect::to(&format!("/signin?error={code}")).into_response()
}

/// `POST /auth/signout`: revokes the session; its cookie stops working everywhere.
pub async fn sign_out(
    State(state): State<AppState>,
    viewer: Option<axum::Extension<Viewer>>,
    jar: CookieJar,
) -> Response {
    if let Some(axum::Extension(viewer)) = viewer {
        if let Err(err) = sessions::revoke(&state.lore, &viewer.session_id, Utc::now()).await {
            return ApiError::from(err).into_response();
        }
    }
    (jar.add(clear_session_cookie(&state.lore)), Redirect::to("/signin")).into_response()
}
