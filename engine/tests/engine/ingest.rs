//! Upload sources end to end against the real components: SQLite, LanceDB
//! in a temporary directory and the real all-MiniLM-L6-v2 files.

use crate::support::{open, open_with, pdf_bomb, progress, run, run_queued};
use engine::audit::Actor;
use engine::chunk::ChunkingParams;
use engine::fingerprint::{self, Fingerprint};
use engine::ingest::upload::{self, Upload};
use engine::ingest::IngestError;
use engine::retrieve::RetrievalSettings;
use engine::search::Reach;
use engine::sources::{self, DocumentStatus, NewSource, SourceKind, SourceStatus};
use engine::{search, tuning, Error, Lore};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};

const MARKDOWN: &str = "# Backups\n\n## Nightly snapshots\n\nLore writes a snapshot of the database every night at two o'clock and keeps fourteen of them.\n";
const TEXT: &str =
    "Support hours are Monday to Friday, eight in the morning to six in the evening, Central European Time.";
const HTML: &str = "<!doctype html><html><head><title>Proxy setup</title></head><body><nav>Home | Docs</nav><main><h1>Proxy setup</h1><p>Terminate TLS at nginx and forward the X-Forwarded-Proto header to Lore.</p></main><footer>Acme</footer></body></html>";

/// A one-page PDF whose page shows `line`.
fn pdf(line: &str) -> Vec<u8> {
    use lopdf::content::{Content, Operation};
    use lopdf::{dictionary, Document, Object, Stream};
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id =
        doc.add_object(dictionary! {"Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica"});
    let resources_id = doc.add_object(dictionary! {"Font" => dictionary! {"F1" => font_id}});
    let content = Content {
        operations: vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 12.into()]),
            Operation::new("Td", vec![50.into(), 700.into()]),
            Operation::new("Tj", vec![Object::string_literal(line)]),
            Operation::new("ET", vec![]),
        ],
    };
    let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
    let page_id =
        doc.add_object(dictionary! {"Type" => "Page", "Parent" => pages_id, "Contents" => content_id});
    let pages = dictionary! {
        "Type" => "Pages",
        "Kids" => vec![page_id.into()],
        "Count" => 1,
        "Resources" => resources_id,
        "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
    };
    doc.objects.insert(pages_id, Object::Dictionary(pages));
    let catalog_id = doc.add_object(dictionary! {"Type" => "Catalog", "Pages" => pages_id});
    doc.trailer.set("Root", catalog_id);
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();
    bytes
}

const PDF_LINE: &str = "Invoices are payable within thirty days of the invoice date";

async fn upload_source(lore: &Lore) -> String {
    let new = NewSource { name: "Handbook".into(), kind: "upload".into(), ..NewSource::default() };
    sources::create(lore, &Actor::System, new).await.unwrap().id
}

async fn put(lore: &Lore, source: &str, name: &str, bytes: &[u8]) -> Result<(), Error> {
    upload::receive(
        lore,
        source,
        Upload { file_name: name.into(), content_type: None, bytes: bytes.to_vec() },
    )
    .await
    .map(|_| ())
}

/// Titles of the results for `query`.
async fn titles(lore: &Lore, query: &str) -> Vec<String> {
    let settings = RetrievalSettings { score_cutoff: 0.2, ..RetrievalSettings::default() };
    search::search(lore, query, &settings, Reach::Enabled)
        .await
        .unwrap()
        .results
        .into_iter()
        .map(|r| r.chunk.title)
        .collect()
}

async fn chunk_count(lore: &Lore) -> usize {
    lore.chunks().await.unwrap().count(None).await.unwrap()
}

