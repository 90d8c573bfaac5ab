//! Lore's domain. Everything here is reachable from the axum handlers in
//! `server` and from the `#[server]` functions in `app` without either knowing
//! about the other, and nothing here knows about HTTP or wire formats.
//!
//! [`Lore`] is the handle every operation takes: settings, the admin-record
//! database and the keys derived from the master key.

pub mod answer;
pub mod appdb;
pub mod auth;
pub mod chunk;
pub mod cluster;
pub mod corpus;
pub mod embed;
pub mod error;
pub mod evals;
pub mod extract;
pub mod index;
pub mod ingest;
pub mod judging;
pub mod keys;
pub mod mcp;
pub mod metrics;
pub mod operations;
pub mod profile;
pub mod providers;
pub mod readiness;
pub mod recorder;
pub mod rerank;
pub mod resources;
pub mod retrieve;
pub mod search;
pub mod shadow;
pub mod sources;
pub mod tuning;
pub mod wizard;

use std::sync::Arc;

use sea_orm::{ConnectionTrait, DatabaseConnection};

pub use entity as entities;
pub use error::{Error, Result};
/// The ground floor, its own crate (`lore-core`); kept at the engine's
/// paths so that every floor above names it as before.
pub use lore_core::{audit, fetch, logbook, secrets, settings, store, trace};
pub use settings::Settings;

/// A running Lore: what every engine operation needs. Cheap to clone.
#[derive(Clone)]
pub struct Lore {
    pub settings: Arc<Settings>,
    pub db: DatabaseConnection,
    pub(crate) keys: Arc<secrets::Keys>,
    pub(crate) oidc: Arc<auth::oidc::OidcClient>,
    /// The embedder, the chunk index and the answer cache (dropped when
    /// the embedding role is rebound), the pins and the application
    /// database's cache: what a [`cluster::Change`] drops.
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
    /// Per-node request counters of widget keys.
    pub(crate) rate_limiter: Arc<keys::RateLimiter>,
    /// Writes answer runs and key usage behind the requests that made them.
    recorder: recorder::Recorder,
    /// Every resource, by path (see [`resources`]).
    resources: Arc<resources::Registry>,
    /// The tool server's open push channels in this process.
    mcp_hub: Arc<mcp::hub::Hub>,
    /// Application tables written by this process, for the table sources
    /// that index them (see [`ingest::table`]).
    table_writes: Arc<ingest::table::Writes>,
    /// The vectors of refused questions, for grouping the Dashboard's gaps.
    pub(crate) gap_vectors: Arc<embed::kept::Kept>,
    /// The pinned answers.
    pub(crate) pins: Arc<answer::pins::Pins>,
    /// The vectors of pinned questions, for matching paraphrases.
    pub(crate) pin_vectors: Arc<embed::kept::Kept>,
    /// What judges a profile save: the golden-question evals.
    pub(crate) save_gate: Arc<dyn profile::SaveGate>,
    /// Told when the operation `restart` asks the server to restart.
    restart: Arc<tokio::sync::Notify>,
}

