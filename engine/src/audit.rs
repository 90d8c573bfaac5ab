//! The audit log: who did what, when. Appended to, never edited.

use chrono::Utc;
use entity::audit_log;
use sea_orm::{ActiveModelTrait, ConnectionTrait, NotSet, Set};

use crate::Result;

/// Who acted: an admin account, or Lore itself.
#[derive(Clone, Debug)]
pub enum Actor {
    Account(String),
    System,
}

impl Actor {
    /// The account id, or `system`.
    pub fn label(&self) -> &str {
        match self {
            Actor::Account(id) => id,
            Actor::System => "system",
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
    audit_log::ActiveModel {
        id: NotSet,
        at: Set(Utc::now()),
        actor: Set(actor.label().to_owned()),
        action: Set(action.to_owned()),
        target: Set(target.map(str::to_owned)),
        details: Set(details),
    }
    .insert(db)
    .await?;
    Ok(())
}
