//! Changes every `lore serve` on one database must hear of.
//!
//! Most of what a process holds between requests is checked against the
//! database as it is used, so a change made through another replica counts
//! there too: the users, roles and keys of the application database (see
//! [`crate::appdb::cache`]); the active profile version and the bindings,
//! which every answer's readiness check reads; the answer cache's entries,
//! kept per profile version and checked against the chunks they cite.
//!
//! What is held without such a check is dropped through [`Corpus::announce`]:
//! at once in the process that made the change and, on PostgreSQL, in
//! every other one through `NOTIFY lore_changes`, which a listener in each
//! process ([`listen`]) turns into the same drop. That covers
//! - the loaded embedding model with the chunk index (and, above, the
//!   answer cache) opened for its dimensions ([`Change::Embedding`]): a
//!   replica that kept them would embed questions with the old model, and
//!   stamp the corpus with the old model's name if it ran the full reindex;
//! - the pinned answers ([`Change::Pins`]), held by the answering crate;
//! - the tool server's sessions, told when a role or the structure changed
//!   ([`Change::Roles`], [`Change::Schema`]) so that each sends its client
//!   `notifications/tools/list_changed`.
//!
//! A component above this crate that holds something a change makes stale
//! subscribes with a [`Subscriber`], handed to [`Corpus::open`]: the typed
//! change reaches it in the same order, locally and from other replicas, and
//! nothing here knows what it holds.
//!
//! A notification goes out as its statement runs, after the change
//! committed, and arrives within milliseconds on loopback or a LAN. One
//! sent while a listener was not connected is lost: so each time a listener
//! starts listening it applies every change. On SQLite the database is one
//! machine's file and the local drop is all there is.
//!
//! The same listener, one connection per process, also hears `lore_appdb`
//! (sent by every change to the application database's users, roles, keys
//! and tables, in the change's transaction) and drops that cache; while it
//! listens, that cache trusts what it holds (see [`crate::appdb::cache`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, Statement};

use crate::{appdb, embed, index, Corpus};

/// The channel changes are announced on (PostgreSQL only).
pub const CHANNEL: &str = "lore_changes";

/// How long the listener waits before connecting again after a failure.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// What changed, as far as what processes hold in memory goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The embedding role was rebound, or a judged model was adopted.
    Embedding,
    /// A pinned answer was made, removed or flagged.
    Pins,
    /// A role, or a user's role or activity, changed.
    Roles,
    /// A database, table or attribute was made or dropped.
    Schema,
}

impl Change {
    pub const ALL: [Change; 4] = [Change::Embedding, Change::Pins, Change::Roles, Change::Schema];

    pub fn key(self) -> &'static str {
        match self {
            Change::Embedding => "embedding",
            Change::Pins => "pins",
            Change::Roles => "roles",
            Change::Schema => "schema",
        }
    }

    pub fn parse(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|change| change.key() == key)
    }
}

/// What is held in memory, opened or loaded on first use, and dropped by a
/// [`Change`].
pub type Slot<T> = Arc<tokio::sync::Mutex<Option<Arc<T>>>>;

/// A component that holds something a [`Change`] makes stale. Told of each
/// change once, in this process, whether it was made here or announced by
/// another replica; an [`Change::Embedding`] is told while the embedder is
/// still locked, so that nothing opens anew for the old model meanwhile.
#[async_trait::async_trait]
pub trait Subscriber: Send + Sync {
    async fn changed(&self, change: Change);
}

/// What a process holds that a [`Change`] drops. Kept apart from [`Corpus`]
/// so that the listener holds these and not the whole handle: it stops
/// when the last [`Corpus`] of its process is dropped.
#[derive(Clone)]
pub(crate) struct Resident {
    /// Loaded on first use (the local weights take a moment and 90 MB).
    pub(crate) embedder: Slot<dyn embed::Embedder>,
    /// Opened on first use, with the embedder's dimensions.
    pub(crate) chunks: Slot<dyn index::ChunkStore>,
    /// What the floors above hold, told of every change.
    pub(crate) subscribers: Arc<[Arc<dyn Subscriber>]>,
    pub(crate) appdb_cache: Arc<appdb::cache::Cache>,
    pub(crate) appdb_events: tokio::sync::broadcast::Sender<appdb::Event>,
    /// True while the listener is connected and listening.
    pub(crate) listening: Arc<AtomicBool>,
}

impl Resident {
    pub(crate) fn new(appdb_cache: Arc<appdb::cache::Cache>, subscribers: Vec<Arc<dyn Subscriber>>) -> Self {
        Resident {
            embedder: Arc::default(),
            chunks: Arc::default(),
            subscribers: subscribers.into(),
            appdb_cache,
            appdb_events: tokio::sync::broadcast::channel(64).0,
            listening: Arc::default(),
        }
    }

    /// Drops (or tells) what `change` makes stale, in this process only.
    pub(crate) async fn apply(&self, change: Change) {
        match change {
            Change::Embedding => self.forget_embedding().await,
            Change::Pins => self.tell(change).await,
            Change::Roles => {
                self.appdb_changed(appdb::Event::RoleChanged);
                self.tell(change).await;
            }
            Change::Schema => {
                self.appdb_changed(appdb::Event::SchemaReloaded);
                self.tell(change).await;
            }
        }
    }

    /// Drops the embedder and the chunk index, and tells the subscribers
    /// (the answer cache goes) while the embedder is still locked: the next
    /// use resolves the embedding role again.
    pub(crate) async fn forget_embedding(&self) {
        let mut embedder = self.embedder.lock().await;
        let mut chunks = self.chunks.lock().await;
        *embedder = None;
        *chunks = None;
        self.tell(Change::Embedding).await;
    }

