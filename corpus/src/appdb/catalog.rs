//! Databases, tables and typed attributes: the catalog (`app_database`,
//! `app_table`) and the real tables behind it.
//!
//! A table `dev.dog` is the SQL table `data_dev__dog`, one column per
//! attribute. Names are SQL identifiers (letters, digits, `_`); database
//! and table names are at most 28 characters and hold no `__`, so two
//! tables never map to one SQL name. Attribute types are those of SPEC's
//! mapping table; a table made by an operation without declared attributes
//! grows an attribute the first time a record carries it, typed by that
//! value, and keeps HarperDB's `__createdtime__` and `__updatedtime__`.
//! Every function takes any connection, so that an operation's writes and
//! its structure changes share one transaction.

use chrono::{DateTime, SecondsFormat, Utc};
use entity::{app_database, app_table};
use sea_orm::sea_query::{Alias, ColumnDef, Expr, Func, Index, Query, Table as Ddl};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{check_name, system, AppDbError};
use crate::store::decode;
use crate::Result;

/// The database a table lands in when an operation names none (HarperDB's).
pub const DEFAULT_DATABASE: &str = "data";
const MAX_NAME: usize = 28;
const MAX_ATTRIBUTE: usize = 63;
/// HarperDB's automatic timestamps, kept on tables made by operations.
pub const CREATED_TIME: &str = "__createdtime__";
pub const UPDATED_TIME: &str = "__updatedtime__";

/// An attribute's type: SPEC's mapping table, plus `Any` for the primary key
/// of a table made without declaring one (stored as JSON text, so a number
/// stays a number and a string a string).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AttrType {
    Int,
    Long,
    BigInt,
    Float,
    String,
    ID,
    Boolean,
    Date,
    Bytes,
    Blob,
    Object,
    Array,
    Any,
}

impl AttrType {
    pub const ALL: [AttrType; 13] = [
        AttrType::Int,
        AttrType::Long,
        AttrType::BigInt,
        AttrType::Float,
        AttrType::String,
        AttrType::ID,
        AttrType::Boolean,
        AttrType::Date,
        AttrType::Bytes,
        AttrType::Blob,
        AttrType::Object,
        AttrType::Array,
        AttrType::Any,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AttrType::Int => "Int",
            AttrType::Long => "Long",
            AttrType::BigInt => "BigInt",
            AttrType::Float => "Float",
            AttrType::String => "String",
            AttrType::ID => "ID",
            AttrType::Boolean => "Boolean",
            AttrType::Date => "Date",
            AttrType::Bytes => "Bytes",
            AttrType::Blob => "Blob",
            AttrType::Object => "Object",
            AttrType::Array => "Array",
            AttrType::Any => "Any",
        }
    }

    pub fn parse(raw: &str) -> Result<Self, AppDbError> {
        AttrType::ALL.into_iter().find(|t| t.name().eq_ignore_ascii_case(raw)).ok_or_else(|| {
            AppDbError::Invalid(format!(
                "`{raw}` is not an attribute type (Int, Long, BigInt, Float, String, ID, Boolean, Date, Bytes, Blob, Object, Array)"
            ))
        })
    }

    /// The type a first value gives an attribute nobody declared.
    pub fn of_value(value: &serde_json::Value) -> Option<Self> {
        use serde_json::Value as V;
        match value {
            V::Null => None,
            V::Bool(_) => Some(AttrType::Boolean),
            V::Number(n) if n.is_i64() || n.is_u64() => Some(AttrType::Long),
            V::Number(_) => Some(AttrType::Float),
            V::String(_) => Some(AttrType::String),
            V::Array(_) => Some(AttrType::Array),
            V::Object(_) => Some(AttrType::Object),
        }
    }
}

/// A column Lore fills itself; refused as input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Managed {
    CreatedTime,
    UpdatedTime,
    ExpiresAt,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attribute {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: AttrType,
    #[serde(default = "yes")]
    pub nullable: bool,
    #[serde(default)]
    pub indexed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed: Option<Managed>,
    /// A computed attribute's expression (`@computed(from: …)`): it has no
    /// column, and reads evaluate it over the record's stored attributes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computed: Option<String>,
    /// What an `Object` or `Array` attribute holds, when the schema file
    /// declares it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
}

