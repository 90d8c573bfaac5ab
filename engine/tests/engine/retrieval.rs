//! The chunk index and hybrid retrieval against real components: LanceDB in a
//! temporary directory and the real all-MiniLM-L6-v2 embedder.

use std::path::PathBuf;

use engine::chunk::{chunk_sections, ChunkingParams};
use engine::embed::bert::Precision;
use engine::embed::local::{LocalEmbedder, Precisions};
use engine::embed::Embedder;
use engine::extract::{extract, Format};
use engine::index::lance::LanceChunkStore;
use engine::index::{ChunkRow, ChunkStore, Scope};
use engine::retrieve::{hybrid, RetrievalSettings};

fn embedder() -> LocalEmbedder {
    let root = std::env::var_os("LORE_TEST_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/lore/models"));
    LocalEmbedder::load(
        &root.join("all-MiniLM-L6-v2"),
        "sentence-transformers/all-MiniLM-L6-v2",
        Precisions::uniform(Precision::F32),
        1,
    )
    .unwrap()
}

const PASSWORD: &str = "# Account\n\n## Reset your password\n\nOpen Settings, choose Security, then Reset password. We email you a link that works for one hour.\n\n## Two-factor authentication\n\nTurn on two-factor authentication under Security to protect your account with a code from your phone.\n";
const BILLING: &str = "# Billing\n\n## Invoices\n\nInvoices are issued on the first day of each month and can be downloaded as PDF from the Billing page.\n\n## Refunds\n\nAnnual plans can be refunded within 30 days of purchase.\n";
const DEPLOY: &str = "# Deploying\n\n## Docker\n\nRun the container with the data directory mounted as a volume, and expose port 3000.\n";

/// Extracts, chunks and embeds a Markdown document into rows.
async fn rows(embedder: &LocalEmbedder, source: &str, document: &str, markdown: &str) -> Vec<ChunkRow> {
    let extracted = extract(Format::Markdown, markdown.as_bytes(), document).unwrap();
    let chunks = chunk_sections(&extracted.sections, ChunkingParams::default(), embedder);
    let vectors =
        embedder.embed(&chunks.iter().map(|c| c.embed_text.clone()).collect::<Vec<_>>()).await.unwrap();
    chunks
        .into_iter()
        .zip(vectors)
        .map(|(chunk, vector)| ChunkRow {
            id: format!("{document}:{}", chunk.position),
            source_id: source.into(),
            view: None,
            document_id: document.into(),
            title: extracted.title.clone().unwrap_or_default(),
            url: Some(format!("https://docs.example.test/{document}")),
            heading: chunk.heading,
            position: chunk.position as u32,
            text: chunk.text,
            content_hash: format!("hash-of-{document}-{}", chunk.position),
            vector,
        })
        .collect()
}

async fn corpus() -> (LanceChunkStore, LocalEmbedder, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let embedder = embedder();
    let store =
        LanceChunkStore::open(&dir.path().join("lancedb").to_str().unwrap().into(), 384).await.unwrap();
    for (source, document, text) in
        [("help", "account", PASSWORD), ("help", "billing", BILLING), ("ops", "deploy", DEPLOY)]
    {
        store.replace_document(document, rows(&embedder, source, document, text).await).await.unwrap();
    }
    (store, embedder, dir)
}

fn all_sources() -> Scope {
    Scope { sources: vec!["help".into(), "ops".into()], every_source: true }
}

#[tokio::test]
async fn a_question_finds_the_passage_that_answers_it() {
    let (store, embedder, _dir) = corpus().await;
    let retrieval = hybrid(
        &store,
        &embedder,
        "How can I change my password?",
        &all_sources(),
        &RetrievalSettings::default(),
    )
    .await
    .unwrap();
    let best = &retrieval.results[0];
    assert_eq!(best.chunk.document_id, "account");
    assert_eq!(best.chunk.heading.as_deref(), Some("Account › Reset your password"));
    assert!(best.vector_score > 0.4, "{best:?}");
    assert!(best.text_score.is_some(), "\"password\" is also a text match");
    assert!(best.vector_rank.is_some() && best.text_rank.is_some());
    assert!(retrieval.results.windows(2).all(|w| w[0].score >= w[1].score));
}

