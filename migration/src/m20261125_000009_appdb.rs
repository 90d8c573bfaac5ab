//! The application database's own records: roles with their permission tree,
//! users, and the catalog of application databases and tables (the tables
//! themselves are real tables, created by `engine::appdb::catalog`). Access
//! keys gain the user they act for; keys made before users existed have none.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(AppRole::Table)
                    .col(string(AppRole::Id).primary_key())
                    .col(string_uniq(AppRole::Name))
                    .col(json(AppRole::Permission))
                    .col(timestamp_with_time_zone(AppRole::CreatedAt))
                    .col(timestamp_with_time_zone(AppRole::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(AppUser::Table)
                    .col(string(AppUser::Username).primary_key())
                    .col(string(AppUser::RoleId))
                    .col(boolean(AppUser::Active))
                    .col(timestamp_with_time_zone(AppUser::CreatedAt))
                    .col(timestamp_with_time_zone(AppUser::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_app_user_role")
                            .from(AppUser::Table, AppUser::RoleId)
                            .to(AppRole::Table, AppRole::Id)
                            .on_delete(ForeignKeyAction::Restrict),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(AppDatabase::Table)
                    .col(string(AppDatabase::Name).primary_key())
                    .col(timestamp_with_time_zone(AppDatabase::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(AppTable::Table)
                    .col(string(AppTable::Id).primary_key())
                    .col(string(AppTable::Database))
                    .col(string(AppTable::Name))
                    .col(string_uniq(AppTable::SqlName))
                    .col(string(AppTable::PrimaryKey))
                    .col(json(AppTable::Attributes))
                    .col(string(AppTable::Origin))
                    .col(json_null(AppTable::Options))
                    .col(timestamp_with_time_zone(AppTable::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_app_table_database")
                            .from(AppTable::Table, AppTable::Database)
                            .to(AppDatabase::Table, AppDatabase::Name)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_app_table_name")
                    .table(AppTable::Table)
                    .col(AppTable::Database)
                    .col(AppTable::Name)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(AccessKey::Table)
                    .add_column(string_null(AccessKey::UserName))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(Table::alter().table(AccessKey::Table).drop_column(AccessKey::UserName).to_owned())
            .await?;
        manager.drop_table(Table::drop().table(AppTable::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(AppDatabase::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(AppUser::Table).to_owned()).await?;
        manager.drop_table(Table::drop().table(AppRole::Table).to_owned()).await
    }
}

#[derive(DeriveIden)]
enum AppRole {
    Table,
    Id,
    Name,
    Permission,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum AppUser {
    Table,
    Username,
    RoleId,
    Active,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum AppDatabase {
    Table,
    Name,
    CreatedAt,
}

#[derive(DeriveIden)]
enum AppTable {
    Table,
    Id,
    Database,
    Name,
    SqlName,
    PrimaryKey,
    Attributes,
    Origin,
    Options,
    CreatedAt,
}

#[derive(DeriveIden)]
enum AccessKey {
    Table,
    UserName,
}
