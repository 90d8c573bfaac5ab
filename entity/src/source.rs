//! A knowledge source: where documents come from (uploaded files, a website)
//! and how its indexing stands. See `engine::sources` for the lifecycle.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "source")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub name: String,
    /// The registered kind (`upload`, `website`, `table`).
    pub kind: String,
    /// A disabled source is neither synced nor searched; its content is kept.
    pub enabled: bool,
    /// `empty`, `queued`, `indexing`, `ready` or `failed` (of the last run).
    pub status: String,
    /// Kind-specific configuration (start URL, scope patterns, limits ...).
    pub config: Json,
    /// How fast the content goes stale: `static`, `low`, `medium` or `high`.
    pub volatility: String,
    pub document_count: i32,
    pub chunk_count: i32,
    pub last_error: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    /// When the last run finished successfully (freshness).
    pub last_synced_at: Option<DateTimeUtc>,
    /// When the scheduler starts the next re-sync (`None`: never).
    pub next_sync_at: Option<DateTimeUtc>,
    /// Who may read it through answers and retrieval: `"everyone"`,
    /// `"table"` or an array of role names; `None`: the kind's default.
    pub audience: Option<Json>,
    /// Where the kind's last completed sync left off (a git source's
    /// indexed commit), as only that kind reads it; `None`: no state yet.
    pub sync_state: Option<Json>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(has_many = "super::document::Entity")]
    Document,
}

impl Related<super::document::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Document.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