#[tokio::test]
async fn nothing_passes_the_cutoff_for_an_unrelated_question() {
    let (store, embedder, _dir) = corpus().await;
    let retrieval = hybrid(
        &store,
        &embedder,
        "What is the boiling point of mercury?",
        &all_sources(),
        &RetrievalSettings::default(),
    )
    .await
    .unwrap();
    assert!(retrieval.results.is_empty(), "{:?}", retrieval.results);
    assert!(retrieval.candidates > 0 && retrieval.below_cutoff == retrieval.candidates);
    // What a refusal may list: only candidates near the cutoff.
    let cutoff = RetrievalSettings::default().score_cutoff;
    assert!(retrieval.nearest_below.iter().all(|r| r.score >= cutoff / 2.0 && r.score < cutoff));

    // Just above the best candidate's score: nothing passes, and the
    // nearest ones are kept, best first, at most three.
    let open = RetrievalSettings { score_cutoff: 0.0, ..RetrievalSettings::default() };
    let all =
        hybrid(&store, &embedder, "How can I change my password?", &all_sources(), &open).await.unwrap();
    let best = all.results[0].score;
    let closed = RetrievalSettings { score_cutoff: best + 0.001, ..RetrievalSettings::default() };
    let near =
        hybrid(&store, &embedder, "How can I change my password?", &all_sources(), &closed).await.unwrap();
    assert!(near.results.is_empty());
    assert!((1..=engine::retrieve::NEAREST_BELOW).contains(&near.nearest_below.len()), "{near:?}");
    assert_eq!(near.nearest_below[0].chunk.id, all.results[0].chunk.id);
    assert!(near.nearest_below.windows(2).all(|w| w[0].score >= w[1].score));
}

#[tokio::test]
async fn only_the_given_sources_are_searched() {
    let (store, embedder, _dir) = corpus().await;
    let settings = RetrievalSettings { score_cutoff: 0.0, ..RetrievalSettings::default() };
    let only_ops = Scope::only(vec!["ops".to_owned()]);
    let found = hybrid(&store, &embedder, "reset password", &only_ops, &settings).await.unwrap();
    assert!(!found.results.is_empty());
    assert!(found.results.iter().all(|r| r.chunk.source_id == "ops"));
    let none = hybrid(&store, &embedder, "reset password", &Scope::default(), &settings).await.unwrap();
    assert!(none.results.is_empty());
}

#[tokio::test]
async fn an_unfiltered_search_of_every_source_finds_what_a_filtered_one_does() {
    let (store, embedder, _dir) = corpus().await;
    let settings = RetrievalSettings { score_cutoff: 0.0, top_k: 20, ..RetrievalSettings::default() };
    let filtered = Scope::only(all_sources().sources);
    for query in ["reset password", "invoices", "docker port"] {
        let every = hybrid(&store, &embedder, query, &all_sources(), &settings).await.unwrap();
        let only = hybrid(&store, &embedder, query, &filtered, &settings).await.unwrap();
        assert_eq!(every, only, "{query}");
    }

    // Chunks of a source the scope no longer lists (deleted while it was
    // being indexed) never come back from the unfiltered search.
    let help_only = Scope { sources: vec!["help".into()], every_source: true };
    let found = hybrid(&store, &embedder, "docker port", &help_only, &settings).await.unwrap();
    assert!(!found.results.is_empty());
    assert!(found.results.iter().all(|r| r.chunk.source_id == "help"), "{:?}", found.results);
}

