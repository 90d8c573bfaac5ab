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

macro_rules! spec {
    ($name:literal, [$($alias:literal),*], $family:ident, $args:ty, $description:literal) => {
        Spec {
            name: $name,
            aliases: &[$($alias),*],
            family: Family::$family,
            description: $description,
            input_schema: schema::<$args>,
        }
    };
}

/// Every operation, by name.
pub const OPERATIONS: &[Spec] = &[
    spec!(
        "describe_all",
        [],
        Data,
        NoArgs,
        "Every database and table the caller may see, with attributes and record counts."
    ),
    spec!(
        "describe_database",
        ["describe_schema"],
        Data,
        DatabaseArgs,
        "The tables of one database the caller may see."
    ),
    spec!("describe_table", [], Data, TableArgs, "One table: primary key, attributes, record count."),
    spec!("create_database", ["create_schema"], Structure, DatabaseArgs, "Creates a database."),
    spec!(
        "drop_database",
        ["drop_schema"],
        Structure,
        DatabaseArgs,
        "Drops a database and every table in it."
    ),
    spec!(
        "create_table",
        [],
        Structure,
        CreateTableArgs,
        "Creates a table with a primary key and optional typed attributes."
    ),
    spec!("drop_table", [], Structure, TableArgs, "Drops a table and its records."),
    spec!("create_attribute", [], Structure, AttributeArgs, "Adds an attribute to a table."),
    spec!("drop_attribute", [], Structure, AttributeArgs, "Drops an attribute and its values."),
    spec!("insert", [], Data, WriteArgs, "Inserts records; a primary key that exists already is refused."),
    spec!(
        "update",
        [],
        Data,
        WriteArgs,
        "Updates records by primary key (the attributes given); missing ones are skipped."
    ),
    spec!("upsert", [], Data, WriteArgs, "Inserts records, or updates the ones whose primary key exists."),
    spec!("delete", [], Data, DeleteArgs, "Deletes records by primary key."),
    spec!("search_by_id", ["search_by_hash"], Data, SearchByIdArgs, "Records by primary key."),
    spec!(
        "search_by_value",
        [],
        Data,
        SearchByValueArgs,
        "Records whose attribute matches a value (`*` wildcards)."
    ),
    spec!(
        "search_by_conditions",
        [],
        Data,
        SearchByConditionsArgs,
        "Records matching conditions joined by and/or, paged."
    ),
    spec!("list_users", [], Admin, NoArgs, "Every user with its role."),
    spec!("add_user", [], Admin, AddUserArgs, "Adds a user with a role (no password: keys act for users)."),
    spec!("alter_user", [], Admin, AlterUserArgs, "Changes a user's role or whether it is active."),
    spec!("drop_user", [], Admin, UserArgs, "Drops a user and revokes its keys."),
    spec!("list_roles", [], Admin, NoArgs, "Every role with its permission tree."),
    spec!("add_role", [], Admin, AddRoleArgs, "Adds a role with a permission tree."),
    spec!("alter_role", [], Admin, AlterRoleArgs, "Renames a role or replaces its permission tree."),
    spec!("drop_role", [], Admin, RoleArgs, "Drops a role that no user has."),
    spec!("user_info", [], Own, NoArgs, "The caller: user name, role and permission tree."),
    spec!(
        "system_information",
        [],
        Lore,
        NoArgs,
        "Lore's version, database backend and application databases."
    ),
    spec!(
        "read_audit_log",
        [],
        Lore,
        ReadAuditLogArgs,
        "The audit log, newest first: every write and every operation call."
    ),
    spec!("list_sources", [], Lore, NoArgs, "The knowledge sources with their status."),
    spec!("get_job", [], Lore, JobArgs, "One indexing run with its progress."),
    spec!("list_keys", [], Lore, NoArgs, "The access keys with 7-day usage (never a raw key)."),
    spec!("list_profile_versions", [], Lore, NoArgs, "The profile's versions, the active one marked."),
    spec!("retrieve", [], Lore, RetrieveArgs, "Hybrid retrieval over the indexed content, with a trace."),
    spec!(
        "answer",
        [],
        Lore,
        AnswerArgs,
        "Answers a question from the indexed content, with citations and a trace; refuses when nothing retrievable answers."
    ),
    spec!("get_status", [], Lore, NoArgs, "Whether Lore can answer, check by check (the readiness verdict)."),
    spec!("search_jobs", [], Lore, SearchJobsArgs, "Recent indexing runs, newest first (of one source, if given)."),
    spec!(
        "add_source",
        [],
        Lore,
        AddSourceArgs,
        "Adds a knowledge source; a website's or a table's first sync is queued at once."
    ),
    spec!("sync_source", [], Lore, SyncSourceArgs, "Queues a sync of one source (or a full reindex of it)."),
    spec!(
        "start_index",
        [],
        Lore,
        StartIndexArgs,
        "Queues a sync of every enabled source, or a full reindex of everything (which re-stamps the corpus)."
    ),
    spec!("get_configuration", [], Admin, NoArgs, "Lore's effective configuration, secrets redacted."),
    spec!(
        "set_configuration",
        [],
        Admin,
        SetConfigurationArgs,
        "Persists settings (`\"section.key\": value`) in the data directory; they take effect at the next start (`restart`)."
    ),
    spec!("restart", [], Admin, NoArgs, "Restarts Lore gracefully: in-flight requests finish, the configuration is read again."),
    spec!("read_log", [], Admin, ReadLogArgs, "Lore's own log, newest lines first (the last 2,000 lines are kept)."),
    spec!(
        "get_metrics",
        [],
        Lore,
        NoArgs,
        "Counters since the start of records: answers per surface (queries, cache hits, refusals, spend) and indexing runs per status."
    ),
    spec!(
        "get_analytics",
        [],
        Lore,
        AnalyticsArgs,
        "The Dashboard's figures over the last `hours` (default 24): totals, series, funnel, top questions and content gaps."
    ),
];

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
            let caller = crate::keys::authenticate_held(lore, Some(raw), scope, origin).await?;
            let username = caller.user.ok_or(crate::keys::KeyError::NeedsUser(scope.key()))?;
            Ok((users::principal(lore, &username).await?, Some(caller.key_id)))
        }
        Credentials::Session(viewer) => {
            viewer.require_admin()?;
            Ok((Principal::Admin { account_id: viewer.account_id.clone() }, None))
        }
        Credentials::None => Err(crate::keys::KeyError::Missing.into()),
    }
}

