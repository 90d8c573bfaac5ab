//! Knowledge ingestion: sources, their documents (one row per file or page,
//! with the hashes that let unchanged content skip re-embedding) and the
//! persisted indexing jobs with their progress.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Source::Table)
                    .col(string(Source::Id).primary_key())
                    .col(string(Source::Name))
                    .col(string(Source::Kind))
                    .col(boolean(Source::Enabled))
                    .col(string(Source::Status))
                    .col(json(Source::Config))
                    .col(string(Source::Volatility))
                    .col(integer(Source::DocumentCount).default(0))
                    .col(integer(Source::ChunkCount).default(0))
                    .col(string_null(Source::LastError))
                    .col(timestamp_with_time_zone(Source::CreatedAt))
                    .col(timestamp_with_time_zone(Source::UpdatedAt))
                    .col(timestamp_with_time_zone_null(Source::LastSyncedAt))
                    .col(timestamp_with_time_zone_null(Source::NextSyncAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Document::Table)
                    .col(string(Document::Id).primary_key())
                    .col(string(Document::SourceId))
                    .col(string(Document::Uri))
                    .col(string(Document::Title))
                    .col(string_null(Document::Url))
                    .col(string_null(Document::ContentHash))
                    .col(string_null(Document::TextHash))
                    .col(string_null(Document::Etag))
                    .col(string_null(Document::LastModified))
                    .col(string_null(Document::Lastmod))
                    .col(integer(Document::ChunkCount).default(0))
                    .col(string(Document::Status))
                    .col(string_null(Document::Error))
                    .col(string_null(Document::LastJobId))
                    .col(timestamp_with_time_zone_null(Document::IndexedAt))
                    .col(timestamp_with_time_zone(Document::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_document_source")
                            .from(Document::Table, Document::SourceId)
                            .to(Source::Table, Source::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_document_source_uri")
                    .table(Document::Table)
                    .col(Document::SourceId)
                    .col(Document::Uri)
                    .unique()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(IndexJob::Table)
                    .col(string(IndexJob::Id).primary_key())
                    .col(string_null(IndexJob::SourceId))
                    .col(boolean(IndexJob::Full))
                    .col(string(IndexJob::Status))
                    .col(string(IndexJob::Trigger))
                    .col(json(IndexJob::Progress))
                    .col(json(IndexJob::Errors))
                    .col(string_null(IndexJob::Message))
                    .col(string_null(IndexJob::LeaseOwner))
                    .col(timestamp_with_time_zone_null(IndexJob::HeartbeatAt))
                    .col(integer(IndexJob::Attempts).default(0))
                    .col(timestamp_with_time_zone(IndexJob::CreatedAt))
                    .col(timestamp_with_time_zone_null(IndexJob::StartedAt))
                    .col(timestamp_with_time_zone_null(IndexJob::FinishedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_index_job_source")
                            .from(IndexJob::Table, IndexJob::SourceId)
                            .to(Source::Table, Source::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_index_job_status")
                    .table(IndexJob::Table)
                    .col(IndexJob::Status)
                    .col(IndexJob::CreatedAt)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(IndexJob::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Document::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Source::Table).to_owned()).await?;
        Ok(())
    }
}

#[derive(DeriveIden)]
enum Source {
    Table,
    Id,
    Name,
    Kind,
    Enabled,
    Status,
    Config,
    Volatility,
    DocumentCount,
    ChunkCount,
    LastError,
    CreatedAt,
    UpdatedAt,
    LastSyncedAt,
    NextSyncAt,
}

#[derive(DeriveIden)]
enum Document {
    Table,
    Id,
    SourceId,
    Uri,
    Title,
    Url,
    ContentHash,
    TextHash,
    Etag,
    LastModified,
    Lastmod,
    ChunkCount,
    Status,
    Error,
    LastJobId,
    IndexedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum IndexJob {
    Table,
    Id,
    SourceId,
    Full,
    Status,
    Trigger,
    Progress,
    Errors,
    Message,
    LeaseOwner,
    HeartbeatAt,
    Attempts,
    CreatedAt,
    StartedAt,
    FinishedAt,
}