#[tokio::test]
async fn replacing_a_document_swaps_all_its_chunks_at_once() {
    let (store, embedder, _dir) = corpus().await;
    let before = store.count(Some("help")).await.unwrap();
    let account_before = rows(&embedder, "help", "account", PASSWORD).await.len();

    let shorter = "# Account\n\nPasswords are managed by your identity provider.\n";
    let new_rows = rows(&embedder, "help", "account", shorter).await;
    assert_eq!(new_rows.len(), 1);
    store.replace_document("account", new_rows).await.unwrap();
    assert_eq!(store.count(Some("help")).await.unwrap(), before - account_before + 1);
    assert_eq!(store.count(Some("ops")).await.unwrap(), 1, "other documents untouched");

    let settings = RetrievalSettings { score_cutoff: 0.0, top_k: 20, ..RetrievalSettings::default() };
    let found = hybrid(&store, &embedder, "password", &all_sources(), &settings).await.unwrap();
    let account: Vec<_> = found.results.iter().filter(|r| r.chunk.document_id == "account").collect();
    assert_eq!(account.len(), 1);
    assert!(account[0].chunk.text.contains("identity provider"));

    store.replace_document("account", Vec::new()).await.unwrap();
    assert_eq!(store.count(Some("help")).await.unwrap(), before - account_before);
}

#[tokio::test]
async fn deleting_a_source_removes_its_chunks_and_the_index_reopens() {
    let (store, _embedder, dir) = corpus().await;
    store.delete_source("help").await.unwrap();
    store.optimize().await.unwrap();
    assert_eq!(store.count(Some("help")).await.unwrap(), 0);
    drop(store);
    let reopened =
        LanceChunkStore::open(&dir.path().join("lancedb").to_str().unwrap().into(), 384).await.unwrap();
    assert_eq!(reopened.count(None).await.unwrap(), 1);
    assert!(LanceChunkStore::open(&dir.path().join("lancedb").to_str().unwrap().into(), 768).await.is_err());
}

#[tokio::test]
async fn content_hashes_follow_every_write() {
    let (store, embedder, _dir) = corpus().await;
    let ids = vec!["account:0".to_owned(), "billing:0".to_owned(), "nowhere:0".to_owned()];
    let first = store.content_hashes(&ids).await.unwrap();
    assert_eq!(first["account:0"], ("help".to_owned(), "hash-of-account-0".to_owned()));
    assert!(first.contains_key("billing:0"));
    assert!(!first.contains_key("nowhere:0"), "a missing chunk is not reported");
    // Read again (answered from memory): the same.
    assert_eq!(store.content_hashes(&ids).await.unwrap(), first);

    // A replaced document's chunks report their new hashes at once.
    let mut changed =
        rows(&embedder, "help", "account", "# Account\n\nSign in with your company account.\n").await;
    changed[0].content_hash = "changed".into();
    store.replace_document("account", changed).await.unwrap();
    assert_eq!(store.content_hashes(&ids).await.unwrap()["account:0"].1, "changed");

    // A deleted source's chunks are gone at once.
    store.delete_source("help").await.unwrap();
    let after = store.content_hashes(&ids).await.unwrap();
    assert!(!after.contains_key("account:0") && !after.contains_key("billing:0"), "{after:?}");
}

#[tokio::test]
async fn another_processs_writes_are_seen_within_the_consistency_interval() {
    // Two stores on one directory, as `lore serve` and `lore ingest` are.
    let (server, embedder, dir) = corpus().await;
    let uri = dir.path().join("lancedb");
    let ingest = LanceChunkStore::open(&uri.to_str().unwrap().into(), 384).await.unwrap();
    let ids = vec!["account:0".to_owned(), "faq:0".to_owned()];
    assert_eq!(server.content_hashes(&ids).await.unwrap()["account:0"].1, "hash-of-account-0");

    let mut changed =
        rows(&embedder, "help", "account", "# Account\n\nSign in with your company account.\n").await;
    changed[0].content_hash = "changed elsewhere".into();
    ingest.replace_document("account", changed).await.unwrap();
    let faq = "# FAQ\n\n## Hours\n\nSupport answers from nine to five, Monday to Friday.\n";
    ingest.replace_document("faq", rows(&embedder, "help", "faq", faq).await).await.unwrap();

    tokio::time::sleep(
        engine::index::lance::OTHER_WRITERS_SEEN_WITHIN + std::time::Duration::from_millis(200),
    )
    .await;
    // The remembered hash is dropped, and the new document is searched.
    let seen = server.content_hashes(&ids).await.unwrap();
    assert_eq!(seen["account:0"].1, "changed elsewhere");
    assert!(seen.contains_key("faq:0"), "{seen:?}");
    let found = hybrid(
        &server,
        &embedder,
        "When does support answer?",
        &all_sources(),
        &RetrievalSettings::default(),
    )
    .await
    .unwrap();
    assert_eq!(found.results[0].chunk.document_id, "faq", "{:?}", found.results);
}

