//! Advanced tuning: the effective values, a change to them, and chunking.

use serde::{Deserialize, Serialize};

use super::sources::JobView;

/// A value as Advanced tuning shows it: effective, and whether an admin set
/// it (`stored`) or it is the default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EffectiveValue<T> {
    pub value: T,
    pub stored: bool,
}

/// `GET /admin/tuning`: the effective values of Advanced tuning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuningView {
    pub embedding_model: EffectiveValue<String>,
    /// Why retrieval is failing closed (until a full reindex), when it is.
    pub failing_closed: Option<String>,
    pub chunk_size: EffectiveValue<usize>,
    pub chunk_overlap: EffectiveValue<usize>,
    /// The profile version the retrieval and cache values come from.
    pub profile_version: Option<i32>,
    pub top_k: EffectiveValue<usize>,
    pub score_cutoff: EffectiveValue<f32>,
    pub vector_weight: EffectiveValue<f32>,
    pub text_weight: EffectiveValue<f32>,
    /// How many candidates a bound reranker reorders before the top k.
    pub rerank_candidates: EffectiveValue<usize>,
    pub cache_enabled: EffectiveValue<bool>,
    pub cache_min_similarity: EffectiveValue<f32>,
    pub cache_max_age_seconds: EffectiveValue<u64>,
}

/// `PUT /admin/tuning`: absent (or null) fields keep their values.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuningChange {
    #[serde(default)]
    pub chunk_size: Option<usize>,
    #[serde(default)]
    pub chunk_overlap: Option<usize>,
    #[serde(default)]
    pub top_k: Option<usize>,
    #[serde(default)]
    pub score_cutoff: Option<f32>,
    #[serde(default)]
    pub vector_weight: Option<f32>,
    #[serde(default)]
    pub text_weight: Option<f32>,
    #[serde(default)]
    pub rerank_candidates: Option<usize>,
    #[serde(default)]
    pub cache_enabled: Option<bool>,
    #[serde(default)]
    pub cache_min_similarity: Option<f32>,
    #[serde(default)]
    pub cache_max_age_seconds: Option<u64>,
    /// Needed when a chunking change re-embeds an indexed corpus.
    #[serde(default)]
    pub acknowledge_reindex: bool,
}

/// What `PUT /admin/tuning` did, and the values now in effect.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuningApplied {
    /// The new profile version, when retrieval or cache values changed.
    pub profile_version: Option<i32>,
    /// The full reindex a chunking change queued.
    pub reindex_job: Option<String>,
    pub tuning: TuningView,
}

/// `PUT /admin/tuning/chunking`: the chunk size and overlap, in tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChunkingRequest {
    pub max_tokens: usize,
    pub overlap_tokens: usize,
    /// Needed when the change re-embeds an indexed corpus.
    #[serde(default)]
    pub acknowledge_reindex: bool,
}

/// What `PUT /admin/tuning/chunking` did: whether the values changed, and the
/// full reindex the change queued (`null`: none).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkingApplied {
    pub changed: bool,
    pub reindex: Option<JobView>,
}

#[cfg(feature = "ssr")]
mod from_engine {
    use super::*;

    impl<T> From<engine::tuning::Effective<T>> for EffectiveValue<T> {
        fn from(e: engine::tuning::Effective<T>) -> Self {
            Self { value: e.value, stored: e.stored }
        }
    }

    impl From<engine::tuning::Overview> for TuningView {
        fn from(o: engine::tuning::Overview) -> Self {
            Self {
                embedding_model: o.embedding_model.into(),
                failing_closed: o.failing_closed,
                chunk_size: o.chunk_size.into(),
                chunk_overlap: o.chunk_overlap.into(),
                profile_version: o.profile_version,
                top_k: o.top_k.into(),
                score_cutoff: o.score_cutoff.into(),
                vector_weight: o.vector_weight.into(),
                text_weight: o.text_weight.into(),
                rerank_candidates: o.rerank_candidates.into(),
                cache_enabled: o.cache_enabled.into(),
                cache_min_similarity: o.cache_min_similarity.into(),
                cache_max_age_seconds: o.cache_max_age_seconds.into(),
            }
        }
    }

    impl From<TuningChange> for engine::tuning::Change {
        fn from(c: TuningChange) -> Self {
            Self {
                chunk_size: c.chunk_size,
                chunk_overlap: c.chunk_overlap,
                top_k: c.top_k,
                score_cutoff: c.score_cutoff,
                vector_weight: c.vector_weight,
                text_weight: c.text_weight,
                rerank_candidates: c.rerank_candidates,
                cache_enabled: c.cache_enabled,
                cache_min_similarity: c.cache_min_similarity,
                cache_max_age_seconds: c.cache_max_age_seconds,
                acknowledge_reindex: c.acknowledge_reindex,
            }
        }
    }
}
