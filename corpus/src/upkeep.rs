//! The vector index's upkeep as the corpus grows.
//!
//! The vector index (IVF_HNSW_SQ) sorts every vector into partitions whose
//! centres are trained once, on the rows there are then, and their count
//! follows the table's size. Rows written later are folded into those
//! partitions ([`ChunkStore::optimize`]) without moving them: a corpus
//! that grew from 5,000 chunks to a million would still be searched
//! through the partitions of 5,000, each holding two hundred times the
//! rows it was made for, and every search would read them all.
//!
//! So once the stored rows are [`RETRAIN_GROWTH`] times the rows the index
//! was trained on, the index is trained anew on all of them, in the
//! background: `lore serve`'s worker ([`tick`]) starts the training in a
//! task of its own and goes on syncing. The previous index serves every
//! search until the new one is committed, in one step, and rows written
//! meanwhile are searched exactly until the next fold takes them in. An
//! indexing run does not fold while a training runs (a fold rewrites the
//! index the training will replace, and one of the two commits would be
//! refused); the training folds them once it is done.
//!
//! Two cluster settings hold what every replica and console needs:
//! [`TRAINED`], the rows the active table's index was last trained on, and
//! [`TRAINING`], a training under way, kept by its process's heartbeat.
//! Only one process trains at a time: it takes the record under the jobs
//! lock. A process that dies (a `kill -9`, a lost node) leaves the old
//! index serving, as LanceDB never committed the new one, and a record
//! whose heartbeat stops; after the jobs' lease the next worker starts the
//! training again from the beginning. A training that failed is tried
//! again after [`RETRY_AFTER`].

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde::{Deserialize, Serialize};

use crate::index::lance::MERGE_AFTER_WRITES;
use crate::index::{ChunkStore, VectorIndex};
use crate::{store, Corpus, Error, Result};

/// How much the rows must have grown since the index was trained for it to
/// be trained again. Doubling keeps the work of every training together
/// within twice that of the last one (each is at least twice the one
/// before), and a partition at most twice the rows it was made for.
pub const RETRAIN_GROWTH: usize = 2;

/// The cluster setting recording the rows the index was last trained on.
pub const TRAINED: &str = "vector_index.trained";
/// The cluster setting of a training under way.
pub const TRAINING: &str = "vector_index.training";

/// How long after a failed training the next one may start.
pub const RETRY_AFTER: Duration = Duration::from_secs(600);

/// The rows the vector index of `table` was trained on, and when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trained {
    pub table: String,
    pub rows: usize,
    pub at: DateTime<Utc>,
}

/// A training of the vector index of `table` on `rows` rows, by `owner`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Training {
    pub table: String,
    pub rows: usize,
    pub owner: String,
    pub started_at: DateTime<Utc>,
    /// Why it failed, once it has (it stays recorded until the next try).
    #[serde(default)]
    pub failed: Option<String>,
}

/// What the index needs now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Due {
    /// Nothing: no index yet and too few rows for one, or an index trained
    /// on enough of the rows there are.
    Nothing,
    /// An index that no record describes (one trained by a version of Lore
    /// before the record, or one whose recording was cut short): its rows
    /// are recorded as those it was trained on.
    Record(usize),
    /// Training, from nothing or anew.
    Train,
}

/// What `index`, trained on `trained` rows if known, needs. An index is
/// first trained by the run that takes the table past
/// [`crate::index::lance::VECTOR_INDEX_MIN_ROWS`]; one that was not (its
/// run failed before) is trained here, and so is one of a kind an earlier
/// version built (IVF_PQ), as [`crate::index::lance::VECTOR_INDEX`].
pub fn due(index: VectorIndex, trained: Option<usize>) -> Due {
    use crate::index::lance::VECTOR_INDEX_MIN_ROWS;
    match (index.indexed, trained) {
        (Some(_), _) if index.outdated => Due::Train,
        (None, _) if index.rows >= VECTOR_INDEX_MIN_ROWS => Due::Train,
        (None, _) => Due::Nothing,
        (Some(indexed), None) => Due::Record(indexed.max(1)),
        (Some(_), Some(trained)) if index.rows >= RETRAIN_GROWTH * trained.max(1) => Due::Train,
        (Some(_), Some(_)) => Due::Nothing,
    }
}

/// The vector index as the console shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub index: VectorIndex,
    /// What the active table's index was last trained on, if recorded.
    pub trained: Option<Trained>,
    /// A training of the active table's index under way, or the last one
    /// if it failed.
    pub training: Option<Training>,
}

/// The active table's vector index, its record, and any training of it.
pub async fn status(lore: &Corpus) -> Result<Status> {
    let table = crate::shadow::active_table(&lore.db).await?;
    let store = lore.chunks().await?;
    let (index, trained, training) = tokio::try_join!(
        async { Ok::<_, Error>(store.vector_index().await?) },
        trained(lore),
        training(lore)
    )?;
    Ok(Status {
        index,
        trained: trained.filter(|t| t.table == table),
        // One whose process died is left out: it will be started again.
        training: training
            .filter(|(t, fresh)| t.table == table && (*fresh || t.failed.is_some()))
            .map(|(training, _)| training),
    })
}

