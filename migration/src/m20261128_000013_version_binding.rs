//! `profile_version.binding`: the model binding a version stands for. Binding
//! a model to the generation or escalation role while golden questions exist
//! stores a candidate version (the active snapshot, unchanged) that names the
//! role and target; the eval gate judges the candidate with that target in
//! the role, and the binding is made only when the candidate becomes active.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ProfileVersion::Table)
                    .add_column(json_null(ProfileVersion::Binding))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(ProfileVersion::Table).drop_column(ProfileVersion::Binding).to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum ProfileVersion {
    Table,
    Binding,
}
