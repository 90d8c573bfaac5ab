//! Indexing jobs: one persisted row per run, moved through
//! `queued → running → succeeded | failed | cancelled`.
//!
//! A worker claims a queued job under the cluster's jobs lock (see
//! [`crate::store::Lock`]: one claim at a time across every replica, so a
//! claim sees every running job it would overlap) with a conditional update
//! (only one claimer wins) and keeps a heartbeat while it runs,
//! writing the live progress with it. A job whose heartbeat is older than the
//! lease (`ingest.job_lease_seconds`) belonged to a process that died: it is
//! queued again and the next run resumes it. Resuming is safe because every
//! document is replaced whole and remembers the job that last indexed it, so
//! the resumed run skips what it had already done and nothing duplicates.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use entity::{document, index_job, source};
use sea_orm::sea_query::{Expr, LockBehavior, LockType};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect, Set,
};

use super::{DocumentError, Indexer, IngestError, Progress};

use crate::fingerprint::{self, Fingerprint};
use crate::index::ChunkStore;
use crate::sources::connector::Run;
use crate::sources::{self, Source, SourceStatus};
use crate::{Corpus, Error, Result};

pub const QUEUED: &str = "queued";
pub const RUNNING: &str = "running";
pub const SUCCEEDED: &str = "succeeded";
pub const FAILED: &str = "failed";
pub const CANCELLED: &str = "cancelled";

/// At most this many per-document errors are kept on a job.
const MAX_ERRORS: usize = 200;

/// A job whose process died this many times is not started again: it ends
/// `failed`. A document being read at two deaths is quarantined, so each
/// document that kills the process costs two attempts, not every attempt.
pub const MAX_ATTEMPTS: i32 = 5;

/// Why a quarantined document is skipped, as the Sources screen shows it.
pub const QUARANTINE_REASON: &str = "Lore's indexing process stopped twice while reading this document, so it is set aside (quarantined) and skipped until its content changes; a full reindex tries it again";

/// The document a run is extracting, recorded on its job for that time.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InFlight {
    pub source_id: String,
    pub uri: String,
    /// SHA-256 of its bytes (see [`super::bytes_hash`]).
    pub hash: String,
    /// Earlier attempts whose process died while extracting it. One death
    /// makes it a suspect (a process also dies of a deploy or an admin's
    /// `kill`); a second death on the same bytes quarantines it.
    #[serde(default)]
    pub deaths: u32,
}

impl InFlight {
    /// The same document with the same bytes.
    pub fn same_as(&self, other: &InFlight) -> bool {
        self.source_id == other.source_id && self.uri == other.uri && self.hash == other.hash
    }
}

/// Called with the run's progress on every change (a progress bar, a benchmark).
pub type Observer = Arc<dyn Fn(&Progress) + Send + Sync>;

/// The live counters of a run, shared by its tasks; an observer (the CLI's
/// progress bar) sees every change.
#[derive(Clone, Default)]
pub struct ProgressHandle {
    state: Arc<Mutex<(Progress, Vec<DocumentError>)>>,
    observer: Option<Observer>,
}

impl ProgressHandle {
    pub fn new(start: Progress, errors: Vec<DocumentError>, observer: Option<Observer>) -> Self {
        Self { state: Arc::new(Mutex::new((start, errors))), observer }
    }

    pub fn add(&self, change: impl FnOnce(&mut Progress)) {
        let snapshot = match self.state.lock() {
            Ok(mut guard) => {
                change(&mut guard.0);
                guard.0.clone()
            }
            Err(_) => return,
        };
        if let Some(observer) = &self.observer {
            observer(&snapshot);
        }
    }

    pub fn error(&self, uri: &str, error: &str) {
        if let Ok(mut guard) = self.state.lock() {
            guard.0.failed += 1;
            guard.0.done += 1;
            if guard.1.len() < MAX_ERRORS {
                guard.1.push(DocumentError { uri: uri.to_owned(), error: error.to_owned() });
            }
        }
        self.add(|_| {});
    }

    pub fn snapshot(&self) -> (Progress, Vec<DocumentError>) {
        self.state.lock().map(|guard| guard.clone()).unwrap_or_default()
    }
}

