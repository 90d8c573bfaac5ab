//! What each operation does, once `dispatch` has checked who may call it:
//! engine values, which the edge renders in HarperDB's shapes.

use super::*;
use crate::asker::Asker;

pub(super) async fn run(lore: &Lore, principal: &Principal, operation: Operation) -> Result<Outcome> {
    let permission = principal.permission();
    let actor = principal.actor();
    let done = |done: Done| Ok(Outcome::Done(done));
    match operation {
        Operation::DescribeAll(_) => Ok(Outcome::Databases(describe_all(lore, &permission).await?)),
        Operation::DescribeDatabase(a) => {
            let database = a.database_or_default();
            if !catalog::database_exists(&lore.db, &database).await? {
                return Err(AppDbError::UnknownDatabase(database).into());
            }
            Ok(Outcome::Tables(described_tables(lore, &permission, &database).await?))
        }
        Operation::DescribeTable(a) => {
            let table = lore.appdb_cache().table(&lore.db, &a.database_or_default(), &a.table).await?;
            if !permission.sees_table(&table.database, &table.name) {
                return Err(AppDbError::denied("read", table.path()).into());
            }
            Ok(Outcome::Table(describe(&permission, &table, catalog::record_count(&lore.db, &table).await?)))
        }
        Operation::CreateDatabase(a) => {
            let database = a.database_or_default();
            structure(lore, &actor, "database.created", &database, |txn| {
                let database = database.clone();
                Box::pin(async move { catalog::create_database(txn, &database).await })
            })
            .await?;
            done(Done::DatabaseCreated(database))
        }
        Operation::DropDatabase(a) => {
            let database = a.database.ok_or_else(|| AppDbError::MissingAttribute("database".into()))?;
            structure(lore, &actor, "database.dropped", &database, |txn| {
                let database = database.clone();
                Box::pin(async move { catalog::drop_database(txn, &database).await })
            })
            .await?;
            // The table sources on it find their tables gone.
            lore.table_writes().note_named(&database, crate::ingest::table::EVERY_TABLE);
            done(Done::DatabaseDropped(database))
        }
        Operation::CreateTable(a) => {
            let new = a.into_new_table()?;
            let path = format!("{}.{}", new.database, new.name);
            structure(lore, &actor, "table.created", &path, |txn| {
                Box::pin(async move { catalog::create_table(txn, new).await.map(|_| ()) })
            })
            .await?;
            done(Done::TableCreated(path))
        }
        Operation::DropTable(a) => {
            let database = a.database_or_default();
            let path = format!("{database}.{}", a.table);
            let table = a.table.clone();
            structure(lore, &actor, "table.dropped", &path, |txn| {
                let database = database.clone();
                Box::pin(async move { catalog::drop_table(txn, &database, &a.table).await })
            })
            .await?;
            lore.table_writes().note_named(&database, &table);
            done(Done::TableDropped(path))
        }
        Operation::CreateAttribute(a) => done(change_attribute(lore, &actor, a, true).await?),
        Operation::DropAttribute(a) => done(change_attribute(lore, &actor, a, false).await?),
        Operation::Insert(a) => write(lore, &permission, a, WriteMode::Insert).await,
        Operation::Update(a) => write(lore, &permission, a, WriteMode::Update).await,
        Operation::Upsert(a) => write(lore, &permission, a, WriteMode::Upsert).await,
        Operation::Delete(a) => {
            let total = a.ids.len();
            let txn = crate::store::begin_write(&lore.db).await?;
            let table = catalog::table(&txn, &a.database_or_default(), &a.table).await?;
            let written = records::delete(&txn, &permission, &table, a.ids).await?;
            txn.commit().await?;
            crate::resources::written(lore, &table, &written.done);
            Ok(Outcome::Deleted { total, written })
        }
        Operation::SearchById(a) => {
            let table = lore.appdb_cache().table(&lore.db, &a.database_or_default(), &a.table).await?;
            let found = records::by_ids(&lore.db, &permission, &table, &a.ids, &a.get_attributes).await?;
            Ok(Outcome::Records(found))
        }
        Operation::SearchByValue(a) => {
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
            Ok(Outcome::Records(found))
        }
        Operation::SearchByConditions(a) => {
            let table = lore.appdb_cache().table(&lore.db, &a.database_or_default(), &a.table).await?;
            let search = Search {
                conditions: a.conditions.into_iter().map(Criterion::from).collect(),
                operator: a.operator,
                get_attributes: a.get_attributes,
                limit: a.limit,
                offset: a.offset,
            };
            let found = records::search(&lore.db, &permission, &table, &search).await?;
            Ok(Outcome::Records(found))
        }
        Operation::ListUsers(_) => Ok(Outcome::Users(users::users(lore).await?)),
        Operation::AddUser(a) => {
            let user = users::add_user(lore, &actor, &a.username, &a.role, a.active.unwrap_or(true)).await?;
            done(Done::UserAdded(user.username))
        }
        Operation::AlterUser(a) => {
            let user = users::alter_user(lore, &actor, &a.username, a.role.as_deref(), a.active).await?;
            Ok(Outcome::UserAltered(user))
        }
        Operation::DropUser(a) => {
            crate::asker::drop_user(lore, &actor, &a.username).await?;
            done(Done::UserDropped(a.username))
        }
        Operation::ListRoles(_) => Ok(Outcome::Roles(users::roles(lore).await?)),
        Operation::AddRole(a) => {
            Ok(Outcome::Role(crate::asker::add_role(lore, &actor, &a.role, &a.permission).await?))
        }
        Operation::AlterRole(a) => Ok(Outcome::Role(
            crate::asker::alter_role(lore, &actor, &a.id, a.role.as_deref(), a.permission.as_ref()).await?,
        )),
        Operation::DropRole(a) => {
            let role = crate::asker::drop_role(lore, &actor, &a.id).await?;
            done(Done::RoleDropped(role.name))
        }
        Operation::UserInfo(_) => Ok(Outcome::Caller(principal.clone())),
        Operation::SystemInformation(_) => Ok(Outcome::System(SystemInformation {
            version: env!("CARGO_PKG_VERSION"),
            backend: match sea_orm::ConnectionTrait::get_database_backend(&lore.db) {
                sea_orm::DbBackend::Postgres => "postgresql",
                sea_orm::DbBackend::Sqlite => "sqlite",
                _ => "other",
            },
            databases: catalog::databases(&lore.db).await?,
        })),
        Operation::ReadAuditLog(a) => {
            lore.recorder().flush().await?;
            Ok(Outcome::AuditLog(audit::recent(&lore.db, a.limit.unwrap_or(100).min(1000), a.before).await?))
        }
        Operation::ListSources(_) => Ok(Outcome::Sources(crate::ingest::lifecycle::overviews(lore).await?)),
        Operation::GetJob(a) => Ok(Outcome::Job(crate::ingest::jobs::job(lore, &a.id).await?)),
        Operation::ListKeys(_) => Ok(Outcome::Keys(crate::keys::list(lore).await?)),
        Operation::ListProfileVersions(_) => {
            Ok(Outcome::ProfileVersions(crate::profile::versions(lore).await?))
        }
        Operation::Retrieve(a) => Ok(Outcome::Retrieved(
            crate::asker::retrieve(lore, &Asker::Principal(principal.clone()), &a.query, a.top_k).await?,
        )),
        Operation::Answer(a) => {
            let ask = crate::answer::Ask {
                question: a.question,
                surface: crate::answer::Surface::Api,
                key_id: None,
                asker: Asker::Principal(principal.clone()),
                by: crate::answer::feedback::Asked::of_caller(None, Some(principal)),
            };
            Ok(Outcome::Answer(Box::new(crate::answer::answer(lore, ask).await?)))
        }
        Operation::GetStatus(_) => Ok(Outcome::Status(crate::readiness::assess(lore).await?)),
        Operation::SearchJobs(a) => {
            let limit = a.limit.unwrap_or(50).clamp(1, 500);
            Ok(Outcome::Jobs(crate::ingest::jobs::recent(lore, a.source_id.as_deref(), limit).await?))
        }
        Operation::AddSource(a) => {
            let new = crate::sources::NewSource {
                name: a.name,
                kind: a.kind,
                config: a.config,
                volatility: a.volatility,
                audience: a.audience.map(AudienceArg::written),
            };
            let added = crate::ingest::lifecycle::add_source(lore, &actor, new, "operation").await?;
            let overview = crate::ingest::lifecycle::overview(lore, added.source).await?;
            Ok(Outcome::Source(Box::new(overview)))
        }
        Operation::AlterSource(a) => {
            let source = crate::sources::set_audience(lore, &actor, &a.id, &a.audience.written()).await?;
            let overview = crate::ingest::lifecycle::overview(lore, source).await?;
            Ok(Outcome::Source(Box::new(overview)))
        }
        Operation::SyncSource(a) => {
            let source = crate::sources::get(lore, &a.id).await?;
            Ok(Outcome::Job(
                crate::ingest::lifecycle::start_run(lore, Some(&source.id), a.full, "operation").await?,
            ))
        }
        Operation::GetMetrics(_) => Ok(Outcome::Metrics(Metrics {
            answers: crate::metrics::totals_by_surface(lore).await?,
            jobs: crate::ingest::jobs::counts_by_status(lore).await?,
        })),
        Operation::GetAnalytics(a) => {
            let hours = a.hours.unwrap_or(24);
            if !(1..=24 * 400).contains(&hours) {
                return Err(crate::Error::InvalidInput("`hours` must be between 1 and 9600".into()));
            }
            let range = crate::metrics::Range::last_hours(chrono::Utc::now(), hours);
            let reader = crate::sources::Reader::of(principal);
            let analytics = crate::metrics::analytics(lore, &reader, range, a.audience.as_deref()).await?;
            Ok(Outcome::Analytics(Box::new(analytics)))
        }
        Operation::SetConfiguration(a) => {
            Ok(Outcome::ConfigurationSaved(set_configuration(lore, a.settings)?))
        }
        Operation::Restart(_) => {
            lore.request_restart();
            done(Done::Restarting)
        }
        Operation::ReadLog(a) => {
            let limit = a.limit.unwrap_or(100).min(crate::logbook::KEPT);
            Ok(Outcome::Log(crate::logbook::recent(limit, a.level.as_deref())))
        }
        Operation::StartIndex(a) => {
            Ok(Outcome::Job(crate::ingest::lifecycle::start_run(lore, None, a.full, "operation").await?))
        }
        Operation::GetConfiguration(_) => Ok(Outcome::Configuration(lore.settings.clone())),
    }
}

