//! An OIDC sign-in that has started and not yet come back: the state, nonce and
//! PKCE verifier the callback must match. Rows are single use.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oidc_login")]
pub struct Model {
    /// The OAuth `state` value.
    #[sea_orm(primary_key, auto_increment = false)]
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
    /// Random value also set as a cookie, binding the attempt to one browser.
    pub browser_binding: String,
    pub return_to: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
