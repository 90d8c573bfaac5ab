//! What the ingestion tests share: a Lore on a temporary data directory with
//! the real model files, and running a job to its end in-process.

#![allow(dead_code)]

pub mod object_store;
pub mod site;

use std::path::PathBuf;

use engine::ingest::{jobs, Progress};
use engine::{Lore, Settings};
use sea_orm::ConnectionTrait;

pub fn models_dir() -> PathBuf {
    std::env::var_os("LORE_TEST_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/lore/models"))
}

pub async fn open_with(configure: impl FnOnce(&mut Settings)) -> (Lore, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = Settings { data_dir: dir.path().to_owned(), ..Settings::default() };
    settings.models.dir = Some(models_dir());
    settings.ingest.allow_private_addresses = true;
    configure(&mut settings);
    (Lore::open(settings).await.unwrap(), dir)
}

pub async fn open() -> (Lore, tempfile::TempDir) {
    open_with(|_| {}).await
}

/// Queues a run of `source_id` (or a full reindex) and runs it here.
pub async fn run(lore: &Lore, source_id: Option<&str>, full: bool) -> entity::index_job::Model {
    let job = engine::ingest::lifecycle::start_run(lore, source_id, full, "test").await.unwrap();
    run_queued(lore, &job.id).await
}

/// Claims a queued job and runs it to its end.
pub async fn run_queued(lore: &Lore, job_id: &str) -> entity::index_job::Model {
    let owner = jobs::owner_id("test");
    let held = jobs::claim(lore, job_id, &owner).await.unwrap().expect("the job is queued");
    jobs::run(lore, held, &owner, None).await.unwrap()
}

/// The URIs of a source's indexed documents, sorted.
pub async fn indexed_uris(lore: &Lore, source: &str) -> Vec<String> {
    let mut uris: Vec<String> = engine::sources::documents(lore, source)
        .await
        .unwrap()
        .into_iter()
        .filter(|d| d.status == engine::sources::DocumentStatus::Indexed)
        .map(|d| d.uri)
        .collect();
    uris.sort();
    uris
}

pub fn progress(job: &entity::index_job::Model) -> Progress {
    serde_json::from_value(job.progress.clone()).unwrap()
}

/// A PDF holding one Flate stream of `mib` MiB of zeros: about 1 KB a MiB.
pub fn pdf_bomb(mib: usize) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..mib {
        encoder.write_all(&zeros).unwrap();
    }
    let stream = encoder.finish().unwrap();
    let mut pdf = format!("%PDF-1.4\n1 0 obj\n<< /Length {} /Filter /FlateDecode >>\nstream\n", stream.len())
        .into_bytes();
    pdf.extend_from_slice(&stream);
    pdf.extend_from_slice(b"\nendstream\nendobj\ntrailer\n<< >>\n%%EOF\n");
    pdf
}

/// The local PostgreSQL server's maintenance database, as its superuser.
pub fn postgres_admin_url() -> String {
    std::env::var("LORE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// A new, empty database on the local PostgreSQL server: its URL and name.
pub async fn postgres() -> (String, String) {
    let admin_url = postgres_admin_url();
    let name = format!("lore_test_{}", uuid::Uuid::new_v4().simple());
    let db = sea_orm::Database::connect(&admin_url).await.expect("the local PostgreSQL server is up");
    db.execute_unprepared(&format!("CREATE DATABASE {name}")).await.unwrap();
    let mut url = url::Url::parse(&admin_url).unwrap();
    url.set_path(&name);
    (url.to_string(), name)
}

pub async fn drop_postgres(name: &str) {
    let admin_url = postgres_admin_url();
    if let Ok(db) = sea_orm::Database::connect(&admin_url).await {
        let _ = db.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
    }
}
