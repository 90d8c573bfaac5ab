//! Judging in progress, for every console to watch live.
//!
//! Before a candidate may serve, the eval gate judges it (see `profile` and
//! `evals`): a new embedding model first gets a shadow index, then the
//! golden questions are answered as the candidate and as the active
//! version. That takes from seconds to many minutes, so each judging keeps
//! its progress in the database, one cluster setting per judging
//! (`judging.<id>`), where any process and any admin's console can read it
//! ([`list`]; `GET /admin/profile/judging`).
//!
//! A [`Tracker`] owns one record: [`Tracker::report`] is synchronous and
//! cheap (it only updates a watched value), and a task of the tracker's
//! writes the record at most every [`FLUSH_EVERY`] and at least every
//! [`HEARTBEAT`], and removes it when the tracker finishes or is dropped
//! (a judging that panicked). The profile runs each judging in a task of
//! its own, so a caller that stops waiting does not end it. A process that
//! dies leaves its record behind; [`list`] leaves out a record not
//! refreshed for [`STALE_AFTER`].

use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::{store, Error, Result};

/// The key prefix of judging records among the cluster settings.
const PREFIX: &str = "judging.";
/// The shortest time between two writes of one record.
pub const FLUSH_EVERY: Duration = Duration::from_millis(500);
/// A record is written again after this long even when nothing moved, so
/// that a slow question does not make a live judging look dead.
pub const HEARTBEAT: Duration = Duration::from_secs(20);
/// A record not written for this long belongs to a process that died.
pub const STALE_AFTER: Duration = Duration::from_secs(90);

/// What a judging is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Embedding every chunk again with a candidate embedding model
    /// (`done` and `total` count chunks).
    Shadow,
    /// Answering the golden questions as the candidate.
    Candidate,
    /// Answering them as the active version, to compare.
    Baseline,
}

/// One judging's progress.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Judging {
    pub id: String,
    /// What is judged, in the words of the candidate's note.
    pub what: String,
    /// The candidate version, once stored (a shadow build comes first).
    pub version: Option<i32>,
    /// Who asked for it.
    pub by: String,
    pub step: Step,
    pub done: usize,
    /// `0` until the step knows its size.
    pub total: usize,
    pub started_at: DateTime<Utc>,
}

/// Owns one judging's record; see the module's documentation.
pub struct Tracker {
    progress: watch::Sender<Judging>,
    writer: tokio::task::JoinHandle<()>,
}

impl Tracker {
    /// Starts a record for a judging of `what`, asked for by `by`, at `step`.
    pub async fn start(db: &DatabaseConnection, what: &str, by: &str, step: Step) -> Result<Tracker> {
        let judging = Judging {
            id: uuid::Uuid::new_v4().to_string(),
            what: what.to_owned(),
            version: None,
            by: by.to_owned(),
            step,
            done: 0,
            total: 0,
            started_at: Utc::now(),
        };
        write(db, &judging).await?;
        let (progress, watched) = watch::channel(judging);
        let writer = tokio::spawn(keep_written(db.clone(), watched));
        Ok(Tracker { progress, writer })
    }

    /// Where the judging is now (cheap: the record is written behind).
    pub fn report(&self, step: Step, done: usize, total: usize) {
        self.progress.send_if_modified(|judging| {
            let moved = (judging.step, judging.done, judging.total) != (step, done, total);
            (judging.step, judging.done, judging.total) = (step, done, total);
            moved
        });
    }

    /// The candidate version the judging is for, once it is stored.
    pub fn candidate(&self, version: i32) {
        self.progress.send_modify(|judging| judging.version = Some(version));
    }

    /// Removes the record, once the writer has stopped (so a caller who
    /// heard the verdict no longer sees the judging).
    pub async fn finish(self) {
        let Tracker { progress, writer } = self;
        drop(progress);
        if let Err(err) = writer.await {
            tracing::warn!(error = %err, "the judging progress writer stopped abnormally");
        }
    }
}

/// The tracker's task: writes each change (at most every [`FLUSH_EVERY`],
/// at least every [`HEARTBEAT`]) until the tracker is gone, then removes
/// the record. A failed write is logged and tried again at the next change.
async fn keep_written(db: DatabaseConnection, mut watched: watch::Receiver<Judging>) {
    let key = format!("{PREFIX}{}", watched.borrow().id);
    loop {
        let open = match tokio::time::timeout(HEARTBEAT, watched.changed()).await {
            Ok(changed) => changed.is_ok(),
            Err(_) => true,
        };
        if !open {
            break;
        }
        let judging = watched.borrow_and_update().clone();
        if let Err(err) = write(&db, &judging).await {
            tracing::warn!(error = %err, "the judging progress could not be written");
        }
        tokio::time::sleep(FLUSH_EVERY).await;
    }
    if let Err(err) = store::delete_setting(&db, &key).await {
        tracing::warn!(error = %err, key, "a finished judging's record could not be removed");
    }
}

async fn write(db: &DatabaseConnection, judging: &Judging) -> Result<()> {
    let value = serde_json::to_value(judging).map_err(|err| Error::Internal(err.to_string()))?;
    Ok(store::put_setting(db, &format!("{PREFIX}{}", judging.id), value, &judging.by).await?)
}

/// The judgings under way, oldest first (records of dead processes left out).
pub async fn list(db: &DatabaseConnection) -> Result<Vec<Judging>> {
    use entity::cluster_setting::{Column, Entity};
    let fresh_since = Utc::now()
        - chrono::Duration::from_std(STALE_AFTER).map_err(|err| Error::Internal(err.to_string()))?;
    let rows = Entity::find()
        .filter(Column::Key.starts_with(PREFIX))
        .filter(Column::UpdatedAt.gte(fresh_since))
        .all(db)
        .await?;
    let mut judgings: Vec<Judging> = rows
        .into_iter()
        .filter_map(|row| match serde_json::from_value(row.value) {
            Ok(judging) => Some(judging),
            Err(err) => {
                tracing::warn!(key = row.key, error = %err, "an unreadable judging record is left out");
                None
            }
        })
        .collect();
    judgings.sort_by_key(|j: &Judging| j.started_at);
    Ok(judgings)
}
