//! The resource registry: every resource, table-backed or written in Rust,
//! is registered through one [`Registry::set`] call with its export types
//! (SPEC's `exportTypes`: `http` serves it over REST under `/data/<path>`,
//! `mcp` to the tool server; the two are independent).
//!
//! A resource implements any of the verbs get, search, post, put, patch and
//! delete, and may declare custom tools that run in the same envelope as
//! the verbs. Tables exported by the schema file (`@export`) are
//! registered from the catalog whenever the schema changed
//! ([`registry`]); the built-in `lore` resource exposes the answer pipeline
//! as the custom tools `answer` and `retrieve`, which check the caller's
//! key themselves.
//!
//! Table resources run the caller's table and attribute permissions on
//! every call (in `appdb::records`), and each write is one transaction with
//! its audit entry.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{json, Map, Value};

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

/// Who calls: the user the call acts as (a key's user or a signed-in
/// admin; none for an anonymous caller) and the raw key it came with, for
/// custom tools that check it themselves.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    pub principal: Option<Principal>,
    pub key: Option<Secret>,
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

    /// Runs the custom tool whose method is `method`.
    async fn call_tool(
        &self,
        _lore: &Lore,
        _caller: &Caller,
        method: &str,
        _args: Value,
    ) -> Result<ToolOutput> {
        Err(AppDbError::Invalid(format!("this resource has no tool method `{method}`")).into())
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
    registry.set("lore", Arc::new(LoreResource), ExportTypes { http: false, mcp: true });
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

/// A table exported as a resource.
pub struct TableResource {
    pub database: String,
    pub table: String,
}

impl TableResource {
    /// The table as the request's transaction sees it (for a write).
    async fn load(&self, conn: &impl sea_orm::ConnectionTrait) -> Result<Table> {
        catalog::table(conn, &self.database, &self.table).await
    }

    /// The table as held between requests (for a read).
    async fn held(&self, lore: &Lore) -> Result<Table> {
        lore.appdb_cache().table(&lore.db, &self.database, &self.table).await
    }

    /// One write in one transaction with its audit entry: the written
    /// record's primary key (generated by `records::write` for a text key
    /// left out), none when an update found no record.
    async fn write(
        &self,
        lore: &Lore,
        caller: &Caller,
        verb: Verb,
        record: Record,
        mode: WriteMode,
    ) -> Result<Option<Value>> {
        let principal = caller.principal()?;
        let permission = principal.permission();
        let txn = crate::store::begin_write(&lore.db).await?;
        let mut table = self.load(&txn).await?;
        let written =
            records::write(&txn, &permission, &mut table, vec![Value::Object(record)], mode).await?;
        let action = format!("data.{}", verb.key());
        audit::record(&txn, &principal.actor(), &action, Some(&table.path()), json!({})).await?;
        txn.commit().await?;
        crate::resources::written(lore, &table, &written.done);
        Ok(written.done.into_iter().next())
    }
}

#[async_trait]
impl Resource for TableResource {
    fn verbs(&self) -> Vec<Verb> {
        vec![Verb::Get, Verb::Search, Verb::Post, Verb::Put, Verb::Patch, Verb::Delete]
    }

    async fn table(&self, lore: &Lore) -> Result<Option<Table>> {
        self.held(lore).await.map(Some)
    }

    async fn get(
        &self,
        lore: &Lore,
        caller: &Caller,
        id: &Value,
        select: &[String],
    ) -> Result<Option<Record>> {
        let permission = caller.principal()?.permission();
        let table = self.held(lore).await?;
        let found = records::by_ids(&lore.db, &permission, &table, std::slice::from_ref(id), select).await?;
        Ok(found.into_iter().next())
    }

    async fn search(&self, lore: &Lore, caller: &Caller, query: &Query) -> Result<Page> {
        let permission = caller.principal()?.permission();
        let table = self.held(lore).await?;
        let limit = query.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
        let offset = match &query.cursor {
            Some(cursor) => decode_cursor(cursor)?,
            None => 0,
        };
        let search = Search {
            conditions: query.conditions.clone(),
            operator: query.operator,
            get_attributes: query.select.clone(),
            // One more than the page: whether there is a next one.
            limit: Some(limit + 1),
            offset: Some(offset),
        };
        let mut found = records::search(&lore.db, &permission, &table, &search).await?;
        let more = found.len() as u64 > limit;
        found.truncate(limit as usize);
        Ok(Page { records: found, next_cursor: more.then(|| encode_cursor(offset + limit)) })
    }

    async fn post(&self, lore: &Lore, caller: &Caller, data: Record) -> Result<Value> {
        let written = self.write(lore, caller, Verb::Post, data, WriteMode::Insert).await?;
        written.ok_or_else(|| crate::Error::Internal("an insert wrote no record".into()))
    }

    async fn put(&self, lore: &Lore, caller: &Caller, id: &Value, data: Record) -> Result<()> {
        let data = with_key(&self.held(lore).await?, id, data)?;
        self.write(lore, caller, Verb::Put, data, WriteMode::Upsert).await.map(|_| ())
    }

    async fn patch(&self, lore: &Lore, caller: &Caller, id: &Value, data: Record) -> Result<bool> {
        let data = with_key(&self.held(lore).await?, id, data)?;
        Ok(self.write(lore, caller, Verb::Patch, data, WriteMode::Update).await?.is_some())
    }

    async fn delete(&self, lore: &Lore, caller: &Caller, id: &Value) -> Result<bool> {
        let principal = caller.principal()?;
        let txn = crate::store::begin_write(&lore.db).await?;
        let table = self.load(&txn).await?;
        let written = records::delete(&txn, &principal.permission(), &table, vec![id.clone()]).await?;
        audit::record(&txn, &principal.actor(), "data.delete", Some(&table.path()), json!({})).await?;
        txn.commit().await?;
        crate::resources::written(lore, &table, &written.done);
        Ok(!written.done.is_empty())
    }
}

/// The record of a PUT or PATCH at `id`: a body naming another key is refused.
fn with_key(table: &Table, id: &Value, mut data: Record) -> Result<Record> {
    match data.get(&table.primary_key) {
        Some(given) if !given.is_null() && key_text(given) != key_text(id) => {
            return Err(AppDbError::Invalid(format!(
                "the body's `{}` ({given}) is not the record's ({id})",
                table.primary_key
            ))
            .into())
        }
        _ => {}
    }
    data.insert(table.primary_key.clone(), id.clone());
    Ok(data)
}

fn key_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A primary key from a URL segment, typed by the key's attribute: a
/// number where the key holds numbers (an `Any` key that looks like one
/// too, as HarperDB reads it), the text otherwise.
pub fn key_from_path(table: Option<&Table>, raw: &str) -> Value {
    let numeric = match table.map(|t| t.key().kind) {
        Some(AttrType::Int | AttrType::Long | AttrType::BigInt | AttrType::Float | AttrType::Any) | None => {
            true
        }
        Some(_) => false,
    };
    if numeric {
        if let Ok(n) = raw.parse::<i64>() {
            return Value::from(n);
        }
        if let Ok(f) = raw.parse::<f64>() {
            if f.is_finite() {
                return Value::from(f);
            }
        }
    }
    Value::String(raw.to_owned())
}

/// A query-string value typed by its attribute (`age=7` is a number, `flag=true` a boolean).
pub fn value_from_query(attribute: Option<&Attribute>, raw: &str) -> Value {
    match attribute.map(|a| a.kind) {
        Some(AttrType::Int | AttrType::Long | AttrType::BigInt | AttrType::Float) => {
            serde_json::from_str::<serde_json::Number>(raw)
                .map(Value::Number)
                .unwrap_or_else(|_| Value::String(raw.to_owned()))
        }
        Some(AttrType::Boolean) => match raw {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(raw.to_owned()),
        },
        Some(AttrType::Any) => key_from_path(None, raw),
        _ => Value::String(raw.to_owned()),
    }
}

/// Cursors are opaque to callers: the offset of the next page, encoded.
fn encode_cursor(offset: u64) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("o:{offset}"))
}