/// Queues a run. A run already queued for the same scope is reused rather
/// than doubled. `source_id = None` with `full` is a full reindex.
pub async fn enqueue(
    lore: &Corpus,
    source_id: Option<&str>,
    full: bool,
    trigger: &str,
) -> Result<index_job::Model> {
    if let Some(id) = source_id {
        let found = sources::get(lore, id).await?;
        if !found.enabled {
            return Err(IngestError::SourceDisabled.into());
        }
    }
    // Looked for and inserted under the jobs lock: two replicas queueing
    // the same re-sync at once make one run, not two.
    let txn = crate::store::begin_locked(&lore.db, crate::store::Lock::Jobs).await?;
    let mut pending = index_job::Entity::find()
        .filter(index_job::Column::Status.eq(QUEUED))
        .filter(index_job::Column::Full.eq(full));
    pending = match source_id {
        Some(id) => pending.filter(index_job::Column::SourceId.eq(id)),
        None => pending.filter(index_job::Column::SourceId.is_null()),
    };
    if let Some(existing) = pending.one(&txn).await? {
        txn.commit().await?;
        return Ok(existing);
    }
    let job = new_job(source_id, full, trigger, QUEUED).insert(&txn).await?;
    txn.commit().await?;
    if let Some(id) = source_id {
        set_source_status(lore, id, "queued").await?;
    }
    Ok(job)
}

fn new_job(source_id: Option<&str>, full: bool, trigger: &str, status: &str) -> index_job::ActiveModel {
    index_job::ActiveModel {
        id: Set(uuid::Uuid::new_v4().to_string()),
        source_id: Set(source_id.map(str::to_owned)),
        full: Set(full),
        status: Set(status.to_owned()),
        trigger: Set(trigger.to_owned()),
        progress: Set(serde_json::to_value(Progress::default()).unwrap_or_default()),
        errors: Set(serde_json::json!([])),
        message: Set(None),
        lease_owner: Set(None),
        heartbeat_at: Set(None),
        attempts: Set(0),
        in_flight: Set(None),
        created_at: Set(Utc::now()),
        started_at: Set(None),
        finished_at: Set(None),
    }
}

/// An indexing run as every surface shows it: its row with the JSON columns
/// decoded once, here. A column that cannot be read is an error that names
/// the run, never an empty progress.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub id: String,
    /// `None` for a full reindex of every source.
    pub source_id: Option<String>,
    pub full: bool,
    /// `queued`, `running`, `succeeded`, `failed` or `cancelled`.
    pub status: String,
    /// What started it: `admin`, `cli`, `upload`, `schedule`, `tuning`,
    /// `setup`, `write` (a table written), `permissions` (a role or
    /// audience change a table source's views follow).
    pub trigger: String,
    pub progress: Progress,
    pub errors: Vec<DocumentError>,
    pub message: Option<String>,
    pub attempts: i32,
    pub created_at: chrono::DateTime<Utc>,
    pub started_at: Option<chrono::DateTime<Utc>>,
    pub finished_at: Option<chrono::DateTime<Utc>>,
}

impl Job {
    pub fn decode(row: index_job::Model) -> Result<Job> {
        let unreadable = |column: &str, err: serde_json::Error| {
            Error::Internal(format!("indexing run {}: its stored {column} cannot be read: {err}", row.id))
        };
        let progress =
            serde_json::from_value(row.progress.clone()).map_err(|err| unreadable("progress", err))?;
        let errors = serde_json::from_value(row.errors.clone()).map_err(|err| unreadable("errors", err))?;
        Ok(Job {
            id: row.id,
            source_id: row.source_id,
            full: row.full,
            status: row.status,
            trigger: row.trigger,
            progress,
            errors,
            message: row.message,
            attempts: row.attempts,
            created_at: row.created_at,
            started_at: row.started_at,
            finished_at: row.finished_at,
        })
    }
}

/// A run, decoded (see [`Job`]).
pub async fn job(lore: &Corpus, id: &str) -> Result<Job> {
    Job::decode(get(lore, id).await?)
}

pub async fn get(lore: &Corpus, id: &str) -> Result<index_job::Model> {
    index_job::Entity::find_by_id(id.to_owned())
        .one(&lore.db)
        .await?
        .ok_or_else(|| IngestError::JobNotFound(id.to_owned()).into())
}

/// The most recent jobs, newest first (of one source, when given).
pub async fn recent(lore: &Corpus, source_id: Option<&str>, limit: u64) -> Result<Vec<Job>> {
    let mut query = index_job::Entity::find().order_by_desc(index_job::Column::CreatedAt).limit(limit);
    if let Some(id) = source_id {
        query = query.filter(index_job::Column::SourceId.eq(id));
    }
    query.all(&lore.db).await?.into_iter().map(Job::decode).collect()
}

