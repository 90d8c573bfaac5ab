//! `escalation_tier`: the escalation chain's further tiers. Tier 1 is the
//! escalation role's binding; tier 2 onwards are rows here, each tried only
//! when the tier before it was not grounded.
//!
//! `target_probe`: each target's recent probes (the last 20 are kept), for
//! the Providers screen's probe history. `model_target` keeps the latest.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(EscalationTier::Table)
                    .col(integer(EscalationTier::Position).primary_key())
                    .col(string(EscalationTier::TargetId))
                    .col(string(EscalationTier::UpdatedBy))
                    .col(timestamp_with_time_zone(EscalationTier::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_escalation_tier_target")
                            .from(EscalationTier::Table, EscalationTier::TargetId)
                            .to(ModelTarget::Table, ModelTarget::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(TargetProbe::Table)
                    .col(string(TargetProbe::Id).primary_key())
                    .col(string(TargetProbe::TargetId))
                    .col(boolean(TargetProbe::Ok))
                    .col(integer(TargetProbe::LatencyMs))
                    .col(text_null(TargetProbe::Error))
                    .col(timestamp_with_time_zone(TargetProbe::ProbedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_target_probe_target")
                            .from(TargetProbe::Table, TargetProbe::TargetId)
                            .to(ModelTarget::Table, ModelTarget::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_target_probe_target_time")
                    .table(TargetProbe::Table)
                    .col(TargetProbe::TargetId)
                    .col(TargetProbe::ProbedAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(TargetProbe::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(EscalationTier::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum EscalationTier {
    Table,
    Position,
    TargetId,
    UpdatedBy,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum TargetProbe {
    Table,
    Id,
    TargetId,
    Ok,
    LatencyMs,
    Error,
    ProbedAt,
}

#[derive(DeriveIden)]
enum ModelTarget {
    Table,
    Id,
}