/// What an operation returned: HarperDB-shaped JSON, or one of Lore's own
/// engine values for the edge to convert.
#[derive(Debug)]
pub enum Outcome {
    Json(Value),
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
        Ok(()) => run(lore, principal, spec, args).await,
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

async fn run(lore: &Lore, principal: &Principal, spec: &Spec, args: Map<String, Value>) -> Result<Outcome> {
    let permission = principal.permission();
    let actor = principal.actor();
    let json = |value: Value| Ok(Outcome::Json(value));
    match spec.name {
        "describe_all" => json(describe_all(lore, &permission).await?),
        "describe_database" => {
            let a: DatabaseArgs = parse(spec, args)?;
            let database = a.database_or_default();
            if !catalog::database_exists(&lore.db, &database).await? {
                return Err(AppDbError::UnknownDatabase(database).into());
            }
            json(Value::Object(described_tables(lore, &permission, &database).await?))
        }
        "describe_table" => {
            let a: TableArgs = parse(spec, args)?;
            let table = lore.appdb_cache().table(&lore.db, &a.database_or_default(), &a.table).await?;
            if !permission.sees_table(&table.database, &table.name) {
                return Err(AppDbError::denied("read", table.path()).into());
            }
            json(describe(&permission, &table, catalog::record_count(&lore.db, &table).await?))
        }
        "create_database" => {
            let a: DatabaseArgs = parse(spec, args)?;
            let database = a.database_or_default();
            structure(lore, &actor, "database.created", &database, |txn| {
                let database = database.clone();
                Box::pin(async move { catalog::create_database(txn, &database).await })
            })
            .await?;
            json(json!({"message": format!("database '{database}' successfully created")}))
        }
        "drop_database" => {
            let a: DatabaseArgs = parse(spec, args)?;
            let database = a.database.ok_or_else(|| AppDbError::MissingAttribute("database".into()))?;
            structure(lore, &actor, "database.dropped", &database, |txn| {
                let database = database.clone();
                Box::pin(async move { catalog::drop_database(txn, &database).await })
            })
            .await?;
            // The table sources on it find their tables gone.
            lore.table_writes().note_named(&database, crate::ingest::table::EVERY_TABLE);
            json(json!({"message": format!("successfully deleted '{database}'")}))
        }
        "create_table" => {
            let a: CreateTableArgs = parse(spec, args)?;
            let new = a.into_new_table()?;
            let path = format!("{}.{}", new.database, new.name);
            structure(lore, &actor, "table.created", &path, |txn| {
                Box::pin(async move { catalog::create_table(txn, new).await.map(|_| ()) })
            })
            .await?;
            json(json!({"message": format!("table '{path}' successfully created.")}))
        }
        "drop_table" => {
            let a: TableArgs = parse(spec, args)?;
            let database = a.database_or_default();
            let path = format!("{database}.{}", a.table);
            let table = a.table.clone();
            structure(lore, &actor, "table.dropped", &path, |txn| {
                let database = database.clone();
                Box::pin(async move { catalog::drop_table(txn, &database, &a.table).await })
            })
            .await?;
            lore.table_writes().note_named(&database, &table);
            json(json!({"message": format!("successfully deleted table '{path}'")}))
        }
        "create_attribute" | "drop_attribute" => {
            let a: AttributeArgs = parse(spec, args)?;
            let database = a.database_or_default();
            let path = format!("{database}.{}.{}", a.table, a.attribute);
            let create = spec.name == "create_attribute";
            let kind = a.kind.as_deref().map(AttrType::parse).transpose()?;
            let (noted_database, noted_table) = (database.clone(), a.table.clone());
            structure(
                lore,
                &actor,
                if create { "attribute.created" } else { "attribute.dropped" },
                &path,
                |txn| {
                    Box::pin(async move {
                        let mut table = catalog::table(txn, &database, &a.table).await?;
                        if create {
                            let attribute = Attribute {
                                indexed: a.indexed,
                                ..Attribute::new(&a.attribute, kind.unwrap_or(AttrType::Any))
                            };
                            catalog::add_attribute(txn, &mut table, attribute).await
                        } else {
                            catalog::drop_attribute(txn, &mut table, &a.attribute).await
                        }
                    })
                },
            )
            .await?;
            if !create {
                // The table sources reading it find it gone.
                lore.table_writes().note_named(&noted_database, &noted_table);
            }
            json(json!({"message": if create {
                format!("attribute '{path}' successfully created.")
            } else {
                format!("successfully deleted attribute '{}'", path.rsplit('.').next().unwrap_or_default())
            }}))
        }
        "insert" | "update" | "upsert" => {
            let a: WriteArgs = parse(spec, args)?;
            let mode = match spec.name {
                "insert" => WriteMode::Insert,
                "update" => WriteMode::Update,
                _ => WriteMode::Upsert,
            };
            let total = a.records.len();
            let txn = crate::store::begin_write(&lore.db).await?;
            let mut table = catalog::table(&txn, &a.database_or_default(), &a.table).await?;
            let attributes = table.attributes.len();
            let written = records::write(&txn, &permission, &mut table, a.records, mode).await?;
            txn.commit().await?;
            crate::resources::written(lore, &table, &written.done);
            if table.attributes.len() != attributes {
                lore.appdb_event(Event::SchemaReloaded);
            }
            json(write_response(spec.name, total, written))
        }
        "delete" => {
            let a: DeleteArgs = parse(spec, args)?;
            let total = a.ids.len();
            let txn = crate::store::begin_write(&lore.db).await?;
            let table = catalog::table(&txn, &a.database_or_default(), &a.table).await?;
            let written = records::delete(&txn, &permission, &table, a.ids).await?;
            txn.commit().await?;
            crate::resources::written(lore, &table, &written.done);
            json(json!({
                "message": format!("{} of {total} record{} successfully deleted", written.done.len(), if total == 1 { "" } else { "s" }),
                "deleted_hashes": written.done,
                "skipped_hashes": written.skipped,
            }))
        }
        "search_by_id" => {
            let a: SearchByIdArgs = parse(spec, args)?;
            let table = lore.appdb_cache().table(&lore.db, &a.database_or_default(), &a.table).await?;
            let found = records::by_ids(&lore.db, &permission, &table, &a.ids, &a.get_attributes).await?;
            json(Value::Array(found.into_iter().map(Value::Object).collect()))
        }
        "search_by_value" => {
            let a: SearchByValueArgs = parse(spec, args)?;
            let table = lore.appdb_cache().table(&lore.db, &a.database_or_default(), &a.table).await?;
            let search = Search {
                conditions: records::value_condition(&a.search_attribute, &a.search_value)
                    .into_iter()
                    .collect(),
                operator: Operator::And,
                get_attributes: a.get_attributes,
                limit: a.limit,
                offset: a.offset,
            };
            if search.conditions.is_empty() && table.attribute(&a.search_attribute).is_none() {
                return Err(
                    AppDbError::UnknownAttribute(format!("{}.{}", table.path(), a.search_attribute)).into()
                );
            }
            let found = records::search(&lore.db, &permission, &table, &search).await?;
            json(Value::Array(found.into_iter().map(Value::Object).collect()))
        }
        "search_by_conditions" => {
            let a: SearchByConditionsArgs = parse(spec, args)?;
            let table = lore.appdb_cache().table(&lore.db, &a.database_or_default(), &a.table).await?;
            let search = Search {
                conditions: a.conditions.into_iter().map(Criterion::from).collect(),
                operator: a.operator,
                get_attributes: a.get_attributes,
                limit: a.limit,
                offset: a.offset,
            };
            let found = records::search(&lore.db, &permission, &table, &search).await?;
            json(Value::Array(found.into_iter().map(Value::Object).collect()))
        }
        "list_users" => json(Value::Array(users::users(lore).await?.iter().map(user_json).collect())),
        "add_user" => {
            let a: AddUserArgs = parse(spec, args)?;
            let user = users::add_user(lore, &actor, &a.username, &a.role, a.active.unwrap_or(true)).await?;
            json(json!({"message": format!("{} successfully added", user.username)}))
        }
        "alter_user" => {
            let a: AlterUserArgs = parse(spec, args)?;
            let user = users::alter_user(lore, &actor, &a.username, a.role.as_deref(), a.active).await?;
            json(
                json!({"message": format!("{} successfully altered", user.username), "user": user_json(&user)}),
            )
        }
        "drop_user" => {
            let a: UserArgs = parse(spec, args)?;
            users::drop_user(lore, &actor, &a.username).await?;
            json(json!({"message": format!("{} successfully deleted", a.username)}))
        }
        "list_roles" => json(Value::Array(users::roles(lore).await?.iter().map(role_json).collect())),
        "add_role" => {
            let a: AddRoleArgs = parse(spec, args)?;
            json(role_json(&users::add_role(lore, &actor, &a.role, &a.permission).await?))
        }
        "alter_role" => {
            let a: AlterRoleArgs = parse(spec, args)?;
            json(role_json(
                &users::alter_role(lore, &actor, &a.id, a.role.as_deref(), a.permission.as_ref()).await?,
            ))
        }
        "drop_role" => {
            let a: RoleArgs = parse(spec, args)?;
            let role = users::drop_role(lore, &actor, &a.id).await?;
            json(json!({"message": format!("{} successfully deleted", role.name)}))
        }
        "user_info" => json(match principal {
            Principal::User(user) => user_json(user),
            Principal::Admin { account_id } => json!({
                "username": Value::Null, "account_id": account_id, "active": true,
                "role": {"role": "admin", "permission": Permission::super_user().to_json()},
            }),
        }),
        "system_information" => json(json!({
            "version": env!("CARGO_PKG_VERSION"),
            "database": match sea_orm::ConnectionTrait::get_database_backend(&lore.db) {
                sea_orm::DbBackend::Postgres => "postgresql",
                sea_orm::DbBackend::Sqlite => "sqlite",
                _ => "other",
            },
            "databases": catalog::databases(&lore.db).await?,
        })),
        "read_audit_log" => {
            let a: ReadAuditLogArgs = parse(spec, args)?;
            lore.recorder().flush().await?;
            let entries = audit::recent(&lore.db, a.limit.unwrap_or(100).min(1000), a.before).await?;
            json(Value::Array(
                entries
                    .into_iter()
                    .map(|e| {
                        json!({"id": e.id, "time": e.at.to_rfc3339(), "user": e.actor, "operation": e.action,
                                    "target": e.target, "details": e.details})
                    })
                    .collect(),
            ))
        }
        "list_sources" => Ok(Outcome::Sources(crate::ingest::lifecycle::overviews(lore).await?)),
        "get_job" => {
            let a: JobArgs = parse(spec, args)?;
            Ok(Outcome::Job(crate::ingest::jobs::job(lore, &a.id).await?))
        }
        "list_keys" => Ok(Outcome::Keys(crate::keys::list(lore).await?)),
        "list_profile_versions" => Ok(Outcome::ProfileVersions(crate::profile::versions(lore).await?)),
        "retrieve" => {
            let a: RetrieveArgs = parse(spec, args)?;
            Ok(Outcome::Retrieved(crate::search::retrieve(lore, &a.query, a.top_k).await?))
        }
        "answer" => {
            let a: AnswerArgs = parse(spec, args)?;
            let ask = crate::answer::Ask {
                question: a.question,
                surface: crate::answer::Surface::Api,
                key_id: None,
            };
            Ok(Outcome::Answer(Box::new(crate::answer::answer(lore, ask).await?)))
        }
        "get_status" => Ok(Outcome::Status(crate::readiness::assess(lore).await?)),
        "search_jobs" => {
            let a: SearchJobsArgs = parse(spec, args)?;
            let limit = a.limit.unwrap_or(50).clamp(1, 500);
            let rows = crate::ingest::jobs::recent(lore, a.source_id.as_deref(), limit).await?;
            Ok(Outcome::Jobs(rows.into_iter().map(crate::ingest::jobs::Job::decode).collect::<Result<_>>()?))
        }
        "add_source" => {
            let a: AddSourceArgs = parse(spec, args)?;
            let new = crate::sources::NewSource {
                name: a.name,
                kind: a.kind,
                config: a.config,
                volatility: a.volatility,
            };
            let added = crate::ingest::lifecycle::add_source(lore, &actor, new, "operation").await?;
            let overview = crate::ingest::lifecycle::overview(lore, added.source).await?;
            Ok(Outcome::Source(Box::new(overview)))
        }
        "sync_source" => {
            let a: SyncSourceArgs = parse(spec, args)?;
            let source = crate::sources::get(lore, &a.id).await?;
            Ok(Outcome::Job(
                crate::ingest::lifecycle::start_run(lore, Some(&source.id), a.full, "operation").await?,
            ))
        }
        "get_metrics" => {
            let answers: Vec<Value> = crate::metrics::totals_by_surface(lore)
                .await?
                .into_iter()
                .map(|(surface, sums)| {
                    json!({"surface": surface, "queries": sums.queries, "cache_hits": sums.cache_hits,
                           "refusals": sums.refusals, "spend_usd": sums.spend_usd, "savings_usd": sums.savings_usd})
                })
                .collect();
            let jobs: Map<String, Value> = crate::ingest::jobs::counts_by_status(lore)
                .await?
                .into_iter()
                .map(|(status, count)| (status, Value::from(count)))
                .collect();
            json(json!({"answers": answers, "jobs": jobs}))
        }
        "get_analytics" => {
            let a: AnalyticsArgs = parse(spec, args)?;
            let hours = a.hours.unwrap_or(24);
            if !(1..=24 * 400).contains(&hours) {
                return Err(crate::Error::InvalidInput("`hours` must be between 1 and 9600".into()));
            }
            let range = crate::metrics::Range::last_hours(chrono::Utc::now(), hours);
            Ok(Outcome::Analytics(Box::new(crate::metrics::dashboard(lore, range).await?)))
        }
        "set_configuration" => {
            let a: SetConfigurationArgs = parse(spec, args)?;
            json(set_configuration(lore, a.settings)?)
        }
        "restart" => {
            lore.request_restart();
            json(
                json!({"message": "Restarting: requests in flight finish first, then Lore starts again with its configuration read anew."}),
            )
        }
        "read_log" => {
            let a: ReadLogArgs = parse(spec, args)?;
            let lines =
                crate::logbook::recent(a.limit.unwrap_or(100).min(crate::logbook::KEPT), a.level.as_deref());
            json(Value::Array(
                lines
                    .into_iter()
                    .map(|l| json!({"time": l.at.to_rfc3339(), "level": l.level, "target": l.target, "message": l.message}))
                    .collect(),
            ))
        }
        "start_index" => {
            let a: StartIndexArgs = parse(spec, args)?;
            Ok(Outcome::Job(crate::ingest::lifecycle::start_run(lore, None, a.full, "operation").await?))
        }
        // Secrets serialize as `[redacted]`.
        "get_configuration" => json(
            serde_json::to_value(&*lore.settings).map_err(|err| crate::Error::Internal(err.to_string()))?,
        ),
        other => Err(crate::Error::Internal(format!("operation `{other}` is registered but has no handler"))),
    }
}

type Step<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + 'a>>;

/// A structure change in one transaction with its audit entry; fires the
/// schema-reload event once it is committed.
/// Merges `changes` into the overlay file (see
/// [`crate::settings::OVERLAY_FILE`]) once the whole overlay still reads as
/// settings; nothing is written otherwise. What changed, and that a
/// restart applies it.
fn set_configuration(lore: &Lore, changes: Map<String, Value>) -> Result<Value> {
    let invalid = |message: String| crate::Error::InvalidInput(message);
    if changes.is_empty() {
        return Err(invalid("name at least one setting, as `\"section.key\": value`".into()));
    }
    // The data directory may have been removed under a running Lore; the
    // saved configuration must still land, or say plainly why not.
    crate::store::ensure_dir("the data directory", &lore.settings.data_dir)?;
    let path = crate::settings::overlay_path(&lore.settings.data_dir);
    let mut overlay = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str::<Value>(&text)
            .map_err(|err| crate::Error::Internal(format!("{} cannot be read: {err}", path.display())))?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(source) => {
            return Err(crate::Error::Io { context: format!("reading {}", path.display()), source })
        }
    };
    let mut changed = Vec::with_capacity(changes.len());
    for (name, value) in changes {
        let parts: Vec<&str> = name.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(invalid(format!("`{name}` is not a setting's name (`section.key`)")));
        }
        if parts[0] == "data_dir" {
            return Err(invalid("`data_dir` cannot be set here: the saved configuration lives in it".into()));
        }
        let mut node = &mut overlay;
        for part in &parts[..parts.len() - 1] {
            if !node.get(*part).is_some_and(Value::is_object) {
                node[*part] = json!({});
            }
            node = &mut node[*part];
        }
        node[parts[parts.len() - 1]] = value;
        changed.push(name);
    }
    serde_json::from_value::<crate::Settings>(overlay.clone())
        .map_err(|err| invalid(format!("the configuration would not be valid: {err}")))?;
    let text =
        serde_json::to_string_pretty(&overlay).map_err(|err| crate::Error::Internal(err.to_string()))?;
    let temporary = path.with_extension("json.tmp");
    let io = |source| crate::Error::Io { context: format!("writing {}", path.display()), source };
    std::fs::write(&temporary, text).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    }
    std::fs::rename(&temporary, &path).map_err(io)?;
    Ok(json!({
        "message": "Configuration saved; restart Lore (the `restart` operation) for it to take effect.",
        "changed": changed,
        "restart_required": true,
    }))
}

