//! Records of application tables: writes and searches, with the caller's
//! table and attribute permissions applied on every call.
//!
//! Values cross as JSON and are stored in the attribute's column type:
//! integers as 64-bit integers (`Int` within 32 bits), `Float` as double,
//! `Date` as an RFC 3339 UTC string (a number in is epoch milliseconds),
//! `Bytes`/`Blob` as bytes (base64 on the wire), `Object`/`Array` as JSON
//! text. A value of the wrong type is refused naming the attribute.
//!
//! Reads drop the attributes the caller may not read; naming one, in
//! `get_attributes` or a condition, is refused. Writes are refused when the
//! table or any written attribute is not writable for the caller, or when a
//! record sets a column Lore manages. A duplicate primary key on insert is
//! refused (and nothing of the batch is written); an update of a record
//! that does not exist is skipped, as in HarperDB.

use base64::Engine as _;
use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use sea_orm::sea_query::{Alias, Condition, Expr, Query, SimpleExpr};
use sea_orm::{ConnectionTrait, DbBackend, QueryResult};
use serde_json::{Map, Value};

use super::catalog::{self, AttrType, Attribute, Managed, Table};
use super::permission::{Access, Permission};
use super::schema_file::Computed;
use super::AppDbError;
use crate::Result;

/// A record as JSON.
pub type Record = Map<String, Value>;

/// What a write did, by primary key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Written {
    pub done: Vec<Value>,
    pub skipped: Vec<Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    Insert,
    Update,
    Upsert,
}

/// A search condition's comparison (HarperDB's `search_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchType {
    Equals,
    NotEqual,
    Contains,
    StartsWith,
    EndsWith,
    GreaterThan,
    GreaterThanEqual,
    LessThan,
    LessThanEqual,
    Between,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Criterion {
    pub attribute: String,
    pub search_type: SearchType,
    pub value: Value,
}

/// A condition as HarperDB's `search_by_conditions` writes it (and a table
/// source's configuration stores it).
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
pub struct ConditionArgs {
    pub search_attribute: String,
    pub search_type: SearchType,
    pub search_value: Value,
}

impl From<ConditionArgs> for Criterion {
    fn from(c: ConditionArgs) -> Self {
        Criterion { attribute: c.search_attribute, search_type: c.search_type, value: c.search_value }
    }
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    #[default]
    And,
    Or,
}

/// A search: conditions joined by `operator`, the attributes to return
/// (`*` for every readable one), a page.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Search {
    pub conditions: Vec<Criterion>,
    pub operator: Operator,
    pub get_attributes: Vec<String>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// Writes `records` to `table` as `mode` says, growing the table by the
