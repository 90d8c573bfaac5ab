//! The floors of Lore under its answers: the application database's
//! records and the admins' sign-in (floor 1), the model providers, the
//! embedder and the chunk index (floor 2), and the corpus itself: sources,
//! ingest, tuning, the profile's versions, search and reranking (floor 3).
//! The answering crate (`engine`) stands on this one; nothing here knows of
//! answers, the operations API or the tool server, and the compiler keeps it
//! so. Nothing here knows about HTTP or wire formats either.
//!
//! [`Corpus`] is the handle every function of these floors takes: settings,
//! the admin-record database, the keys derived from the master key, and
//! what is held between requests (the embedder, the chunk index, the
//! application database's cache). What the floors above hold is theirs;
//! they hear of changes through [`cluster::Subscriber`].

pub mod appdb;
pub mod auth;
pub mod chunk;
pub mod cluster;
pub mod embed;
pub mod error;
pub mod extract;
pub mod fingerprint;
pub mod index;
pub mod ingest;
pub mod judging;
pub mod profile;
pub mod providers;
pub mod rerank;
pub mod retrieve;
pub mod search;
pub mod shadow;
pub mod sources;
pub mod tuning;
pub mod upkeep;

use std::sync::Arc;

use sea_orm::{ConnectionTrait, DatabaseConnection};

pub use entity as entities;
pub use error::{Error, Result};
/// The ground floor, its own crate (`lore-core`); kept at this crate's
/// paths so that every floor above names it as before.
pub use lore_core::{audit, fetch, logbook, secrets, settings, store, trace};
pub use settings::Settings;

/// What the floors above hand to [`Corpus::open`]: how a profile save is
/// judged, and who hears of the changes that drop what a process holds.
pub struct Above {
    /// Judges a profile save (the golden-question evals, in `engine`).
    pub save_gate: Arc<dyn profile::SaveGate>,
    /// Told of every [`cluster::Change`], here and from other replicas.
    pub subscribers: Vec<Arc<dyn cluster::Subscriber>>,
}

/// The floors under answering, opened: what each of their functions needs.
/// Cheap to clone.
#[derive(Clone)]
pub struct Corpus {
    pub settings: Arc<Settings>,
    pub db: DatabaseConnection,
    pub(crate) keys: Arc<secrets::Keys>,
    pub(crate) oidc: Arc<auth::oidc::OidcClient>,
    /// The embedder and the chunk index, the application database's cache,
    /// and the subscribers above: what a [`cluster::Change`] drops or tells.
    resident: cluster::Resident,
    /// This process's name among the replicas (see [`cluster`]).
    node: String,
    /// Dropped with the last handle, which stops this process's listener
    /// for other replicas' changes (PostgreSQL only).
    _stop_listening: Option<Arc<tokio::sync::oneshot::Sender<()>>>,
    /// The candidate embedding model being judged, with its shadow index.
    pub(crate) shadow: Arc<tokio::sync::Mutex<Option<Arc<shadow::Shadow>>>>,
    /// The OpenAI-compatible client every provider call goes through.
    pub(crate) provider_client: providers::client::Client,
    /// The embedded generation models loaded in this process, and the
    /// permits their generations run under.
    pub(crate) embedded: Arc<providers::embedded::Models>,
    /// Application tables written by this process, for the table sources
    /// that index them (see [`ingest::table`]).
    table_writes: Arc<ingest::table::Writes>,
    /// What judges a profile save: the golden-question evals.
    pub(crate) save_gate: Arc<dyn profile::SaveGate>,
}

