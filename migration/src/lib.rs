//! Schema migrations, applied at start-up (`lore serve`) or by `lore migrate`.
//!
//! Every migration must run on SQLite and PostgreSQL alike; the storage tests
//! apply them from empty on both. Applied migrations are never edited: a change
//! is a new migration.

pub use sea_orm_migration::prelude::*;

mod m20261122_000001_foundation;
mod m20261122_000002_ingest;
mod m20261122_000003_providers_keys_profile;
mod m20261122_000004_answers;
mod m20261122_000005_rollups;
mod m20261123_000006_rollup_count_by_kind;
mod m20261123_000007_admin_account_claims;
mod m20261124_000008_quarantine;
mod m20261125_000009_appdb;
mod m20261126_000010_appdb_generation;
mod m20261126_000011_mcp_session;
mod m20261127_000012_golden_and_pinned;
mod m20261128_000013_version_binding;
mod m20261129_000014_tiers_and_probes;
mod m20261130_000015_replicas;
mod m20261201_000016_audiences;
mod m20261202_000017_oauth;
mod m20261203_000018_client_documents;
mod m20261204_000019_system_sessions;
mod m20261205_000020_feedback;
mod m20261206_000021_sync_state;

pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261122_000001_foundation::Migration),
            Box::new(m20261122_000002_ingest::Migration),
            Box::new(m20261122_000003_providers_keys_profile::Migration),
            Box::new(m20261122_000004_answers::Migration),
            Box::new(m20261122_000005_rollups::Migration),
            Box::new(m20261123_000006_rollup_count_by_kind::Migration),
            Box::new(m20261123_000007_admin_account_claims::Migration),
            Box::new(m20261124_000008_quarantine::Migration),
            Box::new(m20261125_000009_appdb::Migration),
            Box::new(m20261126_000010_appdb_generation::Migration),
            Box::new(m20261126_000011_mcp_session::Migration),
            Box::new(m20261127_000012_golden_and_pinned::Migration),
            Box::new(m20261128_000013_version_binding::Migration),
            Box::new(m20261129_000014_tiers_and_probes::Migration),
            Box::new(m20261130_000015_replicas::Migration),
            Box::new(m20261201_000016_audiences::Migration),
            Box::new(m20261202_000017_oauth::Migration),
            Box::new(m20261203_000018_client_documents::Migration),
            Box::new(m20261204_000019_system_sessions::Migration),
            Box::new(m20261205_000020_feedback::Migration),
            Box::new(m20261206_000021_sync_state::Migration),
        ]
    }
}
