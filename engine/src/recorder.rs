//! What requests leave behind, written behind them: answer runs (with their
//! share of the Dashboard's rollups and, for a refusal, a content-gap count),
//! access-key usage, and the audit entries of operation calls (whose
//! changes, if any, were audited in their own transaction).
//!
//! One [`Recorder`] task per [`crate::Lore`] writes them. A run's
//! transaction (its row, a few rollup upserts, a commit) and a key's usage
//! upsert cost milliseconds a caller need not wait for, and on SQLite every
//! write takes the one write lock. The task writes what arrives within
//! 20 ms of the first record (or until someone flushes) in one
//! transaction, so many requests share one commit.
//!
//! Whatever reads runs, rollups, gaps, key usage or the audit log flushes the queue first
//! ([`Recorder::flush`]), so it sees every request answered before it; a
//! stopping server and `lore ask` flush last. A failed batch is tried again
//! a few times, then logged with what it loses; a crash loses the last
//! milliseconds of records.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use entity::{access_key, answer_run, audit_log, content_gap, key_usage};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, Set};
use tokio::sync::{mpsc, oneshot};

use crate::metrics::{summed, Excluded};
use crate::{Error, Result};

/// Records queued before a request waits for room: only reached when the
/// database stalls, and then it bounds memory.
const QUEUED: usize = 1024;

/// The most records one transaction writes.
const BATCH: usize = 256;

/// How long the writer gathers records after the first before it writes:
/// one request after another then share a transaction (and SQLite's write
/// lock) instead of each taking its own.
const GATHER: Duration = Duration::from_millis(20);

/// How long the writer waits before each new try of a failed batch.
const RETRY_AFTER: [Duration; 3] =
    [Duration::from_millis(50), Duration::from_millis(250), Duration::from_secs(1)];

/// A refused question, counted as a content gap with its run.
#[derive(Clone, Debug)]
pub struct Gap {
    /// The normalised question.
    pub key: String,
    /// The question as asked.
    pub asked: String,
}

/// One keyed request's use of its access key.
#[derive(Clone, Debug)]
struct Usage {
    key_id: String,
    estimated_cost_usd: f64,
    at: DateTime<Utc>,
}

enum Queued {
    Run(Box<answer_run::Model>, Option<Gap>),
    Usage(Usage),
    Audit(Box<audit_log::ActiveModel>),
    Flush(oneshot::Sender<()>),
}

/// What one transaction writes.
#[derive(Default)]
struct Batch {
    runs: Vec<answer_run::Model>,
    /// Each with the index of its run (whose time it takes).
    gaps: Vec<(Gap, usize)>,
    usage: Vec<Usage>,
    audit: Vec<audit_log::ActiveModel>,
}

impl Batch {
    fn len(&self) -> usize {
        self.runs.len() + self.usage.len() + self.audit.len()
    }
}

/// Writes records behind the requests that made them. Cheap to clone; the
/// task ends when the last clone is dropped, after writing what was queued.
#[derive(Clone)]
pub struct Recorder {
    queue: mpsc::Sender<Queued>,
}

impl Recorder {
    /// Starts the writer task on `db`.
    pub fn start(db: DatabaseConnection) -> Self {
        let (queue, queued) = mpsc::channel(QUEUED);
        tokio::spawn(write_behind(db, queued));
        Self { queue }
    }

    /// Queues an answer run (and, for a refusal, its content gap).
    pub async fn run(&self, run: answer_run::Model, gap: Option<Gap>) -> Result<()> {
        self.send(Queued::Run(Box::new(run), gap)).await
    }

    /// Queues one query's use of `key_id` (and its estimated cost), counted
    /// on today's UTC date.
    pub async fn key_usage(&self, key_id: &str, estimated_cost_usd: f64) -> Result<()> {
        self.send(Queued::Usage(Usage { key_id: key_id.to_owned(), estimated_cost_usd, at: Utc::now() }))
            .await
    }

    /// Queues an audit entry, stamped now.
    pub async fn audit(
        &self,
        actor: &crate::audit::Actor,
        action: &str,
        target: Option<&str>,
        details: serde_json::Value,
    ) -> Result<()> {
        let entry = crate::audit::entry(actor, action, target, details);
        self.send(Queued::Audit(Box::new(entry))).await
    }

    /// Waits until everything queued so far is written (or given up on).
    pub async fn flush(&self) -> Result<()> {
        let (done, written) = oneshot::channel();
        self.send(Queued::Flush(done)).await?;
        written.await.map_err(|_| stopped())
    }

    async fn send(&self, queued: Queued) -> Result<()> {
        self.queue.send(queued).await.map_err(|_| stopped())
    }
}

fn stopped() -> Error {
    Error::Internal("the recorder has stopped".into())
}

/// The writer: takes what is queued, up to [`BATCH`] records, writes it in
/// one transaction, then answers the flushes that were waiting behind it.
async fn write_behind(db: DatabaseConnection, mut queued: mpsc::Receiver<Queued>) {
    let mut flushes = Vec::new();
    while let Some(first) = queued.recv().await {
        let mut batch = Batch::default();
        let mut next = Some(first);
        // What arrives within GATHER of the first record shares its
        // transaction, unless someone waits for it (a flush).
        let gather_until = tokio::time::Instant::now() + GATHER;
        while let Some(item) = next.take() {
            match item {
                Queued::Run(run, gap) => {
                    batch.runs.push(*run);
                    batch.gaps.extend(gap.map(|gap| (gap, batch.runs.len() - 1)));
                }
                Queued::Usage(usage) => batch.usage.push(usage),
                Queued::Audit(entry) => batch.audit.push(*entry),
                Queued::Flush(done) => flushes.push(done),
            }
            if batch.len() < BATCH {
                next = match queued.try_recv() {
                    Ok(item) => Some(item),
                    Err(_) if flushes.is_empty() => {
                        tokio::time::timeout_at(gather_until, queued.recv()).await.ok().flatten()
                    }
                    Err(_) => None,
                };
            }
        }
        if batch.len() > 0 {
            write_with_retries(&db, &batch).await;
        }
        for done in flushes.drain(..) {
            let _ = done.send(());
        }
    }
}

