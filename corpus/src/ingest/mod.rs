//! Ingestion: documents from a source → extracted sections → chunks →
//! vectors → the chunk index, with document bookkeeping in the database.
//!
//! - [`jobs`]: persisted indexing runs (queue, lease, heartbeat, resume).
//! - [`upload`]: files received for upload sources, kept in the data directory.
//! - [`web`]: the website crawler (sitemaps, links, robots.txt, scope).
//!
//! [`Indexer::index_documents`] is the one path every document takes,
//! whatever its source, alone or in a batch. It decides "unchanged" by a
//! content hash over the extracted text, the embedding model and the
//! chunking, so nothing unchanged is re-embedded, and a chunking or model
//! change re-embeds everything.

pub mod address;
pub mod git;
pub mod jobs;
pub mod lifecycle;
pub mod table;
pub mod upload;
pub mod web;

use std::collections::HashMap;
use std::sync::Arc;

use chrono::Utc;
use entity::document;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::chunk::{chunk_sections, ChunkingParams};
use crate::embed::Embedder;
use crate::extract::{self, ExtractError, Extracted};
use crate::index::{ChunkRow, ChunkStore};
use crate::{Corpus, Error, Result};

/// Why ingestion refused or failed; each maps to a stable error code.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("{0}")]
    InvalidSource(String),
    #[error("sources of kind {0} are announced but not yet available")]
    KindUnavailable(String),
    #[error("no source {0}")]
    SourceNotFound(String),
    #[error("no indexing job {0}")]
    JobNotFound(String),
    #[error("the source is disabled; enable it first")]
    SourceDisabled,
    #[error("this source is a {actual} source; {wanted}")]
    WrongKind { actual: String, wanted: String },
    #[error("{0}")]
    UnsupportedFile(String),
    #[error("{0}")]
    CorruptFile(String),
    /// A document past one of the extraction limits (nesting, elements,
    /// decompressed bytes, time): the message says which.
    #[error("the document is over a limit: {0}")]
    DocumentOverLimit(String),
    #[error("the file has no text to index")]
    EmptyFile,
    #[error("the file is larger than the limit of {limit_bytes} bytes")]
    FileTooLarge { limit_bytes: u64 },
    #[error("{0}")]
    PrivateAddress(String),
    #[error("{0}")]
    Fetch(String),
    #[error("changing the chunking of an indexed corpus re-embeds everything; repeat the request with the reindex acknowledgement to go ahead")]
    ReindexAcknowledgementRequired,
    #[error("{0}")]
    InvalidTuning(String),
    /// A git source's repository: unreachable, not a repository, no such
    /// branch, refused credentials, too large.
    #[error("{1}")]
    Git(git::GitProblem, String),
    /// A webhook call that proves no source's secret (an unknown source
    /// looks the same).
    #[error("the webhook call carries no valid secret or signature for this source")]
    WebhookRefused,
}

impl From<ExtractError> for IngestError {
    fn from(err: ExtractError) -> Self {
        match err {
            ExtractError::Unsupported(what) => {
                IngestError::UnsupportedFile(format!("unsupported file type: {what}"))
            }
            ExtractError::Corrupt(why) => IngestError::CorruptFile(format!("the file cannot be read: {why}")),
            ExtractError::Empty => IngestError::EmptyFile,
            ExtractError::OverLimit(why) => IngestError::DocumentOverLimit(why),
        }
    }
}

/// Counters of one run, as shown live.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// Documents found (pages listed or linked, files stored).
    pub discovered: u64,
    pub fetched: u64,
    pub extracted: u64,
    /// Chunks made from changed documents.
    pub chunked: u64,
    /// Chunks embedded and written.
    pub embedded: u64,
    /// Documents whose content had not changed (nothing re-embedded).
    pub unchanged: u64,
    pub failed: u64,
    /// Pages dropped as duplicates of another page (same canonical URL or text).
    pub duplicates: u64,
    /// Pages left out by robots.txt, scope or patterns.
    pub skipped: u64,
    /// Documents gone from the source, removed with their chunks.
    pub removed: u64,
    /// Documents finished (indexed, unchanged or failed).
    pub done: u64,
}

