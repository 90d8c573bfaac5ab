//! Lore's answering floors, over the corpus crate (`lore-corpus`): answers
//! (the pipeline, grounding, the answer cache, pins, runs and gaps),
//! readiness, access keys, who asks ([`asker`]), the recorder, the Dashboard's metrics, the setup
//! wizard and the golden-question evals (floor 4); the operations API and
//! the resources over them all (floor 5). The tool server stands on this
//! crate as a crate of its own (`lore-toolserver`). Everything here is
//! reachable from the axum handlers in `server` and from the `#[server]`
//! functions in `app` without either knowing about the other, and nothing
//! here knows about HTTP or wire formats.
//!
//! [`Lore`] is the handle every function here takes: the [`Corpus`] below
//! (which it dereferences to, so a function of a lower floor takes `&lore`
//! as it is) and what the answering floors hold in memory.

pub mod answer;
pub mod asker;
pub mod evals;
pub mod keys;
pub mod metrics;
pub mod oauth;
pub mod operations;
pub mod readiness;
pub mod recorder;
pub mod resources;
pub mod wizard;

/// The floors below, their own crate (`lore-corpus`), kept at the engine's
/// paths so that the edge and the floors here name them as before.
pub use lore_corpus::{
    appdb, auth, chunk, cluster, embed, error, extract, fingerprint, index, ingest, judging, profile,
    providers, rerank, retrieve, search, shadow, sources, tuning, upkeep, Corpus,
};

use std::sync::Arc;

pub use entity as entities;
/// The ground floor, its own crate (`lore-core`).
pub use lore_core::{audit, fetch, logbook, secrets, settings, store, trace};
pub use lore_corpus::{Error, Result};
pub use settings::Settings;

/// A running Lore: the corpus floors and what the answering floors hold.
/// Cheap to clone.
#[derive(Clone)]
pub struct Lore {
    corpus: Corpus,
    answering: Arc<Answering>,
}

/// What the answering floors hold in a process, beside the corpus: one per
/// open, shared by every clone of its [`Lore`] and by the save gate, which
/// judges with it (see [`evals::GoldenGate`]).
pub(crate) struct Answering {
    /// The answer cache and the pins: what a [`cluster::Change`] drops here.
    memory: Arc<answer::memory::Memory>,
    /// Per-node request counters of widget keys.
    pub(crate) rate_limiter: keys::RateLimiter,
    /// Writes answer runs and key usage behind the requests that made them.
    recorder: recorder::Recorder,
    /// Every resource, by path (see [`resources`]).
    resources: resources::Registry,
    /// Told of every committed write to an application table (the tool
    /// server's push channels, see [`resources::WriteWatcher`]).
    write_watchers: std::sync::RwLock<Vec<Arc<dyn resources::WriteWatcher>>>,
    /// The vectors of refused questions, for grouping the Dashboard's gaps.
    pub(crate) gap_vectors: embed::kept::Kept,
    /// The vectors of pinned questions, for matching paraphrases.
    pub(crate) pin_vectors: embed::kept::Kept,
    /// Told when the operation `restart` asks the server to restart.
    restart: tokio::sync::Notify,
    /// What a crate above keeps per open Lore, one value per type (the
    /// tool server's push channels): see [`Lore::extension`].
    extensions: std::sync::Mutex<Extensions>,
}

type Extensions = std::collections::HashMap<std::any::TypeId, Arc<dyn std::any::Any + Send + Sync>>;

impl std::ops::Deref for Lore {
    type Target = Corpus;

    fn deref(&self) -> &Corpus {
        &self.corpus
    }
}

impl Lore {
    /// Opens the corpus floors ([`Corpus::open`]: the data directory, the
    /// master key, the database and its migrations, the schema file) with
    /// the golden-question evals as the profile's save gate and the answer
    /// floor's memory subscribed to changes, then registers the resources.
    /// Idempotent: a second open of the same data changes nothing.
    pub async fn open(settings: Settings) -> Result<Self> {
        let memory = Arc::new(answer::memory::Memory::default());
        let gate = Arc::new(evals::GoldenGate::default());
        let above = lore_corpus::Above {
            save_gate: gate.clone(),
            subscribers: vec![memory.clone() as Arc<dyn cluster::Subscriber>],
        };
        let corpus = Corpus::open(settings, above).await?;
        let answering = Arc::new(Answering {
            recorder: recorder::Recorder::start(corpus.db.clone()),
            memory,
            rate_limiter: keys::RateLimiter::default(),
            resources: resources::Registry::default(),
            write_watchers: Default::default(),
            gap_vectors: embed::kept::Kept::default(),
            pin_vectors: embed::kept::Kept::default(),
            restart: tokio::sync::Notify::new(),
            extensions: Default::default(),
        });
        resources::install(&answering.resources);
        gate.wire(answering.clone());
        Ok(Self { corpus, answering })
    }

