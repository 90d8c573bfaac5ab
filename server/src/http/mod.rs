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
pub mod oauth;
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

use app::routes;
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
        .route(routes::SETUP_STATE.pattern(), get(admin::setup_state))
        .route(routes::OBSERVABILITY.pattern(), post(admin::observability))
        .route(routes::SETUP.pattern(), get(setup::get_wizard))
        .route(routes::SETUP_PERSONA.pattern(), post(setup::persona))
        .route(routes::SETUP_SOURCE.pattern(), post(setup::source))
        .route(routes::SETUP_PROVIDER.pattern(), post(setup::provider))
        .route(routes::SETUP_INDEX.pattern(), post(setup::index))
        .route(routes::SETUP_ASK.pattern(), post(setup::ask))
        .route(routes::SETUP_NEXT.pattern(), post(setup::next))
        .route(routes::SETUP_BACK.pattern(), post(setup::back))
        .route(routes::SOURCES.pattern(), get(sources::list).post(sources::create))
        .route(routes::SOURCE_KINDS.pattern(), get(sources::kinds))
        .route(routes::SOURCE.pattern(), get(sources::get_one).delete(sources::delete))
        .route(routes::SOURCE_ENABLE.pattern(), post(sources::enable))
        .route(routes::SOURCE_DISABLE.pattern(), post(sources::disable))
        .route(routes::SOURCE_SYNC.pattern(), post(jobs::sync))
        .route(
            routes::SOURCE_FILES.pattern(),
            // The handler enforces ingest.upload_max_bytes per file; this
            // bounds the whole request a little above it.
            post(sources::upload_files).layer(DefaultBodyLimit::max(upload_body_limit(&state))),
        )
        .route(routes::SOURCE_DOCUMENTS.pattern(), get(sources::documents))
        .route(routes::JOB.pattern(), get(jobs::job))
        .route(routes::REINDEX.pattern(), post(jobs::reindex))
        .route(routes::VECTOR_INDEX.pattern(), get(jobs::vector_index))
        .route(routes::SEARCH.pattern(), post(search::search))
        .route(routes::TUNING_CHUNKING.pattern(), put(tuning::set_chunking))
        .route(routes::TUNING.pattern(), get(tuning::get_tuning).put(tuning::put_tuning))
        .route(routes::SOURCE_VOLATILITY.pattern(), put(sources::set_volatility))
        .route(routes::SOURCE_AUDIENCE.pattern(), put(sources::set_audience))
        .route(routes::PROVIDERS.pattern(), get(providers::get_overview))
        .route(routes::QUICK_ADD.pattern(), post(providers::quick_add))
        .route(routes::ACCOUNTS.pattern(), post(providers::create_account))
        .route(routes::ACCOUNT.pattern(), put(providers::update_account).delete(providers::delete_account))
        .route(routes::ACCOUNT_MODELS.pattern(), get(providers::list_models))
        .route(routes::TARGETS.pattern(), post(providers::register_target))
        .route(routes::TARGET.pattern(), axum::routing::patch(providers::update_target))
        .route(routes::TARGET_PROBE.pattern(), post(providers::probe_target))
        .route(routes::TARGET_PROBES.pattern(), get(providers::probe_history))
        .route(routes::ESCALATION_TIERS.pattern(), put(providers::set_escalation_tiers))
        .route(routes::ROLE.pattern(), put(providers::bind_role))
        .route(routes::KEYS.pattern(), get(access::list).post(access::create))
        .route(routes::KEY_REVOKE.pattern(), post(access::revoke))
        .route(routes::OAUTH_CONNECTIONS.pattern(), get(access::connections))
        .route(routes::OAUTH_CONNECTION_REVOKE.pattern(), post(access::revoke_connection))
        .route(routes::PROFILE.pattern(), get(profile::get_overview))
        .route(routes::PROFILE_PERSONA.pattern(), put(profile::choose_persona))
        .route(routes::PROFILE_RENDER.pattern(), post(profile::render))
        .route(routes::PROFILE_VERSIONS.pattern(), post(profile::save))
        .route(routes::PROFILE_VERSION.pattern(), get(profile::get_version))
        .route(routes::PROFILE_RESTORE.pattern(), post(profile::restore))
        .route(routes::PROFILE_EVALS.pattern(), post(profile::run_evals))
        .route(routes::PROFILE_JUDGING.pattern(), get(profile::judging))
        .route(routes::GOLDEN.pattern(), get(profile::golden).post(profile::add_golden))
        .route(routes::GOLDEN_ONE.pattern(), axum::routing::delete(profile::remove_golden))
        .route(routes::PINS.pattern(), get(profile::pins).post(profile::pin))
        .route(routes::PIN.pattern(), axum::routing::delete(profile::unpin))
        .route(routes::PLAYGROUND_ANSWER.pattern(), post(answer::playground_answer))
        .route(routes::PLAYGROUND_RETRIEVAL.pattern(), post(answer::playground_retrieval))
        .route(routes::PLAYGROUND_FEEDBACK.pattern(), post(answer::playground_feedback))
        .route(routes::FEEDBACK.pattern(), get(answer::review_queue))
        .route(routes::FEEDBACK_REVIEW.pattern(), post(answer::review))
        // A key or an admin's session: behind the session layer and the
        // cross-origin guard, so a foreign page cannot ride a session here.
        .route("/operation", post(operation::operation))
        // The tool server (MCP): a key with the `mcp` scope or an admin's
        // session; the handler answers every method itself (405 with Allow).
        // Where a person signs an assistant in (the console's session).
        .route(
            "/oauth/authorize",
            get(oauth::authorize)
                .post(oauth::decide)
                .route_layer(middleware::from_fn_with_state(state.clone(), oauth::own_server_only)),
        )
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

    // The OAuth documents and the endpoints a client calls with no cookie:
    // outside the session layer, open to every origin.
    let own_server = Router::new()
        .route("/.well-known/oauth-authorization-server", get(oauth::authorization_server))
        .route("/oauth/register", post(oauth::register))
        .route("/oauth/token", post(oauth::token))
        .route("/oauth/revoke", post(oauth::revoke))
        .route_layer(middleware::from_fn_with_state(state.clone(), oauth::own_server_only));
    let oauth_public = Router::new()
        .route("/.well-known/oauth-protected-resource", get(oauth::protected_resource))
        .route("/.well-known/oauth-protected-resource/mcp", get(oauth::protected_resource))
        .route("/.well-known/oauth-protected-resource/operation/mcp", get(oauth::protected_resource))
        .merge(own_server)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn(oauth::open_cors));

    // Key-authenticated, no cookie: outside the cross-origin guard (see
    // `public`), behind the one x-api-key layer, on each route's methods
    // only: a method a path does not take is 405 before any key is asked
    // for. OPTIONS on /answer is the widget's CORS preflight, which the
    // layer answers.
    let keyed = middleware::from_fn_with_state(state.clone(), public::api_key);
    let public = Router::new()
        .route("/retrieve", post(public::retrieve).route_layer(keyed.clone()))
        .route("/answer", post(answer::public_answer).options(|| async {}).route_layer(keyed.clone()))
        .route("/answer/feedback", post(answer::public_feedback).options(|| async {}).route_layer(keyed))
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
        .merge(oauth_public)
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