impl Corpus {
    /// Opens the data directory, the master key and the database, applies
    /// pending migrations, makes sure the cluster row exists and applies the
    /// schema file (`appdb.schema`), if one is configured. Idempotent: a
    /// second open of the same data changes nothing.
    pub async fn open(settings: Settings, above: Above) -> Result<Self> {
        // Two TLS providers are built in (ring, and aws-lc-rs with the S3
        // client); a library that asks rustls for "the" provider finds none
        // unless the process names one. Only the first call counts.
        let _ = rustls::crypto::ring::default_provider().install_default();
        store::prepare_dirs(&settings)?;
        let keys = secrets::Keys::load_or_create(&settings)?;
        let db = store::connect(&settings.database_url()).await?;
        store::migrate(&db).await?;
        store::ensure_cluster(&db).await?;
        let oidc = auth::oidc::OidcClient::new(&settings)?;
        let provider_client = providers::client::Client::new(std::time::Duration::from_secs(
            settings.providers.request_timeout_seconds.max(1),
        ))
        .map_err(|err| Error::Internal(err.to_string()))?;
        let appdb_cache = Arc::new(appdb::cache::Cache::default());
        let resident = cluster::Resident::new(appdb_cache, above.subscribers);
        let node = uuid::Uuid::new_v4().simple().to_string();
        let mut stop_listening = None;
        if db.get_database_backend() == sea_orm::DbBackend::Postgres {
            let (stop, stopped) = tokio::sync::oneshot::channel();
            cluster::watch(resident.clone(), node.clone(), settings.database_url(), stopped);
            stop_listening = Some(Arc::new(stop));
        }
        let embedded = Arc::new(providers::embedded::Models::new(settings.providers.embedded_concurrency));
        let corpus = Self {
            settings: Arc::new(settings),
            keys: Arc::new(keys),
            oidc: Arc::new(oidc),
            resident,
            node,
            _stop_listening: stop_listening,
            shadow: Arc::new(tokio::sync::Mutex::new(None)),
            provider_client,
            embedded,
            table_writes: Arc::default(),
            save_gate: above.save_gate,
            db,
        };
        // A schema file that cannot be applied stops the start, naming its line.
        appdb::schema::apply_configured(&corpus).await?;
        Ok(corpus)
    }

    /// The HTTP client of model providers (timeouts and redaction built in).
    pub fn provider_client(&self) -> &providers::client::Client {
        &self.provider_client
    }

    /// What embeds text now: the target the embedding role is bound to, or
    /// else the on-node model, loaded from local files on first use (it does
    /// not fetch anything: [`embed::model_files::resolve`] does, at start-up).
    pub async fn embedder(&self) -> Result<Arc<dyn embed::Embedder>> {
        let mut cached = self.resident.embedder.lock().await;
        if let Some(embedder) = cached.as_ref() {
            return Ok(embedder.clone());
        }
        let embedder = match providers::resolve(self, providers::Role::Embedding).await? {
            Some(bound) => {
                let remote = embed::remote::RemoteEmbedder::connect(
                    self.provider_client.clone(),
                    bound.endpoint,
                    &bound.account.id,
                    &bound.target.model,
                )
                .await?;
                tracing::info!(model = %bound.target.model, account = %bound.account.name, "embedding through a provider");
                Arc::new(remote) as Arc<dyn embed::Embedder>
            }
            None => self.load_local_embedder().await?,
        };
        *cached = Some(embedder.clone());
        Ok(embedder)
    }

    /// Fetches the model files this machine lacks for the roles as bound:
    /// the on-node embedding model while the embedding role is unbound, and
    /// the embedded generation model of each role bound to one (with
    /// `prefetch_embedded`, the default embedded model too while nothing
    /// answers yet, so that the setup wizard's first choice is ready).
    /// Files land once per machine, in `models.dir`. Returns what was
    /// fetched; `progress` is told as each file comes in.
    pub async fn fetch_missing_models(
        &self,
        prefetch_embedded: bool,
        progress: fetch::Progress<'_>,
    ) -> Result<Vec<String>> {
        let mut fetched = Vec::new();
        if providers::bound_target_id(self, providers::Role::Embedding).await?.is_none()
            && embed::model_files::locate(&self.settings).is_none()
        {
            embed::model_files::resolve(&self.settings, progress).await?;
            fetched.push(self.settings.models.embedding.clone());
        }
        let mut generation_models = Vec::new();
        for role in [providers::Role::Generation, providers::Role::Escalation] {
            if let Some(bound) = providers::resolve(self, role).await? {
                if providers::embedded::is_embedded(&bound.endpoint.base) {
                    generation_models.push(bound.target.model);
                }
            }
        }
        if prefetch_embedded && providers::bound_target_id(self, providers::Role::Generation).await?.is_none()
        {
            generation_models.push(providers::embedded::DEFAULT_MODEL.to_owned());
        }
        for model in generation_models {
            let path =
                providers::embedded::model_path(&self.settings, &model).map_err(Error::InvalidInput)?;
            // A file Lore cannot fetch is the admin's to put there; the
            // probe and the answer say so when it is missing.
            if !path.is_file() && providers::embedded::fetchable(&path) {
                providers::embedded::ensure(&self.settings, &model, progress).await.map_err(|reason| {
                    providers::ProviderError::Call(providers::client::CallError::Unusable {
                        endpoint: format!("the embedded model {model}"),
                        reason,
                    })
                })?;
                fetched.push(model);
            }
        }
        Ok(fetched)
    }

