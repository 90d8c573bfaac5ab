//! The table source on SQLite and PostgreSQL, with the real embedding model
//! and LanceDB: the rows of an application table become documents, a write
//! to the table queues the re-index of what it changed (and nothing else is
//! embedded again), and a configuration the catalog cannot back is refused
//! before anything is stored.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use engine::appdb::Principal;
use engine::audit::Actor;
use engine::embed::{EmbedError, Embedder};
use engine::index::{ChunkRow, ChunkStore, Folded, Hit, IndexError, Scope};
use engine::ingest::jobs::ProgressHandle;
use engine::ingest::{lifecycle, table, Indexer, IngestError};
use engine::sources::kinds::table::TableConfig;
use engine::sources::{self, NewSource};
use engine::{Error, Lore};
use futures::stream::BoxStream;
use sea_orm::{ActiveModelTrait, ConnectionTrait, Set};
use serde_json::{json, Value};

use crate::support;

const ROWS: usize = 500;
const BISCUIT: u64 = 123;

fn admin() -> Principal {
    Principal::Admin { account_id: "ada".into() }
}

async fn operation(lore: &Lore, body: Value) {
    engine::operations::dispatch(lore, &admin(), body.clone())
        .await
        .unwrap_or_else(|err| panic!("{body}: {err}"));
}

/// `data.dog` with 500 rows, one of them Biscuit with a fact of its own.
async fn kennel(lore: &Lore) {
    operation(lore, json!({"operation": "create_table", "table": "dog", "primary_key": "id"})).await;
    let cities = ["Lisbon", "Tromsø", "Valparaíso", "Hobart", "Kyoto", "Windhoek", "Quito", "Tallinn"];
    let records: Vec<Value> = (0..ROWS as u64)
        .map(|id| {
            if id == BISCUIT {
                json!({"id": id, "name": "Biscuit", "bio": "Biscuit guards the lighthouse at Cape Wrath every night."})
            } else {
                let city = cities[id as usize % cities.len()];
                json!({"id": id, "name": format!("Dog {id}"), "bio": format!("Dog {id} is a friendly terrier who lives in {city}.")})
            }
        })
        .collect();
    for batch in records.chunks(250) {
        operation(lore, json!({"operation": "insert", "table": "dog", "records": batch})).await;
    }
}

fn dog_source() -> NewSource {
    NewSource {
        name: "Kennel".into(),
        kind: "table".into(),
        config: Some(
            json!({"table": "dog", "title": "name", "text": ["bio"], "url": "https://kennel.example/dogs/{id}"}),
        ),
        volatility: None,
        audience: None,
    }
}

/// The best passage for `query`: its document's title and its citation URL.
async fn best(lore: &Lore, query: &str) -> Option<(String, Option<String>, String)> {
    let traced = engine::search::traced_retrieval(lore, &engine::sources::Reader::Everything, query, Some(5))
        .await
        .unwrap();
    traced
        .found
        .results
        .first()
        .map(|hit| (hit.chunk.title.clone(), hit.chunk.url.clone(), hit.chunk.text.clone()))
}

/// Runs what the indexing worker's next round would queue for the writes
/// noted so far: the one run of the kennel's source.
async fn worker_round(lore: &Lore, source_id: &str) -> engine::ingest::Progress {
    assert_eq!(table::schedule_written(lore).await.unwrap(), 1, "the write queues the source's run");
    let queued = engine::ingest::jobs::recent(lore, Some(source_id), 1).await.unwrap().remove(0);
    assert_eq!(queued.trigger, "write");
    support::progress(&support::run_queued(lore, &queued.id).await)
}

