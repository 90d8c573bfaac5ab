//! Lore's own `system` database: what Lore keeps about itself, readable
//! through the operations API as HarperDB's `system` tables are, by super
//! users only (`Permission` grants no one else any of it), and never
//! written or restructured there (the catalog and the record writes refuse).
//! One table so far, `system.mcp_session`: the tool server's sessions, a
//! view of the table `mcp_session` (migration 000019) with its JSON as text
//! and its times as RFC 3339, so every search of `appdb::records` runs on
//! it unchanged.

use chrono::DateTime;

use super::catalog::{AttrType, Attribute, Origin, Table, TableOptions};
use super::AppDbError;

/// The database's name, which no application database may take.
pub const DATABASE: &str = "system";

/// The system tables, by name.
pub fn tables() -> Vec<Table> {
    vec![mcp_session()]
}

/// The system table `name`, if there is one.
pub fn table(name: &str) -> Option<Table> {
    tables().into_iter().find(|table| table.name == name)
}

/// Refuses any write or change of structure in the `system` database.
pub fn refuse_change(database: &str) -> Result<(), AppDbError> {
    if database == DATABASE {
        return Err(AppDbError::Invalid(format!(
            "`{DATABASE}` is Lore's own database: it can be read (by super users), not written or changed"
        )));
    }
    Ok(())
}

fn mcp_session() -> Table {
    let attribute =
        |name: &str, kind: AttrType, nullable: bool| Attribute { nullable, ..Attribute::new(name, kind) };
    Table {
        id: "system.mcp_session".into(),
        database: DATABASE.into(),
        name: "mcp_session".into(),
        sql_name: "data_system__mcp_session".into(),
        primary_key: "id".into(),
        attributes: vec![
            attribute("id", AttrType::ID, false),
            attribute("profile", AttrType::String, false),
            attribute("principal", AttrType::Object, false),
            attribute("protocol_version", AttrType::String, false),
            attribute("client", AttrType::Object, true),
            attribute("snapshot", AttrType::Object, false),
            attribute("subscriptions", AttrType::Array, false),
            attribute("created_at", AttrType::Date, false),
            attribute("last_seen_at", AttrType::Date, false),
        ],
        origin: Origin::System,
        options: TableOptions::default(),
        created_at: DateTime::UNIX_EPOCH,
    }
}
