//! Logging with `tracing`: human-readable by default, JSON lines with
//! `LORE_LOG_FORMAT=json`. `RUST_LOG` narrows or widens what is logged.

use engine::settings::LogFormat;
use tracing_subscriber::EnvFilter;

pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,sea_orm=warn,sea_orm_migration=warn,lance=warn,lance_index=warn,lance_io=warn,lance_table=warn,lance_file=warn,lancedb=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    // A second init (tests) keeps the first subscriber.
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}
