//! What each operation does, once `dispatch` has checked who may call it,
//! and the replies in HarperDB's shapes.

use super::*;

pub(super) async fn run(lore: &Lore, principal: &Principal, operation: Operation) -> Result<Outcome> {
    let permission = principal.permission();
    let actor = principal.actor();
    let json = |value: Value| Ok(Outcome::Json(value));
    match operation {
        Operation::DescribeAll(_) => json(describe_all(lore, &permission).await?),
        Operation::DescribeDatabase(a) => {
            let database = a.database_or_default();
            if !catalog::database_exists(&lore.db, &database).await? {
                return Err(AppDbError::UnknownDatabase(database).into());
            }
            json(Value::Object(described_tables(lore, &permission, &database).await?))
        }
        Operation::DescribeTable(a) => {
            let table = lore.appdb_cache().table(&lore.db, &a.database_or_default(), &a.table).await?;
            if !permission.sees_table(&table.database, &table.name) {
                return Err(AppDbError::denied("read", table.path()).into());
            }
            json(describe(&permission, &table, catalog::record_count(&lore.db, &table).await?))
        }
        Operation::CreateDatabase(a) => {
            let database = a.database_or_default();
            structure(lore, &actor, "database.created", &database, |txn| {
                let database = database.clone();
                Box::pin(async move { catalog::create_database(txn, &database).await })
            })
            .await?;
            json(json!({"message": format!("database '{database}' successfully created")}))
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
            json(json!({"message": format!("successfully deleted '{database}'")}))
        }
        Operation::CreateTable(a) => {
            let new = a.into_new_table()?;
            let path = format!("{}.{}", new.database, new.name);
            structure(lore, &actor, "table.created", &path, |txn| {
                Box::pin(async move { catalog::create_table(txn, new).await.map(|_| ()) })
            })
            .await?;
            json(json!({"message": format!("table '{path}' successfully created.")}))
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
            json(json!({"message": format!("successfully deleted table '{path}'")}))
        }
        Operation::CreateAttribute(a) => json(change_attribute(lore, &actor, a, true).await?),
        Operation::DropAttribute(a) => json(change_attribute(lore, &actor, a, false).await?),
        Operation::Insert(a) => json(write(lore, &permission, a, WriteMode::Insert).await?),
        Operation::Update(a) => json(write(lore, &permission, a, WriteMode::Update).await?),
        Operation::Upsert(a) => json(write(lore, &permission, a, WriteMode::Upsert).await?),
        Operation::Delete(a) => {
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
        Operation::SearchById(a) => {
            let table = lore.appdb_cache().table(&lore.db, &a.database_or_default(), &a.table).await?;
            let found = records::by_ids(&lore.db, &permission, &table, &a.ids, &a.get_attributes).await?;
            json(Value::Array(found.into_iter().map(Value::Object).collect()))
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
            json(Value::Array(found.into_iter().map(Value::Object).collect()))
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
            json(Value::Array(found.into_iter().map(Value::Object).collect()))
        }
        Operation::ListUsers(_) => {
            json(Value::Array(users::users(lore).await?.iter().map(user_json).collect()))
        }
        Operation::AddUser(a) => {
            let user = users::add_user(lore, &actor, &a.username, &a.role, a.active.unwrap_or(true)).await?;
            json(json!({"message": format!("{} successfully added", user.username)}))
        }
        Operation::AlterUser(a) => {
            let user = users::alter_user(lore, &actor, &a.username, a.role.as_deref(), a.active).await?;
            json(
                json!({"message": format!("{} successfully altered", user.username), "user": user_json(&user)}),
            )
        }
        Operation::DropUser(a) => {
            users::drop_user(lore, &actor, &a.username).await?;
            json(json!({"message": format!("{} successfully deleted", a.username)}))
        }
        Operation::ListRoles(_) => {
            json(Value::Array(users::roles(lore).await?.iter().map(role_json).collect()))
        }
        Operation::AddRole(a) => {
            json(role_json(&users::add_role(lore, &actor, &a.role, &a.permission).await?))
        }
        Operation::AlterRole(a) => json(role_json(
            &users::alter_role(lore, &actor, &a.id, a.role.as_deref(), a.permission.as_ref()).await?,
        )),
        Operation::DropRole(a) => {
            let role = users::drop_role(lore, &actor, &a.id).await?;
            json(json!({"message": format!("{} successfully deleted", role.name)}))
        }
        Operation::UserInfo(_) => json(match principal {
            Principal::User(user) => user_json(user),
            Principal::Admin { account_id } => json!({
                "username": Value::Null, "account_id": account_id, "active": true,
                "role": {"role": "admin", "permission": Permission::super_user().to_json()},
            }),
        }),
        Operation::SystemInformation(_) => json(json!({
            "version": env!("CARGO_PKG_VERSION"),
            "database": match sea_orm::ConnectionTrait::get_database_backend(&lore.db) {
                sea_orm::DbBackend::Postgres => "postgresql",
                sea_orm::DbBackend::Sqlite => "sqlite",
                _ => "other",
            },
            "databases": catalog::databases(&lore.db).await?,
        })),
        Operation::ReadAuditLog(a) => {
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
        Operation::ListSources(_) => Ok(Outcome::Sources(crate::ingest::lifecycle::overviews(lore).await?)),
        Operation::GetJob(a) => Ok(Outcome::Job(crate::ingest::jobs::job(lore, &a.id).await?)),
        Operation::ListKeys(_) => Ok(Outcome::Keys(crate::keys::list(lore).await?)),
        Operation::ListProfileVersions(_) => {
            Ok(Outcome::ProfileVersions(crate::profile::versions(lore).await?))
        }
        Operation::Retrieve(a) => {
            Ok(Outcome::Retrieved(crate::search::traced_retrieval(lore, &a.query, a.top_k).await?))
        }
        Operation::Answer(a) => {
            let ask = crate::answer::Ask {
                question: a.question,
                surface: crate::answer::Surface::Api,
                key_id: None,
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
            };
            let added = crate::ingest::lifecycle::add_source(lore, &actor, new, "operation").await?;
            let overview = crate::ingest::lifecycle::overview(lore, added.source).await?;
            Ok(Outcome::Source(Box::new(overview)))
        }
        Operation::SyncSource(a) => {
            let source = crate::sources::get(lore, &a.id).await?;
            Ok(Outcome::Job(
                crate::ingest::lifecycle::start_run(lore, Some(&source.id), a.full, "operation").await?,
            ))
        }
        Operation::GetMetrics(_) => {
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
        Operation::GetAnalytics(a) => {
            let hours = a.hours.unwrap_or(24);
            if !(1..=24 * 400).contains(&hours) {
                return Err(crate::Error::InvalidInput("`hours` must be between 1 and 9600".into()));
            }
            let range = crate::metrics::Range::last_hours(chrono::Utc::now(), hours);
            Ok(Outcome::Analytics(Box::new(crate::metrics::dashboard(lore, range).await?)))
        }
        Operation::SetConfiguration(a) => json(set_configuration(lore, a.settings)?),
        Operation::Restart(_) => {
            lore.request_restart();
            json(
                json!({"message": "Restarting: requests in flight finish first, then Lore starts again with its configuration read anew."}),
            )
        }
        Operation::ReadLog(a) => {
            let lines =
                crate::logbook::recent(a.limit.unwrap_or(100).min(crate::logbook::KEPT), a.level.as_deref());
            json(Value::Array(
                lines
                    .into_iter()
                    .map(|l| json!({"time": l.at.to_rfc3339(), "level": l.level, "target": l.target, "message": l.message}))
                    .collect(),
            ))
        }
        Operation::StartIndex(a) => {
            Ok(Outcome::Job(crate::ingest::lifecycle::start_run(lore, None, a.full, "operation").await?))
        }
        // Secrets serialize as `[redacted]`.
        Operation::GetConfiguration(_) => json(
            serde_json::to_value(&*lore.settings).map_err(|err| crate::Error::Internal(err.to_string()))?,
        ),
    }
}

/// `create_attribute` (`create`) or `drop_attribute`.
async fn change_attribute(
    lore: &Lore,
    actor: &audit::Actor,
    a: AttributeArgs,
    create: bool,
) -> Result<Value> {
    let database = a.database_or_default();
    let path = format!("{database}.{}.{}", a.table, a.attribute);
    let kind = a.kind.as_deref().map(AttrType::parse).transpose()?;
    let (noted_database, noted_table) = (database.clone(), a.table.clone());
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
    Ok(json!({"message": if create {
        format!("attribute '{path}' successfully created.")
    } else {
        format!("successfully deleted attribute '{}'", path.rsplit('.').next().unwrap_or_default())
    }}))
}

/// `insert`, `update` or `upsert`, as `mode` says.
async fn write(lore: &Lore, permission: &Permission, a: WriteArgs, mode: WriteMode) -> Result<Value> {
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
    Ok(write_response(mode, total, written))
}

pub(super) type Step<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + 'a>>;

/// A structure change in one transaction with its audit entry; fires the
/// schema-reload event once it is committed.
/// Merges `changes` into the overlay file (see
/// [`crate::settings::OVERLAY_FILE`]) once the whole overlay still reads as
/// settings; nothing is written otherwise. What changed, and that a
/// restart applies it.
pub(super) fn set_configuration(lore: &Lore, changes: Map<String, Value>) -> Result<Value> {
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

pub(super) fn write_response(mode: WriteMode, total: usize, written: Written) -> Value {
    let (verb, field) = match mode {
        WriteMode::Insert => ("inserted", "inserted_hashes"),
        WriteMode::Update => ("updated", "update_hashes"),
        WriteMode::Upsert => ("upserted", "upserted_hashes"),
    };
    let mut response = json!({
        "message": format!("{verb} {} of {total} records", written.done.len()),
        field: written.done,
    });
    if mode != WriteMode::Upsert {
        response["skipped_hashes"] = json!(written.skipped);
    }
    response
}

pub(super) async fn describe_all(lore: &Lore, permission: &Permission) -> Result<Value> {
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
pub(super) async fn described_tables(
    lore: &Lore,
    permission: &Permission,
    database: &str,
) -> Result<Map<String, Value>> {
    let tables = catalog::tables(&lore.db, Some(database)).await?;
    Ok(described(lore, permission, &tables).await?.remove(database).unwrap_or_default())
}

/// The tables the caller sees among `tables`, described, by database and
/// name; their records are counted together.
pub(super) async fn described(
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
pub(super) fn describe(permission: &Permission, table: &Table, record_count: i64) -> Value {
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
