//! The catalog entry of an application table: its database, name, the real
//! table that holds its rows, its primary key and typed attributes.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "app_table")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub database: String,
    pub name: String,
    /// The real table's name (`data_<database>__<table>`).
    #[sea_orm(unique)]
    pub sql_name: String,
    pub primary_key: String,
    /// `[{"name", "type", "nullable", "indexed", "managed"}]`, decoded by
    /// `engine::appdb::catalog`.
    pub attributes: Json,
    /// `operation` (made by an operation) or `schema` (declared in the schema file).
    pub origin: String,
    /// `{"expiration", "export": {"path", "http", "mcp"}}`, decoded by
    /// `engine::appdb::catalog`; none for a table made by an operation.
    pub options: Option<Json>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