#[tokio::test]
async fn every_upload_type_is_indexed_and_found() {
    let (lore, _dir) = open().await;
    let source = upload_source(&lore).await;
    put(&lore, &source, "backups.md", MARKDOWN.as_bytes()).await.unwrap();
    put(&lore, &source, "hours.txt", TEXT.as_bytes()).await.unwrap();
    put(&lore, &source, "proxy.html", HTML.as_bytes()).await.unwrap();
    put(&lore, &source, "invoices.pdf", &pdf(PDF_LINE)).await.unwrap();
    let job = run(&lore, Some(&source), false).await;
    assert_eq!(job.status, "succeeded", "{:?}", job.message);
    let done = progress(&job);
    assert_eq!((done.discovered, done.done, done.failed), (4, 4, 0));

    assert_eq!(titles(&lore, "how many nightly database snapshots are kept").await[0], "Backups");
    assert_eq!(titles(&lore, "when is support open").await[0], "hours.txt");
    assert_eq!(titles(&lore, "forward the X-Forwarded-Proto header").await[0], "Proxy setup");
    assert_eq!(titles(&lore, "when are invoices payable").await[0], "invoices.pdf");
    // Boilerplate of the HTML page is not indexed.
    let found =
        search::search(&lore, "Proxy setup", &RetrievalSettings::default(), Reach::Enabled).await.unwrap();
    assert!(found.results.iter().all(|r| !r.chunk.text.contains("Home | Docs")));

    let listed = sources::get(&lore, &source).await.unwrap();
    assert_eq!((listed.status, listed.document_count), (SourceStatus::Ready, 4));
    assert_eq!(listed.chunk_count as usize, chunk_count(&lore).await);
}

#[tokio::test]
async fn bad_files_are_refused_with_clear_errors_and_keep_earlier_content() {
    let (lore, _dir) = open_with(|s| s.ingest.upload_max_bytes = 4096).await;
    let source = upload_source(&lore).await;
    put(&lore, &source, "invoices.pdf", &pdf(PDF_LINE)).await.unwrap();
    run(&lore, Some(&source), false).await;
    let before = chunk_count(&lore).await;
    assert!(before > 0);

    // A corrupt PDF under the same name: refused, the indexed one stays.
    let mut corrupt = pdf(PDF_LINE);
    corrupt.truncate(corrupt.len() / 3);
    corrupt.extend_from_slice(b"garbage that is not PDF structure");
    let err = put(&lore, &source, "invoices.pdf", &corrupt).await.unwrap_err();
    assert!(
        matches!(err, Error::Ingest(IngestError::CorruptFile(ref why)) if why.contains("PDF")),
        "{err:?}"
    );

    let err = put(&lore, &source, "big.md", &vec![b'a'; 5000]).await.unwrap_err();
    assert!(matches!(err, Error::Ingest(IngestError::FileTooLarge { limit_bytes: 4096 })), "{err:?}");

    let err = put(&lore, &source, "photo.png", b"\x89PNG\r\n\x1a\n\0\0\0binary").await.unwrap_err();
    assert!(
        matches!(err, Error::Ingest(IngestError::UnsupportedFile(ref why)) if why.contains(".png")),
        "{err:?}"
    );

    let err = put(&lore, &source, "blank.md", b"   \n\n").await.unwrap_err();
    assert!(matches!(err, Error::Ingest(IngestError::EmptyFile)), "{err:?}");

    // Nothing was queued by the refusals, and a run now still finds the original.
    let job = run(&lore, Some(&source), false).await;
    assert_eq!(progress(&job).unchanged, 1, "the stored PDF is the good one");
    assert_eq!(chunk_count(&lore).await, before);
    assert_eq!(titles(&lore, "when are invoices payable").await[0], "invoices.pdf");
}

#[tokio::test]
async fn reuploading_a_file_replaces_its_document_and_unchanged_files_are_not_re_embedded() {
    let (lore, _dir) = open().await;
    let source = upload_source(&lore).await;
    put(&lore, &source, "hours.txt", TEXT.as_bytes()).await.unwrap();
    put(&lore, &source, "backups.md", MARKDOWN.as_bytes()).await.unwrap();
    let first = run(&lore, Some(&source), false).await;
    assert!(progress(&first).embedded > 0);

    let again = run(&lore, Some(&source), false).await;
    let p = progress(&again);
    assert_eq!((p.embedded, p.chunked, p.unchanged), (0, 0, 2), "nothing changed, nothing embedded");

    put(&lore, &source, "hours.txt", b"Support is now open around the clock, every day of the year.")
        .await
        .unwrap();
    let third = run(&lore, Some(&source), false).await;
    let p = progress(&third);
    assert_eq!((p.unchanged, p.done), (1, 2), "only the replaced file is re-embedded");
    let docs = sources::documents(&lore, &source).await.unwrap();
    assert_eq!(docs.len(), 2, "a re-upload replaces, it does not add");
    let found = search::search(&lore, "when is support open", &RetrievalSettings::default(), Reach::Enabled)
        .await
        .unwrap();
    assert!(found.results.iter().any(|r| r.chunk.text.contains("around the clock")));
    assert!(found.results.iter().all(|r| !r.chunk.text.contains("Monday to Friday")), "the old text is gone");
}

