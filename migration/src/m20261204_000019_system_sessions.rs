//! `system.mcp_session`: the tool server's sessions as a table of Lore's
//! own `system` database (`appdb::system`), readable by super users through
//! the operations API. A view of `mcp_session` under the name an
//! application table of that database would have, with its JSON as text and
//! its times as RFC 3339 in milliseconds (what `appdb::records` reads and
//! compares a `Date` as), on SQLite and PostgreSQL alike.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DatabaseBackend, Statement};

#[derive(DeriveMigrationName)]
pub struct Migration;

const VIEW: &str = "data_system__mcp_session";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // `system` was an ordinary database name before: an install that used
        // it must rename it first, or its tables would hide behind Lore's.
        let taken = Statement::from_string(
            manager.get_database_backend(),
            "SELECT name FROM app_database WHERE name = 'system'",
        );
        if !manager.get_connection().query_all(taken).await?.is_empty() {
            return Err(DbErr::Migration(
                "an application database is named `system`, which Lore now keeps for its own tables: \
                 move its tables to another database (or drop it) with the previous version, then start again"
                    .into(),
            ));
        }
        let time = |column: &str| match manager.get_database_backend() {
            DatabaseBackend::Sqlite => format!("strftime('%Y-%m-%dT%H:%M:%fZ', {column})"),
            _ => format!("to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"),
        };
        let sql = format!(
            "CREATE VIEW {VIEW} AS SELECT id, profile, CAST(principal AS TEXT) AS principal, \
             protocol_version, CAST(client AS TEXT) AS client, CAST(snapshot AS TEXT) AS snapshot, \
             CAST(subscriptions AS TEXT) AS subscriptions, {} AS created_at, {} AS last_seen_at \
             FROM mcp_session",
            time("created_at"),
            time("last_seen_at"),
        );
        manager.get_connection().execute_unprepared(&sql).await.map(|_| ())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.get_connection().execute_unprepared(&format!("DROP VIEW {VIEW}")).await.map(|_| ())
    }
}