async fn a_table_becomes_a_source_and_follows_its_writes(lore: &Lore) {
    kennel(lore).await;
    let added = lifecycle::add_source(lore, &Actor::System, dog_source(), "test").await.unwrap();
    let source_id = added.source.id.clone();
    let first = added.first_sync.expect("a table source's first sync is queued at once");
    let done = support::progress(&support::run_queued(lore, &first.id).await);
    assert_eq!((done.discovered, done.done, done.failed), (ROWS as u64, ROWS as u64, 0));
    assert_eq!(done.embedded, ROWS as u64, "one chunk a row");
    let found = sources::get(lore, &source_id).await.unwrap();
    assert_eq!((found.document_count, found.status.key()), (ROWS as u32, "ready"));

    let (title, url, text) = best(lore, "Who guards the lighthouse at Cape Wrath?").await.unwrap();
    assert_eq!(title, "Biscuit");
    assert_eq!(url.as_deref(), Some("https://kennel.example/dogs/123"), "the citation points at the row");
    assert!(text.contains("Cape Wrath"), "{text}");

    // The run that indexed the rows began ten minutes ago, the rows were
    // written twenty minutes ago: from here on a run reads only the rows
    // written since (less the cursor's minute of margin).
    let long_ago = chrono::Utc::now() - chrono::Duration::minutes(10);
    let dogs = engine::appdb::catalog::table(&lore.db, "data", "dog").await.unwrap();
    lore.db
        .execute_unprepared(&format!(
            "UPDATE \"{}\" SET \"__updatedtime__\" = {}",
            dogs.sql_name,
            (long_ago - chrono::Duration::minutes(10)).timestamp_millis()
        ))
        .await
        .unwrap();
    entity::index_job::ActiveModel {
        id: Set(first.id.clone()),
        started_at: Set(Some(long_ago)),
        ..Default::default()
    }
    .update(&lore.db)
    .await
    .unwrap();

    // An update is re-indexed by the run it queues; nothing else is embedded.
    operation(
        lore,
        json!({"operation": "update", "table": "dog", "records": [
            {"id": BISCUIT, "bio": "Biscuit now herds the goats of the Faroe Islands."}
        ]}),
    )
    .await;
    let updated = worker_round(lore, &source_id).await;
    assert_eq!(
        (updated.fetched, updated.embedded),
        (1, 1),
        "only the changed row is read and embedded again: {updated:?}"
    );
    let (title, _, text) = best(lore, "Who herds the goats of the Faroe Islands?").await.unwrap();
    assert_eq!(title, "Biscuit");
    assert!(text.contains("Faroe"), "{text}");

    // An update that changes nothing embeds nothing.
    operation(
        lore,
        json!({"operation": "update", "table": "dog", "records": [
            {"id": BISCUIT, "bio": "Biscuit now herds the goats of the Faroe Islands."}
        ]}),
    )
    .await;
    let same = worker_round(lore, &source_id).await;
    assert_eq!(same.embedded, 0, "an unchanged row is not embedded again: {same:?}");

    // An insert adds a document, a delete removes one.
    operation(
        lore,
        json!({"operation": "insert", "table": "dog", "records": [
            {"id": 9000, "name": "Pickle", "bio": "Pickle collects lost tennis balls in Reykjavík harbour."}
        ]}),
    )
    .await;
    let inserted = worker_round(lore, &source_id).await;
    assert_eq!(inserted.embedded, 1, "{inserted:?}");
    let (title, url, _) = best(lore, "Who collects tennis balls in Reykjavík harbour?").await.unwrap();
    assert_eq!((title.as_str(), url.as_deref()), ("Pickle", Some("https://kennel.example/dogs/9000")));

    operation(lore, json!({"operation": "delete", "table": "dog", "ids": [BISCUIT]})).await;
    let deleted = worker_round(lore, &source_id).await;
    assert_eq!((deleted.removed, deleted.embedded), (1, 0), "{deleted:?}");
    let after = best(lore, "Who herds the goats of the Faroe Islands?").await;
    assert!(
        after.as_ref().is_none_or(|(title, _, _)| title != "Biscuit"),
        "the deleted row is gone: {after:?}"
    );
    let found = sources::get(lore, &source_id).await.unwrap();
    assert_eq!(found.document_count, ROWS as u32, "500 rows, one inserted and one deleted");

    // Dropping the attribute the text is read from queues a run, which
    // finds it gone, removes every document and fails saying why: nothing
    // of the dropped data stays answerable.
    operation(lore, json!({"operation": "drop_attribute", "table": "dog", "attribute": "bio"})).await;
    let ended = ended_run(lore, &source_id).await;
    assert_eq!(ended.status, "failed");
    let message = ended.message.clone().unwrap_or_default();
    assert!(
        message.contains("`bio`") && message.contains("500 documents indexed from it were removed"),
        "{message}"
    );
    assert_eq!(support::progress(&ended).removed, ROWS as u64);
    assert_eq!(sources::get(lore, &source_id).await.unwrap().document_count, 0);
    assert_eq!(lore.chunks().await.unwrap().count(Some(&source_id)).await.unwrap(), 0);
    let after = best(lore, "Who collects tennis balls in Reykjavík harbour?").await;
    assert!(after.is_none(), "{after:?}");

    // Dropping a table: its source's run removes its documents too.
    operation(lore, json!({"operation": "create_table", "table": "cat", "primary_key": "id"})).await;
    operation(
        lore,
        json!({"operation": "insert", "table": "cat", "records": [
            {"id": 1, "name": "Marmalade", "bio": "Marmalade naps on the harbour master's desk in Stromness."},
            {"id": 2, "name": "Soot", "bio": "Soot keeps the bakery in Ullapool free of mice."}
        ]}),
    )
    .await;
    let cats = NewSource {
        name: "Cattery".into(),
        config: Some(json!({"table": "cat", "title": "name", "text": ["bio"]})),
        ..dog_source()
    };
    let added = lifecycle::add_source(lore, &Actor::System, cats, "test").await.unwrap();
    let first = added.first_sync.expect("queued at once");
    assert_eq!(support::progress(&support::run_queued(lore, &first.id).await).embedded, 2);
    let cat_source = added.source.id.clone();
    table::schedule_written(lore).await.unwrap();
    operation(lore, json!({"operation": "drop_table", "table": "cat"})).await;
    let ended = ended_run(lore, &cat_source).await;
    assert_eq!(ended.status, "failed");
    let message = ended.message.clone().unwrap_or_default();
    assert!(
        message.contains("there is no table `data.cat`") && message.contains("the 2 documents"),
        "{message}"
    );
    assert_eq!(sources::get(lore, &cat_source).await.unwrap().document_count, 0);
    assert_eq!(lore.chunks().await.unwrap().count(Some(&cat_source)).await.unwrap(), 0);

    // Dropping the database notes every table source on it.
    operation(lore, json!({"operation": "drop_database", "database": "data"})).await;
    assert_eq!(table::schedule_written(lore).await.unwrap(), 2, "the kennel's and the cattery's runs");
}

