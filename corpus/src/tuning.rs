//! Admin-tunable settings stored in `cluster_setting` (a missing key means
//! the compiled default). This issue brings chunking; retrieval weights,
//! cache gates and the rest of Advanced tuning join them.
//!
//! The chunking rule: changing the chunking of an indexed corpus re-embeds
//! everything, so it is refused unless the request acknowledges the reindex;
//! with the acknowledgement the change persists and a full reindex is queued.

use crate::audit::{self, Actor};
use crate::chunk::ChunkingParams;
use crate::ingest::jobs::Job;
use crate::ingest::IngestError;
use crate::{Corpus, Error, Result};

const CHUNKING: &str = "chunking";

/// The effective chunking: the stored value, else the default.
pub async fn chunking(lore: &Corpus) -> Result<ChunkingParams> {
    Ok(stored_chunking(lore).await?.unwrap_or_default())
}

/// The stored chunking, if an admin set one.
pub async fn stored_chunking(lore: &Corpus) -> Result<Option<ChunkingParams>> {
    let stored = crate::store::setting(&lore.db, CHUNKING).await?;
    Ok(stored.map(|value| crate::store::decode("chunking setting", value)).transpose()?)
}

/// What a chunking change did.
#[derive(Debug)]
pub enum ChunkingChange {
    /// Same as the effective value: nothing to do.
    Unchanged,
    /// Stored; nothing was indexed, so no reindex is needed.
    Stored,
    /// Stored, and this full reindex was queued.
    Reindexing(Box<Job>),
}

/// Changes the chunking (see the module docs for the acknowledgement rule).
pub async fn set_chunking(
    lore: &Corpus,
    actor: &Actor,
    params: ChunkingParams,
    acknowledge_reindex: bool,
) -> Result<ChunkingChange> {
    params.validate().map_err(IngestError::InvalidTuning)?;
    if chunking(lore).await? == params {
        return Ok(ChunkingChange::Unchanged);
    }
    let indexed = lore.chunks().await?.count(None).await?;
    if indexed > 0 && !acknowledge_reindex {
        return Err(IngestError::ReindexAcknowledgementRequired.into());
    }
    let value = serde_json::to_value(params).map_err(|err| Error::Internal(err.to_string()))?;
    let txn = crate::store::begin_write(&lore.db).await?;
    crate::store::put_setting(&txn, CHUNKING, value.clone(), &actor.label()).await?;
    audit::record(&txn, actor, "tuning.chunking", None, value).await?;
    txn.commit().await?;
    if indexed > 0 {
        let job = crate::ingest::lifecycle::start_run(lore, None, true, "tuning").await?;
        return Ok(ChunkingChange::Reindexing(Box::new(job)));
    }
    Ok(ChunkingChange::Stored)
}

/// A value as Advanced tuning shows it: the effective value, and whether an
/// admin set it (`stored`) or it is the default.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Effective<T> {
    pub value: T,
    pub stored: bool,
}

impl<T: PartialEq> Effective<T> {
    fn against(value: T, default: &T) -> Self {
        let stored = &value != default;
        Self { value, stored }
    }
}

/// Everything Advanced tuning shows, effective values first.
#[derive(Clone, Debug, PartialEq)]
pub struct Overview {
    /// The embedding model retrieval uses; `stored` when the embedding role
    /// binds a provider's target instead of the on-CPU default.
    pub embedding_model: Effective<String>,
    /// Why retrieval is failing closed, when it is (until a full reindex).
    pub failing_closed: Option<String>,
    pub chunk_size: Effective<usize>,
    pub chunk_overlap: Effective<usize>,
    /// The retrieval and cache values come from the active profile version;
    /// `None` before the first index created the profile.
    pub profile_version: Option<i32>,
    pub top_k: Effective<usize>,
    pub score_cutoff: Effective<f32>,
    pub vector_weight: Effective<f32>,
    pub text_weight: Effective<f32>,
    /// How many candidates a bound reranker reorders.
    pub rerank_candidates: Effective<usize>,
    pub cache_enabled: Effective<bool>,
    pub cache_min_similarity: Effective<f32>,
    pub cache_max_age_seconds: Effective<u64>,
}

pub async fn overview(lore: &Corpus) -> Result<Overview> {
    let stored_chunking = stored_chunking(lore).await?;
    let chunking = stored_chunking.unwrap_or_default();
    let bound = crate::providers::resolve(lore, crate::providers::Role::Embedding).await?;
    let failing_closed = match crate::search::retrieval_state(lore).await? {
        crate::fingerprint::RetrievalState::Operating => None,
        crate::fingerprint::RetrievalState::FailingClosed(why) => Some(why),
    };
    let active = crate::profile::active(lore).await?;
    // Defaults are the persona's: the active version's, else the chosen one.
    let (persona, details) = match &active {
        Some(version) => (version.snapshot.persona.clone(), version.snapshot.details.clone()),
        None => {
            let choice = crate::profile::chosen_persona(lore).await?;
            (choice.persona, choice.details)
        }
    };
    let defaults = crate::profile::default_snapshot(&persona, details)?;
    let snapshot = active.as_ref().map_or_else(|| defaults.clone(), |v| v.snapshot.clone());
    let (r, d) = (&snapshot.retrieval, &defaults.retrieval);
    let (c, dc) = (&snapshot.cache, &defaults.cache);
    Ok(Overview {
        embedding_model: Effective { value: lore.embedding_model().await?, stored: bound.is_some() },
        failing_closed,
        chunk_size: Effective { value: chunking.max_tokens, stored: stored_chunking.is_some() },
        chunk_overlap: Effective { value: chunking.overlap_tokens, stored: stored_chunking.is_some() },
        profile_version: active.map(|v| v.version),
        top_k: Effective::against(r.top_k, &d.top_k),
        score_cutoff: Effective::against(r.score_cutoff, &d.score_cutoff),
        vector_weight: Effective::against(r.vector_weight, &d.vector_weight),
        text_weight: Effective::against(r.text_weight, &d.text_weight),
        rerank_candidates: Effective::against(r.rerank_candidates, &d.rerank_candidates),
        cache_enabled: Effective::against(c.enabled, &dc.enabled),
        cache_min_similarity: Effective::against(c.min_similarity, &dc.min_similarity),
        cache_max_age_seconds: Effective::against(c.max_age_seconds, &dc.max_age_seconds),
    })
}

