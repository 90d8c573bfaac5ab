//! The operations API (`POST /operation`): its request is
//! `{"operation": name, ...args}`, read by the engine itself (each
//! operation's arguments are typed there, HarperDB-compatible), and its
//! response is what the operation returns: HarperDB's shapes for the
//! application database, and for Lore's own operations the same views the
//! console shows.

use serde::{Deserialize, Serialize};

/// What applying the schema file did (`lore schema apply --json`), by
/// `database.table`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaAppliedView {
    pub created: Vec<String>,
    pub changed: Vec<String>,
    pub unchanged: Vec<String>,
}

#[cfg(feature = "ssr")]
impl From<engine::appdb::schema::Applied> for SchemaAppliedView {
    fn from(applied: engine::appdb::schema::Applied) -> Self {
        Self { created: applied.created, changed: applied.changed, unchanged: applied.unchanged }
    }
}

#[cfg(feature = "ssr")]
mod from_engine {
    use serde_json::{Map, Value};

    use super::{
        AttributeDescription, AuditEntryView, LogLineView, MessageView, RoleRow, SystemInformationView,
        TableDescription, UserRow,
    };
    use crate::wire::{
        AnswerResponse, JobView, KeyView, ObservabilityResponse, ProfileVersionView, RetrieveResponse,
        SetupState, SourceView,
    };
    use engine::appdb::records::{WriteMode, Written};
    use engine::appdb::users::{Principal, Role, User};
    use engine::operations::{Described, Done, Outcome};

    fn to_json<T: serde::Serialize>(value: T) -> Result<Value, engine::Error> {
        serde_json::to_value(value).map_err(|err| engine::Error::Internal(err.to_string()))
    }

    /// An operation's result as its response body: HarperDB's shapes for
    /// the application database's operations, the console's views for
    /// Lore's own.
    pub fn operation_response(outcome: Outcome) -> Result<Value, engine::Error> {
        match outcome {
            Outcome::Done(done) => to_json(MessageView { message: message(&done) }),
            Outcome::Written { mode, total, written } => Ok(written_response(mode, total, written)),
            Outcome::Deleted { total, written } => {
                let plural = if total == 1 { "" } else { "s" };
                let mut body = Map::new();
                body.insert(
                    "message".into(),
                    format!("{} of {total} record{plural} successfully deleted", written.done.len()).into(),
                );
                body.insert("deleted_hashes".into(), Value::Array(written.done));
                body.insert("skipped_hashes".into(), Value::Array(written.skipped));
                Ok(Value::Object(body))
            }
            Outcome::Records(records) => Ok(Value::Array(records.into_iter().map(Value::Object).collect())),
            Outcome::Table(table) => to_json(TableDescription::from(table)),
            Outcome::Tables(tables) => Ok(Value::Object(by_name(tables)?)),
            Outcome::Databases(databases) => {
                let mut all = Map::new();
                for (database, tables) in databases {
                    all.insert(database, Value::Object(by_name(tables)?));
                }
                Ok(Value::Object(all))
            }
            Outcome::Users(users) => to_json(users.iter().map(UserRow::from).collect::<Vec<_>>()),
            Outcome::UserAltered(user) => {
                let mut body = Map::new();
                body.insert("message".into(), format!("{} successfully altered", user.username).into());
                body.insert("user".into(), to_json(UserRow::from(&user))?);
                Ok(Value::Object(body))
            }
            Outcome::Roles(roles) => to_json(roles.iter().map(RoleRow::from).collect::<Vec<_>>()),
            Outcome::Role(role) => to_json(RoleRow::from(&role)),
            Outcome::Caller(Principal::User(user)) => to_json(UserRow::from(&user)),
            Outcome::Caller(Principal::Admin { account_id }) => {
                let mut role = Map::new();
                role.insert("role".into(), "admin".into());
                role.insert("permission".into(), engine::appdb::Permission::super_user().to_json());
                let mut body = Map::new();
                body.insert("username".into(), Value::Null);
                body.insert("account_id".into(), account_id.into());
                body.insert("active".into(), true.into());
                body.insert("role".into(), Value::Object(role));
                Ok(Value::Object(body))
            }
            Outcome::System(system) => to_json(SystemInformationView {
                version: system.version.to_owned(),
                database: system.backend.to_owned(),
                databases: system.databases,
            }),
            Outcome::AuditLog(entries) => {
                to_json(entries.into_iter().map(AuditEntryView::from).collect::<Vec<_>>())
            }
            Outcome::Log(lines) => to_json(lines.into_iter().map(LogLineView::from).collect::<Vec<_>>()),
            Outcome::Metrics(metrics) => {
                let answers: Vec<Value> = metrics
                    .answers
                    .into_iter()
                    .map(|(surface, sums)| {
                        let mut row = Map::new();
                        row.insert("surface".into(), surface.into());
                        row.insert("queries".into(), sums.queries.into());
                        row.insert("cache_hits".into(), sums.cache_hits.into());
                        row.insert("refusals".into(), sums.refusals.into());
                        row.insert("spend_usd".into(), sums.spend_usd.into());
                        row.insert("savings_usd".into(), sums.savings_usd.into());
                        Value::Object(row)
                    })
                    .collect();
                let jobs: Map<String, Value> =
                    metrics.jobs.into_iter().map(|(status, count)| (status, Value::from(count))).collect();
                let mut body = Map::new();
                body.insert("answers".into(), Value::Array(answers));
                body.insert("jobs".into(), Value::Object(jobs));
                Ok(Value::Object(body))
            }
            Outcome::Configuration(settings) => to_json(&*settings),
            Outcome::ConfigurationSaved(changed) => {
                let mut body = Map::new();
                body.insert(
                    "message".into(),
                    "Configuration saved; restart Lore (the `restart` operation) for it to take effect."
                        .into(),
                );
                body.insert("changed".into(), changed.into());
                body.insert("restart_required".into(), true.into());
                Ok(Value::Object(body))
            }
            Outcome::Sources(sources) => {
                to_json(sources.into_iter().map(SourceView::from).collect::<Vec<_>>())
            }
            Outcome::Job(job) => to_json(JobView::from(job)),
            Outcome::Keys(keys) => to_json(keys.into_iter().map(KeyView::from).collect::<Vec<_>>()),
            Outcome::ProfileVersions(versions) => to_json(
                versions.into_iter().map(ProfileVersionView::try_from).collect::<Result<Vec<_>, _>>()?,
            ),
            Outcome::Retrieved(traced) => to_json(RetrieveResponse::from(traced)),
            Outcome::Answer(answer) => to_json(AnswerResponse::from(*answer)),
            Outcome::Status(state) => to_json(SetupState::from(state)),
            Outcome::Jobs(jobs) => to_json(jobs.into_iter().map(JobView::from).collect::<Vec<_>>()),
            Outcome::Source(overview) => to_json(SourceView::from(*overview)),
            Outcome::Analytics(dashboard) => to_json(ObservabilityResponse::from(*dashboard)),
        }
    }

