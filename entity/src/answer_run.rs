//! One answered (or refused) question, recorded server-side: the input of
//! the Dashboard's rollups. Never sent to a browser as is.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "answer_run")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub created_at: DateTimeUtc,
    /// `playground`, `api`, `widget` or `mcp`.
    pub surface: String,
    pub key_id: Option<String>,
    pub profile_version: i32,
    /// The normalised question.
    pub question: String,
    /// `hit`, `miss` or `bypass`.
    pub cache_status: String,
    pub refused: bool,
    pub grounded: bool,
    pub escalated: bool,
    pub model: Option<String>,
    /// The trace's stages: (stage, decision, reason, duration_ms, cost_usd).
    pub stages: Json,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub estimated_cost_usd: f64,
    /// On a cache hit: the estimated cost of the answer it reused.
    pub estimated_savings_usd: f64,
    pub latency_ms: f64,
    /// Whom it answered, as far as reading goes: `admin`, `everyone` or
    /// `role:NAME` (none for runs recorded before audiences).
    pub audience: Option<String>,
    /// Who asked, as a rating must come from them: `key:ID`, `user:NAME`,
    /// `admin:ACCOUNT` or `cli` (none for runs recorded before ratings).
    pub asked_by: Option<String>,
    /// What was served: the question as asked, the answer and its
    /// citations (`engine::answer::feedback::Reply`), for the review queue.
    pub reply: Option<Json>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
