//! Logging with `tracing`: human-readable by default, JSON lines with
//! `LORE_LOG_FORMAT=json`. `RUST_LOG` narrows or widens what is logged.

use std::ffi::OsString;
use std::io::IsTerminal;

use engine::settings::LogFormat;
use tracing_subscriber::EnvFilter;

pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,sea_orm=warn,sea_orm_migration=warn,lance=warn,lance_index=warn,lance_io=warn,lance_table=warn,lance_file=warn,lancedb=warn"));
    let ansi = colour(std::io::stderr().is_terminal(), std::env::var_os("NO_COLOR"));
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    // A second init (tests) keeps the first subscriber.
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

/// Whether log lines carry ANSI colour codes: only for a person watching a
/// terminal, since in a file or a log collector the codes are noise around
/// every level and field. `NO_COLOR` set to anything but the empty string
/// turns them off there too (<https://no-color.org>).
fn colour(stderr_is_terminal: bool, no_color: Option<OsString>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|value| value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::colour;

    #[test]
    fn colour_only_on_a_terminal_and_without_no_color() {
        assert!(colour(true, None));
        assert!(!colour(false, None), "a file or a pipe gets plain text");
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, Some("1".into())));
        // The convention: an empty NO_COLOR does not count.
        assert!(colour(true, Some("".into())));
    }
}
