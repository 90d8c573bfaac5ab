//! Mounts the Leptos console: server-rendered pages, `#[server]` functions
//! under `/api`, and the built assets (`/pkg/lore.js`, `lore_bg.wasm`, `lore.css`).

use std::path::PathBuf;

use axum::body::Body;
use axum::extract::State;
use axum::http::Request;
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use leptos_axum::{generate_route_list, handle_server_fns_with_context, LeptosRoutes};

use crate::AppState;

/// The name the hydrate build is given (`pkg/lore.js`, `pkg/lore_bg.wasm`).
pub const OUTPUT_NAME: &str = "lore";

/// Leptos' options for a site root holding the built `pkg/` directory.
pub fn leptos_options(settings: &engine::Settings) -> LeptosOptions {
    let site_root = site_root(settings);
    LeptosOptions::builder()
        .output_name(OUTPUT_NAME)
        .site_root(site_root.display().to_string())
        .site_pkg_dir("pkg")
        .site_addr(settings.server.bind)
        .build()
}

/// `server.site_root`, or `site/` beside the directory of the `lore`
/// executable (`target/site` for `target/debug/lore` and `target/release/lore`).
fn site_root(settings: &engine::Settings) -> PathBuf {
    if let Some(root) = &settings.server.site_root {
        return root.clone();
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("site")))
        .unwrap_or_else(|| PathBuf::from("site"))
}

pub fn routes(state: &AppState) -> Router<AppState> {
    let pages = generate_route_list(app::App);
    let lore = state.lore.clone();
    let options = state.leptos.clone();
    Router::new()
        .route("/api/{*fn_name}", post(server_fn).get(server_fn))
        .leptos_routes_with_context(
            state,
            pages,
            move || provide_context(lore.clone()),
            move || app::shell(options.clone()),
        )
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(app::shell))
}

async fn server_fn(State(state): State<AppState>, request: Request<Body>) -> impl IntoResponse {
    handle_server_fns_with_context(move || provide_context(state.lore.clone()), request).await
}
