//! The console frame: header, navigation of the eight screens, and the admin
//! gate. Pages below it render only for an authorized admin.

use leptos::prelude::*;
use leptos_router::components::{Outlet, A};

use crate::api::get_viewer;
use crate::wire::ViewerInfo;

/// The eight screens of the console, in navigation order.
pub(crate) const SCREENS: [(&str, &str); 8] = [
    ("/", "Dashboard"),
    ("/setup", "Setup wizard"),
    ("/sources", "Sources"),
    ("/providers", "Providers"),
    ("/playground", "Playground"),
    ("/prompt", "Prompt"),
    ("/access", "Access"),
    ("/tuning", "Advanced tuning"),
];

#[component]
pub fn Console() -> impl IntoView {
    let viewer = Resource::new_blocking(|| (), |_| get_viewer());
    view! {
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || {
                viewer
                    .get()
                    .map(|result| match result {
                        Ok(Some(viewer)) if viewer.is_admin => view! { <AdminFrame viewer/> }.into_any(),
                        Ok(Some(viewer)) => view! { <Unavailable viewer/> }.into_any(),
                        Ok(None) => view! { <SignedOut/> }.into_any(),
                        Err(err) => view! { <p class="error">{format!("The console could not load: {err}")}</p> }
                            .into_any(),
                    })
            }}
        </Suspense>
    }
}

#[component]
fn AdminFrame(viewer: ViewerInfo) -> impl IntoView {
    view! {
        <div class="console">
            <header class="topbar">
                <a class="brand" href="/">"Lore"</a>
                <span class="who">{viewer.display_name}</span>
                <SignOutButton/>
            </header>
            <nav class="sidebar" aria-label="Console">
                <ul>
                    {SCREENS
                        .iter()
                        .map(|(href, label)| view! { <li><A href=*href exact=true>{*label}</A></li> })
                        .collect_view()}
                </ul>
            </nav>
            <main class="content">
                <Outlet/>
            </main>
        </div>
    }
}

#[component]
fn SignOutButton() -> impl IntoView {
    view! {
        <form method="post" action="/auth/signout" class="signout">
            <button type="submit">"Sign out"</button>
        </form>
    }
}

/// Signed in, but not an authorized admin: the console is unavailable.
#[component]
fn Unavailable(viewer: ViewerInfo) -> impl IntoView {
    #[cfg(feature = "ssr")]
    crate::api::ssr::set_status(http::StatusCode::FORBIDDEN);
    let who = viewer.email.unwrap_or(viewer.display_name);
    view! {
        <div class="notice" data-code="admin_unavailable">
            <h1>"The admin console is unavailable to this account"</h1>
            <p>
                "You are signed in as " <strong>{who}</strong>
                ", which is not an authorized admin of this Lore. An admin can add your email to "
                <code>"auth.admins"</code> " or your group to " <code>"auth.admin_groups"</code>
                ". Lore may also need your identity provider to mark the email as verified."
            </p>
            <p class="code">"Error code: admin_unavailable"</p>
            <SignOutButton/>
        </div>
    }
}

/// The session ended while the page was open (the server redirects page loads).
#[component]
fn SignedOut() -> impl IntoView {
    #[cfg(feature = "ssr")]
    crate::api::ssr::set_status(http::StatusCode::UNAUTHORIZED);
    view! {
        <div class="notice">
            <h1>"Signed out"</h1>
            <p>"Your session has ended. " <a href="/signin">"Sign in again"</a> "."</p>
        </div>
    }
}

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    crate::api::ssr::set_status(http::StatusCode::NOT_FOUND);
    view! {
        <div class="notice">
            <h1>"Not found"</h1>
            <p>"There is no such page. " <a href="/">"Go to the Dashboard"</a> "."</p>
        </div>
    }
}
