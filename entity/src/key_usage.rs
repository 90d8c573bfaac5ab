//! Daily usage per access key (UTC days), kept for the 7-day usage column.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "key_usage")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub key_id: String,
    /// `YYYY-MM-DD` in UTC.
    #[sea_orm(primary_key, auto_increment = false)]
    pub day: String,
    pub queries: i64,
    pub estimated_cost_usd: f64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
