//! Who may read what through answers and retrieval (issue 53).
//!
//! `source.audience`: `"everyone"`, `"table"` (the readers of the table a
//! table source mirrors) or an array of role names, as JSON. `NULL` is the
//! kind's default (`table` for a table source, `everyone` otherwise), so the
//! sources stored before this migration keep their behaviour for uploads
//! and websites, and table sources become what their table's permissions
//! allow.
//!
//! `pinned_answer.audience`: `"everyone"` or an array of role names; `NULL`
//! is everyone (the pins made before).
//!
//! `golden_question.asked_as`: who an eval asks the question as
//! (`everyone`, `role:NAME` or `user:NAME`); `NULL` is an admin, as before.
//!
//! `answer_run.audience`: whom the run answered, as far as reading goes
//! (`admin`, `everyone` or `role:NAME`), so the Dashboard can list top
//! questions and content gaps per audience; `NULL` for runs recorded before.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let add =
            |table: DynIden, column: ColumnDef| Table::alter().table(table).add_column(column).to_owned();
        manager.alter_table(add(Source::Table.into_iden(), json_null(Source::Audience))).await?;
        manager.alter_table(add(PinnedAnswer::Table.into_iden(), json_null(PinnedAnswer::Audience))).await?;
        manager
            .alter_table(add(GoldenQuestion::Table.into_iden(), string_null(GoldenQuestion::AskedAs)))
            .await?;
        manager.alter_table(add(AnswerRun::Table.into_iden(), string_null(AnswerRun::Audience))).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let drop =
            |table: DynIden, column: DynIden| Table::alter().table(table).drop_column(column).to_owned();
        manager.alter_table(drop(AnswerRun::Table.into_iden(), AnswerRun::Audience.into_iden())).await?;
        manager
            .alter_table(drop(GoldenQuestion::Table.into_iden(), GoldenQuestion::AskedAs.into_iden()))
            .await?;
        manager
            .alter_table(drop(PinnedAnswer::Table.into_iden(), PinnedAnswer::Audience.into_iden()))
            .await?;
        manager.alter_table(drop(Source::Table.into_iden(), Source::Audience.into_iden())).await
    }
}

#[derive(DeriveIden)]
enum AnswerRun {
    Table,
    Audience,
}

#[derive(DeriveIden)]
enum GoldenQuestion {
    Table,
    AskedAs,
}

#[derive(DeriveIden)]
enum PinnedAnswer {
    Table,
    Audience,
}

#[derive(DeriveIden)]
enum Source {
    Table,
    Audience,
}