/// A deterministic pseudo-random unit vector.
fn unit_vector(seed: u64, dimensions: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut vector: Vec<f32> = (0..dimensions)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        })
        .collect();
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    vector.iter_mut().for_each(|x| *x /= norm);
    vector
}

#[tokio::test]
async fn a_corpus_past_the_threshold_gets_a_vector_index_that_still_finds_the_nearest() {
    use engine::index::lance::VECTOR_INDEX_MIN_ROWS;
    let dir = tempfile::tempdir().unwrap();
    let store =
        LanceChunkStore::open(&dir.path().join("lancedb").to_str().unwrap().into(), 384).await.unwrap();
    let rows: Vec<ChunkRow> =
        (0..VECTOR_INDEX_MIN_ROWS).map(|i| numbered_row(i, unit_vector(i as u64, 384))).collect();
    store.append(rows[..VECTOR_INDEX_MIN_ROWS - 1].to_vec()).await.unwrap();
    store.optimize().await.unwrap();
    assert!(!store.has_vector_index().await.unwrap(), "below the threshold the scan stays flat");

    store.append(rows[VECTOR_INDEX_MIN_ROWS - 1..].to_vec()).await.unwrap();
    store.optimize().await.unwrap();
    assert!(store.has_vector_index().await.unwrap());

    let scope = Scope { sources: vec!["help".into()], every_source: true };
    for i in [0, 1234, VECTOR_INDEX_MIN_ROWS - 1] {
        let hits = store.vector_search(&rows[i].vector, &scope, 5).await.unwrap();
        assert_eq!(hits[0].chunk.id, rows[i].id, "the indexed search finds the row itself first");
        assert!((hits[0].score - 1.0).abs() < 1e-3, "{}", hits[0].score);
    }
}

/// `count` rows from `first` on whose vectors fall in clusters, as
/// embeddings do: each is one of 40 centres blended with another vector
/// and renormalised.
fn clustered_rows(first: usize, count: usize) -> Vec<ChunkRow> {
    (first..first + count)
        .map(|i| {
            let centre = unit_vector(1_000_000 + (i % 40) as u64, 384);
            let own = unit_vector(i as u64, 384);
            let mut vector: Vec<f32> = centre.iter().zip(&own).map(|(c, o)| 0.8 * c + 0.6 * o).collect();
            let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
            vector.iter_mut().for_each(|x| *x /= norm);
            numbered_row(i, vector)
        })
        .collect()
}

