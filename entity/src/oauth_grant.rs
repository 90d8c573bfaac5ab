//! What a person allowed a client: scopes at one resource, acting as them.
//! Born of one authorization code (its hash, PKCE challenge and redirect
//! URI are kept to check the code's exchange); live once the code is
//! exchanged, until revoked.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_grant")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub client_id: String,
    /// Who its tokens act as: `{"user": name}` or `{"admin": account_id}`.
    pub subject: Json,
    /// The scopes granted, a JSON array of strings.
    pub scopes: Json,
    /// The resource its tokens are for (RFC 8707): a tool server's URL.
    pub resource: String,
    pub redirect_uri: String,
    #[sea_orm(unique)]
    pub code_hash: String,
    /// The PKCE S256 challenge the code's exchange must answer.
    pub code_challenge: String,
    pub code_expires_at: DateTimeUtc,
    /// When the code was exchanged; a second exchange revokes the grant.
    pub code_used_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub last_used_at: Option<DateTimeUtc>,
    pub revoked_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
