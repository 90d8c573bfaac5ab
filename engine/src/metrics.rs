//! The Dashboard's rollups, and the aggregates read from them.
//!
//! Every answer run adds its contribution to three tables in the same
//! transaction that records the run ([`add_run`]):
//!
//! - `metric_rollup`: per UTC hour and per UTC day, per surface: queries,
//!   cache hits, refusals, estimated spend and savings, summed latency;
//! - `metric_latency`: the latency histogram of the same buckets (slots 10%
//!   wide, so the p95 read from them is the slot's upper edge, at most 10%
//!   above the exact value);
//! - `rollup_count`: per UTC day, the Dashboard's lists: top queries, content
//!   gaps (refused questions), the same two per audience (who asked, as far
//!   as reading goes: `admin`, `everyone`, `role:NAME`), per-key usage
//!   (keyless playground, CLI and admin traffic under "no access key"), and
//!   the cost funnel, one row per (stage, decision) with a reason recorded
//!   for it (reasons carry counts, so they are not part of the key).
//!
//! Every column is a sum, so runs add to them with `ON CONFLICT … DO UPDATE
//! SET n = n + excluded` and never read-modify-write. [`rebuild`] recomputes
//! all three from the runs with the same [`Contribution`], so a rebuild equals
//! what the live path wrote. [`dashboard`] reads only these tables.
//!
//! Questions have a long tail: a busy day holds thousands of distinct ones,
//! and summing a month of them per question is what made a 30-day Dashboard
//! slow. Once a UTC day has closed, [`close_days`] keeps its
//! [`KEPT_PER_DAY`] most asked questions (and content gaps) and folds the rest
//! into one tail row per day, so a range reads at most that many rows per
//! day. Today stays exact; a question's count over a range misses only the
//! closed days on which it was not among that day's most asked.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, DurationRound, TimeDelta, Utc};
use entity::{access_key, answer_run, metric_latency, metric_rollup, rollup_count};
use sea_orm::sea_query::{Alias, Expr, Func, OnConflict, SimpleExpr};
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde::{Deserialize, Serialize};

use crate::sources::Reader;
use crate::{Error, Lore, Result};

/// Each latency slot's upper edge is 10% above the one before.
const SLOT_GROWTH: f64 = 1.1;
/// Slot 0 holds everything up to 1 ms; the last slot everything past ~33 min.
const MAX_SLOT: i32 = 160;
/// Ranges up to this long are shown per hour, longer ones per day.
const HOURLY_UP_TO_HOURS: i64 = 72;
/// Rows in the Dashboard's top-queries and content-gap lists.
const LIST_LENGTH: u64 = 10;
/// The label of runs that no access key made.
pub const NO_ACCESS_KEY: &str = "no access key";
/// Questions (and content gaps) kept per closed day; see [`close_days`].
pub const KEPT_PER_DAY: usize = 200;
/// The key of a closed day's tail row (question keys are 64 hex digits).
const TAIL_KEY: &str = "";
/// The cluster setting naming the last day [`close_days`] closed.
const CLOSED_THROUGH: &str = "rollups.closed_through";
/// The kinds of `rollup_count` rows whose long tail is folded.
const FOLDED_KINDS: [&str; 4] = ["query", "gap", "audience_query", "audience_gap"];

/// The histogram slot a latency falls in.
pub fn latency_slot(ms: f64) -> i32 {
    if ms.is_nan() || ms <= 1.0 {
        return 0;
    }
    let slot = (ms.ln() / SLOT_GROWTH.ln()).ceil();
    if slot >= f64::from(MAX_SLOT) {
        MAX_SLOT
    } else {
        slot as i32
    }
}

/// A slot's upper edge in milliseconds: the p95 the Dashboard reports when
/// the 95th percentile falls in it.
pub fn slot_upper_ms(slot: i32) -> f64 {
    SLOT_GROWTH.powi(slot)
}

/// The p95 of a histogram (slot → count): the upper edge of the slot holding
/// the 95th percentile run; 0 when empty.
pub fn p95(histogram: &BTreeMap<i32, i64>) -> f64 {
    let total: i64 = histogram.values().sum();
    if total == 0 {
        return 0.0;
    }
    let rank = (total * 95 + 99) / 100;
    let mut seen = 0;
    for (&slot, &count) in histogram {
        seen += count;
        if seen >= rank {
            return slot_upper_ms(slot);
        }
    }
    histogram.keys().next_back().map_or(0.0, |&slot| slot_upper_ms(slot))
}

fn truncate(at: DateTime<Utc>, granularity: Granularity) -> DateTime<Utc> {
    let step = granularity.step();
    at.duration_trunc(step).unwrap_or(at)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    Hour,
    Day,
}

impl Granularity {
    pub fn key(self) -> &'static str {
        match self {
            Granularity::Hour => "hour",
            Granularity::Day => "day",
        }
    }

    fn step(self) -> TimeDelta {
        match self {
            Granularity::Hour => Duration::hours(1),
            Granularity::Day => Duration::days(1),
        }
    }
}

/// The sums a rollup row holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sums {
    pub queries: i64,
    pub cache_hits: i64,
    pub refusals: i64,
    pub spend_usd: f64,
    pub savings_usd: f64,
    pub latency_ms_sum: f64,
    /// Ratings of the bucket's runs.
    pub helpful: i64,
    pub unhelpful: i64,
}

impl Sums {
    /// What one run adds.
    fn of_run(run: &RunFacts) -> Self {
        Sums {
            queries: 1,
            cache_hits: i64::from(run.cache_hit),
            refusals: i64::from(run.refused),
            spend_usd: run.estimated_cost_usd,
            savings_usd: run.estimated_savings_usd,
            latency_ms_sum: run.latency_ms,
            helpful: 0,
            unhelpful: 0,
        }
    }

