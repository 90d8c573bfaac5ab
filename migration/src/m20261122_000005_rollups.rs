//! The Dashboard's rollups: per-bucket counters that every answer run adds
//! to in the same transaction that records it (and `lore rollups rebuild`
//! recomputes from the runs). Every column is additive, so concurrent runs
//! update them with `ON CONFLICT … DO UPDATE SET n = n + excluded` and no
//! read-modify-write.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // What a cache hit saved: the estimated cost of the answer it reused.
        manager
            .alter_table(
                Table::alter()
                    .table(AnswerRun::Table)
                    .add_column(double(AnswerRun::EstimatedSavingsUsd).default(0.0))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(MetricRollup::Table)
                    .col(string(MetricRollup::Granularity))
                    .col(timestamp_with_time_zone(MetricRollup::Bucket))
                    .col(string(MetricRollup::Surface))
                    .col(big_integer(MetricRollup::Queries))
                    .col(big_integer(MetricRollup::CacheHits))
                    .col(big_integer(MetricRollup::Refusals))
                    .col(double(MetricRollup::SpendUsd))
                    .col(double(MetricRollup::SavingsUsd))
                    .col(double(MetricRollup::LatencyMsSum))
                    .primary_key(
                        Index::create()
                            .col(MetricRollup::Granularity)
                            .col(MetricRollup::Bucket)
                            .col(MetricRollup::Surface),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(MetricLatency::Table)
                    .col(string(MetricLatency::Granularity))
                    .col(timestamp_with_time_zone(MetricLatency::Bucket))
                    .col(string(MetricLatency::Surface))
                    .col(integer(MetricLatency::Slot))
                    .col(big_integer(MetricLatency::Count))
                    .primary_key(
                        Index::create()
                            .col(MetricLatency::Granularity)
                            .col(MetricLatency::Bucket)
                            .col(MetricLatency::Surface)
                            .col(MetricLatency::Slot),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(RollupCount::Table)
                    .col(timestamp_with_time_zone(RollupCount::Day))
                    .col(string(RollupCount::Kind))
                    .col(string(RollupCount::Key))
                    .col(text(RollupCount::Label))
                    .col(text(RollupCount::Detail))
                    .col(big_integer(RollupCount::Count))
                    .col(double(RollupCount::SpendUsd))
                    .primary_key(
                        Index::create().col(RollupCount::Day).col(RollupCount::Kind).col(RollupCount::Key),
                    )
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(RollupCount::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(MetricLatency::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(MetricRollup::Table).to_owned()).await?;
        manager
            .alter_table(
                Table::alter().table(AnswerRun::Table).drop_column(AnswerRun::EstimatedSavingsUsd).to_owned(),
            )
            .await?;
        Ok(())
    }
}

#[derive(DeriveIden)]
enum AnswerRun {
    Table,
    EstimatedSavingsUsd,
}

#[derive(DeriveIden)]
enum MetricRollup {
    Table,
    Granularity,
    Bucket,
    Surface,
    Queries,
    CacheHits,
    Refusals,
    SpendUsd,
    SavingsUsd,
    LatencyMsSum,
}

#[derive(DeriveIden)]
enum MetricLatency {
    Table,
    Granularity,
    Bucket,
    Surface,
    Slot,
    Count,
}

#[derive(DeriveIden)]
enum RollupCount {
    Table,
    Day,
    Kind,
    Key,
    Label,
    Detail,
    Count,
    SpendUsd,
}
