//! The engine's error type. User errors (bad input, refused actions) are split
//! from internal ones; the edge maps each variant to a status and a stable code
//! in one exhaustive match.

use crate::auth::AuthError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The application database: users, roles, permissions, tables, records.
    #[error(transparent)]
    AppDb(crate::appdb::AppDbError),

    /// Sign-in, session or authorization failures.
    #[error(transparent)]
    Auth(#[from] AuthError),

    /// The configuration cannot work (for example a partial OIDC block).
    #[error("invalid configuration: {0}")]
    Config(String),

    /// The embedding model is missing, unloadable or failed.
    #[error(transparent)]
    Embedding(#[from] crate::embed::EmbedError),

    /// The chunk store (LanceDB) failed.
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),

    /// Sources, uploads, crawls, indexing jobs and their settings.
    #[error(transparent)]
    Ingest(#[from] crate::ingest::IngestError),

    /// Access keys: missing, unknown, revoked, out of scope, wrong origin, rate.
    #[error(transparent)]
    Key(KeyError),

    /// Provider accounts, targets, probes and role bindings.
    #[error(transparent)]
    Provider(crate::providers::ProviderError),

    /// The profile and its versions.
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),

    /// A request the caller must fix (the message says how).
    #[error("{0}")]
    InvalidInput(String),

    /// The readiness verdict says Lore cannot answer (the reasons, one per
    /// failing check, each `"concern: detail"` with the concern's key first,
    /// so that a public caller can be told the concern alone).
    #[error("Lore cannot answer yet: {}", .0.join(" "))]
    NotAnswerable(Vec<String>),

    /// Retrieval refuses until a full reindex re-stamps the corpus fingerprint.
    #[error("retrieval is failing closed: {0}")]
    RetrievalFailingClosed(String),

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

/// The ground floor's errors are the engine's namesakes.
impl From<lore_core::Error> for Error {
    fn from(err: lore_core::Error) -> Self {
        match err {
            lore_core::Error::Config(why) => Error::Config(why),
            lore_core::Error::Database(err) => Error::Database(err),
            lore_core::Error::Directory { what, path, reason } => Error::Directory { what, path, reason },
            lore_core::Error::Io { context, source } => Error::Io { context, source },
            lore_core::Error::Internal(why) => Error::Internal(why),
        }
    }
}

/// Why a keyed request was refused (the access keys themselves live in the
/// answering crate, `engine::keys`). Each maps to a status and a stable
/// code at the edge.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("this request needs an access key in the x-api-key header")]
    Missing,
    #[error("the access key is not valid")]
    Unknown,
    #[error("the access key has been revoked")]
    Revoked,
    #[error("the access key does not have the `{0}` scope")]
    Scope(&'static str),
    #[error("this widget key may not be used from origin {0}")]
    Origin(String),
    #[error("this widget key is limited to {0} requests a minute")]
    RateLimited(u32),
    #[error("{0}")]
    Invalid(String),
    #[error("there is no access key {0}")]
    NotFound(String),
    /// An OAuth bearer token that is unknown, expired, revoked, for another
    /// resource, or whose user is gone (why, for its holder).
    #[error("the access token is not valid: {0}")]
    InvalidToken(String),
    /// The `operations` and `mcp` scopes act as a user; this key has none.
    #[error("the `{0}` scope acts as a user, and this access key belongs to none: create a key for a user")]
    NeedsUser(&'static str),
}

impl From<KeyError> for Error {
    fn from(err: KeyError) -> Self {
        Error::Key(err)
    }
}