fn decode_cursor(cursor: &str) -> Result<u64> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.strip_prefix("o:").and_then(|n| n.parse().ok()))
        .ok_or_else(|| AppDbError::Invalid("`cursor` is not a cursor this search returned".into()).into())
}

/// Lore's own resource: the answer pipeline as the custom tools `answer`
/// and `retrieve`. The tool server lists custom tools to every session, so
/// each checks its caller: a key with the tool's scope.
pub struct LoreResource;

#[derive(Deserialize, schemars::JsonSchema)]
struct AnswerToolArgs {
    /// The question, in the user's words.
    question: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct RetrieveToolArgs {
    /// What to search the indexed content for.
    query: String,
    /// How many passages (default: the active profile's).
    #[serde(default)]
    #[schemars(with = "u32")]
    top_k: Option<usize>,
}

fn tool_schema<T: schemars::JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    schema
}

fn tool_args<T: serde::de::DeserializeOwned>(tool: &str, args: Value) -> Result<T> {
    serde_json::from_value(args).map_err(|err| AppDbError::Invalid(format!("{tool}: {err}")).into())
}

#[async_trait]
impl Resource for LoreResource {
    fn verbs(&self) -> Vec<Verb> {
        Vec::new()
    }

    fn tools(&self) -> Vec<CustomTool> {
        vec![
            CustomTool {
                name: "answer".into(),
                method: "answer".into(),
                description: "Answers a question from the indexed content, with citations; refuses when nothing retrievable answers it. Needs a key with the `answer` scope.".into(),
                input_schema: tool_schema::<AnswerToolArgs>(),
            },
            CustomTool {
                name: "retrieve".into(),
                method: "retrieve".into(),
                description: "The passages of the indexed content that best match a query (hybrid retrieval), with scores. Needs a key with the `retrieve` scope.".into(),
                input_schema: tool_schema::<RetrieveToolArgs>(),
            },
        ]
    }

