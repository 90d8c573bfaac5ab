//! Which model target does which job: `generation`, `escalation`,
//! `embedding` or `rerank`. A role without a row is unbound.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "role_binding")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub role: String,
    pub target_id: String,
    pub updated_by: String,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