#[tokio::test]
async fn disabling_hides_a_source_and_enabling_restores_it_without_re_embedding() {
    let (lore, _dir) = open().await;
    let source = upload_source(&lore).await;
    put(&lore, &source, "backups.md", MARKDOWN.as_bytes()).await.unwrap();
    run(&lore, Some(&source), false).await;
    let chunks = chunk_count(&lore).await;
    let jobs_before = engine::ingest::jobs::recent(&lore, None, 100).await.unwrap().len();

    sources::set_enabled(&lore, &Actor::System, &source, false).await.unwrap();
    assert!(titles(&lore, "nightly snapshots").await.is_empty(), "a disabled source is not searched");
    let settings = RetrievalSettings { score_cutoff: 0.2, ..RetrievalSettings::default() };
    let diagnostic = search::search(&lore, "nightly snapshots", &settings, Reach::WholeCorpus).await.unwrap();
    assert_eq!(diagnostic.results[0].chunk.title, "Backups", "the corpus diagnostic still reaches it");
    assert_eq!(chunk_count(&lore).await, chunks, "its chunks are kept");
    let refused = engine::ingest::jobs::enqueue(&lore, Some(&source), false, "test").await.unwrap_err();
    assert!(matches!(refused, Error::Ingest(IngestError::SourceDisabled)));
    let refused = put(&lore, &source, "hours.txt", TEXT.as_bytes()).await.unwrap_err();
    assert!(matches!(refused, Error::Ingest(IngestError::SourceDisabled)));

    sources::set_enabled(&lore, &Actor::System, &source, true).await.unwrap();
    assert_eq!(titles(&lore, "nightly snapshots").await[0], "Backups");
    let jobs_after = engine::ingest::jobs::recent(&lore, None, 100).await.unwrap().len();
    assert_eq!(jobs_after, jobs_before, "enabling ran nothing: no re-embedding");

    sources::delete(&lore, &Actor::System, &source).await.unwrap();
    assert_eq!(chunk_count(&lore).await, 0, "delete removes the chunks");
    assert!(sources::list(&lore).await.unwrap().is_empty());
    let stored = entity::stored_upload::Entity::find()
        .filter(entity::stored_upload::Column::SourceId.eq(source.as_str()))
        .count(&lore.db)
        .await
        .unwrap();
    assert_eq!(stored, 0, "and the stored files");
}

#[tokio::test]
async fn retrieval_fails_closed_on_a_foreign_fingerprint_until_a_full_reindex() {
    let (lore, _dir) = open().await;
    let source = upload_source(&lore).await;
    put(&lore, &source, "backups.md", MARKDOWN.as_bytes()).await.unwrap();
    run(&lore, Some(&source), false).await;
    let stamp =
        fingerprint::stamped(&lore.db).await.unwrap().expect("the first index stamps the empty corpus");
    assert_eq!(stamp.embedding_model, lore.settings.models.embedding);

    // As if the corpus had been embedded by another model.
    let foreign = Fingerprint { embedding_model: "intfloat/e5-small-v2".into(), ..stamp.clone() };
    fingerprint::set(&lore.db, Some(&foreign)).await.unwrap();
    let err = search::search(&lore, "nightly snapshots", &RetrievalSettings::default(), Reach::Enabled)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::RetrievalFailingClosed(ref why) if why.contains("e5-small-v2")), "{err:?}");
    // A cleared stamp over existing chunks fails closed too.
    fingerprint::set(&lore.db, None).await.unwrap();
    assert!(matches!(
        search::search(&lore, "nightly snapshots", &RetrievalSettings::default(), Reach::Enabled).await,
        Err(Error::RetrievalFailingClosed(_))
    ));

    // Even a plain sync is turned into a full reindex, which re-stamps.
    let job = run(&lore, Some(&source), false).await;
    assert_eq!(job.status, "succeeded");
    assert_eq!(progress(&job).unchanged, 0, "everything was re-embedded");
    assert_eq!(fingerprint::stamped(&lore.db).await.unwrap(), Some(stamp));
    assert_eq!(titles(&lore, "nightly snapshots").await[0], "Backups");
}

