//! Access keys for the public surfaces (`POST /answer`, `POST /retrieve`, the
//! tool server, the widget).
//!
//! - A raw key is `lore_sk_` (secret) or `lore_wk_` (widget) followed by 32
//!   random base62 characters. It is returned once, by [`create`]; only its
//!   SHA-256 hash and a short display prefix are stored.
//! - Scopes: `answer`, `retrieve`, `mcp`, `operations`. A widget key has
//!   `answer` only, an origin allowlist and a rate limit.
//! - [`authenticate`] is the one check every keyed request passes: known,
//!   active, in scope, and (widget) from an allowed origin within its rate.
//! - Usage is counted per key and UTC day, behind the request
//!   ([`crate::recorder::Recorder::key_usage`]); [`list`] sums the last 7
//!   days.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{Days, Utc};
use entity::{access_key, key_usage};
use rand::Rng;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use sha2::{Digest, Sha256};

use crate::audit::{self, Actor};
use crate::store::decode;
use crate::{Error, Lore, Result};

pub const SECRET_PREFIX: &str = "lore_sk_";
pub const WIDGET_PREFIX: &str = "lore_wk_";
pub const RANDOM_CHARS: usize = 32;
/// Characters of the raw key kept for display (`lore_sk_Ab3d`).
const DISPLAY_CHARS: usize = 12;
/// The usage window the console reports.
pub const USAGE_DAYS: u64 = 7;
/// A widget key's rate limit when none is given (requests per minute).
pub const DEFAULT_WIDGET_RATE: u32 = 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Answer,
    Retrieve,
    Mcp,
    Operations,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::Answer, Scope::Retrieve, Scope::Mcp, Scope::Operations];

    pub fn key(self) -> &'static str {
        match self {
            Scope::Answer => "answer",
            Scope::Retrieve => "retrieve",
            Scope::Mcp => "mcp",
            Scope::Operations => "operations",
        }
    }

    pub fn parse(raw: &str) -> Result<Self> {
        Scope::ALL.into_iter().find(|scope| scope.key() == raw).ok_or_else(|| {
            KeyError::Invalid(format!("unknown scope `{raw}` (answer, retrieve, mcp, operations)")).into()
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Secret,
    Widget,
}

impl KeyKind {
    pub fn key(self) -> &'static str {
        match self {
            KeyKind::Secret => "secret",
            KeyKind::Widget => "widget",
        }
    }

    pub fn parse(raw: &str) -> Result<Self> {
        match raw {
            "secret" => Ok(KeyKind::Secret),
            "widget" => Ok(KeyKind::Widget),
            other => Err(KeyError::Invalid(format!("unknown key kind `{other}` (secret or widget)")).into()),
        }
    }
}

/// Whether a key still works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyStatus {
    Active,
    /// Refused from now on (401); revoking is final.
    Revoked,
}

impl KeyStatus {
    pub fn key(self) -> &'static str {
        match self {
            KeyStatus::Active => "active",
            KeyStatus::Revoked => "revoked",
        }
    }
}

/// An access key as every surface sees it (never its raw value or hash):
/// its row with the kind, status, scopes and origins decoded once, here. A
/// stored value that cannot be read is an error naming the key, never an
/// empty list that would quietly change what the key may do.
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    pub id: String,
    pub name: String,
    pub kind: KeyKind,
    /// The first characters of the raw key, for recognising it in lists.
    pub prefix: String,
    pub scopes: Vec<Scope>,
    pub status: KeyStatus,
    /// Widget keys: the origins allowed to use it.
    pub origins: Vec<String>,
    /// Widget keys: requests per minute per node.
    pub rate_limit_per_minute: Option<u32>,
    pub created_by: String,
    pub created_at: chrono::DateTime<Utc>,
    pub revoked_at: Option<chrono::DateTime<Utc>>,
    pub last_used_at: Option<chrono::DateTime<Utc>>,
    /// The application-database user the key acts for; `None` for keys made
    /// before users existed, which serve `/answer` and `/retrieve` only.
    pub user: Option<String>,
}

