//! Hybrid retrieval: vector and full-text search over the enabled sources,
//! fused into one score, cut off, top k. Each result keeps the score it got in
//! each mode, for the trace and the Playground's corpus diagnostic.
//!
//! Fusion is a weighted sum of comparable scores, so that the cutoff means the
//! same thing whatever the query: the cosine similarity to the query (computed
//! for text-only hits too, from their stored vectors) and the BM25 score
//! divided by the best BM25 score among the candidates (0 when the chunk was
//! not a text match).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::embed::{cosine, EmbedError, Embedder};
use crate::index::{ChunkRow, ChunkStore, Hit, IndexError, Scope};

/// The most passages one retrieval may return (a profile's top k, or a
/// `/retrieve` request's).
pub const MAX_TOP_K: usize = 50;

/// The most candidates a reranker may be given.
pub const MAX_RERANK_CANDIDATES: usize = 100;

/// Answer-time retrieval settings (a ProfileVersion carries its own copy).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetrievalSettings {
    pub top_k: usize,
    /// Results whose fused score is below this are dropped.
    pub score_cutoff: f32,
    pub vector_weight: f32,
    pub text_weight: f32,
    /// While a reranker is bound: how many of the best candidates past the
    /// cutoff it reorders before the top k is taken (at least top k).
    #[serde(default = "default_rerank_candidates")]
    pub rerank_candidates: usize,
}

fn default_rerank_candidates() -> usize {
    20
}

impl Default for RetrievalSettings {
    fn default() -> Self {
        Self {
            top_k: 5,
            score_cutoff: 0.3,
            vector_weight: 0.7,
            text_weight: 0.3,
            rerank_candidates: default_rerank_candidates(),
        }
    }
}

impl RetrievalSettings {
    /// These settings keeping the rerank pool instead of the top k: what a
    /// retrieval whose candidates a reranker will reorder asks for.
    pub fn widened_for_rerank(&self) -> RetrievalSettings {
        RetrievalSettings {
            top_k: self.rerank_candidates.clamp(self.top_k, MAX_RERANK_CANDIDATES.max(self.top_k)),
            ..*self
        }
    }
}

/// How many candidates each mode contributes per result wanted.
const CANDIDATES_PER_RESULT: usize = 4;

