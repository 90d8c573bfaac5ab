//! The resource registry: every resource, table-backed or written in Rust,
//! is registered through one [`Registry::set`] call with its export types
//! (SPEC's `exportTypes`: `http` serves it over REST under `/data/<path>`,
//! `mcp` to the tool server; the two are independent).
//!
//! A resource implements any of the verbs get, search, post, put, patch and
//! delete, and may declare custom tools, which run in an [`Envelope`]: one
//! transaction, the caller, and per-record allow predicates
//! (`docs/extensions.md`). Tables exported by the schema file (`@export`) are
//! registered from the catalog whenever the schema changed
//! ([`registry`]); the built-in `lore` resource exposes the answer pipeline
//! as the custom tools `answer` and `retrieve`, which check the caller's
//! key themselves.
//!
//! Table resources run the caller's table and attribute permissions on
//! every call (in `appdb::records`), and each write is one transaction with
//! its audit entry.

mod answer_tools;
mod envelope;
mod exports;
mod rest;
mod table;

pub use answer_tools::*;
pub use envelope::*;
pub use exports::*;
pub use rest::*;
pub use table::*;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::appdb::catalog::{self, AttrType, Attribute, Table};
use crate::appdb::records::{self, Criterion, Operator, Record, Search, WriteMode};
use crate::appdb::{AppDbError, Principal};
use crate::settings::Secret;
use crate::{audit, Lore, Result};

/// Where a resource is served (SPEC's `exportTypes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportTypes {
    pub http: bool,
    pub mcp: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verb {
    Get,
    Search,
    Post,
    Put,
    Patch,
    Delete,
}

impl Verb {
    pub fn key(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Search => "search",
            Verb::Post => "post",
            Verb::Put => "put",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
        }
    }
}

/// The tool server's two profiles: the application profile (`/mcp`: the
/// resources' verb and custom tools) and the operations profile
/// (`/operation/mcp`: the operations API as tools).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    Application,
    Operations,
}

impl Profile {
    pub fn key(self) -> &'static str {
        match self {
            Profile::Application => "application",
            Profile::Operations => "operations",
        }
    }

    pub fn parse(key: &str) -> Option<Self> {
        match key {
            "application" => Some(Profile::Application),
            "operations" => Some(Profile::Operations),
            _ => None,
        }
    }

    /// Where its tool server is served: the path of its protected resource
    /// (one of [`crate::oauth::RESOURCE_PATHS`]).
    pub fn path(self) -> &'static str {
        match self {
            Profile::Application => crate::oauth::RESOURCE_PATHS[0],
            Profile::Operations => crate::oauth::RESOURCE_PATHS[1],
        }
    }

    /// Whether the configuration turns this profile on.
    pub fn enabled(self, lore: &Lore) -> bool {
        match self {
            Profile::Application => lore.settings.mcp.application.enabled,
            Profile::Operations => lore.settings.mcp.operations.as_ref().is_some_and(|o| o.enabled),
        }
    }
}

/// A document a resource serves to the tool server under `svc://` (the
/// tool server's own `svc://about`, `svc://openapi`, …): at one URI, or at
/// every URI a template (`svc://schema/{database}/{table}`) matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Document {
    pub uri: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    /// The profiles that list it and read it.
    pub profiles: &'static [Profile],
}

impl Document {
    /// Whether it is listed as a template (`resources/templates/list`).
    pub fn is_template(&self) -> bool {
        self.uri.contains('{')
    }

    /// Whether `uri` is this document: the same URI, or for a template one
    /// that starts as it does before its first `{` and goes on.
    pub fn matches(&self, uri: &str) -> bool {
        match self.uri.split_once('{') {
            Some((prefix, _)) => uri.len() > prefix.len() && uri.starts_with(prefix),
            None => uri == self.uri,
        }
    }
}

/// One URI a document template resolves to (see [`Resource::instances`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    pub uri: String,
    pub name: String,
    pub description: String,
}

/// Who calls: the user the call acts as (a key's user or a signed-in
/// admin; none for an anonymous caller) and the raw key it came with, for
/// custom tools that check it themselves.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    pub principal: Option<Principal>,
    pub key: Option<Secret>,
    /// Signed in with an OAuth access token: its tool server's scope is
    /// what the custom tools need (a key needs their own scopes).
    pub oauth: bool,
}

impl Caller {
    fn principal(&self) -> Result<&Principal> {
        self.principal.as_ref().ok_or_else(|| crate::keys::KeyError::Missing.into())
    }
}

