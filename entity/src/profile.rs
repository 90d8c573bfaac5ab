//! The deployment's one profile: which immutable version serves. Created when
//! the first index starts.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "profile")]
pub struct Model {
    /// Always `default`: one profile per deployment.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// The serving version; moved only by a conditional update.
    pub active_version_id: String,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
