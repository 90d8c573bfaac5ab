//! A console session. The browser holds a short-lived signed token naming this
//! row; revoking the row ends the session whatever the token says.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "admin_session")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub created_at: DateTimeUtc,
    /// The session's absolute end; tokens are re-issued until then.
    pub expires_at: DateTimeUtc,
    pub last_seen_at: DateTimeUtc,
    pub revoked_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::admin_account::Entity",
        from = "Column::AccountId",
        to = "super::admin_account::Column::Id",
        on_delete = "Cascade"
    )]
    Account,
}

impl Related<super::admin_account::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Account.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
