//! The admin-record database: connection, migrations, and the cluster row.
//!
//! SeaORM hides the backend; the same code runs on SQLite (the embedded
//! default) and PostgreSQL (`database.url = "postgres://…"`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::Utc;
use entity::cluster_state;
use migration::{Migrator, MigratorTrait};
use sea_orm::{ActiveModelTrait, ConnectOptions, Database, DatabaseConnection, EntityTrait, Set};

use crate::{Error, Result, Settings};

/// Makes the directories this machine keeps Lore's data in, when missing:
/// the data directory, the folder of a SQLite file that `database.url`
/// names, and a local `vectors.uri`. Every command that opens the data goes
/// through here first (`engine::Lore::open`, `lore migrate`), so none meets
/// a missing directory as a database error. A directory that cannot be made
/// or written is [`Error::Directory`], naming the path and why.
pub fn prepare_dirs(settings: &Settings) -> Result<()> {
    ensure_dir("the data directory", &settings.data_dir)?;
    if let Some(file) = sqlite_file(&settings.database_url()) {
        if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
            ensure_dir("the database's directory", parent)?;
        }
    }
    let vectors = settings.vectors_uri();
    if !vectors.contains("://") {
        ensure_dir("the vectors directory", Path::new(&vectors))?;
    }
    Ok(())
}

