//! The permission tree of a role, in HarperDB's `permission` format:
//!
//! ```json
//! {"super_user": false, "structure_user": ["dev"], "operations": ["search_by_id"],
//!  "dev": {"tables": {"dog": {"read": true, "insert": false, "update": false, "delete": false,
//!          "attribute_permissions": [{"attribute_name": "owner", "read": false,
//!                                     "insert": false, "update": false}]}}}}
//! ```
//!
//! [`Permission::parse`] validates a tree and names the first wrong field by
//! its path; the checks below are the only place that reads one. As in
//! HarperDB, a CRUD flag left out is `false`, and an attribute follows its
//! `attribute_permissions` entry when it has one, the table's flags
//! otherwise. A super user may do everything; a structure user may change
//! the structure (databases, tables, attributes) of every database (`true`)
//! or of the databases listed.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::AppDbError;

/// Which databases' structure a role may change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum StructureUser {
    #[default]
    No,
    All,
    Databases(Vec<String>),
}

/// What a role may do with one table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TablePermission {
    pub read: bool,
    pub insert: bool,
    pub update: bool,
    pub delete: bool,
    pub attribute_permissions: Vec<AttributePermission>,
}

/// What a role may do with one attribute of a table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttributePermission {
    pub attribute_name: String,
    pub read: bool,
    pub insert: bool,
    pub update: bool,
}

/// A role's whole permission tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permission {
    pub super_user: bool,
    pub structure_user: StructureUser,
    /// The operations a role may call by name; `None` when the tree does not
    /// say (a role written for HarperDB), which allows the data and describe
    /// operations, each still gated by the table permissions.
    pub operations: Option<Vec<String>>,
    /// database → table → permission.
    pub databases: BTreeMap<String, BTreeMap<String, TablePermission>>,
}

/// A CRUD action on a table or attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Insert,
    Update,
    Delete,
}

impl Access {
    pub fn key(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Insert => "insert",
            Access::Update => "update",
            Access::Delete => "delete",
        }
    }
}

impl Permission {
    /// What a signed-in admin acts as.
    pub fn super_user() -> Self {
        Self { super_user: true, ..Self::default() }
    }

    /// Reads and validates a permission tree; the error names the first
    /// field that is wrong by its path (`permission.dev.tables.dog.read`).
    pub fn parse(value: &Value) -> Result<Self, AppDbError> {
        let invalid =
            |path: &str, why: &str| AppDbError::InvalidPermission(format!("`permission{path}` {why}"));
        let object = value.as_object().ok_or_else(|| invalid("", "must be an object"))?;
        let mut permission = Permission::default();
        for (key, entry) in object {
            match key.as_str() {
                "super_user" => {
                    permission.super_user =
                        entry.as_bool().ok_or_else(|| invalid(".super_user", "must be true or false"))?
                }
                "structure_user" => {
                    permission.structure_user = match entry {
                        Value::Bool(true) => StructureUser::All,
                        Value::Bool(false) | Value::Null => StructureUser::No,
                        Value::Array(items) => StructureUser::Databases(
                            items
                                .iter()
                                .map(|item| item.as_str().map(str::to_owned))
                                .collect::<Option<Vec<_>>>()
                                .ok_or_else(|| {
                                    invalid(
                                        ".structure_user",
                                        "must be true, false or a list of database names",
                                    )
                                })?,
                        ),
                        _ => {
                            return Err(invalid(
                                ".structure_user",
                                "must be true, false or a list of database names",
                            ))
                        }
                    }
                }
                "operations" => {
                    let names = entry
                        .as_array()
                        .and_then(|items| {
                            items
                                .iter()
                                .map(|item| item.as_str().map(str::to_owned))
                                .collect::<Option<Vec<_>>>()
                        })
                        .ok_or_else(|| invalid(".operations", "must be a list of operation names"))?;
                    permission.operations = Some(names);
                }
                database => {
                    let path = format!(".{database}");
                    let tables =
                        entry.as_object().ok_or_else(|| invalid(&path, "must be an object with `tables`"))?;
                    let mut parsed = BTreeMap::new();
                    for (field, tables) in tables {
                        if field != "tables" {
                            return Err(invalid(
                                &format!("{path}.{field}"),
                                "is not a permission field (only `tables`)",
                            ));
                        }
                        let tables = tables
                            .as_object()
                            .ok_or_else(|| invalid(&format!("{path}.tables"), "must be an object"))?;
                        for (table, entry) in tables {
                            let path = format!("{path}.tables.{table}");
                            parsed.insert(table.clone(), parse_table(&path, entry)?);
                        }
                    }
                    permission.databases.insert(database.to_owned(), parsed);
                }
            }
        }
        Ok(permission)
    }