/// How many indexing runs are in each status (queued, running, succeeded,
/// failed, cancelled).
pub async fn counts_by_status(lore: &Corpus) -> Result<Vec<(String, i64)>> {
    use sea_orm::sea_query::{Alias, Func};
    let count: sea_orm::sea_query::SimpleExpr =
        Func::cast_as(Func::count(Expr::col(index_job::Column::Id)), Alias::new("BIGINT")).into();
    Ok(index_job::Entity::find()
        .select_only()
        .column(index_job::Column::Status)
        .column_as(count, "count")
        .group_by(index_job::Column::Status)
        .into_tuple::<(String, i64)>()
        .all(&lore.db)
        .await?)
}

/// Cancels the queued and running jobs of a source (a running one stops at
/// its next heartbeat).
pub async fn cancel_queued(lore: &Corpus, source_id: &str) -> Result<()> {
    index_job::Entity::update_many()
        .col_expr(index_job::Column::Status, Expr::value(CANCELLED))
        .col_expr(index_job::Column::FinishedAt, Expr::value(Utc::now()))
        .col_expr(index_job::Column::Message, Expr::value("cancelled: the source was disabled or deleted"))
        .filter(index_job::Column::SourceId.eq(source_id))
        .filter(index_job::Column::Status.is_in([QUEUED, RUNNING]))
        .exec(&lore.db)
        .await?;
    // The row, not the decoded source: a source whose stored configuration
    // cannot be read can still be disabled or deleted.
    let found = sources::row(lore, source_id).await?;
    if [SourceStatus::Queued.key(), SourceStatus::Indexing.key()].contains(&found.status.as_str()) {
        let settled = if found.last_synced_at.is_some() { "ready" } else { "empty" };
        set_source_status(lore, source_id, settled).await?;
    }
    Ok(())
}

/// Claims `job_id` for `owner` if it is still queued and nothing it would
/// overlap is running. Two runs of one source at once (two `lore serve`
/// processes, or `lore ingest` beside one) would each remove what the
/// other wrote; a full reindex overlaps every run. Checked and claimed
/// under one lock, so two processes cannot both find the source free.
pub async fn claim(lore: &Corpus, job_id: &str, owner: &str) -> Result<Option<index_job::Model>> {
    claim_first(lore, owner, Some(job_id)).await
}

/// Claims the oldest queued job that overlaps no running one, if any.
pub async fn claim_next(lore: &Corpus, owner: &str) -> Result<Option<index_job::Model>> {
    claim_first(lore, owner, None).await
}

/// Claims the oldest queued job (`only` that one, when given) that overlaps
/// no running one, in one transaction under the jobs lock. On PostgreSQL the
/// queued rows are read `FOR UPDATE SKIP LOCKED`: a row another transaction
/// is changing (a cancel, a deletion with its source) is passed over rather
/// than waited for, and stays locked against those until the claim commits.
async fn claim_first(lore: &Corpus, owner: &str, only: Option<&str>) -> Result<Option<index_job::Model>> {
    let txn = crate::store::begin_locked(&lore.db, crate::store::Lock::Jobs).await?;
    let running = running_scopes(&txn).await?;
    let mut queued = index_job::Entity::find()
        .filter(index_job::Column::Status.eq(QUEUED))
        .order_by_asc(index_job::Column::CreatedAt)
        .limit(100);
    if let Some(id) = only {
        queued = queued.filter(index_job::Column::Id.eq(id));
    }
    if txn.get_database_backend() == DbBackend::Postgres {
        queued = queued.lock_with_behavior(LockType::Update, LockBehavior::SkipLocked);
    }
    let free = queued.all(&txn).await?.into_iter().find(|job| !overlaps(&running, job.source_id.as_deref()));
    let Some(job) = free else {
        txn.rollback().await?;
        return Ok(None);
    };
    let now = Utc::now();
    let claimed = index_job::Entity::update_many()
        .col_expr(index_job::Column::Status, Expr::value(RUNNING))
        .col_expr(index_job::Column::LeaseOwner, Expr::value(owner))
        .col_expr(index_job::Column::HeartbeatAt, Expr::value(now))
        .col_expr(index_job::Column::StartedAt, Expr::value(now))
        .col_expr(index_job::Column::Attempts, Expr::col(index_job::Column::Attempts).add(1))
        .filter(index_job::Column::Id.eq(&job.id))
        .filter(index_job::Column::Status.eq(QUEUED))
        .exec(&txn)
        .await?;
    txn.commit().await?;
    if claimed.rows_affected == 1 {
        Ok(Some(get(lore, &job.id).await?))
    } else {
        Ok(None)
    }
}

