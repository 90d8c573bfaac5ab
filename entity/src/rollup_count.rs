//! The Dashboard's lists, counted per UTC day: top queries, content gaps,
//! per-key usage and the cost funnel's stages.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "rollup_count")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub day: DateTimeUtc,
    /// `query`, `gap`, `key` or `funnel`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub kind: String,
    /// What is counted, as a short stable key (a hash for questions).
    #[sea_orm(primary_key, auto_increment = false)]
    pub key: String,
    /// What the Dashboard shows: the question, the key id, `stage/decision`.
    pub label: String,
    /// The funnel stage's reason as last seen; empty for the other kinds.
    pub detail: String,
    pub count: i64,
    pub spend_usd: f64,
    /// Ratings of the counted runs (by the run's bucket, not the rating's).
    pub helpful: i64,
    pub unhelpful: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