    async fn call_tool(&self, lore: &Lore, caller: &Caller, method: &str, args: Value) -> Result<ToolOutput> {
        // The tool server read the generation at the start of this request,
        // so the key may come from what is held (a revocation still counts).
        let raw = caller.key.as_ref().map(Secret::expose);
        match method {
            "answer" => {
                let key = crate::keys::authenticate_held(lore, raw, crate::keys::Scope::Answer, None).await?;
                let a: AnswerToolArgs = tool_args("answer", args)?;
                let ask = crate::answer::Ask {
                    question: a.question,
                    surface: crate::answer::Surface::Mcp,
                    key_id: Some(key.key_id),
                };
                Ok(ToolOutput::Answer(Box::new(crate::answer::answer(lore, ask).await?)))
            }
            "retrieve" => {
                crate::keys::authenticate_held(lore, raw, crate::keys::Scope::Retrieve, None).await?;
                let a: RetrieveToolArgs = tool_args("retrieve", args)?;
                Ok(ToolOutput::Retrieved(crate::search::retrieve(lore, &a.query, a.top_k).await?))
            }
            other => {
                Err(AppDbError::Invalid(format!("the `lore` resource has no tool method `{other}`")).into())
            }
        }
    }
}

/// Runs the custom tool `name` of the resource at `path`.
pub async fn call_tool(
    lore: &Lore,
    caller: &Caller,
    path: &str,
    name: &str,
    args: Value,
) -> Result<ToolOutput> {
    let entry = registry(lore)
        .await?
        .entry(path)
        .ok_or_else(|| crate::Error::from(AppDbError::UnknownResource(path.to_owned())))?;
    let tool = entry
        .resource
        .tools()
        .into_iter()
        .find(|tool| tool.name == name)
        .ok_or_else(|| AppDbError::Invalid(format!("the resource `{path}` has no tool `{name}`")))?;
    entry.resource.call_tool(lore, caller, &tool.method, args).await
}

