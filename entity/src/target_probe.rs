//! One probe of a model target: its verdict, latency and (scrubbed) error.
//! The last 20 per target are kept.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "target_probe")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub target_id: String,
    pub ok: bool,
    pub latency_ms: i32,
    pub error: Option<String>,
    pub probed_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
