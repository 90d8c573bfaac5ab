//! Knowledge sources as admin records, and their lifecycle.
//!
//! A source has two independent axes:
//! - `enabled`: an admin's switch. A disabled source is not synced, not
//!   scheduled and not searched, but keeps its documents and chunks, so
//!   enabling it again makes its content searchable at once, with nothing
//!   re-embedded.
//! - `status`: where its content stands, moved by indexing runs:
//!   `empty` (created, nothing indexed) → `queued` (a run waits) →
//!   `indexing` (a run holds it) → `ready` (the last run succeeded) or
//!   `failed` (the last run failed as a whole; earlier content is kept).
//!   A run that fails for some documents but not all still ends `ready`,
//!   with the per-document errors on the job and the documents.
//!
//! Deleting a source removes its chunks, documents, jobs and stored files.

use std::time::Duration;

use chrono::{DateTime, Utc};
use entity::{document, index_job, source};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};

use crate::audit::{self, Actor};
use crate::index::Scope;
use crate::ingest::IngestError;
use crate::{Corpus, Error, Result};

pub mod audience;
pub mod connector;
pub mod kinds;

pub use audience::{Audience, Reader};
pub use connector::{SourceConfig, SourceKind};

/// How fast a source's content goes stale; sets the re-sync interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Volatility {
    /// Never re-synced on its own (uploads).
    Static,
    /// Weekly.
    Low,
    /// Daily.
    #[default]
    Medium,
    /// Hourly.
    High,
}

impl Volatility {
    pub fn key(self) -> &'static str {
        match self {
            Volatility::Static => "static",
            Volatility::Low => "low",
            Volatility::Medium => "medium",
            Volatility::High => "high",
        }
    }

    pub fn parse(raw: &str) -> Result<Self, IngestError> {
        match raw {
            "static" => Ok(Volatility::Static),
            "low" => Ok(Volatility::Low),
            "medium" => Ok(Volatility::Medium),
            "high" => Ok(Volatility::High),
            other => Err(IngestError::InvalidSource(format!(
                "unknown volatility {other:?}; use static, low, medium or high"
            ))),
        }
    }

    /// Time between scheduled re-syncs (`None`: never).
    pub fn resync_interval(self) -> Option<Duration> {
        match self {
            Volatility::Static => None,
            Volatility::Low => Some(Duration::from_secs(7 * 24 * 3600)),
            Volatility::Medium => Some(Duration::from_secs(24 * 3600)),
            Volatility::High => Some(Duration::from_secs(3600)),
        }
    }
}

/// What an admin gives to create a source.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewSource {
    pub name: String,
    pub kind: String,
    #[serde(default)]
    pub config: Option<serde_json::Value>,
    #[serde(default)]
    pub volatility: Option<String>,
    /// Who may read it, as [`Audience::parse`] reads it (`None`: the
    /// kind's default).
    #[serde(default)]
    pub audience: Option<String>,
}

/// Where a source's content stands, moved by indexing runs (see the module
/// documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceStatus {
    Empty,
    Queued,
    Indexing,
    Ready,
    Failed,
}

impl SourceStatus {
    pub fn key(self) -> &'static str {
        match self {
            SourceStatus::Empty => "empty",
            SourceStatus::Queued => "queued",
            SourceStatus::Indexing => "indexing",
            SourceStatus::Ready => "ready",
            SourceStatus::Failed => "failed",
        }
    }

    fn parse(raw: &str) -> Option<Self> {
        [Self::Empty, Self::Queued, Self::Indexing, Self::Ready, Self::Failed]
            .into_iter()
            .find(|status| status.key() == raw)
    }
}

