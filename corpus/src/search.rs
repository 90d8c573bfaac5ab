//! Search over the indexed corpus, as `lore search`, the console and (with
//! access keys) `POST /retrieve` reach it: the fail-closed gate of the corpus
//! fingerprint, then hybrid retrieval over the enabled sources the caller
//! may read ([`Reader`]), or over the whole corpus for the Playground's
//! corpus diagnostic (an admin's).

use std::future::Future;
use std::time::Instant;

use crate::fingerprint::{self, RetrievalState};
use crate::retrieve::{self, Retrieval, RetrievalSettings};
use crate::sources::Reader;
use crate::trace::{Stage, StageName};
use crate::{Corpus, Error, Result};

/// The longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 4_000;

/// The largest top k the corpus diagnostic takes (more than retrieval's
/// [`retrieve::MAX_TOP_K`]: it is for looking through the corpus).
pub const DIAGNOSTIC_MAX_TOP_K: usize = 100;

/// Whether retrieval may run now, and why not.
pub async fn retrieval_state(lore: &Corpus) -> Result<RetrievalState> {
    let stamp = fingerprint::stamped(&lore.db).await?;
    let configured = lore.embedding_model().await?;
    retrieval_state_of(lore, &configured, stamp.as_ref()).await
}

/// [`retrieval_state`] for the configured model and the stamp, already read.
pub async fn retrieval_state_of(
    lore: &Corpus,
    configured: &str,
    stamp: Option<&fingerprint::Fingerprint>,
) -> Result<RetrievalState> {
    if stamp.is_some() {
        // Decided by the stamp alone (and the chunk table may not even open
        // with the configured model's dimensions when the stamp differs).
        return Ok(fingerprint::retrieval_state(configured, stamp, 0));
    }
    // No stamp: chunks without one were embedded by a model since replaced.
    let indexed = lore.chunks().await?.count(None).await?;
    Ok(fingerprint::retrieval_state(configured, None, indexed))
}

/// Which chunks a search reaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The enabled sources: what an admin's search reaches (the same as
    /// `Visible(Reader::Everything)`).
    Enabled,
    /// The enabled sources this reader may read: what answers and
    /// `/retrieve` search.
    Visible(Reader),
    /// Every source's chunks, disabled ones too: the corpus diagnostic.
    WholeCorpus,
    /// A scope the caller has already read (from the same sources it shows).
    Within(crate::index::Scope),
}

/// Hybrid retrieval for `query` with `settings` (top-k, cutoff, weights)
/// over the chunks `reach` covers.
pub async fn search(
    lore: &Corpus,
    query: &str,
    settings: &RetrievalSettings,
    reach: Reach,
) -> Result<Retrieval> {
    Ok(search_with(lore, query, async { Ok::<_, Error>(*settings) }, reach, Rerank::No).await?.found)
}

/// Whether a search goes through the rerank stage (answers, `/retrieve`
/// and the Playground's retrieval do; the corpus diagnostic shows the fused
/// order as it is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rerank {
    IfBound,
    No,
}

/// What one search found, with the rerank stage's outcome when it ran.
struct Searched {
    found: Retrieval,
    settings: RetrievalSettings,
    reranked: Option<crate::rerank::Outcome>,
}

/// [`search`] for `reader` with the active profile version's retrieval
/// settings (the defaults before a profile exists), `top_k` (1 to
/// [`retrieve::MAX_TOP_K`]) replacing its top k when given; returns the
/// settings used beside the results. The profile is read beside the gate's
/// facts instead of before them.
async fn search_active_traced(
    lore: &Corpus,
    reader: &Reader,
    query: &str,
    top_k: Option<usize>,
) -> Result<Searched> {
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
    search_with(lore, query, settings, Reach::Visible(reader.clone()), Rerank::IfBound).await
}

/// The enabled sources `reader` may read, as stored now.
async fn visible(lore: &Corpus, reader: &Reader) -> Result<crate::index::Scope> {
    Ok(crate::sources::audience::visible_scope(&crate::sources::list(lore).await?, reader))
}

/// The corpus diagnostic (the Playground's Corpus mode and `lore search`):
/// retrieval's default settings, `top_k` (1 to [`DIAGNOSTIC_MAX_TOP_K`])
/// replacing their top k when given. Raw means every source's chunks,
/// disabled ones too, with no cutoff; otherwise the enabled sources with the
/// default cutoff. Either way only what `reader` may read (raw reaches
/// disabled sources for a reader of everything only).
pub async fn diagnose(
    lore: &Corpus,
    reader: &Reader,
    query: &str,
    top_k: Option<usize>,
    raw: bool,
) -> Result<Retrieval> {
    let mut settings = RetrievalSettings::default();
    if let Some(k) = top_k {
        if !(1..=DIAGNOSTIC_MAX_TOP_K).contains(&k) {
            return Err(Error::InvalidInput(format!("top_k must be between 1 and {DIAGNOSTIC_MAX_TOP_K}")));
        }
        settings.top_k = k;
    }
    if raw {
        settings.score_cutoff = f32::MIN;
    }
    let reach = match reader {
        Reader::Everything if raw => Reach::WholeCorpus,
        reader => Reach::Visible(reader.clone()),
    };
    search(lore, query, &settings, reach).await
}

