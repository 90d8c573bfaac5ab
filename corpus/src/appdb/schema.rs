//! Applying the schema file (`appdb.schema`) to the catalog: at start and
//! by `lore schema apply`.
//!
//! Applying is additive and runs in one transaction, so a file that cannot
//! be applied changes nothing:
//! - a declared table that does not exist is created (origin `schema`);
//! - one that exists keeps its records: missing attributes are added, an
//!   attribute's index, managed role or expression follow the file, and
//!   its options (`expiration`, `@export`) are replaced by the file's;
//! - an attribute whose type or primary key differs from the stored one is
//!   an error naming the line (changing a type would rewrite data);
//! - attributes and tables the file no longer declares are kept, never
//!   dropped (that loses data: `drop_attribute`/`drop_table` do it on
//!   purpose), but a table no longer declared stops being exported.
//!
//! Each error names the line of the declaration. A change fires
//! [`Event::SchemaReloaded`](super::Event).

use std::path::Path;

use serde_json::json;

use super::catalog::{self, Attribute, Export, NewTable, Origin, Table, TableOptions};
use super::schema_file::{self, DeclaredField, DeclaredTable};
use super::{AppDbError, Event};
use crate::{audit, Corpus, Result};

/// What applying the file did, by `database.table`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    pub created: Vec<String>,
    pub changed: Vec<String>,
    pub unchanged: Vec<String>,
}

/// Applies the configured schema file, if there is one.
pub async fn apply_configured(lore: &Corpus) -> Result<Option<Applied>> {
    match lore.settings.appdb.schema.clone() {
        Some(path) => Ok(Some(apply_file(lore, &audit::Actor::System, &path).await?)),
        None => Ok(None),
    }
}

/// Reads and applies the schema file at `path`.
pub async fn apply_file(lore: &Corpus, actor: &audit::Actor, path: &Path) -> Result<Applied> {
    let source = std::fs::read_to_string(path).map_err(|source| crate::Error::Io {
        context: format!("reading the schema file {}", path.display()),
        source,
    })?;
    apply(lore, actor, &source).await
}

/// Applies schema-file `source` (see the module docs).
pub async fn apply(lore: &Corpus, actor: &audit::Actor, source: &str) -> Result<Applied> {
    let declared = schema_file::parse(source)
        .map_err(|err| AppDbError::InvalidSchema { line: err.line, message: err.message })?;
    let txn = crate::store::begin_write(&lore.db).await?;
    let mut applied = Applied::default();
    for table in &declared {
        let path = format!("{}.{}", table.database, table.table);
        match catalog::find_table(&txn, &table.database, &table.table).await? {
            None => {
                catalog::create_table(&txn, new_table(table)).await?;
                applied.created.push(path);
            }
            Some(mut existing) => {
                if reconcile(&txn, &mut existing, table).await? {
                    applied.changed.push(path);
                } else {
                    applied.unchanged.push(path);
                }
            }
        }
    }
    // A table the file no longer declares keeps its records but is no
    // longer served.
    for mut table in catalog::tables(&txn, None).await? {
        let still = declared.iter().any(|d| d.database == table.database && d.table == table.name);
        if !still && table.options.export.is_some() {
            table.options.export = None;
            catalog::save_options(&txn, &table).await?;
            applied.changed.push(table.path());
        }
    }
    let changed = !applied.created.is_empty() || !applied.changed.is_empty();
    if changed {
        let detail = json!({"created": applied.created, "changed": applied.changed});
        audit::record(&txn, actor, "schema.applied", None, detail).await?;
    }
    txn.commit().await?;
    if changed {
        lore.appdb_event(Event::SchemaReloaded);
    }
    Ok(applied)
}

fn invalid(line: usize, message: String) -> crate::Error {
    AppDbError::InvalidSchema { line, message }.into()
}

fn attribute(field: &DeclaredField) -> Attribute {
    Attribute {
        name: field.name.clone(),
        kind: field.kind,
        nullable: field.nullable,
        indexed: field.indexed,
        managed: field.managed,
        computed: field.computed.as_ref().map(|c| c.source.clone()),
        shape: field.shape.clone(),
    }
}

/// The options `table` declares; an export at the path `existing` is
/// already exported at keeps its `since`, a new one starts now, and so does
/// one the tool server did not see until now (`mcp` turned on): the tool
/// names follow `since`, and a table newly shown to the tool server must not
/// take a name an assistant already uses.
fn options(table: &DeclaredTable, existing: Option<&TableOptions>) -> TableOptions {
    let kept = existing.and_then(|o| o.export.as_ref());
    TableOptions {
        expiration: table.expiration,
        export: table.export.as_ref().map(|e| Export {
            path: e.path.clone(),
            http: e.http,
            mcp: e.mcp,
            since: match kept {
                Some(kept) if kept.path == e.path && (kept.mcp || !e.mcp) => kept.since,
                _ => Some(chrono::Utc::now()),
            },
        }),
    }
}

fn new_table(table: &DeclaredTable) -> NewTable {
    NewTable {
        database: table.database.clone(),
        name: table.table.clone(),
        primary_key: table.primary_key.clone(),
        attributes: table.fields.iter().map(attribute).collect(),
        origin: Origin::Schema,
        options: options(table, None),
    }
}

/// Brings an existing table in line with its declaration; whether anything
/// changed.
async fn reconcile(
    conn: &impl sea_orm::ConnectionTrait,
    existing: &mut Table,
    declared: &DeclaredTable,
) -> Result<bool> {
    if existing.primary_key != declared.primary_key {
        return Err(invalid(
            declared.line,
            format!(
                "`{}` exists with the primary key `{}`, not `{}`",
                existing.path(),
                existing.primary_key,
                declared.primary_key
            ),
        ));
    }
    let mut changed = false;
    for field in &declared.fields {
        let wanted = attribute(field);
        match existing.attribute(&field.name).cloned() {
            None => {
                catalog::add_attribute(conn, existing, wanted).await?;
                changed = true;
            }
            Some(stored) if stored.kind != wanted.kind => {
                return Err(invalid(
                    field.line,
                    format!(
                        "`{}.{}` is stored as {}; its type cannot change to {}",
                        existing.path(),
                        field.name,
                        stored.kind.name(),
                        wanted.kind.name()
                    ),
                ))
            }
            Some(stored) if stored.computed.is_some() != wanted.computed.is_some() => {
                return Err(invalid(
                    field.line,
                    format!("`{}.{}` cannot change between stored and computed", existing.path(), field.name),
                ))
            }
            Some(stored) => {
                // Nullability stays as stored: tightening it would need a
                // check of every record.
                let wanted = Attribute { nullable: stored.nullable, ..wanted };
                if stored != wanted {
                    catalog::redeclare_attribute(conn, existing, wanted).await?;
                    changed = true;
                }
            }
        }
    }
    let wanted = options(declared, Some(&existing.options));
    if existing.options != wanted || existing.origin != Origin::Schema {
        existing.options = wanted;
        catalog::save_options(conn, existing).await?;
        changed = true;
    }
    Ok(changed)
}
