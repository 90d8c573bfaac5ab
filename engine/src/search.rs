//! Search over the indexed corpus, as `lore search`, the console and (with
//! access keys) `POST /retrieve` reach it: the fail-closed gate of the corpus
//! fingerprint, then hybrid retrieval over the enabled sources.

use crate::corpus::{self, RetrievalState};
use crate::ingest::IngestError;
use crate::retrieve::{self, Retrieval, RetrievalSettings};
use crate::{Error, Lore, Result};

/// The longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 4_000;

/// Whether retrieval may run now, and why not.
pub async fn retrieval_state(lore: &Lore) -> Result<RetrievalState> {
    let stamp = corpus::stamped(&lore.db).await?;
    let configured = lore.embedding_model().await?;
    retrieval_state_of(lore, &configured, stamp.as_ref()).await
}

/// [`retrieval_state`] for the configured model and the stamp, already read.
pub async fn retrieval_state_of(
    lore: &Lore,
    configured: &str,
    stamp: Option<&corpus::Fingerprint>,
) -> Result<RetrievalState> {
    if stamp.is_some() {
        // Decided by the stamp alone (and the chunk table may not even open
        // with the configured model's dimensions when the stamp differs).
        return Ok(corpus::retrieval_state(configured, stamp, 0));
    }
    // No stamp: chunks without one were embedded by a model since replaced.
    let indexed = lore.chunks().await?.count(None).await.map_err(IngestError::Index)?;
    Ok(corpus::retrieval_state(configured, None, indexed))
}

/// Hybrid retrieval for `query` with `settings` (top-k, cutoff, weights).
pub async fn search(lore: &Lore, query: &str, settings: &RetrievalSettings) -> Result<Retrieval> {
    let query = query.trim();
    if query.is_empty() {
        return Err(Error::InvalidInput("the query is empty".into()));
    }
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(Error::InvalidInput(format!("the query is longer than {MAX_QUERY_CHARS} characters")));
    }
    let (state, scope) = tokio::try_join!(retrieval_state(lore), crate::sources::search_scope(lore))?;
    if let RetrievalState::FailingClosed(why) = state {
        return Err(Error::RetrievalFailingClosed(why));
    }
    let embedder = lore.embedder().await?;
    let store = lore.chunks().await?;
    Ok(retrieve::hybrid(store.as_ref(), embedder.as_ref(), query, &scope, settings).await?)
}
