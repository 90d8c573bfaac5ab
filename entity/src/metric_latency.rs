//! The latency histogram of a rollup bucket: how many runs fell in each
//! latency slot (slot edges grow by 10%, so a p95 read from them is within
//! 10% of the exact one).

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "metric_latency")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub granularity: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub bucket: DateTimeUtc,
    #[sea_orm(primary_key, auto_increment = false)]
    pub surface: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub slot: i32,
    pub count: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
