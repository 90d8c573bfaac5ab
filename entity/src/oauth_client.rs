//! A client of the tool server's OAuth authorization server, registered
//! through dynamic client registration (RFC 7591) or named by the URL of
//! its client ID metadata document. Public clients only:
//! they prove themselves with PKCE, never with a secret.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_client")]
pub struct Model {
    /// The `client_id` it was given, or its metadata document's URL.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// `client_name` from its registration (the consent screen shows it).
    pub name: String,
    /// Its registered redirect URIs, a JSON array of strings.
    pub redirect_uris: Json,
    pub logo_uri: Option<String>,
    /// How it registered: `dynamic`, or `document` (its id is the URL of
    /// its client ID metadata document).
    pub registration: String,
    pub created_at: DateTimeUtc,
    /// When its metadata document is read again (`document` clients only).
    pub refresh_after: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
