//! Clients that name themselves by URL (OAuth client ID metadata
//! documents): `oauth_client.refresh_after` is when Lore reads the client's
//! document again (from its `Cache-Control`, within Lore's bounds). `NULL`
//! for a client registered dynamically, whose metadata is what it sent.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(OauthClient::Table)
                    .add_column(timestamp_with_time_zone_null(OauthClient::RefreshAfter))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(OauthClient::Table).drop_column(OauthClient::RefreshAfter).to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum OauthClient {
    Table,
    RefreshAfter,
}
