//! `#[server]` functions of the console. Each is thin: find the caller, call
//! one engine function, convert the result to a wire type.

use leptos::prelude::*;

use crate::wire::{SignInOptions, ViewerInfo};

/// The signed-in account, or `None` when the request carries no valid session.
#[server(prefix = "/api", endpoint = "viewer")]
pub async fn get_viewer() -> Result<Option<ViewerInfo>, ServerFnError> {
    Ok(ssr::viewer().as_ref().map(ViewerInfo::from))
}

/// How an admin signs in to this install.
#[server(prefix = "/api", endpoint = "sign_in_options")]
pub async fn get_sign_in_options() -> Result<SignInOptions, ServerFnError> {
    let lore = ssr::lore()?;
    Ok(SignInOptions { oidc: lore.settings.oidc_configured() })
}

#[cfg(feature = "ssr")]
pub mod ssr {
    //! Server-side context of a console request: the engine handle (provided
    //! by the server when it mounts the console) and the viewer (found by the
    //! server's session layer and stored on the request).

    use leptos::prelude::*;

    pub fn lore() -> Result<engine::Lore, ServerFnError> {
        use_context::<engine::Lore>().ok_or_else(|| ServerFnError::new("the engine is not mounted"))
    }

    pub fn viewer() -> Option<engine::auth::Viewer> {
        use_context::<http::request::Parts>()?.extensions.get::<engine::auth::Viewer>().cloned()
    }

    /// Sets the HTTP status of the page being rendered.
    pub fn set_status(status: http::StatusCode) {
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(status);
        }
    }
}