/// A custom tool a resource declares (SPEC: name, method, description,
/// inputSchema); `method` names what [`Resource::call_tool`] runs.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomTool {
    pub name: String,
    pub method: String,
    pub description: String,
    pub input_schema: Value,
}

/// What a custom tool returned: JSON, or one of Lore's own engine values
/// for the edge to convert (as the operations API's `Outcome`).
#[derive(Debug)]
pub enum ToolOutput {
    Json(Value),
    Answer(Box<crate::answer::Answer>),
    Retrieved(crate::search::Traced),
    /// A rating of an answer, as stored.
    Rated(crate::answer::feedback::Rated),
}

/// A search of a resource: conditions joined by an operator, the attributes to
/// return (all readable ones when empty), a page size and where to go on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Query {
    pub conditions: Vec<Criterion>,
    /// How the conditions join (REST's query string: all must hold).
    pub operator: Operator,
    pub select: Vec<String>,
    pub limit: Option<u64>,
    pub cursor: Option<String>,
}

/// A page of a search, and the cursor of the next one if there is more.
#[derive(Clone, Debug, PartialEq)]
pub struct Page {
    pub records: Vec<Record>,
    pub next_cursor: Option<String>,
}

/// The most records a page holds, and how many when a search names no limit.
pub const MAX_PAGE: u64 = 1000;
pub const DEFAULT_PAGE: u64 = 100;

fn unsupported(verb: Verb) -> crate::Error {
    AppDbError::Invalid(format!("this resource does not support {}", verb.key())).into()
}

/// A resource: any of the verbs, and custom tools. Every verb a resource
/// does not implement is refused.
#[async_trait]
pub trait Resource: Send + Sync {
    /// The verbs it implements.
    fn verbs(&self) -> Vec<Verb>;

    /// The table behind it, for schemas (none for a resource in Rust).
    async fn table(&self, _lore: &Lore) -> Result<Option<Table>> {
        Ok(None)
    }

    async fn get(
        &self,
        _lore: &Lore,
        _caller: &Caller,
        _id: &Value,
        _select: &[String],
    ) -> Result<Option<Record>> {
        Err(unsupported(Verb::Get))
    }

    async fn search(&self, _lore: &Lore, _caller: &Caller, _query: &Query) -> Result<Page> {
        Err(unsupported(Verb::Search))
    }

    /// Creates a record; its primary key.
    async fn post(&self, _lore: &Lore, _caller: &Caller, _data: Record) -> Result<Value> {
        Err(unsupported(Verb::Post))
    }

    /// Writes the record at `id`, creating it when missing.
    async fn put(&self, _lore: &Lore, _caller: &Caller, _id: &Value, _data: Record) -> Result<()> {
        Err(unsupported(Verb::Put))
    }

    /// Changes attributes of the record at `id`; false when there is none.
    async fn patch(&self, _lore: &Lore, _caller: &Caller, _id: &Value, _data: Record) -> Result<bool> {
        Err(unsupported(Verb::Patch))
    }

    /// Deletes the record at `id`; false when there was none.
    async fn delete(&self, _lore: &Lore, _caller: &Caller, _id: &Value) -> Result<bool> {
        Err(unsupported(Verb::Delete))
    }

    fn tools(&self) -> Vec<CustomTool> {
        Vec::new()
    }

    /// Whether the tool server lists custom tool `tool` (one of
    /// [`Resource::tools`]) to `caller`, and so lets it call it: a tool
    /// is listed exactly where a call could run. By default every caller
    /// (SPEC: a custom tool is listed to every session and checks its
    /// caller itself).
    async fn offers_tool(&self, _lore: &Lore, _caller: &Caller, _tool: &CustomTool) -> bool {
        true
    }

