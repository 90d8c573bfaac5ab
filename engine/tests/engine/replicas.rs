//! Two replicas on one PostgreSQL database: two `Lore`s in this process,
//! each with a data directory of its own, as two `lore serve` on two
//! machines would be, sharing the database and the vectors on one
//! S3-compatible object store.

use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::audit::Actor;
use engine::cluster::Change;
use engine::ingest::jobs;
use engine::ingest::upload::{self, Upload};
use engine::retrieve::RetrievalSettings;
use engine::search::{self, Reach};
use engine::sources::{self, NewSource};
use engine::Lore;
use entity::{index_job, source};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};

use crate::support::object_store::ObjectStore;
use crate::support::{self, drop_postgres, postgres};

/// Two replicas on a new database, with the object store they share.
struct Cluster {
    a: Lore,
    b: Lore,
    name: String,
    _dirs: [tempfile::TempDir; 2],
    _store: ObjectStore,
}

impl Cluster {
    async fn start() -> Self {
        let (url, name) = postgres().await;
        let store = ObjectStore::start().await;
        let vectors = store.bucket("replicas").await;
        let shared = |settings: &mut engine::Settings| {
            settings.database.url = Some(engine::settings::Secret::new(url.clone()));
            settings.vectors.uri = Some(vectors.clone());
            settings.vectors.storage_options = store.options();
        };
        let (a, dir_a) = support::open_with(shared).await;
        let (b, dir_b) = support::open_with(shared).await;
        Cluster { a, b, name, _dirs: [dir_a, dir_b], _store: store }
    }

