//! Users with their roles, the catalog's tables and the access keys, held
//! in memory between requests.
//!
//! Every change to users, roles, keys' standing or the structure moves the stored counter
//! `cluster_state.appdb_generation` in its own transaction ([`bump`]). A
//! request begins by reading that counter ([`Cache::refresh`], one small
//! read): when it moved, whichever process moved it (another `lore serve`
//! on the same PostgreSQL, `lore users`, `lore schema apply`), everything
//! held is dropped. So a change still counts from the next request, for one
//! read where the key, the user, its role and the table cost four. (A new
//! key needs no move: it is read when first seen.)
//!
//! On PostgreSQL the counter need not be read on every request: the change
//! also sends a notification (`NOTIFY lore_appdb`, delivered as it
//! commits), and the listener of each process (the `cluster` module, a floor up)
//! drops what is held when one arrives. While the listener is connected a
//! request reads the counter only after a drop; while it is not (before it
//! first listens, after its connection breaks until it listens again) every
//! request reads it, as on SQLite. A change made by another process counts
//! from the first request after its notification arrives, which on
//! loopback or a LAN is within a millisecond of its commit. A connection
//! can also die without a word (a peer gone without closing it): so the
//! counter is still read once [`TRUST_FOR`] has passed since the last read,
//! which bounds how late a change can count then.
//!
//! A value read while a change lands is kept only if nothing was dropped
//! while it was being read (the epoch moves on each drop), so a slow
//! reader never puts back what a change made stale.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use entity::cluster_state;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};

use super::catalog::{self, Table};
use super::users::{self, User};
use crate::Result;

/// The channel changes are announced on (PostgreSQL only).
pub(crate) const CHANNEL: &str = "lore_appdb";

/// How long what was read stays trusted while listening: after that the
/// next request reads the counter again.
pub const TRUST_FOR: Duration = Duration::from_secs(1);

#[derive(Default)]
pub struct Cache {
    state: Mutex<State>,
    /// True while a listener is connected and listening for changes: the
    /// counter is then read only after a drop.
    watched: AtomicBool,
}

#[derive(Default)]
struct State {
    /// The stored generation the values held were read under; `None`
    /// before the first read (or with no cluster row: nothing is kept).
    generation: Option<i64>,
    /// When the counter was last read.
    read_at: Option<std::time::Instant>,
    /// Moves each time everything is dropped.
    epoch: u64,
    users: HashMap<String, User>,
    tables: HashMap<(String, String), Table>,
    /// Access keys by the hash of their raw value.
    keys: HashMap<String, entity::access_key::Model>,
}

impl State {
    fn drop_all(&mut self, generation: Option<i64>) {
        self.generation = generation;
        self.epoch += 1;
        self.users.clear();
        self.tables.clear();
        self.keys.clear();
    }
}

impl Cache {
    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing a panicking holder left half-done can hurt: the maps only
        // ever hold whole values.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reads the stored generation and drops what is held if it moved. Call
    /// once at the start of each request, before any lookup.
    pub async fn refresh(&self, conn: &impl ConnectionTrait) -> Result<()> {
        if self.watched.load(Ordering::Acquire) {
            let state = self.state();
            let fresh = state.read_at.is_some_and(|at| at.elapsed() < TRUST_FOR);
            if state.generation.is_some() && fresh {
                return Ok(());
            }
        }
        let read_at = std::time::Instant::now();
        let stored = cluster_state::Entity::find_by_id(cluster_state::SINGLETON_ID)
            .select_only()
            .column(cluster_state::Column::AppdbGeneration)
            .into_tuple::<i64>()
            .one(conn)
            .await?;
        let mut state = self.state();
        if stored.is_none() || state.generation != stored {
            state.drop_all(stored);
        }
        state.read_at = Some(read_at);
        Ok(())
    }

    /// Drops everything: this process changed users, roles or the structure.
    pub fn clear(&self) {
        self.state().drop_all(None);
    }

    /// Moves each time what is held is dropped: whoever derives something
    /// from the catalog (the resource registry) derives it again then.
    pub fn epoch(&self) -> u64 {
        self.state().epoch
    }

    /// A user with its role, as stored (`None`: no such user).
    pub async fn user(&self, conn: &impl ConnectionTrait, username: &str) -> Result<Option<User>> {
        let epoch = {
            let state = self.state();
            if let Some(user) = state.users.get(username) {
                return Ok(Some(user.clone()));
            }
            state.epoch
        };
        let user = users::read_user(conn, username).await?;
        if let Some(user) = &user {
            self.keep(epoch, |state| {
                state.users.insert(username.to_owned(), user.clone());
            });
        }
        Ok(user)
    }

    /// A table of the catalog; an unknown database or table is the error
    /// [`catalog::table`] gives.
    pub async fn table(&self, conn: &impl ConnectionTrait, database: &str, name: &str) -> Result<Table> {
        let key = (database.to_owned(), name.to_owned());
        let epoch = {
            let state = self.state();
            if let Some(table) = state.tables.get(&key) {
                return Ok(table.clone());
            }
            state.epoch
        };
        let table = catalog::table(conn, database, name).await?;
        self.keep(epoch, |state| {
            state.tables.insert(key, table.clone());
        });
        Ok(table)
    }

    /// The stored access key with this hash (`None`: no such key).
    pub async fn key(
        &self,
        conn: &impl ConnectionTrait,
        hash: &str,
    ) -> Result<Option<entity::access_key::Model>> {
        let epoch = {
            let state = self.state();
            if let Some(key) = state.keys.get(hash) {
                return Ok(Some(key.clone()));
            }
            state.epoch
        };
        let key = entity::access_key::Entity::find()
            .filter(entity::access_key::Column::Hash.eq(hash))
            .one(conn)
            .await?;
        if let Some(key) = &key {
            self.keep(epoch, |state| {
                state.keys.insert(hash.to_owned(), key.clone());
            });
        }
        Ok(key)
    }

    /// Told by this process's listener (the `cluster` module) whether it
    /// is listening on [`CHANNEL`]: while it is, [`Self::refresh`] need not
    /// read the counter on each request. Either way everything is dropped:
    /// changes may have been missed while it was not listening.
    pub(crate) fn set_watched(&self, watched: bool) {
        self.clear();
        self.watched.store(watched, Ordering::Release);
    }

    /// True while a listener is connected and listening for the changes of
    /// every process (PostgreSQL only).
    pub fn watched(&self) -> bool {
        self.watched.load(Ordering::Acquire)
    }

    /// Runs `put` unless everything was dropped since `epoch`.
    fn keep(&self, epoch: u64, put: impl FnOnce(&mut State)) {
        let mut state = self.state();
        if state.epoch == epoch && state.generation.is_some() {
            put(&mut state);
        }
    }
}

/// Moves the stored generation: call inside the transaction of every change
/// to users, roles or the structure, so it commits with the change (on
/// PostgreSQL the notification goes out as it commits).
pub async fn bump(conn: &impl ConnectionTrait) -> Result<()> {
    if conn.get_database_backend() == sea_orm::DbBackend::Postgres {
        conn.execute_unprepared(&format!("NOTIFY {CHANNEL}")).await?;
    }
    cluster_state::Entity::update_many()
        .col_expr(
            cluster_state::Column::AppdbGeneration,
            Expr::col(cluster_state::Column::AppdbGeneration).add(1),
        )
        .filter(cluster_state::Column::Id.eq(cluster_state::SINGLETON_ID))
        .exec(conn)
        .await?;
    Ok(())
}
