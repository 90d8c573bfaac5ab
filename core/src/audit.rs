//! The audit log: who did what, when. Appended to, never edited.

use chrono::Utc;
use entity::audit_log;
use sea_orm::{ActiveModelTrait, ConnectionTrait, NotSet, Set};

use crate::Result;

/// Who acted: an admin account, an application-database user (through
/// one of its keys), or Lore itself.
#[derive(Clone, Debug)]
pub enum Actor {
    Account(String),
    User(String),
    System,
}

impl Actor {
    /// The account id, `user:<name>`, or `system`.
    pub fn label(&self) -> String {
        match self {
            Actor::Account(id) => id.clone(),
            Actor::User(name) => format!("user:{name}"),
            Actor::System => "system".to_owned(),
        }
    }
}

/// Appends one entry. Takes any connection so it can join a transaction.
pub async fn record(
    db: &impl ConnectionTrait,
    actor: &Actor,
    action: &str,
    target: Option<&str>,
    details: serde_json::Value,
) -> Result<()> {
    entry(actor, action, target, details).insert(db).await?;
    Ok(())
}

/// One entry, stamped now, to insert here or behind the request
/// (`recorder::Recorder::audit`).
pub fn entry(
    actor: &Actor,
    action: &str,
    target: Option<&str>,
    details: serde_json::Value,
) -> audit_log::ActiveModel {
    audit_log::ActiveModel {
        id: NotSet,
        at: Set(Utc::now()),
        actor: Set(actor.label()),
        action: Set(action.to_owned()),
        target: Set(target.map(str::to_owned)),
        details: Set(details),
    }
}

/// One entry as read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub id: i64,
    pub at: chrono::DateTime<Utc>,
    pub actor: String,
    pub action: String,
    pub target: Option<String>,
    pub details: serde_json::Value,
}

/// The newest entries first, at most `limit`, older than entry `before` when
/// given (for paging back).
pub async fn recent(db: &impl ConnectionTrait, limit: u64, before: Option<i64>) -> Result<Vec<Entry>> {
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
    let mut query = audit_log::Entity::find().order_by_desc(audit_log::Column::Id).limit(limit);
    if let Some(before) = before {
        query = query.filter(audit_log::Column::Id.lt(before));
    }
    Ok(query
        .all(db)
        .await?
        .into_iter()
        .map(|row| Entry {
            id: row.id,
            at: row.at,
            actor: row.actor,
            action: row.action,
            target: row.target,
            details: row.details,
        })
        .collect())
}