    /// The tree as HarperDB writes it.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("super_user".into(), json!(self.super_user));
        object.insert(
            "structure_user".into(),
            match &self.structure_user {
                StructureUser::No => json!(false),
                StructureUser::All => json!(true),
                StructureUser::Databases(names) => json!(names),
            },
        );
        if let Some(operations) = &self.operations {
            object.insert("operations".into(), json!(operations));
        }
        for (database, tables) in &self.databases {
            let tables: Map<String, Value> = tables
                .iter()
                .map(|(table, p)| {
                    let attributes: Vec<Value> = p
                        .attribute_permissions
                        .iter()
                        .map(|a| json!({"attribute_name": a.attribute_name, "read": a.read, "insert": a.insert, "update": a.update}))
                        .collect();
                    (
                        table.clone(),
                        json!({"read": p.read, "insert": p.insert, "update": p.update, "delete": p.delete,
                               "attribute_permissions": attributes}),
                    )
                })
                .collect();
            object.insert(database.clone(), json!({"tables": tables}));
        }
        Value::Object(object)
    }

    /// Whether the role may change the structure of `database`.
    pub fn may_change_structure(&self, database: &str) -> bool {
        if database == super::system::DATABASE {
            // Lore's own tables: only a super user sees them (and the
            // catalog refuses every change, whoever asks).
            return self.super_user;
        }
        self.super_user
            || match &self.structure_user {
                StructureUser::No => false,
                StructureUser::All => true,
                StructureUser::Databases(names) => names.iter().any(|name| name == database),
            }
    }

    /// The role's permission on a table (nothing allowed when not listed,
    /// nor on Lore's own `system` tables, which only super users read).
    pub fn table(&self, database: &str, table: &str) -> Option<&TablePermission> {
        if database == super::system::DATABASE {
            return None;
        }
        self.databases.get(database).and_then(|tables| tables.get(table))
    }

    /// Whether the role may `access` the table as a whole.
    pub fn may(&self, database: &str, table: &str, access: Access) -> bool {
        if self.super_user {
            return true;
        }
        let Some(p) = self.table(database, table) else { return false };
        match access {
            Access::Read => p.read,
            Access::Insert => p.insert,
            Access::Update => p.update,
            Access::Delete => p.delete,
        }
    }

    /// Whether the role may `access` one attribute: its own entry when the
    /// table lists one, the table's flag otherwise. Delete is per record.
    pub fn may_attribute(&self, database: &str, table: &str, attribute: &str, access: Access) -> bool {
        if self.super_user {
            return true;
        }
        let Some(p) = self.table(database, table) else { return false };
        match p.attribute_permissions.iter().find(|a| a.attribute_name == attribute) {
            Some(a) => match access {
                Access::Read => a.read,
                Access::Insert => a.insert,
                Access::Update => a.update,
                Access::Delete => p.delete,
            },
            None => self.may(database, table, access),
        }
    }

    /// Whether the role may see a table at all (any flag, or an attribute it
    /// may read): what `describe_*` lists.
    pub fn sees_table(&self, database: &str, table: &str) -> bool {
        if self.super_user || self.may_change_structure(database) {
            return true;
        }
        self.table(database, table).is_some_and(|p| {
            p.read || p.insert || p.update || p.delete || p.attribute_permissions.iter().any(|a| a.read)
        })
    }
}

