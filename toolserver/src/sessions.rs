//! Sessions of the session-era protocol revisions, in the table
//! `mcp_session` (the logical `system.mcp_session`), so any `lore serve`
//! on the same database knows them.
//!
//! A session is bound to the user that opened it (a request of another user
//! is refused), keeps the snapshot of what that user saw, and is evicted
//! when idle longer than `mcp.session.idleTimeoutSeconds`: the timeout
//! slides with each request (its `last_seen_at` is written at most every
//! few seconds, so a busy session does not write on every call) and while
//! its push channel is open.

use chrono::{DateTime, Duration, Utc};
use entity::mcp_session;
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set};
use serde_json::Value;

use super::{Profile, Snapshot};
use crate::ToolServer;
use engine::resources::Caller;
use engine::Lore;
use engine::Result;

#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    pub id: String,
    pub profile: Profile,
    /// Who it is bound to (see [`super::identity`]).
    pub identity: Value,
    pub protocol_version: String,
    pub snapshot: Snapshot,
    /// Resource URIs subscribed to with `resources/subscribe`.
    pub subscriptions: Vec<String>,
    pub last_seen_at: DateTime<Utc>,
}

impl Session {
    fn decode(row: mcp_session::Model) -> Result<Self> {
        let profile = Profile::parse(&row.profile)
            .ok_or_else(|| engine::Error::Internal(format!("session {} has an unknown profile", row.id)))?;
        Ok(Self {
            profile,
            identity: row.principal,
            protocol_version: row.protocol_version,
            snapshot: engine::store::decode("session snapshot", row.snapshot)?,
            subscriptions: engine::store::decode("session subscriptions", row.subscriptions)?,
            last_seen_at: row.last_seen_at,
            id: row.id,
        })
    }
}

fn idle_timeout(lore: &Lore) -> Duration {
    Duration::seconds(lore.settings.mcp.session.idle_timeout_seconds.max(1) as i64)
}

/// How stale `last_seen_at` may get before a request writes it again: a
/// tenth of the idle timeout, at most 30 seconds.
fn touch_every(lore: &Lore) -> Duration {
    (idle_timeout(lore) / 10).min(Duration::seconds(30))
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value> {
    serde_json::to_value(value).map_err(|err| engine::Error::Internal(err.to_string()))
}

/// Opens a session; its id is 128 random bits as 32 hex characters.
pub async fn open(
    lore: &Lore,
    profile: Profile,
    identity: Value,
    protocol_version: &str,
    client: Value,
    snapshot: &Snapshot,
) -> Result<Session> {
    let now = Utc::now();
    let row = mcp_session::ActiveModel {
        id: Set(uuid::Uuid::new_v4().simple().to_string()),
        profile: Set(profile.key().to_owned()),
        principal: Set(identity),
        protocol_version: Set(protocol_version.to_owned()),
        client: Set(Some(client)),
        snapshot: Set(to_json(snapshot)?),
        subscriptions: Set(Value::Array(Vec::new())),
        created_at: Set(now),
        last_seen_at: Set(now),
    }
    .insert(&lore.db)
    .await?;
    Session::decode(row)
}

/// The session-era revision `initialize` agrees on: the one asked for when
/// Lore speaks it, else the preferred one.
pub fn negotiate(requested: &str) -> &'static str {
    super::SESSION_VERSIONS.into_iter().find(|v| *v == requested).unwrap_or(super::PREFERRED_VERSION)
}

/// `initialize`: opens a session of `caller` on `profile` at the revision
/// agreed from `requested`, its snapshot what the caller sees now.
pub async fn start(
    lore: &ToolServer,
    profile: Profile,
    caller: &Caller,
    requested: &str,
    client: Value,
) -> Result<Session> {
    if caller.principal.is_none() {
        // Anonymous sessions are opened within one shared budget: each is a
        // stored row, and nobody answers for them.
        let rate = lore.settings.mcp.tool_calls_per_minute.max(1);
        if !lore.admit("mcp:anonymous:initialize", rate) {
            return Err(engine::keys::KeyError::RateLimited(rate).into());
        }
    }
    let snapshot = super::listed(lore, profile, caller).await?.snapshot();
    open(lore, profile, super::who(caller), negotiate(requested), client, &snapshot).await
}

/// `resources/subscribe` (`on`) or `resources/unsubscribe` of `uri`: a
/// record the caller may read (see [`super::subscribable`]); the session's
/// open channels hear of it at once.
pub async fn subscribe(
    lore: &ToolServer,
    session: &Session,
    caller: &Caller,
    uri: &str,
    on: bool,
) -> Result<()> {
    if on {
        super::subscribable(lore, session.profile, caller, uri).await?;
    }
    let mut uris = session.subscriptions.clone();
    uris.retain(|u| u != uri);
    if on {
        uris.push(uri.to_owned());
    }
    save_subscriptions(lore, &session.id, &uris).await?;
    lore.hub().set_updates(&session.id, &uris);
    Ok(())
}

