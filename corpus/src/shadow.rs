//! Shadow indexes: the corpus embedded again by a candidate embedding model,
//! in a chunk table of its own, while the active index keeps serving.
//!
//! Binding the embedding role to a new model with golden questions present
//! (see `profile::bind_model`) builds the candidate's shadow first
//! ([`build`]): every stored chunk, same text and provenance, embedded by the
//! candidate. The golden questions then run against the candidate with its
//! own model and its shadow (the answer pipeline asks [`for_candidate`]),
//! beside the active version on the active index. Activating the candidate
//! ([`adopt_in`]) moves the active table pointer (the cluster setting
//! [`TABLE_SETTING`]) and the corpus stamp to the shadow in the transaction
//! that binds the role, so retrieval never fails closed on the way; a full
//! reindex is then queued, which chunks every document again for the new
//! model (its chunk sizes are the new model's) while the shadow serves.
//!
//! Each build writes a table of its own (`chunks_<uuid>`), named in the
//! candidate's binding; a build that succeeds drops every chunk table that
//! is neither the active one nor its own, one that fails drops its own.

use std::sync::Arc;

use futures::TryStreamExt;

use crate::embed::{remote, Embedder};
use crate::fingerprint::Fingerprint;
use crate::index::lance::{self, LanceChunkStore};
use crate::index::ChunkStore;
use crate::providers::{self, Resolved};
use crate::{Corpus, Error, Result};

/// The cluster setting naming the active chunk table; unset: [`lance::DEFAULT_TABLE`].
pub const TABLE_SETTING: &str = "vectors.chunks_table";

/// Chunks embedded per step of a build.
const STEP: usize = 256;

/// A candidate embedding model with its shadow index, ready to answer.
pub struct Shadow {
    /// The candidate's target; `None`: the on-node model.
    pub target_id: Option<String>,
    pub table: String,
    pub embedder: Arc<dyn Embedder>,
    pub store: Arc<dyn ChunkStore>,
}

/// The chunk table the active index lives in.
pub async fn active_table(db: &impl sea_orm::ConnectionTrait) -> Result<String> {
    let stored = crate::store::setting(db, TABLE_SETTING).await?;
    Ok(stored.as_ref().and_then(serde_json::Value::as_str).unwrap_or(lance::DEFAULT_TABLE).to_owned())
}

/// A fresh table name for a build: never the active table's, nor an
/// earlier build's (a candidate kept inactive keeps the table it was judged on).
fn new_table() -> String {
    format!("{}_{}", lance::DEFAULT_TABLE, uuid::Uuid::new_v4().simple())
}

/// Whether the active index has anything a candidate could be judged on:
/// chunks, and retrieval operating (a corpus already failing closed, or
/// one whose model cannot be reached, has no baseline to compare with).
pub async fn corpus_indexed(lore: &Corpus) -> Result<bool> {
    if crate::search::retrieval_state(lore).await? != crate::fingerprint::RetrievalState::Operating {
        return Ok(false);
    }
    Ok(match lore.chunks().await {
        Ok(store) => store.count(None).await? > 0,
        Err(_) => false,
    })
}