/// attributes a record brings when it may (see the module docs).
pub async fn write(
    conn: &impl ConnectionTrait,
    permission: &Permission,
    table: &mut Table,
    records: Vec<Value>,
    mode: WriteMode,
) -> Result<Written> {
    super::system::refuse_change(&table.database)?;
    let needs: &[Access] = match mode {
        WriteMode::Insert => &[Access::Insert],
        WriteMode::Update => &[Access::Update],
        WriteMode::Upsert => &[Access::Insert, Access::Update],
    };
    for access in needs {
        if !permission.may(&table.database, &table.name, *access) {
            return Err(AppDbError::denied(access.key(), table.path()).into());
        }
    }
    let mut parsed = Vec::with_capacity(records.len());
    for (at, record) in records.into_iter().enumerate() {
        let Value::Object(record) = record else {
            return Err(AppDbError::Invalid(format!("records[{at}] must be an object")).into());
        };
        grow(conn, permission, table, &record).await?;
        for (name, _) in record.iter() {
            let attribute = table
                .attribute(name)
                .ok_or_else(|| AppDbError::UnknownAttribute(format!("{}.{name}", table.path())))?;
            if attribute.managed.is_some() || attribute.computed.is_some() {
                return Err(
                    AppDbError::Invalid(format!("`{name}` is set by Lore and cannot be written")).into()
                );
            }
            if name == &table.primary_key && mode != WriteMode::Insert {
                continue;
            }
            for access in needs {
                if !permission.may_attribute(&table.database, &table.name, name, *access) {
                    return Err(AppDbError::denied(access.key(), format!("{}.{name}", table.path())).into());
                }
            }
        }
        parsed.push(record);
    }
    let key = table.key().clone();
    let mut keyed = Vec::with_capacity(parsed.len());
    for mut record in parsed {
        let id = match record.get(&key.name).filter(|v| !v.is_null()) {
            Some(id) => id.clone(),
            None if mode == WriteMode::Update => {
                return Err(AppDbError::MissingAttribute(key.name.clone()).into())
            }
            None if matches!(key.kind, AttrType::Any | AttrType::String | AttrType::ID) => {
                let id = Value::String(uuid::Uuid::new_v4().to_string());
                record.insert(key.name.clone(), id.clone());
                id
            }
            None => return Err(AppDbError::MissingAttribute(key.name.clone()).into()),
        };
        keyed.push((sql_value(&key, &id)?, id, record));
    }
    let now = Utc::now();
    // An expired record is gone: its key may be used again.
    sweep_expired(conn, table, now).await?;
    let existing = existing_keys(conn, table, keyed.iter().map(|(sql, _, _)| sql.clone()).collect()).await?;
    let mut written = Written::default();
    let mut inserts = Vec::new();
    for (sql, id, record) in keyed {
        let exists = existing.contains(&sql);
        match (mode, exists) {
            (WriteMode::Insert, true) => {
                return Err(AppDbError::DuplicateKey { table: table.path(), key: id.to_string() }.into())
            }
            (WriteMode::Update, false) => written.skipped.push(id),
            (WriteMode::Update | WriteMode::Upsert, true) => {
                update_one(conn, table, &sql, &record, now).await?;
                written.done.push(id);
            }
            (WriteMode::Insert | WriteMode::Upsert, false) => {
                if inserts.iter().any(|(other, _): &(sea_orm::Value, Record)| other == &sql) {
                    return Err(AppDbError::DuplicateKey { table: table.path(), key: id.to_string() }.into());
                }
                inserts.push((sql, record));
                written.done.push(id);
            }
        }
    }
    insert_all(conn, table, inserts.into_iter().map(|(_, record)| record).collect(), now).await?;
    Ok(written)
}

/// Deletes the records with these primary keys; the ones not found are
/// reported as skipped.
pub async fn delete(
    conn: &impl ConnectionTrait,
    permission: &Permission,
    table: &Table,
    ids: Vec<Value>,
) -> Result<Written> {
    super::system::refuse_change(&table.database)?;
    if !permission.may(&table.database, &table.name, Access::Delete) {
        return Err(AppDbError::denied("delete", table.path()).into());
    }
    let key = table.key();
    let mut sql = Vec::with_capacity(ids.len());
    for id in &ids {
        sql.push(sql_value(key, id)?);
    }
    let existing = existing_keys(conn, table, sql.clone()).await?;
    let mut written = Written::default();
    for (value, id) in sql.iter().zip(ids) {
        if existing.contains(value) {
            written.done.push(id);
        } else {
            written.skipped.push(id);
        }
    }
    if !existing.is_empty() {
        let statement = Query::delete()
            .from_table(Alias::new(&table.sql_name))
            .and_where(Expr::col(Alias::new(&key.name)).is_in(existing))
            .to_owned();
        conn.execute(conn.get_database_backend().build(&statement)).await?;
    }
    Ok(written)
}