/// What an `Object` or `Array` attribute holds, as the schema file declares
/// it (a field of a declared `type`, or `[T]`): an object's fields, or an
/// array's items. Schemas (the tool server's, `svc://schema`, OpenAPI)
/// describe it; records are not checked against it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    Object(Vec<Member>),
    Array(Box<Member>),
}

/// A field of an object (named) or an array's items (unnamed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(rename = "type")]
    pub kind: AttrType,
    #[serde(default = "yes")]
    pub nullable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
}

fn yes() -> bool {
    true
}

impl Attribute {
    pub fn new(name: &str, kind: AttrType) -> Self {
        Self {
            name: name.to_owned(),
            kind,
            nullable: true,
            indexed: false,
            managed: None,
            computed: None,
            shape: None,
        }
    }
}

/// Who made a table: an operation without declared attributes (it grows
/// by the records it gets, as HarperDB's tables do), an operation that
/// declared them, or the schema file. Declared tables refuse unknown
/// attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Operation,
    Declared,
    Schema,
    /// One of Lore's own tables (`appdb::system`), in no catalog row.
    System,
}

impl Origin {
    fn key(self) -> &'static str {
        match self {
            Origin::Operation => "operation",
            Origin::Declared => "declared",
            Origin::Schema => "schema",
            Origin::System => "system",
        }
    }
}

/// A table's options beyond its attributes (the schema file's `@table`
/// and `@export` arguments).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableOptions {
    /// Seconds a record lives after its last write, when the table has an
    /// `@expiresAt` attribute; expired records vanish from reads and are swept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration: Option<u64>,
    /// Where the table is served as a resource, if it is exported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<Export>,
}

/// An exported table: its resource path and on which surfaces it is served
/// (SPEC's `exportTypes`: `http` for REST, `mcp` for the tool server).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Export {
    pub path: String,
    pub http: bool,
    pub mcp: bool,
    /// Since when the table is exported at `path` (absent for an export
    /// older than the record of it: the table's creation stands in). The
    /// tool server's names follow it: the senior export keeps a name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
}

impl Table {
    /// Since when the table is exported at its path, or when it was
    /// created if that was never recorded.
    pub fn exported_since(&self) -> DateTime<Utc> {
        self.options.export.as_ref().and_then(|export| export.since).unwrap_or(self.created_at)
    }
}

/// An application table as the catalog knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub id: String,
    pub database: String,
    pub name: String,
    pub sql_name: String,
    pub primary_key: String,
    /// The primary key first, then in the order they were added.
    pub attributes: Vec<Attribute>,
    pub origin: Origin,
    pub options: TableOptions,
    pub created_at: DateTime<Utc>,
}

impl Table {
    fn decode(row: app_table::Model) -> Result<Self> {
        let what = format!("attributes of table {}.{}", row.database, row.name);
        let origin = match row.origin.as_str() {
            "schema" => Origin::Schema,
            "declared" => Origin::Declared,
            "operation" => Origin::Operation,
            other => {
                return Err(crate::Error::Internal(format!(
                    "table {}.{} has an unknown origin {other:?}",
                    row.database, row.name
                )))
            }
        };
        let attributes: Vec<Attribute> = decode(&what, row.attributes)?;
        // `key` reads the first attribute: a catalog row whose first
        // attribute is not its primary key is corrupt, and said so here.
        if attributes.first().map(|a| a.name.as_str()) != Some(row.primary_key.as_str()) {
            return Err(crate::Error::Internal(format!(
                "the stored {what} do not start with the primary key `{}`",
                row.primary_key
            )));
        }
        let options = match row.options {
            Some(options) => decode(&format!("options of table {}.{}", row.database, row.name), options)?,
            None => TableOptions::default(),
        };
        Ok(Self {
            attributes,
            options,
            id: row.id,
            database: row.database,
            name: row.name,
            sql_name: row.sql_name,
            primary_key: row.primary_key,
            origin,
            created_at: row.created_at,
        })
    }

    /// `database.table`, as messages name it.
    pub fn path(&self) -> String {
        format!("{}.{}", self.database, self.name)
    }

    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }

    /// The primary key's attribute: always the first (`create_table` puts
    /// it there, `Table::decode` checks it).
    pub fn key(&self) -> &Attribute {
        &self.attributes[0]
    }

    /// Whether a record may bring attributes nobody declared.
    pub fn grows(&self) -> bool {
        self.origin == Origin::Operation
    }

    /// The attributes with a column (every one but the computed).
    pub fn stored(&self) -> impl Iterator<Item = &Attribute> {
        self.attributes.iter().filter(|a| a.computed.is_none())
    }

    /// The attribute holding when a record expires, if the table has one.
    pub fn expires_at(&self) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.managed == Some(Managed::ExpiresAt))
    }
}