    /// The on-node embedding model, loaded from its files (not cached: the
    /// embedder in use is [`Self::embedder`]).
    pub(crate) async fn load_local_embedder(&self) -> Result<Arc<dyn embed::Embedder>> {
        let settings = self.settings.clone();
        let found =
            embed::model_files::locate(&settings).ok_or_else(|| embed::model_files::missing(&settings))?;
        let (model, precisions) = (settings.models.embedding.clone(), settings.models.precisions());
        let loaded = tokio::task::spawn_blocking(move || {
            embed::local::LocalEmbedder::load(&found.dir, &model, precisions, 1)
        })
        .await
        .map_err(|err| Error::Internal(format!("loading the embedding model panicked: {err}")))??;
        tracing::info!(model = %settings.models.embedding, "loaded the embedding model");
        Ok(Arc::new(loaded))
    }

    /// The name of the model that embeds text now, as the corpus fingerprint
    /// records it, without loading or calling it.
    pub async fn embedding_model(&self) -> Result<String> {
        Ok(self.embedding_model_for(providers::resolve(self, providers::Role::Embedding).await?.as_ref()))
    }

    /// [`Self::embedding_model`] for the embedding role's binding, already
    /// resolved.
    pub fn embedding_model_for(&self, bound: Option<&providers::Resolved>) -> String {
        match bound {
            Some(bound) => embed::remote::identity(&bound.account.id, &bound.target.model),
            None => self.settings.models.embedding.clone(),
        }
    }

    /// Drops the cached embedder and chunk store in this process only (and
    /// tells the subscribers): the next use resolves the embedding role
    /// again. After a change of the role, [`Self::announce`]
    /// [`cluster::Change::Embedding`] instead, so that every replica drops
    /// them.
    pub async fn forget_embedder(&self) {
        self.resident.forget_embedding().await;
    }

    /// Tells subscribers, in every replica, that roles or the schema
    /// changed. Nobody listening is not an error.
    pub fn appdb_event(&self, event: appdb::Event) {
        self.announce_appdb(event);
    }

    /// Users, roles and tables as held between requests: a request calls
    /// [`appdb::cache::Cache::refresh`] before it reads them.
    pub fn appdb_cache(&self) -> &appdb::cache::Cache {
        &self.resident.appdb_cache
    }

    /// The application tables written since the indexing worker last looked.
    pub fn table_writes(&self) -> &ingest::table::Writes {
        &self.table_writes
    }

    /// Role and schema changes from now on (see [`appdb::Event`]).
    pub fn appdb_events(&self) -> tokio::sync::broadcast::Receiver<appdb::Event> {
        self.resident.appdb_events.subscribe()
    }

    /// The chunk index (LanceDB at `vectors.uri`, the active table: see
    /// [`shadow`]), opened with the current embedder's dimensions. Fails with
    /// [`index::IndexError::Dimensions`] while it holds vectors of another
    /// size (see [`Corpus::rebuild_chunks`]).
    pub async fn chunks(&self) -> Result<Arc<dyn index::ChunkStore>> {
        let dimensions = self.embedder().await?.dimensions();
        let mut cached = self.resident.chunks.lock().await;
        if let Some(store) = cached.as_ref() {
            return Ok(store.clone());
        }
        let table = shadow::active_table(&self.db).await?;
        let store =
            index::lance::LanceChunkStore::open_table(&self.settings.vectors(), &table, dimensions).await?;
        let store = Arc::new(store) as Arc<dyn index::ChunkStore>;
        *cached = Some(store.clone());
        Ok(store)
    }

    /// Empties the chunk index and re-creates it for the current embedder's
    /// dimensions, clearing the corpus fingerprint: what a full reindex does
    /// first when the embedding model changed size.
    pub async fn rebuild_chunks(&self) -> Result<Arc<dyn index::ChunkStore>> {
        let dimensions = self.embedder().await?.dimensions();
        let mut cached = self.resident.chunks.lock().await;
        let table = shadow::active_table(&self.db).await?;
        let store =
            index::lance::LanceChunkStore::recreate(&self.settings.vectors(), &table, dimensions).await?;
        fingerprint::set(&self.db, None).await?;
        tracing::warn!(dimensions, "re-created the chunk index for a new embedding size");
        let store = Arc::new(store) as Arc<dyn index::ChunkStore>;
        *cached = Some(store.clone());
        Ok(store)
    }
}