async fn write_with_retries(db: &DatabaseConnection, batch: &Batch) {
    let mut delays = RETRY_AFTER.iter();
    loop {
        let Err(err) = write(db, batch).await else { return };
        let (runs, usage, audit) = (batch.runs.len(), batch.usage.len(), batch.audit.len());
        match delays.next() {
            Some(delay) => {
                tracing::warn!(error = %err, runs, usage, audit, "recording failed; trying again");
                tokio::time::sleep(*delay).await;
            }
            None => {
                tracing::error!(error = %err, runs, usage, audit, "answer runs, key usage and audit entries could not be recorded");
                return;
            }
        }
    }
}

/// One transaction: the runs with their rollups and gaps, the key usage.
async fn write(db: &DatabaseConnection, batch: &Batch) -> Result<()> {
    // Shares the rollups' lock: a rebuild waits for this batch, or this batch
    // for the rebuild, so no run is counted twice or lost between the two.
    let txn = crate::store::begin_sharing(db, crate::store::Lock::Rollups).await?;
    crate::metrics::add_runs(&txn, &batch.runs).await?;
    count_gaps(&txn, batch.gaps.iter().map(|(gap, run)| (gap, batch.runs[*run].created_at))).await?;
    count_usage(&txn, &batch.usage).await?;
    if !batch.audit.is_empty() {
        audit_log::Entity::insert_many(batch.audit.iter().cloned()).exec_without_returning(&txn).await?;
    }
    txn.commit().await?;
    Ok(())
}

/// Counts refused questions as content gaps: one upsert for all of them (a
/// question refused twice in one batch counts twice; PostgreSQL refuses one
/// statement that touches a row twice).
async fn count_gaps<'a>(
    db: &impl ConnectionTrait,
    gaps: impl Iterator<Item = (&'a Gap, DateTime<Utc>)>,
) -> Result<()> {
    let mut counted: HashMap<String, content_gap::Model> = HashMap::new();
    for (gap, at) in gaps {
        let id = crate::keys::hash(&gap.key);
        let row = counted.entry(id.clone()).or_insert_with(|| content_gap::Model {
            id,
            question: gap.key.clone(),
            example: gap.asked.clone(),
            count: 0,
            first_seen: at,
            last_seen: at,
        });
        row.count += 1;
        if at >= row.last_seen {
            row.last_seen = at;
            row.example.clone_from(&gap.asked);
        }
        row.first_seen = row.first_seen.min(at);
    }
    if counted.is_empty() {
        return Ok(());
    }
    use content_gap::Column as G;
    content_gap::Entity::insert_many(counted.into_values().map(|row| content_gap::ActiveModel {
        id: Set(row.id),
        question: Set(row.question),
        example: Set(row.example),
        count: Set(row.count),
        first_seen: Set(row.first_seen),
        last_seen: Set(row.last_seen),
    }))
    .on_conflict(
        OnConflict::column(G::Id)
            .value(G::Count, summed(content_gap::Entity, G::Count))
            .value(G::LastSeen, Expr::col((Excluded, G::LastSeen)))
            .value(G::Example, Expr::col((Excluded, G::Example)))
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(())
}

/// Adds the queries (and estimated cost) to each key's usage of their UTC
/// day in one upsert, and moves each key's last use forward.
async fn count_usage(db: &impl ConnectionTrait, usage: &[Usage]) -> Result<()> {
    let mut per_day: HashMap<(String, String), (i64, f64)> = HashMap::new();
    let mut last_used: HashMap<&str, DateTime<Utc>> = HashMap::new();
    for used in usage {
        let day = used.at.format("%Y-%m-%d").to_string();
        let counted = per_day.entry((used.key_id.clone(), day)).or_default();
        counted.0 += 1;
        counted.1 += used.estimated_cost_usd;
        let last = last_used.entry(&used.key_id).or_insert(used.at);
        *last = (*last).max(used.at);
    }
    if per_day.is_empty() {
        return Ok(());
    }
    use key_usage::Column as U;
    key_usage::Entity::insert_many(per_day.into_iter().map(|((key_id, day), (queries, cost))| {
        key_usage::ActiveModel {
            key_id: Set(key_id),
            day: Set(day),
            queries: Set(queries),
            estimated_cost_usd: Set(cost),
        }
    }))
    .on_conflict(
        OnConflict::columns([U::KeyId, U::Day])
            .value(U::Queries, summed(key_usage::Entity, U::Queries))
            .value(U::EstimatedCostUsd, summed(key_usage::Entity, U::EstimatedCostUsd))
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    // A batch holds few distinct keys: one short update each.
    for (key_id, at) in last_used {
        access_key::Entity::update_many()
            .col_expr(access_key::Column::LastUsedAt, Expr::value(at))
            .filter(access_key::Column::Id.eq(key_id))
            .exec(db)
            .await?;
    }
    Ok(())
}
