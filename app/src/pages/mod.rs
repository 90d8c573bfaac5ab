//! The console's screens and the frame around them.

mod access;
mod dashboard;
mod frame;
mod judging;
pub(crate) mod playground;
pub mod prompt;
mod providers;
mod setup;
mod signin;
mod source_form;
mod sources;
mod tuning;
pub mod users;

pub use access::Access;
pub use dashboard::Dashboard;
pub use frame::{Console, NotFound};
pub use playground::Playground;
pub use prompt::Prompt;
pub use providers::Providers;
pub use setup::SetupWizard;
pub use signin::SignIn;
pub use sources::Sources;
pub use tuning::Tuning;

/// Bumps `tick` each second while the calling component is mounted, in
/// the browser (on the server a component renders once): how a screen
/// polls what changes while it is open.
pub(crate) fn tick_each_second(tick: leptos::prelude::RwSignal<u32>) {
    leptos::prelude::Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        {
            use leptos::prelude::*;
            if let Ok(handle) = set_interval_with_handle(
                move || tick.update(|n| *n = n.wrapping_add(1)),
                std::time::Duration::from_secs(1),
            ) {
                on_cleanup(move || handle.clear());
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = tick;
    });
}

/// Whether `path` is one of the console's pages (which need a signed-in admin).
pub fn is_console_page(path: &str) -> bool {
    path == "/dashboard" || frame::SCREENS.iter().any(|(href, _)| *href == path)
}
