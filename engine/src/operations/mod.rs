//! The operations API (`POST /operation`, and the operations profile of the
//! tool server): a registry of named operations, each with a typed argument
//! schema, its annotations and its family, and [`dispatch`], which every
//! call passes through: parse, [`verify`] (the one permission check), run
//! in one transaction, audit.
//!
//! Requests and responses keep HarperDB's shapes where HarperDB has the
//! operation (`database`/`schema`, `table`, `primary_key`/`hash_attribute`,
//! `records`, `ids`/`hash_values`, `search_attribute`, `search_value`,
//! `get_attributes`, `conditions`, `operator`, `limit`, `offset`), so
//! scripts written for it run against Lore unchanged. Lore's own operations
//! return engine values ([`Outcome`]) that the edge converts to the same
//! wire views as the console's.

mod args;
mod run;

pub use args::*;
use run::*;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::appdb::catalog::{self, AttrType, Attribute, NewTable, Origin, Table};
use crate::appdb::records::{self, ConditionArgs, Criterion, Operator, Search, WriteMode, Written};
use crate::appdb::users::{self, Principal, Role, User};
use crate::appdb::{AppDbError, Event, Permission};
use crate::audit;
use crate::{Lore, Result};

/// What an operation is about, for the permission check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Databases, tables and attributes: super users and structure users.
    Structure,
    /// Reads and writes of records, and describing what one may see: gated
    /// by the table permissions.
    Data,
    /// Users and roles, configuration, restart: super users only.
    Admin,
    /// About the caller itself: everyone.
    Own,
    /// Lore's own operations and the system's: super users, or roles that
    /// list them in `permission.operations`.
    Lore,
}

/// One registered operation.
pub struct Spec {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub family: Family,
    pub description: &'static str,
    /// The JSON Schema of its arguments (the tool server's inputSchema).
    pub input_schema: fn() -> Value,
    /// Reads a call's arguments into its [`Operation`] (a wrong argument is
    /// an error naming the operation and the field).
    pub parse: fn(&Spec, Map<String, Value>) -> Result<Operation>,
}

impl Spec {
    /// SPEC's annotation table: `readOnlyHint`.
    pub fn read_only(&self) -> bool {
        ["describe_", "list_", "search_", "get_", "read_"].iter().any(|p| self.name.starts_with(p))
            || matches!(self.name, "system_information" | "user_info")
    }

    /// SPEC's annotation table: `destructiveHint`.
    pub fn destructive(&self) -> bool {
        ["drop_", "delete", "restart"].iter().any(|p| self.name.starts_with(p))
            || self.name == "set_configuration"
    }
}

fn schema<T: schemars::JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null)
}

/// The operations: [`Operation`], one variant per operation with its typed
/// arguments, and [`OPERATIONS`], each one's [`Spec`], from one list.
macro_rules! operations {
    ($($variant:ident($name:literal, [$($alias:literal),*], $family:ident, $args:ty, $description:literal)),* $(,)?) => {
        /// One call of the operations API, its arguments read and typed:
        /// what [`run`] matches on, exhaustively.
        pub enum Operation {
            $($variant($args)),*
        }

        /// Every operation, by name.
        pub const OPERATIONS: &[Spec] = &[$(
            Spec {
                name: $name,
                aliases: &[$($alias),*],
                family: Family::$family,
                description: $description,
                input_schema: schema::<$args>,
                parse: |spec, args| Ok(Operation::$variant(parse::<$args>(spec, args)?)),
            }
        ),*];
    };
}

