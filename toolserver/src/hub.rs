//! Push channels of this process: a session's GET stream (session era) or a
//! `subscriptions/listen` stream (sessionless era), and what they are told.
//!
//! When a role or the schema changes (an [`engine::appdb::Event`] of this
//! process, or the stored application-database generation moving because
//! another process changed it), [`Hub::recompute`] walks every open
//! channel: it resolves the channel's user again, computes what that user
//! sees now and compares it with the channel's snapshot. Only a channel
//! whose own tools or resources differ is told
//! (`notifications/tools/list_changed`, `notifications/resources/list_changed`);
//! there is no broadcast. A session's snapshot is stored with it, so the
//! comparison survives the stream being opened again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::mpsc;

use super::{Profile, Snapshot};
use crate::ToolServer;
use engine::resources::Caller;
use engine::Lore;
use engine::Result;

/// What a channel asked to hear (a session's GET stream hears all).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub tools: bool,
    pub resources: bool,
    /// Resource URIs whose changes it hears (`notifications/resources/updated`).
    pub updates: Vec<String>,
}

impl Filter {
    pub fn everything() -> Self {
        Self { tools: true, resources: true, updates: Vec::new() }
    }
}

/// Where a channel came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// A session's GET stream.
    Session(String),
    /// A `subscriptions/listen` request: its JSON-RPC id, which tags
    /// every notification sent on it.
    Listen(Value),
}

struct Channel {
    origin: Origin,
    profile: Profile,
    /// Who listens (its user, key and how it signed in: what it sees
    /// depends on all three).
    caller: Caller,
    filter: Filter,
    snapshot: Snapshot,
    sender: mpsc::UnboundedSender<Pushed>,
}

/// The open channels of this process.
#[derive(Default)]
pub struct Hub {
    channels: Mutex<HashMap<u64, Channel>>,
    next: AtomicU64,
}

/// What a channel is told; the transport writes it as MCP's notification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated`, for this URI.
    ResourceUpdated(String),
}

/// One message of a channel: the notice, and on a listen stream the
/// JSON-RPC id of its `subscriptions/listen` request, which tags it.
#[derive(Clone, Debug, PartialEq)]
pub struct Pushed {
    pub notice: Notice,
    pub subscription: Option<Value>,
}

/// An open channel: the messages to push, in order. Dropping it (the
/// client went away, the stream ended) removes the channel from the hub.
pub struct Stream {
    pub messages: mpsc::UnboundedReceiver<Pushed>,
    hub: Arc<Hub>,
    id: u64,
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.hub.channels().remove(&self.id);
    }
}

/// Opens a channel for `caller` on `profile`, compared from `snapshot`.
pub fn open(
    lore: &ToolServer,
    origin: Origin,
    profile: Profile,
    caller: &Caller,
    filter: Filter,
    snapshot: Snapshot,
) -> Result<Stream> {
    let (sender, messages) = mpsc::unbounded_channel();
    let hub = &lore.hub;
    let id = hub.next.fetch_add(1, Ordering::Relaxed);
    let channel = Channel { origin, profile, caller: caller.clone(), filter, snapshot, sender };
    hub.channels().insert(id, channel);
    Ok(Stream { messages, hub: hub.clone(), id })
}

/// A session's push channel (its GET stream): it hears everything, its
/// subscribed records too, compared from the session's stored snapshot.
pub fn session_channel(
    lore: &ToolServer,
    session: &super::sessions::Session,
    caller: &Caller,
) -> Result<Stream> {
    let filter = Filter { updates: session.subscriptions.clone(), ..Filter::everything() };
    let origin = Origin::Session(session.id.clone());
    open(lore, origin, session.profile, caller, filter, session.snapshot.clone())
}

/// `subscriptions/listen` (request `id`): a channel that hears what
/// `filter` asks, compared from what the caller sees now. Each record URI
/// must be one the caller may subscribe to (see [`super::subscribable`]).
pub async fn listen(
    lore: &ToolServer,
    profile: Profile,
    caller: &Caller,
    id: Value,
    filter: Filter,
) -> Result<Stream> {
    for uri in &filter.updates {
        super::subscribable(lore, profile, caller, uri).await?;
    }
    let snapshot = super::listed(lore, profile, caller).await?.snapshot();
    open(lore, Origin::Listen(id), profile, caller, filter, snapshot)
}

impl Hub {
    fn channels(&self) -> MutexGuard<'_, HashMap<u64, Channel>> {
        self.channels.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Closes every channel: the server is shutting down, and an open event
    /// stream would hold its connection (and the shutdown) forever.
    pub fn close_all(&self) {
        self.channels().clear();
    }

    /// Closes the channels of session `id` (deleted or evicted).
    pub fn close_session(&self, id: &str) {
        self.channels().retain(|_, c| c.origin != Origin::Session(id.to_owned()));
    }

    /// How many channels are open (a channel leaves when its stream is dropped).
    pub fn open_channels(&self) -> usize {
        self.channels().len()
    }