/// Row `i` of source `help`, a hundred to a document.
fn numbered_row(i: usize, vector: Vec<f32>) -> ChunkRow {
    ChunkRow {
        id: format!("doc{}:{}", i / 100, i % 100),
        source_id: "help".into(),
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

/// A store past the vector index's threshold, indexed.
async fn indexed_store(dir: &tempfile::TempDir) -> (LanceChunkStore, Vec<ChunkRow>) {
    use engine::index::lance::VECTOR_INDEX_MIN_ROWS;
    let store =
        LanceChunkStore::open(&dir.path().join("lancedb").to_str().unwrap().into(), 384).await.unwrap();
    let rows = clustered_rows(0, VECTOR_INDEX_MIN_ROWS + 1_000);
    store.append(rows.clone()).await.unwrap();
    store.optimize().await.unwrap();
    assert!(store.has_vector_index().await.unwrap());
    (store, rows)
}

fn ids(hits: &[engine::index::Hit]) -> Vec<String> {
    hits.iter().map(|hit| hit.chunk.id.clone()).collect()
}

#[tokio::test]
async fn the_indexed_search_finds_what_the_exact_search_finds() {
    let dir = tempfile::tempdir().unwrap();
    let (store, rows) = indexed_store(&dir).await;
    let exact = store.exact();
    let scope = Scope { sources: vec!["help".into()], every_source: true };
    // Queries that are not rows: new blends of the same centres.
    let queries: Vec<Vec<f32>> = clustered_rows(50_000, 50).into_iter().map(|row| row.vector).collect();
    let mut kept = 0;
    for query in &queries {
        let truth = exact.vector_search(query, &scope, 10).await.unwrap();
        // The exact search is exact: its first hit is the row closest by a
        // plain dot product over every row.
        let closest = rows
            .iter()
            .max_by(|a, b| {
                let dot = |row: &ChunkRow| row.vector.iter().zip(query).map(|(x, y)| x * y).sum::<f32>();
                dot(a).total_cmp(&dot(b))
            })
            .unwrap();
        assert_eq!(truth[0].chunk.id, closest.id);
        let found = store.vector_search(query, &scope, 10).await.unwrap();
        kept += ids(&truth).iter().filter(|id| ids(&found).contains(id)).count();
    }
    // IVF_PQ re-ranking ten candidates per result promises recall close to
    // exact; on these clusters it is at least 0.95.
    let recall = kept as f64 / (queries.len() * 10) as f64;
    assert!(recall >= 0.95, "recall@10 against the exact search: {recall:.3}");
}

/// A reader of one small source searches the indexed store through a
/// filter: every hit is that source's, and the top 10 are the exact
/// search's within the index's tolerance, though the source holds a
/// twentieth of the rows (a graph walk that only met other sources' rows
/// would find few of them).
#[tokio::test]
async fn a_search_scoped_to_a_small_source_finds_what_the_exact_search_finds() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        LanceChunkStore::open(&dir.path().join("lancedb").to_str().unwrap().into(), 384).await.unwrap();
    let mut rows = clustered_rows(0, 6_000);
    for row in rows.iter_mut().step_by(20) {
        row.source_id = "small".into();
    }
    store.append(rows).await.unwrap();
    store.optimize().await.unwrap();
    assert!(store.has_vector_index().await.unwrap());
    let scope = Scope::only(vec!["small".into()]);
    let queries: Vec<Vec<f32>> = clustered_rows(60_000, 40).into_iter().map(|row| row.vector).collect();
    for query in &queries {
        let found = store.vector_search(query, &scope, 10).await.unwrap();
        assert_eq!(found.len(), 10);
        assert!(found.iter().all(|hit| hit.chunk.source_id == "small"), "only the reader's source");
    }
    let recall = recall_at_10(&store, &scope, &queries).await;
    assert!(recall >= 0.95, "recall@10 of the scoped search against the exact one: {recall:.3}");
}

/// Recall@10 of `store`'s indexed search over `scope` against its exact
/// search, over `queries`.
async fn recall_at_10(store: &LanceChunkStore, scope: &Scope, queries: &[Vec<f32>]) -> f64 {
    let exact = store.exact();
    let mut kept = 0;
    for query in queries {
        let truth = exact.vector_search(query, scope, 10).await.unwrap();
        let found = store.vector_search(query, scope, 10).await.unwrap();
        kept += ids(&truth).iter().filter(|id| ids(&found).contains(id)).count();
    }
    kept as f64 / (queries.len() * 10) as f64
}

/// A table indexed by an earlier version (IVF_PQ) is searched as that kind
/// asks, probes and exact re-ranking, until the index upkeep trains it anew
/// as the kind Lore builds now.
#[tokio::test]
async fn an_index_an_earlier_version_built_serves_until_it_is_trained_anew_as_the_current_kind() {
    use engine::upkeep::{due, Due};
    use lancedb::index::{vector::IvfPqIndexBuilder, Index};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lancedb");
    let location = path.to_str().unwrap().into();
    let rows = clustered_rows(0, 6_000);
    LanceChunkStore::open(&location, 384).await.unwrap().append(rows).await.unwrap();
    // What an earlier version built on the table.
    let db = lancedb::connect(path.to_str().unwrap()).execute().await.unwrap();
    let table = db.open_table("chunks").execute().await.unwrap();
    let pq = IvfPqIndexBuilder::default().distance_type(lancedb::DistanceType::Cosine).num_sub_vectors(48);
    table.create_index(&["vector"], Index::IvfPq(pq)).execute().await.unwrap();

    let store = LanceChunkStore::open(&location, 384).await.unwrap();
    let scope = Scope { sources: vec!["help".into()], every_source: true };
    let queries: Vec<Vec<f32>> = clustered_rows(70_000, 30).into_iter().map(|row| row.vector).collect();
    let index = store.vector_index().await.unwrap();
    assert!(index.outdated, "{index:?}");
    assert_eq!(due(index, Some(6_000)), Due::Train, "trained anew, though the rows have not doubled");
    let recall = recall_at_10(&store, &scope, &queries).await;
    assert!(recall >= 0.95, "the earlier index still searched as it asks: {recall:.3}");

    store.retrain_vector_index().await.unwrap();
    let index = store.vector_index().await.unwrap();
    assert!(!index.outdated, "{index:?}");
    assert_eq!(due(index, Some(6_000)), Due::Nothing);
    let recall = recall_at_10(&store, &scope, &queries).await;
    assert!(recall >= 0.95, "and the new one: {recall:.3}");
}

#[tokio::test]
async fn chunks_written_after_the_index_was_built_are_found_before_and_after_it_takes_them_in() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = indexed_store(&dir).await;
    let scope = Scope { sources: vec!["help".into()], every_source: true };
    let added = clustered_rows(100_000, 100);
    store.append(added.clone()).await.unwrap();
    for row in added.iter().step_by(10) {
        let hits = store.vector_search(&row.vector, &scope, 5).await.unwrap();
        assert_eq!(hits[0].chunk.id, row.id, "a row written after the index is found at once");
    }
    store.optimize().await.unwrap();
    for row in added.iter().step_by(10) {
        let hits = store.vector_search(&row.vector, &scope, 5).await.unwrap();
        assert_eq!(hits[0].chunk.id, row.id, "and still once the index holds it");
    }
}

