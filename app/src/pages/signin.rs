//! The sign-in page: through the identity provider, or (with none configured)
//! the one-time link that `lore serve` printed.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::api::get_sign_in_options;

#[component]
pub fn SignIn() -> impl IntoView {
    let options = Resource::new_blocking(|| (), |_| get_sign_in_options());
    let query = use_query_map();
    let next = move || query.with(|q| q.get("next").unwrap_or_else(|| "/".to_owned()));
    let error = move || query.with(|q| q.get("error"));
    view! {
        <div class="notice signin">
            <h1>"Sign in to Lore"</h1>
            {move || error().map(|code| view! { <p class="error" data-code=code.clone()>{sign_in_error(&code)}</p> })}
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || options.get().map(|result| match result {
                    Ok(options) if options.oidc => {
                        let href = format!("/auth/oidc/start?return_to={}", urlencode(&next()));
                        view! {
                            // rel=external: a full page load to the server, not a client-side route.
                            <a class="button primary" href=href rel="external">"Sign in with your identity provider"</a>
                        }
                            .into_any()
                    }
                    Ok(_) => view! {
                        <p>
                            "No identity provider is configured. Open the one-time sign-in link that "
                            <code>"lore serve"</code>
                            " printed in its terminal, on the machine Lore runs on. Each start prints a new one."
                        </p>
                    }
                    .into_any(),
                    Err(err) => view! { <p class="error">{err.to_string()}</p> }.into_any(),
                })}
            </Suspense>
        </div>
    }
}

fn sign_in_error(code: &str) -> &'static str {
    match code {
        "sign_in_failed" => "Sign-in did not complete. Please try again.",
        "identity_provider_unavailable" => "The identity provider could not be reached.",
        "bootstrap_link_invalid" => "That sign-in link is invalid, already used or expired.",
        _ => "Sign-in did not complete.",
    }
}

/// Percent-encodes a path for use as a query value.
pub(crate) fn urlencode(value: &str) -> String {
    value
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}