/// `create_attribute` (`create`) or `drop_attribute`.
async fn change_attribute(lore: &Lore, actor: &audit::Actor, a: AttributeArgs, create: bool) -> Result<Done> {
    let database = a.database_or_default();
    let path = format!("{database}.{}.{}", a.table, a.attribute);
    let kind = a.kind.as_deref().map(AttrType::parse).transpose()?;
    let (noted_database, noted_table, attribute) = (database.clone(), a.table.clone(), a.attribute.clone());
    structure(lore, actor, if create { "attribute.created" } else { "attribute.dropped" }, &path, |txn| {
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
    })
    .await?;
    if !create {
        // The table sources reading it find it gone.
        lore.table_writes().note_named(&noted_database, &noted_table);
    }
    Ok(if create { Done::AttributeCreated(path) } else { Done::AttributeDropped(attribute) })
}

/// `insert`, `update` or `upsert`, as `mode` says.
async fn write(lore: &Lore, permission: &Permission, a: WriteArgs, mode: WriteMode) -> Result<Outcome> {
    let total = a.records.len();
    let txn = crate::store::begin_write(&lore.db).await?;
    let mut table = catalog::table(&txn, &a.database_or_default(), &a.table).await?;
    let attributes = table.attributes.len();
    let written = records::write(&txn, permission, &mut table, a.records, mode).await?;
    txn.commit().await?;
    crate::resources::written(lore, &table, &written.done);
    if table.attributes.len() != attributes {
        lore.appdb_event(Event::SchemaReloaded);
    }
    Ok(Outcome::Written { mode, total, written })
}