/// What a request's session id names.
#[derive(Debug)]
pub enum Lookup {
    Live(Box<Session>),
    /// Unknown, of the other profile, or idle past the timeout.
    Gone,
    /// Live, but bound to another user than the caller.
    NotYours,
}

/// The session `id` of `profile`, for `caller`: a session is used only by
/// the user it is bound to.
pub async fn lookup(lore: &Lore, profile: Profile, id: &str, caller: &Caller) -> Result<Lookup> {
    let Some(row) = mcp_session::Entity::find_by_id(id.to_owned()).one(&lore.db).await? else {
        return Ok(Lookup::Gone);
    };
    let session = Session::decode(row)?;
    if session.profile != profile || session.last_seen_at + idle_timeout(lore) < Utc::now() {
        return Ok(Lookup::Gone);
    }
    if super::who(caller) != session.identity {
        return Ok(Lookup::NotYours);
    }
    Ok(Lookup::Live(Box::new(session)))
}

/// Slides the idle timeout: a request was served.
pub async fn touch(lore: &Lore, session: &Session) -> Result<()> {
    let now = Utc::now();
    if now - session.last_seen_at >= touch_every(lore) {
        mcp_session::ActiveModel {
            id: Set(session.id.clone()),
            last_seen_at: Set(now),
            ..Default::default()
        }
        .update(&lore.db)
        .await?;
    }
    Ok(())
}

/// Ends a session; false when there was none.
pub async fn close(lore: &ToolServer, id: &str) -> Result<bool> {
    let deleted = mcp_session::Entity::delete_by_id(id.to_owned()).exec(&lore.db).await?;
    lore.hub().close_session(id);
    Ok(deleted.rows_affected > 0)
}

/// Stores what the session's user sees now (after a notification).
pub async fn save_snapshot(lore: &Lore, id: &str, snapshot: &Snapshot) -> Result<()> {
    mcp_session::ActiveModel {
        id: Set(id.to_owned()),
        snapshot: Set(to_json(snapshot)?),
        ..Default::default()
    }
    .update(&lore.db)
    .await?;
    Ok(())
}

/// Stores the session's resource subscriptions.
async fn save_subscriptions(lore: &Lore, id: &str, uris: &[String]) -> Result<()> {
    mcp_session::ActiveModel {
        id: Set(id.to_owned()),
        subscriptions: Set(to_json(&uris)?),
        ..Default::default()
    }
    .update(&lore.db)
    .await?;
    Ok(())
}

/// Deletes the sessions idle past the timeout and closes their push
/// channels: what the sweep of `lore serve` runs. A session whose push
/// channel is open in this process is not idle: a client that only listens
/// is alive, so the sweep first marks those seen now (every process sweeps
/// its own, more often than the timeout). The ids evicted.
pub async fn evict_idle(lore: &ToolServer) -> Result<Vec<String>> {
    let listening = lore.hub().listening_sessions();
    if !listening.is_empty() {
        mcp_session::Entity::update_many()
            .col_expr(mcp_session::Column::LastSeenAt, Expr::value(Utc::now()))
            .filter(mcp_session::Column::Id.is_in(listening))
            .exec(&lore.db)
            .await?;
    }
    let cutoff = Utc::now() - idle_timeout(lore);
    let idle =
        mcp_session::Entity::find().filter(mcp_session::Column::LastSeenAt.lt(cutoff)).all(&lore.db).await?;
    let mut evicted = Vec::with_capacity(idle.len());
    for row in idle {
        mcp_session::Entity::delete_by_id(row.id.clone()).exec(&lore.db).await?;
        lore.hub().close_session(&row.id);
        evicted.push(row.id);
    }
    Ok(evicted)
}

/// How often the sweep runs: half the idle timeout, between 1 and 60 seconds.
pub fn sweep_every(lore: &Lore) -> std::time::Duration {
    let half = lore.settings.mcp.session.idle_timeout_seconds / 2;
    std::time::Duration::from_secs(half.clamp(1, 60))
}

/// Evicts idle sessions every [`sweep_every`] until `stop` turns true;
/// `lore serve` runs it beside the server.
pub async fn keep_evicting(lore: ToolServer, mut stop: tokio::sync::watch::Receiver<bool>) {
    let mut every = tokio::time::interval(sweep_every(&lore));
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = stop.changed() => {}
        }
        if *stop.borrow() {
            return;
        }
        match evict_idle(&lore).await {
            Ok(evicted) if evicted.is_empty() => {}
            Ok(evicted) => tracing::debug!(evicted = evicted.len(), "idle tool-server sessions evicted"),
            Err(err) => tracing::warn!(error = %err, "evicting idle tool-server sessions failed"),
        }
    }
}
