//! The tool server's engine half: what a user sees on each profile, and
//! running what it calls. The transport (JSON-RPC over Streamable HTTP, both
//! protocol eras) is the server's `http::mcp`; it parses, calls one function
//! here and converts.
//!
//! - The **operations profile** (`{base_url}/operation/mcp`) offers one tool
//!   per operation of [`crate::operations`], named as the operation and
//!   filtered by `mcp.operations.allow`/`deny`, then per user (SPEC,
//!   Authentication 6); a call is `POST /operation`'s dispatch.
//! - The **application profile** (`{base_url}/mcp`) offers the verb tools of
//!   every resource registered with `export_types.mcp` ([`naming`],
//!   [`schema`]) and the resources' custom tools; a verb tool runs the
//!   resource's verb, which checks the table permissions.
//!
//! A user's [`Surface`] is what `tools/list`, `resources/list` and
//! `resources/templates/list` show; its [`Snapshot`] is what a session
//! compares when a role or the schema changes ([`hub`]).

pub mod hub;
pub mod naming;
pub mod schema;
pub mod sessions;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::appdb::catalog::Table;
use crate::appdb::permission::StructureUser;
use crate::appdb::{Access, AppDbError, Permission, Principal};
use crate::operations::{self, Family, Outcome};
use crate::resources::{self, Caller, Entry, Query, ToolOutput, Verb};
use crate::settings::McpOperationsSettings;
use crate::{Lore, Result};

/// The version of the tool-server surface (SPEC, Versioning).
pub const SURFACE_VERSION: &str = "5.1.0";
/// The session-era protocol revisions, newest first.
pub const SESSION_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// What `initialize` answers a client that asks for a revision Lore does not speak.
pub const PREFERRED_VERSION: &str = "2025-06-18";
/// The sessionless revision.
pub const SESSIONLESS_VERSION: &str = "2026-07-28";

/// The `get_` operations the operations profile leaves out unless an
/// operator names them exactly in `mcp.operations.allow` (SPEC).
pub const EXCLUDED_GET: [&str; 8] = [
    "get_configuration",
    "get_components",
    "get_component_file",
    "get_custom_function",
    "get_custom_functions",
    "get_backup",
    "get_deployment",
    "get_deployment_payload",
];

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

    /// Whether the configuration turns this profile on.
    pub fn enabled(self, lore: &Lore) -> bool {
        match self {
            Profile::Application => lore.settings.mcp.application.enabled,
            Profile::Operations => lore.settings.mcp.operations.as_ref().is_some_and(|o| o.enabled),
        }
    }
}

/// One tool as listed.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Value,
    pub read_only: bool,
    pub destructive: bool,
    pub target: Target,
}

/// What a tool runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Operation(&'static str),
    Verb { path: String, verb: Verb },
    Custom { path: String, name: String },
}

/// A resource as `resources/list` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Listed {
    pub uri: String,
    pub name: String,
    pub description: String,
    pub mime_type: &'static str,
}

/// A resource template (`resources/templates/list`).
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    pub uri_template: String,
    pub name: String,
    pub description: String,
    pub mime_type: &'static str,
}

/// What one user sees on one profile.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Surface {
    pub tools: Vec<Tool>,
    pub resources: Vec<Listed>,
    pub templates: Vec<Template>,
}

/// The names a session compares: tool names, and resource URIs with the
/// templates' (sorted, so two snapshots compare as sets).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub tools: Vec<String>,
    pub resources: Vec<String>,
}

impl Surface {
    pub fn snapshot(&self) -> Snapshot {
        let mut tools: Vec<String> = self.tools.iter().map(|t| t.name.clone()).collect();
        let mut resources: Vec<String> = self
            .resources
            .iter()
            .map(|r| r.uri.clone())
            .chain(self.templates.iter().map(|t| format!("template:{}", t.uri_template)))
            .collect();
        tools.sort();
        resources.sort();
        Snapshot { tools, resources }
    }
}

