//! An access key for the public surfaces. Only a SHA-256 hash of the raw
//! value and a short display prefix are stored.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "access_key")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub name: String,
    /// `secret` or `widget`.
    pub kind: String,
    /// The first characters of the raw key, for recognising it in lists.
    pub prefix: String,
    /// Hex SHA-256 of the raw key.
    #[sea_orm(unique)]
    pub hash: String,
    /// `["answer", "retrieve", "mcp", "operations"]` (a widget key: answer only).
    pub scopes: Json,
    /// `active` or `revoked`.
    pub status: String,
    /// Widget keys: the origins allowed to use it (`https://example.com`).
    pub origins: Json,
    /// Widget keys: requests per minute per node.
    pub rate_limit_per_minute: Option<i32>,
    pub created_by: String,
    pub created_at: DateTimeUtc,
    pub revoked_at: Option<DateTimeUtc>,
    pub last_used_at: Option<DateTimeUtc>,
    /// The application-database user the key acts for; none for keys made
    /// before users existed (they serve `/answer` and `/retrieve` only).
    pub user_name: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