/// A source as every surface sees it: its row with the kind, status,
/// volatility and configuration decoded once, here. A stored value that
/// cannot be read is an error naming the source, never a default.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    pub id: String,
    pub name: String,
    pub kind: SourceKind,
    /// An admin's switch: a disabled source is neither synced nor searched.
    pub enabled: bool,
    pub status: SourceStatus,
    pub config: SourceConfig,
    pub volatility: Volatility,
    pub document_count: u32,
    pub chunk_count: u32,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// When the last run finished successfully (freshness).
    pub last_synced_at: Option<DateTime<Utc>>,
    /// When the scheduler starts the next re-sync (`None`: never).
    pub next_sync_at: Option<DateTime<Utc>>,
    /// Who may read its content through answers and retrieval.
    pub audience: Audience,
    /// Where the kind's last completed sync left off, as only that kind
    /// reads it (a git source's indexed commit: [`kinds::git::GitState`]).
    pub sync_state: Option<serde_json::Value>,
}

impl Source {
    /// One line on where its last completed sync left off (a git source's
    /// commit), for the Sources screen; `None` for kinds that keep no state.
    pub fn sync_summary(&self) -> Option<String> {
        self.kind.connector().state_summary(self.sync_state.as_ref()?)
    }

    /// The table this source copies, when its kind mirrors one.
    pub fn mirrored_table(&self) -> Option<audience::MirroredTable> {
        self.kind.connector().mirrored_table(&self.config)
    }

    pub(crate) fn decode(row: source::Model) -> Result<Source> {
        let corrupt = |what: String| Error::Internal(format!("source {}: {what}", row.id));
        let kind = SourceKind::parse(&row.kind)
            .map_err(|_| corrupt(format!("its stored kind {:?} is unknown", row.kind)))?;
        let status = SourceStatus::parse(&row.status)
            .ok_or_else(|| corrupt(format!("its stored status {:?} is unknown", row.status)))?;
        let volatility = Volatility::parse(&row.volatility)
            .map_err(|_| corrupt(format!("its stored volatility {:?} is unknown", row.volatility)))?;
        let config = kind
            .connector()
            .decode(row.config.clone())
            .map_err(|err| corrupt(format!("its stored configuration cannot be read: {err}")))?;
        let audience = match &row.audience {
            Some(stored) => serde_json::from_value(stored.clone())
                .map_err(|err| corrupt(format!("its stored audience cannot be read: {err}")))?,
            None => Audience::default_for(kind.connector().mirrored_table(&config).is_some()),
        };
        let count = |n: i32, what: &str| {
            u32::try_from(n).map_err(|_| corrupt(format!("its stored {what} {n} is negative")))
        };
        Ok(Source {
            document_count: count(row.document_count, "document count")?,
            chunk_count: count(row.chunk_count, "chunk count")?,
            id: row.id,
            name: row.name,
            kind,
            enabled: row.enabled,
            status,
            config,
            volatility,
            last_error: row.last_error,
            created_at: row.created_at,
            updated_at: row.updated_at,
            last_synced_at: row.last_synced_at,
            next_sync_at: row.next_sync_at,
            audience,
            sync_state: row.sync_state,
        })
    }
}

/// Where a document stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocumentStatus {
    /// Stored, waiting for its run.
    Pending,
    Indexed,
    Failed,
    /// A process died while reading it: skipped until its bytes change.
    Quarantined,
}

impl DocumentStatus {
    pub fn key(self) -> &'static str {
        match self {
            DocumentStatus::Pending => "pending",
            DocumentStatus::Indexed => "indexed",
            DocumentStatus::Failed => "failed",
            DocumentStatus::Quarantined => "quarantined",
        }
    }

    fn parse(raw: &str) -> Option<Self> {
        [Self::Pending, Self::Indexed, Self::Failed, Self::Quarantined]
            .into_iter()
            .find(|status| status.key() == raw)
    }
}

/// One file or page of a source, as every surface lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    pub id: String,
    pub source_id: String,
    /// Identity within the source: the file name, or the page's canonical URL.
    pub uri: String,
    pub title: String,
    /// Where a citation links to (pages only).
    pub url: Option<String>,
    pub status: DocumentStatus,
    pub chunk_count: u32,
    pub error: Option<String>,
    /// SHA-256 of the bytes a process died reading; set only while quarantined.
    pub quarantined_hash: Option<String>,
    pub indexed_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