#[derive(Clone, Debug, PartialEq)]
pub struct Retrieved {
    pub chunk: ChunkRow,
    /// The fused score the cutoff and the order use.
    pub score: f32,
    /// Cosine similarity of the chunk to the query.
    pub vector_score: f32,
    /// Raw BM25 score, when the chunk matched the text search.
    pub text_score: Option<f32>,
    /// 1-based rank in each mode's candidate list.
    pub vector_rank: Option<usize>,
    pub text_rank: Option<usize>,
    /// The reranker's relevance score, when one reordered the results.
    pub rerank_score: Option<f32>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Retrieval {
    pub results: Vec<Retrieved>,
    /// Candidates considered (both modes, deduplicated).
    pub candidates: usize,
    /// Candidates dropped by the cutoff.
    pub below_cutoff: usize,
    /// When none passed the cutoff, the [`NEAREST_BELOW`] best of those it
    /// dropped that scored at least half the cutoff: what a refusal may list
    /// as maybe related (a question about nothing in the corpus lists none).
    pub nearest_below: Vec<Retrieved>,
}

/// How many candidates below the cutoff a retrieval that found nothing keeps.
pub const NEAREST_BELOW: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum RetrieveError {
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Index(#[from] IndexError),
}

/// Retrieves for `query` in `scope` (the enabled sources). The full-text
/// search needs no vector, so it runs while the query is embedded and then
/// searched by vector: the vector search starts as soon as the embedding is
/// done, not once the text search is done too.
pub async fn hybrid(
    store: &dyn ChunkStore,
    embedder: &dyn Embedder,
    query: &str,
    scope: &Scope,
    settings: &RetrievalSettings,
) -> Result<Retrieval, RetrieveError> {
    if scope.is_empty() || settings.top_k == 0 {
        return Ok(Retrieval::default());
    }
    let limit = settings.top_k * CANDIDATES_PER_RESULT;
    let by_vector = async {
        let query_vector = embedder.embed_query(query).await?;
        let hits = store.vector_search(&query_vector, scope, limit).await?;
        Ok::<_, RetrieveError>((query_vector, hits))
    };
    let by_text = async { store.text_search(query, scope, limit).await.map_err(RetrieveError::from) };
    let ((query_vector, by_vector), by_text) = tokio::try_join!(by_vector, by_text)?;
    Ok(fuse(&query_vector, by_vector, by_text, settings))
}

/// [`hybrid`] for a query already embedded (the answer pipeline embeds once
/// for the semantic cache and retrieval).
pub async fn hybrid_with_vector(
    store: &dyn ChunkStore,
    query_vector: &[f32],
    query: &str,
    scope: &Scope,
    settings: &RetrievalSettings,
) -> Result<Retrieval, RetrieveError> {
    if scope.is_empty() || settings.top_k == 0 {
        return Ok(Retrieval::default());
    }
    let limit = settings.top_k * CANDIDATES_PER_RESULT;
    let (by_vector, by_text) =
        tokio::join!(store.vector_search(query_vector, scope, limit), store.text_search(query, scope, limit));
    Ok(fuse(query_vector, by_vector?, by_text?, settings))
}

/// Both modes' candidates merged, scored, cut off and ranked.
fn fuse(
    query_vector: &[f32],
    by_vector: Vec<Hit>,
    by_text: Vec<Hit>,
    settings: &RetrievalSettings,
) -> Retrieval {
    let best_text = by_text.iter().map(|hit| hit.score).fold(0.0f32, f32::max);
    let mut merged: HashMap<String, Retrieved> = HashMap::new();
    for (rank, hit) in by_vector.into_iter().enumerate() {
        merged.insert(
            hit.chunk.id.clone(),
            Retrieved {
                vector_score: hit.score,
                chunk: hit.chunk,
                score: 0.0,
                text_score: None,
                vector_rank: Some(rank + 1),
                text_rank: None,
                rerank_score: None,
            },
        );
    }
    for (rank, hit) in by_text.into_iter().enumerate() {
        let entry = merged.entry(hit.chunk.id.clone()).or_insert_with(|| Retrieved {
            vector_score: cosine(query_vector, &hit.chunk.vector),
            chunk: hit.chunk,
            score: 0.0,
            text_score: None,
            vector_rank: None,
            text_rank: None,
            rerank_score: None,
        });
        entry.text_score = Some(hit.score);
        entry.text_rank = Some(rank + 1);
    }

    let candidates = merged.len();
    let mut results: Vec<Retrieved> = merged
        .into_values()
        .map(|mut r| {
            let text = match (r.text_score, best_text > 0.0) {
                (Some(score), true) => score / best_text,
                _ => 0.0,
            };
            r.score = settings.vector_weight * r.vector_score + settings.text_weight * text;
            r
        })
        .collect();
    results.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.chunk.id.cmp(&b.chunk.id)));
    let kept = results.iter().filter(|r| r.score >= settings.score_cutoff).count();
    let nearest_below = if kept == 0 {
        let near = settings.score_cutoff / 2.0;
        results.drain(..).filter(|r| r.score >= near).take(NEAREST_BELOW).collect()
    } else {
        Vec::new()
    };
    results.truncate(kept.min(settings.top_k));
    Retrieval { results, candidates, below_cutoff: candidates - kept, nearest_below }
}

/// Reorders `results` by the reranker's `scores` (one per result, in the
/// results' order), highest first; equal scores keep the fused order. The
/// fused score stays what it was: the cutoff has already been applied.
pub fn reorder(results: &mut [Retrieved], scores: &[f32]) {
    for (result, score) in results.iter_mut().zip(scores) {
        result.rerank_score = Some(*score);
    }
    // A stable sort: ties keep the fused order.
    results.sort_by(|a, b| {
        let (a, b) = (a.rerank_score.unwrap_or(f32::MIN), b.rerank_score.unwrap_or(f32::MIN));
        b.total_cmp(&a)
    });
}

impl From<RetrieveError> for crate::Error {
    fn from(err: RetrieveError) -> Self {
        match err {
            RetrieveError::Embed(err) => crate::Error::Embedding(err),
            RetrieveError::Index(err) => err.into(),
        }
    }
}
