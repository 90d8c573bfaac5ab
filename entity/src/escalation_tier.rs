//! The escalation chain's further tiers (tier 1 is the `escalation` role's
//! binding): position 2, 3, … in the order they are tried.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "escalation_tier")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub position: i32,
    pub target_id: String,
    pub updated_by: String,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
