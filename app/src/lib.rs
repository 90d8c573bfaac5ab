//! The Lore admin console, rendered on the server (feature `ssr`) and hydrated
//! in the browser (feature `hydrate`, built by the `frontend` crate).
//!
//! - [`wire`]: the JSON shapes that cross the wire, shared by both sides.
//! - [`api`]: `#[server]` functions; under `ssr` each calls one engine function.
//! - [`client`]: the browser's calls to the JSON endpoints (admin API).
//! - [`pages`]: one module per console screen.

pub mod api;
pub mod client;
pub mod pages;
pub mod routes;
pub mod wire;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{ParentRoute, Route, Router, Routes};
use leptos_router::{path, SsrMode};

/// The HTML document around the app (server side only).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    mark_hydrated();
    view! {
        <Stylesheet id="lore" href="/pkg/lore.css"/>
        <Title text="Lore"/>
        <Router>
            <Routes fallback=pages::NotFound>
                <Route path=path!("/signin") view=pages::SignIn ssr=SsrMode::Async/>
                <ParentRoute path=path!("") view=pages::Console ssr=SsrMode::Async>
                    <Route path=path!("") view=pages::Dashboard ssr=SsrMode::Async/>
                    <Route path=path!("dashboard") view=pages::Dashboard ssr=SsrMode::Async/>
                    <Route path=path!("setup") view=pages::SetupWizard ssr=SsrMode::Async/>
                    <Route path=path!("sources") view=pages::Sources ssr=SsrMode::Async/>
                    <Route path=path!("providers") view=pages::Providers ssr=SsrMode::Async/>
                    <Route path=path!("playground") view=pages::Playground ssr=SsrMode::Async/>
                    <Route path=path!("prompt") view=pages::Prompt ssr=SsrMode::Async/>
                    <Route path=path!("access") view=pages::Access ssr=SsrMode::Async/>
                    <Route path=path!("tuning") view=pages::Tuning ssr=SsrMode::Async/>
                </ParentRoute>
            </Routes>
        </Router>
    }
}

/// Sets `data-hydrated` on `<body>` once the WASM has taken over, so that
/// browser tests (and curious admins) can tell a live page from a static one.
fn mark_hydrated() {
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        if let Some(body) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.body()) {
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });
}