/// The records with these primary keys (HarperDB's `search_by_id`), in the
/// order asked; keys not found are left out.
pub async fn by_ids(
    conn: &impl ConnectionTrait,
    permission: &Permission,
    table: &Table,
    ids: &[Value],
    get_attributes: &[String],
) -> Result<Vec<Record>> {
    let key = table.key().clone();
    let mut wanted = Vec::with_capacity(ids.len());
    for id in ids {
        wanted.push(sql_value(&key, id)?);
    }
    let columns = readable(permission, table, get_attributes)?;
    let mut select = Query::select();
    select.from(Alias::new(&table.sql_name));
    let mut selected = selected_columns(table, &columns);
    if !selected.iter().any(|a| a.name == key.name) {
        selected.push(key.clone());
    }
    for attribute in &selected {
        select.column(Alias::new(&attribute.name));
    }
    select.and_where(Expr::col(Alias::new(&key.name)).is_in(wanted.clone()));
    if let Some(live) = catalog::live(table, Utc::now()) {
        select.and_where(live);
    }
    let rows = conn.query_all(conn.get_database_backend().build(&select)).await?;
    let mut found = Vec::with_capacity(rows.len());
    for row in rows {
        let id = sql_value(&key, &read_value(&row, &key)?)?;
        found.push((id, decode_row(&row, table, &selected, &columns, get_attributes)?));
    }
    Ok(wanted
        .iter()
        .filter_map(|id| found.iter().find(|(key, _)| key == id).map(|(_, record)| record.clone()))
        .collect())
}

/// The records matching a search, ordered by primary key.
pub async fn search(
    conn: &impl ConnectionTrait,
    permission: &Permission,
    table: &Table,
    search: &Search,
) -> Result<Vec<Record>> {
    let columns = readable(permission, table, &search.get_attributes)?;
    let backend = conn.get_database_backend();
    // No condition selects every record, whichever the operator ("any of
    // none" would otherwise select nothing).
    let mut filter = match search.operator {
        Operator::Or if !search.conditions.is_empty() => Condition::any(),
        _ => Condition::all(),
    };
    for condition in &search.conditions {
        let attribute = table.attribute(&condition.attribute).ok_or_else(|| {
            AppDbError::UnknownAttribute(format!("{}.{}", table.path(), condition.attribute))
        })?;
        if !permission.may_attribute(&table.database, &table.name, &attribute.name, Access::Read) {
            return Err(AppDbError::denied("read", format!("{}.{}", table.path(), attribute.name)).into());
        }
        if attribute.computed.is_some() {
            return Err(AppDbError::Invalid(format!(
                "`{}` is computed: a search cannot filter by it",
                attribute.name
            ))
            .into());
        }
        filter = filter.add(condition_expr(backend, attribute, condition)?);
    }
    let mut select = Query::select();
    select.from(Alias::new(&table.sql_name));
    let selected = selected_columns(table, &columns);
    for attribute in &selected {
        select.column(Alias::new(&attribute.name));
    }
    select.cond_where(filter);
    if let Some(live) = catalog::live(table, Utc::now()) {
        select.and_where(live);
    }
    order_by_key(&mut select, table);
    match (search.limit, search.offset) {
        (Some(limit), offset) => {
            select.limit(limit);
            if let Some(offset) = offset {
                select.offset(offset);
            }
        }
        (None, Some(offset)) => {
            select.limit(i64::MAX as u64).offset(offset);
        }
        (None, None) => {}
    }
    let rows = conn.query_all(backend.build(&select)).await?;
    rows.iter().map(|row| decode_row(row, table, &selected, &columns, &search.get_attributes)).collect()
}

/// Deletes the records of `table` that expired by `now`; how many.
pub async fn sweep_expired(conn: &impl ConnectionTrait, table: &Table, now: DateTime<Utc>) -> Result<u64> {
    let Some(expires) = table.expires_at() else {
        return Ok(0);
    };
    let statement = Query::delete()
        .from_table(Alias::new(&table.sql_name))
        .and_where(Expr::col(Alias::new(&expires.name)).lte(catalog::time_value(expires, now)))
        .to_owned();
    Ok(conn.execute(conn.get_database_backend().build(&statement)).await?.rows_affected())
}

/// Sweeps every table with expiring records, once a minute, until `stop`
/// turns true. A failed sweep is logged and tried again next time.
pub async fn keep_sweeping(lore: crate::Corpus, mut stop: tokio::sync::watch::Receiver<bool>) {
    let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = stop.changed() => {}
        }
        if *stop.borrow() {
            return;
        }
        match sweep_all(&lore.db).await {
            Ok(0) => {}
            Ok(swept) => tracing::debug!(swept, "expired application records swept"),
            Err(err) => tracing::warn!(error = %err, "sweeping expired application records failed"),
        }
    }
}

