//! A person who signed in to the console, through OIDC or the bootstrap link.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "admin_account")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// `oidc:{issuer}#{sub}` or `bootstrap`: unique per identity.
    #[sea_orm(unique)]
    pub subject: String,
    pub email: Option<String>,
    pub display_name: Option<String>,
    /// Whether the account was an authorized admin at its last sign-in (for
    /// the record: each request re-derives it, see `engine::auth::account_is_admin`).
    pub is_admin: bool,
    pub created_at: DateTimeUtc,
    pub last_sign_in_at: DateTimeUtc,
    /// The ID token's `email_verified` at the last sign-in (absent if it had none).
    pub email_verified: Option<bool>,
    /// The ID token's groups at the last sign-in, a JSON array of strings.
    pub groups: Option<Json>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(has_many = "super::admin_session::Entity")]
    Session,
}

impl Related<super::admin_session::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Session.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