fn parse_table(path: &str, value: &Value) -> Result<TablePermission, AppDbError> {
    let invalid =
        |field: &str, why: &str| AppDbError::InvalidPermission(format!("`permission{path}{field}` {why}"));
    let object = value.as_object().ok_or_else(|| invalid("", "must be an object"))?;
    let mut table = TablePermission::default();
    for (field, entry) in object {
        let flag = || entry.as_bool().ok_or_else(|| invalid(&format!(".{field}"), "must be true or false"));
        match field.as_str() {
            "read" => table.read = flag()?,
            "insert" => table.insert = flag()?,
            "update" => table.update = flag()?,
            "delete" => table.delete = flag()?,
            "attribute_permissions" => {
                let items = match entry {
                    Value::Null => Vec::new(),
                    Value::Array(items) => items.clone(),
                    _ => return Err(invalid(".attribute_permissions", "must be a list")),
                };
                for (at, item) in items.iter().enumerate() {
                    let item_path = format!(".attribute_permissions[{at}]");
                    let object = item.as_object().ok_or_else(|| invalid(&item_path, "must be an object"))?;
                    let mut attribute = AttributePermission::default();
                    for (field, entry) in object {
                        let flag = || {
                            entry.as_bool().ok_or_else(|| {
                                invalid(&format!("{item_path}.{field}"), "must be true or false")
                            })
                        };
                        match field.as_str() {
                            "attribute_name" => {
                                attribute.attribute_name = entry
                                    .as_str()
                                    .filter(|name| !name.is_empty())
                                    .ok_or_else(|| {
                                        invalid(&format!("{item_path}.attribute_name"), "must be a name")
                                    })?
                                    .to_owned()
                            }
                            "read" => attribute.read = flag()?,
                            "insert" => attribute.insert = flag()?,
                            "update" => attribute.update = flag()?,
                            // HarperDB accepts and ignores `delete` here:
                            // deleting is per record, never per attribute.
                            "delete" => {
                                flag()?;
                            }
                            other => {
                                return Err(invalid(
                                    &format!("{item_path}.{other}"),
                                    "is not a permission field",
                                ))
                            }
                        }
                    }
                    if attribute.attribute_name.is_empty() {
                        return Err(invalid(&format!("{item_path}.attribute_name"), "is required"));
                    }
                    table.attribute_permissions.push(attribute);
                }
            }
            other => return Err(invalid(&format!(".{other}"), "is not a permission field")),
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_round_trips_and_omitted_flags_are_false() {
        let raw = json!({"super_user": false, "structure_user": ["dev"], "operations": ["search_by_id"],
            "dev": {"tables": {"dog": {"read": true, "attribute_permissions": [
                {"attribute_name": "owner", "read": false, "insert": true, "update": false}]}}}});
        let parsed = Permission::parse(&raw).unwrap();
        assert!(parsed.may("dev", "dog", Access::Read));
        assert!(!parsed.may("dev", "dog", Access::Insert));
        assert!(parsed.may_attribute("dev", "dog", "name", Access::Read));
        assert!(!parsed.may_attribute("dev", "dog", "owner", Access::Read));
        assert!(parsed.may_attribute("dev", "dog", "owner", Access::Insert));
        assert!(!parsed.may("dev", "cat", Access::Read));
        assert!(parsed.may_change_structure("dev") && !parsed.may_change_structure("prod"));
        assert_eq!(Permission::parse(&parsed.to_json()).unwrap(), parsed);
    }

    #[test]
    fn a_wrong_field_is_named_by_its_path() {
        let err = Permission::parse(&json!({"dev": {"tables": {"dog": {"read": "yes"}}}})).unwrap_err();
        assert!(err.to_string().contains("permission.dev.tables.dog.read"), "{err}");
        let err = Permission::parse(&json!({"structure_user": 3})).unwrap_err();
        assert!(err.to_string().contains("permission.structure_user"), "{err}");
        let err = Permission::parse(
            &json!({"dev": {"tables": {"dog": {"attribute_permissions": [{"read": true}]}}}}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("attribute_name"), "{err}");
    }

    #[test]
    fn a_super_user_may_everything() {
        let su = Permission::super_user();
        assert!(su.may("any", "table", Access::Delete));
        assert!(su.may_attribute("any", "table", "secret", Access::Read));
        assert!(su.may_change_structure("any"));
    }
}
