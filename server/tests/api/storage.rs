//! Migrations and sessions on both backends: SQLite (the embedded default)
//! and the local PostgreSQL server.

use engine::{Lore, Settings};
use entity::cluster_state;
use sea_orm::{ConnectionTrait, DatabaseBackend, EntityTrait, Statement};

use crate::helpers::{drop_postgres, fresh_postgres, spawn_app_with, Options};

const TABLES: [&str; 37] = [
    "access_key",
    "admin_account",
    "admin_session",
    "answer_rating",
    "answer_run",
    "app_database",
    "app_role",
    "app_table",
    "app_user",
    "audit_log",
    "bootstrap_token",
    "cluster_setting",
    "cluster_state",
    "content_gap",
    "document",
    "escalation_tier",
    "golden_question",
    "index_job",
    "key_usage",
    "mcp_session",
    "metric_latency",
    "metric_rollup",
    "model_target",
    "oauth_client",
    "oauth_grant",
    "oauth_token",
    "oidc_login",
    "pinned_answer",
    "profile",
    "profile_version",
    "provider_account",
    "role_binding",
    "rollup_count",
    "seaql_migrations",
    "source",
    "stored_upload",
    "target_probe",
];

async fn tables(lore: &Lore) -> Vec<String> {
    let sql = match lore.db.get_database_backend() {
        DatabaseBackend::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        }
        _ => "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
    };
    let rows = lore.db.query_all(Statement::from_string(lore.db.get_database_backend(), sql)).await.unwrap();
    rows.iter().map(|row| row.try_get::<String>("", "name").unwrap()).collect()
}

async fn applied_migrations(lore: &Lore) -> i64 {
    let row = lore
        .db
        .query_one(Statement::from_string(
            lore.db.get_database_backend(),
            "SELECT COUNT(*) AS n FROM seaql_migrations",
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get::<i64>("", "n").unwrap()
}

async fn migrate_from_empty_then_start_again(settings: Settings) {
    let first = Lore::open(settings.clone()).await.unwrap();
    assert_eq!(tables(&first).await, TABLES);
    let migrations = applied_migrations(&first).await;
    assert!(migrations >= 1);
    let cluster = cluster_state::Entity::find().all(&first.db).await.unwrap();
    assert_eq!(cluster.len(), 1);
    first.db.clone().close().await.unwrap();

    let second = Lore::open(settings).await.unwrap();
    assert!(engine::store::pending_migrations(&second.db).await.unwrap().is_empty());
    assert_eq!(tables(&second).await, TABLES);
    assert_eq!(applied_migrations(&second).await, migrations);
    // The cluster keeps its identity across starts.
    assert_eq!(cluster_state::Entity::find().all(&second.db).await.unwrap(), cluster);
}

#[tokio::test]
async fn sqlite_migrates_from_empty_and_a_second_start_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings { data_dir: dir.path().to_owned(), ..Settings::default() };
    migrate_from_empty_then_start_again(settings.clone()).await;
    assert!(dir.path().join("lore.db").is_file());

    // Write-ahead log with NORMAL sync: no journal fsyncs on each commit.
    let lore = Lore::open(settings).await.unwrap();
    let pragma = |name: &str| Statement::from_string(DatabaseBackend::Sqlite, format!("PRAGMA {name}"));
    let journal = lore.db.query_one(pragma("journal_mode")).await.unwrap().unwrap();
    assert_eq!(journal.try_get_by_index::<String>(0).unwrap(), "wal");
    let synchronous = lore.db.query_one(pragma("synchronous")).await.unwrap().unwrap();
    assert_eq!(synchronous.try_get_by_index::<i32>(0).unwrap(), 1, "1 is NORMAL");
}

#[tokio::test]
async fn postgres_migrates_from_empty_and_a_second_start_changes_nothing() {
    let (url, name) = fresh_postgres().await;
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings { data_dir: dir.path().to_owned(), ..Settings::default() };
    settings.database.url = Some(engine::settings::Secret::new(url));
    migrate_from_empty_then_start_again(settings).await;
    assert!(!dir.path().join("lore.db").exists(), "PostgreSQL was used, not SQLite");
    drop_postgres(&name).await;
}

#[tokio::test]
async fn sessions_work_and_end_on_postgres() {
    let (url, name) = fresh_postgres().await;
    {
        let app = spawn_app_with(Options { database_url: Some(url), ..Options::default() }).await;
        app.sign_in_with_bootstrap_link().await;
        assert_eq!(app.get("/admin/setup-state/").await.status(), 200);
        let signed_out =
            app.client.post(app.url("/auth/signout")).header("origin", &app.base_url).send().await.unwrap();
        assert_eq!(signed_out.status(), 303);
        assert_eq!(app.get("/admin/setup-state/").await.status(), 401);
        app.lore.db.clone().close().await.unwrap();
    }
    drop_postgres(&name).await;
}