/// One per-document error of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentError {
    pub uri: String,
    pub error: String,
}

/// A new document row, `pending` and empty: the one shape every insert
/// starts from (a crawled page, a stored upload, a failure with no prior row).
pub(crate) fn new_document(
    id: &str,
    source_id: &str,
    uri: &str,
    title: &str,
    url: Option<String>,
) -> document::ActiveModel {
    document::ActiveModel {
        id: Set(id.to_owned()),
        source_id: Set(source_id.to_owned()),
        uri: Set(uri.to_owned()),
        title: Set(title.to_owned()),
        url: Set(url),
        content_hash: Set(None),
        text_hash: Set(None),
        etag: Set(None),
        last_modified: Set(None),
        lastmod: Set(None),
        chunk_count: Set(0),
        status: Set("pending".into()),
        error: Set(None),
        quarantined_hash: Set(None),
        last_job_id: Set(None),
        indexed_at: Set(None),
        updated_at: Set(Utc::now()),
    }
}

/// A document to be (re)indexed, with its row if it has one.
struct Changed {
    /// Its place in the batch.
    at: usize,
    hash: String,
    doc: Option<document::Model>,
}

/// Where a chunk's citation links to: its document's URL, with the anchor of
/// its innermost heading when the document's sections have anchors.
fn chunk_url(fetched: &Fetched, heading: Option<&str>) -> Option<String> {
    let url = fetched.url.as_deref()?;
    match heading.and_then(|path| path.rsplit(" › ").next()) {
        Some(innermost) if fetched.section_anchors => {
            Some(format!("{url}#{}", extract::heading_anchor(innermost)))
        }
        _ => Some(url.to_owned()),
    }
}

/// The title a document is indexed under: its own, else its URI.
fn title_of(fetched: &Fetched, extracted: &Extracted) -> String {
    extracted.title.clone().unwrap_or_else(|| fetched.uri.clone())
}

/// A document as fetched or read, before extraction.
#[derive(Clone, Debug, Default)]
pub struct Fetched {
    /// Identity within the source (file name, or canonical URL).
    pub uri: String,
    /// Where a citation links to.
    pub url: Option<String>,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub lastmod: Option<String>,
    /// The view of a table source this document is, when it holds only
    /// some of the row's attributes: its chunks are found by that view's
    /// readers only.
    pub view: Option<String>,
    /// Each chunk's citation links to its section: `url#anchor`, the
    /// anchor a forge gives the section's heading (a git source's files).
    pub section_anchors: bool,
}

/// What became of one document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Indexed {
        chunks: usize,
    },
    Unchanged,
    /// This run had already indexed it before a restart.
    AlreadyDone {
        chunks: usize,
    },
}

impl Outcome {
    /// Counts the outcome into the run's progress.
    pub fn count(self, progress: &jobs::ProgressHandle) {
        progress.add(|p| {
            p.done += 1;
            match self {
                Outcome::Indexed { .. } => {}
                Outcome::Unchanged => p.unchanged += 1,
                // Done before a restart: its chunks count toward this run again.
                Outcome::AlreadyDone { chunks } => p.embedded += chunks as u64,
            }
        });
    }
}

/// What a run needs to index documents: the models, the store, the rules.
#[derive(Clone)]
pub struct Indexer {
    pub lore: Corpus,
    pub embedder: Arc<dyn Embedder>,
    pub store: Arc<dyn ChunkStore>,
    pub chunking: ChunkingParams,
    pub job_id: String,
    /// Re-embed even when unchanged.
    pub full: bool,
    /// The document the job's previous attempt died extracting, if any.
    pub suspect: Option<jobs::InFlight>,
}

/// What reading (extracting) a document gave.
pub enum Reading {
    /// Quarantined with these very bytes: skipped, for this reason.
    Quarantined(String),
    Extracted(std::result::Result<Extracted, IngestError>),
}

