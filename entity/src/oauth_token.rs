//! A token issued under a grant, by its SHA-256 hash: an access token, or
//! a refresh token that is rotated on use (a rotated one presented again
//! revokes the grant).

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_token")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub hash: String,
    pub grant_id: String,
    /// `access` or `refresh`.
    pub kind: String,
    pub expires_at: DateTimeUtc,
    /// When a refresh token was exchanged for the next pair.
    pub rotated_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
