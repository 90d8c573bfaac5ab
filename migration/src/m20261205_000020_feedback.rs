//! Ratings of answers (issue 56).
//!
//! `answer_run.asked_by`: who asked, as a rating must come from them
//! (`key:ID`, `user:NAME`, `admin:ACCOUNT`, `cli`); `answer_run.reply`: what
//! was served (the question as asked, the answer, its citations), which the
//! review queue shows. Both `NULL` for runs recorded before: those cannot be
//! rated.
//!
//! `answer_rating`: one row per rated run (a second rating replaces the
//! first), with what the Dashboard's rollups count it under copied from the
//! run, and what an admin did about it.
//!
//! `metric_rollup.{helpful, unhelpful}`, `rollup_count.{helpful, unhelpful}`:
//! the ratings of the runs each row counts (by the run's hour or day, so a
//! rating that replaces another moves the same row).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let add =
            |table: DynIden, column: ColumnDef| Table::alter().table(table).add_column(column).to_owned();
        manager.alter_table(add(AnswerRun::Table.into_iden(), string_null(AnswerRun::AskedBy))).await?;
        manager.alter_table(add(AnswerRun::Table.into_iden(), json_null(AnswerRun::Reply))).await?;
        for table in [MetricRollup::Table.into_iden(), RollupCount::Table.into_iden()] {
            manager
                .alter_table(add(table.clone(), big_integer(Rated::Helpful).default(0).to_owned()))
                .await?;
            manager.alter_table(add(table, big_integer(Rated::Unhelpful).default(0).to_owned())).await?;
        }
        manager
            .create_table(
                Table::create()
                    .table(AnswerRating::Table)
                    .col(string(AnswerRating::RunId).primary_key())
                    .col(boolean(AnswerRating::Helpful))
                    .col(text_null(AnswerRating::Comment))
                    .col(timestamp_with_time_zone(AnswerRating::RatedAt))
                    .col(timestamp_with_time_zone(AnswerRating::AskedAt))
                    .col(string(AnswerRating::Surface))
                    .col(string_null(AnswerRating::KeyId))
                    .col(integer(AnswerRating::ProfileVersion))
                    .col(string_null(AnswerRating::Review))
                    .col(string_null(AnswerRating::ReviewRef))
                    .col(timestamp_with_time_zone_null(AnswerRating::ReviewedAt))
                    .col(string_null(AnswerRating::ReviewedBy))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_answer_rating_queue")
                    .table(AnswerRating::Table)
                    .col(AnswerRating::Helpful)
                    .col(AnswerRating::RatedAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(AnswerRating::Table).to_owned()).await?;
        let drop =
            |table: DynIden, column: DynIden| Table::alter().table(table).drop_column(column).to_owned();
        for table in [MetricRollup::Table.into_iden(), RollupCount::Table.into_iden()] {
            manager.alter_table(drop(table.clone(), Rated::Unhelpful.into_iden())).await?;
            manager.alter_table(drop(table, Rated::Helpful.into_iden())).await?;
        }
        manager.alter_table(drop(AnswerRun::Table.into_iden(), AnswerRun::Reply.into_iden())).await?;
        manager.alter_table(drop(AnswerRun::Table.into_iden(), AnswerRun::AskedBy.into_iden())).await
    }
}

#[derive(DeriveIden)]
enum AnswerRun {
    Table,
    AskedBy,
    Reply,
}

#[derive(DeriveIden)]
enum MetricRollup {
    Table,
}

#[derive(DeriveIden)]
enum RollupCount {
    Table,
}

#[derive(DeriveIden)]
enum Rated {
    Helpful,
    Unhelpful,
}

#[derive(DeriveIden)]
enum AnswerRating {
    Table,
    RunId,
    Helpful,
    Comment,
    RatedAt,
    AskedAt,
    Surface,
    KeyId,
    ProfileVersion,
    Review,
    ReviewRef,
    ReviewedAt,
    ReviewedBy,
}