#[tokio::test]
async fn a_chunking_change_needs_the_reindex_acknowledgement() {
    let (lore, _dir) = open().await;
    let smaller = ChunkingParams { max_tokens: 64, overlap_tokens: 8 };
    // Nothing indexed yet: the change is simply stored.
    assert!(matches!(
        tuning::set_chunking(&lore, &Actor::System, smaller, false).await.unwrap(),
        tuning::ChunkingChange::Stored
    ));
    tuning::set_chunking(&lore, &Actor::System, ChunkingParams::default(), false).await.unwrap();

    let source = upload_source(&lore).await;
    put(&lore, &source, "backups.md", MARKDOWN.as_bytes()).await.unwrap();
    run(&lore, Some(&source), false).await;

    let err = tuning::set_chunking(&lore, &Actor::System, smaller, false).await.unwrap_err();
    assert!(matches!(err, Error::Ingest(IngestError::ReindexAcknowledgementRequired)));
    assert_eq!(tuning::chunking(&lore).await.unwrap(), ChunkingParams::default(), "nothing persisted");
    assert!(engine::ingest::jobs::recent(&lore, None, 10).await.unwrap().iter().all(|j| !j.full));

    let invalid = ChunkingParams { max_tokens: 32, overlap_tokens: 32 };
    assert!(matches!(
        tuning::set_chunking(&lore, &Actor::System, invalid, true).await,
        Err(Error::Ingest(IngestError::InvalidTuning(_)))
    ));

    let tuning::ChunkingChange::Reindexing(job) =
        tuning::set_chunking(&lore, &Actor::System, smaller, true).await.unwrap()
    else {
        panic!("an acknowledged change on an indexed corpus starts a full reindex");
    };
    assert!(job.full && job.source_id.is_none());
    assert_eq!(tuning::chunking(&lore).await.unwrap(), smaller);
    let done = run_queued(&lore, &job.id).await;
    assert_eq!(done.status, "succeeded");
    assert_eq!(fingerprint::stamped(&lore.db).await.unwrap().unwrap().chunking, smaller);
}

#[tokio::test]
async fn hostile_documents_are_refused_by_the_limit_they_pass_and_lose_nothing() {
    let (lore, _dir) = open().await;
    let source = upload_source(&lore).await;
    put(&lore, &source, "invoices.pdf", &pdf(PDF_LINE)).await.unwrap();
    run(&lore, Some(&source), false).await;
    let before = chunk_count(&lore).await;

    // 10,000 nested <div> overflowed a worker thread's stack and killed the
    // process; a million pinned a core for minutes.
    for levels in [10_000, 1_000_000] {
        let deep = format!("{}word{}", "<div>".repeat(levels), "</div>".repeat(levels));
        let err = put(&lore, &source, "deep.html", deep.as_bytes()).await.unwrap_err();
        assert!(
            matches!(err, Error::Ingest(IngestError::DocumentOverLimit(ref why)) if why.contains("512 deep")),
            "{levels}: {err:?}"
        );
    }
    // 1 GiB of zeros in a 1 MB PDF took the process from 319 MB to 2.4 GB.
    let err = put(&lore, &source, "bomb.pdf", &pdf_bomb(1024)).await.unwrap_err();
    assert!(
        matches!(err, Error::Ingest(IngestError::DocumentOverLimit(ref why)) if why.contains("expand to more than")),
        "{err:?}"
    );
    assert_eq!(chunk_count(&lore).await, before);
    assert_eq!(titles(&lore, "when are invoices payable").await[0], "invoices.pdf");
}