/// Merges the small commits an indexing run has made, once there are
/// [`MERGE_AFTER_WRITES`] of them, so that a long run's writes stay as
/// quick as its first (see [`crate::index::lance::FRAGMENT_ROWS`]). Not
/// while a training is under way: the merge moves rows the training is
/// indexing, and LanceDB would refuse the training's commit; the fold at
/// the end of the run merges them instead. A merge that fails (another
/// process's commit won the race) loses nothing, every row stays where it
/// was written: it is logged and tried again after as many writes.
pub async fn merge_when_due(lore: &Corpus, store: &dyn ChunkStore) -> Result<()> {
    if store.small_writes() < MERGE_AFTER_WRITES || training_under_way(lore).await?.is_some() {
        return Ok(());
    }
    if let Err(err) = store.merge_small_writes().await {
        tracing::warn!(error = %err, "could not merge the run's small writes; the fold at its end will");
    }
    Ok(())
}

/// The training under way, if one is: indexing runs leave the index alone
/// meanwhile, and the readiness check says so.
pub async fn training_under_way(lore: &Corpus) -> Result<Option<Training>> {
    Ok(training(lore).await?.filter(|(t, fresh)| t.failed.is_none() && *fresh).map(|(t, _)| t))
}

async fn trained(lore: &Corpus) -> Result<Option<Trained>> {
    match store::setting(&lore.db, TRAINED).await? {
        Some(value) => Ok(Some(store::decode("vector index record", value)?)),
        None => Ok(None),
    }
}

/// The training record and whether its heartbeat is within the jobs' lease.
async fn training(lore: &Corpus) -> Result<Option<(Training, bool)>> {
    let Some(row) = entity::cluster_setting::Entity::find_by_id(TRAINING.to_owned()).one(&lore.db).await?
    else {
        return Ok(None);
    };
    let training: Training = store::decode("vector index training", row.value)?;
    let fresh = Utc::now() - row.updated_at < chrono_of(lore.settings.ingest.job_lease());
    Ok(Some((training, fresh)))
}

fn chrono_of(duration: Duration) -> chrono::Duration {
    chrono::Duration::from_std(duration).unwrap_or_else(|_| chrono::Duration::seconds(30))
}

/// Records that the index of `table` was trained on `rows` rows.
pub async fn record_trained(lore: &Corpus, table: &str, rows: usize) -> Result<()> {
    let value = serde_json::to_value(Trained { table: table.to_owned(), rows, at: Utc::now() })
        .map_err(|err| Error::Internal(err.to_string()))?;
    Ok(store::put_setting(&lore.db, TRAINED, value, "lore").await?)
}

/// A training running in a task of its own.
pub type TrainingTask = tokio::task::JoinHandle<Result<Trained>>;

/// One round of `lore serve`'s worker: records an index no record
/// describes, and starts a training that is due in a task of its own if no
/// process is at it. Returns that task, for a caller that waits (tests);
/// the worker does not.
pub async fn tick(lore: &Corpus, owner: &str) -> Result<Option<TrainingTask>> {
    let table = crate::shadow::active_table(&lore.db).await?;
    let store = lore.chunks().await?;
    let index = store.vector_index().await?;
    let mut known = trained(lore).await?.filter(|t| t.table == table).map(|t| t.rows);
    if let Due::Record(rows) = due(index, known) {
        record_trained(lore, &table, rows).await?;
        known = Some(rows);
    }
    if due(index, known) != Due::Train {
        return Ok(None);
    }
    let Some(training) = take(lore, &table, index.rows, owner).await? else {
        return Ok(None);
    };
    tracing::info!(table = %table, rows = index.rows, trained_on = ?known, "training the vector index anew in the background");
    Ok(Some(tokio::spawn(train(lore.clone(), store, training))))
}

/// Takes the training record for `owner` if no live process holds it (none
/// is recorded, its heartbeat stopped, or it failed over [`RETRY_AFTER`]
/// ago), under the jobs lock so that two replicas cannot both take it.
async fn take(lore: &Corpus, table: &str, rows: usize, owner: &str) -> Result<Option<Training>> {
    let txn = store::begin_locked(&lore.db, store::Lock::Jobs).await?;
    let held = entity::cluster_setting::Entity::find_by_id(TRAINING.to_owned()).one(&txn).await?;
    let now = Utc::now();
    let free = match held {
        None => true,
        Some(row) => {
            let failed = store::decode::<Training>("vector index training", row.value)
                .map(|t| t.failed.is_some())
                .unwrap_or(false);
            let quiet_for = now - row.updated_at;
            if failed {
                quiet_for >= chrono_of(RETRY_AFTER)
            } else {
                quiet_for >= chrono_of(lore.settings.ingest.job_lease())
            }
        }
    };
    if !free {
        txn.rollback().await?;
        return Ok(None);
    }
    let training =
        Training { table: table.to_owned(), rows, owner: owner.to_owned(), started_at: now, failed: None };
    let value = serde_json::to_value(&training).map_err(|err| Error::Internal(err.to_string()))?;
    store::put_setting(&txn, TRAINING, value, owner).await?;
    txn.commit().await?;
    Ok(Some(training))
}