/// What a tool call returned, for the edge to convert.
#[derive(Debug)]
pub enum Output {
    Operation(Outcome),
    Custom(ToolOutput),
    Json(Value),
}

/// Whether `pattern` (with `*` for any run of characters) matches `name`.
pub fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Whether the configuration offers operation `name` on the operations
/// profile: allowed by a name or glob of `allow` (an excluded `get_` only
/// by its exact name) and denied by none of `deny`.
pub fn offered(settings: &McpOperationsSettings, name: &str) -> bool {
    let allowed = settings.allow.iter().any(|pattern| {
        if EXCLUDED_GET.contains(&name) {
            pattern == name
        } else {
            glob(pattern, name)
        }
    });
    allowed && !settings.deny.iter().any(|pattern| glob(pattern, name))
}

/// Whether a user sees an operation's tool (SPEC, Authentication 6): a
/// super user every one offered; a structure user the schema-structure
/// operations too; everyone those its role lists in `operations`.
pub fn sees_operation(permission: &Permission, spec: &operations::Spec) -> bool {
    let listed = permission.operations.as_ref().is_some_and(|names| names.iter().any(|n| n == spec.name));
    permission.super_user
        || listed
        || (spec.family == Family::Structure && permission.structure_user != StructureUser::No)
}

fn permission_of(caller: &Caller) -> std::borrow::Cow<'_, Permission> {
    match &caller.principal {
        Some(principal) => principal.permission(),
        None => std::borrow::Cow::Owned(Permission::default()),
    }
}

fn operation_tools(lore: &Lore, permission: &Permission) -> Vec<Tool> {
    let Some(settings) = lore.settings.mcp.operations.as_ref() else {
        return Vec::new();
    };
    operations::OPERATIONS
        .iter()
        .filter(|spec| offered(settings, spec.name) && sees_operation(permission, spec))
        .map(|spec| {
            let mut input_schema = (spec.input_schema)();
            if let Some(object) = input_schema.as_object_mut() {
                object.remove("$schema");
                object.remove("title");
            }
            Tool {
                name: spec.name.to_owned(),
                description: spec.description.to_owned(),
                input_schema,
                output_schema: json!({"type": "object"}),
                read_only: spec.read_only(),
                destructive: spec.destructive(),
                target: Target::Operation(spec.name),
            }
        })
        .collect()
}

/// The resources exported to the tool server, with their tables.
async fn exported(lore: &Lore) -> Result<Vec<(Entry, Option<Table>)>> {
    let mut found = Vec::new();
    for entry in resources::registry(lore).await?.entries() {
        if entry.export_types.mcp {
            let table = entry.resource.table(lore).await?;
            found.push((entry, table));
        }
    }
    Ok(found)
}

/// The verbs a resource offers as tools: put and patch give `update_` alone.
fn tool_verbs(verbs: &[Verb]) -> Vec<Verb> {
    let both = verbs.contains(&Verb::Put) && verbs.contains(&Verb::Patch);
    verbs.iter().copied().filter(|v| !(both && *v == Verb::Patch)).collect()
}

fn verb_prefix(verb: Verb) -> &'static str {
    match verb {
        Verb::Get => "get",
        Verb::Search => "search",
        Verb::Post => "create",
        Verb::Put => "update",
        Verb::Patch => "patch",
        Verb::Delete => "delete",
    }
}

fn verb_access(verb: Verb) -> Access {
    match verb {
        Verb::Get | Verb::Search => Access::Read,
        Verb::Post => Access::Insert,
        Verb::Put | Verb::Patch => Access::Update,
        Verb::Delete => Access::Delete,
    }
}