    /// The sessions with a push channel open in this process (a client
    /// still connected to it).
    pub fn listening_sessions(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .channels()
            .values()
            .filter(|c| !c.sender.is_closed())
            .filter_map(|c| match &c.origin {
                Origin::Session(id) => Some(id.clone()),
                Origin::Listen(_) => None,
            })
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// Changes the resource URIs session `id`'s channels hear about.
    pub fn set_updates(&self, id: &str, uris: &[String]) {
        for channel in self.channels().values_mut() {
            if channel.origin == Origin::Session(id.to_owned()) {
                channel.filter.updates = uris.to_vec();
            }
        }
    }

    /// Tells the channels that hear `uri` that it changed.
    pub fn resource_updated(&self, uri: &str) {
        for channel in self.channels().values() {
            if channel.filter.updates.iter().any(|u| u == uri) {
                let _ = channel.sender.send(pushed(&channel.origin, Notice::ResourceUpdated(uri.to_owned())));
            }
        }
    }

    /// Recomputes what each channel's user sees and tells those whose
    /// lists changed (see the module docs). A user that is gone or
    /// inactive sees nothing.
    pub async fn recompute(&self, lore: &Lore) -> Result<()> {
        let open: Vec<(u64, Profile, Caller)> = self
            .channels()
            .iter()
            .filter(|(_, c)| !c.sender.is_closed())
            .map(|(id, c)| (*id, c.profile, c.caller.clone()))
            .collect();
        let mut seen: HashMap<(Profile, String), Snapshot> = HashMap::new();
        for (id, profile, caller) in open {
            let holder = super::lists::holder(&caller);
            let now = match seen.get(&(profile, holder.clone())) {
                Some(snapshot) => snapshot.clone(),
                None => {
                    // The user as stored now: one gone or inactive sees nothing.
                    let snapshot = match super::as_stored(lore, &caller).await {
                        Ok(current) => super::surface(lore, profile, &current).await?.snapshot(),
                        Err(_) => Snapshot::default(),
                    };
                    seen.insert((profile, holder), snapshot.clone());
                    snapshot
                }
            };
            let told = self.tell(id, &now);
            if let Some(Origin::Session(session)) = told {
                super::sessions::save_snapshot(lore, &session, &now).await?;
            }
        }
        Ok(())
    }

    /// Sends channel `id` what changed from its snapshot to `now`, and
    /// keeps `now`; the channel's origin when something was sent.
    fn tell(&self, id: u64, now: &Snapshot) -> Option<Origin> {
        let mut channels = self.channels();
        let channel = channels.get_mut(&id)?;
        let tools = channel.snapshot.tools != now.tools;
        let resources = channel.snapshot.resources != now.resources;
        if !tools && !resources {
            return None;
        }
        if tools && channel.filter.tools {
            let _ = channel.sender.send(pushed(&channel.origin, Notice::ToolsListChanged));
        }
        if resources && channel.filter.resources {
            let _ = channel.sender.send(pushed(&channel.origin, Notice::ResourcesListChanged));
        }
        channel.snapshot = now.clone();
        Some(channel.origin.clone())
    }
}

/// `notice` as a channel of `origin` carries it: on a listen stream,
/// tagged with the subscription's id.
fn pushed(origin: &Origin, notice: Notice) -> Pushed {
    let subscription = match origin {
        Origin::Listen(id) => Some(id.clone()),
        Origin::Session(_) => None,
    };
    Pushed { notice, subscription }
}

/// Recomputes the channels whenever a role or the schema changes, in this
/// process or (seen through the stored generation, every second) another.
/// Runs until the tool server is dropped; `lore serve` spawns it.
pub async fn keep_listening(lore: ToolServer) {
    let mut events = lore.appdb_events();
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    let mut epoch = lore.appdb_cache().epoch();
    loop {
        let changed = tokio::select! {
            event = events.recv() => match event {
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => true,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            _ = tick.tick() => moved_elsewhere(&lore, &mut epoch).await,
        };
        if changed {
            epoch = lore.appdb_cache().epoch();
            if let Err(err) = lore.hub().recompute(&lore).await {
                tracing::warn!(error = %err, "could not recompute what the tool server's sessions see");
            }
        }
    }
}

/// Whether another process changed roles or the schema since `epoch` (read
/// only while channels are open); `epoch` follows.
async fn moved_elsewhere(lore: &ToolServer, epoch: &mut u64) -> bool {
    if lore.hub().open_channels() == 0 {
        return false;
    }
    if let Err(err) = lore.appdb_cache().refresh(&lore.db).await {
        tracing::warn!(error = %err, "could not read the application database's generation");
        return false;
    }
    let now = lore.appdb_cache().epoch();
    let moved = now != *epoch;
    *epoch = now;
    moved
}

/// Tells the channels subscribed to records of an exported table that
/// these changed: the engine calls it after every committed write of this
/// process (see `docs/mcp.md`).
pub(crate) struct RecordUpdates {
    hub: Arc<Hub>,
    base_url: String,
}

impl RecordUpdates {
    pub(crate) fn new(hub: Arc<Hub>, base_url: String) -> Self {
        Self { hub, base_url }
    }
}

impl engine::resources::WriteWatcher for RecordUpdates {
    fn written(&self, table: &engine::appdb::catalog::Table, ids: &[Value]) {
        let Some(export) = table.options.export.as_ref().filter(|e| e.mcp) else {
            return;
        };
        for id in ids {
            self.hub.resource_updated(&super::record_uri(&self.base_url, &export.path, id));
        }
    }
}
