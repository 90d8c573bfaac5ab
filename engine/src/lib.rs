//! Lore's answering floors, over the corpus crate (`lore-corpus`): answers
//! (the pipeline, grounding, the answer cache, pins, runs and gaps),
//! readiness, access keys, the recorder, the Dashboard's metrics, the setup
//! wizard and the golden-question evals (floor 4); the operations API, the
//! resources and the tool server over them all (floor 5). Everything here
//! is reachable from the axum handlers in `server` and from the `#[server]`
//! functions in `app` without either knowing about the other, and nothing
//! here knows about HTTP or wire formats.
//!
//! [`Lore`] is the handle every function here takes: the [`Corpus`] below
//! (which it dereferences to, so a function of a lower floor takes `&lore`
//! as it is) and what the answering floors hold in memory.

pub mod answer;
pub mod evals;
pub mod keys;
pub mod mcp;
pub mod metrics;
pub mod operations;
pub mod readiness;
pub mod recorder;
pub mod resources;
pub mod wizard;

/// The floors below, their own crate (`lore-corpus`), kept at the engine's
/// paths so that the edge and the floors here name them as before.
pub use lore_corpus::{
    appdb, auth, chunk, cluster, embed, error, extract, fingerprint, index, ingest, judging, profile,
    providers, rerank, retrieve, search, shadow, sources, tuning, Corpus,
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
    /// The tool server's open push channels in this process.
    mcp_hub: mcp::hub::Hub,
    /// The vectors of refused questions, for grouping the Dashboard's gaps.
    pub(crate) gap_vectors: embed::kept::Kept,
    /// The vectors of pinned questions, for matching paraphrases.
    pub(crate) pin_vectors: embed::kept::Kept,
    /// Told when the operation `restart` asks the server to restart.
    restart: tokio::sync::Notify,
}

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
            mcp_hub: mcp::hub::Hub::default(),
            gap_vectors: embed::kept::Kept::default(),
            pin_vectors: embed::kept::Kept::default(),
            restart: tokio::sync::Notify::new(),
        });
        resources::install(&answering.resources);
        mcp::documents::install(&answering.resources);
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

    /// The tool server's push channels open in this process.
    pub fn mcp_hub(&self) -> &mcp::hub::Hub {
        &self.answering.mcp_hub
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
