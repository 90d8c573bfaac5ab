//! What an identity provider said about an account at its last sign-in: whether
//! its email is verified, and its groups. The console re-derives admin rights
//! from these and the settings in force on every request, so removing someone
//! from `auth.admins` or `auth.admin_groups` ends their admin access at the
//! next restart rather than when their session expires.
//!
//! Rows written before this migration have neither (NULL): such an
//! account's sessions stop working and it signs in again, which records them
//! (`engine::auth::claims_recorded`).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite alters one column per statement.
        manager
            .alter_table(
                Table::alter()
                    .table(AdminAccount::Table)
                    .add_column(boolean_null(AdminAccount::EmailVerified))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(AdminAccount::Table)
                    .add_column(json_null(AdminAccount::Groups))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(AdminAccount::Table).drop_column(AdminAccount::Groups).to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter().table(AdminAccount::Table).drop_column(AdminAccount::EmailVerified).to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum AdminAccount {
    Table,
    EmailVerified,
    Groups,
}