    pub(crate) async fn tell(&self, change: Change) {
        for subscriber in self.subscribers.iter() {
            subscriber.changed(change).await;
        }
    }

    fn appdb_changed(&self, event: appdb::Event) {
        self.appdb_cache.clear();
        // Nobody listening is not an error.
        let _ = self.appdb_events.send(event);
    }
}

/// Who a notification came from and what changed: `{node}:{change}`.
fn payload(node: &str, change: Change) -> String {
    format!("{node}:{}", change.key())
}

/// The change a notification announces, unless this process (`node`) sent
/// it: that one was applied here already.
fn heard(node: &str, payload: &str) -> Option<Change> {
    let (from, key) = payload.rsplit_once(':')?;
    if from == node {
        return None;
    }
    Change::parse(key)
}

impl Corpus {
    /// Applies `change` in this process and announces it to every other one
    /// on the same PostgreSQL database. Call it after the change committed.
    /// An announcement that cannot be sent is logged: the others then keep
    /// what they hold until they reconnect or restart.
    pub async fn announce(&self, change: Change) {
        self.resident.apply(change).await;
        notify(&self.db, &self.node, change).await;
    }

    /// [`Self::announce`] of a role or schema change, for a caller that
    /// cannot wait: the local drop and event now, the announcement behind.
    pub(crate) fn announce_appdb(&self, event: appdb::Event) {
        let change = match event {
            appdb::Event::RoleChanged => Change::Roles,
            appdb::Event::SchemaReloaded => Change::Schema,
        };
        self.resident.appdb_changed(event);
        let (resident, db, node) = (self.resident.clone(), self.db.clone(), self.node.clone());
        tokio::spawn(async move {
            resident.tell(change).await;
            notify(&db, &node, change).await
        });
    }

    /// True while this process listens for the changes other replicas
    /// announce (PostgreSQL only).
    pub fn hears_other_replicas(&self) -> bool {
        self.resident.listening.load(Ordering::Acquire)
    }

    /// This process's name among the replicas (random, per open).
    pub fn node(&self) -> &str {
        &self.node
    }
}

async fn notify(db: &DatabaseConnection, node: &str, change: Change) {
    if db.get_database_backend() != DbBackend::Postgres {
        return;
    }
    let statement = Statement::from_sql_and_values(
        DbBackend::Postgres,
        "SELECT pg_notify($1, $2)",
        [CHANNEL.into(), payload(node, change).into()],
    );
    if let Err(err) = db.execute(statement).await {
        tracing::error!(error = %err, change = change.key(), "could not tell the other replicas of a change; they keep what they hold until they reconnect");
    }
}

/// Starts the listener of a process on PostgreSQL (`lore_changes` and
/// `lore_appdb`); it stops when `stop`'s sender is dropped.
pub(crate) fn watch(resident: Resident, node: String, url: String, stop: tokio::sync::oneshot::Receiver<()>) {
    tokio::spawn(listen(resident, node, url, stop));
}

/// Connects, listens, and applies each change another process announces;
/// on a failure it connects anew. Each time it starts listening it applies
/// every change, for those announced while it was not.
async fn listen(resident: Resident, node: String, url: String, mut stop: tokio::sync::oneshot::Receiver<()>) {
    use sea_orm::sqlx::postgres::PgListener;
    loop {
        let listening = async {
            let mut listener = PgListener::connect(&url).await?;
            listener.listen_all([CHANNEL, appdb::cache::CHANNEL]).await?;
            Ok::<_, sea_orm::sqlx::Error>(listener)
        };
        let listening = tokio::select! {
            _ = &mut stop => return,
            listening = listening => listening,
        };
        let failure = match listening {
            Ok(mut listener) => {
                for change in Change::ALL {
                    resident.apply(change).await;
                }
                resident.appdb_cache.set_watched(true);
                resident.listening.store(true, Ordering::Release);
                loop {
                    let received = tokio::select! {
                        _ = &mut stop => return,
                        received = listener.try_recv() => received,
                    };
                    match received {
                        // A change to users, roles, keys or tables, by any
                        // process (see `appdb::cache`).
                        Ok(Some(notification)) if notification.channel() == appdb::cache::CHANNEL => {
                            resident.appdb_cache.clear()
                        }
                        Ok(Some(notification)) => {
                            if let Some(change) = heard(&node, notification.payload()) {
                                tracing::debug!(change = change.key(), "another replica announced a change");
                                resident.apply(change).await;
                            }
                        }
                        Ok(None) => break "the connection was closed".to_owned(),
                        Err(err) => break err.to_string(),
                    }
                }
            }
            Err(err) => err.to_string(),
        };
        resident.listening.store(false, Ordering::Release);
        resident.appdb_cache.set_watched(false);
        tracing::warn!(error = %failure, "not listening for other replicas' changes; connecting again");
        tokio::select! { _ = &mut stop => return, _ = tokio::time::sleep(RECONNECT_AFTER) => {} }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_names_its_sender_and_change() {
        for change in Change::ALL {
            assert_eq!(heard("b", &payload("a", change)), Some(change));
            assert_eq!(heard("a", &payload("a", change)), None, "its own announcement is not applied twice");
        }
        assert_eq!(heard("b", "a:nonsense"), None);
        assert_eq!(heard("b", "no separator"), None);
    }
}
