//! Search over the indexed corpus, as `lore search`, the console and (with
//! access keys) `POST /retrieve` reach it: the fail-closed gate of the corpus
//! fingerprint, then hybrid retrieval over the enabled sources, or over the
//! whole corpus for the Playground's corpus diagnostic.

use std::future::Future;

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

/// Which chunks a search reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The enabled sources: what answers and `/retrieve` search.
    Enabled,
    /// Every source's chunks, disabled ones too: the corpus diagnostic.
    WholeCorpus,
}

/// Hybrid retrieval for `query` with `settings` (top-k, cutoff, weights)
/// over the chunks `reach` covers.
pub async fn search(
    lore: &Lore,
    query: &str,
    settings: &RetrievalSettings,
    reach: Reach,
) -> Result<Retrieval> {
    Ok(search_with(lore, query, async { Ok::<_, Error>(*settings) }, reach).await?.0)
}

/// [`search`] with the active profile version's retrieval settings (the
/// defaults before a profile exists), `top_k` (1 to [`retrieve::MAX_TOP_K`])
/// replacing its top k when given; returns the settings used beside the results. The profile is read
/// beside the gate's facts instead of before them.
pub async fn search_active(
    lore: &Lore,
    query: &str,
    top_k: Option<usize>,
) -> Result<(Retrieval, RetrievalSettings)> {
    if let Some(k) = top_k.filter(|k| !(1..=retrieve::MAX_TOP_K).contains(k)) {
        return Err(Error::InvalidInput(format!(
            "top_k must be between 1 and {}, not {k}",
            retrieve::MAX_TOP_K
        )));
    }
    let settings = async {
        let mut settings =
            crate::profile::active(lore).await?.map(|version| version.snapshot.retrieval).unwrap_or_default();
        if let Some(k) = top_k {
            settings.top_k = k;
        }
        Ok::<_, Error>(settings)
    };
    search_with(lore, query, settings, Reach::Enabled).await
}

async fn search_with(
    lore: &Lore,
    query: &str,
    settings: impl Future<Output = Result<RetrievalSettings>>,
    reach: Reach,
) -> Result<(Retrieval, RetrievalSettings)> {
    let query = query.trim();
    if query.is_empty() {
        return Err(Error::InvalidInput("the query is empty".into()));
    }
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(Error::InvalidInput(format!("the query is longer than {MAX_QUERY_CHARS} characters")));
    }
    let scope = async {
        match reach {
            Reach::Enabled => crate::sources::search_scope(lore).await,
            Reach::WholeCorpus => crate::sources::whole_corpus(lore).await,
        }
    };
    let (state, scope, settings) = tokio::try_join!(retrieval_state(lore), scope, settings)?;
    if let RetrievalState::FailingClosed(why) = state {
        return Err(Error::RetrievalFailingClosed(why));
    }
    let embedder = lore.embedder().await?;
    let store = lore.chunks().await?;
    let found = retrieve::hybrid(store.as_ref(), embedder.as_ref(), query, &scope, &settings).await?;
    Ok((found, settings))
}
