//! An immutable, complete serving snapshot of the profile: persona, prompt,
//! behaviour, semantic-cache gates and answer-time retrieval settings.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "profile_version")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// 1, 2, 3 ... in order of creation.
    #[sea_orm(unique)]
    pub version: i32,
    /// The version the editor started from (`None` for the first).
    pub based_on: Option<i32>,
    /// `engine::profile::Snapshot` as JSON. Never updated.
    pub snapshot: Json,
    pub note: Option<String>,
    pub created_by: String,
    pub created_at: DateTimeUtc,
    /// Evaluation results, when evaluations exist.
    pub evals: Option<Json>,
    /// `{"role", "target_id"}`: the model binding this version stands for,
    /// made when it becomes active (`None`: a prompt or settings change).
    pub binding: Option<Json>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
