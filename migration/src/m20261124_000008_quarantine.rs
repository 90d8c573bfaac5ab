//! What a job attempt was reading when its process died, and the documents
//! set aside for it.
//!
//! `index_job.in_flight` names the document a run is reading (`{"source_id",
//! "uri", "hash"}`), written before each document is extracted. When a job's
//! holder stops beating, that document is quarantined: its row gets status
//! `quarantined` and `document.quarantined_hash`, the SHA-256 of the bytes
//! that were being read, so later runs skip it until its content changes
//! and the rest of the source still indexes.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(IndexJob::Table).add_column(json_null(IndexJob::InFlight)).to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Document::Table)
                    .add_column(string_null(Document::QuarantinedHash))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(Document::Table).drop_column(Document::QuarantinedHash).to_owned(),
            )
            .await?;
        manager
            .alter_table(Table::alter().table(IndexJob::Table).drop_column(IndexJob::InFlight).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum IndexJob {
    Table,
    InFlight,
}

#[derive(DeriveIden)]
enum Document {
    Table,
    QuarantinedHash,
}
