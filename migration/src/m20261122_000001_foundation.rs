//! The first tables: admin accounts and sessions, sign-in bookkeeping, the
//! cluster's state and settings, and the audit log.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(AdminAccount::Table)
                    .col(string(AdminAccount::Id).primary_key())
                    .col(string(AdminAccount::Subject).unique_key())
                    .col(string_null(AdminAccount::Email))
                    .col(string_null(AdminAccount::DisplayName))
                    .col(boolean(AdminAccount::IsAdmin))
                    .col(timestamp_with_time_zone(AdminAccount::CreatedAt))
                    .col(timestamp_with_time_zone(AdminAccount::LastSignInAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(AdminSession::Table)
                    .col(string(AdminSession::Id).primary_key())
                    .col(string(AdminSession::AccountId))
                    .col(timestamp_with_time_zone(AdminSession::CreatedAt))
                    .col(timestamp_with_time_zone(AdminSession::ExpiresAt))
                    .col(timestamp_with_time_zone(AdminSession::LastSeenAt))
                    .col(timestamp_with_time_zone_null(AdminSession::RevokedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_admin_session_account")
                            .from(AdminSession::Table, AdminSession::AccountId)
                            .to(AdminAccount::Table, AdminAccount::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_admin_session_account")
                    .table(AdminSession::Table)
                    .col(AdminSession::AccountId)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(BootstrapToken::Table)
                    .col(string(BootstrapToken::TokenHash).primary_key())
                    .col(timestamp_with_time_zone(BootstrapToken::CreatedAt))
                    .col(timestamp_with_time_zone(BootstrapToken::ExpiresAt))
                    .col(timestamp_with_time_zone_null(BootstrapToken::UsedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(OidcLogin::Table)
                    .col(string(OidcLogin::State).primary_key())
                    .col(string(OidcLogin::Nonce))
                    .col(string(OidcLogin::PkceVerifier))
                    .col(string(OidcLogin::BrowserBinding))
                    .col(string(OidcLogin::ReturnTo))
                    .col(timestamp_with_time_zone(OidcLogin::CreatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ClusterState::Table)
                    .col(integer(ClusterState::Id).primary_key())
                    .col(string(ClusterState::ClusterId))
                    .col(timestamp_with_time_zone(ClusterState::CreatedAt))
                    .col(string(ClusterState::SetupStep))
                    .col(json_null(ClusterState::CorpusFingerprint))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ClusterSetting::Table)
                    .col(string(ClusterSetting::Key).primary_key())
                    .col(json(ClusterSetting::Value))
                    .col(timestamp_with_time_zone(ClusterSetting::UpdatedAt))
                    .col(string(ClusterSetting::UpdatedBy))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(AuditLog::Table)
                    .col(big_integer(AuditLog::Id).primary_key().auto_increment())
                    .col(timestamp_with_time_zone(AuditLog::At))
                    .col(string(AuditLog::Actor))
                    .col(string(AuditLog::Action))
                    .col(string_null(AuditLog::Target))
                    .col(json(AuditLog::Details))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create().name("idx_audit_log_at").table(AuditLog::Table).col(AuditLog::At).to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            AuditLog::Table.into_iden(),
            ClusterSetting::Table.into_iden(),
            ClusterState::Table.into_iden(),
            OidcLogin::Table.into_iden(),
            BootstrapToken::Table.into_iden(),
            AdminSession::Table.into_iden(),
            AdminAccount::Table.into_iden(),
        ] {
            manager.drop_table(Table::drop().table(table).to_owned()).await?;
        }
        Ok(())
    }
}

#[derive(DeriveIden)]
enum AdminAccount {
    Table,
    Id,
    Subject,
    Email,
    DisplayName,
    IsAdmin,
    CreatedAt,
    LastSignInAt,
}

#[derive(DeriveIden)]
enum AdminSession {
    Table,
    Id,
    AccountId,
    CreatedAt,
    ExpiresAt,
    LastSeenAt,
    RevokedAt,
}

#[derive(DeriveIden)]
enum BootstrapToken {
    Table,
    TokenHash,
    CreatedAt,
    ExpiresAt,
    UsedAt,
}

#[derive(DeriveIden)]
enum OidcLogin {
    Table,
    State,
    Nonce,
    PkceVerifier,
    BrowserBinding,
    ReturnTo,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ClusterState {
    Table,
    Id,
    ClusterId,
    CreatedAt,
    SetupStep,
    CorpusFingerprint,
}

#[derive(DeriveIden)]
enum ClusterSetting {
    Table,
    Key,
    Value,
    UpdatedAt,
    UpdatedBy,
}

#[derive(DeriveIden)]
enum AuditLog {
    Table,
    Id,
    At,
    Actor,
    Action,
    Target,
    Details,
}