    /// HarperDB's message for a change done.
    fn message(done: &Done) -> String {
        match done {
            Done::DatabaseCreated(database) => format!("database '{database}' successfully created"),
            Done::DatabaseDropped(database) => format!("successfully deleted '{database}'"),
            Done::TableCreated(path) => format!("table '{path}' successfully created."),
            Done::TableDropped(path) => format!("successfully deleted table '{path}'"),
            Done::AttributeCreated(path) => format!("attribute '{path}' successfully created."),
            Done::AttributeDropped(name) => format!("successfully deleted attribute '{name}'"),
            Done::UserAdded(username) => format!("{username} successfully added"),
            Done::UserDropped(username) => format!("{username} successfully deleted"),
            Done::RoleDropped(role) => format!("{role} successfully deleted"),
            Done::Restarting => {
                "Restarting: requests in flight finish first, then Lore starts again with its \
                                 configuration read anew."
                    .to_owned()
            }
        }
    }

    /// `insert`, `update` and `upsert` as HarperDB answers them: the keys
    /// written under a field named for the verb, and (but for `upsert`)
    /// the keys skipped.
    fn written_response(mode: WriteMode, total: usize, written: Written) -> Value {
        let (verb, field) = match mode {
            WriteMode::Insert => ("inserted", "inserted_hashes"),
            WriteMode::Update => ("updated", "update_hashes"),
            WriteMode::Upsert => ("upserted", "upserted_hashes"),
        };
        let mut body = Map::new();
        body.insert("message".into(), format!("{verb} {} of {total} records", written.done.len()).into());
        body.insert(field.into(), Value::Array(written.done));
        if mode != WriteMode::Upsert {
            body.insert("skipped_hashes".into(), Value::Array(written.skipped));
        }
        Value::Object(body)
    }