/// Sweeps every table that has an `@expiresAt` attribute; how many records went.
pub async fn sweep_all(conn: &impl ConnectionTrait) -> Result<u64> {
    let now = Utc::now();
    let mut swept = 0;
    for table in catalog::tables(conn, None).await? {
        swept += sweep_expired(conn, &table, now).await?;
    }
    Ok(swept)
}

/// The stored columns a read must select to return `columns`: those of
/// them with a column, or every stored one when a computed attribute is
/// asked for (its expression reads them).
fn selected_columns(table: &Table, columns: &[Attribute]) -> Vec<Attribute> {
    if columns.iter().any(|a| a.computed.is_some()) {
        table.stored().cloned().collect()
    } else {
        columns.to_vec()
    }
}

/// A computed attribute's expression, parsed from the catalog.
fn expression(attribute: &Attribute) -> Result<Option<Computed>> {
    match &attribute.computed {
        None => Ok(None),
        Some(source) => Computed::parse(source).map(Some).map_err(|why| {
            crate::Error::Internal(format!(
                "the stored expression of `{}` cannot be read: {why}",
                attribute.name
            ))
        }),
    }
}

/// Orders by primary key. A key of type `Any` holds JSON text: numbers
/// first, by value, then strings (what HarperDB's key order does).
fn order_by_key(select: &mut sea_orm::sea_query::SelectStatement, table: &Table) {
    use sea_orm::sea_query::Order;
    let key = table.key();
    if key.kind == AttrType::Any {
        let q = format!("\"{}\"", key.name);
        select
            .order_by_expr(
                Expr::cust(format!("CASE WHEN substr({q}, 1, 1) = '\"' THEN 1 ELSE 0 END")),
                Order::Asc,
            )
            .order_by_expr(
                Expr::cust(format!(
                    "CASE WHEN substr({q}, 1, 1) <> '\"' THEN CAST({q} AS DOUBLE PRECISION) END"
                )),
                Order::Asc,
            );
    }
    select.order_by(Alias::new(&key.name), Order::Asc);
}

/// The attributes a read returns: every readable one for `*` (or none
/// named), else the named ones, each of which must exist and be readable.
fn readable(permission: &Permission, table: &Table, get_attributes: &[String]) -> Result<Vec<Attribute>> {
    if !permission.may(&table.database, &table.name, Access::Read) {
        let any = permission
            .table(&table.database, &table.name)
            .is_some_and(|p| p.attribute_permissions.iter().any(|a| a.read));
        if !any {
            return Err(AppDbError::denied("read", table.path()).into());
        }
    }
    // A computed attribute is readable when it and everything it reads are.
    let mut unreadable = Vec::new();
    for attribute in &table.attributes {
        let may = |name: &str| permission.may_attribute(&table.database, &table.name, name, Access::Read);
        let inputs_readable = match expression(attribute)? {
            Some(computed) => computed.inputs().iter().all(|input| may(input)),
            None => true,
        };
        if !may(&attribute.name) || !inputs_readable {
            unreadable.push(attribute.name.clone());
        }
    }
    let may = |name: &str| !unreadable.iter().any(|u| u == name);
    if get_attributes.is_empty() || get_attributes.iter().any(|a| a == "*") {
        return Ok(table.attributes.iter().filter(|a| may(&a.name)).cloned().collect());
    }
    let mut columns = Vec::with_capacity(get_attributes.len());
    for name in get_attributes {
        let attribute = table
            .attribute(name)
            .ok_or_else(|| AppDbError::UnknownAttribute(format!("{}.{name}", table.path())))?;
        if !may(name) {
            return Err(AppDbError::denied("read", format!("{}.{name}", table.path())).into());
        }
        if !columns.iter().any(|a: &Attribute| a.name == attribute.name) {
            columns.push(attribute.clone());
        }
    }
    Ok(columns)
}

