//! An index on `rollup_count (kind, day, key)`: the Dashboard reads one kind
//! of list (questions, gaps, keys, funnel) over a range of days at a time,
//! and the primary key, led by the day, made each read walk every kind.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const INDEX: &str = "idx_rollup_count_kind_day";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table(RollupCount::Table)
                    .col(RollupCount::Kind)
                    .col(RollupCount::Day)
                    .col(RollupCount::Key)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_index(Index::drop().name(INDEX).table(RollupCount::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum RollupCount {
    Table,
    Kind,
    Day,
    Key,
}