/// Trains the index, beating the record's heartbeat meanwhile; then records
/// the rows it was trained on, folds in what was written during it, and
/// removes the training record (or marks it failed).
async fn train(lore: Corpus, store: Arc<dyn ChunkStore>, training: Training) -> Result<Trained> {
    let beat = tokio::spawn(heartbeat(lore.clone(), training.owner.clone()));
    let started = std::time::Instant::now();
    let outcome = async {
        store.retrain_vector_index().await?;
        record_trained(&lore, &training.table, training.rows).await?;
        store.optimize().await?;
        Ok::<_, Error>(())
    }
    .await;
    beat.abort();
    match outcome {
        Ok(()) => {
            tracing::info!(table = %training.table, rows = training.rows, seconds = started.elapsed().as_secs_f64(), "the vector index was trained anew and swapped in");
            release(&lore, &training.owner).await?;
            Ok(Trained { table: training.table, rows: training.rows, at: Utc::now() })
        }
        Err(err) => {
            tracing::error!(error = %err, table = %training.table, "training the vector index failed; the previous index serves");
            let failed = Training { failed: Some(err.to_string()), ..training.clone() };
            if let Ok(value) = serde_json::to_value(&failed) {
                let owned = entity::cluster_setting::Entity::update_many()
                    .col_expr(entity::cluster_setting::Column::Value, Expr::value(value))
                    .col_expr(entity::cluster_setting::Column::UpdatedAt, Expr::value(Utc::now()))
                    .filter(entity::cluster_setting::Column::Key.eq(TRAINING))
                    .filter(entity::cluster_setting::Column::UpdatedBy.eq(&training.owner))
                    .exec(&lore.db)
                    .await;
                if let Err(write) = owned {
                    tracing::warn!(error = %write, "the failed training could not be recorded");
                }
            }
            Err(err)
        }
    }
}

/// Keeps the training record alive while `owner` holds it.
async fn heartbeat(lore: Corpus, owner: String) {
    let every =
        (lore.settings.ingest.job_lease() / 3).clamp(Duration::from_millis(200), Duration::from_secs(5));
    loop {
        tokio::time::sleep(every).await;
        let beat = entity::cluster_setting::Entity::update_many()
            .col_expr(entity::cluster_setting::Column::UpdatedAt, Expr::value(Utc::now()))
            .filter(entity::cluster_setting::Column::Key.eq(TRAINING))
            .filter(entity::cluster_setting::Column::UpdatedBy.eq(&owner))
            .exec(&lore.db)
            .await;
        if let Err(err) = beat {
            tracing::warn!(error = %err, "could not write the vector index training's heartbeat");
        }
    }
}

/// Removes the training record if `owner` still holds it.
async fn release(lore: &Corpus, owner: &str) -> Result<()> {
    entity::cluster_setting::Entity::delete_many()
        .filter(entity::cluster_setting::Column::Key.eq(TRAINING))
        .filter(entity::cluster_setting::Column::UpdatedBy.eq(owner))
        .exec(&lore.db)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::lance::VECTOR_INDEX_MIN_ROWS;

    fn index(rows: usize, indexed: Option<usize>) -> VectorIndex {
        VectorIndex { rows, indexed, outdated: false }
    }

    #[test]
    fn an_index_is_trained_first_past_its_threshold_then_again_each_time_the_rows_double() {
        assert_eq!(due(index(VECTOR_INDEX_MIN_ROWS - 1, None), None), Due::Nothing, "a flat scan is as fast");
        assert_eq!(
            due(index(VECTOR_INDEX_MIN_ROWS, None), None),
            Due::Train,
            "a run that failed to build it"
        );
        assert_eq!(due(index(9_000, Some(9_000)), None), Due::Record(9_000), "an index no record describes");
        assert_eq!(due(index(9_999, Some(9_999)), Some(5_000)), Due::Nothing, "folded in, not yet double");
        assert_eq!(due(index(10_000, Some(9_000)), Some(5_000)), Due::Train);
        assert_eq!(due(index(10_000, Some(10_000)), Some(10_000)), Due::Nothing, "trained on them all");
        // An index left by rows since deleted stays until the corpus grows.
        assert_eq!(due(index(100, Some(100)), Some(8_000)), Due::Nothing);
    }

    #[test]
    fn an_index_of_the_kind_an_earlier_version_built_is_trained_anew_whatever_its_rows() {
        let outdated = VectorIndex { rows: 6_000, indexed: Some(6_000), outdated: true };
        assert_eq!(due(outdated, Some(6_000)), Due::Train);
        assert_eq!(due(outdated, None), Due::Train, "recorded or not");
    }
}
