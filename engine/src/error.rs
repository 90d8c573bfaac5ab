//! The engine's error type. User errors (bad input, refused actions) are split
//! from internal ones; the edge maps each variant to a status and a stable code
//! in one exhaustive match.

use crate::auth::AuthError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Sign-in, session or authorization failures.
    #[error(transparent)]
    Auth(#[from] AuthError),

    /// The configuration cannot work (for example a partial OIDC block).
    #[error("invalid configuration: {0}")]
    Config(String),

    /// The embedding model is missing, unloadable or failed.
    #[error(transparent)]
    Embedding(#[from] crate::embed::EmbedError),

    #[error("database error: {0}")]
    Database(#[from] sea_orm::DbErr),

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
