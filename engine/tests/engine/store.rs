//! The connection pool `store::connect` makes.

use std::time::Duration;

use sea_orm::{ConnectionTrait, DbBackend, Statement};

use crate::support;

/// Connections are not pinged before each use, except on PostgreSQL one
/// idle for `PING_IDLE_AFTER`: so when the server closed the pool's
/// connections while they sat idle (a restart, an idle-session reaper), the
/// next statement gets a fresh connection instead of failing.
#[tokio::test]
async fn a_postgres_connection_closed_while_idle_is_replaced_before_use() {
    let (url, name) = support::postgres().await;
    let db = engine::store::connect(&url).await.unwrap();
    db.execute_unprepared("SELECT 1").await.unwrap();

    let admin = sea_orm::Database::connect(support::postgres_admin_url()).await.unwrap();
    let killed = admin
        .query_all(Statement::from_string(
            DbBackend::Postgres,
            format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"),
        ))
        .await
        .unwrap();
    assert!(!killed.is_empty(), "the pool had a connection open");
    tokio::time::sleep(engine::store::PING_IDLE_AFTER + Duration::from_millis(500)).await;
    db.execute_unprepared("SELECT 1").await.expect("a fresh connection replaced the closed one");

    db.close().await.unwrap();
    support::drop_postgres(&name).await;
}