/// The full-text index is built on the empty table, and every later row is
/// searched by its words at once; the fold takes the rows into the index
/// and they are still found.
#[tokio::test]
async fn chunks_written_after_the_full_text_index_was_built_are_found_by_their_words() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        LanceChunkStore::open(&dir.path().join("lancedb").to_str().unwrap().into(), 384).await.unwrap();
    let scope = Scope { sources: vec!["help".into()], every_source: true };
    let first: Vec<ChunkRow> = (0..50).map(|i| numbered_row(i, unit_vector(i as u64, 384))).collect();
    store.append(first).await.unwrap();
    store.optimize().await.unwrap();

    let mut late = numbered_row(50, unit_vector(50, 384));
    late.text = "The heliotrope valve is bled each spring".into();
    store.append(vec![late.clone()]).await.unwrap();
    let hits = store.text_search("heliotrope valve", &scope, 5).await.unwrap();
    assert_eq!(ids(&hits), vec![late.id.clone()], "found before the fold takes it into the index");

    store.optimize().await.unwrap();
    let hits = store.text_search("heliotrope valve", &scope, 5).await.unwrap();
    assert_eq!(ids(&hits), vec![late.id.clone()], "and after");
    let hits = store.text_search("passage number 7", &scope, 5).await.unwrap();
    assert!(ids(&hits).contains(&"doc0:7".to_owned()), "the rows before are still found: {:?}", ids(&hits));
}