    /// Waits until both replicas listen for each other's announcements.
    async fn listening(&self) {
        let until = Instant::now() + Duration::from_secs(10);
        while !(self.a.hears_other_replicas() && self.b.hears_other_replicas()) {
            assert!(Instant::now() < until, "the replicas never listened for each other");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn stop(self) {
        let name = self.name.clone();
        drop(self);
        drop_postgres(&name).await;
    }
}

async fn upload_source(lore: &Lore, name: &str) -> String {
    let new = NewSource { name: name.into(), kind: "upload".into(), ..NewSource::default() };
    sources::create(lore, &Actor::System, new).await.unwrap().id
}

async fn queued_for(lore: &Lore, source_id: &str) -> u64 {
    index_job::Entity::find()
        .filter(index_job::Column::SourceId.eq(source_id))
        .filter(index_job::Column::Status.eq(jobs::QUEUED))
        .count(&lore.db)
        .await
        .unwrap()
}

#[tokio::test]
async fn two_replicas_queueing_the_same_run_at_once_make_one() {
    let cluster = Cluster::start().await;
    for round in 0..12 {
        let id = upload_source(&cluster.a, &format!("Handbook {round}")).await;
        let (first, second) = tokio::join!(
            jobs::enqueue(&cluster.a, Some(&id), false, "test"),
            jobs::enqueue(&cluster.b, Some(&id), false, "test"),
        );
        assert_eq!(first.unwrap().id, second.unwrap().id, "round {round}: both got the one queued run");
        assert_eq!(queued_for(&cluster.a, &id).await, 1, "round {round}");
    }
    cluster.stop().await;
}

#[tokio::test]
async fn a_due_re_sync_is_queued_once_when_both_replicas_schedule() {
    let cluster = Cluster::start().await;
    let mut ids = Vec::new();
    for round in 0..8 {
        ids.push(upload_source(&cluster.a, &format!("Handbook {round}")).await);
    }
    for round in 0..6 {
        // Every source falls due, and both replicas' workers look at once.
        source::Entity::update_many()
            .col_expr(
                source::Column::NextSyncAt,
                Expr::value(chrono::Utc::now() - chrono::Duration::minutes(1)),
            )
            .exec(&cluster.a.db)
            .await
            .unwrap();
        let (first, second) = tokio::join!(jobs::schedule_due(&cluster.a), jobs::schedule_due(&cluster.b));
        assert_eq!(first.unwrap() + second.unwrap(), ids.len(), "round {round}: each due source once");
        for id in &ids {
            assert_eq!(queued_for(&cluster.a, id).await, 1, "round {round}");
        }
    }
    cluster.stop().await;
}

#[tokio::test]
async fn a_file_uploaded_through_one_replica_is_indexed_by_the_other_and_found_through_both() {
    let cluster = Cluster::start().await;
    let id = upload_source(&cluster.a, "Handbook").await;
    let text = "# Backups\n\nNightly snapshots of every volume are kept for thirty days.\n";
    let upload =
        Upload { file_name: "backups.md".into(), content_type: None, bytes: text.as_bytes().to_vec() };
    let (_, job) = upload::receive(&cluster.a, &id, upload).await.unwrap();

    // B claims the run: the file was never in B's data directory.
    let owner = jobs::owner_id("replica-b");
    let held = jobs::claim(&cluster.b, &job.id, &owner).await.unwrap().expect("the run is queued");
    let ended = jobs::run(&cluster.b, held, &owner, None).await.unwrap();
    assert_eq!(ended.status, jobs::SUCCEEDED, "{:?}", ended.message);
    assert_eq!(support::progress(&ended).failed, 0, "{:?}", ended.errors);

    let settings = RetrievalSettings { score_cutoff: 0.2, ..RetrievalSettings::default() };
    for replica in [&cluster.a, &cluster.b] {
        let found = search::search(replica, "nightly snapshots", &settings, Reach::Enabled).await.unwrap();
        assert_eq!(found.results.first().map(|r| r.chunk.title.as_str()), Some("Backups"));
    }
    cluster.stop().await;
}

#[tokio::test]
async fn a_change_announced_on_one_replica_reaches_the_other_within_a_second() {
    let cluster = Cluster::start().await;
    cluster.listening().await;

    // B holds the embedding model it loaded; A's rebinding drops it there.
    let before = cluster.b.embedder().await.unwrap();
    assert!(Arc::ptr_eq(&before, &cluster.b.embedder().await.unwrap()), "held between uses");
    let sent = Instant::now();
    cluster.a.announce(Change::Embedding).await;
    loop {
        let now = cluster.b.embedder().await.unwrap();
        if !Arc::ptr_eq(&before, &now) {
            break;
        }
        assert!(sent.elapsed() < Duration::from_secs(1), "B still holds the old embedder");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // A role change on A reaches those watching on B (the tool server's
    // sessions, which then send `tools/list_changed`).
    let mut events = cluster.b.appdb_events();
    cluster.a.appdb_event(engine::appdb::Event::RoleChanged);
    let heard = tokio::time::timeout(Duration::from_secs(1), events.recv()).await;
    assert_eq!(heard.expect("heard within a second").unwrap(), engine::appdb::Event::RoleChanged);
    cluster.a.appdb_event(engine::appdb::Event::SchemaReloaded);
    let heard = tokio::time::timeout(Duration::from_secs(1), events.recv()).await;
    assert_eq!(heard.expect("heard within a second").unwrap(), engine::appdb::Event::SchemaReloaded);

    // A's own announcement is applied on A once, not again when it comes back.
    let mut own = cluster.a.appdb_events();
    cluster.a.appdb_event(engine::appdb::Event::RoleChanged);
    assert_eq!(own.recv().await.unwrap(), engine::appdb::Event::RoleChanged);
    let echoed = tokio::time::timeout(Duration::from_millis(300), own.recv()).await;
    assert!(echoed.is_err(), "applied twice: {echoed:?}");
    cluster.stop().await;
}

/// Two replicas committing to one chunk table on the object store at the
/// same moments: every commit lands. LanceDB creates each version's
/// manifest with a conditional write, so of two commits of one version one
/// is refused and retried on top of the other instead of replacing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_writing_one_table_on_the_object_store_lose_no_commit() {
    use engine::index::lance::{LanceChunkStore, Location};
    use engine::index::{ChunkRow, ChunkStore};
    const DOCUMENTS: usize = 12;
    const CHUNKS: usize = 3;
    let store = ObjectStore::start().await;
    let at = Location { uri: store.bucket("writers").await, options: store.options() };
    assert!(at.is_object_store());
    let rows = |document: &str| -> Vec<ChunkRow> {
        (0..CHUNKS)
            .map(|position| ChunkRow {
                id: format!("{document}:{position}"),
                source_id: "s".into(),
                view: None,
                document_id: document.into(),
                title: document.into(),
                url: None,
                heading: None,
                position: position as u32,
                text: format!("{document} chunk {position}"),
                content_hash: format!("{document}-{position}"),
                vector: vec![1.0, position as f32, 0.5, 0.25],
            })
            .collect()
    };
    let a = LanceChunkStore::open(&at, 4).await.unwrap();
    let b = LanceChunkStore::open(&at, 4).await.unwrap();
    let write = |replica: LanceChunkStore, name: &'static str| async move {
        for n in 0..DOCUMENTS {
            let document = format!("{name}-{n}");
            replica.replace_document(&document, rows(&document)).await.unwrap();
        }
    };
    tokio::join!(write(a, "a"), write(b, "b"));
    let reader = LanceChunkStore::open(&at, 4).await.unwrap();
    assert_eq!(
        reader.count(None).await.unwrap(),
        2 * DOCUMENTS * CHUNKS,
        "no replica's commit replaced another's"
    );
}

#[tokio::test]
async fn an_audience_or_a_role_changed_on_one_replica_counts_on_the_other_at_its_next_request() {
    use crate::audiences::{holds, key_caller, ok, retrieve};
    use engine::asker::Asker;
    use serde_json::json;

    let cluster = Cluster::start().await;
    cluster.listening().await;
    let (a, b) = (&cluster.a, &cluster.b);
    for role in ["support", "guest"] {
        ok(a, json!({"operation": "add_role", "role": role, "permission": {"super_user": false}})).await;
    }
    ok(a, json!({"operation": "add_user", "username": "sam", "role": "support"})).await;
    let text = "# On call\n\nThe on-call escalation code word is heliotrope.\n";
    let handbook =
        crate::audiences::upload_source(a, "Staff handbook", Some("support"), "handbook.md", text).await;
    // Sam's key, as replica B authenticates it on each request.
    let sam = Asker::Key(key_caller(b, Some("sam")).await);
    let question = "What is the on-call escalation code word?";
    assert!(holds(&retrieve(b, &sam, question).await, "heliotrope"));

    // Sam's role changed on A: B's first request after A's announcement
    // reaches it (within a millisecond on loopback) reads as a guest.
    let before = b.appdb_cache().epoch();
    ok(a, json!({"operation": "alter_user", "username": "sam", "role": "guest"})).await;
    let until = Instant::now() + Duration::from_secs(10);
    while b.appdb_cache().watched() && b.appdb_cache().epoch() == before {
        assert!(Instant::now() < until, "B never heard of the change");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(!holds(&retrieve(b, &sam, question).await, "heliotrope"), "B read sam's old role");
    // The audience changed on A to take in guests: B's next request reads it.
    ok(a, json!({"operation": "alter_source", "id": handbook, "audience": "support,guest"})).await;
    assert!(holds(&retrieve(b, &sam, question).await, "heliotrope"), "B read the old audience");
    cluster.stop().await;
}
