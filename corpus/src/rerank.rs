//! The rerank stage: while a target is bound to the `rerank` role, it
//! reorders the best retrieved candidates before the top k is taken. The
//! answer pipeline, `POST /retrieve` and the Playground's retrieval all go
//! through [`apply`].
//!
//! The cutoff stays on the fused score, applied before reranking: it is what
//! tells "nothing retrievable answers" from "something does", and a
//! reranker's scores have no common scale across vendors. The reranker sees
//! at most `rerank_candidates` of the candidates that passed it (a setting
//! of Advanced tuning) and decides only their order. When it fails or is
//! not ready, the fused order stands and the stage says so: a reranker
//! never stops an answer.

use std::time::Instant;

use crate::providers::{self, Resolved, Role, TargetState};
use crate::retrieve::{self, Retrieval, RetrievalSettings, Retrieved};
use crate::trace::{Stage, StageName};
use crate::{Corpus, Result};

/// The reranker bound now, if any.
pub async fn reranker(lore: &Corpus) -> Result<Option<Resolved>> {
    providers::resolve(lore, Role::Rerank).await
}

/// The settings to retrieve with: wider than the top k while `reranker`
/// will reorder the candidates.
pub fn settings_for(settings: &RetrievalSettings, reranker: Option<&Resolved>) -> RetrievalSettings {
    match reranker {
        Some(_) => settings.widened_for_rerank(),
        None => *settings,
    }
}

/// What the stage did, for the trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// `reordered`, `failed` (the fused order stands), `disabled` (the
    /// target is not ready) or `skipped` (fewer than two candidates).
    pub decision: &'static str,
    pub reason: String,
    pub cost_usd: Option<f64>,
    pub duration_ms: f64,
}

impl Outcome {
    pub fn stage(&self) -> Stage {
        Stage {
            stage: StageName::Rerank,
            decision: self.decision.to_owned(),
            reason: self.reason.clone(),
            duration_ms: self.duration_ms,
            cost_usd: self.cost_usd,
            detail: None,
        }
    }
}

/// The text a reranker judges for a result: its title, heading and text.
fn document(result: &Retrieved) -> String {
    let chunk = &result.chunk;
    match chunk.heading.as_deref() {
        Some(heading) => format!("{} — {heading}\n{}", chunk.title, chunk.text),
        None => format!("{}\n{}", chunk.title, chunk.text),
    }
}

/// Reorders `retrieval`'s results with `reranker` and keeps the best
/// `top_k`.
pub async fn apply(
    lore: &Corpus,
    reranker: &Resolved,
    query: &str,
    retrieval: &mut Retrieval,
    top_k: usize,
) -> Outcome {
    let started = Instant::now();
    let model = &reranker.target.model;
    let (decision, reason, cost_usd) = if reranker.state != TargetState::Ready {
        (
            "disabled",
            format!("the rerank target {model} is {}; the fused order stands", reranker.state.key()),
            None,
        )
    } else if retrieval.results.len() < 2 {
        ("skipped", "fewer than two candidates: nothing to reorder".to_owned(), None)
    } else {
        let documents: Vec<String> = retrieval.results.iter().map(document).collect();
        let called = lore.provider_client.rerank(&reranker.endpoint, model, query, &documents).await;
        match called {
            Ok(reranked) => {
                let before: Vec<String> =
                    retrieval.results.iter().take(top_k).map(|r| r.chunk.id.clone()).collect();
                retrieve::reorder(&mut retrieval.results, &reranked.scores);
                let moved = retrieval
                    .results
                    .iter()
                    .take(top_k)
                    .zip(&before)
                    .filter(|(after, before)| after.chunk.id != **before)
                    .count();
                let price = reranker.target.input_price_per_mtok.unwrap_or(0.0) / 1_000_000.0;
                let reason = format!(
                    "{model} scored {} candidates; {moved} of the top {} changed place",
                    documents.len(),
                    top_k.min(documents.len())
                );
                ("reordered", reason, Some(reranked.input_tokens as f64 * price))
            }
            Err(err) => {
                // The provider's reply and address stay in the log.
                tracing::warn!(error = %err, model = %model, "the rerank call failed");
                ("failed", format!("{model} did not answer; the fused order stands"), None)
            }
        }
    };
    retrieval.results.truncate(top_k);
    Outcome { decision, reason, cost_usd, duration_ms: started.elapsed().as_secs_f64() * 1000.0 }
}