/// The scope of every running job: a source's id, or `None` for a full
/// reindex of every source.
async fn running_scopes(db: &impl ConnectionTrait) -> Result<Vec<Option<String>>> {
    Ok(index_job::Entity::find()
        .select_only()
        .column(index_job::Column::SourceId)
        .filter(index_job::Column::Status.eq(RUNNING))
        .into_tuple()
        .all(db)
        .await?)
}

/// Whether a run of `scope` (`None`: every source) would overlap one of
/// the `running` scopes.
fn overlaps(running: &[Option<String>], scope: Option<&str>) -> bool {
    running.iter().any(|held| held.is_none() || scope.is_none() || held.as_deref() == scope)
}

/// Records that job `job_id` is extracting `reading` (`None`: nothing).
pub async fn mark_in_flight(lore: &Corpus, job_id: &str, reading: Option<&InFlight>) -> Result<()> {
    index_job::Entity::update_many()
        .col_expr(index_job::Column::InFlight, Expr::value(reading.map(to_json)))
        .filter(index_job::Column::Id.eq(job_id))
        .exec(&lore.db)
        .await?;
    Ok(())
}

/// The document job `job` was extracting when its last attempt ended, with
/// the deaths on it so far.
pub fn in_flight(job: &index_job::Model) -> Option<InFlight> {
    job.in_flight.clone().and_then(|value| serde_json::from_value(value).ok())
}

/// Takes over the running jobs whose holder stopped beating (its process
/// died) and queues them again to resume, or, after [`MAX_ATTEMPTS`] starts,
/// ends them `failed`. The document being extracted at the death becomes a
/// suspect; one being extracted at a second death is quarantined.
pub async fn requeue_stale(lore: &Corpus, lease: Duration) -> Result<u64> {
    let cutoff =
        Utc::now() - chrono::Duration::from_std(lease).unwrap_or_else(|_| chrono::Duration::seconds(30));
    let stale = index_job::Entity::find()
        .filter(index_job::Column::Status.eq(RUNNING))
        .filter(index_job::Column::HeartbeatAt.lt(cutoff))
        .all(&lore.db)
        .await?;
    let mut taken = 0;
    for job in stale {
        let reading = in_flight(&job);
        let culprit = reading.clone().filter(|r| r.deaths >= 1);
        let suspect = reading.clone().filter(|r| r.deaths == 0).map(|r| InFlight { deaths: 1, ..r });
        let exhausted = job.attempts >= MAX_ATTEMPTS;
        let message = exhausted.then(|| {
            let last = reading.as_ref().map(|r| format!(" (the last time while reading {})", r.uri));
            format!(
                "Lore's indexing process stopped {} times while running this job{}, so it was not started again. A document being read at two of those stops is set aside (quarantined) on the Sources screen; sync again to index the rest.",
                job.attempts,
                last.unwrap_or_default()
            )
        });
        let mut update = index_job::Entity::update_many()
            .col_expr(index_job::Column::Status, Expr::value(if exhausted { FAILED } else { QUEUED }))
            .col_expr(index_job::Column::LeaseOwner, Expr::value(Option::<String>::None))
            .col_expr(index_job::Column::InFlight, Expr::value(suspect.as_ref().map(to_json)));
        if let Some(message) = &message {
            update = update
                .col_expr(index_job::Column::Message, Expr::value(message.clone()))
                .col_expr(index_job::Column::FinishedAt, Expr::value(Utc::now()));
        }
        // Only if it is still the stale job read above: one taker wins.
        let done = update
            .filter(index_job::Column::Id.eq(&job.id))
            .filter(index_job::Column::Status.eq(RUNNING))
            .filter(index_job::Column::HeartbeatAt.lt(cutoff))
            .exec(&lore.db)
            .await?;
        if done.rows_affected != 1 {
            continue;
        }
        taken += 1;
        if let Some(culprit) = &culprit {
            quarantine(lore, &job, culprit).await?;
        }
        match &message {
            Some(message) => {
                tracing::error!(job = %job.id, attempts = job.attempts, "an indexing job's process died too often; it has failed");
                fail_sources(lore, &job, message).await?;
            }
            None => tracing::warn!(
                job = %job.id,
                attempt = job.attempts,
                document = reading.as_ref().map(|r| r.uri.as_str()),
                "resuming an indexing job left running by a stopped process"
            ),
        }
    }
    Ok(taken)
}