operations! {
    DescribeAll(
        "describe_all",
        [],
        Data,
        NoArgs,
        "Every database and table the caller may see, with attributes and record counts."
    ),
    DescribeDatabase(
        "describe_database",
        ["describe_schema"],
        Data,
        DatabaseArgs,
        "The tables of one database the caller may see."
    ),
    DescribeTable("describe_table", [], Data, TableArgs, "One table: primary key, attributes, record count."),
    CreateDatabase("create_database", ["create_schema"], Structure, DatabaseArgs, "Creates a database."),
    DropDatabase(
        "drop_database",
        ["drop_schema"],
        Structure,
        DatabaseArgs,
        "Drops a database and every table in it."
    ),
    CreateTable(
        "create_table",
        [],
        Structure,
        CreateTableArgs,
        "Creates a table with a primary key and optional typed attributes."
    ),
    DropTable("drop_table", [], Structure, TableArgs, "Drops a table and its records."),
    CreateAttribute("create_attribute", [], Structure, AttributeArgs, "Adds an attribute to a table."),
    DropAttribute("drop_attribute", [], Structure, AttributeArgs, "Drops an attribute and its values."),
    Insert("insert", [], Data, WriteArgs, "Inserts records; a primary key that exists already is refused."),
    Update(
        "update",
        [],
        Data,
        WriteArgs,
        "Updates records by primary key (the attributes given); missing ones are skipped."
    ),
    Upsert("upsert", [], Data, WriteArgs, "Inserts records, or updates the ones whose primary key exists."),
    Delete("delete", [], Data, DeleteArgs, "Deletes records by primary key."),
    SearchById("search_by_id", ["search_by_hash"], Data, SearchByIdArgs, "Records by primary key."),
    SearchByValue(
        "search_by_value",
        [],
        Data,
        SearchByValueArgs,
        "Records whose attribute matches a value (`*` wildcards)."
    ),
    SearchByConditions(
        "search_by_conditions",
        [],
        Data,
        SearchByConditionsArgs,
        "Records matching conditions joined by and/or, paged."
    ),
    ListUsers("list_users", [], Admin, NoArgs, "Every user with its role."),
    AddUser("add_user", [], Admin, AddUserArgs, "Adds a user with a role (no password: keys act for users)."),
    AlterUser("alter_user", [], Admin, AlterUserArgs, "Changes a user's role or whether it is active."),
    DropUser("drop_user", [], Admin, UserArgs, "Drops a user and revokes its keys."),
    ListRoles("list_roles", [], Admin, NoArgs, "Every role with its permission tree."),
    AddRole("add_role", [], Admin, AddRoleArgs, "Adds a role with a permission tree."),
    AlterRole("alter_role", [], Admin, AlterRoleArgs, "Renames a role or replaces its permission tree."),
    DropRole("drop_role", [], Admin, RoleArgs, "Drops a role that no user has."),
    UserInfo("user_info", [], Own, NoArgs, "The caller: user name, role and permission tree."),
    SystemInformation(
        "system_information",
        [],
        Lore,
        NoArgs,
        "Lore's version, database backend and application databases."
    ),
    ReadAuditLog(
        "read_audit_log",
        [],
        Lore,
        ReadAuditLogArgs,
        "The audit log, newest first: every write and every operation call."
    ),
    ListSources("list_sources", [], Lore, NoArgs, "The knowledge sources with their status."),
    GetJob("get_job", [], Lore, JobArgs, "One indexing run with its progress."),
    ListKeys("list_keys", [], Lore, NoArgs, "The access keys with 7-day usage (never a raw key)."),
    ListProfileVersions("list_profile_versions", [], Lore, NoArgs, "The profile's versions, the active one marked."),
    Retrieve("retrieve", [], Lore, RetrieveArgs, "Hybrid retrieval over the indexed content, with a trace."),
    Answer(
        "answer",
        [],
        Lore,
        AnswerArgs,
        "Answers a question from the indexed content, with citations and a trace; refuses when nothing retrievable answers."
    ),
    GetStatus("get_status", [], Lore, NoArgs, "Whether Lore can answer, check by check (the readiness verdict)."),
    SearchJobs("search_jobs", [], Lore, SearchJobsArgs, "Recent indexing runs, newest first (of one source, if given)."),
    AddSource(
        "add_source",
        [],
        Lore,
        AddSourceArgs,
        "Adds a knowledge source; a website's or a table's first sync is queued at once."
    ),
    AlterSource(
        "alter_source",
        [],
        Lore,
        AlterSourceArgs,
        "Sets who may read a source through answers and retrieval (`everyone`, `table` or roles); the next request reads with it."
    ),
    SyncSource("sync_source", [], Lore, SyncSourceArgs, "Queues a sync of one source (or a full reindex of it)."),
    StartIndex(
        "start_index",
        [],
        Lore,
        StartIndexArgs,
        "Queues a sync of every enabled source, or a full reindex of everything (which re-stamps the corpus)."
    ),
    GetConfiguration("get_configuration", [], Admin, NoArgs, "Lore's effective configuration, secrets redacted."),
    SetConfiguration(
        "set_configuration",
        [],
        Admin,
        SetConfigurationArgs,
        "Persists settings (`\"section.key\": value`) in the data directory; they take effect at the next start (`restart`)."
    ),
    Restart("restart", [], Admin, NoArgs, "Restarts Lore gracefully: in-flight requests finish, the configuration is read again."),
    ReadLog("read_log", [], Admin, ReadLogArgs, "Lore's own log, newest lines first (the last 2,000 lines are kept)."),
    GetMetrics(
        "get_metrics",
        [],
        Lore,
        NoArgs,
        "Counters since the start of records: answers per surface (queries, cache hits, refusals, spend) and indexing runs per status."
    ),
    GetAnalytics(
        "get_analytics",
        [],
        Lore,
        AnalyticsArgs,
        "The Dashboard's figures over the last `hours` (default 24): totals, series, funnel, top questions and content gaps."
    ),
}

/// The operation called `name` (or one of its aliases).
pub fn find(name: &str) -> Option<&'static Spec> {
    OPERATIONS.iter().find(|spec| spec.name == name || spec.aliases.contains(&name))
}