/// A table to make.
#[derive(Clone, Debug)]
pub struct NewTable {
    pub database: String,
    pub name: String,
    pub primary_key: String,
    /// Declared attributes; the primary key's entry, if present, gives its
    /// type (`Any` otherwise).
    pub attributes: Vec<Attribute>,
    pub origin: Origin,
    pub options: TableOptions,
}

pub fn check_database_name(name: &str) -> Result<(), AppDbError> {
    check_name("database", name, MAX_NAME)?;
    if name.contains("__") {
        return Err(AppDbError::Invalid(format!("`{name}` is not a valid database name (no `__`)")));
    }
    Ok(())
}

fn check_table_name(name: &str) -> Result<(), AppDbError> {
    check_name("table", name, MAX_NAME)?;
    if name.contains("__") {
        return Err(AppDbError::Invalid(format!("`{name}` is not a valid table name (no `__`)")));
    }
    Ok(())
}

pub fn check_attribute_name(name: &str) -> Result<(), AppDbError> {
    check_name("attribute", name, MAX_ATTRIBUTE)
}

pub async fn databases(conn: &impl ConnectionTrait) -> Result<Vec<String>> {
    Ok(app_database::Entity::find()
        .order_by_asc(app_database::Column::Name)
        .all(conn)
        .await?
        .into_iter()
        .map(|row| row.name)
        .collect())
}

pub async fn database_exists(conn: &impl ConnectionTrait, name: &str) -> Result<bool> {
    Ok(name == system::DATABASE
        || !app_database::Entity::find_by_id(name.to_owned()).all(conn).await?.is_empty())
}

pub async fn create_database(conn: &impl ConnectionTrait, name: &str) -> Result<()> {
    check_database_name(name)?;
    system::refuse_change(name)?;
    if database_exists(conn, name).await? {
        return Err(AppDbError::AlreadyExists(format!("database `{name}`")).into());
    }
    app_database::ActiveModel { name: Set(name.to_owned()), created_at: Set(Utc::now()) }
        .insert(conn)
        .await?;
    super::cache::bump(conn).await
}

/// Drops a database with every table in it.
pub async fn drop_database(conn: &impl ConnectionTrait, name: &str) -> Result<()> {
    system::refuse_change(name)?;
    if !database_exists(conn, name).await? {
        return Err(AppDbError::UnknownDatabase(name.to_owned()).into());
    }
    for table in tables(conn, Some(name)).await? {
        drop_table(conn, &table.database, &table.name).await?;
    }
    app_database::Entity::delete_by_id(name.to_owned()).exec(conn).await?;
    super::cache::bump(conn).await
}

/// The tables of one database, or of all application databases (Lore's own
/// `system` tables only when asked for by name), by database and name.
pub async fn tables(conn: &impl ConnectionTrait, database: Option<&str>) -> Result<Vec<Table>> {
    if database == Some(system::DATABASE) {
        return Ok(system::tables());
    }
    let mut query = app_table::Entity::find();
    if let Some(database) = database {
        query = query.filter(app_table::Column::Database.eq(database));
    }
    query
        .order_by_asc(app_table::Column::Database)
        .order_by_asc(app_table::Column::Name)
        .all(conn)
        .await?
        .into_iter()
        .map(Table::decode)
        .collect()
}

/// One table, if it exists.
pub async fn find_table(conn: &impl ConnectionTrait, database: &str, name: &str) -> Result<Option<Table>> {
    if database == system::DATABASE {
        return Ok(system::table(name));
    }
    // `all`, not `one`: SQLite refuses DROP TABLE on a connection with a
    // statement left mid-way, which a LIMIT 1 read can leave.
    let rows = app_table::Entity::find()
        .filter(app_table::Column::Database.eq(database))
        .filter(app_table::Column::Name.eq(name))
        .all(conn)
        .await?;
    rows.into_iter().next().map(Table::decode).transpose()
}

/// One table; an unknown database or table is an error naming it.
pub async fn table(conn: &impl ConnectionTrait, database: &str, name: &str) -> Result<Table> {
    match find_table(conn, database, name).await? {
        Some(table) => Ok(table),
        None if !database_exists(conn, database).await? => {
            Err(AppDbError::UnknownDatabase(database.to_owned()).into())
        }
        None => Err(AppDbError::UnknownTable(format!("{database}.{name}")).into()),
    }
}