impl Key {
    fn decode(row: access_key::Model) -> Result<Key> {
        let what = |column: &str| format!("access key {}'s {column}", row.id);
        let corrupt = |detail: String| Error::Internal(format!("access key {}: {detail}", row.id));
        let kind = KeyKind::parse(&row.kind)
            .map_err(|_| corrupt(format!("its stored kind {:?} is unknown", row.kind)))?;
        let status = match row.status.as_str() {
            "active" => KeyStatus::Active,
            "revoked" => KeyStatus::Revoked,
            other => return Err(corrupt(format!("its stored status {other:?} is unknown"))),
        };
        let rate_limit_per_minute = row
            .rate_limit_per_minute
            .map(|rate| {
                u32::try_from(rate).map_err(|_| corrupt(format!("its stored rate limit {rate} is negative")))
            })
            .transpose()?;
        Ok(Key {
            scopes: decode(&what("scopes"), row.scopes.clone())?,
            origins: decode(&what("origins"), row.origins.clone())?,
            id: row.id,
            name: row.name,
            kind,
            prefix: row.prefix,
            status,
            rate_limit_per_minute,
            created_by: row.created_by,
            created_at: row.created_at,
            revoked_at: row.revoked_at,
            last_used_at: row.last_used_at,
            user: row.user_name,
        })
    }
}

/// Why a keyed request was refused (an error of the floor below, so that
/// its error type can name it).
pub use crate::error::KeyError;

/// What a new key is for.
#[derive(Clone, Debug, Default)]
pub struct NewKey {
    pub name: String,
    pub kind: String,
    /// Ignored for widget keys (always `answer`); at least one for secret keys.
    pub scopes: Vec<String>,
    /// Widget keys: `https://docs.example.com` style origins.
    pub origins: Vec<String>,
    pub rate_limit_per_minute: Option<u32>,
    /// The user the key acts for: required for the `operations` and `mcp`
    /// scopes.
    pub user: Option<String>,
}

/// A key as listed: never its raw value.
#[derive(Clone, Debug, PartialEq)]
pub struct KeySummary {
    pub key: Key,
    pub queries_7d: i64,
    pub estimated_cost_7d: f64,
    /// Its answers of the same days that their askers rated helpful, and
    /// unhelpful.
    pub helpful_7d: i64,
    pub unhelpful_7d: i64,
}

/// The caller a valid key stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub key_id: String,
    pub kind: KeyKind,
    pub name: String,
    /// The user the key acts for, if it has one.
    pub user: Option<String>,
}