    fn of_row(row: &metric_rollup::Model) -> Self {
        Sums {
            queries: row.queries,
            cache_hits: row.cache_hits,
            refusals: row.refusals,
            spend_usd: row.spend_usd,
            savings_usd: row.savings_usd,
            latency_ms_sum: row.latency_ms_sum,
            helpful: row.helpful,
            unhelpful: row.unhelpful,
        }
    }

    fn add(&mut self, other: &Sums) {
        self.queries += other.queries;
        self.cache_hits += other.cache_hits;
        self.refusals += other.refusals;
        self.spend_usd += other.spend_usd;
        self.savings_usd += other.savings_usd;
        self.latency_ms_sum += other.latency_ms_sum;
        self.helpful += other.helpful;
        self.unhelpful += other.unhelpful;
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Counted {
    label: String,
    detail: String,
    count: i64,
    spend_usd: f64,
    helpful: i64,
    unhelpful: i64,
}

/// What runs add to the rollups, summed in memory: one run's contribution
/// on the live path, every run's in [`rebuild`].
#[derive(Debug, Default)]
pub struct Contribution {
    rollups: BTreeMap<(Granularity, DateTime<Utc>, String), Sums>,
    latency: BTreeMap<(Granularity, DateTime<Utc>, String, i32), i64>,
    counts: BTreeMap<(DateTime<Utc>, &'static str, String), Counted>,
}

/// One stage of a recorded trace, as much of it as the funnel needs.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct RecordedStage {
    pub stage: String,
    pub decision: String,
    #[serde(default)]
    pub reason: String,
    /// What the stage's model call cost (generation, escalation).
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// What one answer run adds to the rollups: the recorded run with its trace
/// decoded (once, here; a trace that cannot be read is an error naming the
/// run, never an empty funnel).
#[derive(Clone, Debug, PartialEq)]
pub struct RunFacts {
    pub created_at: DateTime<Utc>,
    /// `api`, `widget`, `playground`, `mcp` or `cli`.
    pub surface: String,
    pub key_id: Option<String>,
    pub profile_version: i32,
    pub question: String,
    pub cache_hit: bool,
    pub refused: bool,
    pub stages: Vec<RecordedStage>,
    pub estimated_cost_usd: f64,
    pub estimated_savings_usd: f64,
    pub latency_ms: f64,
    /// `admin`, `everyone` or `role:NAME` (none for runs recorded before
    /// audiences).
    pub audience: Option<String>,
}

impl RunFacts {
    pub fn decode(run: &answer_run::Model) -> Result<RunFacts> {
        let stages = serde_json::from_value(run.stages.clone()).map_err(|err| {
            crate::Error::Internal(format!("answer run {}: its stored trace cannot be read: {err}", run.id))
        })?;
        Ok(RunFacts {
            created_at: run.created_at,
            surface: run.surface.clone(),
            key_id: run.key_id.clone(),
            profile_version: run.profile_version,
            question: run.question.clone(),
            cache_hit: run.cache_status == "hit",
            refused: run.refused,
            stages,
            estimated_cost_usd: run.estimated_cost_usd,
            estimated_savings_usd: run.estimated_savings_usd,
            latency_ms: run.latency_ms,
            audience: run.audience.clone(),
        })
    }
}

/// What a rating is counted under: its run's time, surface, key and
/// profile version (as the rating row keeps them).
#[derive(Clone, Debug, PartialEq)]
pub struct RatedRun {
    pub asked_at: DateTime<Utc>,
    pub surface: String,
    pub key_id: Option<String>,
    pub profile_version: i32,
}

impl RatedRun {
    pub fn of(rating: &entity::answer_rating::Model) -> Self {
        RatedRun {
            asked_at: rating.asked_at,
            surface: rating.surface.clone(),
            key_id: rating.key_id.clone(),
            profile_version: rating.profile_version,
        }
    }
}

/// The key and label of a key's `rollup_count` row: the key id, or the
/// empty key labelled [`NO_ACCESS_KEY`] for keyless runs.
fn key_row(key_id: Option<&str>) -> (String, String) {
    (key_id.unwrap_or_default().to_owned(), key_id.unwrap_or(NO_ACCESS_KEY).to_owned())
}

impl Contribution {
    pub fn add(&mut self, run: &RunFacts) {
        let contributed = Sums::of_run(run);
        for granularity in [Granularity::Hour, Granularity::Day] {
            let bucket = truncate(run.created_at, granularity);
            self.rollups.entry((granularity, bucket, run.surface.clone())).or_default().add(&contributed);
            *self
                .latency
                .entry((granularity, bucket, run.surface.clone(), latency_slot(run.latency_ms)))
                .or_default() += 1;
        }

        let day = truncate(run.created_at, Granularity::Day);
        let mut count = |kind: &'static str, key: String, label: &str, detail: &str, spend: f64| {
            let counted = self.counts.entry((day, kind, key)).or_default();
            label.clone_into(&mut counted.label);
            detail.clone_into(&mut counted.detail);
            counted.count += 1;
            counted.spend_usd += spend;
        };
        let question_key = crate::keys::hash(&run.question);
        count("query", question_key.clone(), &run.question, "", run.estimated_cost_usd);
        if run.refused {
            count("gap", question_key, &run.question, "", 0.0);
        }
        if let Some(audience) = &run.audience {
            let key = crate::keys::hash(&format!("{audience}\n{}", run.question));
            count("audience_query", key.clone(), &run.question, audience, run.estimated_cost_usd);
            if run.refused {
                count("audience_gap", key, &run.question, audience, 0.0);
            }
        }
        let (key, label) = key_row(run.key_id.as_deref());
        count("key", key, &label, "", run.estimated_cost_usd);
        let version = run.profile_version.to_string();
        count("version", version.clone(), &version, "", run.estimated_cost_usd);
        for stage in &run.stages {
            let name = format!("{}/{}", stage.stage, stage.decision);
            count("funnel", name.clone(), &name, &stage.reason, stage.cost_usd.unwrap_or(0.0));
        }
    }

    /// Adds a change of one run's rating: `helpful` and `unhelpful` are
    /// each +1, -1 (the rating it replaces) or 0. Counted under the run's
    /// hour and day, surface, key and profile version, beside what the run
    /// added, so the helpful rate reads as the share of the answers served
    /// then that their askers found helpful.
    pub fn rate(&mut self, run: &RatedRun, helpful: i64, unhelpful: i64) {
        let rated = Sums { helpful, unhelpful, ..Sums::default() };
        for granularity in [Granularity::Hour, Granularity::Day] {
            let bucket = truncate(run.asked_at, granularity);
            self.rollups.entry((granularity, bucket, run.surface.clone())).or_default().add(&rated);
        }
        let day = truncate(run.asked_at, Granularity::Day);
        let version = run.profile_version.to_string();
        let (key, label) = key_row(run.key_id.as_deref());
        for (kind, key, label) in [("key", key, label), ("version", version.clone(), version)] {
            let counted = self.counts.entry((day, kind, key)).or_default();
            counted.label = label;
            counted.helpful += helpful;
            counted.unhelpful += unhelpful;
        }
    }

    /// Adds the contribution to the stored rollups (the live path).
    pub async fn add_to(&self, db: &impl ConnectionTrait) -> Result<()> {
        // One multi-row upsert per table: a run touches a dozen rows, and on
        // the answer path each statement is a round trip.
        use metric_rollup::Column as R;
        if !self.rollups.is_empty() {
            let plus = |column: R| summed(metric_rollup::Entity, column);
            metric_rollup::Entity::insert_many(
                self.rollups
                    .iter()
                    .map(|((g, bucket, surface), sums)| rollup_row(*g, *bucket, surface, sums)),
            )
            .on_conflict(
                OnConflict::columns([R::Granularity, R::Bucket, R::Surface])
                    .value(R::Queries, plus(R::Queries))
                    .value(R::CacheHits, plus(R::CacheHits))
                    .value(R::Refusals, plus(R::Refusals))
                    .value(R::SpendUsd, plus(R::SpendUsd))
                    .value(R::SavingsUsd, plus(R::SavingsUsd))
                    .value(R::LatencyMsSum, plus(R::LatencyMsSum))
                    .value(R::Helpful, plus(R::Helpful))
                    .value(R::Unhelpful, plus(R::Unhelpful))
                    .to_owned(),
            )
            .exec_without_returning(db)
            .await?;
        }
        use metric_latency::Column as L;
        if !self.latency.is_empty() {
            metric_latency::Entity::insert_many(
                self.latency.iter().map(|((g, bucket, surface, slot), count)| {
                    latency_row(*g, *bucket, surface, *slot, *count)
                }),
            )
            .on_conflict(
                OnConflict::columns([L::Granularity, L::Bucket, L::Surface, L::Slot])
                    .value(L::Count, summed(metric_latency::Entity, L::Count))
                    .to_owned(),
            )
            .exec_without_returning(db)
            .await?;
        }
        add_counts(
            db,
            self.counts.iter().map(|((day, kind, key), counted)| count_row(*day, kind, key, counted)),
        )
        .await
    }

    /// Writes the contribution into empty rollup tables (a rebuild, or a
    /// benchmark's bulk load); returns the rows written.
    pub async fn insert_into(self, db: &impl ConnectionTrait) -> Result<usize> {
        const BATCH: usize = 500;
        let mut written = 0;
        let rollups: Vec<_> = self
            .rollups
            .iter()
            .map(|((g, bucket, surface), sums)| rollup_row(*g, *bucket, surface, sums))
            .collect();
        for batch in rollups.chunks(BATCH) {
            metric_rollup::Entity::insert_many(batch.to_vec()).exec_without_returning(db).await?;
            written += batch.len();
        }
        let latency: Vec<_> = self
            .latency
            .iter()
            .map(|((g, bucket, surface, slot), count)| latency_row(*g, *bucket, surface, *slot, *count))
            .collect();
        for batch in latency.chunks(BATCH) {
            metric_latency::Entity::insert_many(batch.to_vec()).exec_without_returning(db).await?;
            written += batch.len();
        }
        let counts: Vec<_> = self
            .counts
            .iter()
            .map(|((day, kind, key), counted)| count_row(*day, kind, key, counted))
            .collect();
        for batch in counts.chunks(BATCH) {
            rollup_count::Entity::insert_many(batch.to_vec()).exec_without_returning(db).await?;
            written += batch.len();
        }
        Ok(written)
    }
}

/// `excluded`, the row an `ON CONFLICT` insert proposed (SQLite and PostgreSQL).
#[derive(Clone, Copy)]
pub(crate) struct Excluded;

impl sea_orm::sea_query::Iden for Excluded {
    fn unquoted(&self, s: &mut dyn std::fmt::Write) {
        let _ = s.write_str("excluded");
    }
}

/// `table.column + excluded.column`: an upsert's update that adds what it
/// proposed to what is stored.
pub(crate) fn summed<T, C>(table: T, column: C) -> sea_orm::sea_query::SimpleExpr
where
    T: sea_orm::sea_query::IntoIden + 'static,
    C: sea_orm::sea_query::IntoIden + Copy + 'static,
{
    Expr::col((table, column)).add(Expr::col((Excluded, column)))
}

fn rollup_row(
    granularity: Granularity,
    bucket: DateTime<Utc>,
    surface: &str,
    sums: &Sums,
) -> metric_rollup::ActiveModel {
    metric_rollup::ActiveModel {
        granularity: Set(granularity.key().to_owned()),
        bucket: Set(bucket),
        surface: Set(surface.to_owned()),
        queries: Set(sums.queries),
        cache_hits: Set(sums.cache_hits),
        refusals: Set(sums.refusals),
        spend_usd: Set(sums.spend_usd),
        savings_usd: Set(sums.savings_usd),
        latency_ms_sum: Set(sums.latency_ms_sum),
        helpful: Set(sums.helpful),
        unhelpful: Set(sums.unhelpful),
    }
}

fn latency_row(
    granularity: Granularity,
    bucket: DateTime<Utc>,
    surface: &str,
    slot: i32,
    count: i64,
) -> metric_latency::ActiveModel {
    metric_latency::ActiveModel {
        granularity: Set(granularity.key().to_owned()),
        bucket: Set(bucket),
        surface: Set(surface.to_owned()),
        slot: Set(slot),
        count: Set(count),
    }
}

fn count_row(day: DateTime<Utc>, kind: &str, key: &str, counted: &Counted) -> rollup_count::ActiveModel {
    rollup_count::ActiveModel {
        day: Set(day),
        kind: Set(kind.to_owned()),
        key: Set(key.to_owned()),
        label: Set(counted.label.clone()),
        detail: Set(counted.detail.clone()),
        count: Set(counted.count),
        spend_usd: Set(counted.spend_usd),
        helpful: Set(counted.helpful),
        unhelpful: Set(counted.unhelpful),
    }
}

/// Adds `counted` to the `rollup_count` row of (`day`, `kind`, `key`),
/// creating it if missing; the label and detail become the latest ones.
/// Adds `rows` to the counts (a key's count and spend are summed, its label
/// and detail replaced), a statement per 500 rows.
async fn add_counts(
    db: &impl ConnectionTrait,
    rows: impl IntoIterator<Item = rollup_count::ActiveModel>,
) -> Result<()> {
    use rollup_count::Column as C;
    const BATCH: usize = 500;
    let rows: Vec<_> = rows.into_iter().collect();
    let plus = |column: C| summed(rollup_count::Entity, column);
    for batch in rows.chunks(BATCH) {
        rollup_count::Entity::insert_many(batch.to_vec())
            .on_conflict(
                OnConflict::columns([C::Day, C::Kind, C::Key])
                    .value(C::Count, plus(C::Count))
                    .value(C::SpendUsd, plus(C::SpendUsd))
                    .value(C::Helpful, plus(C::Helpful))
                    .value(C::Unhelpful, plus(C::Unhelpful))
                    .value(C::Label, Expr::col((Excluded, C::Label)))
                    .value(C::Detail, Expr::col((Excluded, C::Detail)))
                    .to_owned(),
            )
            .exec_without_returning(db)
            .await?;
    }
    Ok(())
}

/// Records `run` and adds it to the rollups, in one transaction. The answer
/// path records through [`crate::recorder::Recorder`] instead, which
/// batches.
pub async fn record_run(lore: &Lore, run: answer_run::Model) -> Result<()> {
    let txn = crate::store::begin_write(&lore.db).await?;
    add_runs(&txn, &[run]).await?;
    txn.commit().await?;
    Ok(())
}

/// Inserts `runs` and adds them to the rollups: a handful of statements
/// whatever their number (the caller's transaction makes them one write).
pub async fn add_runs(db: &impl ConnectionTrait, runs: &[answer_run::Model]) -> Result<()> {
    // Well under either database's limit of bound values per statement.
    const ROWS_PER_INSERT: usize = 100;
    let mut contribution = Contribution::default();
    for batch in runs.chunks(ROWS_PER_INSERT) {
        for run in batch {
            contribution.add(&RunFacts::decode(run)?);
        }
        let rows = batch.iter().cloned().map(sea_orm::IntoActiveModel::into_active_model);
        answer_run::Entity::insert_many(rows).exec_without_returning(db).await?;
    }
    contribution.add_to(db).await
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rebuilt {
    pub runs: u64,
    pub rows: usize,
}

/// Recomputes every rollup from the recorded runs (`lore rollups rebuild`),
/// replacing what is stored in one transaction.
pub async fn rebuild(lore: &Lore) -> Result<Rebuilt> {
    lore.recorder().flush().await?;
    const PAGE: u64 = 2_000;
    let txn = crate::store::begin_locked(&lore.db, crate::store::Lock::Rollups).await?;
    let mut contribution = Contribution::default();
    let mut pages = answer_run::Entity::find()
        .order_by_asc(answer_run::Column::CreatedAt)
        .order_by_asc(answer_run::Column::Id)
        .paginate(&txn, PAGE);
    let mut runs = 0;
    while let Some(page) = pages.fetch_and_next().await? {
        runs += page.len() as u64;
        for run in &page {
            contribution.add(&RunFacts::decode(run)?);
        }
    }
    let mut ratings = entity::answer_rating::Entity::find()
        .order_by_asc(entity::answer_rating::Column::RunId)
        .paginate(&txn, PAGE);
    while let Some(page) = ratings.fetch_and_next().await? {
        for rating in &page {
            let helpful = i64::from(rating.helpful);
            contribution.rate(&RatedRun::of(rating), helpful, 1 - helpful);
        }
    }
    metric_rollup::Entity::delete_many().exec(&txn).await?;
    metric_latency::Entity::delete_many().exec(&txn).await?;
    rollup_count::Entity::delete_many().exec(&txn).await?;
    let rows = contribution.insert_into(&txn).await?;
    crate::store::delete_setting(&txn, CLOSED_THROUGH).await?;
    txn.commit().await?;
    let folded = close_days(lore, Utc::now()).await?;
    Ok(Rebuilt { runs, rows: rows - folded.folded + folded.tails })
}

/// What [`close_days`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Closed {
    /// Days whose lists were folded.
    pub days: usize,
    /// Rows folded into tail rows.
    pub folded: usize,
    /// Tail rows written.
    pub tails: usize,
}

/// Folds the long tail of every closed UTC day before `now`'s (the days since
/// the last call): per day, the [`KEPT_PER_DAY`] most counted questions and
/// content gaps keep their rows, the rest become one tail row that keeps
/// their sums. Idempotent, also when several replicas fold at once; each day
/// is folded in its own transaction, so an interruption leaves every day
/// either folded or as it was.
pub async fn close_days(lore: &Lore, now: DateTime<Utc>) -> Result<Closed> {
    lore.recorder().flush().await?;
    use rollup_count::Column as C;
    let today = truncate(now, Granularity::Day);
    let closed_through: Option<DateTime<Utc>> = crate::store::setting(&lore.db, CLOSED_THROUGH)
        .await?
        .map(|value| crate::store::decode("last closed rollup day", value))
        .transpose()?;
    let mut days = rollup_count::Entity::find()
        .select_only()
        .column(C::Day)
        .distinct()
        .filter(C::Kind.is_in(FOLDED_KINDS))
        .filter(C::Day.lt(today))
        .order_by_asc(C::Day);
    if let Some(through) = closed_through {
        days = days.filter(C::Day.gt(through));
    }
    let days: Vec<DateTime<Utc>> = days.into_tuple().all(&lore.db).await?;

    let mut closed = Closed::default();
    for day in days {
        // Under the rollups lock: a replica folding the same day at once
        // waits, then finds only the kept rows past the cut (nothing to
        // fold), so no row reaches the tail twice.
        let txn = crate::store::begin_locked(&lore.db, crate::store::Lock::Rollups).await?;
        let mut folded_today = false;
        // Lists kept per audience keep their most asked per audience.
        let mut groups: Vec<(&str, Option<String>)> = Vec::new();
        for kind in FOLDED_KINDS {
            if kind.starts_with("audience_") {
                let audiences: Vec<String> = rollup_count::Entity::find()
                    .select_only()
                    .column(C::Detail)
                    .distinct()
                    .filter(C::Day.eq(day))
                    .filter(C::Kind.eq(kind))
                    .filter(C::Key.ne(TAIL_KEY))
                    .into_tuple()
                    .all(&txn)
                    .await?;
                groups.extend(audiences.into_iter().map(|audience| (kind, Some(audience))));
            } else {
                groups.push((kind, None));
            }
        }
        // The audiences of one kind share its tail row.
        let mut tailed: Vec<&str> = Vec::new();
        for (kind, audience) in groups {
            let mut past_the_cut = rollup_count::Entity::find()
                .select_only()
                .columns([C::Key, C::Count, C::SpendUsd])
                .filter(C::Day.eq(day))
                .filter(C::Kind.eq(kind))
                .filter(C::Key.ne(TAIL_KEY));
            if let Some(audience) = audience {
                past_the_cut = past_the_cut.filter(C::Detail.eq(audience));
            }
            let rows: Vec<(String, i64, f64)> = past_the_cut
                .order_by_desc(C::Count)
                .order_by_asc(C::Key)
                .offset(KEPT_PER_DAY as u64)
                .limit(u64::MAX >> 1)
                .into_tuple()
                .all(&txn)
                .await?;
            if rows.is_empty() {
                continue;
            }
            let tail = Counted {
                label: String::new(),
                detail: String::new(),
                count: rows.iter().map(|(_, count, _)| count).sum(),
                spend_usd: rows.iter().map(|(_, _, spend)| spend).sum(),
                // Questions and gaps carry no ratings (keys and versions do).
                ..Counted::default()
            };
            for keys in rows.chunks(500) {
                rollup_count::Entity::delete_many()
                    .filter(C::Day.eq(day))
                    .filter(C::Kind.eq(kind))
                    .filter(C::Key.is_in(keys.iter().map(|(key, _, _)| key.as_str())))
                    .exec(&txn)
                    .await?;
            }
            add_counts(&txn, [count_row(day, kind, TAIL_KEY, &tail)]).await?;
            closed.folded += rows.len();
            if !tailed.contains(&kind) {
                tailed.push(kind);
                closed.tails += 1;
            }
            folded_today = true;
        }
        txn.commit().await?;
        closed.days += usize::from(folded_today);
    }
    let through = today - Duration::days(1);
    crate::store::put_setting(&lore.db, CLOSED_THROUGH, serde_json::json!(through), "rollups").await?;
    Ok(closed)
}

/// Folds closed days every hour while `lore serve` runs (and once at start,
/// for the days it was down). Returns when `stop` flips.
pub async fn keep_closing_days(lore: Lore, mut stop: tokio::sync::watch::Receiver<bool>) {
    loop {
        match close_days(&lore, Utc::now()).await {
            Ok(closed) if closed.folded > 0 => {
                tracing::info!(
                    days = closed.days,
                    rows = closed.folded,
                    "folded the long tail of closed days"
                )
            }
            Ok(_) => {}
            Err(err) => tracing::error!(error = %err, "folding closed days failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(3600)) => {}
            _ = stop.changed() => return,
        }
    }
}

/// A time range of the Dashboard: `[from, to)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

impl Range {
    /// The last `hours` hours up to `now`.
    pub fn last_hours(now: DateTime<Utc>, hours: i64) -> Self {
        Range { from: now - Duration::hours(hours), to: now }
    }

    pub fn granularity(&self) -> Granularity {
        if self.to - self.from <= Duration::hours(HOURLY_UP_TO_HOURS) {
            Granularity::Hour
        } else {
            Granularity::Day
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    pub queries: i64,
    pub cache_hits: i64,
    /// Cache hits per query (0 without queries).
    pub hit_rate: f64,
    pub refusals: i64,
    pub spend_usd: f64,
    pub savings_usd: f64,
    pub p95_ms: f64,
    /// Answers rated helpful and unhelpful by whoever asked them.
    pub helpful: i64,
    pub unhelpful: i64,
    /// Helpful ratings per rating (none without ratings).
    pub helpful_rate: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    pub bucket: DateTime<Utc>,
    #[serde(flatten)]
    pub totals: Totals,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SurfaceTotals {
    pub surface: String,
    #[serde(flatten)]
    pub totals: Totals,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueryCount {
    pub query: String,
    pub count: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeyUsage {
    /// None for runs no access key made.
    pub key_id: Option<String>,
    /// The key's name, or "no access key".
    pub name: String,
    pub queries: i64,
    pub spend_usd: f64,
    pub helpful: i64,
    pub unhelpful: i64,
}

/// The answers one profile version served in the range, and their ratings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VersionUsage {
    pub version: i32,
    pub queries: i64,
    pub helpful: i64,
    pub unhelpful: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FunnelStage {
    pub stage: String,
    pub decision: String,
    /// One reason recorded for it (the same stage and decision can have
    /// several, such as candidate counts).
    pub reason: String,
    pub count: i64,
    /// What the stage's model calls cost in all (0 for stages that call none).
    pub spend_usd: f64,
}

/// Everything the Dashboard shows for a range, from the rollups alone.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Dashboard {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub granularity: Granularity,
    pub totals: Totals,
    /// One point per bucket of the range, empty buckets included.
    pub series: Vec<Point>,
    pub surfaces: Vec<SurfaceTotals>,
    /// The audience `top_queries`, `content_gaps` and `gap_groups` are of
    /// (`None`: every caller's).
    pub audience: Option<String>,
    /// The audiences that asked in the range, to choose from.
    pub audiences: Vec<String>,
    pub top_queries: Vec<QueryCount>,
    pub content_gaps: Vec<QueryCount>,
    /// Refused questions grouped by meaning, most refused group first.
    pub gap_groups: Vec<crate::answer::gaps::GapGroup>,
    pub keys: Vec<KeyUsage>,
    /// Per profile version, newest first.
    pub versions: Vec<VersionUsage>,
    pub funnel: Vec<FunnelStage>,
}

#[derive(Default)]
struct Bucketed {
    sums: Sums,
    histogram: BTreeMap<i32, i64>,
}

impl Bucketed {
    fn merge(&mut self, other: &Bucketed) {
        self.sums.add(&other.sums);
        for (slot, count) in &other.histogram {
            *self.histogram.entry(*slot).or_default() += count;
        }
    }

    fn totals(&self) -> Totals {
        let s = &self.sums;
        Totals {
            queries: s.queries,
            cache_hits: s.cache_hits,
            hit_rate: if s.queries == 0 { 0.0 } else { s.cache_hits as f64 / s.queries as f64 },
            refusals: s.refusals,
            spend_usd: s.spend_usd,
            savings_usd: s.savings_usd,
            p95_ms: p95(&self.histogram),
            helpful: s.helpful,
            unhelpful: s.unhelpful,
            helpful_rate: helpful_rate(s.helpful, s.unhelpful),
        }
    }
}

/// Helpful ratings per rating; none without ratings.
pub fn helpful_rate(helpful: i64, unhelpful: i64) -> Option<f64> {
    let rated = helpful + unhelpful;
    (rated > 0).then(|| helpful as f64 / rated as f64)
}

/// The Dashboard's aggregates for `range`, read from the rollup tables only
/// (and the access keys' names). Lists are kept per UTC day, so they cover
/// the whole days the range touches.
pub async fn dashboard(lore: &Lore, range: Range) -> Result<Dashboard> {
    analytics(lore, &Reader::Everything, range, None).await
}

/// The aggregates of [`dashboard`] as `reader` may see them, with the
/// question lists of `audience` (`admin`, `everyone`, `role:NAME`) when one
/// is named. A reader of everything sees them all; anyone else sees the
/// lists of its own audience only, whatever it names (questions asked by
/// others may name what it cannot read), no access keys, and the funnel's
/// counts without their reasons (which quote answers and pinned
/// questions).
pub async fn analytics(
    lore: &Lore,
    reader: &Reader,
    range: Range,
    audience: Option<&str>,
) -> Result<Dashboard> {
    let own = (*reader != Reader::Everything).then(|| reader.audience());
    let audience = match &own {
        Some(own) => Some(own.as_str()),
        None => audience.map(str::trim).filter(|a| !a.is_empty()),
    };
    if range.to <= range.from {
        return Err(Error::InvalidInput("the range must end after it starts".into()));
    }
    lore.recorder().flush().await?;
    if range.to - range.from > Duration::days(400) {
        return Err(Error::InvalidInput("the range may span at most 400 days".into()));
    }
    let granularity = range.granularity();
    let first = truncate(range.from, granularity);

    let mut buckets: BTreeMap<(DateTime<Utc>, String), Bucketed> = BTreeMap::new();
    let rows = metric_rollup::Entity::find()
        .filter(metric_rollup::Column::Granularity.eq(granularity.key()))
        .filter(metric_rollup::Column::Bucket.gte(first))
        .filter(metric_rollup::Column::Bucket.lt(range.to))
        .all(&lore.db)
        .await?;
    for row in rows {
        let sums = Sums::of_row(&row);
        buckets.entry((row.bucket, row.surface)).or_default().sums = sums;
    }
    let slots = metric_latency::Entity::find()
        .filter(metric_latency::Column::Granularity.eq(granularity.key()))
        .filter(metric_latency::Column::Bucket.gte(first))
        .filter(metric_latency::Column::Bucket.lt(range.to))
        .all(&lore.db)
        .await?;
    for slot in slots {
        *buckets.entry((slot.bucket, slot.surface)).or_default().histogram.entry(slot.slot).or_default() +=
            slot.count;
    }

    let mut total = Bucketed::default();
    let mut per_bucket: BTreeMap<DateTime<Utc>, Bucketed> = BTreeMap::new();
    let mut per_surface: BTreeMap<String, Bucketed> = BTreeMap::new();
    for ((bucket, surface), bucketed) in &buckets {
        total.merge(bucketed);
        per_bucket.entry(*bucket).or_default().merge(bucketed);
        per_surface.entry(surface.clone()).or_default().merge(bucketed);
    }
    let mut series = Vec::new();
    let mut at = first;
    while at < range.to {
        let totals = per_bucket.get(&at).map(Bucketed::totals).unwrap_or_default();
        series.push(Point { bucket: at, totals });
        at += granularity.step();
    }

    let day_from = truncate(range.from, Granularity::Day);
    let days = (day_from, range.to);
    let (query_kind, gap_kind) = match audience {
        Some(_) => ("audience_query", "audience_gap"),
        None => ("query", "gap"),
    };
    let queries = counted(lore, query_kind, audience, days, Some(LIST_LENGTH)).await?;
    let gaps: Vec<QueryCount> =
        counted(lore, gap_kind, audience, days, Some(crate::answer::gaps::GROUPED_AT_MOST as u64))
            .await?
            .iter()
            .map(|c| QueryCount { query: c.label.clone(), count: c.count })
            .collect();
    let mut gap_groups = crate::answer::gaps::group(lore, &gaps).await;
    gap_groups.truncate(LIST_LENGTH as usize);
    let audiences = match &own {
        Some(own) => vec![own.clone()],
        None => audiences(lore, days).await?,
    };
    let keys = if own.is_some() { Vec::new() } else { counted(lore, "key", None, days, None).await? };
    let funnel = counted(lore, "funnel", None, days, None).await?;
    let mut versions: Vec<VersionUsage> = counted(lore, "version", None, days, None)
        .await?
        .into_iter()
        .filter_map(|c| {
            let version = c.key.parse().ok()?;
            Some(VersionUsage { version, queries: c.count, helpful: c.helpful, unhelpful: c.unhelpful })
        })
        .collect();
    versions.sort_by_key(|v| std::cmp::Reverse(v.version));
    let names: BTreeMap<String, String> =
        access_key::Entity::find().all(&lore.db).await?.into_iter().map(|k| (k.id, k.name)).collect();

    Ok(Dashboard {
        from: range.from,
        to: range.to,
        granularity,
        totals: total.totals(),
        series,
        surfaces: per_surface
            .into_iter()
            .map(|(surface, bucketed)| SurfaceTotals { surface, totals: bucketed.totals() })
            .collect(),
        audience: audience.map(str::to_owned),
        audiences,
        top_queries: queries.iter().map(|c| QueryCount { query: c.label.clone(), count: c.count }).collect(),
        content_gaps: gaps.into_iter().take(LIST_LENGTH as usize).collect(),
        gap_groups,
        keys: keys
            .into_iter()
            .map(|c| {
                let key_id = (!c.key.is_empty()).then_some(c.key);
                let name = match &key_id {
                    Some(id) => names.get(id).cloned().unwrap_or_else(|| id.clone()),
                    None => NO_ACCESS_KEY.to_owned(),
                };
                KeyUsage {
                    key_id,
                    name,
                    queries: c.count,
                    spend_usd: c.spend_usd,
                    helpful: c.helpful,
                    unhelpful: c.unhelpful,
                }
            })
            .collect(),
        versions,
        funnel: {
            let mut stages: Vec<FunnelStage> = funnel
                .into_iter()
                .map(|c| {
                    let (stage, decision) = c.label.split_once('/').unwrap_or((c.label.as_str(), ""));
                    FunnelStage {
                        stage: stage.to_owned(),
                        decision: decision.to_owned(),
                        reason: c.detail.clone(),
                        count: c.count,
                        spend_usd: c.spend_usd,
                    }
                })
                .collect();
            stages.sort_by_key(|s| (stage_order(&s.stage), std::cmp::Reverse(s.count)));
            if own.is_some() {
                stages.iter_mut().for_each(|s| s.reason.clear());
            }
            stages
        },
    })
}

/// The pipeline's order of stages, for the funnel (a name no stage has any
/// more sorts last).
fn stage_order(stage: &str) -> usize {
    crate::trace::StageName::parse(stage).map_or(crate::trace::StageName::ALL.len(), |name| name as usize)
}

struct Summed {
    key: String,
    label: String,
    detail: String,
    count: i64,
    spend_usd: f64,
    helpful: i64,
    unhelpful: i64,
}

/// `rollup_count` rows of `kind` (of one audience, for the kinds kept per
/// audience) in the days of `[from, to)`, summed per key, most counted
/// first.
async fn counted(
    lore: &Lore,
    kind: &str,
    audience: Option<&str>,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    limit: Option<u64>,
) -> Result<Vec<Summed>> {
    use rollup_count::Column as C;
    let total = bigint_sum(C::Count);
    let mut query = rollup_count::Entity::find()
        .select_only()
        .column(C::Key)
        .column_as(Expr::col(C::Label).max(), "label")
        .column_as(Expr::col(C::Detail).max(), "detail")
        .column_as(total.clone(), "count")
        .column_as(SimpleExpr::from(Func::sum(Expr::col(C::SpendUsd))), "spend")
        .column_as(bigint_sum(C::Helpful), "helpful")
        .column_as(bigint_sum(C::Unhelpful), "unhelpful")
        .filter(C::Kind.eq(kind))
        .filter(C::Day.gte(from))
        .filter(C::Day.lt(to))
        .group_by(C::Key)
        .order_by_desc(total)
        .order_by_asc(C::Key);
    if FOLDED_KINDS.contains(&kind) {
        // The folded tail of closed days is no question of its own (among
        // keys, the empty key is keyless traffic and is listed).
        query = query.filter(C::Key.ne(TAIL_KEY));
    }
    if let Some(audience) = audience {
        query = query.filter(C::Detail.eq(audience));
    }
    if let Some(limit) = limit {
        query = query.limit(limit);
    }
    let rows: Vec<(String, String, String, i64, f64, i64, i64)> = query.into_tuple().all(&lore.db).await?;
    Ok(rows
        .into_iter()
        .map(|(key, label, detail, count, spend_usd, helpful, unhelpful)| Summed {
            key,
            label,
            detail,
            count,
            spend_usd,
            helpful,
            unhelpful,
        })
        .collect())
}

/// `CAST(SUM(column) AS BIGINT)`: PostgreSQL sums a BIGINT as NUMERIC.
fn bigint_sum(column: rollup_count::Column) -> SimpleExpr {
    Func::cast_as(Func::sum(Expr::col(column)), Alias::new("BIGINT")).into()
}

/// Ratings per profile version, over all time, from the daily rollups: what
/// each version's eval summary shows beside its golden-question score.
pub async fn ratings_by_version(lore: &Lore) -> Result<BTreeMap<i32, (i64, i64)>> {
    let rated = ratings(lore, "version", None).await?;
    Ok(rated.into_iter().filter_map(|(key, counts)| Some((key.parse().ok()?, counts))).collect())
}

/// Ratings per access key (by id) of the answers given since `since`'s UTC
/// day, from the daily rollups: the Access screen's usage column.
pub async fn ratings_by_key(
    lore: &Lore,
    since: DateTime<Utc>,
) -> Result<std::collections::HashMap<String, (i64, i64)>> {
    Ok(ratings(lore, "key", Some(since)).await?.into_iter().filter(|(key, _)| !key.is_empty()).collect())
}

/// (helpful, unhelpful) summed per key of the `rollup_count` rows of
/// `kind`, of the days from `since`'s (all days without one). Ratings are
/// written as they are given, never queued, so nothing is flushed first.
async fn ratings(lore: &Lore, kind: &str, since: Option<DateTime<Utc>>) -> Result<Vec<(String, (i64, i64))>> {
    use rollup_count::Column as C;
    let mut query = rollup_count::Entity::find()
        .select_only()
        .column(C::Key)
        .column_as(bigint_sum(C::Helpful), "helpful")
        .column_as(bigint_sum(C::Unhelpful), "unhelpful")
        .filter(C::Kind.eq(kind))
        .group_by(C::Key);
    if let Some(since) = since {
        query = query.filter(C::Day.gte(truncate(since, Granularity::Day)));
    }
    let rows: Vec<(String, i64, i64)> = query.into_tuple().all(&lore.db).await?;
    Ok(rows.into_iter().map(|(key, helpful, unhelpful)| (key, (helpful, unhelpful))).collect())
}

/// The audiences that asked in the days of `[from, to)`, by name.
async fn audiences(lore: &Lore, (from, to): (DateTime<Utc>, DateTime<Utc>)) -> Result<Vec<String>> {
    use rollup_count::Column as C;
    Ok(rollup_count::Entity::find()
        .select_only()
        .column(C::Detail)
        .distinct()
        .filter(C::Kind.eq("audience_query"))
        .filter(C::Day.gte(from))
        .filter(C::Day.lt(to))
        .filter(C::Key.ne(TAIL_KEY))
        .order_by_asc(C::Detail)
        .into_tuple()
        .all(&lore.db)
        .await?)
}

/// All-time totals per surface, from the daily rollups: the counters
/// `/metrics` exports.
pub async fn totals_by_surface(lore: &Lore) -> Result<Vec<(String, Sums)>> {
    lore.recorder().flush().await?;
    let rows = metric_rollup::Entity::find()
        .filter(metric_rollup::Column::Granularity.eq(Granularity::Day.key()))
        .all(&lore.db)
        .await?;
    let mut per_surface: BTreeMap<String, Sums> = BTreeMap::new();
    for row in rows {
        per_surface.entry(row.surface.clone()).or_default().add(&Sums::of_row(&row));
    }
    Ok(per_surface.into_iter().collect())
}