    /// Tables by name, in the order given.
    fn by_name(tables: Vec<Described>) -> Result<Map<String, Value>, engine::Error> {
        let mut named = Map::new();
        for table in tables {
            named.insert(table.name.clone(), to_json(TableDescription::from(table))?);
        }
        Ok(named)
    }

    impl From<Described> for TableDescription {
        fn from(table: Described) -> Self {
            let attributes = table
                .attributes
                .into_iter()
                .map(|a| AttributeDescription {
                    is_primary_key: a.name == table.primary_key,
                    kind: a.kind.name().to_owned(),
                    attribute: a.name,
                    nullable: a.nullable,
                    indexed: a.indexed,
                })
                .collect();
            Self {
                schema: table.database.clone(),
                database: table.database,
                name: table.name,
                hash_attribute: table.primary_key.clone(),
                primary_key: table.primary_key,
                schema_defined: table.schema_defined,
                attributes,
                record_count: table.record_count,
            }
        }
    }

    impl From<&Role> for RoleRow {
        fn from(role: &Role) -> Self {
            Self {
                id: role.id.clone(),
                role: role.name.clone(),
                permission: role.permission.to_json(),
                created_time: role.created_at.timestamp_millis(),
                updated_time: role.updated_at.timestamp_millis(),
            }
        }
    }

    impl From<&User> for UserRow {
        fn from(user: &User) -> Self {
            Self {
                username: user.username.clone(),
                active: user.active,
                role: RoleRow::from(&user.role),
                created_time: user.created_at.timestamp_millis(),
                updated_time: user.updated_at.timestamp_millis(),
            }
        }
    }

    impl From<engine::audit::Entry> for AuditEntryView {
        fn from(entry: engine::audit::Entry) -> Self {
            Self {
                id: entry.id,
                time: entry.at.to_rfc3339(),
                user: entry.actor,
                operation: entry.action,
                target: entry.target,
                details: entry.details,
            }
        }
    }

    impl From<engine::logbook::Line> for LogLineView {
        fn from(line: engine::logbook::Line) -> Self {
            Self { time: line.at.to_rfc3339(), level: line.level, target: line.target, message: line.message }
        }
    }
}

#[cfg(feature = "ssr")]
pub use from_engine::operation_response;

/// The reply of an operation that changed something and says so.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageView {
    pub message: String,
}

/// A table as `describe_table` shows it (HarperDB's shape: `schema` and
/// `hash_attribute` are the older names of `database` and `primary_key`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableDescription {
    pub schema: String,
    pub database: String,
    pub name: String,
    pub hash_attribute: String,
    pub primary_key: String,
    pub schema_defined: bool,
    pub attributes: Vec<AttributeDescription>,
    pub record_count: i64,
}

/// One attribute of a [`TableDescription`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttributeDescription {
    pub attribute: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub nullable: bool,
    pub indexed: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_primary_key: bool,
}

/// `system_information`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SystemInformationView {
    pub version: String,
    /// `postgresql` or `sqlite`.
    pub database: String,
    pub databases: Vec<String>,
}

/// One entry of `read_audit_log`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditEntryView {
    pub id: i64,
    pub time: String,
    pub user: String,
    pub operation: String,
    pub target: Option<String>,
    pub details: serde_json::Value,
}

/// One line of `read_log`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogLineView {
    pub time: String,
    pub level: String,
    pub target: String,
    pub message: String,
}

/// A role as the operations API lists it (`list_roles`, `add_role`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoleRow {
    pub id: String,
    pub role: String,
    pub permission: serde_json::Value,
    /// When it was created, in milliseconds since the epoch.
    #[serde(rename = "__createdtime__", default)]
    pub created_time: i64,
    #[serde(rename = "__updatedtime__", default)]
    pub updated_time: i64,
}

/// A user as the operations API lists it (`list_users`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserRow {
    pub username: String,
    pub active: bool,
    pub role: RoleRow,
    #[serde(rename = "__createdtime__", default)]
    pub created_time: i64,
    #[serde(rename = "__updatedtime__", default)]
    pub updated_time: i64,
}

/// A page of a REST search under `/data/` (`next_cursor` when there is more).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DataPage {
    pub records: Vec<serde_json::Map<String, serde_json::Value>>,
    pub next_cursor: Option<String>,
}

/// The reply to a REST create under `/data/`: the new record's primary key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CreatedView {
    pub id: serde_json::Value,
}
