//! The tool server's OAuth 2.1 authorization server: the clients that
//! registered (RFC 7591), the grants people made to them (each born of one
//! authorization code), and the tokens issued under a grant, stored as
//! SHA-256 hashes only.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(OauthClient::Table)
                    .col(string(OauthClient::Id).primary_key())
                    .col(string(OauthClient::Name))
                    .col(json(OauthClient::RedirectUris))
                    .col(string_null(OauthClient::LogoUri))
                    .col(string(OauthClient::Registration))
                    .col(timestamp_with_time_zone(OauthClient::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(OauthGrant::Table)
                    .col(string(OauthGrant::Id).primary_key())
                    .col(string(OauthGrant::ClientId))
                    .col(json(OauthGrant::Subject))
                    .col(json(OauthGrant::Scopes))
                    .col(string(OauthGrant::Resource))
                    .col(string(OauthGrant::RedirectUri))
                    .col(string(OauthGrant::CodeHash).unique_key())
                    .col(string(OauthGrant::CodeChallenge))
                    .col(timestamp_with_time_zone(OauthGrant::CodeExpiresAt))
                    .col(timestamp_with_time_zone_null(OauthGrant::CodeUsedAt))
                    .col(timestamp_with_time_zone(OauthGrant::CreatedAt))
                    .col(timestamp_with_time_zone_null(OauthGrant::LastUsedAt))
                    .col(timestamp_with_time_zone_null(OauthGrant::RevokedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_oauth_grant_client")
                    .table(OauthGrant::Table)
                    .col(OauthGrant::ClientId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(OauthToken::Table)
                    .col(string(OauthToken::Hash).primary_key())
                    .col(string(OauthToken::GrantId))
                    .col(string(OauthToken::Kind))
                    .col(timestamp_with_time_zone(OauthToken::ExpiresAt))
                    .col(timestamp_with_time_zone_null(OauthToken::RotatedAt))
                    .col(timestamp_with_time_zone(OauthToken::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_oauth_token_grant")
                    .table(OauthToken::Table)
                    .col(OauthToken::GrantId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in
            [OauthToken::Table.into_iden(), OauthGrant::Table.into_iden(), OauthClient::Table.into_iden()]
        {
            manager.drop_table(Table::drop().table(table).to_owned()).await?;
        }
        Ok(())
    }
}

#[derive(DeriveIden)]
enum OauthClient {
    Table,
    Id,
    Name,
    RedirectUris,
    LogoUri,
    Registration,
    CreatedAt,
}

#[derive(DeriveIden)]
enum OauthGrant {
    Table,
    Id,
    ClientId,
    Subject,
    Scopes,
    Resource,
    RedirectUri,
    CodeHash,
    CodeChallenge,
    CodeExpiresAt,
    CodeUsedAt,
    CreatedAt,
    LastUsedAt,
    RevokedAt,
}

#[derive(DeriveIden)]
enum OauthToken {
    Table,
    Hash,
    GrantId,
    Kind,
    ExpiresAt,
    RotatedAt,
    CreatedAt,
}