    /// The documents it serves to the tool server (most serve none).
    fn documents(&self) -> &'static [Document] {
        &[]
    }

    /// The URIs a template of its `document` (one of
    /// [`Resource::documents`]) resolves to for `caller` on `profile`:
    /// `resources/list` lists them beside the template, for the clients
    /// (most) that do not expand templates. None by default.
    async fn instances(
        &self,
        _lore: &Lore,
        _profile: Profile,
        _caller: &Caller,
        _document: &Document,
    ) -> Result<Vec<Instance>> {
        Ok(Vec::new())
    }

    /// Reads `document`, one of [`Resource::documents`], at `uri` (which
    /// it matches) for `caller` on `profile`.
    async fn read_document(
        &self,
        _lore: &Lore,
        _profile: Profile,
        _caller: &Caller,
        _document: &Document,
        uri: &str,
    ) -> Result<Value> {
        Err(AppDbError::UnknownResource(uri.to_owned()).into())
    }

    /// Runs the custom tool whose method is `method`, in `envelope`: the
    /// caller and the records it reads and writes (checked by the allow
    /// predicates below), all in one transaction that commits only when
    /// this returns `Ok`. Restricting who may call is the method's own
    /// work: refuse (`AppDbError::denied`) when the caller does not qualify.
    async fn call_tool(
        &self,
        _envelope: &mut Envelope<'_>,
        method: &str,
        _args: Value,
    ) -> Result<ToolOutput> {
        Err(AppDbError::Invalid(format!("this resource has no tool method `{method}`")).into())
    }

    /// Whether `user` (none: an anonymous session) may read `record` of
    /// `table` through this resource's custom tools. By default as its
    /// role says (table and attribute permissions).
    fn allow_read(&self, _user: Option<&Principal>, _table: &Table, _record: &Record) -> Allow {
        Allow::AsRole
    }

    /// Whether `user` may insert `record` into `table` (default: its role).
    fn allow_insert(&self, _user: Option<&Principal>, _table: &Table, _record: &Record) -> Allow {
        Allow::AsRole
    }

    /// Whether `user` may write `changes` (with the primary key) to a
    /// record of `table` (default: its role).
    fn allow_update(&self, _user: Option<&Principal>, _table: &Table, _changes: &Record) -> Allow {
        Allow::AsRole
    }

    /// Whether `user` may delete `record` (as stored) of `table` (default:
    /// its role).
    fn allow_delete(&self, _user: Option<&Principal>, _table: &Table, _record: &Record) -> Allow {
        Allow::AsRole
    }
}

/// One registered resource.
#[derive(Clone)]
pub struct Entry {
    pub path: String,
    pub resource: Arc<dyn Resource>,
    pub export_types: ExportTypes,
    /// Registered from the catalog (an exported table), so replaced when
    /// the schema changes.
    from_catalog: bool,
}

/// The registry: resources by path.
#[derive(Default)]
pub struct Registry {
    entries: RwLock<BTreeMap<String, Entry>>,
    /// The cache epoch the catalog's tables were last registered at.
    synced: RwLock<Option<u64>>,
}

impl Registry {
    /// Registers `resource` at `path`, replacing what was there.
    pub fn set(&self, path: &str, resource: Arc<dyn Resource>, export_types: ExportTypes) {
        self.insert(Entry { path: path.to_owned(), resource, export_types, from_catalog: false });
    }

    fn insert(&self, entry: Entry) {
        if let Ok(mut entries) = self.entries.write() {
            entries.insert(entry.path.clone(), entry);
        }
    }

    pub fn entry(&self, path: &str) -> Option<Entry> {
        self.entries.read().ok().and_then(|entries| entries.get(path).cloned())
    }

    /// Every resource, by path.
    pub fn entries(&self) -> Vec<Entry> {
        self.entries.read().map(|entries| entries.values().cloned().collect()).unwrap_or_default()
    }
}

/// The registry, with the catalog's exported tables registered as the
/// schema now stands (read again only after a schema change).
pub async fn registry(lore: &Lore) -> Result<&Registry> {
    let registry = lore.resources();
    let generation = lore.appdb_cache().epoch();
    let synced = registry.synced.read().map(|s| *s).unwrap_or(None);
    if synced != Some(generation) {
        let tables = catalog::tables(&lore.db, None).await?;
        if let Ok(mut entries) = registry.entries.write() {
            entries.retain(|_, entry| !entry.from_catalog);
            for table in tables {
                let Some(export) = table.options.export.clone() else { continue };
                let resource =
                    Arc::new(TableResource { database: table.database.clone(), table: table.name.clone() });
                let export_types = ExportTypes { http: export.http, mcp: export.mcp };
                entries.insert(
                    export.path.clone(),
                    Entry { path: export.path, resource, export_types, from_catalog: true },
                );
            }
        }
        if let Ok(mut synced) = registry.synced.write() {
            *synced = Some(generation);
        }
    }
    Ok(registry)
}

/// Registers Lore's own resources; called once when Lore opens.
pub fn install(registry: &Registry) {
    let path = crate::appdb::schema_file::RESERVED_PATHS[0];
    registry.set(path, Arc::new(LoreResource), ExportTypes { http: false, mcp: true });
}

/// The resource at `path` served over REST (`export_types.http`); an
/// unknown or unexported path is the same not-found.
pub async fn http_resource(lore: &Lore, path: &str) -> Result<Entry> {
    registry(lore)
        .await?
        .entry(path)
        .filter(|entry| entry.export_types.http)
        .ok_or_else(|| AppDbError::UnknownResource(path.to_owned()).into())
}