/// What the Playground's Retrieval mode shows: the active profile version's
/// retrieval over the enabled sources, with the settings and the sources it
/// searched.
#[derive(Clone, Debug)]
pub struct ProfileRetrieval {
    /// None before the first index creates the profile (defaults apply).
    pub profile_version: Option<i32>,
    pub settings: RetrievalSettings,
    /// The enabled sources searched, as (name, id).
    pub sources: Vec<(String, String)>,
    pub found: Retrieval,
}

/// Profile retrieval for `query`, exactly as an answer for `reader` would
/// retrieve.
pub async fn profile_retrieval(lore: &Corpus, reader: &Reader, query: &str) -> Result<ProfileRetrieval> {
    let active = crate::profile::active(lore).await?;
    let settings = active.as_ref().map(|v| v.snapshot.retrieval).unwrap_or_default();
    // Read once: the sources shown are the sources searched.
    let every = crate::sources::list(lore).await?;
    let scope = crate::sources::audience::visible_scope(&every, reader);
    let sources = every
        .into_iter()
        .filter(|source| scope.reaches(&source.id))
        .map(|source| (source.name, source.id))
        .collect();
    let settings_now = async { Ok::<_, Error>(settings) };
    let found = search_with(lore, query, settings_now, Reach::Within(scope), Rerank::IfBound).await?.found;
    Ok(ProfileRetrieval { profile_version: active.map(|v| v.version), settings, sources, found })
}

/// A retrieval with its trace, as `POST /retrieve` returns it.
#[derive(Clone, Debug)]
pub struct Traced {
    pub found: Retrieval,
    pub trace: RetrievalTrace,
}

/// A retrieval's trace: an id of its own and its one stage.
#[derive(Clone, Debug)]
pub struct RetrievalTrace {
    pub id: String,
    pub stages: Vec<Stage>,
}

/// [`search_active_traced`] with the trace a caller of `/retrieve` reads: the
/// retrieval stage's decision (`results` or `empty`), what it considered
/// and how long it took, then the rerank stage while a reranker is bound.
/// Its counts are of what `reader` may read only.
pub async fn traced_retrieval(
    lore: &Corpus,
    reader: &Reader,
    query: &str,
    top_k: Option<usize>,
) -> Result<Traced> {
    let started = Instant::now();
    let Searched { found, settings, reranked } = search_active_traced(lore, reader, query, top_k).await?;
    let rerank_ms = reranked.as_ref().map_or(0.0, |r| r.duration_ms);
    let stage = Stage {
        stage: StageName::Retrieval,
        decision: if found.results.is_empty() { "empty".into() } else { "results".into() },
        reason: format!(
            "{} candidates, {} below the cutoff {:.2}, top {}",
            found.candidates, found.below_cutoff, settings.score_cutoff, settings.top_k
        ),
        duration_ms: started.elapsed().as_secs_f64() * 1000.0 - rerank_ms,
        cost_usd: None,
        detail: None,
    };
    let mut stages = vec![stage];
    stages.extend(reranked.map(|r| r.stage()));
    let trace = RetrievalTrace { id: uuid::Uuid::new_v4().to_string(), stages };
    Ok(Traced { found, trace })
}

async fn search_with(
    lore: &Corpus,
    query: &str,
    settings: impl Future<Output = Result<RetrievalSettings>>,
    reach: Reach,
    rerank: Rerank,
) -> Result<Searched> {
    let query = query.trim();
    if query.is_empty() {
        return Err(Error::InvalidInput("the query is empty".into()));
    }
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(Error::InvalidInput(format!("the query is longer than {MAX_QUERY_CHARS} characters")));
    }
    let scope = async {
        match reach {
            Reach::Enabled => visible(lore, &Reader::Everything).await,
            Reach::Visible(reader) => visible(lore, &reader).await,
            Reach::WholeCorpus => crate::sources::whole_corpus(lore).await,
            Reach::Within(scope) => Ok(scope),
        }
    };
    let (state, scope, settings) = tokio::try_join!(retrieval_state(lore), scope, settings)?;
    if let RetrievalState::FailingClosed(why) = state {
        return Err(Error::RetrievalFailingClosed(why));
    }
    let embedder = lore.embedder().await?;
    let store = lore.chunks().await?;
    let reranker = match rerank {
        Rerank::IfBound => crate::rerank::reranker(lore).await?,
        Rerank::No => None,
    };
    let widened = crate::rerank::settings_for(&settings, reranker.as_ref());
    let mut found = retrieve::hybrid(store.as_ref(), embedder.as_ref(), query, &scope, &widened).await?;
    let reranked = match &reranker {
        Some(reranker) => Some(crate::rerank::apply(lore, reranker, query, &mut found, settings.top_k).await),
        None => None,
    };
    Ok(Searched { found, settings, reranked })
}