pub fn hash(raw: &str) -> String {
    hex(&Sha256::digest(raw.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn random_key(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::rngs::OsRng;
    let random: String =
        (0..RANDOM_CHARS).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char).collect();
    format!("{prefix}{random}")
}

/// `https://host[:port]` without path, lower-cased; refuses anything else.
pub fn normalize_origin(raw: &str) -> Result<String> {
    let invalid = || KeyError::Invalid(format!("`{raw}` is not an origin like https://docs.example.com"));
    let url = url::Url::parse(raw.trim()).map_err(|_| invalid())?;
    if !matches!(url.scheme(), "http" | "https")
        || url.host_str().is_none()
        || url.path() != "/" && !url.path().is_empty()
    {
        return Err(invalid().into());
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(invalid().into());
    }
    Ok(url.origin().ascii_serialization())
}

/// Creates a key. Returns the stored row and the raw value, which is never
/// available again.
pub async fn create(lore: &Lore, actor: &Actor, new: NewKey) -> Result<(Key, String)> {
    let name = new.name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(KeyError::Invalid("a key needs a name of 1 to 100 characters".into()).into());
    }
    let kind = KeyKind::parse(new.kind.trim())?;
    let (scopes, origins, rate) = match kind {
        KeyKind::Secret => {
            if !new.origins.is_empty() {
                return Err(KeyError::Invalid("origins apply to widget keys only".into()).into());
            }
            let mut scopes = Vec::new();
            for raw in &new.scopes {
                let scope = Scope::parse(raw.trim())?;
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
            if scopes.is_empty() {
                return Err(KeyError::Invalid("a secret key needs at least one scope".into()).into());
            }
            (scopes, Vec::new(), None)
        }
        KeyKind::Widget => {
            if new.scopes.iter().any(|s| s.trim() != "answer") {
                return Err(KeyError::Invalid("a widget key has the answer scope only".into()).into());
            }
            let mut origins = Vec::new();
            for raw in &new.origins {
                let origin = normalize_origin(raw)?;
                if !origins.contains(&origin) {
                    origins.push(origin);
                }
            }
            if origins.is_empty() {
                return Err(KeyError::Invalid("a widget key needs at least one allowed origin".into()).into());
            }
            let rate = new.rate_limit_per_minute.unwrap_or(DEFAULT_WIDGET_RATE);
            if rate == 0 || rate > 10_000 {
                return Err(
                    KeyError::Invalid("the rate limit must be 1 to 10000 requests a minute".into()).into()
                );
            }
            (vec![Scope::Answer], origins, Some(rate as i32))
        }
    };
    let user = match new.user.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
        Some(name) => match crate::appdb::users::user(lore, name).await? {
            Some(user) => Some(user.username),
            None => return Err(KeyError::Invalid(format!("there is no user `{name}`")).into()),
        },
        None => None,
    };
    if user.is_none() {
        if let Some(scope) = scopes.iter().find(|s| matches!(s, Scope::Operations | Scope::Mcp)) {
            return Err(KeyError::Invalid(format!(
                "the `{}` scope acts as a user: choose the user the key belongs to",
                scope.key()
            ))
            .into());
        }
    }
    let raw = random_key(match kind {
        KeyKind::Secret => SECRET_PREFIX,
        KeyKind::Widget => WIDGET_PREFIX,
    });
    let row = access_key::ActiveModel {
        id: Set(uuid::Uuid::new_v4().to_string()),
        name: Set(name.to_owned()),
        kind: Set(kind.key().to_owned()),
        prefix: Set(raw.chars().take(DISPLAY_CHARS).collect()),
        hash: Set(hash(&raw)),
        scopes: Set(serde_json::json!(scopes.iter().map(|s| s.key()).collect::<Vec<_>>())),
        status: Set("active".to_owned()),
        origins: Set(serde_json::json!(origins)),
        rate_limit_per_minute: Set(rate),
        created_by: Set(actor.label()),
        created_at: Set(Utc::now()),
        revoked_at: Set(None),
        last_used_at: Set(None),
        user_name: Set(user.clone()),
    }
    .insert(&lore.db)
    .await?;
    audit::record(
        &lore.db,
        actor,
        "key.created",
        Some(&row.id),
        serde_json::json!({"kind": kind.key(), "name": name, "user": user}),
    )
    .await?;
    Ok((Key::decode(row)?, raw))
}

/// A key just made: the only time its raw value is known, for a widget
/// key the snippet that embeds the widget on a page, and for a key with
/// the `mcp` scope an MCP client's configuration that connects to the tool
/// server with it.
#[derive(Clone, Debug)]
pub struct Issued {
    pub summary: KeySummary,
    pub raw_key: String,
    pub snippet: Option<String>,
    pub assistant_config: Option<String>,
}

/// Makes a key (see [`create`]) as every surface hands it out.
pub async fn issue(lore: &Lore, actor: &Actor, new: NewKey) -> Result<Issued> {
    let (key, raw_key) = create(lore, actor, new).await?;
    let snippet = (key.kind == KeyKind::Widget).then(|| {
        format!(
            "<script src=\"{}/widget.js\" data-key=\"{raw_key}\" async></script>",
            lore.settings.base_url()
        )
    });
    let assistant_config = key.scopes.contains(&Scope::Mcp).then(|| {
        let config = serde_json::json!({"mcpServers": {"lore": {
            "type": "http",
            "url": format!("{}/mcp", lore.settings.base_url()),
            "headers": {"x-api-key": raw_key},
        }}});
        serde_json::to_string_pretty(&config).unwrap_or_default()
    });
    Ok(Issued { summary: KeySummary::of(key, 0, 0.0), raw_key, snippet, assistant_config })
}

impl KeySummary {
    /// A key with the given usage.
    pub fn of(key: Key, queries_7d: i64, estimated_cost_7d: f64) -> Self {
        KeySummary { key, queries_7d, estimated_cost_7d, helpful_7d: 0, unhelpful_7d: 0 }
    }
}

/// Every key, newest first, with its 7-day usage.
pub async fn list(lore: &Lore) -> Result<Vec<KeySummary>> {
    let totals = usage(lore, None).await?;
    let rated = crate::metrics::ratings_by_key(lore, usage_window_day()).await?;
    access_key::Entity::find()
        .order_by_desc(access_key::Column::CreatedAt)
        .all(&lore.db)
        .await?
        .into_iter()
        .map(|row| {
            let (queries, cost) = totals.get(&row.id).copied().unwrap_or_default();
            let (helpful_7d, unhelpful_7d) = rated.get(&row.id).copied().unwrap_or_default();
            Ok(KeySummary { helpful_7d, unhelpful_7d, ..KeySummary::of(Key::decode(row)?, queries, cost) })
        })
        .collect()
}

/// Queries and estimated cost per key over the usage window, for one key or
/// (`None`) every key; recorded usage not yet written is written first.
async fn usage(lore: &Lore, key_id: Option<&str>) -> Result<HashMap<String, (i64, f64)>> {
    lore.recorder().flush().await?;
    let mut query = key_usage::Entity::find().filter(key_usage::Column::Day.gte(usage_window_start()));
    if let Some(id) = key_id {
        query = query.filter(key_usage::Column::KeyId.eq(id));
    }
    let mut totals: HashMap<String, (i64, f64)> = HashMap::new();
    for row in query.all(&lore.db).await? {
        let entry = totals.entry(row.key_id).or_default();
        entry.0 += row.queries;
        entry.1 += row.estimated_cost_usd;
    }
    Ok(totals)
}

/// The first day of the usage window, at midnight UTC.
fn usage_window_day() -> chrono::DateTime<Utc> {
    let today = Utc::now().date_naive();
    let first = today.checked_sub_days(Days::new(USAGE_DAYS - 1)).unwrap_or(today);
    first.and_hms_opt(0, 0, 0).map(|at| at.and_utc()).unwrap_or_else(Utc::now)
}

fn usage_window_start() -> String {
    let today = Utc::now().date_naive();
    today.checked_sub_days(Days::new(USAGE_DAYS - 1)).unwrap_or(today).format("%Y-%m-%d").to_string()
}

/// Revokes a key; from now on it gets 401. Revoking twice changes nothing.
/// Returns the key as the list shows it, with its usage.
pub async fn revoke(lore: &Lore, actor: &Actor, id: &str) -> Result<KeySummary> {
    let key = access_key::Entity::find_by_id(id)
        .one(&lore.db)
        .await?
        .ok_or_else(|| KeyError::NotFound(id.into()))?;
    let key = if key.status == KeyStatus::Revoked.key() {
        key
    } else {
        let mut row: access_key::ActiveModel = key.into();
        row.status = Set("revoked".to_owned());
        row.revoked_at = Set(Some(Utc::now()));
        // Keys are held in memory too: the generation moves with the change.
        let txn = crate::store::begin_write(&lore.db).await?;
        let key = row.update(&txn).await?;
        audit::record(&txn, actor, "key.revoked", Some(&key.id), serde_json::json!({})).await?;
        crate::appdb::cache::bump(&txn).await?;
        txn.commit().await?;
        key
    };
    let (queries, cost) = usage(lore, Some(id)).await?.get(id).copied().unwrap_or_default();
    let (helpful_7d, unhelpful_7d) =
        crate::metrics::ratings_by_key(lore, usage_window_day()).await?.get(id).copied().unwrap_or_default();
    Ok(KeySummary { helpful_7d, unhelpful_7d, ..KeySummary::of(Key::decode(key)?, queries, cost) })
}

/// Per-node fixed-window counters for widget rate limits.
#[derive(Default)]
pub struct RateLimiter {
    windows: Mutex<HashMap<String, (Instant, u32)>>,
}

impl RateLimiter {
    /// Counts one request for `key_id`; false when it is over `per_minute`.
    pub fn allow(&self, key_id: &str, per_minute: u32) -> bool {
        let now = Instant::now();
        let Ok(mut windows) = self.windows.lock() else {
            return true; // a poisoned lock only loses counting, never access
        };
        if windows.len() > 10_000 {
            windows.retain(|_, (start, _)| now.duration_since(*start) < Duration::from_secs(60));
        }
        let window = windows.entry(key_id.to_owned()).or_insert((now, 0));
        if now.duration_since(window.0) >= Duration::from_secs(60) {
            *window = (now, 0);
        }
        window.1 += 1;
        window.1 <= per_minute
    }
}

/// The one check of a keyed request: the key exists and is active, carries
/// `scope`, and a widget key comes from an allowed `origin` within its rate.
pub async fn authenticate(
    lore: &Lore,
    raw: Option<&str>,
    scope: Scope,
    origin: Option<&str>,
) -> Result<Caller> {
    check(lore, raw, scope, origin, false).await
}

/// [`authenticate`] reading the key from the application-database cache:
/// for a request that called [`crate::appdb::cache::Cache::refresh`] first
/// (a revocation moves the stored generation, so it still counts at once).
pub(crate) async fn authenticate_cached(
    lore: &Lore,
    raw: Option<&str>,
    scope: Scope,
    origin: Option<&str>,
) -> Result<Caller> {
    check(lore, raw, scope, origin, true).await
}

/// The stored key with this hash, read now.
async fn find_by_hash(db: &impl sea_orm::ConnectionTrait, hash: &str) -> Result<Option<access_key::Model>> {
    Ok(access_key::Entity::find().filter(access_key::Column::Hash.eq(hash)).one(db).await?)
}

/// Whether `raw` is a key that would pass [`authenticate_cached`] for
/// `scope` (no origin), read as held and counting nothing against its rate:
/// what a surface lists to the key's holder.
pub(crate) async fn carries(lore: &Lore, raw: Option<&str>, scope: Scope) -> bool {
    resolve(lore, raw, scope, None, true).await.is_ok()
}

async fn check(
    lore: &Lore,
    raw: Option<&str>,
    scope: Scope,
    origin: Option<&str>,
    cached: bool,
) -> Result<Caller> {
    let key = resolve(lore, raw, scope, origin, cached).await?;
    if let Some(rate) = key.rate_limit_per_minute {
        if !lore.answering().rate_limiter.allow(&key.id, rate.max(1)) {
            return Err(KeyError::RateLimited(rate).into());
        }
    }
    Ok(Caller { key_id: key.id, kind: key.kind, name: key.name, user: key.user })
}

/// The active key `raw`, with `scope`, from an allowed `origin` if it is a
/// widget's: everything [`check`] asks but the rate.
async fn resolve(
    lore: &Lore,
    raw: Option<&str>,
    scope: Scope,
    origin: Option<&str>,
    cached: bool,
) -> Result<Key> {
    let raw = raw.map(str::trim).filter(|r| !r.is_empty()).ok_or(KeyError::Missing)?;
    if !(raw.starts_with(SECRET_PREFIX) || raw.starts_with(WIDGET_PREFIX)) || raw.len() > 100 {
        return Err(KeyError::Unknown.into());
    }
    let hash = hash(raw);
    let row = if cached {
        lore.appdb_cache().key(&lore.db, &hash).await?
    } else {
        find_by_hash(&lore.db, &hash).await?
    };
    let key = Key::decode(row.ok_or(KeyError::Unknown)?)?;
    if key.status != KeyStatus::Active {
        return Err(KeyError::Revoked.into());
    }
    let kind = key.kind;
    if kind == KeyKind::Widget {
        let origin = origin.map(|o| o.trim().to_ascii_lowercase());
        match origin {
            Some(origin) if key.origins.iter().any(|a| a == &origin) => {}
            Some(origin) => return Err(KeyError::Origin(origin).into()),
            None => {
                return Err(KeyError::Origin("(none: widget keys work from web pages only)".into()).into())
            }
        }
    }
    if !key.scopes.contains(&scope) {
        return Err(KeyError::Scope(scope.key()).into());
    }
    if matches!(scope, Scope::Operations | Scope::Mcp) && key.user.is_none() {
        return Err(KeyError::NeedsUser(scope.key()).into());
    }
    Ok(key)
}

/// Whether any active widget key allows `origin` (for CORS preflights, which
/// carry no key).
pub async fn origin_allowed(lore: &Lore, origin: &str) -> Result<bool> {
    let origin = origin.trim().to_ascii_lowercase();
    for row in access_key::Entity::find()
        .filter(access_key::Column::Kind.eq(KeyKind::Widget.key()))
        .filter(access_key::Column::Status.eq(KeyStatus::Active.key()))
        .all(&lore.db)
        .await?
    {
        if Key::decode(row)?.origins.contains(&origin) {
            return Ok(true);
        }
    }
    Ok(false)
}