#[tokio::test]
async fn a_document_a_process_died_on_twice_is_quarantined_and_the_rest_of_the_source_indexes() {
    use engine::ingest::jobs::{self, InFlight};
    let (lore, _dir) = open().await;
    let source = upload_source(&lore).await;
    put(&lore, &source, "backups.md", MARKDOWN.as_bytes()).await.unwrap();
    put(&lore, &source, "hours.txt", TEXT.as_bytes()).await.unwrap();
    put(&lore, &source, "proxy.html", HTML.as_bytes()).await.unwrap();

    // An attempt starts extracting hours.txt and its process dies: no
    // heartbeat, so past a lease of zero the job is stale. One death makes
    // the document a suspect only (processes also die of deploys and kills).
    let job = jobs::enqueue(&lore, Some(&source), false, "test").await.unwrap();
    let reading = InFlight {
        source_id: source.clone(),
        uri: "hours.txt".into(),
        hash: engine::ingest::bytes_hash(TEXT.as_bytes()),
        deaths: 0,
    };
    let held = jobs::claim(&lore, &job.id, "dead-process").await.unwrap().unwrap();
    jobs::mark_in_flight(&lore, &held.id, Some(&reading)).await.unwrap();
    assert_eq!(jobs::requeue_stale(&lore, std::time::Duration::ZERO).await.unwrap(), 1);
    let suspected = jobs::in_flight(&jobs::get(&lore, &job.id).await.unwrap()).unwrap();
    assert_eq!(suspected.deaths, 1);
    let docs = sources::documents(&lore, &source).await.unwrap();
    assert_ne!(docs.iter().find(|d| d.uri == "hours.txt").unwrap().status, DocumentStatus::Quarantined);
    // The next attempt reads it again (marked with the death it carries) and
    // dies on it again: now it is quarantined.
    let held = jobs::claim(&lore, &job.id, "dead-again").await.unwrap().unwrap();
    jobs::mark_in_flight(&lore, &held.id, Some(&suspected)).await.unwrap();
    assert_eq!(jobs::requeue_stale(&lore, std::time::Duration::ZERO).await.unwrap(), 1);
    assert_eq!(jobs::in_flight(&jobs::get(&lore, &job.id).await.unwrap()), None);
    let docs = sources::documents(&lore, &source).await.unwrap();
    let hours = docs.iter().find(|d| d.uri == "hours.txt").unwrap();
    assert_eq!(hours.status, DocumentStatus::Quarantined);
    assert!(hours.error.as_deref().unwrap().contains("stopped twice while reading this document"));

    // The resumed run skips it with that reason and indexes the rest.
    let ended = run_queued(&lore, &job.id).await;
    assert_eq!(ended.status, "succeeded", "{:?}", ended.message);
    assert_eq!(ended.attempts, 3);
    assert_eq!(ended.in_flight, None, "nothing is being read once the run ended");
    let done = progress(&ended);
    assert_eq!((done.done, done.failed), (3, 1));
    let errors = ended.errors.to_string();
    assert!(errors.contains("hours.txt") && errors.contains("quarantined"), "{errors}");
    assert_eq!(titles(&lore, "how many nightly database snapshots are kept").await[0], "Backups");
    assert!(!titles(&lore, "when is support open").await.contains(&"hours.txt".to_owned()));
    // Skipped again while its bytes are the same...
    let again = run(&lore, Some(&source), false).await;
    assert_eq!(progress(&again).failed, 1);
    // ...and tried again once they change.
    put(&lore, &source, "hours.txt", b"Support hours are nine to five on weekdays.").await.unwrap();
    let changed = run(&lore, Some(&source), false).await;
    assert_eq!(progress(&changed).failed, 0);
    let docs = sources::documents(&lore, &source).await.unwrap();
    let hours = docs.iter().find(|d| d.uri == "hours.txt").unwrap();
    assert_eq!((hours.status, hours.quarantined_hash.as_deref()), (DocumentStatus::Indexed, None));
}

#[tokio::test]
async fn a_job_whose_process_keeps_dying_ends_failed_after_its_last_attempt() {
    use engine::ingest::jobs;
    let (lore, _dir) = open().await;
    let source = upload_source(&lore).await;
    put(&lore, &source, "backups.md", MARKDOWN.as_bytes()).await.unwrap();
    let job = jobs::enqueue(&lore, Some(&source), false, "test").await.unwrap();
    for attempt in 1..=jobs::MAX_ATTEMPTS {
        let held = jobs::claim(&lore, &job.id, "dying-process").await.unwrap().expect("queued again");
        assert_eq!(held.attempts, attempt);
        jobs::requeue_stale(&lore, std::time::Duration::ZERO).await.unwrap();
    }
    let ended = jobs::get(&lore, &job.id).await.unwrap();
    assert_eq!(ended.status, "failed");
    let message = ended.message.unwrap();
    assert!(message.contains(&format!("stopped {} times", jobs::MAX_ATTEMPTS)), "{message}");
    assert!(jobs::claim(&lore, &job.id, "another").await.unwrap().is_none(), "it is not started again");
    let listed = sources::get(&lore, &source).await.unwrap();
    assert_eq!(listed.status, SourceStatus::Failed);
    assert_eq!(listed.last_error.as_deref(), Some(message.as_str()));
}