/// Sets aside a document two dead attempts were reading: its row (made if it
/// had none) becomes `quarantined` with the hash of the bytes it held, so
/// later runs skip it until it changes. Chunks it already had stay
/// searchable.
async fn quarantine(lore: &Corpus, job: &index_job::Model, reading: &InFlight) -> Result<()> {
    let existing = document::Entity::find()
        .filter(document::Column::SourceId.eq(&reading.source_id))
        .filter(document::Column::Uri.eq(&reading.uri))
        .one(&lore.db)
        .await?;
    let mut row: document::ActiveModel = match existing {
        Some(doc) => doc.into(),
        None => {
            if source::Entity::find_by_id(reading.source_id.clone()).one(&lore.db).await?.is_none() {
                return Ok(()); // the source is gone
            }
            let id = uuid::Uuid::new_v4().to_string();
            super::new_document(&id, &reading.source_id, &reading.uri, &reading.uri, None)
                .insert(&lore.db)
                .await?
                .into()
        }
    };
    row.status = Set("quarantined".into());
    row.error = Set(Some(QUARANTINE_REASON.to_owned()));
    row.quarantined_hash = Set(Some(reading.hash.clone()));
    row.last_job_id = Set(Some(job.id.clone()));
    row.updated_at = Set(Utc::now());
    row.update(&lore.db).await?;
    tracing::warn!(job = %job.id, document = %reading.uri, "a document was being read at two process deaths; it is quarantined");
    Ok(())
}

/// Marks the sources of a job that will not run again as failed.
async fn fail_sources(lore: &Corpus, job: &index_job::Model, message: &str) -> Result<()> {
    let mut update = source::Entity::update_many()
        .col_expr(source::Column::Status, Expr::value("failed"))
        .col_expr(source::Column::LastError, Expr::value(message.to_owned()))
        .col_expr(source::Column::UpdatedAt, Expr::value(Utc::now()));
    update = match &job.source_id {
        Some(id) => update.filter(source::Column::Id.eq(id)),
        // A full reindex: the sources it had reached and left mid-way.
        None => update.filter(source::Column::Status.eq("indexing")),
    };
    update.exec(&lore.db).await?;
    Ok(())
}

/// Queues a re-sync for every enabled website source that is due.
pub async fn schedule_due(lore: &Corpus) -> Result<usize> {
    let due = source::Entity::find()
        .filter(source::Column::Enabled.eq(true))
        .filter(source::Column::NextSyncAt.lte(Utc::now()))
        .all(&lore.db)
        .await?;
    let mut queued = 0;
    for found in due {
        // Taken only while still due as read: of two replicas scheduling
        // at once, one clears it and queues the run; the other moves on.
        let taken = source::Entity::update_many()
            .col_expr(source::Column::NextSyncAt, Expr::value(Option::<chrono::DateTime<Utc>>::None))
            .filter(source::Column::Id.eq(&found.id))
            .filter(source::Column::NextSyncAt.eq(found.next_sync_at))
            .exec(&lore.db)
            .await?;
        if taken.rows_affected != 1 {
            continue;
        }
        enqueue(lore, Some(&found.id), false, "schedule").await?;
        queued += 1;
    }
    Ok(queued)
}

/// A name for this process as a job holder.
pub fn owner_id(role: &str) -> String {
    let short = uuid::Uuid::new_v4().simple().to_string();
    format!("{role}-{}-{}", std::process::id(), &short[..8])
}