/// The one permission check of an operation call (HarperDB's verifyPerms),
/// before any table is touched: table and attribute permissions are then
/// checked by the records they read or write.
pub fn verify(permission: &Permission, spec: &Spec, database: Option<&str>) -> Result<(), AppDbError> {
    if permission.super_user {
        return Ok(());
    }
    let listed = permission.operations.as_ref().is_some_and(|names| names.iter().any(|n| n == spec.name));
    let allowed = match spec.family {
        Family::Own => true,
        Family::Admin => false,
        Family::Structure => listed || database.is_some_and(|db| permission.may_change_structure(db)),
        // A role written for HarperDB (no `operations`) reads and writes as
        // its table permissions say; one that lists operations, only those.
        Family::Data => permission.operations.is_none() || listed,
        Family::Lore => listed,
    };
    if allowed {
        Ok(())
    } else {
        Err(AppDbError::denied("call", format!("operation `{}`", spec.name)))
    }
}

/// Whether some call of `spec` passes [`verify`] for `permission`: the one
/// rule behind what the tool server lists (a tool it shows is one a call
/// could run). A structure operation counts for a structure user of any
/// database, which its calls then name.
pub fn callable(permission: &Permission, spec: &Spec) -> bool {
    verify(permission, spec, None).is_ok()
        || (spec.family == Family::Structure
            && permission.structure_user != crate::appdb::permission::StructureUser::No)
}

/// How a call to the operations API identifies itself.
pub enum Credentials<'a> {
    /// An `x-api-key` (scope `operations`) of a user, from a page's
    /// `origin` if a browser sent it.
    Key {
        raw: &'a str,
        origin: Option<&'a str>,
    },
    /// A console session.
    Session(&'a crate::auth::Viewer),
    /// An OAuth access token (`Authorization: Bearer`), for the protected
    /// resource at `resource_path` ([`crate::oauth::RESOURCE_PATHS`]).
    Bearer {
        token: &'a str,
        resource_path: &'a str,
    },
    None,
}

/// Who a call acts as, and the key it came with (its usage is counted):
/// a key's user as stored now, or a signed-in admin as super user.
pub async fn authenticate(lore: &Lore, credentials: Credentials<'_>) -> Result<(Principal, Option<String>)> {
    authenticate_for(lore, credentials, crate::keys::Scope::Operations).await
}

/// [`authenticate`] for a surface whose keys need `scope` (the tool
/// server's: `mcp`).
pub async fn authenticate_for(
    lore: &Lore,
    credentials: Credentials<'_>,
    scope: crate::keys::Scope,
) -> Result<(Principal, Option<String>)> {
    // What this request reads of users, roles and tables is as of now.
    lore.appdb_cache().refresh(&lore.db).await?;
    match credentials {
        Credentials::Key { raw, origin } => {
            let caller = crate::keys::authenticate_cached(lore, Some(raw), scope, origin).await?;
            let username = caller.user.ok_or(crate::keys::KeyError::NeedsUser(scope.key()))?;
            Ok((users::principal(lore, &username).await?, Some(caller.key_id)))
        }
        Credentials::Session(viewer) => {
            viewer.require_admin()?;
            Ok((Principal::Admin { account_id: viewer.account_id.clone() }, None))
        }
        Credentials::Bearer { token, resource_path } => {
            // A token's scope is its tool server's, not the surface's key scope.
            Ok((crate::oauth::authenticate(lore, token, resource_path).await?, None))
        }
        Credentials::None => Err(crate::keys::KeyError::Missing.into()),
    }
}

/// What an operation returned, as engine values: the edge renders the
/// application database's in HarperDB's shapes and Lore's own as the same
/// views the console shows.
#[derive(Debug)]
pub enum Outcome {
    /// A change of structure, users or roles, or a restart, done.
    Done(Done),
    /// `insert`, `update` or `upsert`: of `total` records, which were written.
    Written {
        mode: WriteMode,
        total: usize,
        written: Written,
    },
    /// `delete`: of `total` primary keys, which were deleted.
    Deleted {
        total: usize,
        written: Written,
    },
    /// Records found, with the attributes the caller may read.
    Records(Vec<Map<String, Value>>),
    /// `describe_table`.
    Table(Described),
    /// `describe_database`: the tables of one database the caller sees.
    Tables(Vec<Described>),
    /// `describe_all`: the databases the caller sees, each with its tables.
    Databases(Vec<(String, Vec<Described>)>),
    Users(Vec<User>),
    /// `alter_user`: the user as it is now.
    UserAltered(User),
    Roles(Vec<Role>),
    Role(Role),
    /// `user_info`: who called.
    Caller(Principal),
    System(SystemInformation),
    AuditLog(Vec<audit::Entry>),
    Log(Vec<crate::logbook::Line>),
    Metrics(Metrics),
    /// `get_configuration`: the effective settings (secrets serialize as
    /// `[redacted]`).
    Configuration(std::sync::Arc<crate::Settings>),
    /// `set_configuration`: the settings saved, applied at the next start.
    ConfigurationSaved(Vec<String>),
    Sources(Vec<crate::ingest::lifecycle::Overview>),
    Job(crate::ingest::jobs::Job),
    Keys(Vec<crate::keys::KeySummary>),
    ProfileVersions(Vec<crate::profile::Version>),
    Retrieved(crate::search::Traced),
    Answer(Box<crate::answer::Answer>),
    Status(crate::readiness::SetupState),
    Jobs(Vec<crate::ingest::jobs::Job>),
    Source(Box<crate::ingest::lifecycle::Overview>),
    Analytics(Box<crate::metrics::Dashboard>),
}