fn verb_description(verb: Verb, path: &str, table: Option<&Table>) -> String {
    let what = match table {
        Some(t) => format!("`{path}` (table {}.{}, primary key `{}`)", t.database, t.name, t.primary_key),
        None => format!("`{path}`"),
    };
    match verb {
        Verb::Get => format!("One record of {what} by primary key."),
        Verb::Search => format!("Records of {what} matching conditions, a page at a time."),
        Verb::Post => format!("Creates a record in {what}."),
        Verb::Put => format!("Writes the record of {what} at a primary key (created when missing)."),
        Verb::Patch => format!("Changes attributes of the record of {what} at a primary key."),
        Verb::Delete => format!("Deletes the record of {what} at a primary key."),
    }
}

/// `<name>` of every exported resource's path (see [`naming`]).
fn names_of(exported: &[(Entry, Option<Table>)]) -> std::collections::BTreeMap<String, String> {
    naming::names(
        &exported
            .iter()
            .map(|(entry, table)| naming::Named {
                path: &entry.path,
                database: table.as_ref().map(|t| t.database.as_str()),
            })
            .collect::<Vec<_>>(),
    )
}

async fn application_tools(lore: &Lore, permission: &Permission) -> Result<Vec<Tool>> {
    let exported = exported(lore).await?;
    let names = names_of(&exported);
    let mut tools = Vec::new();
    for (entry, table) in &exported {
        let name = names.get(&entry.path).cloned().unwrap_or_else(|| entry.path.clone());
        for verb in tool_verbs(&entry.resource.verbs()) {
            if let Some(t) = table {
                if !permission.may(&t.database, &t.name, verb_access(verb)) {
                    continue;
                }
            }
            tools.push(Tool {
                name: format!("{}_{name}", verb_prefix(verb)),
                description: verb_description(verb, &entry.path, table.as_ref()),
                input_schema: schema::verb_input(table.as_ref(), permission, verb),
                output_schema: schema::verb_output(verb),
                read_only: matches!(verb, Verb::Get | Verb::Search),
                destructive: verb == Verb::Delete,
                target: Target::Verb { path: entry.path.clone(), verb },
            });
        }
        // Listed to every session: each checks its caller itself (SPEC rule 4).
        for custom in entry.resource.tools() {
            tools.push(Tool {
                name: custom.name.clone(),
                description: custom.description,
                input_schema: custom.input_schema,
                output_schema: json!({"type": "object"}),
                read_only: false,
                destructive: false,
                target: Target::Custom { path: entry.path.clone(), name: custom.name },
            });
        }
    }
    Ok(tools)
}

/// What application tool `name` runs, if this user is offered it: the
/// same names and filter as [`application_tools`], without building every
/// schema.
async fn application_target(lore: &Lore, permission: &Permission, name: &str) -> Result<Option<Target>> {
    // Custom tools first: finding one needs no table.
    for entry in resources::registry(lore).await?.entries() {
        if !entry.export_types.mcp {
            continue;
        }
        if let Some(custom) = entry.resource.tools().into_iter().find(|t| t.name == name) {
            return Ok(Some(Target::Custom { path: entry.path.clone(), name: custom.name }));
        }
    }
    let exported = exported(lore).await?;
    let names = names_of(&exported);
    for (entry, table) in &exported {
        let Some(base) = names.get(&entry.path) else { continue };
        for verb in tool_verbs(&entry.resource.verbs()) {
            if format!("{}_{base}", verb_prefix(verb)) != name {
                continue;
            }
            let offered =
                table.as_ref().is_none_or(|t| permission.may(&t.database, &t.name, verb_access(verb)));
            return Ok(offered.then(|| Target::Verb { path: entry.path.clone(), verb }));
        }
    }
    Ok(None)
}

/// The URI of an exported resource's descriptor: its REST address.
fn descriptor_uri(lore: &Lore, path: &str) -> String {
    format!("{}/data/{path}", lore.settings.base_url())
}

/// Whether `resources/list` shows this user the descriptor of an exported
/// resource: one with REST verbs, on a table the user may see.
fn described(entry: &Entry, table: Option<&Table>, permission: &Permission) -> bool {
    !entry.resource.verbs().is_empty() && table.is_none_or(|t| permission.sees_table(&t.database, &t.name))
}