/// Makes a table (and its database, when new): the catalog row and the real
/// table with its indexes.
pub async fn create_table(conn: &impl ConnectionTrait, new: NewTable) -> Result<Table> {
    check_database_name(&new.database)?;
    system::refuse_change(&new.database)?;
    check_table_name(&new.name)?;
    check_attribute_name(&new.primary_key)?;
    if !database_exists(conn, &new.database).await? {
        create_database(conn, &new.database).await?;
    }
    if find_table(conn, &new.database, &new.name).await?.is_some() {
        return Err(AppDbError::AlreadyExists(format!("table `{}.{}`", new.database, new.name)).into());
    }
    let mut key = new
        .attributes
        .iter()
        .find(|a| a.name == new.primary_key)
        .cloned()
        .unwrap_or_else(|| Attribute::new(&new.primary_key, AttrType::Any));
    key.nullable = false;
    key.indexed = false;
    if matches!(
        key.kind,
        AttrType::Float
            | AttrType::Boolean
            | AttrType::Object
            | AttrType::Array
            | AttrType::Bytes
            | AttrType::Blob
    ) {
        return Err(AppDbError::Invalid(format!(
            "the primary key `{}` cannot be of type {}",
            key.name,
            key.kind.name()
        ))
        .into());
    }
    let mut attributes = vec![key];
    for attribute in new.attributes.iter().filter(|a| a.name != new.primary_key) {
        check_attribute_name(&attribute.name)?;
        if attributes.iter().any(|a: &Attribute| a.name == attribute.name) {
            return Err(
                AppDbError::Invalid(format!("the attribute `{}` is declared twice", attribute.name)).into()
            );
        }
        attributes.push(attribute.clone());
    }
    if new.origin == Origin::Operation {
        for stamp in [CREATED_TIME, UPDATED_TIME] {
            if !attributes.iter().any(|a| a.name == stamp) {
                let managed = if stamp == CREATED_TIME { Managed::CreatedTime } else { Managed::UpdatedTime };
                attributes
                    .push(Attribute { managed: Some(managed), ..Attribute::new(stamp, AttrType::Float) });
            }
        }
    }
    let sql_name = format!("data_{}__{}", new.database, new.name);
    let mut ddl = Ddl::create();
    ddl.table(Alias::new(&sql_name));
    for (at, attribute) in attributes.iter().enumerate().filter(|(_, a)| a.computed.is_none()) {
        ddl.col(column(attribute, at == 0));
    }
    execute(conn, &ddl).await?;
    for attribute in attributes.iter().filter(|a| a.indexed) {
        create_index(conn, &sql_name, &attribute.name).await?;
    }
    let row = app_table::ActiveModel {
        id: Set(uuid::Uuid::new_v4().to_string()),
        database: Set(new.database.clone()),
        name: Set(new.name.clone()),
        sql_name: Set(sql_name),
        primary_key: Set(new.primary_key.clone()),
        attributes: Set(
            serde_json::to_value(&attributes).map_err(|err| crate::Error::Internal(err.to_string()))?
        ),
        origin: Set(new.origin.key().to_owned()),
        options: Set(options_json(&new.options)?),
        created_at: Set(Utc::now()),
    }
    .insert(conn)
    .await?;
    super::cache::bump(conn).await?;
    Table::decode(row)
}

/// Drops a table and its rows.
pub async fn drop_table(conn: &impl ConnectionTrait, database: &str, name: &str) -> Result<()> {
    system::refuse_change(database)?;
    let found = table(conn, database, name).await?;
    execute(conn, &Ddl::drop().table(Alias::new(&found.sql_name)).to_owned()).await?;
    app_table::Entity::delete_by_id(found.id).exec(conn).await?;
    super::cache::bump(conn).await
}

