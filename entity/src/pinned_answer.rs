//! A pinned answer: a curated answer to one question (and its close
//! paraphrases), served before the caches until a cited passage changes.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "pinned_answer")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// The question as the admin pinned it.
    pub question: String,
    /// The normalised question (unique: one pin per question).
    #[sea_orm(unique)]
    pub question_key: String,
    pub answer: String,
    /// The citations served with it, each with the content hash of its chunk
    /// when pinned.
    pub citations: Json,
    pub created_by: String,
    pub created_at: DateTimeUtc,
    /// Set when a cited passage changed: the pin no longer serves until
    /// the admin reviews it.
    pub flagged_at: Option<DateTimeUtc>,
    pub flag_reason: Option<String>,
    /// Who it is served to: `"everyone"` or an array of role names; `None`:
    /// everyone.
    pub audience: Option<Json>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
