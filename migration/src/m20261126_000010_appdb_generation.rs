//! `cluster_state.appdb_generation`: a counter every change to the
//! application database's users, roles or structure moves in the same
//! transaction, so each process can keep those in memory and know, with one
//! small read per request, when what it holds is stale (another process,
//! `lore users` or `lore schema apply` say, changed them).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ClusterState::Table)
                    .add_column(big_integer(ClusterState::AppdbGeneration).default(0))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ClusterState::Table)
                    .drop_column(ClusterState::AppdbGeneration)
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum ClusterState {
    Table,
    AppdbGeneration,
}
