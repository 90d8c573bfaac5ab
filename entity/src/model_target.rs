//! One model reached through one provider account for one capability, with
//! the result of its last probe and its pricing. Roles bind to targets.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "model_target")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    /// `generation`, `embedding` or `rerank`.
    pub capability: String,
    pub model: String,
    pub enabled: bool,
    /// US dollars per million input tokens (for spend estimates).
    pub input_price_per_mtok: Option<f64>,
    pub output_price_per_mtok: Option<f64>,
    /// `unprobed`, `ok` or `failed`.
    pub probe_status: String,
    pub probe_latency_ms: Option<i32>,
    pub probe_error: Option<String>,
    pub probed_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