/// The run the worker's next round queues for a structure change, run to its end.
async fn ended_run(lore: &Lore, source_id: &str) -> entity::index_job::Model {
    assert_eq!(table::schedule_written(lore).await.unwrap(), 1, "the change queues the source's run");
    let queued = engine::ingest::jobs::recent(lore, Some(source_id), 1).await.unwrap().remove(0);
    assert_eq!((queued.trigger.as_str(), queued.status.as_str()), ("write", "queued"));
    support::run_queued(lore, &queued.id).await
}

#[tokio::test]
async fn a_table_becomes_a_source_and_follows_its_writes_on_sqlite() {
    let (lore, _dir) = support::open().await;
    a_table_becomes_a_source_and_follows_its_writes(&lore).await;
}

#[tokio::test]
async fn a_table_becomes_a_source_and_follows_its_writes_on_postgres() {
    let (url, name) = support::postgres().await;
    let (lore, _dir) = support::open_with(|settings| {
        settings.database.url = Some(engine::settings::Secret::new(url.clone()));
    })
    .await;
    a_table_becomes_a_source_and_follows_its_writes(&lore).await;
    drop(lore);
    support::drop_postgres(&name).await;
}

#[tokio::test]
async fn a_configuration_the_catalog_cannot_back_is_refused_and_stores_nothing() {
    let (lore, _dir) = support::open().await;
    operation(&lore, json!({"operation": "create_table", "table": "dog", "primary_key": "id"})).await;
    operation(
        &lore,
        json!({"operation": "insert", "table": "dog", "records": [{"id": 1, "name": "Rex", "bio": "Rex."}]}),
    )
    .await;
    let cases = [
        (json!({"table": "cat", "title": "name", "text": ["bio"]}), "no table `data.cat`"),
        (json!({"database": "zoo", "table": "dog", "title": "name", "text": ["bio"]}), "no table `zoo.dog`"),
        (json!({"table": "dog", "title": "nickname", "text": ["bio"]}), "`title` names `nickname`"),
        (json!({"table": "dog", "title": "name", "text": ["bio", "colour"]}), "`text` names `colour`"),
        (
            json!({"table": "dog", "title": "name", "template": "{name} likes {toy}"}),
            "`template` names `toy`",
        ),
        (
            json!({"table": "dog", "title": "name", "text": ["bio"], "url": "https://k.example/{slug}"}),
            "`url` names `slug`",
        ),
        (json!({"table": "dog", "title": "name", "template": "{name"}), "without its `}`"),
        (json!({"table": "dog", "title": "name"}), "needs its text"),
        (json!({"table": "dog", "title": "name", "text": ["bio"], "template": "{bio}"}), "not both"),
        (
            json!({"table": "dog", "title": "name", "text": ["bio"], "conditions": [
                {"search_attribute": "colour", "search_type": "equals", "search_value": "red"}
            ]}),
            "`conditions`",
        ),
        (json!({"table": "dog", "title": "name", "text": ["bio"], "colour": "red"}), "unknown field"),
        (json!({"title": "name", "text": ["bio"]}), "missing field `table`"),
    ];
    for (config, expected) in cases {
        let new = NewSource { config: Some(config.clone()), ..dog_source() };
        match lifecycle::add_source(&lore, &Actor::System, new, "test").await {
            Err(Error::Ingest(IngestError::InvalidSource(message))) => {
                assert!(message.contains(expected), "{config}: {message}")
            }
            other => panic!("{config} must be refused as an invalid source, got {other:?}"),
        }
    }
    assert!(sources::list(&lore).await.unwrap().is_empty(), "a refused configuration stores nothing");
    assert!(engine::ingest::jobs::recent(&lore, None, 10).await.unwrap().is_empty(), "and queues nothing");

    // `or` over no conditions selects every row, as `and` does.
    let new = NewSource {
        config: Some(json!({"table": "dog", "title": "name", "text": ["bio"], "operator": "or"})),
        ..dog_source()
    };
    let added = lifecycle::add_source(&lore, &Actor::System, new, "test").await.unwrap();
    let first = added.first_sync.expect("its first sync is queued");
    let done = support::progress(&support::run_queued(&lore, &first.id).await);
    assert_eq!((done.discovered, done.embedded), (1, 1), "{done:?}");
}

