//! What every run leaves behind, server-side only: an `answer_run` row
//! (surface, key, profile version, cache status, stages, tokens, estimated
//! cost, latency) and, for a refusal, a content-gap count.

use chrono::Utc;
use entity::{answer_run, content_gap};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{EntityTrait, QueryOrder, QuerySelect, Set};

use super::{Answer, Ask, CacheStatus};
use crate::{Error, Lore, Result};

/// Records the run and adds it to the Dashboard's rollups, in one
/// transaction; returns its id (the trace id). `savings_usd` is what a cache
/// hit saved: the estimated cost of the answer it reused.
pub async fn record(
    lore: &Lore,
    ask: &Ask,
    question_key: &str,
    answer: &Answer,
    latency_ms: f64,
    savings_usd: f64,
) -> Result<String> {
    let id = uuid::Uuid::new_v4().to_string();
    let stages = serde_json::to_value(&answer.trace.stages)
        .map_err(|err| Error::Internal(format!("serialising a trace: {err}")))?;
    let escalated = answer.trace.stages.iter().any(|s| s.stage == "escalation" && s.cost_usd.is_some());
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
    };
    crate::metrics::record_run(lore, run).await?;
    Ok(id)
}

/// Counts a refused question as a content gap.
pub async fn record_gap(lore: &Lore, question_key: &str, asked: &str) -> Result<()> {
    let id = crate::keys::hash(question_key);
    let now = Utc::now();
    content_gap::Entity::insert(content_gap::ActiveModel {
        id: Set(id),
        question: Set(question_key.to_owned()),
        example: Set(asked.to_owned()),
        count: Set(1),
        first_seen: Set(now),
        last_seen: Set(now),
    })
    .on_conflict(
        OnConflict::column(content_gap::Column::Id)
            .value(
                content_gap::Column::Count,
                Expr::col((content_gap::Entity, content_gap::Column::Count)).add(1),
            )
            .value(content_gap::Column::LastSeen, Expr::value(now))
            .value(content_gap::Column::Example, Expr::value(asked.to_owned()))
            .to_owned(),
    )
    .exec_without_returning(&lore.db)
    .await?;
    Ok(())
}

/// The content gaps, most asked first.
pub async fn gaps(lore: &Lore, limit: u64) -> Result<Vec<content_gap::Model>> {
    Ok(content_gap::Entity::find()
        .order_by_desc(content_gap::Column::Count)
        .order_by_desc(content_gap::Column::LastSeen)
        .limit(limit)
        .all(&lore.db)
        .await?)
}