impl Document {
    pub(crate) fn decode(row: document::Model) -> Result<Document> {
        let corrupt = |what: String| Error::Internal(format!("document {}: {what}", row.id));
        let status = DocumentStatus::parse(&row.status)
            .ok_or_else(|| corrupt(format!("its stored status {:?} is unknown", row.status)))?;
        let chunk_count = u32::try_from(row.chunk_count)
            .map_err(|_| corrupt(format!("its stored chunk count {} is negative", row.chunk_count)))?;
        Ok(Document {
            id: row.id,
            source_id: row.source_id,
            uri: row.uri,
            title: row.title,
            url: row.url,
            status,
            chunk_count,
            error: row.error,
            quarantined_hash: row.quarantined_hash,
            indexed_at: row.indexed_at,
            updated_at: row.updated_at,
        })
    }
}

/// Creates a source: its kind's connector checks the configuration, then
/// the row is stored. Nothing is fetched yet: a kind synced at once gets its
/// first run from [`crate::ingest::lifecycle::add_source`], an upload source
/// waits for files.
pub async fn create(lore: &Corpus, actor: &Actor, new: NewSource) -> Result<Source> {
    let name = new.name.trim();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(IngestError::InvalidSource("a source needs a name of 1 to 200 characters".into()).into());
    }
    let kind = SourceKind::parse(new.kind.trim())?;
    if !kind.info().available {
        return Err(IngestError::KindUnavailable(kind.key().to_owned()).into());
    }
    let config = kind.connector().parse(new.config.clone())?;
    kind.connector().check(lore, &config).await?;
    let volatility = match &new.volatility {
        Some(raw) => Volatility::parse(raw.trim())?,
        None => kind.info().default_volatility,
    };
    let mirrors_table = kind.connector().mirrored_table(&config).is_some();
    let audience = new.audience.as_deref().map(Audience::parse).transpose()?;
    if let Some(audience) = &audience {
        audience::check(lore, audience, mirrors_table).await?;
    }
    let now = Utc::now();
    let row = source::ActiveModel {
        id: Set(uuid::Uuid::new_v4().to_string()),
        name: Set(name.to_owned()),
        kind: Set(kind.key().to_owned()),
        enabled: Set(true),
        status: Set("empty".to_owned()),
        config: Set(config.to_json()),
        volatility: Set(volatility.key().to_owned()),
        document_count: Set(0),
        chunk_count: Set(0),
        last_error: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
        last_synced_at: Set(None),
        next_sync_at: Set(None),
        audience: Set(audience.as_ref().map(stored_audience).transpose()?),
        sync_state: Set(None),
    }
    .insert(&lore.db)
    .await?;
    audit::record(&lore.db, actor, "source.create", Some(&row.id), serde_json::json!({"kind": row.kind}))
        .await?;
    Source::decode(row)
}

/// Every source, oldest first.
pub async fn list(lore: &Corpus) -> Result<Vec<Source>> {
    source::Entity::find()
        .order_by_asc(source::Column::CreatedAt)
        .all(&lore.db)
        .await?
        .into_iter()
        .map(Source::decode)
        .collect()
}

pub async fn get(lore: &Corpus, id: &str) -> Result<Source> {
    Source::decode(row(lore, id).await?)
}

/// The stored row, for the engine's own writes.
pub(crate) async fn row(lore: &Corpus, id: &str) -> Result<source::Model> {
    source::Entity::find_by_id(id.to_owned())
        .one(&lore.db)
        .await?
        .ok_or_else(|| IngestError::SourceNotFound(id.to_owned()).into())
}