async fn structure<F>(lore: &Lore, actor: &audit::Actor, action: &str, target: &str, change: F) -> Result<()>
where
    F: for<'t> FnOnce(&'t sea_orm::DatabaseTransaction) -> Step<'t>,
{
    let txn = crate::store::begin_write(&lore.db).await?;
    change(&txn).await?;
    audit::record(&txn, actor, action, Some(target), json!({})).await?;
    txn.commit().await?;
    lore.appdb_event(Event::SchemaReloaded);
    Ok(())
}

fn write_response(operation: &str, total: usize, written: Written) -> Value {
    let (verb, field) = match operation {
        "insert" => ("inserted", "inserted_hashes"),
        "update" => ("updated", "update_hashes"),
        _ => ("upserted", "upserted_hashes"),
    };
    let mut response = json!({
        "message": format!("{verb} {} of {total} records", written.done.len()),
        field: written.done,
    });
    if operation != "upsert" {
        response["skipped_hashes"] = json!(written.skipped);
    }
    response
}

async fn describe_all(lore: &Lore, permission: &Permission) -> Result<Value> {
    let tables = catalog::tables(&lore.db, None).await?;
    let mut described = described(lore, permission, &tables).await?;
    let mut all = Map::new();
    for database in catalog::databases(&lore.db).await? {
        let tables = described.remove(&database).unwrap_or_default();
        if !tables.is_empty() || permission.may_change_structure(&database) {
            all.insert(database, Value::Object(tables));
        }
    }
    Ok(Value::Object(all))
}

