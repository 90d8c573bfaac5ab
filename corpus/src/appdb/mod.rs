//! The application database: users and roles with HarperDB's permission
//! tree, and databases of typed tables that live as real tables in Lore's
//! relational database (SQLite or PostgreSQL).
//!
//! - [`cache`]: users, roles and tables held in memory, dropped when any
//!   process changes them.
//! - [`permission`]: the tree and the only checks that read it.
//! - [`users`]: roles and users, and who a request acts as ([`Principal`]).
//! - [`catalog`]: databases, tables and typed attributes, and the DDL behind them.
//! - [`records`]: inserts, updates, deletes and searches, with every table and
//!   attribute permission applied; expired records are hidden and swept.
//! - [`schema_file`]: the schema file (GraphQL SDL) parsed into declarations;
//!   [`schema`] applies them to the catalog.
//!
//! Every write runs in one transaction with its audit entry, so a refused
//! or failed call changes nothing. A change to a role, a user's role or the
//! structure fires an [`Event`] (the tool server recomputes what each
//! session sees).

pub mod cache;
pub mod catalog;
pub mod permission;
pub mod records;
pub mod schema;
pub mod schema_file;
pub mod system;
pub mod users;

pub use permission::{Access, Permission};
pub use users::Principal;

/// What changed, for those who keep a view of what a user may see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A role, or a user's role or activity, changed.
    RoleChanged,
    /// A database, table or attribute was made or dropped.
    SchemaReloaded,
}

/// Why an application-database call was refused. Each maps to a status and
/// a stable code at the edge.
#[derive(Debug, thiserror::Error)]
pub enum AppDbError {
    /// The caller's role does not allow it: `action` (`call`, `read`,
    /// `insert`, `update`, `delete`, `change the structure of`) on `target`
    /// (an operation, `database.table` or `database.table.attribute`).
    #[error("permission denied: you may not {action} {target}")]
    PermissionDenied { action: String, target: String },
    #[error("there is no operation `{0}`")]
    UnknownOperation(String),
    #[error("there is no database `{0}`")]
    UnknownDatabase(String),
    #[error("there is no table `{0}`")]
    UnknownTable(String),
    #[error("there is no resource `{0}`")]
    UnknownResource(String),
    /// A tool the caller's session does not offer.
    #[error("there is no tool `{0}`")]
    UnknownTool(String),
    /// No record with that primary key (REST's GET, PATCH, DELETE).
    #[error("there is no record {0}")]
    UnknownRecord(String),
    #[error("there is no attribute `{0}`")]
    UnknownAttribute(String),
    #[error("`{attribute}` must be {expected}")]
    TypeMismatch { attribute: String, expected: String },
    #[error("a record with primary key {key} already exists in `{table}`")]
    DuplicateKey { table: String, key: String },
    #[error("`{0}` is required")]
    MissingAttribute(String),
    #[error("{0} already exists")]
    AlreadyExists(String),
    #[error("there is no user `{0}`")]
    UnknownUser(String),
    #[error("there is no role `{0}`")]
    UnknownRole(String),
    #[error("the role `{0}` still has users")]
    RoleInUse(String),
    #[error("{0}")]
    InvalidPermission(String),
    /// A declaration of the schema file, by its line.
    #[error("the schema file, line {line}: {message}")]
    InvalidSchema { line: usize, message: String },
    /// A name, value or argument the caller must fix.
    #[error("{0}")]
    Invalid(String),
}

impl From<AppDbError> for crate::Error {
    fn from(err: AppDbError) -> Self {
        crate::Error::AppDb(err)
    }
}

impl AppDbError {
    pub fn denied(action: &str, target: impl Into<String>) -> Self {
        AppDbError::PermissionDenied { action: action.to_owned(), target: target.into() }
    }
}

/// A name of a database, table or attribute: a letter or `_`, then letters,
/// digits and `_`, at most `max` characters. Names become SQL identifiers,
/// so nothing else is accepted.
pub(crate) fn check_name(what: &str, name: &str, max: usize) -> Result<(), AppDbError> {
    let mut chars = name.chars();
    let valid = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= max;
    if valid {
        Ok(())
    } else {
        Err(AppDbError::Invalid(format!(
            "`{name}` is not a valid {what} name (a letter or _, then letters, digits or _, at most {max} characters)"
        )))
    }
}