/// One row as the record a read returns: the `selected` columns read,
/// computed attributes evaluated over them in declared order, then the
/// `columns` asked for.
fn decode_row(
    row: &QueryResult,
    table: &Table,
    selected: &[Attribute],
    columns: &[Attribute],
    get_attributes: &[String],
) -> Result<Record> {
    let everything = get_attributes.is_empty() || get_attributes.iter().any(|a| a == "*");
    let mut values = Map::new();
    for attribute in selected {
        values.insert(attribute.name.clone(), read_value(row, attribute)?);
    }
    if columns.iter().any(|a| a.computed.is_some()) {
        for attribute in &table.attributes {
            if let Some(computed) = expression(attribute)? {
                let value = computed.eval(&values);
                values.insert(attribute.name.clone(), value);
            }
        }
    }
    let mut record = Map::new();
    for attribute in columns {
        let value = values.get(&attribute.name).cloned().unwrap_or(Value::Null);
        // `*` returns what a record holds; a named attribute is always there.
        if !(everything && value.is_null()) {
            record.insert(attribute.name.clone(), value);
        }
    }
    Ok(record)
}

/// Adds the attributes a record brings to a table that grows, typed by
/// their values; changing the structure needs the structure permission.
async fn grow(
    conn: &impl ConnectionTrait,
    permission: &Permission,
    table: &mut Table,
    record: &Record,
) -> Result<()> {
    for (name, value) in record {
        if table.attribute(name).is_some() {
            continue;
        }
        if !table.grows() {
            return Err(AppDbError::UnknownAttribute(format!("{}.{name}", table.path())).into());
        }
        if !permission.may_change_structure(&table.database) {
            return Err(
                AppDbError::denied("add attributes to", format!("{} (`{name}`)", table.path())).into()
            );
        }
        let kind = AttrType::of_value(value).unwrap_or(AttrType::Any);
        catalog::add_attribute(conn, table, Attribute::new(name, kind)).await?;
    }
    Ok(())
}

async fn existing_keys(
    conn: &impl ConnectionTrait,
    table: &Table,
    keys: Vec<sea_orm::Value>,
) -> Result<Vec<sea_orm::Value>> {
    let key = table.key();
    let mut found = Vec::new();
    // Bounded IN lists: both databases cap a statement's parameters.
    for chunk in keys.chunks(1000) {
        let select = Query::select()
            .column(Alias::new(&key.name))
            .from(Alias::new(&table.sql_name))
            .and_where(Expr::col(Alias::new(&key.name)).is_in(chunk.to_vec()))
            .to_owned();
        for row in conn.query_all(conn.get_database_backend().build(&select)).await? {
            found.push(sql_value(key, &read_value(&row, key)?)?);
        }
    }
    Ok(found)
}

/// The value a managed attribute gets on a write at `now`: the time for
/// the created and updated stamps, `now` plus the table's expiration for
/// `@expiresAt` (none when the table sets no expiration).
fn stamp(table: &Table, attribute: &Attribute, now: DateTime<Utc>) -> Result<sea_orm::Value> {
    match attribute.managed {
        Some(Managed::ExpiresAt) => match table.options.expiration {
            Some(seconds) => {
                let seconds = i64::try_from(seconds).unwrap_or(i64::MAX);
                let at = now
                    .checked_add_signed(chrono::Duration::seconds(seconds))
                    .unwrap_or(DateTime::<Utc>::MAX_UTC);
                Ok(catalog::time_value(attribute, at))
            }
            None => sql_value(&Attribute { nullable: true, ..attribute.clone() }, &Value::Null),
        },
        _ => Ok(catalog::time_value(attribute, now)),
    }
}

async fn insert_all(
    conn: &impl ConnectionTrait,
    table: &Table,
    records: Vec<Record>,
    now: DateTime<Utc>,
) -> Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let columns: Vec<&Attribute> = table.stored().collect();
    let mut rows = Vec::with_capacity(records.len());
    for record in &records {
        let mut row = Vec::with_capacity(columns.len());
        for attribute in &columns {
            let value = match (attribute.managed, record.get(&attribute.name)) {
                (Some(_), _) => stamp(table, attribute, now)?,
                (None, Some(value)) => sql_value(attribute, value)?,
                (None, None) if !attribute.nullable => {
                    return Err(
                        AppDbError::MissingAttribute(format!("{}.{}", table.path(), attribute.name)).into()
                    )
                }
                (None, None) => sql_value(attribute, &Value::Null)?,
            };
            row.push(value);
        }
        rows.push(row);
    }
    // Both databases cap a statement's parameters (SQLite at 32,766).
    let per_statement = (30_000 / columns.len().max(1)).max(1);
    for chunk in rows.chunks(per_statement) {
        let mut insert = Query::insert();
        insert.into_table(Alias::new(&table.sql_name)).columns(columns.iter().map(|a| Alias::new(&a.name)));
        for row in chunk {
            insert
                .values(row.iter().cloned().map(SimpleExpr::from))
                .map_err(|err| crate::Error::Internal(err.to_string()))?;
        }
        conn.execute(conn.get_database_backend().build(&insert)).await?;
    }
    Ok(())
}