/// The tables of `database` the caller sees, each as `describe_table` shows it.
async fn described_tables(
    lore: &Lore,
    permission: &Permission,
    database: &str,
) -> Result<Map<String, Value>> {
    let tables = catalog::tables(&lore.db, Some(database)).await?;
    Ok(described(lore, permission, &tables).await?.remove(database).unwrap_or_default())
}

/// The tables the caller sees among `tables`, described, by database and
/// name; their records are counted together.
async fn described(
    lore: &Lore,
    permission: &Permission,
    tables: &[Table],
) -> Result<std::collections::HashMap<String, Map<String, Value>>> {
    let seen: Vec<&Table> =
        tables.iter().filter(|table| permission.sees_table(&table.database, &table.name)).collect();
    let counts = catalog::record_counts(&lore.db, &seen).await?;
    let mut by_database: std::collections::HashMap<String, Map<String, Value>> = Default::default();
    for (table, count) in seen.into_iter().zip(counts) {
        by_database
            .entry(table.database.clone())
            .or_default()
            .insert(table.name.clone(), describe(permission, table, count));
    }
    Ok(by_database)
}

/// A table as HarperDB's `describe_table` shows it, with the attributes the
/// caller may read (all of them for those who may change the structure).
fn describe(permission: &Permission, table: &Table, record_count: i64) -> Value {
    let structure = permission.may_change_structure(&table.database);
    let attributes: Vec<Value> = table
        .attributes
        .iter()
        .filter(|a| structure || permission.may_attribute(&table.database, &table.name, &a.name, crate::appdb::Access::Read))
        .map(|a| {
            let mut entry = json!({"attribute": a.name, "type": a.kind.name(), "nullable": a.nullable, "indexed": a.indexed});
            if a.name == table.primary_key {
                entry["is_primary_key"] = json!(true);
            }
            entry
        })
        .collect();
    json!({
        "schema": table.database,
        "database": table.database,
        "name": table.name,
        "hash_attribute": table.primary_key,
        "primary_key": table.primary_key,
        "schema_defined": table.origin == Origin::Schema,
        "attributes": attributes,
        "record_count": record_count,
    })
}