/// What Advanced tuning changes: `None` keeps the current value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Change {
    pub chunk_size: Option<usize>,
    pub chunk_overlap: Option<usize>,
    pub top_k: Option<usize>,
    pub score_cutoff: Option<f32>,
    pub vector_weight: Option<f32>,
    pub text_weight: Option<f32>,
    pub rerank_candidates: Option<usize>,
    pub cache_enabled: Option<bool>,
    pub cache_min_similarity: Option<f32>,
    pub cache_max_age_seconds: Option<u64>,
    /// Needed when a chunking change would re-embed an indexed corpus.
    pub acknowledge_reindex: bool,
}

/// What applying a change did.
#[derive(Debug)]
pub struct Applied {
    /// The new profile version, when retrieval or cache values changed.
    pub profile_version: Option<i32>,
    pub chunking: ChunkingChange,
}

/// Applies a tuning change. Everything is checked before anything is
/// written: invalid values, or a chunking change of an indexed corpus
/// without the reindex acknowledgement, persist nothing. Retrieval and cache
/// values become a new profile version (immutable, restorable); chunking is
/// stored and, on an indexed corpus, a full reindex is queued.
pub async fn apply(lore: &Corpus, actor: &Actor, change: Change) -> Result<Applied> {
    let current = chunking(lore).await?;
    let chunking_wanted = ChunkingParams {
        max_tokens: change.chunk_size.unwrap_or(current.max_tokens),
        overlap_tokens: change.chunk_overlap.unwrap_or(current.overlap_tokens),
    };
    chunking_wanted.validate().map_err(IngestError::InvalidTuning)?;
    if chunking_wanted != current && !change.acknowledge_reindex {
        let indexed = lore.chunks().await?.count(None).await?;
        if indexed > 0 {
            return Err(IngestError::ReindexAcknowledgementRequired.into());
        }
    }

    let profile_changes = change.top_k.is_some()
        || change.score_cutoff.is_some()
        || change.vector_weight.is_some()
        || change.text_weight.is_some()
        || change.rerank_candidates.is_some()
        || change.cache_enabled.is_some()
        || change.cache_min_similarity.is_some()
        || change.cache_max_age_seconds.is_some();
    let next = if profile_changes {
        let active = crate::profile::active(lore).await?.ok_or_else(|| {
            Error::InvalidInput(
                "retrieval and cache values live in the profile, which the first index creates: run it first"
                    .into(),
            )
        })?;
        let mut snapshot = active.snapshot.clone();
        let r = &mut snapshot.retrieval;
        r.top_k = change.top_k.unwrap_or(r.top_k);
        r.score_cutoff = change.score_cutoff.unwrap_or(r.score_cutoff);
        r.vector_weight = change.vector_weight.unwrap_or(r.vector_weight);
        r.text_weight = change.text_weight.unwrap_or(r.text_weight);
        r.rerank_candidates = change.rerank_candidates.unwrap_or(r.rerank_candidates);
        let c = &mut snapshot.cache;
        c.enabled = change.cache_enabled.unwrap_or(c.enabled);
        c.min_similarity = change.cache_min_similarity.unwrap_or(c.min_similarity);
        c.max_age_seconds = change.cache_max_age_seconds.unwrap_or(c.max_age_seconds);
        crate::profile::validate(&snapshot)?;
        (snapshot != active.snapshot).then_some((active.version, snapshot))
    } else {
        None
    };

    let profile_version = match next {
        Some((base, snapshot)) => {
            let saved =
                crate::profile::save(lore, actor, base, snapshot, Some("Advanced tuning".into())).await?;
            // The eval gate kept the new version inactive: say so, and
            // apply nothing more.
            if !saved.active {
                let (baseline, regressions) =
                    crate::profile::gate_refusal(saved.evals.as_ref()).unwrap_or((base, Vec::new()));
                return Err(crate::profile::ProfileError::EvalRegression {
                    version: saved.version,
                    baseline,
                    regressions,
                }
                .into());
            }
            Some(saved.version)
        }
        None => None,
    };
    let chunking = set_chunking(lore, actor, chunking_wanted, change.acknowledge_reindex).await?;
    Ok(Applied { profile_version, chunking })
}