#[tokio::test]
async fn a_rebuilt_index_swapped_in_mid_query_never_fails_a_search() {
    let dir = tempfile::tempdir().unwrap();
    let (store, rows) = indexed_store(&dir).await;
    let store = std::sync::Arc::new(store);
    let scope = Scope { sources: vec!["help".into()], every_source: true };
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let searching = tokio::spawn({
        let (store, done, scope) = (store.clone(), done.clone(), scope.clone());
        let probes: Vec<ChunkRow> = rows.iter().step_by(97).cloned().collect();
        async move {
            let mut searches = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) || searches < 20 {
                let row = &probes[searches % probes.len()];
                let hits = store.vector_search(&row.vector, &scope, 5).await.expect("a search mid-swap");
                assert_eq!(hits[0].chunk.id, row.id, "old index or new, the row itself comes first");
                searches += 1;
            }
            searches
        }
    });
    for _ in 0..2 {
        store.build_vector_index().await.unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let searches = searching.await.unwrap();
    assert!(searches >= 20, "{searches}");
    assert!(store.has_vector_index().await.unwrap());
}

/// The worker trains the vector index anew once the rows have doubled since
/// it was trained, in the background: one worker at a time, readiness says
/// so, the previous index serves meanwhile, rows written meanwhile are
/// folded in after, and the record moves to the rows trained on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_is_trained_anew_in_the_background_once_the_corpus_doubled() {
    use engine::index::lance::VECTOR_INDEX_MIN_ROWS;
    use engine::upkeep;
    let (lore, _dir) = crate::support::open().await;
    let store = lore.chunks().await.unwrap();
    let table = engine::shadow::active_table(&lore.db).await.unwrap();
    let first = VECTOR_INDEX_MIN_ROWS;
    store.write_documents(&[], clustered_rows(0, first)).await.unwrap();
    assert_eq!(store.optimize().await.unwrap().trained, Some(first), "the first index, by the run");
    upkeep::record_trained(&lore, &table, first).await.unwrap();
    assert!(upkeep::tick(&lore, "worker-a").await.unwrap().is_none(), "trained on every row there is");

    // Grown, but by less than double: new rows are folded, not trained on.
    let more = clustered_rows(first, first);
    store.write_documents(&[], more[..first - 1].to_vec()).await.unwrap();
    assert!(upkeep::tick(&lore, "worker-a").await.unwrap().is_none());
    store.write_documents(&[], more[first - 1..].to_vec()).await.unwrap();

    let training = upkeep::tick(&lore, "worker-a").await.unwrap().expect("doubled: trained anew");
    assert!(upkeep::tick(&lore, "worker-b").await.unwrap().is_none(), "one training at a time");
    let under_way = upkeep::status(&lore).await.unwrap().training.expect("recorded while it runs");
    assert_eq!((under_way.rows, under_way.owner.as_str()), (2 * first, "worker-a"));
    let state = engine::readiness::assess(&lore).await.unwrap();
    let indexing = state.checks.iter().find(|c| c.concern == engine::readiness::Concern::Indexing).unwrap();
    assert!(
        indexing.detail.contains(&format!("trained anew on {} chunks", 2 * first)),
        "{}",
        indexing.detail
    );
    // Meanwhile the previous index serves, and new rows are found at once.
    let scope = Scope { sources: vec!["help".into()], every_source: true };
    let during = clustered_rows(200_000, 100);
    store.write_documents(&[], during.clone()).await.unwrap();
    for row in [&more[0], &during[0], &during[99]] {
        let hits = store.vector_search(&row.vector, &scope, 5).await.unwrap();
        assert_eq!(hits[0].chunk.id, row.id);
    }

    let trained = training.await.unwrap().unwrap();
    assert_eq!(trained.rows, 2 * first);
    let status = upkeep::status(&lore).await.unwrap();
    assert_eq!(status.trained.map(|t| t.rows), Some(2 * first));
    assert_eq!(status.training, None, "the record of the training is gone");
    let rows = 2 * first + during.len();
    assert_eq!(
        status.index,
        engine::index::VectorIndex { rows, indexed: Some(rows), outdated: false },
        "and what was written meanwhile folded in"
    );
    for row in [&more[first - 1], &during[50]] {
        let hits = store.vector_search(&row.vector, &scope, 5).await.unwrap();
        assert_eq!(hits[0].chunk.id, row.id);
    }
    assert!(upkeep::tick(&lore, "worker-b").await.unwrap().is_none(), "nothing more is due");
}

