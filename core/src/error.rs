//! The ground floor's errors. Each variant has a namesake in the engine's
//! error, which converts one into the other, so the edge keeps one table of
//! statuses and stable codes.

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration cannot work (for example an unreadable master key).
    #[error("invalid configuration: {0}")]
    Config(String),

    #[error("database error: {0}")]
    Database(#[from] sea_orm::DbErr),

    /// A directory Lore keeps its data in cannot be made or written: the
    /// path, and why (a file in the way, no permission).
    #[error("{what} {} cannot be used: {reason}", path.display())]
    Directory { what: &'static str, path: std::path::PathBuf, reason: String },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    /// Something that should not happen; the message is for the log only.
    #[error("internal error: {0}")]
    Internal(String),
}
