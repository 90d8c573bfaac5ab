//! Answer runs (the input of the Dashboard's rollups) and content gaps (the
//! questions Lore refused, counted by their normalised form).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(AnswerRun::Table)
                    .col(string(AnswerRun::Id).primary_key())
                    .col(timestamp_with_time_zone(AnswerRun::CreatedAt))
                    .col(string(AnswerRun::Surface))
                    .col(string_null(AnswerRun::KeyId))
                    .col(integer(AnswerRun::ProfileVersion))
                    .col(text(AnswerRun::Question))
                    .col(string(AnswerRun::CacheStatus))
                    .col(boolean(AnswerRun::Refused))
                    .col(boolean(AnswerRun::Grounded))
                    .col(boolean(AnswerRun::Escalated))
                    .col(string_null(AnswerRun::Model))
                    .col(json(AnswerRun::Stages))
                    .col(big_integer(AnswerRun::InputTokens))
                    .col(big_integer(AnswerRun::OutputTokens))
                    .col(double(AnswerRun::EstimatedCostUsd))
                    .col(double(AnswerRun::LatencyMs))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_answer_run_created_at")
                    .table(AnswerRun::Table)
                    .col(AnswerRun::CreatedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ContentGap::Table)
                    .col(string(ContentGap::Id).primary_key())
                    .col(text(ContentGap::Question))
                    .col(text(ContentGap::Example))
                    .col(big_integer(ContentGap::Count))
                    .col(timestamp_with_time_zone(ContentGap::FirstSeen))
                    .col(timestamp_with_time_zone(ContentGap::LastSeen))
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(ContentGap::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(AnswerRun::Table).to_owned()).await?;
        Ok(())
    }
}

#[derive(DeriveIden)]
enum AnswerRun {
    Table,
    Id,
    CreatedAt,
    Surface,
    KeyId,
    ProfileVersion,
    Question,
    CacheStatus,
    Refused,
    Grounded,
    Escalated,
    Model,
    Stages,
    InputTokens,
    OutputTokens,
    EstimatedCostUsd,
    LatencyMs,
}

#[derive(DeriveIden)]
enum ContentGap {
    Table,
    Id,
    Question,
    Example,
    Count,
    FirstSeen,
    LastSeen,
}
