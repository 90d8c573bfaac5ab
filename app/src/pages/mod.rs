//! The console's screens and the frame around them.

mod access;
mod dashboard;
mod frame;
mod judging;
pub(crate) mod playground;
mod prompt;
mod providers;
mod setup;
mod signin;
mod sources;
mod tuning;
mod users;

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

/// Whether `path` is one of the console's pages (which need a signed-in admin).
pub fn is_console_page(path: &str) -> bool {
    path == "/dashboard" || frame::SCREENS.iter().any(|(href, _)| *href == path)
}