    /// The handle of `corpus` with the answering floors of `answering`:
    /// what the save gate judges with, given the corpus a save runs on.
    pub(crate) fn of(corpus: &Corpus, answering: Arc<Answering>) -> Self {
        Self { corpus: corpus.clone(), answering }
    }

    /// What the answering floors hold (the rate limiter, the kept vectors).
    pub(crate) fn answering(&self) -> &Answering {
        &self.answering
    }

    /// The corpus floors' handle, for what takes one by value.
    pub fn corpus(&self) -> &Corpus {
        &self.corpus
    }

    /// Asks the server to restart: finish what is in flight, read the
    /// configuration again and open anew (`lore serve` waits for it).
    pub fn request_restart(&self) {
        self.answering.restart.notify_one();
    }

    /// Resolves when a restart was asked for.
    pub async fn restart_requested(&self) {
        self.answering.restart.notified().await;
    }

    /// The resource registry as it stands (use [`resources::registry`] to
    /// have the catalog's exported tables registered first).
    pub fn resources(&self) -> &resources::Registry {
        &self.answering.resources
    }

    /// Has `watcher` told of every write to an application table this
    /// process commits from now on (on every surface), as long as Lore is open.
    pub fn watch_writes(&self, watcher: Arc<dyn resources::WriteWatcher>) {
        let mut watchers = self.answering.write_watchers.write().unwrap_or_else(|p| p.into_inner());
        watchers.push(watcher);
    }

    /// Tells the write watchers that `ids` of `table` were written.
    pub(crate) fn tell_written(&self, table: &appdb::catalog::Table, ids: &[serde_json::Value]) {
        let watchers = self.answering.write_watchers.read().unwrap_or_else(|p| p.into_inner());
        for watcher in watchers.iter() {
            watcher.written(table, ids);
        }
    }

    /// The `T` this Lore keeps for a crate above (one per type, shared by
    /// every clone of the handle), made by `make` the first time it is
    /// asked for; `true` when it was made by this call.
    pub fn extension<T: std::any::Any + Send + Sync>(&self, make: impl FnOnce() -> T) -> (Arc<T>, bool) {
        let mut extensions = self.answering.extensions.lock().unwrap_or_else(|p| p.into_inner());
        let id = std::any::TypeId::of::<T>();
        if let Some(found) = extensions.get(&id).and_then(|kept| kept.clone().downcast::<T>().ok()) {
            return (found, false);
        }
        let made = Arc::new(make());
        extensions.insert(id, made.clone());
        (made, true)
    }

    /// Counts one request of `bucket` in this node's window of a minute:
    /// whether it stays within `per_minute` (a widget key's rate limit, the
    /// tool server's tool calls per key).
    pub fn admit(&self, bucket: &str, per_minute: u32) -> bool {
        self.answering.rate_limiter.allow(bucket, per_minute)
    }

    /// Where answer runs and key usage are recorded (behind the request).
    pub fn recorder(&self) -> &recorder::Recorder {
        &self.answering.recorder
    }

    /// The pinned answers, as held between requests.
    pub(crate) fn pins(&self) -> &answer::pins::Pins {
        &self.answering.memory.pins
    }

    /// Waits until what requests write behind them (runs, key usage, the
    /// open answer cache's rows) is stored: before a process that answered
    /// exits.
    pub async fn flush_writes(&self) {
        if let Err(err) = self.answering.recorder.flush().await {
            tracing::warn!(error = %err, "the last answer runs and key usage may not be recorded");
        }
        self.answering.memory.flush().await;
    }

    /// The answer cache, opened with the current embedder's dimensions (a
    /// table of another size is started over).
    pub async fn answer_cache(&self) -> Result<Arc<answer::cache::AnswerCache>> {
        let dimensions = self.embedder().await?.dimensions();
        let mut cached = self.answering.memory.answer_cache.lock().await;
        if let Some(found) = cached.as_ref() {
            return Ok(found.clone());
        }
        let opened = answer::cache::AnswerCache::open(&self.settings.vectors(), dimensions).await?;
        let opened = Arc::new(opened);
        *cached = Some(opened.clone());
        Ok(opened)
    }
}
