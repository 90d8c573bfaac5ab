//! What several `lore serve` replicas on one database need.
//!
//! `stored_upload`: the bytes of each file uploaded to an upload source, in
//! the database every replica shares, so that whichever replica claims the
//! indexing run can read them (they were files under one replica's
//! `{data_dir}/uploads`). A row goes with its document.
//!
//! `bootstrap_token.issued_on`: the machine that printed a one-time sign-in
//! link, so that a replica starting on another machine leaves it valid.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(StoredUpload::Table)
                    .col(string(StoredUpload::DocumentId).primary_key())
                    .col(string(StoredUpload::SourceId))
                    .col(text_null(StoredUpload::ContentType))
                    .col(big_integer(StoredUpload::Size))
                    .col(blob(StoredUpload::Bytes))
                    .col(timestamp_with_time_zone(StoredUpload::StoredAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_stored_upload_document")
                            .from(StoredUpload::Table, StoredUpload::DocumentId)
                            .to(Document::Table, Document::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_stored_upload_source")
                    .table(StoredUpload::Table)
                    .col(StoredUpload::SourceId)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(BootstrapToken::Table)
                    .add_column(string_null(BootstrapToken::IssuedOn))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(BootstrapToken::Table).drop_column(BootstrapToken::IssuedOn).to_owned(),
            )
            .await?;
        manager.drop_table(Table::drop().table(StoredUpload::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum StoredUpload {
    Table,
    DocumentId,
    SourceId,
    ContentType,
    Size,
    Bytes,
    StoredAt,
}

#[derive(DeriveIden)]
enum Document {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum BootstrapToken {
    Table,
    IssuedOn,
}