/// What `caller` sees on `profile`, tools sorted by name.
pub async fn surface(lore: &Lore, profile: Profile, caller: &Caller) -> Result<Surface> {
    let permission = permission_of(caller);
    let about = Listed {
        uri: "svc://about".into(),
        name: "about".into(),
        description: "This tool server: version, profile, protocol revisions, capabilities.".into(),
        mime_type: "application/json",
    };
    let mut surface = match profile {
        Profile::Operations => Surface {
            tools: operation_tools(lore, &permission),
            resources: vec![
                about,
                Listed {
                    uri: "svc://operations".into(),
                    name: "operations".into(),
                    description: "The operations you may call.".into(),
                    mime_type: "application/json",
                },
            ],
            templates: Vec::new(),
        },
        Profile::Application => {
            let mut resources = vec![
                about,
                Listed {
                    uri: "svc://openapi".into(),
                    name: "openapi".into(),
                    description: "The OpenAPI 3.0.3 document of the REST surface under /data/.".into(),
                    mime_type: "application/json",
                },
            ];
            for (entry, table) in exported(lore).await? {
                if !described(&entry, table.as_ref(), &permission) {
                    continue;
                }
                resources.push(Listed {
                    uri: descriptor_uri(lore, &entry.path),
                    name: entry.path.clone(),
                    description: format!(
                        "The exported resource `{}`: read its records with the get_ and search_ tools.",
                        entry.path
                    ),
                    mime_type: "application/json",
                });
            }
            Surface {
                tools: application_tools(lore, &permission).await?,
                resources,
                templates: vec![Template {
                    uri_template: "svc://schema/{database}/{table}".into(),
                    name: "schema".into(),
                    description: "A table's attributes as you may see them.".into(),
                    mime_type: "application/json",
                }],
            }
        }
    };
    surface.tools.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(surface)
}

/// Runs tool `name` of `profile` for `caller`. A tool the caller does not
/// see is unknown to it; what runs checks the caller again (the operation's
/// or the table's permission check), and a custom tool checks it itself.
pub async fn call(lore: &Lore, profile: Profile, caller: &Caller, name: &str, args: Value) -> Result<Output> {
    let unknown = || crate::Error::from(AppDbError::UnknownTool(name.to_owned()));
    let arguments = match args {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        _ => return Err(AppDbError::Invalid("`arguments` must be an object".into()).into()),
    };
    let target = {
        let permission = permission_of(caller);
        match profile {
            Profile::Operations => lore.settings.mcp.operations.as_ref().and_then(|settings| {
                operations::OPERATIONS
                    .iter()
                    .find(|spec| spec.name == name)
                    .filter(|spec| offered(settings, spec.name) && sees_operation(&permission, spec))
                    .map(|spec| Target::Operation(spec.name))
            }),
            Profile::Application => application_target(lore, &permission, name).await?,
        }
    }
    .ok_or_else(unknown)?;
    match target {
        Target::Operation(operation) => {
            let principal = caller.principal.as_ref().ok_or(crate::keys::KeyError::Missing)?;
            let mut body = arguments;
            body.insert("operation".into(), Value::String(operation.to_owned()));
            Ok(Output::Operation(operations::dispatch(lore, principal, Value::Object(body)).await?))
        }
        Target::Custom { path, name } => Ok(Output::Custom(
            resources::call_tool(lore, caller, &path, &name, Value::Object(arguments)).await?,
        )),
        Target::Verb { path, verb } => run_verb(lore, caller, &path, verb, arguments).await.map(Output::Json),
    }
}