async fn update_one(
    conn: &impl ConnectionTrait,
    table: &Table,
    key: &sea_orm::Value,
    record: &Record,
    now: DateTime<Utc>,
) -> Result<()> {
    let mut update = Query::update();
    update.table(Alias::new(&table.sql_name));
    for (name, value) in record {
        if name == &table.primary_key {
            continue;
        }
        let attribute = table
            .attribute(name)
            .ok_or_else(|| AppDbError::UnknownAttribute(format!("{}.{name}", table.path())))?;
        if value.is_null() && !attribute.nullable {
            return Err(AppDbError::MissingAttribute(format!("{}.{name}", table.path())).into());
        }
        update.value(Alias::new(name), sql_value(attribute, value)?);
    }
    // A write keeps a record alive for another expiration period.
    for attribute in table
        .attributes
        .iter()
        .filter(|a| matches!(a.managed, Some(Managed::UpdatedTime | Managed::ExpiresAt)))
    {
        update.value(Alias::new(&attribute.name), stamp(table, attribute, now)?);
    }
    if update.get_values().is_empty() {
        return Ok(());
    }
    update.and_where(Expr::col(Alias::new(&table.primary_key)).eq(key.clone()));
    conn.execute(conn.get_database_backend().build(&update)).await?;
    Ok(())
}

fn mismatch(attribute: &Attribute, expected: &str) -> crate::Error {
    AppDbError::TypeMismatch { attribute: attribute.name.clone(), expected: expected.to_owned() }.into()
}

/// A JSON value as the attribute's column holds it; a value of another type
/// is refused naming the attribute.
pub fn sql_value(attribute: &Attribute, value: &Value) -> Result<sea_orm::Value> {
    use sea_orm::Value as S;
    if value.is_null() && attribute.kind != AttrType::Any {
        if !attribute.nullable {
            return Err(AppDbError::MissingAttribute(attribute.name.clone()).into());
        }
        return Ok(match attribute.kind {
            AttrType::Int | AttrType::Long | AttrType::BigInt => S::BigInt(None),
            AttrType::Float => S::Double(None),
            AttrType::Boolean => S::Bool(None),
            AttrType::Bytes | AttrType::Blob => S::Bytes(None),
            _ => S::String(None),
        });
    }
    Ok(match attribute.kind {
        AttrType::Int => {
            let n = integer(value)
                .filter(|n| i32::try_from(*n).is_ok())
                .ok_or_else(|| mismatch(attribute, "a 32-bit integer"))?;
            n.into()
        }
        AttrType::Long | AttrType::BigInt => {
            integer(value).ok_or_else(|| mismatch(attribute, "an integer"))?.into()
        }
        AttrType::Float => value.as_f64().ok_or_else(|| mismatch(attribute, "a number"))?.into(),
        AttrType::String => value.as_str().ok_or_else(|| mismatch(attribute, "a string"))?.to_owned().into(),
        AttrType::ID => match value {
            Value::String(s) => s.clone().into(),
            Value::Number(n) => n.to_string().into(),
            _ => return Err(mismatch(attribute, "a string or a number")),
        },
        AttrType::Boolean => value.as_bool().ok_or_else(|| mismatch(attribute, "true or false"))?.into(),
        AttrType::Date => date(value)
            .ok_or_else(|| mismatch(attribute, "a date (RFC 3339 text or epoch milliseconds)"))?
            .into(),
        AttrType::Bytes | AttrType::Blob => {
            let text = value.as_str().ok_or_else(|| mismatch(attribute, "base64 text"))?;
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|_| mismatch(attribute, "base64 text"))?
                .into()
        }
        AttrType::Object if value.is_object() => value.to_string().into(),
        AttrType::Object => return Err(mismatch(attribute, "an object")),
        AttrType::Array if value.is_array() => value.to_string().into(),
        AttrType::Array => return Err(mismatch(attribute, "an array")),
        AttrType::Any if attribute.nullable || value.is_string() || value.is_number() => {
            value.to_string().into()
        }
        AttrType::Any => return Err(mismatch(attribute, "a string or a number")),
    })
}

