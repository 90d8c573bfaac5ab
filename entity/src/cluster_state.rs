//! The single row describing this deployment (the "cluster").

use sea_orm::entity::prelude::*;

/// The one row of `cluster_state` has this id.
pub const SINGLETON_ID: i32 = 1;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "cluster_state")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: i32,
    pub cluster_id: String,
    pub created_at: DateTimeUtc,
    /// Where the setup wizard stands (`persona`, `source`, ..., `complete`).
    pub setup_step: String,
    /// Embedding model, dimensions and chunking stamped by the last full index.
    pub corpus_fingerprint: Option<Json>,
    /// Moves with every change to the application database's users, roles
    /// or structure (see `engine::appdb::cache`).
    pub appdb_generation: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
