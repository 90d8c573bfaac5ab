//! A question Lore refused, keyed by its normalised form, with how often it
//! was asked: what the corpus is missing.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "content_gap")]
pub struct Model {
    /// SHA-256 of the normalised question.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// The normalised question.
    pub question: String,
    /// The question as last asked.
    pub example: String,
    pub count: i64,
    pub first_seen: DateTimeUtc,
    pub last_seen: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
