//! A golden question: a question the admin expects answered with certain
//! facts (or refused), against which every candidate profile version is
//! evaluated before it serves.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "golden_question")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub question: String,
    /// A JSON array of strings, each to be found in a right answer.
    pub expected_facts: Json,
    /// A right answer is the profile's refusal.
    pub should_refuse: bool,
    /// The source a right answer cites, if the admin named one.
    pub expected_source: Option<String>,
    /// `prompt`, `playground` or `dashboard`: where the admin added it.
    pub origin: String,
    pub created_by: String,
    pub created_at: DateTimeUtc,
    /// Who an eval asks it as: `everyone`, `role:NAME` or `user:NAME`;
    /// `None`: an admin (every source).
    pub asked_as: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