/// Finds a source by id, or else by its exact name (for the CLI).
pub async fn find(lore: &Corpus, id_or_name: &str) -> Result<Source> {
    if let Some(found) = source::Entity::find_by_id(id_or_name.to_owned()).one(&lore.db).await? {
        return Source::decode(found);
    }
    let found = source::Entity::find()
        .filter(source::Column::Name.eq(id_or_name))
        .one(&lore.db)
        .await?
        .ok_or_else(|| IngestError::SourceNotFound(id_or_name.to_owned()))?;
    Source::decode(found)
}

/// Every source, enabled or not, whole: the corpus diagnostic's reach. A
/// disabled source keeps its chunks, so they are searched too; the views
/// of table sources repeat what the whole source holds, so they are not.
pub async fn whole_corpus(lore: &Corpus) -> Result<Scope> {
    let every = list(lore).await?;
    let views_possible = every.iter().any(|s| s.mirrored_table().is_some());
    Ok(Scope { every_source: !views_possible, sources: every.into_iter().map(|s| s.id).collect() })
}

/// Sets who may read a source (`audience` as [`Audience::parse`] reads
/// it); the next request reads with it (nothing is re-indexed). Refused,
/// with nothing changed, for a role that does not exist or `table` on a
/// source that mirrors no table.
pub async fn set_audience(lore: &Corpus, actor: &Actor, id: &str, audience: &str) -> Result<Source> {
    let audience = Audience::parse(audience)?;
    let stored = row(lore, id).await?;
    let found = Source::decode(stored.clone())?;
    audience::check(lore, &audience, found.mirrored_table().is_some()).await?;
    if found.audience == audience {
        return Ok(found);
    }
    let mut row: source::ActiveModel = stored.into();
    row.audience = Set(Some(stored_audience(&audience)?));
    row.updated_at = Set(Utc::now());
    let updated = Source::decode(row.update(&lore.db).await?)?;
    audit::record(
        &lore.db,
        actor,
        "source.audience",
        Some(id),
        serde_json::json!({"from": found.audience.to_string(), "to": audience.to_string()}),
    )
    .await?;
    // A table source builds its views under the `table` audience only:
    // its next sync builds or removes them. Who reads what follows the new
    // audience at once (a view not yet built reads as nothing).
    if updated.enabled && updated.mirrored_table().is_some() {
        audience::requeue(lore, &updated.id).await;
    }
    Ok(updated)
}

fn stored_audience(audience: &Audience) -> Result<serde_json::Value> {
    serde_json::to_value(audience).map_err(|err| Error::Internal(format!("an audience as JSON: {err}")))
}

/// The sources whose audience names `role`, by name: what dropping the role
/// would leave pointing at nothing.
pub async fn naming_role(lore: &Corpus, role: &str) -> Result<Vec<String>> {
    Ok(list(lore)
        .await?
        .into_iter()
        .filter(|s| matches!(&s.audience, Audience::Roles(roles) if roles.iter().any(|r| r == role)))
        .map(|s| s.name)
        .collect())
}

/// Enables or disables a source. Disabling also cancels its queued runs and
/// its schedule; enabling re-arms the schedule. Chunks are never touched.
pub async fn set_enabled(lore: &Corpus, actor: &Actor, id: &str, enabled: bool) -> Result<Source> {
    let stored = row(lore, id).await?;
    let found = Source::decode(stored.clone())?;
    if found.enabled == enabled {
        return Ok(found);
    }
    let next_sync = if enabled { next_sync_after(&Source { enabled, ..found }, Utc::now()) } else { None };
    let mut row: source::ActiveModel = stored.into();
    row.enabled = Set(enabled);
    row.next_sync_at = Set(next_sync);
    row.updated_at = Set(Utc::now());
    let updated = Source::decode(row.update(&lore.db).await?)?;
    if !enabled {
        crate::ingest::jobs::cancel_queued(lore, id).await?;
    }
    let action = if enabled { "source.enable" } else { "source.disable" };
    audit::record(&lore.db, actor, action, Some(id), serde_json::json!({})).await?;
    Ok(updated)
}