/// SHA-256 over what decides the chunks and vectors of a document.
pub fn content_hash(extracted: &Extracted, model: &str, chunking: ChunkingParams) -> String {
    let mut hasher = Sha256::new();
    hasher.update(model.as_bytes());
    hasher.update(format!("|{}|{}|", chunking.max_tokens, chunking.overlap_tokens).as_bytes());
    hasher.update(extracted.title.as_deref().unwrap_or_default().as_bytes());
    for section in &extracted.sections {
        hasher.update([0]);
        hasher.update(section.heading.as_deref().unwrap_or_default().as_bytes());
        hasher.update([1]);
        hasher.update(section.text.as_bytes());
    }
    hex(&hasher.finalize())
}

/// SHA-256 of the extracted text alone: pages with equal text are duplicates.
pub fn text_hash(extracted: &Extracted) -> String {
    let mut hasher = Sha256::new();
    for section in &extracted.sections {
        hasher.update(section.text.as_bytes());
        hasher.update([0]);
    }
    hex(&hasher.finalize())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Stack of an extraction thread. The parsers keep their own stacks, so this
/// is room for the PDF library's recursion over a document's structure.
const EXTRACT_STACK_BYTES: usize = 64 * 1024 * 1024;

/// Documents a sync reads and extracts before it indexes them together: one
/// embedding call and one commit of the chunk store. Each commit of a large
/// store costs about the same whatever it holds (a replacing write joins
/// against every row), so a crawl or a git sync that commits one document at
/// a time is what makes changes at a million chunks slow.
pub const DOCUMENTS_PER_WRITE: usize = 16;

/// SHA-256 of a document's bytes as read: what a quarantine remembers.
pub fn bytes_hash(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Extracts on a thread of its own, within [`extract::Limits`]. The parsers
/// check the time budget as they go; the PDF library cannot, so the caller
/// stops waiting when the budget (and a grace second) is spent and the
/// document fails with that reason. A dedicated thread rather than
/// `spawn_blocking`: a runaway extraction must not hold up the runtime's
/// shutdown, and the stack size is ours to choose.
pub async fn extract_off_thread(fetched: &Fetched, name: &str) -> Result<Extracted, IngestError> {
    let limits = extract::Limits::default();
    let bytes = fetched.bytes.clone();
    let content_type = fetched.content_type.clone();
    let name = name.to_owned();
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("lore-extract".into())
        .stack_size(EXTRACT_STACK_BYTES)
        .spawn(move || {
            let extracted = extract::detect(&name, content_type.as_deref(), &bytes)
                .and_then(|format| extract::extract_within(format, &bytes, &name, &limits));
            // The receiver is gone only when the caller stopped waiting.
            let _ = done.send(extracted);
        })
        .map_err(|err| IngestError::CorruptFile(format!("no thread to read it on: {err}")))?;
    let budget = limits.time_budget + std::time::Duration::from_secs(1);
    match tokio::time::timeout(budget, result).await {
        Ok(Ok(extracted)) => extracted.map_err(IngestError::from),
        // The thread ended without an answer: the parser panicked.
        Ok(Err(_)) => Err(IngestError::CorruptFile("the reader failed on its structure".into())),
        Err(_) => {
            tracing::warn!(document = %fetched.uri, "an extraction ran past its time budget; it is abandoned");
            Err(IngestError::DocumentOverLimit(format!(
                "reading it took longer than {} s",
                limits.time_budget.as_secs()
            )))
        }
    }
}

impl Indexer {
    /// The document row of `uri` in `source_id`, if any.
    pub async fn existing(&self, source_id: &str, uri: &str) -> Result<Option<document::Model>> {
        Ok(document::Entity::find()
            .filter(document::Column::SourceId.eq(source_id))
            .filter(document::Column::Uri.eq(uri))
            .one(&self.lore.db)
            .await?)
    }

    /// Indexes one extracted document (see [`Indexer::index_documents`]).
    pub async fn index_document(
        &self,
        source_id: &str,
        fetched: &Fetched,
        extracted: &Extracted,
        progress: &jobs::ProgressHandle,
    ) -> Result<Outcome> {
        let mut outcomes = self.index_documents(source_id, &[(fetched, extracted)], progress).await?;
        outcomes.pop().ok_or_else(|| Error::Internal("a document was indexed without an outcome".into()))
    }

    /// Indexes extracted documents of `source_id`, each with its own URI:
    /// skips those unchanged, and chunks and embeds the others together,
    /// writes their chunks in one commit of the chunk store and then
    /// records their new hashes (and the unchanged ones as seen) in one
    /// transaction. A crash between the two leaves the old hashes, so the
    /// documents are simply done again: chunk ids are stable, nothing
    /// duplicates. Returns each one's outcome, in order; an error fails the
    /// whole batch (the caller may try its documents one by one to tell
    /// which failed).
    pub async fn index_documents(
        &self,
        source_id: &str,
        batch: &[(&Fetched, &Extracted)],
        progress: &jobs::ProgressHandle,
    ) -> Result<Vec<Outcome>> {
        let uris: Vec<String> = batch.iter().map(|(fetched, _)| fetched.uri.clone()).collect();
        let mut existing = self.existing_many(source_id, &uris).await?;
        let mut outcomes = Vec::with_capacity(batch.len());
        let mut unchanged = Vec::new();
        let mut changed = Vec::new();
        for (i, (fetched, extracted)) in batch.iter().enumerate() {
            let hash = content_hash(extracted, self.embedder.model(), self.chunking);
            let doc = existing.remove(&fetched.uri);
            if let Some(doc) = &doc {
                // A new citation URL (a table row's template over another
                // attribute, say) must reach the chunks too.
                let same = doc.content_hash.as_deref() == Some(hash.as_str())
                    && doc.status == "indexed"
                    && doc.url == fetched.url;
                if same && doc.last_job_id.as_deref() == Some(self.job_id.as_str()) {
                    outcomes.push(Outcome::AlreadyDone { chunks: doc.chunk_count as usize });
                    continue;
                }
                if same && !self.full {
                    outcomes.push(Outcome::Unchanged);
                    unchanged.push((doc.clone(), i));
                    continue;
                }
            }
            // Filled in once the chunks are written.
            outcomes.push(Outcome::Indexed { chunks: 0 });
            changed.push(Changed { at: i, hash, doc });
        }
        if changed.is_empty() {
            if !unchanged.is_empty() {
                let txn = crate::store::begin_write(&self.lore.db).await?;
                self.touch(&txn, &unchanged, batch).await?;
                txn.commit().await?;
            }
            return Ok(outcomes);
        }

        let embedder = self.embedder.clone();
        let sections: Vec<Vec<extract::Section>> =
            changed.iter().map(|c| batch[c.at].1.sections.clone()).collect();
        let chunking = self.chunking;
        let chunked = tokio::task::spawn_blocking(move || {
            sections
                .iter()
                .map(|sections| chunk_sections(sections, chunking, embedder.as_ref()))
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|err| Error::Internal(format!("chunking stopped: {err}")))?;
        let made: usize = chunked.iter().map(Vec::len).sum();

        // A changed document's chunks whose text is unchanged keep their
        // vectors (a full reindex embeds everything again).
        let replacing: Vec<String> =
            changed.iter().filter_map(|c| c.doc.as_ref().map(|d| d.id.clone())).collect();
        // Only vectors the configured model made: after a change of model
        // (the corpus fingerprint cleared or another), everything is new.
        let same_model = || async {
            let stamp = crate::fingerprint::stamped(&self.lore.db).await?;
            Ok::<bool, Error>(stamp.is_some_and(|stamp| stamp.embedding_model == self.embedder.model()))
        };
        let mut kept = if self.full || replacing.is_empty() || !same_model().await? {
            HashMap::new()
        } else {
            self.store.stored_vectors(&replacing).await?
        };
        kept.retain(|_, vector| vector.len() == self.embedder.dimensions());
        let hashes: Vec<String> =
            chunked.iter().flatten().map(|c| hex(&Sha256::digest(c.embed_text.as_bytes()))).collect();
        let texts: Vec<String> = chunked
            .iter()
            .flatten()
            .zip(&hashes)
            .filter(|(_, hash)| !kept.contains_key(*hash))
            .map(|(c, _)| c.embed_text.clone())
            .collect();
        let embedded_now = texts.len();
        let mut fresh_vectors = self.embedder.embed(&texts).await?.into_iter();
        // Each chunk in order, with its hash and its vector, kept or new.
        let mut hashes = hashes.into_iter();
        let mut vectors = std::iter::from_fn(move || {
            let hash = hashes.next()?;
            let vector = match kept.get(&hash) {
                Some(vector) => vector.clone(),
                None => fresh_vectors.next()?,
            };
            Some((hash, vector))
        });
        let mut rows = Vec::with_capacity(made);
        let mut ids = Vec::with_capacity(changed.len());
        let mut replaced = Vec::new();
        let mut fresh = Vec::new();
        for (change, chunks) in changed.iter().zip(&chunked) {
            let (fetched, extracted) = batch[change.at];
            let title = title_of(fetched, extracted);
            let document_id = match &change.doc {
                Some(doc) => {
                    replaced.push(doc.id.clone());
                    doc.id.clone()
                }
                None => {
                    let id = uuid::Uuid::new_v4().to_string();
                    fresh.push(new_document(&id, source_id, &fetched.uri, &title, fetched.url.clone()));
                    id
                }
            };
            for chunk in chunks {
                let (content_hash, vector) = vectors.next().ok_or_else(|| {
                    Error::Internal("the embedder returned fewer vectors than texts".into())
                })?;
                rows.push(ChunkRow {
                    id: format!("{document_id}:{}", chunk.position),
                    source_id: source_id.to_owned(),
                    view: fetched.view.clone(),
                    document_id: document_id.clone(),
                    title: title.clone(),
                    url: chunk_url(fetched, chunk.heading.as_deref()),
                    heading: chunk.heading.clone(),
                    position: chunk.position as u32,
                    text: chunk.text.clone(),
                    content_hash,
                    vector,
                });
            }
            ids.push(document_id);
        }
        // The document rows must exist before their chunks can be found by them.
        if !fresh.is_empty() {
            document::Entity::insert_many(fresh).exec_without_returning(&self.lore.db).await?;
        }
        self.store.write_documents(&replaced, rows).await?;

        let txn = crate::store::begin_write(&self.lore.db).await?;
        for ((change, chunks), id) in changed.iter().zip(&chunked).zip(ids) {
            let (fetched, extracted) = batch[change.at];
            let mut row: document::ActiveModel = match &change.doc {
                Some(doc) => doc.clone().into(),
                None => {
                    document::ActiveModel { id: sea_orm::ActiveValue::Unchanged(id), ..Default::default() }
                }
            };
            row.title = Set(title_of(fetched, extracted));
            row.url = Set(fetched.url.clone());
            row.content_hash = Set(Some(change.hash.clone()));
            row.text_hash = Set(Some(text_hash(extracted)));
            row.etag = Set(fetched.etag.clone());
            row.last_modified = Set(fetched.last_modified.clone());
            row.lastmod = Set(fetched.lastmod.clone());
            row.chunk_count = Set(chunks.len() as i32);
            row.status = Set("indexed".into());
            row.quarantined_hash = Set(None);
            row.error = Set(None);
            row.last_job_id = Set(Some(self.job_id.clone()));
            row.indexed_at = Set(Some(Utc::now()));
            row.updated_at = Set(Utc::now());
            row.update(&txn).await?;
            outcomes[change.at] = Outcome::Indexed { chunks: chunks.len() };
        }
        self.touch(&txn, &unchanged, batch).await?;
        txn.commit().await?;
        crate::upkeep::merge_when_due(&self.lore, self.store.as_ref()).await?;
        // Counted once the batch is done: a batch that fails and is tried
        // again a document at a time is not counted twice.
        progress.add(|p| {
            p.chunked += made as u64;
            p.embedded += embedded_now as u64;
        });
        Ok(outcomes)
    }

    /// The document rows of `uris` in `source_id`, by URI.
    async fn existing_many(
        &self,
        source_id: &str,
        uris: &[String],
    ) -> Result<HashMap<String, document::Model>> {
        let mut found = HashMap::with_capacity(uris.len());
        // Well under any database's limit of bound values per statement.
        for part in uris.chunks(500) {
            let rows = document::Entity::find()
                .filter(document::Column::SourceId.eq(source_id))
                .filter(document::Column::Uri.is_in(part.iter().cloned()))
                .all(&self.lore.db)
                .await?;
            found.extend(rows.into_iter().map(|doc| (doc.uri.clone(), doc)));
        }
        Ok(found)
    }

    /// Marks unchanged documents (each with its place in `batch`) as seen
    /// by this run, validators refreshed, in transaction `txn`.
    async fn touch(
        &self,
        txn: &sea_orm::DatabaseTransaction,
        unchanged: &[(document::Model, usize)],
        batch: &[(&Fetched, &Extracted)],
    ) -> Result<()> {
        for (doc, at) in unchanged {
            let (fetched, extracted) = batch[*at];
            let mut row: document::ActiveModel = doc.clone().into();
            if let Some(title) = &extracted.title {
                row.title = Set(title.clone());
            }
            row.text_hash = Set(Some(text_hash(extracted)));
            row.etag = Set(fetched.etag.clone());
            row.last_modified = Set(fetched.last_modified.clone());
            row.lastmod = Set(fetched.lastmod.clone());
            row.error = Set(None);
            row.last_job_id = Set(Some(self.job_id.clone()));
            row.updated_at = Set(Utc::now());
            row.update(txn).await?;
        }
        Ok(())
    }

    /// Indexes a batch of documents together (one embedding call, one write
    /// of the chunk store), counting each outcome. When the embedder refuses
    /// the batch, its documents are tried one by one, so a document it
    /// cannot embed fails alone and is recorded; any other error (the
    /// database, the chunk store) fails the run, as it would fail each
    /// document alone.
    pub async fn index_batch(
        &self,
        source_id: &str,
        documents: &[(Fetched, Extracted)],
        progress: &jobs::ProgressHandle,
    ) -> Result<()> {
        let batch: Vec<(&Fetched, &Extracted)> = documents.iter().map(|(f, e)| (f, e)).collect();
        match self.index_documents(source_id, &batch, progress).await {
            Ok(outcomes) => {
                outcomes.into_iter().for_each(|outcome| outcome.count(progress));
                return Ok(());
            }
            Err(Error::Embedding(err)) => {
                tracing::warn!(source = %source_id, error = %err, "the embedder refused a batch of documents; trying them one by one")
            }
            Err(other) => return Err(other),
        }
        for (fetched, extracted) in documents {
            match self.index_document(source_id, fetched, extracted, progress).await {
                Ok(outcome) => outcome.count(progress),
                Err(err) => {
                    self.record_failure(source_id, &fetched.uri, fetched.url.as_deref(), &err.to_string())
                        .await?;
                    progress.error(&fetched.uri, &err.to_string());
                }
            }
        }
        Ok(())
    }

    /// Marks an existing, unchanged document as seen without fetching it (a
    /// sitemap lastmod or an HTTP 304 said it did not change).
    pub async fn mark_unchanged(&self, doc: &document::Model) -> Result<Outcome> {
        if doc.last_job_id.as_deref() == Some(self.job_id.as_str()) {
            return Ok(Outcome::AlreadyDone { chunks: 0 });
        }
        let mut row: document::ActiveModel = doc.clone().into();
        row.last_job_id = Set(Some(self.job_id.clone()));
        row.error = Set(None);
        row.updated_at = Set(Utc::now());
        row.update(&self.lore.db).await?;
        Ok(Outcome::Unchanged)
    }

    /// Extracts a document on its thread (see [`extract_off_thread`]),
    /// unless it is quarantined with these very bytes (a full reindex tries
    /// it again, in its first attempt that meets it). For the time of the extraction the document is
    /// recorded on the job, so that a process that dies extracting it, twice,
    /// quarantines it rather than dying on it forever.
    pub async fn read(&self, source_id: &str, fetched: &Fetched, name: &str) -> Result<Reading> {
        let hash = bytes_hash(&fetched.bytes);
        if let Some(doc) = self.existing(source_id, &fetched.uri).await? {
            // A full reindex tries a quarantined document again, once: a
            // later attempt of the same job (which quarantined it, or skipped
            // it already) does not, or one document could fail the job.
            let full_retry_due = self.full && doc.last_job_id.as_deref() != Some(self.job_id.as_str());
            if doc.quarantined_hash.as_deref() == Some(hash.as_str()) && !full_retry_due {
                let reason = doc.error.clone().unwrap_or_else(|| jobs::QUARANTINE_REASON.to_owned());
                // Seen by this run, so it is not removed as gone.
                let mut row: document::ActiveModel = doc.into();
                row.last_job_id = Set(Some(self.job_id.clone()));
                row.update(&self.lore.db).await?;
                return Ok(Reading::Quarantined(reason));
            }
        }
        let mut reading =
            jobs::InFlight { source_id: source_id.to_owned(), uri: fetched.uri.clone(), hash, deaths: 0 };
        if let Some(suspect) = self.suspect.as_ref().filter(|suspect| suspect.same_as(&reading)) {
            reading.deaths = suspect.deaths;
        }
        jobs::mark_in_flight(&self.lore, &self.job_id, Some(&reading)).await?;
        let extracted = extract_off_thread(fetched, name).await;
        jobs::mark_in_flight(&self.lore, &self.job_id, None).await?;
        Ok(Reading::Extracted(extracted))
    }

    /// Records a per-document failure. Earlier chunks of the document stay
    /// searchable: a failed fetch or parse loses nothing.
    pub async fn record_failure(
        &self,
        source_id: &str,
        uri: &str,
        url: Option<&str>,
        error: &str,
    ) -> Result<()> {
        match self.existing(source_id, uri).await? {
            Some(doc) => {
                let had_content = doc.chunk_count > 0;
                let mut row: document::ActiveModel = doc.into();
                row.error = Set(Some(error.to_owned()));
                if !had_content {
                    row.status = Set("failed".into());
                }
                row.last_job_id = Set(Some(self.job_id.clone()));
                row.updated_at = Set(Utc::now());
                row.update(&self.lore.db).await?;
            }
            None => {
                let mut row = new_document(
                    &uuid::Uuid::new_v4().to_string(),
                    source_id,
                    uri,
                    uri,
                    url.map(str::to_owned),
                );
                row.status = Set("failed".into());
                row.error = Set(Some(error.to_owned()));
                row.last_job_id = Set(Some(self.job_id.clone()));
                row.insert(&self.lore.db).await?;
            }
        }
        Ok(())
    }

    /// Gives the document at `from` the identity `to` (a renamed file), when
    /// there is one at `from` and none at `to`: indexed next under its new
    /// name, it keeps the vectors of the chunks the rename left alone.
    pub async fn rename_document(&self, source_id: &str, from: &str, to: &str) -> Result<()> {
        let Some(doc) = self.existing(source_id, from).await? else { return Ok(()) };
        if self.existing(source_id, to).await?.is_some() {
            return Ok(());
        }
        let mut row: document::ActiveModel = doc.into();
        row.uri = Set(to.to_owned());
        row.updated_at = Set(Utc::now());
        row.update(&self.lore.db).await?;
        Ok(())
    }

    /// Removes the documents of `source_id` this run did not see (pages gone
    /// from the site), chunks first. Returns how many went.
    pub async fn remove_unseen(&self, source_id: &str) -> Result<u64> {
        let stale = document::Entity::find()
            .filter(document::Column::SourceId.eq(source_id))
            .all(&self.lore.db)
            .await?
            .into_iter()
            .filter(|doc| doc.last_job_id.as_deref() != Some(self.job_id.as_str()))
            .collect();
        self.remove_documents(stale).await
    }

    /// Removes these documents, their chunks first. Returns how many went.
    pub async fn remove_documents(&self, documents: Vec<document::Model>) -> Result<u64> {
        self.remove_document_ids(documents.into_iter().map(|doc| doc.id).collect()).await
    }

    /// Removes the documents with these ids, their chunks first, a few
    /// hundred to a write. Returns how many went.
    pub async fn remove_document_ids(&self, ids: Vec<String>) -> Result<u64> {
        let mut removed = 0;
        for part in ids.chunks(500) {
            self.store.write_documents(part, Vec::new()).await?;
            let deleted = document::Entity::delete_many()
                .filter(document::Column::Id.is_in(part.iter().cloned()))
                .exec(&self.lore.db)
                .await?;
            removed += deleted.rows_affected;
        }
        Ok(removed)
    }
}
