//! The Dashboard. For now it holds the Readiness panel; usage, cache, spend and
//! latency charts come with the rollups.

use leptos::prelude::*;

use crate::wire::SetupState;

#[component]
pub fn Dashboard() -> impl IntoView {
    view! {
        <section class="screen">
            <h1>"Dashboard"</h1>
            <Readiness/>
            <p class="empty">
                "Usage, cache, spend and latency charts appear here once questions are being answered."
            </p>
        </section>
    }
}

/// Readiness, fetched by the browser from `GET /admin/setup-state/`, the same
/// endpoint programs use. It is rendered after hydration, with a refresh button.
#[component]
fn Readiness() -> impl IntoView {
    let (generation, set_generation) = signal(0u32);
    let state = LocalResource::new(move || {
        generation.track();
        fetch_setup_state()
    });
    view! {
        <div class="panel readiness" aria-live="polite">
            <div class="panel-head">
                <h2>"Readiness"</h2>
                <button class="refresh" on:click=move |_| set_generation.update(|n| *n += 1)>
                    "Refresh"
                </button>
            </div>
            // No Suspense: the data only ever loads in the browser, so server and
            // hydrating client both render "Checking…" first, then the result.
            {move || match state.get() {
                None => view! { <p class="loading">"Checking readiness…"</p> }.into_any(),
                Some(Ok(state)) => view! { <ReadinessView state/> }.into_any(),
                Some(Err(message)) => view! { <p class="error">{message}</p> }.into_any(),
            }}
        </div>
    }
}

#[component]
fn ReadinessView(state: SetupState) -> impl IntoView {
    let verdict = if state.can_answer { "yes" } else { "no" };
    view! {
        <p class="verdict" data-can-answer=verdict>
            "Can answer questions: " <strong>{if state.can_answer { "Yes" } else { "Not yet" }}</strong>
        </p>
        <ul class="checks">
            {state
                .checks
                .into_iter()
                .map(|check| {
                    view! {
                        <li class=format!("check {}", check.status) data-check=check.name.clone()>
                            <span class="status">{check.status.clone()}</span>
                            <span class="name">{label(&check.name)}</span>
                            <span class="detail">{check.detail}</span>
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
}

fn label(check: &str) -> &'static str {
    match check {
        "configuration" => "Configuration",
        "embedding" => "Embedding model",
        "provider" => "Generation provider",
        "indexing" => "Indexing",
        "content" => "Content",
        "profile_version" => "Active profile version",
        _ => "Other",
    }
}

#[cfg(feature = "hydrate")]
async fn fetch_setup_state() -> Result<SetupState, String> {
    let response = gloo_net::http::Request::get("/admin/setup-state/")
        .send()
        .await
        .map_err(|err| format!("Readiness could not be fetched: {err}"))?;
    if response.ok() {
        response.json().await.map_err(|err| format!("Readiness answered nonsense: {err}"))
    } else {
        let body: Result<crate::wire::ErrorBody, _> = response.json().await;
        Err(match body {
            Ok(body) => format!("{} ({})", body.error.message, body.error.code),
            Err(_) => format!("Readiness failed with status {}", response.status()),
        })
    }
}

// The server never runs a LocalResource's fetcher; it renders the fallback.
#[cfg(not(feature = "hydrate"))]
async fn fetch_setup_state() -> Result<SetupState, String> {
    Err("Readiness loads in the browser.".to_owned())
}