/// Adds an attribute (a nullable column, indexed if asked) to a table.
pub async fn add_attribute(
    conn: &impl ConnectionTrait,
    table: &mut Table,
    attribute: Attribute,
) -> Result<()> {
    system::refuse_change(&table.database)?;
    check_attribute_name(&attribute.name)?;
    if table.attribute(&attribute.name).is_some() {
        return Err(
            AppDbError::AlreadyExists(format!("attribute `{}.{}`", table.path(), attribute.name)).into()
        );
    }
    let attribute = Attribute { nullable: true, ..attribute };
    if attribute.computed.is_some() {
        table.attributes.push(attribute);
        return save_attributes(conn, table).await;
    }
    execute(
        conn,
        &Ddl::alter().table(Alias::new(&table.sql_name)).add_column(column(&attribute, false)).to_owned(),
    )
    .await?;
    if attribute.indexed {
        create_index(conn, &table.sql_name, &attribute.name).await?;
    }
    table.attributes.push(attribute);
    save_attributes(conn, table).await
}

/// Replaces a stored attribute's declaration (same name, type and storage):
/// its index is made or dropped as `indexed` changed; managed roles and
/// expressions are catalog facts only.
pub async fn redeclare_attribute(
    conn: &impl ConnectionTrait,
    table: &mut Table,
    wanted: Attribute,
) -> Result<()> {
    let Some(at) = table.attributes.iter().position(|a| a.name == wanted.name) else {
        return Err(AppDbError::UnknownAttribute(format!("{}.{}", table.path(), wanted.name)).into());
    };
    let stored = table.attributes[at].clone();
    if wanted.computed.is_none() && stored.indexed != wanted.indexed && wanted.name != table.primary_key {
        if wanted.indexed {
            create_index(conn, &table.sql_name, &wanted.name).await?;
        } else {
            let drop = Index::drop()
                .name(index_name(&table.sql_name, &wanted.name))
                .table(Alias::new(&table.sql_name))
                .to_owned();
            execute(conn, &drop).await?;
        }
    }
    table.attributes[at] = wanted;
    save_attributes(conn, table).await
}

/// Drops an attribute and its values; the primary key cannot be dropped.
pub async fn drop_attribute(conn: &impl ConnectionTrait, table: &mut Table, name: &str) -> Result<()> {
    system::refuse_change(&table.database)?;
    let attribute = table
        .attribute(name)
        .cloned()
        .ok_or_else(|| AppDbError::UnknownAttribute(format!("{}.{name}", table.path())))?;
    if name == table.primary_key {
        return Err(AppDbError::Invalid(format!("the primary key `{name}` cannot be dropped")).into());
    }
    if attribute.computed.is_some() {
        table.attributes.retain(|a| a.name != name);
        return save_attributes(conn, table).await;
    }
    if attribute.indexed {
        let drop = Index::drop()
            .name(index_name(&table.sql_name, name))
            .table(Alias::new(&table.sql_name))
            .to_owned();
        execute(conn, &drop).await?;
    }
    execute(conn, &Ddl::alter().table(Alias::new(&table.sql_name)).drop_column(Alias::new(name)).to_owned())
        .await?;
    table.attributes.retain(|a| a.name != name);
    save_attributes(conn, table).await
}

/// How many (unexpired) records a table holds.
pub async fn record_count(conn: &impl ConnectionTrait, table: &Table) -> Result<i64> {
    Ok(record_counts(conn, &[table]).await?.first().copied().unwrap_or(0))
}

/// The most tables one counting statement covers (SQLite allows 500 parts
/// in a compound SELECT).
const COUNTED_TOGETHER: usize = 100;

/// The live records of each table, in the order given: one statement for
/// up to [`COUNTED_TOGETHER`] tables (a `UNION ALL` of counts, each tagged
/// with its place), so describing many tables costs a few round trips, not
/// one per table.
pub async fn record_counts(conn: &impl ConnectionTrait, tables: &[&Table]) -> Result<Vec<i64>> {
    use sea_orm::sea_query::UnionType;
    let now = Utc::now();
    let mut counts = vec![0; tables.len()];
    for (chunk, group) in tables.chunks(COUNTED_TOGETHER).enumerate() {
        let count = |place: usize, table: &Table| {
            let mut query = Query::select()
                .expr(Expr::val(i64::try_from(place).unwrap_or(i64::MAX)))
                .expr(Func::count(Expr::col(sea_orm::sea_query::Asterisk)))
                .from(Alias::new(&table.sql_name))
                .to_owned();
            if let Some(live) = live(table, now) {
                query.and_where(live);
            }
            query
        };
        let first = chunk * COUNTED_TOGETHER;
        let mut query = count(first, group[0]);
        for (offset, table) in group.iter().enumerate().skip(1) {
            query.union(UnionType::All, count(first + offset, table));
        }
        for row in conn.query_all(conn.get_database_backend().build(&query)).await? {
            let place = usize::try_from(row.try_get_by_index::<i64>(0)?).unwrap_or(usize::MAX);
            if let Some(slot) = counts.get_mut(place) {
                *slot = row.try_get_by_index::<i64>(1)?;
            }
        }
    }
    Ok(counts)
}