/// The real embedder, counting its calls, refusing any call that holds a
/// text with [`POISON`] (as a provider refuses one bad input of a batch).
struct CountingEmbedder {
    inner: Arc<dyn Embedder>,
    calls: AtomicUsize,
}

const POISON: &str = "POISON";

#[async_trait::async_trait]
impl Embedder for CountingEmbedder {
    fn model(&self) -> &str {
        self.inner.model()
    }
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    fn max_tokens(&self) -> usize {
        self.inner.max_tokens()
    }
    fn count_tokens(&self, text: &str) -> usize {
        self.inner.count_tokens(text)
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if texts.iter().any(|text| text.contains(POISON)) {
            return Err(EmbedError::Inference("the provider refused one input".into()));
        }
        self.inner.embed(texts).await
    }
}

/// The real chunk store, counting its writes.
struct CountingStore {
    inner: Arc<dyn ChunkStore>,
    writes: AtomicUsize,
}

#[async_trait::async_trait]
impl ChunkStore for CountingStore {
    async fn write_documents(&self, replaced: &[String], rows: Vec<ChunkRow>) -> Result<(), IndexError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.write_documents(replaced, rows).await
    }
    async fn delete_source(&self, source_id: &str) -> Result<(), IndexError> {
        self.inner.delete_source(source_id).await
    }
    async fn vector_search(
        &self,
        vector: &[f32],
        scope: &Scope,
        limit: usize,
    ) -> Result<Vec<Hit>, IndexError> {
        self.inner.vector_search(vector, scope, limit).await
    }
    async fn text_search(&self, query: &str, scope: &Scope, limit: usize) -> Result<Vec<Hit>, IndexError> {
        self.inner.text_search(query, scope, limit).await
    }
    async fn count(&self, source_id: Option<&str>) -> Result<usize, IndexError> {
        self.inner.count(source_id).await
    }
    async fn content_hashes(&self, ids: &[String]) -> Result<HashMap<String, (String, String)>, IndexError> {
        self.inner.content_hashes(ids).await
    }
    async fn scan(&self) -> Result<BoxStream<'static, Result<Vec<ChunkRow>, IndexError>>, IndexError> {
        self.inner.scan().await
    }
    async fn optimize(&self) -> Result<Folded, IndexError> {
        self.inner.optimize().await
    }
}

