//! A crash in the middle of indexing: `lore ingest` is killed with SIGKILL
//! partway through a crawl, `lore serve` starts on the same data, resumes
//! the job, and the corpus ends exactly as a clean run leaves it; the same
//! for a git repository's first sync, whose commit is recorded only once
//! the resumed sync completes.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use engine::{Lore, Settings};
use entity::{document, index_job};
use sea_orm::EntityTrait;

use crate::helpers::{drop_postgres, fresh_postgres, git, models_dir};
use crate::object_store::ObjectStore;
use crate::site::Site;

const PAGES: usize = 60;

fn lore(data_dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lore"));
    for (name, _) in std::env::vars() {
        if name.starts_with("LORE_") {
            command.env_remove(name);
        }
    }
    command
        .env("LORE_DATA_DIR", data_dir)
        .env("LORE_MODELS__DIR", models_dir())
        .env("LORE_INGEST__ALLOW_PRIVATE_ADDRESSES", "true")
        .env("LORE_INGEST__JOB_LEASE_SECONDS", "2")
        .env("LORE_SERVER__BIND", "127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

async fn open(data_dir: &Path) -> Lore {
    let mut settings = Settings { data_dir: data_dir.to_owned(), ..Settings::default() };
    settings.models.dir = Some(models_dir());
    Lore::open(settings).await.unwrap()
}

async fn the_job(lore: &Lore) -> index_job::Model {
    let mut jobs = index_job::Entity::find().all(&lore.db).await.unwrap();
    assert_eq!(jobs.len(), 1, "one run: {jobs:?}");
    jobs.remove(0)
}

fn done(job: &index_job::Model) -> u64 {
    job.progress["done"].as_u64().unwrap_or(0)
}

/// Chunk count, and whether it agrees with the documents' own counts.
async fn corpus(lore: &Lore) -> (usize, i64, usize) {
    let stored = lore.chunks().await.unwrap().count(None).await.unwrap();
    let docs = document::Entity::find().all(&lore.db).await.unwrap();
    let by_documents = docs.iter().map(|d| i64::from(d.chunk_count)).sum();
    let indexed = docs.iter().filter(|d| d.status == "indexed").count();
    (stored, by_documents, indexed)
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(started.elapsed() < within, "the process did not finish in {within:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills `run` with SIGKILL (no clean-up of any kind) once its job has done
/// `at` documents.
async fn kill_at(mut run: Child, watcher: &Lore, at: u64) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let jobs = index_job::Entity::find().all(&watcher.db).await.unwrap();
        if jobs.first().is_some_and(|job| done(job) >= at) {
            break;
        }
        assert!(run.try_wait().unwrap().is_none(), "the run ended before it could be interrupted");
        assert!(Instant::now() < deadline, "the run made no progress");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    run.kill().unwrap();
    run.wait().unwrap();
}

/// Starts `lore serve` on `dir`, waits until it has finished the job, stops
/// it with SIGTERM and returns the job as it ended.
async fn resumed_by_serve(dir: &Path, watcher: &Lore) -> index_job::Model {
    resumed_by(lore(dir), watcher).await
}

/// [`resumed_by_serve`] with `lore` as configured.
async fn resumed_by(mut lore: Command, watcher: &Lore) -> index_job::Model {
    let mut serve = lore.arg("serve").spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    let resumed = loop {
        let job = the_job(watcher).await;
        if !matches!(job.status.as_str(), "queued" | "running") {
            break job;
        }
        assert!(Instant::now() < deadline, "the job was not resumed: {job:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    Command::new("kill").args(["-TERM", &serve.id().to_string()]).status().unwrap();
    tokio::task::spawn_blocking(move || wait_exit(&mut serve, Duration::from_secs(30))).await.unwrap();
    resumed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_killed_mid_run_resumes_after_restart_with_no_duplicate_or_lost_chunks() {
    let site = Site::start(PAGES, Duration::from_millis(100)).await;
    let start_url = format!("{}/docs/", site.base_url);

    // A clean run, for comparison.
    let clean_dir = tempfile::tempdir().unwrap();
    let mut clean = lore(clean_dir.path()).args(["ingest", &start_url, "--json"]).spawn().unwrap();
    let status =
        tokio::task::spawn_blocking(move || wait_exit(&mut clean, Duration::from_secs(300))).await.unwrap();
    assert!(status.success());
    let clean_lore = open(clean_dir.path()).await;
    let clean_job = the_job(&clean_lore).await;
    let (clean_chunks, clean_by_docs, clean_indexed) = corpus(&clean_lore).await;
    assert_eq!(clean_indexed, PAGES);
    assert_eq!(clean_chunks as i64, clean_by_docs);

    // The same run, killed partway.
    let dir = tempfile::tempdir().unwrap();
    // Opened first, so the schema exists before the CLI starts.
    let watcher = open(dir.path()).await;
    let ingest = lore(dir.path()).args(["ingest", &start_url, "--json"]).spawn().unwrap();
    kill_at(ingest, &watcher, 15).await;
    let interrupted = the_job(&watcher).await;
    assert_eq!(interrupted.status, "running", "left as the crash left it");
    assert!(done(&interrupted) < PAGES as u64);

    // A server starts on the same data and finishes the job.
    let resumed = resumed_by_serve(dir.path(), &watcher).await;

    assert_eq!(resumed.status, "succeeded", "{:?}", resumed.message);
    assert_eq!(resumed.attempts, 2, "one crash, one resume");
    assert_eq!(done(&resumed), done(&clean_job), "every page counted once: {}", resumed.progress);
    let (chunks, by_docs, indexed) = corpus(&watcher).await;
    assert_eq!(indexed, clean_indexed, "no page lost");
    assert_eq!(chunks, clean_chunks, "no chunk lost or duplicated");
    assert_eq!(chunks as i64, by_docs, "every stored chunk belongs to a document");
}

/// A repository of `files` Markdown files in a working tree whose path ends
/// in `.git` (so `lore ingest` takes it as a repository); its head commit.
fn repository_of(parent: &Path, files: usize) -> (std::path::PathBuf, String) {
    let repo = parent.join("handbook.git");
    std::fs::create_dir_all(repo.join("pages")).unwrap();
    for n in 0..files {
        let text = format!(
            "# Procedure {n}\n\nProcedure {n} calibrates gauge {} at {} kilopascals.\n",
            n * 7,
            n * 3 + 11
        );
        std::fs::write(repo.join("pages").join(format!("p{n:03}.md")), text).unwrap();
    }
    for args in
        [&["init", "--quiet", "-b", "main"][..], &["add", "--all"], &["commit", "--quiet", "-m", "Handbook"]]
    {
        git(&repo, args);
    }
    let head = git(&repo, &["rev-parse", "HEAD"]);
    (repo, head)
}

/// The recorded commit of the one source, if a sync of it completed.
async fn recorded_commit(lore: &Lore) -> Option<String> {
    let sources = engine::sources::list(lore).await.unwrap();
    assert_eq!(sources.len(), 1);
    Some(sources[0].sync_state.as_ref()?["commit"].as_str()?.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_sync_killed_mid_run_resumes_with_nothing_lost_or_doubled_and_records_its_commit_only_at_the_end(
) {
    const FILES: usize = 500;
    let parent = tempfile::tempdir().unwrap();
    let (repo, head) = repository_of(parent.path(), FILES);
    let dir = tempfile::tempdir().unwrap();
    let watcher = open(dir.path()).await;
    let ingest = lore(dir.path()).args(["ingest", repo.to_str().unwrap(), "--json"]).spawn().unwrap();
    kill_at(ingest, &watcher, 100).await;
    let interrupted = the_job(&watcher).await;
    assert_eq!(interrupted.status, "running", "left as the crash left it");
    assert!(done(&interrupted) < FILES as u64);
    assert_eq!(recorded_commit(&watcher).await, None, "the commit moves only when a sync completes");

    let resumed = resumed_by_serve(dir.path(), &watcher).await;
    assert_eq!(resumed.status, "succeeded", "{:?}", resumed.message);
    assert_eq!(resumed.attempts, 2, "one crash, one resume");
    assert_eq!(done(&resumed), FILES as u64, "every file counted once: {}", resumed.progress);
    let (chunks, by_docs, indexed) = corpus(&watcher).await;
    assert_eq!(indexed, FILES, "no file lost");
    assert_eq!(chunks, FILES, "one chunk a file, none lost or doubled");
    assert_eq!(chunks as i64, by_docs, "every stored chunk belongs to a document");
    assert_eq!(recorded_commit(&watcher).await, Some(head));
}

/// Two replicas on one PostgreSQL database and one S3-compatible object
/// store for the vectors, each with a data directory of its own: replica A
/// (`lore ingest`) is killed with SIGKILL mid-crawl; replica B (`lore
/// serve`) takes the run over once A's lease lapses and finishes it, with
/// every page indexed once and every stored chunk accounted for by its
/// document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_job_is_finished_by_another_on_postgres_and_s3_with_no_chunk_lost_or_duplicated()
{
    let site = Site::start(PAGES, Duration::from_millis(100)).await;
    let start_url = format!("{}/docs/", site.base_url);
    let (url, name) = fresh_postgres().await;
    let store = ObjectStore::start().await;
    let vectors = store.bucket("replicas").await;
    let replica = |dir: &Path| {
        let mut command = lore(dir);
        command.env("LORE_DATABASE__URL", &url).env("LORE_VECTORS__URI", &vectors).envs(store.env());
        command
    };
    let (dir_a, dir_b, dir_watcher) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let watcher = {
        let mut settings = Settings { data_dir: dir_watcher.path().to_owned(), ..Settings::default() };
        settings.models.dir = Some(models_dir());
        settings.database.url = Some(engine::settings::Secret::new(url.clone()));
        settings.vectors.uri = Some(vectors.clone());
        settings.vectors.storage_options = store.options();
        Lore::open(settings).await.unwrap()
    };

    let ingest = replica(dir_a.path()).args(["ingest", &start_url, "--json"]).spawn().unwrap();
    kill_at(ingest, &watcher, 15).await;
    let interrupted = the_job(&watcher).await;
    assert_eq!(interrupted.status, "running", "left as the crash left it");
    assert!(done(&interrupted) < PAGES as u64);

    let resumed = resumed_by(replica(dir_b.path()), &watcher).await;
    assert_eq!(resumed.status, "succeeded", "{:?}", resumed.message);
    assert_eq!(resumed.attempts, 2, "one crash, one takeover");
    assert!(resumed
        .lease_owner
        .as_deref()
        .is_some_and(|owner| owner != interrupted.lease_owner.as_deref().unwrap_or_default()));
    let (chunks, by_docs, indexed) = corpus(&watcher).await;
    assert_eq!(indexed, PAGES, "no page lost");
    assert!(chunks > 0);
    assert_eq!(chunks as i64, by_docs, "no chunk lost or duplicated: each stored chunk is its document's");
    drop(watcher);
    drop_postgres(&name).await;
}

/// Five batches of 200 rows: the kill lands in the second.
const ROWS: usize = 1_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_sync_killed_mid_run_resumes_with_no_lost_or_duplicated_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let watcher = open(dir.path()).await;
    let admin = engine::appdb::Principal::Admin { account_id: "ada".into() };
    let call = |body: serde_json::Value| engine::operations::dispatch(&watcher, &admin, body);
    call(serde_json::json!({"operation": "create_table", "table": "note", "primary_key": "id"}))
        .await
        .unwrap();
    let records: Vec<serde_json::Value> = (0..ROWS)
        .map(|id| serde_json::json!({"id": id, "topic": format!("Note {id}"), "body": format!("Note {id} says that shelf {} holds volume {}.", id % 37, id * 7)}))
        .collect();
    for batch in records.chunks(500) {
        call(serde_json::json!({"operation": "insert", "table": "note", "records": batch})).await.unwrap();
    }
    let added = lore(dir.path())
        .args([
            "sources", "add", "--name", "Notes", "--kind", "table", "--table", "note", "--title", "topic",
            "--text", "body",
        ])
        .status()
        .unwrap();
    assert!(added.success(), "the CLI creates the source and queues its first sync");

    // The first sync runs in a CLI process, killed partway.
    let sync = lore(dir.path()).args(["sources", "reindex", "Notes", "--json"]).spawn().unwrap();
    kill_at(sync, &watcher, 200).await;
    let interrupted = the_job(&watcher).await;
    assert_eq!(interrupted.status, "running", "left as the crash left it");
    assert!(done(&interrupted) < ROWS as u64);

    let resumed = resumed_by_serve(dir.path(), &watcher).await;

    assert_eq!(resumed.status, "succeeded", "{:?}", resumed.message);
    assert_eq!(resumed.attempts, 2, "one crash, one resume");
    assert_eq!(done(&resumed), ROWS as u64, "every row counted once: {}", resumed.progress);
    let (chunks, by_docs, indexed) = corpus(&watcher).await;
    assert_eq!(indexed, ROWS, "no row lost");
    assert_eq!(chunks, ROWS, "one chunk a row: none lost, none duplicated");
    assert_eq!(chunks as i64, by_docs, "every stored chunk belongs to a document");
}

/// Row `i` of a synthetic source, its vector a blend of one of 40 centres
/// and its own direction (embeddings fall in clusters).
fn synthetic_row(i: usize) -> engine::index::ChunkRow {
    let unit = |seed: u64| {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
        let mut vector: Vec<f32> = (0..384)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect();
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        vector.iter_mut().for_each(|x| *x /= norm);
        vector
    };
    let (centre, own) = (unit(1_000_000 + (i % 40) as u64), unit(i as u64));
    let mut vector: Vec<f32> = centre.iter().zip(&own).map(|(c, o)| 0.8 * c + 0.6 * o).collect();
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    vector.iter_mut().for_each(|x| *x /= norm);
    engine::index::ChunkRow {
        id: format!("doc{}:{}", i / 100, i % 100),
        source_id: "synthetic".into(),
        view: None,
        document_id: format!("doc{}", i / 100),
        title: format!("Document {}", i / 100),
        url: None,
        heading: None,
        position: (i % 100) as u32,
        text: format!("passage number {i}"),
        content_hash: format!("hash-{i}"),
        vector,
    }
}

/// `lore serve` trains the vector index anew once the corpus doubled, and
/// is killed with SIGKILL mid-training: the previous index goes on
/// serving, the record of the rows it was trained on does not move, and
/// the next `lore serve` trains it again, to the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vector_index_training_killed_mid_way_leaves_the_previous_index_serving_and_is_done_after_restart()
{
    use engine::index::lance::VECTOR_INDEX_MIN_ROWS;
    use engine::upkeep;
    let dir = tempfile::tempdir().unwrap();
    let watcher = open(dir.path()).await;
    let store = watcher.chunks().await.unwrap();
    let table = engine::shadow::active_table(&watcher.db).await.unwrap();
    // Indexed once: the worker looks at the index only then.
    let embedder = watcher.embedder().await.unwrap();
    let fingerprint = engine::fingerprint::Fingerprint {
        embedding_model: embedder.model().to_owned(),
        dimensions: embedder.dimensions(),
        chunking: engine::tuning::chunking(&watcher).await.unwrap(),
    };
    engine::fingerprint::set(&watcher.db, Some(&fingerprint)).await.unwrap();
    let first = VECTOR_INDEX_MIN_ROWS + 1_000;
    store.write_documents(&[], (0..first).map(synthetic_row).collect()).await.unwrap();
    assert_eq!(store.optimize().await.unwrap().trained, Some(first));
    upkeep::record_trained(&watcher, &table, first).await.unwrap();
    // Doubled, not yet folded in.
    store.write_documents(&[], (first..2 * first).map(synthetic_row).collect()).await.unwrap();

    let mut serve = lore(dir.path()).arg("serve").spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while upkeep::status(&watcher).await.unwrap().training.is_none() {
        assert!(serve.try_wait().unwrap().is_none(), "lore serve ended");
        assert!(Instant::now() < deadline, "no training started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    serve.kill().unwrap();
    serve.wait().unwrap();

    let status = upkeep::status(&watcher).await.unwrap();
    assert_eq!(status.trained.map(|t| t.rows), Some(first), "killed before the new index was committed");
    assert_eq!(status.index.indexed, Some(first), "the previous index is still the table's");
    let scope = engine::index::Scope { sources: vec!["synthetic".into()], every_source: true };
    for i in [0, first / 2, first + 7, 2 * first - 1] {
        let row = synthetic_row(i);
        let hits = store.vector_search(&row.vector, &scope, 5).await.unwrap();
        assert_eq!(hits[0].chunk.id, row.id, "old index and the rows it does not cover, all searched");
    }

    let mut serve = lore(dir.path()).arg("serve").spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    let trained = loop {
        let status = upkeep::status(&watcher).await.unwrap();
        // This process sees the other's commits within a second of them.
        let covered = status.index.indexed == Some(status.index.rows);
        if status.training.is_none() && status.trained.as_ref().is_some_and(|t| t.rows > first) && covered {
            break status;
        }
        assert!(serve.try_wait().unwrap().is_none(), "lore serve ended");
        assert!(Instant::now() < deadline, "the training was not started again: {status:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    Command::new("kill").args(["-TERM", &serve.id().to_string()]).status().unwrap();
    tokio::task::spawn_blocking(move || wait_exit(&mut serve, Duration::from_secs(30))).await.unwrap();
    assert_eq!(trained.trained.map(|t| t.rows), Some(2 * first));
    assert_eq!(
        trained.index,
        engine::index::VectorIndex { rows: 2 * first, indexed: Some(2 * first), outdated: false }
    );
    for i in [3, first + 11, 2 * first - 2] {
        let row = synthetic_row(i);
        let hits = store.vector_search(&row.vector, &scope, 5).await.unwrap();
        assert_eq!(hits[0].chunk.id, row.id, "the new index finds every row");
    }
}

/// `lore sources add` fills the kind's configuration from `--source-config` and
/// the named options, and the kind refuses a key it does not take (here a
/// website's start URL on a table source), naming it, with nothing created.
#[tokio::test]
async fn the_cli_adds_a_source_from_its_configuration_and_the_kind_refuses_a_key_it_does_not_take() {
    let dir = tempfile::tempdir().unwrap();
    let watcher = open(dir.path()).await;
    let admin = engine::appdb::Principal::Admin { account_id: "ada".into() };
    for body in [
        serde_json::json!({"operation": "create_table", "table": "note", "primary_key": "id"}),
        serde_json::json!({"operation": "insert", "table": "note", "records": [{"id": 1, "topic": "Shelves", "body": "Shelf 3 holds volume 7."}]}),
    ] {
        engine::operations::dispatch(&watcher, &admin, body).await.unwrap();
    }
    // The CLI is another process writing the same SQLite file. It runs on a
    // blocking thread so that this runtime's tasks (the watcher's
    // write-behind audit of the inserts above) go on: a write transaction
    // they began would otherwise be held past the CLI's busy timeout.
    let add = |args: &[&str]| {
        let mut command = lore(dir.path());
        command
            .args(["sources", "add", "--name", "Notes", "--kind", "table", "--json"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        async move {
            let output = tokio::task::spawn_blocking(move || command.output()).await.unwrap().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
            let printed = serde_json::from_slice::<serde_json::Value>(&output.stdout)
                .unwrap_or_else(|err| panic!("{err}: {stderr}"));
            (output.status.success(), printed, stderr)
        }
    };

    let (ok, refused, _) =
        add(&["--table", "note", "--title", "topic", "--url", "https://docs.example.com/"]).await;
    assert!(!ok);
    assert_eq!(refused["error"]["code"], "invalid_source", "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("start_url"), "{refused}");
    assert!(engine::sources::list(&watcher).await.unwrap().is_empty(), "nothing was created");

    // The whole configuration as JSON; a named option overrides its key.
    let (ok, created, stderr) = add(&[
        "--source-config",
        r#"{"table": "note", "title": "id", "text": ["body"]}"#,
        "--title",
        "topic",
    ])
    .await;
    assert!(ok, "{created}\n{stderr}");
    assert_eq!(created["kind"], "table");
    assert_eq!(created["config"]["title"], "topic");
    assert_eq!(created["config"]["text"], serde_json::json!(["body"]));
}

/// A CLI write that finds the SQLite database locked by another writer past
/// SQLite's wait fails with the stable code `busy` (not `internal`), having
/// changed nothing; once the lock is gone the same command succeeds.
#[tokio::test]
async fn a_write_that_outwaits_another_process_lock_is_busy_and_changes_nothing() {
    use sea_orm::{ConnectionTrait, TransactionTrait};
    let dir = tempfile::tempdir().unwrap();
    let watcher = open(dir.path()).await;
    let add = || {
        let mut command = lore(dir.path());
        command
            .args(["sources", "add", "--name", "Handbook", "--kind", "upload", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // On a blocking thread: this runtime must not stall while it waits.
        async move {
            let output = tokio::task::spawn_blocking(move || command.output()).await.unwrap().unwrap();
            let printed: serde_json::Value = serde_json::from_slice(&output.stdout)
                .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&output.stderr)));
            (output.status.success(), printed)
        }
    };

    // Another writer holds the write lock for longer than the CLI waits.
    let held = watcher.db.begin().await.unwrap();
    held.execute_unprepared("CREATE TABLE held_lock (x INTEGER)").await.unwrap();
    let (ok, refused) = add().await;
    assert!(!ok);
    assert_eq!(refused["error"]["code"], "busy", "{refused}");
    held.rollback().await.unwrap();
    assert!(engine::sources::list(&watcher).await.unwrap().is_empty(), "nothing was created");

    let (ok, created) = add().await;
    assert!(ok, "{created}");
    assert_eq!(created["name"], "Handbook");
}
