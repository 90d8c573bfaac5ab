//! The console's screens and the frame around them.

mod dashboard;
mod frame;
mod later;
mod signin;
mod sources;

pub use dashboard::Dashboard;
pub use frame::{Console, NotFound};
pub use later::{Access, Playground, Prompt, Providers, SetupWizard, Tuning};
pub use signin::SignIn;
pub use sources::Sources;

/// Whether `path` is one of the console's pages (which need a signed-in admin).
pub fn is_console_page(path: &str) -> bool {
    path == "/dashboard" || frame::SCREENS.iter().any(|(href, _)| *href == path)
}
