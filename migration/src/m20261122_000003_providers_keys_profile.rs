//! Model providers (accounts, model targets, execution roles), access keys
//! with their daily usage, and the profile with its immutable versions.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ProviderAccount::Table)
                    .col(string(ProviderAccount::Id).primary_key())
                    .col(string(ProviderAccount::Name))
                    .col(string(ProviderAccount::Kind))
                    .col(string(ProviderAccount::Placement))
                    .col(string(ProviderAccount::Endpoint))
                    .col(text_null(ProviderAccount::ApiKeySealed))
                    .col(timestamp_with_time_zone(ProviderAccount::CreatedAt))
                    .col(timestamp_with_time_zone(ProviderAccount::UpdatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ModelTarget::Table)
                    .col(string(ModelTarget::Id).primary_key())
                    .col(string(ModelTarget::AccountId))
                    .col(string(ModelTarget::Capability))
                    .col(string(ModelTarget::Model))
                    .col(boolean(ModelTarget::Enabled))
                    .col(double_null(ModelTarget::InputPricePerMtok))
                    .col(double_null(ModelTarget::OutputPricePerMtok))
                    .col(string(ModelTarget::ProbeStatus))
                    .col(integer_null(ModelTarget::ProbeLatencyMs))
                    .col(text_null(ModelTarget::ProbeError))
                    .col(timestamp_with_time_zone_null(ModelTarget::ProbedAt))
                    .col(timestamp_with_time_zone(ModelTarget::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_model_target_account")
                            .from(ModelTarget::Table, ModelTarget::AccountId)
                            .to(ProviderAccount::Table, ProviderAccount::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_model_target_unique")
                    .table(ModelTarget::Table)
                    .col(ModelTarget::AccountId)
                    .col(ModelTarget::Capability)
                    .col(ModelTarget::Model)
                    .unique()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(RoleBinding::Table)
                    .col(string(RoleBinding::Role).primary_key())
                    .col(string(RoleBinding::TargetId))
                    .col(string(RoleBinding::UpdatedBy))
                    .col(timestamp_with_time_zone(RoleBinding::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_role_binding_target")
                            .from(RoleBinding::Table, RoleBinding::TargetId)
                            .to(ModelTarget::Table, ModelTarget::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(AccessKey::Table)
                    .col(string(AccessKey::Id).primary_key())
                    .col(string(AccessKey::Name))
                    .col(string(AccessKey::Kind))
                    .col(string(AccessKey::Prefix))
                    .col(string_uniq(AccessKey::Hash))
                    .col(json(AccessKey::Scopes))
                    .col(string(AccessKey::Status))
                    .col(json(AccessKey::Origins))
                    .col(integer_null(AccessKey::RateLimitPerMinute))
                    .col(string(AccessKey::CreatedBy))
                    .col(timestamp_with_time_zone(AccessKey::CreatedAt))
                    .col(timestamp_with_time_zone_null(AccessKey::RevokedAt))
                    .col(timestamp_with_time_zone_null(AccessKey::LastUsedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(KeyUsage::Table)
                    .col(string(KeyUsage::KeyId))
                    .col(string(KeyUsage::Day))
                    .col(big_integer(KeyUsage::Queries).default(0))
                    .col(double(KeyUsage::EstimatedCostUsd).default(0.0))
                    .primary_key(Index::create().col(KeyUsage::KeyId).col(KeyUsage::Day))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_key_usage_key")
                            .from(KeyUsage::Table, KeyUsage::KeyId)
                            .to(AccessKey::Table, AccessKey::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Profile::Table)
                    .col(string(Profile::Id).primary_key())
                    .col(string(Profile::ActiveVersionId))
                    .col(timestamp_with_time_zone(Profile::CreatedAt))
                    .col(timestamp_with_time_zone(Profile::UpdatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ProfileVersion::Table)
                    .col(string(ProfileVersion::Id).primary_key())
                    .col(integer_uniq(ProfileVersion::Version))
                    .col(integer_null(ProfileVersion::BasedOn))
                    .col(json(ProfileVersion::Snapshot))
                    .col(string_null(ProfileVersion::Note))
                    .col(string(ProfileVersion::CreatedBy))
                    .col(timestamp_with_time_zone(ProfileVersion::CreatedAt))
                    .col(json_null(ProfileVersion::Evals))
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(ProfileVersion::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(Profile::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(KeyUsage::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(AccessKey::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(RoleBinding::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(ModelTarget::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(ProviderAccount::Table).to_owned()).await?;
        Ok(())
    }
}

#[derive(DeriveIden)]
enum ProviderAccount {
    Table,
    Id,
    Name,
    Kind,
    Placement,
    Endpoint,
    ApiKeySealed,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ModelTarget {
    Table,
    Id,
    AccountId,
    Capability,
    Model,
    Enabled,
    InputPricePerMtok,
    OutputPricePerMtok,
    ProbeStatus,
    ProbeLatencyMs,
    ProbeError,
    ProbedAt,
    CreatedAt,
}

#[derive(DeriveIden)]
enum RoleBinding {
    Table,
    Role,
    TargetId,
    UpdatedBy,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum AccessKey {
    Table,
    Id,
    Name,
    Kind,
    Prefix,
    Hash,
    Scopes,
    Status,
    Origins,
    RateLimitPerMinute,
    CreatedBy,
    CreatedAt,
    RevokedAt,
    LastUsedAt,
}

#[derive(DeriveIden)]
enum KeyUsage {
    Table,
    KeyId,
    Day,
    Queries,
    EstimatedCostUsd,
}

#[derive(DeriveIden)]
enum Profile {
    Table,
    Id,
    ActiveVersionId,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ProfileVersion {
    Table,
    Id,
    Version,
    BasedOn,
    Snapshot,
    Note,
    CreatedBy,
    CreatedAt,
    Evals,
}