/// Makes `path` a directory Lore can write in: created with its parents
/// when missing; a file in the way or no permission is a clear error.
pub fn ensure_dir(what: &'static str, path: &Path) -> Result<()> {
    let refuse = |reason: String| Error::Directory { what, path: path.to_owned(), reason };
    if path.exists() && !path.is_dir() {
        return Err(refuse("a file is in the way".into()));
    }
    std::fs::create_dir_all(path).map_err(|err| refuse(describe_io(&err)))?;
    // A directory that exists but cannot be written fails here, by name,
    // instead of at the first write deep inside SQLite or LanceDB.
    let probe = path.join(format!(".lore-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|err| refuse(describe_io(&err)))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

fn describe_io(err: &std::io::Error) -> String {
    match err.kind() {
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotADirectory => {
            "a file is in the way".into()
        }
        std::io::ErrorKind::ReadOnlyFilesystem => "the file system is read-only".into(),
        _ => err.to_string(),
    }
}

/// The file a SQLite URL names (`sqlite://path?mode=rwc`, `sqlite:path`),
/// or `None` for other databases and in-memory ones.
fn sqlite_file(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    if path.is_empty() || path == ":memory:" {
        return None;
    }
    Some(PathBuf::from(path))
}

/// Connects with a small pool; SQLite files are created when missing.
///
/// SQLite runs in write-ahead-log mode with `synchronous = NORMAL`: readers
/// no longer wait for a writer, and a commit (every answer records its run
/// and rollups) appends to the log without the several fsyncs of the default
/// rollback journal. A crash cannot corrupt the file; a power cut may lose
/// the last commits before a checkpoint.
///
/// A pooled connection is not pinged each time it is handed out (sqlx's
/// default): that was a round trip before every statement. sqlx still
/// pings it as it comes back, so one that broke in use is dropped then; on
/// PostgreSQL a connection idle for [`PING_IDLE_AFTER`] or longer (which
/// the server may have closed meanwhile) is pinged before it is handed out.
/// An SQLite connection is a file in this process and cannot go away.
pub async fn connect(url: &str) -> Result<DatabaseConnection> {
    use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
    let mut options = ConnectOptions::new(url.to_owned());
    options
        .max_connections(if url.starts_with("sqlite:") { 4 } else { 10 })
        .connect_timeout(Duration::from_secs(10))
        .test_before_acquire(false)
        .sqlx_logging(false)
        .map_sqlx_sqlite_opts(|sqlite| {
            sqlite.journal_mode(SqliteJournalMode::Wal).synchronous(SqliteSynchronous::Normal)
        });
    if url.starts_with("postgres") {
        return connect_postgres(url, options).await;
    }
    Ok(Database::connect(options).await?)
}

/// How long a PostgreSQL connection may sit in the pool before it is
/// pinged on its way out.
pub const PING_IDLE_AFTER: Duration = Duration::from_secs(5);

async fn connect_postgres(url: &str, options: ConnectOptions) -> Result<DatabaseConnection> {
    use sea_orm::sqlx::postgres::{PgConnectOptions, Postgres};
    use sea_orm::sqlx::{ConnectOptions as _, Connection as _};
    let connect = url
        .parse::<PgConnectOptions>()
        .map_err(|err| sea_orm::DbErr::Conn(sea_orm::RuntimeErr::SqlxError(err)))?
        .disable_statement_logging();
    let pool = options
        .sqlx_pool_options::<Postgres>()
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_IDLE_AFTER {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
        .connect_with(connect)
        .await
        .map_err(|err| sea_orm::DbErr::Conn(sea_orm::RuntimeErr::SqlxError(err)))?;
    Ok(sea_orm::SqlxPostgresConnector::from_sqlx_postgres_pool(pool))
}

/// Whether SQLite gave up waiting for another writer's lock: `SQLITE_BUSY`
/// (5) or one of its extended codes, which keep 5 in their low byte. The
/// statement changed nothing, so the caller may simply try again.
pub fn is_busy(err: &sea_orm::DbErr) -> bool {
    use sea_orm::{DbErr, RuntimeErr};
    let (DbErr::Conn(RuntimeErr::SqlxError(sqlx))
    | DbErr::Exec(RuntimeErr::SqlxError(sqlx))
    | DbErr::Query(RuntimeErr::SqlxError(sqlx))) = err
    else {
        return false;
    };
    sqlx.as_database_error().is_some_and(|database| {
        database.try_downcast_ref::<sea_orm::sqlx::sqlite::SqliteError>().is_some()
            && database.code().and_then(|code| code.parse::<i32>().ok()).is_some_and(|code| code & 0xff == 5)
    })
}

/// Begins a transaction that will write. On SQLite it takes the write lock
/// first (a write that changes nothing): a deferred transaction that reads
/// and then writes fails at once, with a busy error no timeout waits out,
/// when another connection committed in between (the recorder writing a
/// key's usage behind the previous request, say); one that starts with a
/// write waits its turn.
pub async fn begin_write(db: &DatabaseConnection) -> Result<sea_orm::DatabaseTransaction> {
    use sea_orm::{ConnectionTrait, TransactionTrait};
    let txn = db.begin().await?;
    if txn.get_database_backend() == sea_orm::DbBackend::Sqlite {
        txn.execute_unprepared("UPDATE cluster_state SET id = id").await?;
    }
    Ok(txn)
}

/// Work that only one process of the cluster may do at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lock {
    /// Queueing and claiming indexing runs: a claim checks every running
    /// job for overlap, and queueing checks for a run already queued, so
    /// each must see the others' writes.
    Jobs,
    /// Folding closed days and rebuilding the rollups: two folds of one day
    /// at once would each add the same rows to its tail.
    Rollups,
}

impl Lock {
    /// The PostgreSQL advisory lock key: eight ASCII letters.
    fn key(self) -> i64 {
        match self {
            Lock::Jobs => 0x6c6f_7265_636c_6169,    // "loreclai"
            Lock::Rollups => 0x6c6f_7265_726f_6c6c, // "lorerold"
        }
    }
}

/// [`begin_write`] holding `lock` until the transaction ends. On PostgreSQL
/// that is a transaction-scoped advisory lock, which every replica on the
/// database waits for; on SQLite the write lock [`begin_write`] takes is
/// already one per database file.
pub async fn begin_locked(db: &DatabaseConnection, lock: Lock) -> Result<sea_orm::DatabaseTransaction> {
    use sea_orm::ConnectionTrait;
    let txn = begin_write(db).await?;
    if txn.get_database_backend() == sea_orm::DbBackend::Postgres {
        txn.execute_unprepared(&format!("SELECT pg_advisory_xact_lock({})", lock.key())).await?;
    }
    Ok(txn)
}

/// [`begin_write`] sharing `lock` with every other such transaction until
/// it ends, so that [`begin_locked`] on the same lock waits for them all
/// and holds them off while it runs: on PostgreSQL a shared
/// transaction-scoped advisory lock (adding to the rollups shares
/// [`Lock::Rollups`], which a rebuild takes alone); on SQLite the write
/// lock already admits one writer at a time. The lock is the transaction's
/// first statement, before any row is locked, so a holder never waits for
/// it while holding rows (no deadlock with the exclusive holder); it is
/// waited for at most [`SHARED_LOCK_WAIT`], and a transaction that could
/// not have it fails rather than hold its connection longer.
pub async fn begin_sharing(db: &DatabaseConnection, lock: Lock) -> Result<sea_orm::DatabaseTransaction> {
    use sea_orm::ConnectionTrait;
    let txn = begin_write(db).await?;
    if txn.get_database_backend() == sea_orm::DbBackend::Postgres {
        txn.execute_unprepared(&format!("SET LOCAL lock_timeout = '{SHARED_LOCK_WAIT}'")).await?;
        txn.execute_unprepared(&format!("SELECT pg_advisory_xact_lock_shared({})", lock.key())).await?;
        txn.execute_unprepared("SET LOCAL lock_timeout = 0").await?;
    }
    Ok(txn)
}

/// How long [`begin_sharing`] waits for its lock on PostgreSQL.
pub const SHARED_LOCK_WAIT: &str = "5s";

/// A stored JSON value decoded into its type; one that cannot be read is an
/// error naming `what`, never a silent default that would hide corruption.
pub fn decode<T: serde::de::DeserializeOwned>(what: &str, value: serde_json::Value) -> Result<T> {
    serde_json::from_value(value)
        .map_err(|err| crate::Error::Internal(format!("the stored {what} cannot be read: {err}")))
}

/// Applies pending migrations. Applying them again changes nothing.
pub async fn migrate(db: &DatabaseConnection) -> Result<()> {
    Migrator::up(db, None).await?;
    Ok(())
}

/// The names of migrations not yet applied (empty when the schema is current).
pub async fn pending_migrations(db: &DatabaseConnection) -> Result<Vec<String>> {
    Ok(Migrator::get_pending_migrations(db)
        .await?
        .iter()
        .map(|migration| migration.name().to_owned())
        .collect())
}

/// Creates the cluster row on first start; leaves an existing one untouched.
pub async fn ensure_cluster(db: &DatabaseConnection) -> Result<cluster_state::Model> {
    ensure_cluster_in(db).await
}

/// [`ensure_cluster`] on any connection, a transaction included.
pub async fn ensure_cluster_in(db: &impl sea_orm::ConnectionTrait) -> Result<cluster_state::Model> {
    if let Some(existing) = cluster_state::Entity::find_by_id(cluster_state::SINGLETON_ID).one(db).await? {
        return Ok(existing);
    }
    let row = cluster_state::ActiveModel {
        id: Set(cluster_state::SINGLETON_ID),
        cluster_id: Set(uuid::Uuid::new_v4().to_string()),
        created_at: Set(Utc::now()),
        setup_step: Set("persona".to_owned()),
        corpus_fingerprint: Set(None),
        appdb_generation: Set(0),
    };
    Ok(row.insert(db).await?)
}

/// Whether the database answers a trivial query and the schema is current:
/// what `/readyz` reports.
pub async fn check_ready(db: &DatabaseConnection) -> Result<()> {
    db.ping().await?;
    let pending = pending_migrations(db).await?;
    if pending.is_empty() {
        Ok(())
    } else {
        Err(crate::Error::Internal(format!("migrations not applied: {}", pending.join(", "))))
    }
}

/// Stores one admin-changed setting (`cluster_setting`), inserting or
/// replacing it; `conn` may be a transaction.
pub async fn put_setting(
    conn: &impl sea_orm::ConnectionTrait,
    key: &str,
    value: serde_json::Value,
    by: &str,
) -> Result<()> {
    use entity::cluster_setting::{ActiveModel, Column, Entity};
    Entity::insert(ActiveModel {
        key: Set(key.to_owned()),
        value: Set(value),
        updated_at: Set(Utc::now()),
        updated_by: Set(by.to_owned()),
    })
    .on_conflict(
        sea_orm::sea_query::OnConflict::column(Column::Key)
            .update_columns([Column::Value, Column::UpdatedAt, Column::UpdatedBy])
            .to_owned(),
    )
    .exec_without_returning(conn)
    .await?;
    Ok(())
}

/// Removes a stored setting (its default applies again); `conn` may be a
/// transaction.
pub async fn delete_setting(conn: &impl sea_orm::ConnectionTrait, key: &str) -> Result<()> {
    entity::cluster_setting::Entity::delete_by_id(key.to_owned()).exec(conn).await?;
    Ok(())
}

/// One stored setting, if an admin set it.
pub async fn setting(conn: &impl sea_orm::ConnectionTrait, key: &str) -> Result<Option<serde_json::Value>> {
    Ok(entity::cluster_setting::Entity::find_by_id(key.to_owned()).one(conn).await?.map(|row| row.value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_directories_are_made_and_a_file_in_the_way_is_named() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("not/yet/data");
        let settings = Settings { data_dir: data.clone(), ..Settings::default() };
        prepare_dirs(&settings).unwrap();
        assert!(data.is_dir());
        assert!(data.join("lancedb").is_dir(), "the default vectors directory");
        // Twice is the same as once, and leaves no probe file behind.
        prepare_dirs(&settings).unwrap();
        assert_eq!(std::fs::read_dir(&data).unwrap().count(), 1, "only lancedb/");

        let blocked = root.path().join("a-file");
        std::fs::write(&blocked, "x").unwrap();
        let settings = Settings { data_dir: blocked.clone(), ..Settings::default() };
        let err = prepare_dirs(&settings).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("the data directory {} cannot be used: a file is in the way", blocked.display())
        );
        let below = Settings { data_dir: blocked.join("data"), ..Settings::default() };
        let err = prepare_dirs(&below).unwrap_err().to_string();
        assert!(err.starts_with(&format!("the data directory {}", blocked.join("data").display())), "{err}");
    }

    #[test]
    fn a_sqlite_url_names_its_file_and_other_databases_none() {
        assert_eq!(sqlite_file("sqlite://./data/lore.db?mode=rwc"), Some(PathBuf::from("./data/lore.db")));
        assert_eq!(sqlite_file("sqlite:/srv/lore.db"), Some(PathBuf::from("/srv/lore.db")));
        assert_eq!(sqlite_file("sqlite::memory:"), None);
        assert_eq!(sqlite_file("postgres://lore@127.0.0.1/lore"), None);
    }
}
