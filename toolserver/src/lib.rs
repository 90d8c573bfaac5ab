//! The tool server (the crate `lore-toolserver`, over `engine`): what a
//! user sees on each profile, running what it calls, the sessions and the
//! push channels of this process ([`ToolServer`] holds them). The transport
//! (JSON-RPC over Streamable HTTP, both protocol eras) is the server's
//! `http::mcp`; it parses, calls one function here and converts.
//!
//! - The **operations profile** (`{base_url}/operation/mcp`) offers one tool
//!   per operation of [`engine::operations`], named as the operation and
//!   filtered by `mcp.operations.allow`/`deny`, then per user (SPEC,
//!   Authentication 6); a call is `POST /operation`'s dispatch.
//! - The **application profile** (`{base_url}/mcp`) offers the verb tools of
//!   every resource registered with `export_types.mcp` ([`naming`],
//!   [`schema`]) and the resources' custom tools; a verb tool runs the
//!   resource's verb, which checks the table permissions.
//!
//! A user's [`Surface`] is what `tools/list`, `resources/list` and
//! `resources/templates/list` show, held per caller until the application
//! database's epoch moves ([`lists`]); its [`Snapshot`] is what a session
//! compares when a role or the schema changes ([`hub`]).

pub mod documents;
pub mod hub;
pub mod lists;
pub mod naming;
pub mod schema;
pub mod sessions;
mod tools;
mod uris;

pub use lists::listed;
pub use tools::*;
pub use uris::*;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use engine::appdb::catalog::Table;
use engine::appdb::permission::StructureUser;
use engine::appdb::{Access, AppDbError, Permission, Principal};
use engine::operations::{self, Family, Outcome};
pub use engine::resources::Profile;
use engine::resources::{self, Caller, Entry, Query, ToolOutput, Verb};
use engine::settings::McpOperationsSettings;
use engine::{Lore, Result};

/// The tool server of one open Lore: the engine's handle (it derefs to
/// [`Lore`]) and the push channels open in this process, which the Lore
/// keeps (every `ToolServer` of one Lore shares them). Cheap to clone.
#[derive(Clone)]
pub struct ToolServer {
    lore: Lore,
    hub: Arc<hub::Hub>,
}

impl ToolServer {
    /// The tool server of `lore`. The first time: registers the tool
    /// server's own documents (`svc://about`, …) with the resource registry
    /// and has the engine tell the push channels of every committed write
    /// to an exported table.
    pub fn open(lore: Lore) -> Self {
        let (hub, made) = lore.extension(hub::Hub::default);
        if made {
            documents::install(lore.resources());
            lore.watch_writes(Arc::new(hub::RecordUpdates::new(hub.clone(), lore.settings.base_url())));
        }
        Self { lore, hub }
    }

    /// The push channels open in this process.
    pub fn hub(&self) -> &hub::Hub {
        &self.hub
    }

    /// The engine's handle.
    pub fn lore(&self) -> &Lore {
        &self.lore
    }
}

impl std::ops::Deref for ToolServer {
    type Target = Lore;

    fn deref(&self) -> &Lore {
        &self.lore
    }
}

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
/// operations too; everyone those its role lists in `operations`; and in
/// every case only one a call could run ([`operations::callable`], the
/// check a call meets), so a role that lists `list_users` without being a
/// super user does not see it.
pub fn sees_operation(permission: &Permission, spec: &operations::Spec) -> bool {
    let listed = permission.operations.as_ref().is_some_and(|names| names.iter().any(|n| n == spec.name));
    let shown = permission.super_user
        || listed
        || (spec.family == Family::Structure && permission.structure_user != StructureUser::No);
    shown && operations::callable(permission, spec)
}

fn permission_of(caller: &Caller) -> std::borrow::Cow<'_, Permission> {
    match &caller.principal {
        Some(principal) => principal.permission(),
        None => std::borrow::Cow::Owned(Permission::default()),
    }
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

/// Who a principal is, as a session stores it: `{"user": name}` or
/// `{"admin": account_id}`.
pub fn identity(principal: &Principal) -> Value {
    match principal {
        Principal::User(user) => json!({"user": user.username}),
        Principal::Admin { account_id } => json!({"admin": account_id}),
    }
}

/// The caller a request without credentials is on `profile`: an anonymous
/// one (no user; the custom tools only) when
/// `mcp.application.anonymousCustomTools` admits it on the application
/// profile, else none (the request is refused).
pub async fn anonymous(lore: &Lore, profile: Profile) -> Result<Option<Caller>> {
    if profile != Profile::Application || !lore.settings.mcp.application.anonymous_custom_tools {
        return Ok(None);
    }
    // What this request reads of users, roles and tables is as of now.
    lore.appdb_cache().refresh(&lore.db).await?;
    Ok(Some(Caller::default()))
}

/// `caller` with its user as stored now (a request resolved it earlier);
/// an error when that user is gone or inactive.
pub(crate) async fn as_stored(lore: &Lore, caller: &Caller) -> Result<Caller> {
    match &caller.principal {
        Some(Principal::User(user)) => Ok(Caller {
            principal: Some(engine::appdb::users::principal(lore, &user.username).await?),
            ..caller.clone()
        }),
        _ => Ok(caller.clone()),
    }
}

/// Who a caller is, as a session is bound to it: its principal's
/// [`identity`], or `{"anonymous": true}` for an anonymous session.
pub fn who(caller: &Caller) -> Value {
    caller.principal.as_ref().map(identity).unwrap_or_else(|| json!({"anonymous": true}))
}

/// Whether an argument's name looks like it holds a secret: its value is
/// kept out of the audit log.
pub fn secret_like(name: &str) -> bool {
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
                        Value::String(engine::settings::Secret::REDACTED.into())
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
        None => engine::audit::Actor::System,
    };
    let mut details = json!({"profile": profile.key(), "outcome": outcome, "arguments": arguments});
    if caller.principal.is_none() {
        details["anonymous"] = Value::Bool(true);
    }
    if let Err(err) = lore.recorder().audit(&actor, "mcp.tools_call", Some(tool), details).await {
        tracing::warn!(error = %err, "could not record a tool call in the audit log");
    }
}

/// Admits one tool call under `mcp.toolCallsPerMinute`: of key `key_id`,
/// or, for a caller signed in over OAuth, of its user (all of the user's
/// assistants together), or of every anonymous session together; refused
/// past it (429 at the edge). A console session is not limited.
pub fn admit_call(lore: &Lore, caller: &Caller, key_id: Option<&str>) -> Result<()> {
    let bucket = match (key_id, &caller.principal) {
        (Some(key_id), _) => format!("mcp:{key_id}"),
        (None, Some(principal)) if caller.oauth => format!("mcp:oauth:{}", identity(principal)),
        // Anonymous sessions share one budget.
        (None, None) => "mcp:anonymous".to_owned(),
        (None, Some(_)) => return Ok(()),
    };
    let rate = lore.settings.mcp.tool_calls_per_minute.max(1);
    if lore.admit(&bucket, rate) {
        Ok(())
    } else {
        Err(engine::keys::KeyError::RateLimited(rate).into())
    }
}