fn integer(value: &Value) -> Option<i64> {
    value
        .as_i64()
        .or_else(|| value.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15).map(|f| f as i64))
}

fn date(value: &Value) -> Option<String> {
    let parsed: DateTime<Utc> = match value {
        Value::Number(n) => {
            Utc.timestamp_millis_opt(n.as_i64().or_else(|| n.as_f64().map(|f| f as i64))?).single()?
        }
        Value::String(s) => DateTime::parse_from_rfc3339(s).ok()?.with_timezone(&Utc),
        _ => return None,
    };
    Some(parsed.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// One column of a row back to JSON.
fn read_value(row: &QueryResult, attribute: &Attribute) -> Result<Value> {
    let name = attribute.name.as_str();
    let corrupt =
        |why: String| crate::Error::Internal(format!("the stored value of `{name}` cannot be read: {why}"));
    Ok(match attribute.kind {
        AttrType::Int | AttrType::Long | AttrType::BigInt => {
            row.try_get::<Option<i64>>("", name)?.map(Value::from).unwrap_or(Value::Null)
        }
        AttrType::Float => row.try_get::<Option<f64>>("", name)?.map(Value::from).unwrap_or(Value::Null),
        AttrType::Boolean => row.try_get::<Option<bool>>("", name)?.map(Value::from).unwrap_or(Value::Null),
        AttrType::Bytes | AttrType::Blob => row
            .try_get::<Option<Vec<u8>>>("", name)?
            .map(|bytes| Value::from(base64::engine::general_purpose::STANDARD.encode(bytes)))
            .unwrap_or(Value::Null),
        AttrType::String | AttrType::ID | AttrType::Date => {
            row.try_get::<Option<String>>("", name)?.map(Value::from).unwrap_or(Value::Null)
        }
        AttrType::Object | AttrType::Array | AttrType::Any => {
            match row.try_get::<Option<String>>("", name)? {
                Some(text) => serde_json::from_str(&text).map_err(|err| corrupt(err.to_string()))?,
                None => Value::Null,
            }
        }
    })
}

fn condition_expr(backend: DbBackend, attribute: &Attribute, condition: &Criterion) -> Result<SimpleExpr> {
    let column = Expr::col(Alias::new(&attribute.name));
    let value = |v: &Value| sql_value(&Attribute { nullable: true, ..attribute.clone() }, v);
    let text = || -> Result<String> {
        match &condition.value {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            _ => Err(mismatch(attribute, "text to match")),
        }
    };
    // Text matches read a number's or a JSON value's column as its text.
    let as_text: SimpleExpr = match attribute.kind {
        AttrType::String | AttrType::ID | AttrType::Date => Expr::col(Alias::new(&attribute.name)).into(),
        _ => Expr::col(Alias::new(&attribute.name)).cast_as(Alias::new("text")),
    };
    Ok(match condition.search_type {
        SearchType::Equals if condition.value.is_null() => column.is_null(),
        SearchType::Equals => column.eq(value(&condition.value)?),
        SearchType::NotEqual if condition.value.is_null() => column.is_not_null(),
        SearchType::NotEqual => column.ne(value(&condition.value)?),
        SearchType::GreaterThan => column.gt(value(&condition.value)?),
        SearchType::GreaterThanEqual => column.gte(value(&condition.value)?),
        SearchType::LessThan => column.lt(value(&condition.value)?),
        SearchType::LessThanEqual => column.lte(value(&condition.value)?),
        SearchType::Between => {
            let bounds = condition.value.as_array().filter(|b| b.len() == 2).ok_or_else(|| {
                AppDbError::Invalid(format!("`between` on `{}` needs [low, high]", attribute.name))
            })?;
            column.between(value(&bounds[0])?, value(&bounds[1])?)
        }
        // Case-sensitive on both databases (SQLite's LIKE is not), and
        // built from functions both have, so each backend writes its own
        // placeholders.
        SearchType::Contains => {
            let find = match backend {
                DbBackend::Postgres => "strpos",
                _ => "instr",
            };
            Expr::expr(call(find, [as_text, Expr::val(text()?).into()])).gt(0)
        }
        SearchType::StartsWith => {
            let prefix = text()?;
            let length = call("length", [Expr::val(prefix.clone()).into()]);
            Expr::expr(call("substr", [as_text, Expr::val(1).into(), length.into()])).eq(prefix)
        }
        SearchType::EndsWith => {
            let suffix = text()?;
            let length = call("length", [Expr::val(suffix.clone()).into()]);
            let tail = match backend {
                DbBackend::Postgres => call("right", [as_text, length.into()]),
                _ => call("substr", [as_text, Expr::expr(length).mul(-1)]),
            };
            Expr::expr(tail).eq(suffix)
        }
    })
}

/// A call of the SQL function `name` (one both databases have).
fn call<const N: usize>(name: &str, args: [SimpleExpr; N]) -> sea_orm::sea_query::FunctionCall {
    sea_orm::sea_query::Func::cust(Alias::new(name)).args(args)
}

/// HarperDB's `search_value` with `*` wildcards as a condition: `*` alone
/// matches everything (`None`), `a*` starts with, `*a` ends with, `*a*`
/// contains.
pub fn value_condition(attribute: &str, value: &Value) -> Option<Criterion> {
    let condition =
        |search_type, value: Value| Some(Criterion { attribute: attribute.to_owned(), search_type, value });
    let Value::String(text) = value else {
        return condition(SearchType::Equals, value.clone());
    };
    if text == "*" {
        return None;
    }
    let (starts, ends) = (text.starts_with('*'), text.ends_with('*') && text.len() > 1);
    let inner = text.trim_start_matches('*').trim_end_matches('*').to_owned();
    match (starts, ends) {
        (true, true) => condition(SearchType::Contains, Value::String(inner)),
        (false, true) => condition(SearchType::StartsWith, Value::String(inner)),
        (true, false) => condition(SearchType::EndsWith, Value::String(inner)),
        (false, false) => condition(SearchType::Equals, value.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_checked_against_their_types() {
        let int = Attribute::new("n", AttrType::Int);
        assert!(sql_value(&int, &serde_json::json!(3)).is_ok());
        assert!(sql_value(&int, &serde_json::json!(3_000_000_000_i64)).is_err());
        assert!(sql_value(&int, &serde_json::json!("3")).is_err());
        let date = Attribute::new("d", AttrType::Date);
        assert_eq!(
            sql_value(&date, &serde_json::json!(0)).unwrap(),
            sea_orm::Value::from("1970-01-01T00:00:00.000Z".to_owned())
        );
        let blob = Attribute::new("b", AttrType::Blob);
        assert!(sql_value(&blob, &serde_json::json!("not base64!")).is_err());
        let required = Attribute { nullable: false, ..Attribute::new("r", AttrType::String) };
        assert!(sql_value(&required, &Value::Null).is_err());
    }

    #[test]
    fn wildcards_become_conditions() {
        assert_eq!(value_condition("name", &serde_json::json!("*")), None);
        let c = value_condition("name", &serde_json::json!("Har*")).unwrap();
        assert_eq!((c.search_type, c.value), (SearchType::StartsWith, serde_json::json!("Har")));
        let c = value_condition("name", &serde_json::json!("*per*")).unwrap();
        assert_eq!(c.search_type, SearchType::Contains);
        let c = value_condition("age", &serde_json::json!(5)).unwrap();
        assert_eq!(c.search_type, SearchType::Equals);
    }
}
