//! A session of the tool server (session-era MCP revisions): the logical
//! `system.mcp_session`. Bound to the user that opened it; evicted when idle
//! longer than `mcp.session.idleTimeoutSeconds`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "mcp_session")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// `application` or `operations`.
    pub profile: String,
    /// Who it is bound to: `{"user": name}` or `{"admin": account_id}`.
    pub principal: Json,
    /// The protocol revision agreed at `initialize`.
    pub protocol_version: String,
    /// The client's `clientInfo` and `capabilities`.
    pub client: Option<Json>,
    /// The tool names and resource URIs the user saw when last told.
    pub snapshot: Json,
    /// The resource URIs subscribed to (`resources/subscribe`).
    pub subscriptions: Json,
    pub created_at: DateTimeUtc,
    pub last_seen_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
