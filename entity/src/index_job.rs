//! One indexing run, persisted so its progress is visible and so that a run
//! cut short by a crash resumes after a restart.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "index_job")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// The source synced; `None` for a full reindex of every source.
    pub source_id: Option<String>,
    /// Re-embeds everything and stamps the corpus fingerprint.
    pub full: bool,
    /// `queued`, `running`, `succeeded`, `failed` or `cancelled`.
    pub status: String,
    /// What started it: `admin`, `cli`, `upload`, `schedule`, `tuning`.
    pub trigger: String,
    /// Counters: discovered, fetched, extracted, chunked, embedded, unchanged, failed, ...
    pub progress: Json,
    /// Per-document errors: `[{"uri": ..., "error": ...}]` (the first 200).
    pub errors: Json,
    /// How the run ended, for the admin.
    pub message: Option<String>,
    /// The process holding the job; its heartbeat keeps the lease.
    pub lease_owner: Option<String>,
    pub heartbeat_at: Option<DateTimeUtc>,
    /// How many times a worker started it (more than one: resumed).
    pub attempts: i32,
    /// The document the run is reading (`{"source_id", "uri", "hash"}`),
    /// written before each extraction: if the process dies, that document is
    /// quarantined when the job is taken over.
    pub in_flight: Option<Json>,
    pub created_at: DateTimeUtc,
    pub started_at: Option<DateTimeUtc>,
    pub finished_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