/// A change that answers with a message only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Done {
    DatabaseCreated(String),
    DatabaseDropped(String),
    /// `database.table`.
    TableCreated(String),
    TableDropped(String),
    /// `database.table.attribute`.
    AttributeCreated(String),
    /// The attribute's name.
    AttributeDropped(String),
    UserAdded(String),
    UserDropped(String),
    RoleDropped(String),
    Restarting,
}

/// A table as one caller may see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Described {
    pub database: String,
    pub name: String,
    pub primary_key: String,
    /// Declared in the schema file (not created by a call).
    pub schema_defined: bool,
    /// The attributes the caller may read (all of them for those who may
    /// change the structure), primary key first.
    pub attributes: Vec<Attribute>,
    pub record_count: i64,
}

/// `system_information`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemInformation {
    pub version: &'static str,
    /// `postgresql` or `sqlite`.
    pub backend: &'static str,
    pub databases: Vec<String>,
}

/// `get_metrics`: counters since the start of records.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    /// Answer counters per surface.
    pub answers: Vec<(String, crate::metrics::Sums)>,
    /// Indexing runs per status.
    pub jobs: Vec<(String, i64)>,
}

/// Runs one operation call: `body` is `{"operation": name, ...args}`.
/// Every call, refused or not, is appended to the audit log (arguments
/// are not: records may hold secrets).
pub async fn dispatch(lore: &Lore, principal: &Principal, body: Value) -> Result<Outcome> {
    let Value::Object(mut args) = body else {
        return Err(AppDbError::Invalid("the body must be a JSON object with an `operation`".into()).into());
    };
    let name = match args.remove("operation") {
        Some(Value::String(name)) => name,
        _ => return Err(AppDbError::Invalid("`operation` (the operation's name) is required".into()).into()),
    };
    let spec = find(&name).ok_or_else(|| crate::Error::AppDb(AppDbError::UnknownOperation(name.clone())))?;
    let target = target_of(&args);
    let database = args
        .get("database")
        .or_else(|| args.get("schema"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            (spec.family == Family::Structure && args.contains_key("table"))
                .then(|| catalog::DEFAULT_DATABASE.to_owned())
        });
    let result = match verify(&principal.permission(), spec, database.as_deref()) {
        Ok(()) => match (spec.parse)(spec, args) {
            Ok(operation) => run(lore, principal, operation).await,
            Err(wrong) => Err(wrong),
        },
        Err(refused) => Err(refused.into()),
    };
    let outcome = match &result {
        Ok(_) => "ok".to_owned(),
        Err(crate::Error::AppDb(AppDbError::PermissionDenied { .. })) => "refused".to_owned(),
        Err(err) => format!("failed: {}", error_kind(err)),
    };
    // Behind the call, as key usage is: a read must not wait for a write.
    lore.recorder()
        .audit(
            &principal.actor(),
            &format!("operation.{}", spec.name),
            target.as_deref(),
            json!({"outcome": outcome}),
        )
        .await?;
    result
}

fn error_kind(err: &crate::Error) -> &'static str {
    match err {
        crate::Error::AppDb(_) | crate::Error::InvalidInput(_) => "invalid request",
        _ => "error",
    }
}

/// What the audit log names as a call's target.
fn target_of(args: &Map<String, Value>) -> Option<String> {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    match (text("database").or(text("schema")), text("table")) {
        (Some(db), Some(table)) => Some(format!("{db}.{table}")),
        (None, Some(table)) => Some(format!("{}.{table}", catalog::DEFAULT_DATABASE)),
        (Some(db), None) => Some(db.to_owned()),
        (None, None) => text("username").or(text("role")).or(text("id")).map(str::to_owned),
    }
}

fn parse<T: DeserializeOwned>(spec: &Spec, args: Map<String, Value>) -> Result<T> {
    serde_json::from_value(Value::Object(args))
        .map_err(|err| AppDbError::Invalid(format!("{}: {err}", spec.name)).into())
}