async fn run_verb(
    lore: &Lore,
    caller: &Caller,
    path: &str,
    verb: Verb,
    mut args: Map<String, Value>,
) -> Result<Value> {
    let entry = resources::registry(lore)
        .await?
        .entry(path)
        .ok_or_else(|| crate::Error::from(AppDbError::UnknownResource(path.to_owned())))?;
    let resource = &entry.resource;
    let table = resource.table(lore).await?;
    let key_name = table.as_ref().map(|t| t.primary_key.clone()).unwrap_or_else(|| "id".into());
    let take_key = |args: &mut Map<String, Value>| {
        args.get(&key_name)
            .filter(|v| !v.is_null())
            .cloned()
            .ok_or_else(|| crate::Error::from(AppDbError::MissingAttribute(key_name.clone())))
    };
    let attribute_list = |args: &mut Map<String, Value>, field: &str| -> Result<Vec<String>> {
        match args.remove(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(value) => serde_json::from_value(value).map_err(|_| {
                AppDbError::Invalid(format!("`{field}` must be a list of attribute names")).into()
            }),
        }
    };
    match verb {
        Verb::Get => {
            let id = take_key(&mut args)?;
            let select = attribute_list(&mut args, "get_attributes")?;
            let found = resource.get(lore, caller, &id, &select).await?;
            Ok(json!({"record": found.map(Value::Object)}))
        }
        Verb::Search => {
            let search: SearchArgs = serde_json::from_value(Value::Object(args))
                .map_err(|err| AppDbError::Invalid(format!("search: {err}")))?;
            let query = Query {
                conditions: search
                    .conditions
                    .into_iter()
                    .map(|c| crate::appdb::records::Criterion {
                        attribute: c.search_attribute,
                        search_type: c.search_type.unwrap_or(crate::appdb::records::SearchType::Equals),
                        value: c.search_value,
                    })
                    .collect(),
                operator: search.operator,
                select: search.get_attributes,
                limit: search.limit,
                cursor: search.cursor,
            };
            let page = resource.search(lore, caller, &query).await?;
            Ok(json!({"records": page.records, "next_cursor": page.next_cursor}))
        }
        Verb::Post => Ok(json!({"id": resource.post(lore, caller, args).await?})),
        Verb::Put => {
            let id = take_key(&mut args)?;
            resource.put(lore, caller, &id, args).await?;
            Ok(json!({"updated": true}))
        }
        Verb::Patch => {
            let id = take_key(&mut args)?;
            Ok(json!({"updated": resource.patch(lore, caller, &id, args).await?}))
        }
        Verb::Delete => {
            let id = take_key(&mut args)?;
            Ok(json!({"deleted": resource.delete(lore, caller, &id).await?}))
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    #[serde(default)]
    conditions: Vec<ConditionArg>,
    #[serde(default)]
    operator: crate::appdb::records::Operator,
    #[serde(default)]
    get_attributes: Vec<String>,
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConditionArg {
    search_attribute: String,
    #[serde(default)]
    search_type: Option<crate::appdb::records::SearchType>,
    search_value: Value,
}

/// What `resources/read` returns: the URI and its JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct Read {
    pub uri: String,
    pub json: Value,
}

/// `svc://about`.
pub fn about(profile: Profile) -> Value {
    let mut versions: Vec<&str> = SESSION_VERSIONS.to_vec();
    versions.insert(0, SESSIONLESS_VERSION);
    json!({
        "name": "lore",
        "version": SURFACE_VERSION,
        "lore_version": env!("CARGO_PKG_VERSION"),
        "profile": profile.key(),
        "protocol_versions": versions,
        "capabilities": capabilities(),
    })
}

/// The server capabilities both eras advertise.
pub fn capabilities() -> Value {
    json!({"tools": {"listChanged": true}, "resources": {"subscribe": true, "listChanged": true}})
}

/// Reads resource `uri` of `profile` for `caller`: permission-denied for a
/// table schema the caller may neither read nor describe (SPEC, Errors 1).
pub async fn read(lore: &Lore, profile: Profile, caller: &Caller, uri: &str) -> Result<Read> {
    let permission = permission_of(caller);
    let not_found = || crate::Error::from(AppDbError::UnknownResource(uri.to_owned()));
    let json = match (profile, uri) {
        (_, "svc://about") => about(profile),
        (Profile::Operations, "svc://operations") => {
            let names: Vec<String> = operation_tools(lore, &permission).into_iter().map(|t| t.name).collect();
            json!({"operations": names})
        }
        (Profile::Application, "svc://openapi") => resources::openapi(lore).await?,
        (Profile::Application, _) if uri.starts_with("svc://schema/") => {
            let rest = &uri["svc://schema/".len()..];
            let (database, table) = rest.split_once('/').ok_or_else(not_found)?;
            let table = match lore.appdb_cache().table(&lore.db, database, table).await {
                Ok(table) => table,
                Err(crate::Error::AppDb(AppDbError::UnknownDatabase(_) | AppDbError::UnknownTable(_))) => {
                    return Err(not_found())
                }
                Err(other) => return Err(other),
            };
            if !permission.sees_table(&table.database, &table.name) {
                return Err(AppDbError::denied("describe", table.path()).into());
            }
            schema::table_document(&table, &permission)
        }
        (Profile::Application, _) => {
            let path =
                uri.strip_prefix(&format!("{}/data/", lore.settings.base_url())).ok_or_else(not_found)?;
            let exported = exported(lore).await?;
            let tool = names_of(&exported).get(path).cloned().ok_or_else(not_found)?;
            let (entry, table) = exported.into_iter().find(|(e, _)| e.path == path).ok_or_else(not_found)?;
            if !described(&entry, table.as_ref(), &permission) {
                return Err(not_found());
            }
            json!({
                "uri": uri,
                "path": entry.path,
                "database": table.as_ref().map(|t| t.database.clone()).unwrap_or_default(),
                "table": table.as_ref().map(|t| t.name.clone()).unwrap_or_default(),
                "hint": format!("Use the get_{tool} tool for one record by primary key and search_{tool} to find records; this descriptor holds no records."),
            })
        }
        _ => return Err(not_found()),
    };
    Ok(Read { uri: uri.to_owned(), json })
}

/// Who a principal is, as a session stores it: `{"user": name}` or
/// `{"admin": account_id}`.
pub fn identity(principal: &Principal) -> Value {
    match principal {
        Principal::User(user) => json!({"user": user.username}),
        Principal::Admin { account_id } => json!({"admin": account_id}),
    }
}

/// Whether an argument's name looks like it holds a secret: its value is
/// kept out of the audit log.
fn secret_like(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["password", "secret", "token", "key", "credential", "authorization"].iter().any(|s| name.contains(s))
}

/// Appends a tool call to the audit log, behind the response: who, which
/// tool, the outcome, and the arguments with secret-looking values
/// redacted.
pub async fn audit_call(
    lore: &Lore,
    profile: Profile,
    caller: &Caller,
    tool: &str,
    args: &Value,
    outcome: &str,
) {
    let arguments: Map<String, Value> = args
        .as_object()
        .map(|object| {
            object
                .iter()
                .map(|(name, value)| {
                    let value = if secret_like(name) {
                        Value::String(crate::settings::Secret::REDACTED.into())
                    } else {
                        value.clone()
                    };
                    (name.clone(), value)
                })
                .collect()
        })
        .unwrap_or_default();
    let actor = match &caller.principal {
        Some(principal) => principal.actor(),
        None => crate::audit::Actor::System,
    };
    let details = json!({"profile": profile.key(), "outcome": outcome, "arguments": arguments});
    if let Err(err) = lore.recorder().audit(&actor, "mcp.tools_call", Some(tool), details).await {
        tracing::warn!(error = %err, "could not record a tool call in the audit log");
    }
}

/// Admits one tool call of key `key_id` under `mcp.toolCallsPerMinute`;
/// refused past it (429 at the edge).
pub fn admit_call(lore: &Lore, key_id: &str) -> Result<()> {
    let rate = lore.settings.mcp.tool_calls_per_minute.max(1);
    if lore.rate_limiter.allow(&format!("mcp:{key_id}"), rate) {
        Ok(())
    } else {
        Err(crate::keys::KeyError::RateLimited(rate).into())
    }
}

/// The URI of one record of an exported table: what `resources/subscribe`
/// takes (`{base_url}/data/<path>/<id>`).
pub fn record_uri(lore: &Lore, path: &str, id: &Value) -> String {
    let id = match id {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    format!("{}/{id}", descriptor_uri(lore, path))
}

/// Checks that `uri` is a record of a table exported to this profile that
/// the caller may read: only row-backed resources take subscriptions.
pub async fn subscribable(lore: &Lore, profile: Profile, caller: &Caller, uri: &str) -> Result<()> {
    let refused = || {
        crate::Error::from(AppDbError::Invalid(format!(
            "`{uri}` is not a record of an exported table (`{}/data/<path>/<id>`)",
            lore.settings.base_url()
        )))
    };
    if profile != Profile::Application {
        return Err(refused());
    }
    let rest = uri.strip_prefix(&format!("{}/data/", lore.settings.base_url())).ok_or_else(refused)?;
    let (path, _id) = rest.rsplit_once('/').filter(|(_, id)| !id.is_empty()).ok_or_else(refused)?;
    let entry =
        resources::registry(lore).await?.entry(path).filter(|e| e.export_types.mcp).ok_or_else(refused)?;
    let table = entry.resource.table(lore).await?.ok_or_else(refused)?;
    let permission = permission_of(caller);
    if !permission.may(&table.database, &table.name, Access::Read) {
        return Err(AppDbError::denied("read", table.path()).into());
    }
    Ok(())
}

/// Tells the push channels subscribed to records of `table` that these
/// changed (a write of this process; see `docs/mcp.md`).
pub fn records_changed(lore: &Lore, table: &Table, ids: &[Value]) {
    let Some(export) = table.options.export.as_ref().filter(|e| e.mcp) else {
        return;
    };
    for id in ids {
        lore.mcp_hub().resource_updated(&record_uri(lore, &export.path, id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_operators_write_them() {
        assert!(glob("describe_*", "describe_all"));
        assert!(glob("*", "anything"));
        assert!(glob("search_*_id", "search_by_id"));
        assert!(!glob("search_*_id", "search_by_value"));
        assert!(!glob("describe_*", "drop_table"));
        assert!(glob("read_log", "read_log") && !glob("read_log", "read_logs"));
    }

    #[test]
    fn the_default_allow_list_is_specs_and_get_star_is_no_wildcard() {
        let defaults = McpOperationsSettings::default();
        for name in
            ["describe_all", "list_users", "search_by_id", "get_job", "read_log", "system_information"]
        {
            assert!(offered(&defaults, name), "{name}");
        }
        for name in ["get_configuration", "insert", "drop_table", "set_configuration", "restart"] {
            assert!(!offered(&defaults, name), "{name}");
        }
        let star = McpOperationsSettings { allow: vec!["get_*".into()], ..defaults.clone() };
        assert!(offered(&star, "get_status"));
        assert!(!offered(&star, "get_configuration"), "get_* does not reach the excluded get_ operations");
        let named = McpOperationsSettings { allow: vec!["get_configuration".into()], ..defaults.clone() };
        assert!(offered(&named, "get_configuration"), "an operator opts one in by name");
        let denied = McpOperationsSettings { deny: vec!["read_*".into()], ..defaults };
        assert!(!offered(&denied, "read_log") && offered(&denied, "describe_all"));
    }

    #[test]
    fn secret_looking_argument_names_are_recognised() {
        for name in ["password", "api_key", "apiKey", "client_secret", "Authorization", "token"] {
            assert!(secret_like(name), "{name}");
        }
        for name in ["name", "breed", "age", "id"] {
            assert!(!secret_like(name), "{name}");
        }
    }
}
