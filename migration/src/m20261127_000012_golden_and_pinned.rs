//! Golden questions (the set every candidate profile version is evaluated
//! against) and pinned answers (curated answers served before the caches).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(GoldenQuestion::Table)
                    .col(string(GoldenQuestion::Id).primary_key())
                    .col(text(GoldenQuestion::Question))
                    .col(json(GoldenQuestion::ExpectedFacts))
                    .col(boolean(GoldenQuestion::ShouldRefuse))
                    .col(string_null(GoldenQuestion::ExpectedSource))
                    .col(string(GoldenQuestion::Origin))
                    .col(string(GoldenQuestion::CreatedBy))
                    .col(timestamp_with_time_zone(GoldenQuestion::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(PinnedAnswer::Table)
                    .col(string(PinnedAnswer::Id).primary_key())
                    .col(text(PinnedAnswer::Question))
                    .col(string_uniq(PinnedAnswer::QuestionKey))
                    .col(text(PinnedAnswer::Answer))
                    .col(json(PinnedAnswer::Citations))
                    .col(string(PinnedAnswer::CreatedBy))
                    .col(timestamp_with_time_zone(PinnedAnswer::CreatedAt))
                    .col(timestamp_with_time_zone_null(PinnedAnswer::FlaggedAt))
                    .col(text_null(PinnedAnswer::FlagReason))
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(PinnedAnswer::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(GoldenQuestion::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum GoldenQuestion {
    Table,
    Id,
    Question,
    ExpectedFacts,
    ShouldRefuse,
    ExpectedSource,
    Origin,
    CreatedBy,
    CreatedAt,
}

#[derive(DeriveIden)]
enum PinnedAnswer {
    Table,
    Id,
    Question,
    QuestionKey,
    Answer,
    Citations,
    CreatedBy,
    CreatedAt,
    FlaggedAt,
    FlagReason,
}