/// Sets how often a source's content changes: it paces re-syncs and scales
/// the semantic cache's maximum age for answers citing it.
pub async fn set_volatility(lore: &Corpus, actor: &Actor, id: &str, volatility: &str) -> Result<Source> {
    let volatility = Volatility::parse(volatility)?;
    let stored = row(lore, id).await?;
    let found = Source::decode(stored.clone())?;
    if found.volatility == volatility {
        return Ok(found);
    }
    let next_sync = next_sync_after(&Source { volatility, ..found }, Utc::now());
    let mut row: source::ActiveModel = stored.into();
    row.volatility = Set(volatility.key().to_owned());
    row.next_sync_at = Set(next_sync);
    row.updated_at = Set(Utc::now());
    let updated = Source::decode(row.update(&lore.db).await?)?;
    audit::record(
        &lore.db,
        actor,
        "source.volatility",
        Some(id),
        serde_json::json!({"volatility": volatility.key()}),
    )
    .await?;
    Ok(updated)
}

/// Records where a sync of `id` left off, once it has completed: the next
/// sync of its kind starts from there. A sync that fails or is cut short
/// never calls this, so its source keeps the state of the last one that
/// completed.
pub async fn record_sync_state(lore: &Corpus, id: &str, state: serde_json::Value) -> Result<()> {
    let mut row: source::ActiveModel = row(lore, id).await?.into();
    row.sync_state = Set(Some(state));
    row.update(&lore.db).await?;
    Ok(())
}

/// When the scheduler should next re-sync `source`, counted from `from`.
pub fn next_sync_after(source: &Source, from: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if !source.kind.info().resyncs || !source.enabled {
        return None;
    }
    let interval = source.volatility.resync_interval()?;
    chrono::Duration::from_std(interval).ok().map(|step| from + step)
}

/// Whether the content is within its volatility's re-sync interval.
pub fn is_fresh(source: &Source, now: DateTime<Utc>) -> Option<bool> {
    let synced = source.last_synced_at?;
    let interval = source.volatility.resync_interval();
    Some(match interval.and_then(|i| chrono::Duration::from_std(i).ok()) {
        None => true,
        Some(step) => now - synced <= step,
    })
}

/// Deletes a source with its chunks, documents, jobs and stored files. The
/// chunks go first: if that fails, nothing else has changed.
pub async fn delete(lore: &Corpus, actor: &Actor, id: &str) -> Result<()> {
    let found = row(lore, id).await?;
    crate::ingest::jobs::cancel_queued(lore, id).await?;
    let chunks = lore.chunks().await?;
    chunks.delete_source(id).await?;
    // Documents and jobs go with the row (foreign keys cascade).
    index_job::Entity::delete_many().filter(index_job::Column::SourceId.eq(id)).exec(&lore.db).await?;
    document::Entity::delete_many().filter(document::Column::SourceId.eq(id)).exec(&lore.db).await?;
    source::Entity::delete_by_id(id.to_owned()).exec(&lore.db).await?;
    // Again, now that the row is gone: a run indexing this source may have
    // written a page since the first removal, and it only cleans up after
    // itself when it finds the row gone (`jobs::remove_deleted`).
    chunks.delete_source(id).await?;
    crate::ingest::upload::remove_all(lore, id).await?;
    crate::ingest::git::remove_mirror(lore, id).await?;
    audit::record(&lore.db, actor, "source.delete", Some(id), serde_json::json!({"name": found.name}))
        .await?;
    Ok(())
}

/// The documents of a source, failed ones first.
pub async fn documents(lore: &Corpus, id: &str) -> Result<Vec<Document>> {
    row(lore, id).await?;
    let mut docs = document::Entity::find()
        .filter(document::Column::SourceId.eq(id))
        .order_by_asc(document::Column::Uri)
        .all(&lore.db)
        .await?
        .into_iter()
        .map(Document::decode)
        .collect::<Result<Vec<_>>>()?;
    docs.sort_by_key(|d| d.status != DocumentStatus::Failed);
    Ok(docs)
}