fn options_json(options: &TableOptions) -> Result<Option<serde_json::Value>> {
    if options == &TableOptions::default() {
        return Ok(None);
    }
    serde_json::to_value(options).map(Some).map_err(|err| crate::Error::Internal(err.to_string()))
}

/// Stores a table's options (the schema file changed them).
pub async fn save_options(conn: &impl ConnectionTrait, table: &Table) -> Result<()> {
    app_table::ActiveModel {
        id: Set(table.id.clone()),
        options: Set(options_json(&table.options)?),
        ..Default::default()
    }
    .update(conn)
    .await?;
    super::cache::bump(conn).await
}

/// A time as a time attribute's column holds it: epoch milliseconds for
/// numbers, RFC 3339 text (milliseconds, UTC, so text order is time
/// order) for `Date` and `String`.
pub(crate) fn time_value(attribute: &Attribute, at: DateTime<Utc>) -> sea_orm::Value {
    match attribute.kind {
        AttrType::Float => (at.timestamp_millis() as f64).into(),
        AttrType::Date | AttrType::String => at.to_rfc3339_opts(SecondsFormat::Millis, true).into(),
        _ => at.timestamp_millis().into(),
    }
}

/// A time as a search condition on a time attribute takes it: the JSON of
/// what [`time_value`] stores.
pub fn time_json(attribute: &Attribute, at: DateTime<Utc>) -> serde_json::Value {
    match attribute.kind {
        AttrType::Float => serde_json::json!(at.timestamp_millis() as f64),
        AttrType::Date | AttrType::String => {
            serde_json::Value::String(at.to_rfc3339_opts(SecondsFormat::Millis, true))
        }
        _ => serde_json::json!(at.timestamp_millis()),
    }
}

/// The condition a record of `table` must meet to be alive at `now` (none
/// when its records never expire): no expiry set, or one still to come.
pub(crate) fn live(table: &Table, now: DateTime<Utc>) -> Option<sea_orm::sea_query::SimpleExpr> {
    let expires = table.expires_at()?;
    let column = || Expr::col(Alias::new(&expires.name));
    Some(column().is_null().or(column().gt(time_value(expires, now))))
}

async fn save_attributes(conn: &impl ConnectionTrait, table: &Table) -> Result<()> {
    let attributes =
        serde_json::to_value(&table.attributes).map_err(|err| crate::Error::Internal(err.to_string()))?;
    app_table::ActiveModel { id: Set(table.id.clone()), attributes: Set(attributes), ..Default::default() }
        .update(conn)
        .await?;
    super::cache::bump(conn).await
}

fn column(attribute: &Attribute, primary: bool) -> ColumnDef {
    let mut def = ColumnDef::new(Alias::new(&attribute.name));
    match attribute.kind {
        AttrType::Int | AttrType::Long | AttrType::BigInt => def.big_integer(),
        AttrType::Float => def.double(),
        AttrType::Boolean => def.boolean(),
        AttrType::Bytes | AttrType::Blob => def.blob(),
        AttrType::String
        | AttrType::ID
        | AttrType::Date
        | AttrType::Object
        | AttrType::Array
        | AttrType::Any => def.text(),
    };
    if primary {
        def.not_null().primary_key();
    }
    def
}

/// An index's name: short and unique per table and attribute, whatever
/// their lengths (PostgreSQL cuts names at 63 bytes).
fn index_name(sql_name: &str, attribute: &str) -> String {
    let digest = Sha256::digest(format!("{sql_name}.{attribute}").as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("ix_{hex}")
}

async fn create_index(conn: &impl ConnectionTrait, sql_name: &str, attribute: &str) -> Result<()> {
    let index = Index::create()
        .name(index_name(sql_name, attribute))
        .table(Alias::new(sql_name))
        .col(Alias::new(attribute))
        .to_owned();
    execute(conn, &index).await
}

async fn execute(conn: &impl ConnectionTrait, statement: &impl sea_orm::StatementBuilder) -> Result<()> {
    conn.execute(conn.get_database_backend().build(statement)).await?;
    Ok(())
}