#[tokio::test]
async fn rows_are_embedded_and_written_a_batch_at_a_time_and_a_bad_row_fails_alone() {
    let (lore, _dir) = support::open().await;
    kennel(&lore).await;
    // One row the embedding provider will refuse.
    operation(
        &lore,
        json!({"operation": "update", "table": "dog", "records": [{"id": 7, "bio": format!("Dog 7 eats {POISON} ivy.")}]}),
    )
    .await;
    let found = sources::create(&lore, &Actor::System, dog_source()).await.unwrap();
    let config = found.config.get::<TableConfig>().cloned().expect("a table source");
    let embedder =
        Arc::new(CountingEmbedder { inner: lore.embedder().await.unwrap(), calls: AtomicUsize::new(0) });
    let store = Arc::new(CountingStore { inner: lore.chunks().await.unwrap(), writes: AtomicUsize::new(0) });
    let indexer = Indexer {
        lore: lore.corpus().clone(),
        embedder: embedder.clone(),
        store: store.clone(),
        chunking: engine::tuning::chunking(&lore).await.unwrap(),
        job_id: "batch-test".into(),
        full: false,
        suspect: None,
    };
    let progress = ProgressHandle::new(Default::default(), Vec::new(), None);
    let (_cancel, cancelled) = tokio::sync::watch::channel(false);
    table::sync(&indexer, &found, &config, &progress, cancelled).await.unwrap();

    let (done, _) = progress.snapshot();
    assert_eq!((done.done, done.failed, done.embedded), (ROWS as u64, 1, ROWS as u64 - 1), "{done:?}");
    // Rows 200 to 499: two batches, one embedding call and one write each.
    // Rows 0 to 199: the batch's call is refused, then each row is tried
    // alone, so only the poisoned one fails.
    assert_eq!(embedder.calls.load(Ordering::SeqCst), 2 + 1 + 200);
    assert_eq!(store.writes.load(Ordering::SeqCst), 2 + 199);
    let documents = sources::documents(&lore, &found.id).await.unwrap();
    assert_eq!(documents.len(), ROWS);
    let failed: Vec<_> =
        documents.iter().filter(|doc| doc.status != sources::DocumentStatus::Indexed).collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].uri, "7");
    assert_eq!(lore.chunks().await.unwrap().count(Some(&found.id)).await.unwrap(), ROWS - 1);

    // Run again: nothing changed, so nothing is embedded or written but the
    // failed row, read again until it is indexed.
    let (embedded_before, written_before) =
        (embedder.calls.load(Ordering::SeqCst), store.writes.load(Ordering::SeqCst));
    let again = Indexer { job_id: "batch-test-2".into(), ..indexer };
    let progress = ProgressHandle::new(Default::default(), Vec::new(), None);
    let (_cancel, cancelled) = tokio::sync::watch::channel(false);
    table::sync(&again, &found, &config, &progress, cancelled).await.unwrap();
    let (done, _) = progress.snapshot();
    assert_eq!((done.unchanged, done.failed), (ROWS as u64 - 1, 1), "{done:?}");
    assert_eq!(
        embedder.calls.load(Ordering::SeqCst) - embedded_before,
        2,
        "the batch, then the bad row alone"
    );
    assert_eq!(store.writes.load(Ordering::SeqCst), written_before, "nothing written");
}
