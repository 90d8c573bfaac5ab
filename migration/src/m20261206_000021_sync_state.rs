//! `source.sync_state`: where a kind's last completed sync left off, as
//! JSON the kind alone reads (a git source's indexed commit, its branch,
//! and what the sync changed). `NULL` until a sync of a kind that keeps
//! state completes; the kinds before this migration keep none.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(Source::Table).add_column(json_null(Source::SyncState)).to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(Table::alter().table(Source::Table).drop_column(Source::SyncState).to_owned())
            .await
    }
}

#[derive(DeriveIden)]
enum Source {
    Table,
    SyncState,
}
