//! A rating of one answer run by whoever asked it: helpful or not, with an
//! optional comment, and what an admin did about it (the review queue). One
//! row per run: a second rating replaces the first. What the rollups count
//! it under (the run's time, surface, key and profile version) is copied
//! from the run, so a rebuild needs no join.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "answer_rating")]
pub struct Model {
    /// The rated run (its trace id).
    #[sea_orm(primary_key, auto_increment = false)]
    pub run_id: String,
    pub helpful: bool,
    /// As written, stored as text (never markup).
    pub comment: Option<String>,
    pub rated_at: DateTimeUtc,
    /// When the run answered.
    pub asked_at: DateTimeUtc,
    pub surface: String,
    pub key_id: Option<String>,
    pub profile_version: i32,
    /// What an admin did: `pinned`, `golden` or `dismissed`.
    pub review: Option<String>,
    /// What it made: the pin's or the golden question's id.
    pub review_ref: Option<String>,
    pub reviewed_at: Option<DateTimeUtc>,
    pub reviewed_by: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