/// A role as HarperDB's `list_roles` shows it (also `lore roles --json`).
pub fn role_json(role: &Role) -> Value {
    json!({
        "id": role.id,
        "role": role.name,
        "permission": role.permission.to_json(),
        "__createdtime__": role.created_at.timestamp_millis(),
        "__updatedtime__": role.updated_at.timestamp_millis(),
    })
}

/// A user as HarperDB's `list_users` shows it (also `lore users --json`).
pub fn user_json(user: &User) -> Value {
    json!({
        "username": user.username,
        "active": user.active,
        "role": role_json(&user.role),
        "__createdtime__": user.created_at.timestamp_millis(),
        "__updatedtime__": user.updated_at.timestamp_millis(),
    })
}

// The arguments of each operation. Unknown fields are ignored, as HarperDB
// does; `schema` is HarperDB's older name of `database`.

#[derive(Deserialize, schemars::JsonSchema)]
pub struct NoArgs {}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DatabaseArgs {
    /// The database (`schema` also accepted); `data` when left out.
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
}

macro_rules! database_or_default {
    ($($args:ty),*) => {$(
        impl $args {
            fn database_or_default(&self) -> String {
                self.database.clone().unwrap_or_else(|| catalog::DEFAULT_DATABASE.to_owned())
            }
        }
    )*};
}