pub(super) type Step<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + 'a>>;

/// A structure change in one transaction with its audit entry; fires the
/// schema-reload event once it is committed.
/// Merges `changes` into the overlay file (see
/// [`crate::settings::OVERLAY_FILE`]) once the whole overlay still reads as
/// settings; nothing is written otherwise. What changed, and that a
/// restart applies it.
pub(super) fn set_configuration(lore: &Lore, changes: Map<String, Value>) -> Result<Vec<String>> {
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
    Ok(changed)
}

pub(super) async fn structure<F>(
    lore: &Lore,
    actor: &audit::Actor,
    action: &str,
    target: &str,
    change: F,
) -> Result<()>
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

pub(super) async fn describe_all(
    lore: &Lore,
    permission: &Permission,
) -> Result<Vec<(String, Vec<Described>)>> {
    let tables = catalog::tables(&lore.db, None).await?;
    let mut described = described(lore, permission, &tables).await?;
    let mut all = Vec::new();
    for database in catalog::databases(&lore.db).await? {
        let tables = described.remove(&database).unwrap_or_default();
        if !tables.is_empty() || permission.may_change_structure(&database) {
            all.push((database, tables));
        }
    }
    Ok(all)
}

/// The tables of `database` the caller sees, each as `describe_table` shows it.
pub(super) async fn described_tables(
    lore: &Lore,
    permission: &Permission,
    database: &str,
) -> Result<Vec<Described>> {
    let tables = catalog::tables(&lore.db, Some(database)).await?;
    Ok(described(lore, permission, &tables).await?.remove(database).unwrap_or_default())
}

/// The tables the caller sees among `tables`, described, by database (in
/// the order of `tables`); their records are counted together.
pub(super) async fn described(
    lore: &Lore,
    permission: &Permission,
    tables: &[Table],
) -> Result<std::collections::HashMap<String, Vec<Described>>> {
    let seen: Vec<&Table> =
        tables.iter().filter(|table| permission.sees_table(&table.database, &table.name)).collect();
    let counts = catalog::record_counts(&lore.db, &seen).await?;
    let mut by_database: std::collections::HashMap<String, Vec<Described>> = Default::default();
    for (table, count) in seen.into_iter().zip(counts) {
        by_database.entry(table.database.clone()).or_default().push(describe(permission, table, count));
    }
    Ok(by_database)
}

/// A table as `describe_table` shows it to this caller: the attributes it
/// may read (all of them for those who may change the structure).
pub(super) fn describe(permission: &Permission, table: &Table, record_count: i64) -> Described {
    let structure = permission.may_change_structure(&table.database);
    let attributes = table
        .attributes
        .iter()
        .filter(|a| {
            structure
                || permission.may_attribute(&table.database, &table.name, &a.name, crate::appdb::Access::Read)
        })
        .cloned()
        .collect();
    Described {
        database: table.database.clone(),
        name: table.name.clone(),
        primary_key: table.primary_key.clone(),
        schema_defined: table.origin == Origin::Schema,
        attributes,
        record_count,
    }
}