/// Runs the worker loop of `lore serve`: resume stale jobs, queue due
/// re-syncs, run queued jobs one at a time. Returns when `stop` flips.
pub async fn work(lore: Corpus, mut stop: tokio::sync::watch::Receiver<bool>) {
    let owner = owner_id("serve");
    let lease = lore.settings.ingest.job_lease();
    let mut upkeep_at = tokio::time::Instant::now();
    loop {
        if let Err(err) = tick(&lore, &owner, lease).await {
            tracing::error!(error = %err, "the indexing worker failed a round");
        }
        if tokio::time::Instant::now() >= upkeep_at {
            upkeep_at = tokio::time::Instant::now() + UPKEEP_EVERY;
            if let Err(err) = upkeep(&lore, &owner).await {
                tracing::warn!(error = %err, "the vector index's upkeep failed a round");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            // A table source's rows were written: their run starts now,
            // with what else is written in the next moment (a stream of
            // writes wakes the worker 20 times a second at most).
            _ = lore.table_writes().wait() => tokio::time::sleep(Duration::from_millis(50)).await,
            _ = stop.changed() => return,
        }
    }
}

/// How often the worker looks at the vector index (see [`crate::upkeep`]):
/// a few metadata reads of the chunk table.
const UPKEEP_EVERY: Duration = Duration::from_secs(10);

/// The worker's look at the vector index, once anything has been indexed.
async fn upkeep(lore: &Corpus, owner: &str) -> Result<()> {
    if fingerprint::stamped(&lore.db).await?.is_some() {
        crate::upkeep::tick(lore, owner).await?;
    }
    Ok(())
}

async fn tick(lore: &Corpus, owner: &str, lease: Duration) -> Result<()> {
    requeue_stale(lore, lease).await?;
    schedule_due(lore).await?;
    super::table::schedule_written(lore).await?;
    while let Some(job) = claim_next(lore, owner).await? {
        run(lore, job, owner, None).await?;
    }
    Ok(())
}

/// Runs a claimed job to its end, beating its heartbeat (with progress) and
/// stopping early if it is cancelled. Returns the job as it ended.
pub async fn run(
    lore: &Corpus,
    job: index_job::Model,
    owner: &str,
    observer: Option<Observer>,
) -> Result<index_job::Model> {
    // A resumed run counts afresh: what the interrupted attempt finished is
    // counted again as it is met (see `Outcome::AlreadyDone`).
    let progress = ProgressHandle::new(Progress::default(), Vec::new(), observer);
    let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
    let beat =
        tokio::spawn(heartbeat(lore.clone(), job.id.clone(), owner.to_owned(), progress.clone(), cancel_tx));

    tracing::info!(job = %job.id, source = ?job.source_id, full = job.full, attempt = job.attempts, "indexing started");
    let outcome = execute(lore, &job, &progress, cancel_rx.clone()).await;
    beat.abort();

    let cancelled = *cancel_rx.borrow();
    let (status, message) = match (&outcome, cancelled) {
        (_, true) => (CANCELLED, "cancelled".to_owned()),
        (Ok(message), false) => (SUCCEEDED, message.clone()),
        (Err(err), false) => (FAILED, err.to_string()),
    };
    let (snapshot, errors) = progress.snapshot();
    // Only the holder may finish it (a cancelled job stays cancelled).
    index_job::Entity::update_many()
        .col_expr(index_job::Column::Status, Expr::value(status))
        .col_expr(index_job::Column::Message, Expr::value(message.clone()))
        .col_expr(index_job::Column::Progress, Expr::value(to_json(&snapshot)))
        .col_expr(index_job::Column::Errors, Expr::value(to_json(&errors)))
        .col_expr(index_job::Column::FinishedAt, Expr::value(Utc::now()))
        .col_expr(index_job::Column::InFlight, Expr::value(Option::<serde_json::Value>::None))
        .filter(index_job::Column::Id.eq(&job.id))
        .filter(index_job::Column::Status.eq(RUNNING))
        .filter(index_job::Column::LeaseOwner.eq(owner))
        .exec(&lore.db)
        .await?;
    tracing::info!(job = %job.id, status, %message, "indexing finished");
    match index_job::Entity::find_by_id(job.id.clone()).one(&lore.db).await? {
        Some(ended) => Ok(ended),
        None => Ok(job),
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or_default()
}

/// Every second: write the progress and the heartbeat; notice cancellation.
async fn heartbeat(
    lore: Corpus,
    job_id: String,
    owner: String,
    progress: ProgressHandle,
    cancel: tokio::sync::watch::Sender<bool>,
) {
    let every =
        (lore.settings.ingest.job_lease() / 3).clamp(Duration::from_millis(200), Duration::from_secs(1));
    loop {
        tokio::time::sleep(every).await;
        let (snapshot, errors) = progress.snapshot();
        let beat = index_job::Entity::update_many()
            .col_expr(index_job::Column::HeartbeatAt, Expr::value(Utc::now()))
            .col_expr(index_job::Column::Progress, Expr::value(to_json(&snapshot)))
            .col_expr(index_job::Column::Errors, Expr::value(to_json(&errors)))
            .filter(index_job::Column::Id.eq(&job_id))
            .filter(index_job::Column::Status.eq(RUNNING))
            .filter(index_job::Column::LeaseOwner.eq(&owner))
            .exec(&lore.db)
            .await;
        match beat {
            Ok(done) if done.rows_affected == 0 => {
                // Cancelled, deleted with its source, or taken over.
                let _ = cancel.send(true);
                return;
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(error = %err, job = %job_id, "could not write the job heartbeat"),
        }
    }
}

/// The work of a run. Returns the message the job ends with.
async fn execute(
    lore: &Corpus,
    job: &index_job::Model,
    progress: &ProgressHandle,
    cancel: tokio::sync::watch::Receiver<bool>,
) -> Result<String> {
    let mut embedder = lore.embedder().await?;
    // A replica the rebinding's announcement has not reached yet (it is on
    // its way) would embed with the old model and stamp the corpus with its
    // name: the role as stored decides.
    if embedder.model() != lore.embedding_model().await? {
        lore.forget_embedder().await;
        embedder = lore.embedder().await?;
    }
    let table = crate::shadow::active_table(&lore.db).await?;
    // A new embedding model of another size: the old vectors cannot stay in
    // the table; retrieval fails closed until this run re-embeds everything.
    let (store, rebuilt) = match lore.chunks().await {
        Err(Error::Index(crate::index::IndexError::Dimensions { .. })) => {
            (lore.rebuild_chunks().await?, true)
        }
        opened => (opened?, false),
    };
    let chunking = crate::tuning::chunking(lore).await?;
    let fingerprint = Fingerprint {
        embedding_model: embedder.model().to_owned(),
        dimensions: embedder.dimensions(),
        chunking,
    };
    let stamp = fingerprint::stamped(&lore.db).await?;
    let indexed = store.count(None).await?;
    let mut full = job.full || rebuilt;
    match &stamp {
        // An empty corpus: whatever this run writes is made by the current model.
        None if indexed == 0 => fingerprint::set(&lore.db, Some(&fingerprint)).await?,
        Some(current) if *current == fingerprint => {}
        // Mixed vectors would be searched as one space: re-embed everything.
        _ => full = true,
    }

    // Rows, decoded one by one below: a source that cannot be read fails on
    // its own, the others are still synced.
    let scope = match (&job.source_id, full) {
        (Some(id), false) => vec![sources::row(lore, id).await?],
        _ => source::Entity::find().order_by_asc(source::Column::CreatedAt).all(&lore.db).await?,
    };
    let indexer = Indexer {
        lore: lore.clone(),
        embedder,
        store: store.clone(),
        chunking,
        job_id: job.id.clone(),
        full,
        suspect: in_flight(job),
    };
    let synced: Vec<String> = scope.iter().map(|found| found.id.clone()).collect();
    let mut failures = Vec::new();
    for row in scope {
        if *cancel.borrow() {
            break;
        }
        let (id, name) = (row.id.clone(), row.name.clone());
        let outcome = match Source::decode(row) {
            Ok(found) => sync_source(&indexer, &found, progress, cancel.clone()).await,
            Err(unreadable) => {
                // Says so on the source, as a failed sync would, rather
                // than leaving it queued.
                mark_failed(lore, &id, &unreadable).await?;
                Err(unreadable)
            }
        };
        if let Err(err) = outcome {
            failures.push(format!("{name}: {err}"));
        }
    }
    remove_deleted(lore, store.as_ref(), &synced).await?;
    // A training under way replaces the index a fold would rewrite; it
    // folds this run's rows in once it is done (see `upkeep`).
    if crate::upkeep::training_under_way(lore).await?.is_none() {
        let folded = store.optimize().await?;
        if let Some(rows) = folded.trained {
            crate::upkeep::record_trained(lore, &table, rows).await?;
        }
    }
    if !failures.is_empty() {
        return Err(Error::Ingest(IngestError::Fetch(failures.join("; "))));
    }
    // Not when a judged embedding model's index became the active one while
    // this run wrote to the one before (see `shadow`): its stamp stands.
    if full && !*cancel.borrow() && crate::shadow::active_table(&lore.db).await? == table {
        fingerprint::set(&lore.db, Some(&fingerprint)).await?;
    }
    let (done, _) = progress.snapshot();
    Ok(format!(
        "{} documents: {} indexed, {} unchanged, {} failed",
        done.done,
        done.done.saturating_sub(done.unchanged + done.failed),
        done.unchanged,
        done.failed
    ))
}

/// Removes the chunks of the sources among `synced` that were deleted while
/// the run indexed them. A page being embedded when its source was deleted is
/// written after [`sources::delete`] removed the source's chunks; this
/// removal, after every write of the run, takes it away again. (The deletion
/// removes the chunks once more after the source row, for a run that looks
/// before the row is gone.)
async fn remove_deleted(lore: &Corpus, store: &dyn ChunkStore, synced: &[String]) -> Result<()> {
    for id in synced {
        if source::Entity::find_by_id(id.clone()).one(&lore.db).await?.is_none() {
            tracing::info!(source = %id, "the source was deleted during the run: removing what the run wrote");
            store.delete_source(id).await?;
        }
    }
    Ok(())
}

/// Syncs one source and records how it ended on the source row.
async fn sync_source(
    indexer: &Indexer,
    found: &Source,
    progress: &ProgressHandle,
    cancel: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    let lore = &indexer.lore;
    set_source_status(lore, &found.id, "indexing").await?;
    let result = found.kind.connector().sync(Run { indexer, source: found, progress, cancel }).await;
    let Some(current) = source::Entity::find_by_id(found.id.clone()).one(&lore.db).await? else {
        return Ok(()); // deleted meanwhile
    };
    let (documents, chunks) = indexed_counts(lore, &found.id).await?;
    let now = Utc::now();
    let mut row: source::ActiveModel = current.clone().into();
    row.document_count = Set(documents);
    row.chunk_count = Set(chunks);
    row.updated_at = Set(now);
    // From the row as it is now: the source may have been switched off or
    // its volatility changed while the run held it.
    row.next_sync_at = Set(sources::next_sync_after(&Source::decode(current)?, now));
    match &result {
        Ok(()) => {
            row.status = Set(SourceStatus::Ready.key().into());
            row.last_error = Set(None);
            row.last_synced_at = Set(Some(now));
        }
        Err(err) => {
            row.status = Set(SourceStatus::Failed.key().into());
            row.last_error = Set(Some(err.to_string()));
        }
    }
    row.update(&lore.db).await?;
    result
}

/// How many documents of a source are indexed, and their chunks, counted
/// by the database (a table source can have a hundred thousand).
async fn indexed_counts(lore: &Corpus, source_id: &str) -> Result<(i32, i32)> {
    let documents = document::Entity::find()
        .filter(document::Column::SourceId.eq(source_id))
        .filter(document::Column::Status.eq("indexed"))
        .count(&lore.db)
        .await?;
    let chunks: Option<Option<i64>> = document::Entity::find()
        .select_only()
        .column_as(Expr::col(document::Column::ChunkCount).sum(), "chunks")
        .filter(document::Column::SourceId.eq(source_id))
        .into_tuple()
        .one(&lore.db)
        .await?;
    let clamp = |n: i64| i32::try_from(n).unwrap_or(i32::MAX);
    Ok((clamp(documents as i64), clamp(chunks.flatten().unwrap_or(0))))
}

/// Records on a source that its sync failed, and why.
async fn mark_failed(lore: &Corpus, id: &str, err: &Error) -> Result<()> {
    source::Entity::update_many()
        .col_expr(source::Column::Status, Expr::value(SourceStatus::Failed.key()))
        .col_expr(source::Column::LastError, Expr::value(err.to_string()))
        .col_expr(source::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(source::Column::Id.eq(id))
        .exec(&lore.db)
        .await?;
    Ok(())
}

async fn set_source_status(lore: &Corpus, id: &str, status: &str) -> Result<()> {
    source::Entity::update_many()
        .col_expr(source::Column::Status, Expr::value(status))
        .col_expr(source::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(source::Column::Id.eq(id))
        .exec(&lore.db)
        .await?;
    Ok(())
}

/// Claims queued job `job_id` for `owner`, waiting while a run it would
/// overlap is going (the server's sync of the same source, say) for that
/// run's end, or for its lease to lapse when its process died. `None` when
/// the job stopped being queued meanwhile: another process took it, or it
/// was cancelled.
pub async fn claim_when_free(lore: &Corpus, job_id: &str, owner: &str) -> Result<Option<index_job::Model>> {
    let lease = lore.settings.ingest.job_lease();
    let mut said = false;
    loop {
        if let Some(held) = claim(lore, job_id, owner).await? {
            return Ok(Some(held));
        }
        if get(lore, job_id).await?.status != QUEUED {
            return Ok(None);
        }
        if !std::mem::replace(&mut said, true) {
            tracing::info!(job = %job_id, "another run of this source is going; waiting for it to end");
        }
        requeue_stale(lore, lease).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
