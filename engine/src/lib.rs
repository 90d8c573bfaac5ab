//! Lore's domain. Everything here is reachable from the axum handlers in
//! `server` and from the `#[server]` functions in `app` without either knowing
//! about the other, and nothing here knows about HTTP or wire formats.
//!
//! [`Lore`] is the handle every operation takes: settings, the admin-record
//! database and the keys derived from the master key.

pub mod audit;
pub mod auth;
pub mod error;
pub mod readiness;
pub mod secrets;
pub mod settings;
pub mod store;

use std::sync::Arc;

use sea_orm::DatabaseConnection;

pub use error::{Error, Result};
pub use settings::Settings;

/// A running Lore: what every engine operation needs. Cheap to clone.
#[derive(Clone)]
pub struct Lore {
    pub settings: Arc<Settings>,
    pub db: DatabaseConnection,
    pub(crate) keys: Arc<secrets::Keys>,
    pub(crate) oidc: Arc<auth::oidc::OidcClient>,
}

impl Lore {
    /// Opens the data directory, the master key and the database, applies
    /// pending migrations and makes sure the cluster row exists. Idempotent:
    /// a second open of the same data changes nothing.
    pub async fn open(settings: Settings) -> Result<Self> {
        std::fs::create_dir_all(&settings.data_dir).map_err(|source| Error::Io {
            context: format!("creating data directory {}", settings.data_dir.display()),
            source,
        })?;
        let keys = secrets::Keys::load_or_create(&settings)?;
        let db = store::connect(&settings.database_url()).await?;
        store::migrate(&db).await?;
        store::ensure_cluster(&db).await?;
        let oidc = auth::oidc::OidcClient::new(&settings)?;
        Ok(Self { settings: Arc::new(settings), db, keys: Arc::new(keys), oidc: Arc::new(oidc) })
    }
}