database_or_default!(
    DatabaseArgs,
    TableArgs,
    CreateTableArgs,
    AttributeArgs,
    WriteArgs,
    DeleteArgs,
    SearchByIdArgs,
    SearchByValueArgs,
    SearchByConditionsArgs
);

#[derive(Deserialize, schemars::JsonSchema)]
pub struct TableArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AttributeDeclaration {
    pub name: String,
    /// Int, Long, BigInt, Float, String, ID, Boolean, Date, Bytes, Blob, Object, Array.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub indexed: bool,
    #[serde(default)]
    pub nullable: Option<bool>,
    #[serde(default, alias = "isPrimaryKey")]
    pub is_primary_key: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CreateTableArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    /// The primary key's attribute (`hash_attribute` also accepted); `id` when left out.
    #[serde(default, alias = "hash_attribute")]
    pub primary_key: Option<String>,
    /// Typed attributes; a table without them takes attributes from the records it gets.
    #[serde(default)]
    pub attributes: Vec<AttributeDeclaration>,
}

impl CreateTableArgs {
    fn into_new_table(self) -> Result<NewTable> {
        let database = self.database_or_default();
        let declared_key = self.attributes.iter().find(|a| a.is_primary_key).map(|a| a.name.clone());
        let primary_key = self.primary_key.or(declared_key).unwrap_or_else(|| "id".to_owned());
        let mut attributes = Vec::with_capacity(self.attributes.len());
        for declared in &self.attributes {
            let kind = match declared.kind.as_deref() {
                Some(kind) => AttrType::parse(kind)?,
                None => AttrType::Any,
            };
            attributes.push(Attribute {
                name: declared.name.clone(),
                kind,
                nullable: declared.nullable.unwrap_or(true),
                indexed: declared.indexed,
                managed: None,
                computed: None,
            });
        }
        let origin = if attributes.is_empty() { Origin::Operation } else { Origin::Declared };
        Ok(NewTable {
            database,
            name: self.table,
            primary_key,
            attributes,
            origin,
            options: Default::default(),
        })
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AttributeArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    pub attribute: String,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub indexed: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct WriteArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    pub records: Vec<Value>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct DeleteArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    /// Primary keys (`hash_values` also accepted).
    #[serde(alias = "hash_values")]
    pub ids: Vec<Value>,
}

fn all_attributes() -> Vec<String> {
    vec!["*".to_owned()]
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchByIdArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    #[serde(alias = "hash_values")]
    pub ids: Vec<Value>,
    #[serde(default = "all_attributes")]
    pub get_attributes: Vec<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchByValueArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    pub search_attribute: String,
    /// The value; in text, `*` is a wildcard.
    pub search_value: Value,
    #[serde(default = "all_attributes")]
    pub get_attributes: Vec<String>,
    #[serde(default)]
    pub limit: Option<u64>,
    #[serde(default)]
    pub offset: Option<u64>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchByConditionsArgs {
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    pub table: String,
    #[serde(default)]
    pub operator: Operator,
    pub conditions: Vec<ConditionArgs>,
    #[serde(default = "all_attributes")]
    pub get_attributes: Vec<String>,
    #[serde(default)]
    pub limit: Option<u64>,
    #[serde(default)]
    pub offset: Option<u64>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AddUserArgs {
    pub username: String,
    /// The role's name (or id).
    pub role: String,
    #[serde(default)]
    pub active: Option<bool>,
    /// Accepted for HarperDB scripts and ignored: Lore users have no
    /// password (people sign in, programs use the user's keys).
    #[serde(default)]
    pub password: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AlterUserArgs {
    pub username: String,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub active: Option<bool>,
    /// Ignored (see add_user).
    #[serde(default)]
    pub password: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UserArgs {
    pub username: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AddRoleArgs {
    /// The role's name.
    pub role: String,
    /// The permission tree (super_user, structure_user, operations, per-database tables).
    pub permission: Value,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AlterRoleArgs {
    /// The role's id (or name).
    pub id: String,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub permission: Option<Value>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RoleArgs {
    /// The role's id (or name).
    pub id: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ReadAuditLogArgs {
    /// At most this many entries (100 by default, 1000 at most).
    #[serde(default)]
    pub limit: Option<u64>,
    /// Entries older than this entry id (for paging back).
    #[serde(default)]
    pub before: Option<i64>,
}

/// `set_configuration`'s arguments: every argument but `operation` is a
/// setting, named as in the configuration file with dots (`"answer.grounding_min_support": 0.6`).
#[derive(Deserialize, schemars::JsonSchema)]
pub struct SetConfigurationArgs {
    #[serde(flatten)]
    pub settings: Map<String, Value>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ReadLogArgs {
    /// At most this many lines (default 100).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only lines at this level or more severe: `error`, `warn`, `info`, `debug`, `trace`.
    #[serde(default)]
    pub level: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AnalyticsArgs {
    /// The last this many hours (1 to 9600; default 24).
    #[serde(default)]
    pub hours: Option<i64>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AnswerArgs {
    /// The question, in the asker's words.
    pub question: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchJobsArgs {
    /// Only this source's runs.
    #[serde(default)]
    pub source_id: Option<String>,
    /// At most this many (default 50, at most 500).
    #[serde(default)]
    pub limit: Option<u64>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct AddSourceArgs {
    pub name: String,
    /// `website`, `upload` or `table`.
    pub kind: String,
    /// A website's `{"start_url", "discovery", "include", "exclude", "max_pages", "max_depth"}`;
    /// a table's `{"database", "table", "title", "text" or "template", "url", "conditions", "operator"}`.
    #[serde(default)]
    pub config: Option<Value>,
    /// `static`, `low`, `medium` or `high`.
    #[serde(default)]
    pub volatility: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct StartIndexArgs {
    /// Re-embed everything instead of syncing what changed.
    #[serde(default)]
    pub full: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SyncSourceArgs {
    /// The source's id.
    pub id: String,
    /// Re-embed everything instead of syncing what changed.
    #[serde(default)]
    pub full: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct JobArgs {
    pub id: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RetrieveArgs {
    pub query: String,
    #[serde(default)]
    pub top_k: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_schemas_generate() {
        for spec in OPERATIONS {
            assert_eq!(OPERATIONS.iter().filter(|s| s.name == spec.name).count(), 1, "{}", spec.name);
            let schema = (spec.input_schema)();
            assert_eq!(schema["type"], "object", "{}: {schema}", spec.name);
        }
        assert_eq!(find("create_schema").map(|s| s.name), Some("create_database"));
        assert_eq!(find("search_by_hash").map(|s| s.name), Some("search_by_id"));
    }

    #[test]
    fn annotations_follow_the_spec_table() {
        let spec = |name| find(name).unwrap();
        assert!(spec("describe_all").read_only() && !spec("describe_all").destructive());
        assert!(spec("drop_table").destructive() && spec("delete").destructive());
        assert!(!spec("insert").read_only() && !spec("insert").destructive());
        assert!(spec("system_information").read_only());
    }

    #[test]
    fn the_operation_gate_reads_the_tree() {
        let data = find("search_by_id").unwrap();
        let structure = find("create_table").unwrap();
        let admin = find("add_role").unwrap();
        let harper_role = Permission::parse(&json!({"dev": {"tables": {"dog": {"read": true}}}})).unwrap();
        assert!(verify(&harper_role, data, Some("dev")).is_ok());
        assert!(verify(&harper_role, structure, Some("dev")).is_err());
        let listed = Permission::parse(&json!({"operations": ["describe_all"]})).unwrap();
        assert!(verify(&listed, data, Some("dev")).is_err());
        assert!(verify(&listed, find("describe_all").unwrap(), None).is_ok());
        let structure_user = Permission::parse(&json!({"structure_user": ["dev"]})).unwrap();
        assert!(verify(&structure_user, structure, Some("dev")).is_ok());
        assert!(verify(&structure_user, structure, Some("prod")).is_err());
        assert!(
            verify(&Permission::parse(&json!({"operations": ["add_role"]})).unwrap(), admin, None).is_err()
        );
        assert!(verify(&Permission::super_user(), admin, None).is_ok());
    }
}