#[tokio::test]
async fn a_full_reindex_retries_a_quarantined_document_once_not_in_every_attempt() {
    use engine::ingest::jobs::{self, InFlight};
    let (lore, _dir) = open().await;
    let source = upload_source(&lore).await;
    put(&lore, &source, "backups.md", MARKDOWN.as_bytes()).await.unwrap();
    put(&lore, &source, "hours.txt", TEXT.as_bytes()).await.unwrap();
    run(&lore, Some(&source), false).await;

    // A full reindex dies twice extracting hours.txt: this job quarantines it.
    let job = jobs::enqueue(&lore, None, true, "test").await.unwrap();
    let mut reading = InFlight {
        source_id: source.clone(),
        uri: "hours.txt".into(),
        hash: engine::ingest::bytes_hash(TEXT.as_bytes()),
        deaths: 0,
    };
    for death in 0..2 {
        let held = jobs::claim(&lore, &job.id, "dying").await.unwrap().unwrap();
        reading.deaths = death;
        jobs::mark_in_flight(&lore, &held.id, Some(&reading)).await.unwrap();
        jobs::requeue_stale(&lore, std::time::Duration::ZERO).await.unwrap();
    }
    let docs = sources::documents(&lore, &source).await.unwrap();
    assert_eq!(docs.iter().find(|d| d.uri == "hours.txt").unwrap().status, DocumentStatus::Quarantined);

    // Its next attempt skips it (the job already tried it) and finishes.
    let ended = run_queued(&lore, &job.id).await;
    assert_eq!(ended.status, "succeeded", "{:?}", ended.message);
    assert_eq!(progress(&ended).failed, 1);
    assert!(ended.errors.to_string().contains("quarantined"), "{}", ended.errors);
    // A later full reindex, another job, tries it again: it reads fine here.
    let again = run(&lore, None, true).await;
    assert_eq!(progress(&again).failed, 0);
    let docs = sources::documents(&lore, &source).await.unwrap();
    assert_eq!(docs.iter().find(|d| d.uri == "hours.txt").unwrap().status, DocumentStatus::Indexed);
}

#[tokio::test]
async fn a_new_website_queues_its_first_sync_and_sources_are_found_again_by_what_they_read() {
    use engine::ingest::lifecycle;
    let (lore, _dir) = open().await;
    let site = NewSource {
        name: "Docs".into(),
        kind: "website".into(),
        config: Some(serde_json::json!({"start_url": "http://127.0.0.1:9/docs/"})),
        volatility: None,
        audience: None,
    };
    let added = lifecycle::add_source(&lore, &Actor::System, site, "test").await.unwrap();
    let job = added.first_sync.expect("a website's first sync is queued with it");
    assert_eq!(job.source_id.as_deref(), Some(added.source.id.as_str()));
    assert_eq!(added.source.status, SourceStatus::Queued);

    // The same start URL finds that source; another creates one named after its host.
    let same =
        lifecycle::website_at(&lore, &Actor::System, "http://127.0.0.1:9/docs/", None, "test").await.unwrap();
    assert_eq!(same.source.id, added.source.id);
    assert!(same.first_sync.is_none(), "finding a source queues nothing");
    let other =
        lifecycle::website_at(&lore, &Actor::System, "http://127.0.0.1:9/blog/", None, "test").await.unwrap();
    assert_ne!(other.source.id, added.source.id);
    assert_eq!((other.source.name.as_str(), other.source.status), ("127.0.0.1", SourceStatus::Queued));
    assert!(other.first_sync.is_some());

    // An upload source waits for its files, and is found again by name.
    let files = NewSource { name: "Manuals".into(), kind: "upload".into(), ..NewSource::default() };
    let added = lifecycle::add_source(&lore, &Actor::System, files, "test").await.unwrap();
    assert!(added.first_sync.is_none());
    assert_eq!(added.source.status, SourceStatus::Empty);
    let found = lifecycle::upload_source_named(&lore, &Actor::System, "Manuals").await.unwrap();
    assert_eq!(found.id, added.source.id);
    let created = lifecycle::upload_source_named(&lore, &Actor::System, "Handbook").await.unwrap();
    assert_eq!(created.kind, SourceKind::parse("upload").unwrap());
    // A website's name is not an upload source's.
    let refused = lifecycle::upload_source_named(&lore, &Actor::System, "Docs").await.unwrap_err();
    assert!(matches!(refused, Error::InvalidInput(_)), "{refused:?}");
    assert_eq!(sources::list(&lore).await.unwrap().len(), 4);
}

