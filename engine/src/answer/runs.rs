//! What every run leaves behind, server-side only: an `answer_run` row
//! (surface, key, profile version, cache status, stages, tokens, estimated
//! cost, latency), its share of the Dashboard's rollups and, for a refusal,
//! a content-gap count. The [`crate::recorder::Recorder`] writes them behind
//! the request.

use chrono::Utc;
use entity::{answer_run, content_gap};
use sea_orm::{EntityTrait, QueryOrder, QuerySelect};

use super::{Answer, Ask, CacheStatus};
pub use crate::recorder::Gap;
use crate::{Error, Lore, Result};

/// A run as the pipeline ends it.
pub struct Finished<'a> {
    pub ask: &'a Ask,
    /// What the asker could read (the run counts under its audience).
    pub reader: &'a crate::sources::Reader,
    /// The normalised question.
    pub question_key: &'a str,
    pub answer: &'a Answer,
    pub latency_ms: f64,
    /// What a cache hit saved: the estimated cost of the answer it reused.
    pub savings_usd: f64,
}

/// Queues the run (and its content gap) for recording; returns its id (the
/// trace id).
pub async fn record(lore: &Lore, run: Finished<'_>, gap: Option<Gap>) -> Result<String> {
    let Finished { ask, reader, question_key, answer, latency_ms, savings_usd } = run;
    let id = uuid::Uuid::new_v4().to_string();
    let stages = serde_json::to_value(&answer.trace.stages)
        .map_err(|err| Error::Internal(format!("serialising a trace: {err}")))?;
    let escalated = answer
        .trace
        .stages
        .iter()
        .any(|s| s.stage == crate::trace::StageName::Escalation && s.cost_usd.is_some());
    let cache_status = match answer.cache.status {
        CacheStatus::Hit => "hit",
        CacheStatus::Miss => "miss",
        CacheStatus::Bypass => "bypass",
    };
    let run = answer_run::Model {
        id: id.clone(),
        created_at: Utc::now(),
        surface: ask.surface.key().to_owned(),
        key_id: ask.key_id.clone(),
        profile_version: answer.profile_version,
        question: question_key.to_owned(),
        cache_status: cache_status.to_owned(),
        refused: answer.refused,
        grounded: answer.grounded,
        escalated,
        model: answer.trace.model.clone(),
        stages,
        input_tokens: i64::try_from(answer.trace.usage.input_tokens).unwrap_or(i64::MAX),
        output_tokens: i64::try_from(answer.trace.usage.output_tokens).unwrap_or(i64::MAX),
        estimated_cost_usd: answer.trace.usage.estimated_cost_usd,
        estimated_savings_usd: savings_usd,
        latency_ms,
        audience: Some(reader.audience()),
        asked_by: Some(ask.by.stored()),
        reply: Some(
            serde_json::to_value(super::feedback::Reply::of(&ask.question, answer))
                .map_err(|err| Error::Internal(format!("serialising a reply: {err}")))?,
        ),
    };
    lore.recorder().run(run, gap).await?;
    Ok(id)
}

/// A question Lore refused, with how often: what the corpus is missing.
#[derive(Clone, Debug, PartialEq)]
pub struct ContentGap {
    /// The normalised question (what the count is keyed by).
    pub question: String,
    /// The question as last asked.
    pub example: String,
    pub count: i64,
    pub first_seen: chrono::DateTime<Utc>,
    pub last_seen: chrono::DateTime<Utc>,
}

/// The content gaps, most asked first.
pub async fn gaps(lore: &Lore, limit: u64) -> Result<Vec<ContentGap>> {
    lore.recorder().flush().await?;
    let rows = content_gap::Entity::find()
        .order_by_desc(content_gap::Column::Count)
        .order_by_desc(content_gap::Column::LastSeen)
        .limit(limit)
        .all(&lore.db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|row| ContentGap {
            question: row.question,
            example: row.example,
            count: row.count,
            first_seen: row.first_seen,
            last_seen: row.last_seen,
        })
        .collect())
}