/// The OpenAPI 3.0.3 document of the REST surface (SPEC: `svc://openapi`):
/// every resource exported over HTTP with the verbs it implements and its
/// record schema from the table's attributes (not narrowed per caller:
/// every call's permissions are checked when it runs).
pub async fn openapi(lore: &Lore) -> Result<Value> {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for entry in registry(lore).await?.entries() {
        if !entry.export_types.http {
            continue;
        }
        let verbs = entry.resource.verbs();
        if verbs.is_empty() {
            continue;
        }
        let table = entry.resource.table(lore).await?;
        let name = schema_name(&entry.path);
        let reference = json!({"$ref": format!("#/components/schemas/{name}")});
        schemas.insert(name.clone(), record_schema(table.as_ref()));
        let tag = json!([entry.path]);
        let mut collection = Map::new();
        if verbs.contains(&Verb::Search) {
            collection.insert("get".into(), json!({
                "tags": tag, "summary": format!("Search {}", entry.path),
                "operationId": format!("search_{name}"),
                "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}},
                    {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                    {"name": "select", "in": "query", "description": "attributes to return, comma-separated", "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": {"description": "a page of records", "content": {"application/json": {"schema": {
                        "type": "object", "properties": {"records": {"type": "array", "items": reference}, "next_cursor": {"type": "string", "nullable": true}}}}}},
                    "default": error_response(),
                },
            }));
        }
        if verbs.contains(&Verb::Post) {
            collection.insert("post".into(), json!({
                "tags": tag, "summary": format!("Create a record of {}", entry.path),
                "operationId": format!("create_{name}"),
                "requestBody": {"required": true, "content": {"application/json": {"schema": reference}}},
                "responses": {
                    "201": {"description": "created", "content": {"application/json": {"schema": {"type": "object", "properties": {"id": {}}}}}},
                    "default": error_response(),
                },
            }));
        }
        let mut item = Map::new();
        let id = json!([{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}]);
        for (verb, method, summary, body, ok) in [
            (
                Verb::Get,
                "get",
                "Read a record",
                false,
                json!({"200": {"description": "the record", "content": {"application/json": {"schema": reference}}}}),
            ),
            (
                Verb::Put,
                "put",
                "Write a record, creating it when missing",
                true,
                json!({"204": {"description": "written"}}),
            ),
            (
                Verb::Patch,
                "patch",
                "Change attributes of a record",
                true,
                json!({"204": {"description": "changed"}}),
            ),
            (Verb::Delete, "delete", "Delete a record", false, json!({"204": {"description": "deleted"}})),
        ] {
            if !verbs.contains(&verb) {
                continue;
            }
            let mut responses = ok;
            responses["default"] = error_response();
            let mut operation = json!({
                "tags": tag, "summary": summary, "operationId": format!("{}_{name}", verb.key()),
                "parameters": id, "responses": responses,
            });
            if body {
                operation["requestBody"] =
                    json!({"required": true, "content": {"application/json": {"schema": reference}}});
            }
            item.insert(method.into(), operation);
        }
        if !collection.is_empty() {
            paths.insert(format!("/data/{}/", entry.path), Value::Object(collection));
        }
        if !item.is_empty() {
            paths.insert(format!("/data/{}/{{id}}", entry.path), Value::Object(item));
        }
    }
    schemas.insert(
        "Error".into(),
        json!({"type": "object", "required": ["error"], "properties": {"error": {"type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "details": {"type": "object"}}}}}),
    );
    Ok(json!({
        "openapi": "3.0.3",
        "info": {"title": "Lore application data", "version": env!("CARGO_PKG_VERSION"),
                 "description": "The REST surface of the resources exported over HTTP."},
        "servers": [{"url": lore.settings.base_url()}],
        "components": {
            "schemas": schemas,
            "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"}},
        },
        "security": [{"apiKey": []}],
        "paths": paths,
    }))
}

fn error_response() -> Value {
    json!({"description": "an error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

/// A component name from a resource path (`a/b.c` → `a_b_c`).
fn schema_name(path: &str) -> String {
    path.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// A record's schema from the table's attributes (OpenAPI 3.0's flavour of
/// SPEC's type mapping: `nullable` rather than a type union).
fn record_schema(table: Option<&Table>) -> Value {
    let Some(table) = table else {
        return json!({"type": "object"});
    };
    let mut properties = Map::new();
    for attribute in &table.attributes {
        let mut schema = match attribute.kind {
            AttrType::Int | AttrType::Long | AttrType::BigInt => json!({"type": "integer"}),
            AttrType::Float => json!({"type": "number"}),
            AttrType::String | AttrType::ID => json!({"type": "string"}),
            AttrType::Boolean => json!({"type": "boolean"}),
            AttrType::Date => {
                json!({"oneOf": [{"type": "string", "format": "date-time"}, {"type": "number"}]})
            }
            AttrType::Bytes | AttrType::Blob => json!({"type": "string", "format": "byte"}),
            AttrType::Object => json!({"type": "object"}),
            AttrType::Array => json!({"type": "array", "items": {}}),
            AttrType::Any => json!({}),
        };
        if attribute.managed.is_some() || attribute.computed.is_some() {
            schema["readOnly"] = Value::Bool(true);
        }
        if attribute.nullable && attribute.kind != AttrType::Any {
            schema["nullable"] = Value::Bool(true);
        }
        properties.insert(attribute.name.clone(), schema);
    }
    json!({"type": "object", "properties": properties})
}

/// After a write to `table` committed (every surface's writes come
/// here): the table sources on it are noted for re-indexing, and the push
/// channels subscribed to these records are told.
pub(crate) fn written(lore: &Lore, table: &Table, ids: &[Value]) {
    if !ids.is_empty() {
        lore.table_writes().note(table);
    }
    crate::mcp::records_changed(lore, table, ids);
}

/// A REST call under `/data/`: the method, the path after `/data/`, the
/// query string's pairs and the JSON body.
#[derive(Clone, Debug)]
pub struct RestRequest {
    pub method: RestMethod,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestMethod {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

/// What a REST call returned.
#[derive(Debug)]
pub enum RestOutcome {
    Record(Record),
    Page(Page),
    /// A record was created with this primary key.
    Created(Value),
    /// Written or deleted; nothing to return.
    Done,
}

/// Runs one REST call (see `docs/operations.md`, "REST"): `<path>/` is the
/// collection (search, create), `<path>/<id>` one record.
pub async fn rest(lore: &Lore, caller: &Caller, request: RestRequest) -> Result<RestOutcome> {
    let (entry, id) = route(lore, &request.path).await?;
    let resource = &entry.resource;
    let verb = match (request.method, id.is_some()) {
        (RestMethod::Get, false) => Verb::Search,
        (RestMethod::Get, true) => Verb::Get,
        (RestMethod::Post, false) => Verb::Post,
        (RestMethod::Put, true) => Verb::Put,
        (RestMethod::Patch, true) => Verb::Patch,
        (RestMethod::Delete, true) => Verb::Delete,
        (method, _) => {
            return Err(AppDbError::Invalid(format!(
                "{method:?} is not served at `/data/{}`: GET and POST at `<path>/`, GET, PUT, PATCH and DELETE at `<path>/<id>`",
                request.path
            ))
            .into())
        }
    };
    if !resource.verbs().contains(&verb) {
        return Err(unsupported(verb));
    }
    let table = resource.table(lore).await?;
    let id = id.map(|raw| key_from_path(table.as_ref(), &raw));
    let mut select = Vec::new();
    let mut query = Query::default();
    for (name, value) in &request.query {
        match name.as_str() {
            "select" => {
                select.extend(value.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_owned))
            }
            "limit" => {
                let limit =
                    value.parse::<u64>().ok().filter(|n| (1..=MAX_PAGE).contains(n)).ok_or_else(|| {
                        AppDbError::Invalid(format!("`limit` must be a whole number from 1 to {MAX_PAGE}"))
                    })?;
                query.limit = Some(limit);
            }
            "cursor" => query.cursor = Some(value.clone()),
            attribute => {
                let declared = table.as_ref().and_then(|t| t.attribute(attribute));
                query.conditions.push(condition(attribute, declared, value));
            }
        }
    }
    query.select = select;
    let body = || -> Result<Record> {
        match request.body.clone() {
            Some(Value::Object(record)) => Ok(record),
            _ => Err(AppDbError::Invalid("the body must be a JSON object (the record)".into()).into()),
        }
    };
    let missing = |id: &Value| -> crate::Error {
        AppDbError::UnknownRecord(format!("{id} in `{}`", entry.path)).into()
    };
    match (verb, id) {
        (Verb::Search, _) => Ok(RestOutcome::Page(resource.search(lore, caller, &query).await?)),
        (Verb::Post, _) => Ok(RestOutcome::Created(resource.post(lore, caller, body()?).await?)),
        (Verb::Get, Some(id)) => match resource.get(lore, caller, &id, &query.select).await? {
            Some(record) => Ok(RestOutcome::Record(record)),
            None => Err(missing(&id)),
        },
        (Verb::Put, Some(id)) => {
            resource.put(lore, caller, &id, body()?).await?;
            Ok(RestOutcome::Done)
        }
        (Verb::Patch, Some(id)) => match resource.patch(lore, caller, &id, body()?).await? {
            true => Ok(RestOutcome::Done),
            false => Err(missing(&id)),
        },
        (Verb::Delete, Some(id)) => match resource.delete(lore, caller, &id).await? {
            true => Ok(RestOutcome::Done),
            false => Err(missing(&id)),
        },
        (verb, None) => Err(unsupported(verb)),
    }
}

/// The resource a REST path names, and the record's id if it names one:
/// the whole path when a resource is exported there (its collection), else
/// the path up to the last `/` and the id after it.
async fn route(lore: &Lore, path: &str) -> Result<(Entry, Option<String>)> {
    let trimmed = path.trim_end_matches('/');
    if let Ok(entry) = http_resource(lore, trimmed).await {
        return Ok((entry, None));
    }
    match trimmed.rsplit_once('/') {
        Some((resource, id)) if !id.is_empty() => {
            Ok((http_resource(lore, resource).await?, Some(id.to_owned())))
        }
        _ => Err(AppDbError::UnknownResource(trimmed.to_owned()).into()),
    }
}

/// A condition of the query string: `attribute=value` is equality;
/// `attribute=gt=5` (also `ge`, `lt`, `le`, `ne`, `sw` starts with, `ew`
/// ends with, `ct` contains) compares, FIQL-style as HarperDB's REST does.
fn condition(attribute: &str, declared: Option<&Attribute>, raw: &str) -> Criterion {
    use crate::appdb::records::SearchType as T;
    let (search_type, text) = match raw.split_once('=') {
        Some(("gt", rest)) => (T::GreaterThan, rest),
        Some(("ge", rest)) => (T::GreaterThanEqual, rest),
        Some(("lt", rest)) => (T::LessThan, rest),
        Some(("le", rest)) => (T::LessThanEqual, rest),
        Some(("ne", rest)) => (T::NotEqual, rest),
        Some(("sw", rest)) => (T::StartsWith, rest),
        Some(("ew", rest)) => (T::EndsWith, rest),
        Some(("ct", rest)) => (T::Contains, rest),
        _ => (T::Equals, raw),
    };
    let value = match search_type {
        T::StartsWith | T::EndsWith | T::Contains => Value::String(text.to_owned()),
        _ => value_from_query(declared, text),
    };
    Criterion { attribute: attribute.to_owned(), search_type, value }
}