impl Lore {
    /// Opens the data directory, the master key and the database, applies
    /// pending migrations, makes sure the cluster row exists and applies the
    /// schema file (`appdb.schema`), if one is configured. Idempotent: a
    /// second open of the same data changes nothing.
    pub async fn open(settings: Settings) -> Result<Self> {
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
        let resident = cluster::Resident::new(appdb_cache.clone());
        let node = uuid::Uuid::new_v4().simple().to_string();
        let mut stop_listening = None;
        if db.get_database_backend() == sea_orm::DbBackend::Postgres {
            let (stop, stopped) = tokio::sync::oneshot::channel();
            cluster::watch(resident.clone(), node.clone(), settings.database_url(), stopped);
            stop_listening = Some(Arc::new(stop));
        }
        let embedded = Arc::new(providers::embedded::Models::new(settings.providers.embedded_concurrency));
        let lore = Self {
            settings: Arc::new(settings),
            keys: Arc::new(keys),
            oidc: Arc::new(oidc),
            pins: resident.pins.clone(),
            resident,
            node,
            _stop_listening: stop_listening,
            shadow: Arc::new(tokio::sync::Mutex::new(None)),
            provider_client,
            embedded,
            rate_limiter: Arc::new(keys::RateLimiter::default()),
            recorder: recorder::Recorder::start(db.clone()),
            resources: Arc::new(resources::Registry::default()),
            mcp_hub: Arc::new(mcp::hub::Hub::default()),
            table_writes: Arc::default(),
            gap_vectors: Arc::new(embed::kept::Kept::default()),
            pin_vectors: Arc::new(embed::kept::Kept::default()),
            save_gate: Arc::new(evals::GoldenGate),
            restart: Arc::new(tokio::sync::Notify::new()),
            db,
        };
        resources::install(&lore.resources);
        mcp::documents::install(&lore.resources);
        // A schema file that cannot be applied stops the start, naming its line.
        appdb::schema::apply_configured(&lore).await?;
        Ok(lore)
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

    /// Drops the cached embedder and chunk store in this process only: the
    /// next use resolves the embedding role again. After a change of the
    /// role, [`Self::announce`] [`cluster::Change::Embedding`] instead, so
    /// that every replica drops them.
    pub async fn forget_embedder(&self) {
        self.resident.forget_embedding().await;
    }

    /// Tells subscribers, in every replica, that roles or the schema
    /// changed. Nobody listening is not an error.
    pub fn appdb_event(&self, event: appdb::Event) {
        self.announce_appdb(event);
    }

    /// Asks the server to restart: finish what is in flight, read the
    /// configuration again and open anew (`lore serve` waits for it).
    pub fn request_restart(&self) {
        self.restart.notify_one();
    }

    /// Resolves when a restart was asked for.
    pub async fn restart_requested(&self) {
        self.restart.notified().await;
    }

    /// Users, roles and tables as held between requests: a request calls
    /// [`appdb::cache::Cache::refresh`] before it reads them.
    pub fn appdb_cache(&self) -> &appdb::cache::Cache {
        &self.resident.appdb_cache
    }

    /// The resource registry as it stands (use [`resources::registry`] to
    /// have the catalog's exported tables registered first).
    pub fn resources(&self) -> &resources::Registry {
        &self.resources
    }

    /// The tool server's push channels open in this process.
    pub fn mcp_hub(&self) -> &mcp::hub::Hub {
        &self.mcp_hub
    }

    /// The application tables written since the indexing worker last looked.
    pub fn table_writes(&self) -> &ingest::table::Writes {
        &self.table_writes
    }

    /// Role and schema changes from now on (see [`appdb::Event`]).
    pub fn appdb_events(&self) -> tokio::sync::broadcast::Receiver<appdb::Event> {
        self.resident.appdb_events.subscribe()
    }

    /// Where answer runs and key usage are recorded (behind the request).
    pub fn recorder(&self) -> &recorder::Recorder {
        &self.recorder
    }

    /// Waits until what requests write behind them (runs, key usage, the
    /// open answer cache's rows) is stored: before a process that answered
    /// exits.
    pub async fn flush_writes(&self) {
        if let Err(err) = self.recorder.flush().await {
            tracing::warn!(error = %err, "the last answer runs and key usage may not be recorded");
        }
        let open = self.resident.answer_cache.lock().await.clone();
        if let Some(cache) = open {
            flush(&cache).await;
        }
    }

    /// The answer cache, opened with the current embedder's dimensions (a
    /// table of another size is started over).
    pub async fn answer_cache(&self) -> Result<Arc<answer::cache::AnswerCache>> {
        let dimensions = self.embedder().await?.dimensions();
        let mut cached = self.resident.answer_cache.lock().await;
        if let Some(found) = cached.as_ref() {
            return Ok(found.clone());
        }
        let opened = answer::cache::AnswerCache::open(&self.settings.vectors(), dimensions).await?;
        let opened = Arc::new(opened);
        *cached = Some(opened.clone());
        Ok(opened)
    }

    /// The chunk index (LanceDB at `vectors.uri`, the active table: see
    /// [`shadow`]), opened with the current embedder's dimensions. Fails with
    /// [`index::IndexError::Dimensions`] while it holds vectors of another
    /// size (see [`Lore::rebuild_chunks`]).
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
        corpus::set(&self.db, None).await?;
        tracing::warn!(dimensions, "re-created the chunk index for a new embedding size");
        let store = Arc::new(store) as Arc<dyn index::ChunkStore>;
        *cached = Some(store.clone());
        Ok(store)
    }
}

/// Flushes `cache`; a failure costs only cache entries, so it is logged.
pub(crate) async fn flush(cache: &answer::cache::AnswerCache) {
    if let Err(err) = cache.flush().await {
        tracing::warn!(error = %err, "the answer cache's last writes did not reach its table");
    }
}
