//! The HTTP surface: routes, and the layers every request passes through.

pub mod access;
pub mod admin;
pub mod answer;
pub mod auth;
pub mod codes;
pub mod data;
pub mod error;
pub mod health;
pub mod jobs;
pub mod json;
pub mod layers;
pub mod mcp;
pub mod openapi;
pub mod operation;
pub mod profile;
pub mod prometheus;
pub mod providers;
pub mod public;
pub mod search;
pub mod setup;
pub mod sources;
pub mod tuning;

use axum::extract::DefaultBodyLimit;
use axum::routing::{any, get, post, put};
use axum::{middleware, Router};

use crate::AppState;

/// Every route of Lore, path → handler.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/metrics", get(prometheus::scrape))
        .route("/readyz", get(health::readyz))
        .route("/auth/bootstrap", get(auth::bootstrap))
        .route("/auth/oidc/start", get(auth::oidc_start))
        .route("/auth/oidc/callback", get(auth::oidc_callback))
        .route("/auth/signout", post(auth::sign_out))
        .route("/admin/setup-state/", get(admin::setup_state))
        .route("/admin/observability/", post(admin::observability))
        .route("/admin/setup/", get(setup::get_wizard))
        .route("/admin/setup/persona", post(setup::persona))
        .route("/admin/setup/source", post(setup::source))
        .route("/admin/setup/provider", post(setup::provider))
        .route("/admin/setup/index", post(setup::index))
        .route("/admin/setup/ask", post(setup::ask))
        .route("/admin/setup/next", post(setup::next))
        .route("/admin/setup/back", post(setup::back))
        .route("/admin/sources/", get(sources::list).post(sources::create))
        .route("/admin/sources/kinds", get(sources::kinds))
        .route("/admin/sources/{id}", get(sources::get_one).delete(sources::delete))
        .route("/admin/sources/{id}/enable", post(sources::enable))
        .route("/admin/sources/{id}/disable", post(sources::disable))
        .route("/admin/sources/{id}/sync", post(jobs::sync))
        .route(
            "/admin/sources/{id}/files",
            // The handler enforces ingest.upload_max_bytes per file; this
            // bounds the whole request a little above it.
            post(sources::upload_files).layer(DefaultBodyLimit::max(upload_body_limit(&state))),
        )
        .route("/admin/sources/{id}/documents", get(sources::documents))
        .route("/admin/jobs/{id}", get(jobs::job))
        .route("/admin/reindex", post(jobs::reindex))
        .route("/admin/search", post(search::search))
        .route("/admin/tuning/chunking", put(tuning::set_chunking))
        .route("/admin/tuning", get(tuning::get_tuning).put(tuning::put_tuning))
        .route("/admin/sources/{id}/volatility", put(sources::set_volatility))
        .route("/admin/providers/", get(providers::get_overview))
        .route("/admin/providers/quick-add", post(providers::quick_add))
        .route("/admin/providers/accounts", post(providers::create_account))
        .route(
            "/admin/providers/accounts/{id}",
            put(providers::update_account).delete(providers::delete_account),
        )
        .route("/admin/providers/accounts/{id}/models", get(providers::list_models))
        .route("/admin/targets", post(providers::register_target))
        .route("/admin/targets/{id}", axum::routing::patch(providers::update_target))
        .route("/admin/targets/{id}/probe", post(providers::probe_target))
        .route("/admin/targets/{id}/probes", get(providers::probe_history))
        .route("/admin/providers/escalation-tiers", put(providers::set_escalation_tiers))
        .route("/admin/roles/{role}", put(providers::bind_role))
        .route("/admin/keys", get(access::list).post(access::create))
        .route("/admin/keys/{id}/revoke", post(access::revoke))
        .route("/admin/profile", get(profile::get_overview))
        .route("/admin/profile/persona", put(profile::choose_persona))
        .route("/admin/profile/render", post(profile::render))
        .route("/admin/profile/versions", post(profile::save))
        .route("/admin/profile/versions/{version}", get(profile::get_version))
        .route("/admin/profile/versions/{version}/restore", post(profile::restore))
        .route("/admin/profile/evals", post(profile::run_evals))
        .route("/admin/profile/judging", get(profile::judging))
        .route("/admin/golden", get(profile::golden).post(profile::add_golden))
        .route("/admin/golden/{id}", axum::routing::delete(profile::remove_golden))
        .route("/admin/pins", get(profile::pins).post(profile::pin))
        .route("/admin/pins/{id}", axum::routing::delete(profile::unpin))
        .route("/admin/playground/answer", post(answer::playground_answer))
        .route("/admin/playground/retrieval", post(answer::playground_retrieval))
        // A key or an admin's session: behind the session layer and the
        // cross-origin guard, so a foreign page cannot ride a session here.
        .route("/operation", post(operation::operation))
        // The tool server (MCP): a key with the `mcp` scope or an admin's
        // session; the handler answers every method itself (405 with Allow).
        .route("/mcp", any(mcp::application))
        .route("/operation/mcp", any(mcp::operations))
        // REST for the exported resources: the same credentials.
        .route("/data/openapi.json", get(data::openapi))
        .route(
            "/data/{*path}",
            get(data::data).post(data::data).put(data::data).patch(data::data).delete(data::data),
        )
        .method_not_allowed_fallback(method_not_allowed);

    // Documents any page may load, cached publicly: outside the session
    // layer, so a response never carries a visitor's session cookie into a
    // shared cache.
    let documents = Router::new()
        .route("/openapi.json", get(openapi::openapi))
        .route("/widget.js", get(answer::widget_script))
        .method_not_allowed_fallback(method_not_allowed);

    // Key-authenticated, no cookie: outside the cross-origin guard (see
    // `public`), behind the one x-api-key layer, on each route's methods
    // only: a method a path does not take is 405 before any key is asked
    // for. OPTIONS on /answer is the widget's CORS preflight, which the
    // layer answers.
    let keyed = middleware::from_fn_with_state(state.clone(), public::api_key);
    let public = Router::new()
        .route("/retrieve", post(public::retrieve).route_layer(keyed.clone()))
        .route("/answer", post(answer::public_answer).options(|| async {}).route_layer(keyed))
        .method_not_allowed_fallback(method_not_allowed);

    let app = api
        .merge(
            crate::console::routes(&state)
                .layer(middleware::from_fn_with_state(state.clone(), layers::land_on_wizard)),
        )
        .layer(middleware::from_fn(layers::reject_cross_origin))
        .layer(middleware::from_fn_with_state(state.clone(), layers::session))
        .merge(public)
        .merge(documents)
        .layer(middleware::from_fn_with_state(state.clone(), prometheus::record));
    layers::observe(app).with_state(state)
}

/// A known path asked with a method it does not have: the JSON error shape
/// with a stable code, as every other error.
async fn method_not_allowed() -> error::ApiError {
    error::ApiError::MethodNotAllowed
}

fn upload_body_limit(state: &AppState) -> usize {
    let per_file = state.lore.settings.ingest.upload_max_bytes;
    usize::try_from(per_file.saturating_add(1024 * 1024)).unwrap_or(usize::MAX)
}
