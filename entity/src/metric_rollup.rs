//! One bucket of the Dashboard's history (a UTC hour or day) for one surface.
//! Every column is a sum, added to by each answer run.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "metric_rollup")]
pub struct Model {
    /// `hour` or `day`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub granularity: String,
    /// The bucket's start (UTC, truncated to the hour or day).
    #[sea_orm(primary_key, auto_increment = false)]
    pub bucket: DateTimeUtc,
    /// `playground`, `api`, `widget`, `mcp` or `cli`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub surface: String,
    pub queries: i64,
    pub cache_hits: i64,
    pub refusals: i64,
    pub spend_usd: f64,
    pub savings_usd: f64,
    pub latency_ms_sum: f64,
    /// Ratings of the counted runs (by the run's bucket, not the rating's).
    pub helpful: i64,
    pub unhelpful: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