#[tokio::test]
async fn a_stored_setting_that_cannot_be_read_is_an_error_not_a_default() {
    let (lore, _dir) = open().await;
    let garbage = serde_json::json!({"max_tokens": "many"});
    engine::store::put_setting(&lore.db, "chunking", garbage, "test").await.unwrap();
    // Indexing with the default chunking instead would re-embed the corpus
    // with parameters nobody chose.
    let err = tuning::chunking(&lore).await.unwrap_err();
    assert!(err.to_string().contains("the stored chunking setting cannot be read"), "{err}");
}

#[tokio::test]
async fn a_run_never_starts_beside_a_run_it_overlaps_whichever_process_holds_it() {
    use engine::ingest::{jobs, lifecycle};
    let (lore, _dir) = open().await;
    let handbook = upload_source(&lore).await;
    let other = sources::create(
        &lore,
        &Actor::System,
        NewSource { name: "Other".into(), kind: "upload".into(), ..NewSource::default() },
    )
    .await
    .unwrap()
    .id;

    // One process runs the handbook; another queues a second run of it.
    let first = jobs::enqueue(&lore, Some(&handbook), false, "test").await.unwrap();
    let running = jobs::claim(&lore, &first.id, "process-1").await.unwrap().unwrap();
    let second = jobs::enqueue(&lore, Some(&handbook), false, "write").await.unwrap();
    assert_ne!(second.id, first.id, "a run is queued beside the running one");
    assert!(jobs::claim(&lore, &second.id, "process-2").await.unwrap().is_none(), "not while the first runs");
    // Another source's run goes ahead; a full reindex waits for every run.
    let beside = jobs::enqueue(&lore, Some(&other), false, "test").await.unwrap();
    let full = jobs::enqueue(&lore, None, true, "test").await.unwrap();
    let claimed = jobs::claim_next(&lore, "process-2").await.unwrap().expect("the other source's run");
    assert_eq!(claimed.id, beside.id);
    assert!(jobs::claim_next(&lore, "process-2").await.unwrap().is_none());
    assert_eq!(jobs::get(&lore, &full.id).await.unwrap().status, "queued");

    // The CLI's run of the handbook (`lore ingest`) waits for the first
    // run's end, then holds the queued one.
    let waiting = tokio::spawn({
        let (lore, handbook) = (lore.clone(), handbook.clone());
        async move { lifecycle::start_claimed(&lore, Some(&handbook), false, "cli", "process-3").await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert!(!waiting.is_finished(), "it waits while the first run holds the source");
    assert_eq!(jobs::run(&lore, running, "process-1", None).await.unwrap().status, "succeeded");
    let held =
        tokio::time::timeout(std::time::Duration::from_secs(10), waiting).await.unwrap().unwrap().unwrap();
    assert_eq!((held.id.as_str(), held.status.as_str()), (second.id.as_str(), "running"));

    // The full reindex starts once nothing else runs.
    jobs::run(&lore, held, "process-3", None).await.unwrap();
    assert!(jobs::claim_next(&lore, "process-2").await.unwrap().is_none(), "the other source still runs");
    jobs::run(&lore, claimed, "process-2", None).await.unwrap();
    let next = jobs::claim_next(&lore, "process-2").await.unwrap().expect("the full reindex");
    assert_eq!(next.id, full.id);
}
