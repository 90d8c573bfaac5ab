//! Logging with `tracing`: human-readable by default, JSON lines with
//! `LORE_LOG_FORMAT=json`. `RUST_LOG` narrows or widens what is logged.

use std::ffi::OsString;
use std::io::IsTerminal;

use engine::settings::LogFormat;
use tracing_subscriber::EnvFilter;

pub fn init(format: LogFormat) {
    use tracing_subscriber::prelude::*;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,sea_orm=warn,sea_orm_migration=warn,lance=warn,lance_index=warn,lance_io=warn,lance_table=warn,lance_file=warn,lancedb=warn"));
    let ansi = colour(std::io::stderr().is_terminal(), std::env::var_os("NO_COLOR"));
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(ansi);
    let lines = match format {
        LogFormat::Json => lines.json().flatten_event(true).boxed(),
        LogFormat::Text => lines.boxed(),
    };
    // A second init (tests) keeps the first subscriber.
    let _ = tracing_subscriber::registry().with(filter).with(lines).with(Logbook).try_init();
}

/// Hands every line logged to `engine::logbook`, which `read_log` reads.
struct Logbook;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Logbook {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        let mut text = Text::default();
        event.record(&mut text);
        let metadata = event.metadata();
        engine::logbook::push(engine::logbook::Line {
            at: chrono::Utc::now(),
            level: metadata.level().to_string(),
            target: metadata.target().to_owned(),
            message: text.0,
        });
    }
}

/// An event's message, then its fields as `name=value`.
#[derive(Default)]
struct Text(String);

impl tracing::field::Visit for Text {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        if field.name() == "message" {
            let fields = std::mem::take(&mut self.0);
            self.0 = format!("{value:?}{fields}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        use std::fmt::Write;
        if field.name() == "message" {
            let fields = std::mem::take(&mut self.0);
            self.0 = format!("{value}{fields}");
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

/// Whether log lines carry ANSI colour codes: only for a person watching a
/// terminal, since in a file or a log collector the codes are noise around
/// every level and field. `NO_COLOR` set to anything but the empty string
/// turns them off there too (<https://no-color.org>).
pub fn colour(stderr_is_terminal: bool, no_color: Option<OsString>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|value| value.is_empty())
}