/// Embeds every chunk of the active index again with `bound`'s model (the
/// on-node model when `None`), into a new table. On success, the tables of
/// earlier candidates are dropped; on failure, the new table is, and
/// nothing else has changed.
pub async fn build(
    lore: &Corpus,
    bound: Option<&Resolved>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Arc<Shadow>> {
    let at = lore.settings.vectors();
    let active_name = active_table(&lore.db).await?;
    let table = new_table();
    let built = fill(lore, bound, &at, &table, progress).await;
    let succeeded = built.is_ok();
    let doomed = |name: &str| {
        if succeeded {
            name.starts_with(lance::DEFAULT_TABLE) && name != active_name && name != table
        } else {
            name == table
        }
    };
    match lance::drop_tables(&at, doomed).await {
        Ok(dropped) if !dropped.is_empty() => {
            tracing::info!(tables = ?dropped, "dropped unused chunk tables")
        }
        Ok(_) => {}
        Err(err) => tracing::warn!(error = %err, "unused chunk tables could not be dropped"),
    }
    let (embedder, store) = built?;
    let built = Arc::new(Shadow {
        target_id: bound.map(|b| b.target.id.clone()),
        table,
        embedder,
        store: Arc::new(store),
    });
    *lore.shadow.lock().await = Some(built.clone());
    Ok(built)
}

/// The build itself: the candidate's embedder and `table`, once every
/// chunk is in it; `progress` hears of each step (chunks done, of all).
async fn fill(
    lore: &Corpus,
    bound: Option<&Resolved>,
    at: &lance::Location,
    table: &str,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(Arc<dyn Embedder>, LanceChunkStore)> {
    let model = candidate_model(lore, bound);
    // The candidate's own failures refuse the binding; the provider's reply
    // stays in the log.
    let refused = |err: Error| match err {
        Error::Embedding(why) => {
            tracing::warn!(model = %model, error = %why, "a candidate embedding model could not embed the corpus");
            providers::ProviderError::TargetNotReady {
                role: providers::Role::Embedding.key(),
                model: model.clone(),
                state: bound.map_or(providers::TargetState::Ready, |b| b.state),
                reason:
                    "it could not embed the corpus for its evaluation (the log says why); nothing changed"
                        .into(),
            }
            .into()
        }
        other => other,
    };
    let embedder = match bound {
        Some(bound) => connect(lore, bound).await.map_err(refused)?,
        None => lore.load_local_embedder().await?,
    };
    let active = lore.chunks().await?;
    let total = active.count(None).await?;
    let shadow = LanceChunkStore::recreate(at, table, embedder.dimensions()).await?;
    tracing::info!(chunks = total, model = %model, table, "building a shadow index");
    progress(0, total);
    let mut done = 0;
    let mut pending = Vec::new();
    let mut rows = active.scan().await?;
    loop {
        let next = rows.try_next().await?;
        let last = next.is_none();
        pending.extend(next.unwrap_or_default());
        while pending.len() >= STEP || (last && !pending.is_empty()) {
            let step: Vec<_> = pending.drain(..STEP.min(pending.len())).collect();
            done += step.len();
            embed_into(&shadow, embedder.as_ref(), step).await.map_err(refused)?;
            progress(done, total);
            tracing::debug!(done, total, table, "shadow index progress");
        }
        if last {
            break;
        }
    }
    shadow.optimize().await?;
    tracing::info!(chunks = done, model = %model, table, "built a shadow index");
    Ok((embedder, shadow))
}

/// The candidate's model, for messages: the target's, or the on-node one.
fn candidate_model(lore: &Corpus, bound: Option<&Resolved>) -> String {
    bound.map_or_else(|| lore.settings.models.embedding.clone(), |b| b.target.model.clone())
}

async fn connect(lore: &Corpus, bound: &Resolved) -> Result<Arc<dyn Embedder>> {
    let embedder = remote::RemoteEmbedder::connect(
        lore.provider_client.clone(),
        bound.endpoint.clone(),
        &bound.account.id,
        &bound.target.model,
    )
    .await?;
    Ok(Arc::new(embedder))
}

async fn embed_into(
    shadow: &LanceChunkStore,
    embedder: &dyn Embedder,
    mut rows: Vec<crate::index::ChunkRow>,
) -> Result<()> {
    // What indexing embeds: the section's heading above the chunk's text.
    let texts: Vec<String> = rows
        .iter()
        .map(|row| match &row.heading {
            Some(heading) => format!("{heading}\n\n{}", row.text),
            None => row.text.clone(),
        })
        .collect();
    let vectors = embedder.embed(&texts).await?;
    if vectors.len() != rows.len() {
        return Err(Error::Internal(format!(
            "{} returned {} embeddings for {} chunks",
            embedder.model(),
            vectors.len(),
            rows.len()
        )));
    }
    for (row, vector) in rows.iter_mut().zip(vectors) {
        row.vector = vector;
    }
    shadow.append(rows).await?;
    Ok(())
}

/// The shadow a candidate binding the embedding role answers from (opened
/// once and kept until another is asked for).
pub async fn for_candidate(lore: &Corpus, binding: &crate::profile::Rebinding) -> Result<Arc<Shadow>> {
    let mut kept = lore.shadow.lock().await;
    let table = binding.index.clone().ok_or_else(|| missing(&binding.model))?;
    if let Some(shadow) = kept.as_ref().filter(|s| s.table == table && s.target_id == binding.target_id) {
        return Ok(shadow.clone());
    }
    let at = lore.settings.vectors();
    if lance::stored_dimensions(&at, &table).await?.is_none() {
        return Err(missing(&binding.model));
    }
    let embedder = match &binding.target_id {
        Some(id) => connect(lore, &providers::resolve_target(lore, id).await?).await?,
        None => lore.load_local_embedder().await?,
    };
    let store = LanceChunkStore::open_table(&at, &table, embedder.dimensions()).await?;
    let opened =
        Arc::new(Shadow { target_id: binding.target_id.clone(), table, embedder, store: Arc::new(store) });
    *kept = Some(opened.clone());
    Ok(opened)
}

fn missing(model: &str) -> Error {
    providers::ProviderError::TargetNotReady {
        role: providers::Role::Embedding.key(),
        model: model.to_owned(),
        state: providers::TargetState::Ready,
        reason: "the index it was judged on is gone (a later candidate's build replaced it): bind it again"
            .into(),
    }
    .into()
}

/// What activating a candidate that binds the embedding role changes: the
/// active table and the corpus stamp.
#[derive(Clone, Debug)]
pub struct Adoption {
    pub table: String,
    pub fingerprint: Fingerprint,
}

/// Checks that the shadow `index` a candidate was judged on is there to
/// adopt, before anything changes. `target` is the candidate's model
/// (`None`: the on-node model), `model` its name for messages.
pub async fn adoptable(
    lore: &Corpus,
    target: Option<&providers::Target>,
    index: Option<&str>,
    model: &str,
) -> Result<Adoption> {
    let table = index.ok_or_else(|| missing(model))?.to_owned();
    let dimensions =
        lance::stored_dimensions(&lore.settings.vectors(), &table).await?.ok_or_else(|| missing(model))?;
    let embedding_model = match target {
        Some(target) => remote::identity(&target.account_id, &target.model),
        None => lore.settings.models.embedding.clone(),
    };
    Ok(Adoption {
        table,
        fingerprint: Fingerprint {
            embedding_model,
            dimensions,
            chunking: crate::tuning::chunking(lore).await?,
        },
    })
}

/// Makes the shadow the active index within `txn` (the one that binds the
/// role); the caller then calls [`adopted`] once it committed.
pub async fn adopt_in(txn: &impl sea_orm::ConnectionTrait, by: &str, adoption: &Adoption) -> Result<()> {
    crate::store::put_setting(txn, TABLE_SETTING, serde_json::json!(adoption.table), by).await?;
    crate::fingerprint::set(txn, Some(&adoption.fingerprint)).await
}

/// After the adoption committed: this process drops its embedder and index
/// (the next use opens the new ones), and a full reindex chunks every
/// document again at the new model's sizes while the shadow serves.
pub async fn adopted(lore: &Corpus) -> Result<()> {
    lore.announce(crate::cluster::Change::Embedding).await;
    *lore.shadow.lock().await = None;
    crate::ingest::jobs::enqueue(lore, None, true, "embedding").await?;
    prune(lore).await
}

/// Removes the chunks of documents deleted since the shadow was built (the
/// reindex replaces what still exists, and would leave those answerable).
async fn prune(lore: &Corpus) -> Result<()> {
    use sea_orm::EntityTrait;
    let store = lore.chunks().await?;
    let mut indexed = std::collections::BTreeSet::new();
    let mut rows = store.scan().await?;
    while let Some(batch) = rows.try_next().await? {
        indexed.extend(batch.into_iter().map(|row| row.document_id));
    }
    let known: std::collections::HashSet<String> =
        entity::document::Entity::find().all(&lore.db).await?.into_iter().map(|doc| doc.id).collect();
    let gone: Vec<String> = indexed.into_iter().filter(|id| !known.contains(id)).collect();
    for part in gone.chunks(500) {
        store.write_documents(part, Vec::new()).await?;
    }
    if !gone.is_empty() {
        tracing::info!(
            documents = gone.len(),
            "removed the chunks of documents deleted while a shadow index was built"
        );
    }
    Ok(())
}
