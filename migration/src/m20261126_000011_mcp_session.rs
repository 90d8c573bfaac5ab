//! `mcp_session` (the logical `system.mcp_session`): the tool server's
//! sessions of the session-era protocol revisions. Each is bound to the
//! user it was opened by and keeps a snapshot of the tools and resources
//! that user saw when it last heard of them, so a list-changed
//! notification goes only to sessions whose own lists changed.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(McpSession::Table)
                    .col(string(McpSession::Id).primary_key())
                    .col(string(McpSession::Profile))
                    .col(json(McpSession::Principal))
                    .col(string(McpSession::ProtocolVersion))
                    .col(json_null(McpSession::Client))
                    .col(json(McpSession::Snapshot))
                    .col(json(McpSession::Subscriptions))
                    .col(timestamp_with_time_zone(McpSession::CreatedAt))
                    .col(timestamp_with_time_zone(McpSession::LastSeenAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_mcp_session_last_seen")
                    .table(McpSession::Table)
                    .col(McpSession::LastSeenAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(McpSession::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum McpSession {
    Table,
    Id,
    Profile,
    Principal,
    ProtocolVersion,
    Client,
    Snapshot,
    Subscriptions,
    CreatedAt,
    LastSeenAt,
}
