//! Lore's domain. Everything here is reachable from the axum handlers in
//! `server` and from the `#[server]` functions in `app` without either knowing
//! about the other, and nothing here knows about HTTP or wire formats.
//!
//! [`Lore`] is the handle every operation takes: settings, the admin-record
//! database and the keys derived from the master key.

pub mod audit;
pub mod auth;
pub mod chunk;
pub mod corpus;
pub mod embed;
pub mod error;
pub mod extract;
pub mod index;
pub mod ingest;
pub mod readiness;
pub mod retrieve;
pub mod search;
pub mod secrets;
pub mod settings;
pub mod sources;
pub mod store;
pub mod tuning;

use std::sync::Arc;

use sea_orm::DatabaseConnection;

pub use entity as entities;
pub use error::{Error, Result};
pub use settings::Settings;

/// A running Lore: what every engine operation needs. Cheap to clone.
#[derive(Clone)]
pub struct Lore {
    pub settings: Arc<Settings>,
    pub db: DatabaseConnection,
    pub(crate) keys: Arc<secrets::Keys>,
    pub(crate) oidc: Arc<auth::oidc::OidcClient>,
    /// Loaded on first use (the weights take a moment and 90 MB).
    embedder: Arc<tokio::sync::OnceCell<Arc<dyn embed::Embedder>>>,
    /// Opened on first use, with the embedder's dimensions.
    chunks: Arc<tokio::sync::OnceCell<Arc<dyn index::ChunkStore>>>,
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
        Ok(Self {
            settings: Arc::new(settings),
            db,
            keys: Arc::new(keys),
            oidc: Arc::new(oidc),
            embedder: Arc::new(tokio::sync::OnceCell::new()),
            chunks: Arc::new(tokio::sync::OnceCell::new()),
        })
    }

    /// The embedding model, loaded from local files on first use. It does not
    /// fetch anything: [`embed::model_files::resolve`] does, at start-up.
    pub async fn embedder(&self) -> Result<Arc<dyn embed::Embedder>> {
        let embedder = self
            .embedder
            .get_or_try_init(|| async {
                let settings = self.settings.clone();
                let found = embed::model_files::locate(&settings).ok_or_else(|| {
                    embed::EmbedError::Model(format!(
                        "the files of {} are not in {}",
                        settings.models.embedding,
                        embed::model_files::cache_dir(&settings, &settings.models.embedding).display()
                    ))
                })?;
                let model = settings.models.embedding.clone();
                let loaded = tokio::task::spawn_blocking(move || {
                    embed::local::LocalEmbedder::load(&found.dir, &model, 1)
                })
                .await
                .map_err(|err| Error::Internal(format!("loading the embedding model panicked: {err}")))??;
                tracing::info!(model = %settings.models.embedding, "loaded the embedding model");
                Ok::<_, Error>(Arc::new(loaded) as Arc<dyn embed::Embedder>)
            })
            .await?;
        Ok(embedder.clone())
    }

    /// The chunk index (LanceDB at `vectors.uri`).
    pub async fn chunks(&self) -> Result<Arc<dyn index::ChunkStore>> {
        let store = self
            .chunks
            .get_or_try_init(|| async {
                let dimensions = self.embedder().await?.dimensions();
                let store = index::lance::LanceChunkStore::open(&self.settings.vectors_uri(), dimensions)
                    .await
                    .map_err(ingest::IngestError::Index)?;
                Ok::<_, Error>(Arc::new(store) as Arc<dyn index::ChunkStore>)
            })
            .await?;
        Ok(store.clone())
    }
}