/// Writes a page at a time (as a crawl makes them) are merged as the run
/// goes: each LanceDB commit rewrites a manifest of every fragment, so
/// unmerged a run's writes would grow slower with each one. The fragments
/// stay few whatever the commits, every row stays findable, and nothing is
/// merged while an index training is under way (the merge would move rows
/// the training indexes, and LanceDB would refuse its commit).
#[tokio::test]
async fn a_run_of_small_writes_is_merged_as_it_goes_but_not_under_a_training() {
    use engine::index::lance::MERGE_AFTER_WRITES;
    use engine::upkeep;
    let (lore, _dir) = crate::support::open().await;
    // The run's own handle: it sees its commits at once.
    let store = LanceChunkStore::open(&lore.settings.vectors(), 384).await.unwrap();
    let write = |document: usize| {
        let (lore, store) = (&lore, &store);
        async move {
            store.write_documents(&[], clustered_rows(document * 100, 5)).await.unwrap();
            upkeep::merge_when_due(lore, store).await.unwrap();
        }
    };

    let documents = 3 * MERGE_AFTER_WRITES + 1;
    let mut most = 0;
    for document in 0..documents {
        write(document).await;
        most = most.max(store.fragments().await.unwrap());
    }
    assert!(most <= MERGE_AFTER_WRITES, "at most one fragment per write between merges: {most}");
    assert!(store.fragments().await.unwrap() <= 2, "merged three times over {documents} writes");
    assert_eq!(store.count(None).await.unwrap(), documents * 5);
    let scope = Scope { sources: vec!["help".into()], every_source: true };
    for document in (0..documents).step_by(16) {
        let row = &clustered_rows(document * 100, 1)[0];
        let hits = store.vector_search(&row.vector, &scope, 1).await.unwrap();
        assert_eq!(hits[0].chunk.id, row.id, "found where the merge put it");
    }

    // A training under way, as another process records it: no merge.
    let training = upkeep::Training {
        table: engine::shadow::active_table(&lore.db).await.unwrap(),
        rows: documents * 5,
        owner: "worker-b".into(),
        started_at: chrono::Utc::now(),
        failed: None,
    };
    engine::store::put_setting(
        &lore.db,
        upkeep::TRAINING,
        serde_json::to_value(&training).unwrap(),
        "worker-b",
    )
    .await
    .unwrap();
    let before = store.fragments().await.unwrap();
    for document in documents..documents + 2 * MERGE_AFTER_WRITES {
        write(document).await;
    }
    assert_eq!(store.fragments().await.unwrap(), before + 2 * MERGE_AFTER_WRITES, "left alone");

    // Once it is done, the next write merges what waited.
    engine::store::delete_setting(&lore.db, upkeep::TRAINING).await.unwrap();
    write(documents + 2 * MERGE_AFTER_WRITES).await;
    assert!(store.fragments().await.unwrap() <= 2);
    assert_eq!(store.count(None).await.unwrap(), (documents + 2 * MERGE_AFTER_WRITES + 1) * 5);
}

/// The fold after a run merges only fragments smaller than
/// `FRAGMENT_ROWS`: a full one is left as it is, not rewritten with the
/// few rows written after it (LanceDB's default target, a million rows,
/// would rewrite the whole table of a smaller corpus at every fold).
#[tokio::test]
async fn the_fold_after_a_run_leaves_full_fragments_alone() {
    use engine::index::lance::FRAGMENT_ROWS;
    let dir = tempfile::tempdir().unwrap();
    let store =
        LanceChunkStore::open(&dir.path().join("lancedb").to_str().unwrap().into(), 384).await.unwrap();
    store.append(clustered_rows(0, FRAGMENT_ROWS)).await.unwrap();
    for document in 0..3 {
        store.write_documents(&[], clustered_rows((FRAGMENT_ROWS / 100 + document) * 100, 5)).await.unwrap();
    }
    assert_eq!(store.fragments().await.unwrap(), 4);
    store.compact().await.unwrap();
    assert_eq!(store.fragments().await.unwrap(), 2, "the full fragment, and the small ones merged");
    assert_eq!(store.count(None).await.unwrap(), FRAGMENT_ROWS + 15);
}
