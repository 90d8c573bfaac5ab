//! The HTTP surface: routes, and the layers every request passes through.

pub mod admin;
pub mod auth;
pub mod error;
pub mod health;
pub mod layers;

use axum::routing::{get, post};
use axum::{middleware, Router};

use crate::AppState;

/// Every route of Lore, path → handler.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/auth/bootstrap", get(auth::bootstrap))
        .route("/auth/oidc/start", get(auth::oidc_start))
        .route("/auth/oidc/callback", get(auth::oidc_callback))
        .route("/auth/signout", post(auth::sign_out))
        .route("/admin/setup-state/", get(admin::setup_state));

    let app = api
        .merge(crate::console::routes(&state))
        .layer(middleware::from_fn(layers::reject_cross_origin))
        .layer(middleware::from_fn_with_state(state.clone(), layers::session));
    layers::observe(app).with_state(state)
}
