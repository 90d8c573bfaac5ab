//! Website sources against a generated documentation site on 127.0.0.1 (see
//! `support/site.rs`), with the real embedder, SQLite and LanceDB.

use crate::support;

use std::time::{Duration, Instant};

use crate::support::site::{page_text, Site};
use crate::support::{indexed_uris, open, open_with, progress, run, run_queued};
use engine::audit::Actor;
use engine::ingest::{jobs, IngestError};
use engine::retrieve::RetrievalSettings;
use engine::search::Reach;
use engine::sources::{self, DocumentStatus, NewSource, SourceStatus};
use engine::{search, Error, Lore};
use sea_orm::QueryFilter;

const PAGES: usize = 55;

async fn website(lore: &Lore, config: serde_json::Value) -> String {
    let new = NewSource {
        name: "Acme docs".into(),
        kind: "website".into(),
        config: Some(config),
        volatility: None,
        audience: None,
    };
    sources::create(lore, &Actor::System, new).await.unwrap().id
}

#[tokio::test]
async fn a_sitemap_sync_indexes_exactly_the_pages_and_re_syncs_only_what_changed() {
    let site = Site::start(PAGES, Duration::ZERO).await;
    let (lore, _dir) = open().await;
    let source = website(&lore, serde_json::json!({"start_url": format!("{}/docs/", site.base_url)})).await;

    let first = run(&lore, Some(&source), false).await;
    assert_eq!(first.status, "succeeded", "{:?}", first.message);
    assert_eq!(indexed_uris(&lore, &source).await, site.expected_sitemap_uris());
    let p = progress(&first);
    assert_eq!(p.failed, 0, "{:?}", first.errors);
    assert!(p.duplicates >= 2, "the redirect, the copy and the print page are duplicates: {p:?}");
    assert!(p.skipped >= 2, "robots.txt's /private/ and the external URL are skipped: {p:?}");
    let all_chunks = lore.chunks().await.unwrap().count(None).await.unwrap();
    // The pages reach the chunk store a batch to a commit, not one each:
    // every commit of a large store joins against all of its rows.
    let table = engine::shadow::active_table(&lore.db).await.unwrap();
    let commits = engine::index::lance::LanceChunkStore::open_table(&lore.settings.vectors(), &table, 384)
        .await
        .unwrap()
        .version()
        .await
        .unwrap();
    assert!(commits < (PAGES / 3) as u64, "{commits} commits of the chunk store for {PAGES} pages");

    // The boilerplate (navigation, header, footer) is not in any chunk.
    let found =
        search::search(&lore, "Guide number 12 explains", &RetrievalSettings::default(), Reach::Enabled)
            .await
            .unwrap();
    assert_eq!(
        found.results[0].chunk.url.as_deref(),
        Some(format!("{}/docs/page-12", site.base_url).as_str())
    );
    assert!(found
        .results
        .iter()
        .all(|r| !r.chunk.text.contains("Copyright Acme") && !r.chunk.text.contains("Getting started")));
    assert_eq!(found.results[0].chunk.title, "Guide 12 · Acme Docs");

    // Nothing changed: nothing is embedded, and the pages are not even downloaded again.
    let fetches = site.page_fetches();
    let second = run(&lore, Some(&source), false).await;
    let p = progress(&second);
    assert_eq!((p.embedded, p.chunked, p.removed), (0, 0, 0), "{p:?}");
    assert_eq!(p.unchanged as usize, PAGES);
    assert!(site.page_fetches() - fetches <= 3, "lastmod and ETags spare the downloads");
    assert_eq!(lore.chunks().await.unwrap().count(None).await.unwrap(), all_chunks);

    // One page changes: only that page is re-embedded.
    site.change_page(
        4,
        "Guide number 4 now explains migrating from the legacy importer to the streaming importer.",
    );
    let third = run(&lore, Some(&source), false).await;
    let p = progress(&third);
    assert_eq!(p.unchanged as usize, PAGES - 1, "{p:?}");
    assert!(p.embedded > 0);
    let found = search::search(
        &lore,
        "migrating from the legacy importer",
        &RetrievalSettings::default(),
        Reach::Enabled,
    )
    .await
    .unwrap();
    assert_eq!(
        found.results[0].chunk.url.as_deref(),
        Some(format!("{}/docs/page-4", site.base_url).as_str())
    );
    assert!(!found.results.iter().any(|r| r.chunk.text.contains(&page_text(4))), "the old text is replaced");

    let listed = sources::get(&lore, &source).await.unwrap();
    assert_eq!((listed.status, listed.document_count as usize), (SourceStatus::Ready, PAGES));
    assert!(sources::is_fresh(&listed, chrono::Utc::now()).unwrap());
    assert!(listed.next_sync_at.is_some(), "a website is re-synced by its volatility");
}

#[tokio::test]
async fn a_crawl_follows_links_within_scope_depth_and_patterns() {
    let site = Site::start(PAGES, Duration::ZERO).await;
    let (lore, _dir) = open().await;
    let source = website(
        &lore,
        serde_json::json!({"start_url": format!("{}/docs/", site.base_url), "discovery": "crawl", "max_depth": 2}),
    )
    .await;
    let first = run(&lore, Some(&source), false).await;
    assert_eq!(first.status, "succeeded", "{:?}", first.message);
    assert_eq!(indexed_uris(&lore, &source).await, site.expected_crawl_uris());
    let second = run(&lore, Some(&source), false).await;
    let p = progress(&second);
    assert_eq!((p.embedded, p.unchanged as usize), (0, PAGES + 1), "{p:?}");

    // Patterns and page limits narrow the crawl.
    let narrow = website(
        &lore,
        serde_json::json!({
            "start_url": format!("{}/docs/", site.base_url),
            "discovery": "crawl",
            "exclude": ["/docs/page-1*"],
            "max_pages": 10
        }),
    )
    .await;
    run(&lore, Some(&narrow), false).await;
    let uris = indexed_uris(&lore, &narrow).await;
    assert!(uris.len() <= 10, "{uris:?}");
    assert!(uris.iter().all(|u| !u.contains("/docs/page-1")), "{uris:?}");
}

#[tokio::test]
async fn private_addresses_are_refused_unless_allowed() {
    let site = Site::start(3, Duration::ZERO).await;
    let (lore, _dir) = open_with(|s| s.ingest.allow_private_addresses = false).await;
    let new = NewSource {
        name: "Local".into(),
        kind: "website".into(),
        config: Some(serde_json::json!({"start_url": format!("{}/docs/", site.base_url)})),
        volatility: None,
        audience: None,
    };
    let err = sources::create(&lore, &Actor::System, new).await.unwrap_err();
    assert!(
        matches!(err, Error::Ingest(IngestError::PrivateAddress(ref why)) if why.contains("127.0.0.1") && why.contains("allow_private_addresses")),
        "{err:?}"
    );
    assert_eq!(site.requests(), 0, "nothing was fetched");

    let page_bank = NewSource { name: "Bank".into(), kind: "page_bank".into(), ..NewSource::default() };
    assert!(matches!(
        sources::create(&lore, &Actor::System, page_bank).await,
        Err(Error::Ingest(IngestError::KindUnavailable(_)))
    ));
}

#[tokio::test]
async fn a_stored_configuration_that_cannot_be_read_is_an_error_naming_the_source() {
    let site = Site::start(1, Duration::ZERO).await;
    let (lore, _dir) = open().await;
    let config = serde_json::json!({"start_url": format!("{}/docs/", site.base_url)});
    let healthy = website(&lore, config.clone()).await;
    let broken = NewSource {
        name: "Broken".into(),
        kind: "website".into(),
        config: Some(config),
        volatility: None,
        audience: None,
    };
    let source = sources::create(&lore, &Actor::System, broken).await.unwrap().id;
    <entity::source::Entity as sea_orm::EntityTrait>::update_many()
        .col_expr(
            entity::source::Column::Config,
            sea_orm::sea_query::Expr::value(serde_json::json!({"start_url": 5})),
        )
        .filter(sea_orm::ColumnTrait::eq(&entity::source::Column::Id, source.as_str()))
        .exec(&lore.db)
        .await
        .unwrap();

    let err = sources::get(&lore, &source).await.unwrap_err().to_string();
    assert!(err.contains(&source) && err.contains("configuration cannot be read"), "{err}");
    let listed = engine::ingest::lifecycle::overviews(&lore).await;
    assert!(listed.is_err(), "the list fails too, rather than showing an empty configuration: {listed:?}");

    // A full reindex syncs the other source and reports this one, on the run
    // and on the source's row.
    let job = run(&lore, None, true).await;
    assert_eq!(job.status, "failed");
    assert!(job.message.as_deref().is_some_and(|m| m.contains("Broken")), "{:?}", job.message);
    assert!(!indexed_uris(&lore, &healthy).await.is_empty(), "the readable source was synced");
    let row = <entity::source::Entity as sea_orm::EntityTrait>::find_by_id(source.clone())
        .one(&lore.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.status, "failed");
    assert!(row.last_error.is_some_and(|e| e.contains("configuration cannot be read")));

    // It can still be removed.
    sources::delete(&lore, &Actor::System, &source).await.unwrap();
    assert_eq!(sources::list(&lore).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_failed_re_sync_keeps_the_earlier_content() {
    let site = Site::start(3, Duration::ZERO).await;
    let (lore, _dir) = open().await;
    let source = website(&lore, serde_json::json!({"start_url": format!("{}/docs/", site.base_url)})).await;
    run(&lore, Some(&source), false).await;
    let chunks = lore.chunks().await.unwrap().count(None).await.unwrap();

    // Point the source at a port where nothing listens.
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_url = format!("http://{}/docs/", dead.local_addr().unwrap());
    drop(dead);
    <entity::source::Entity as sea_orm::EntityTrait>::update_many()
        .col_expr(
            entity::source::Column::Config,
            sea_orm::sea_query::Expr::value(serde_json::json!({"start_url": dead_url})),
        )
        .filter(sea_orm::ColumnTrait::eq(&entity::source::Column::Id, source.as_str()))
        .exec(&lore.db)
        .await
        .unwrap();

    let failed = run(&lore, Some(&source), false).await;
    assert_eq!(failed.status, "failed");
    assert_eq!(lore.chunks().await.unwrap().count(None).await.unwrap(), chunks, "nothing was lost");
    let listed = sources::get(&lore, &source).await.unwrap();
    assert_eq!(listed.status, SourceStatus::Failed);
    assert!(listed.last_error.is_some());
    assert_eq!(indexed_uris(&lore, &source).await.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_deleted_while_a_run_embeds_its_page_leaves_no_chunk_behind() {
    let site = Site::start(3, Duration::ZERO).await;
    // A short lease: the heartbeat reports progress every third of a second.
    let (lore, _dir) = open_with(|s| s.ingest.job_lease_seconds = 1).await;
    let source = website(&lore, serde_json::json!({"start_url": format!("{}/docs/", site.base_url)})).await;
    assert_eq!(run(&lore, Some(&source), false).await.status, "succeeded");

    // One page grows long enough that embedding it takes seconds.
    let long: String = (0..600)
        .map(|i| format!("Appendix line {i} describes how option {} of the importer behaves. ", i % 97))
        .collect();
    site.change_page(1, &long);
    let job = jobs::enqueue(&lore, Some(&source), false, "test").await.unwrap();
    let running = tokio::spawn({
        let lore = lore.clone();
        let id = job.id.clone();
        async move { run_queued(&lore, &id).await }
    });
    // The page is chunked, so it is being embedded: delete the source now.
    let deadline = Instant::now() + Duration::from_secs(120);
    while progress(&jobs::get(&lore, &job.id).await.unwrap()).chunked == 0 {
        assert!(!running.is_finished(), "the run ended before the source could be deleted");
        assert!(Instant::now() < deadline, "the page was never chunked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sources::delete(&lore, &Actor::System, &source).await.unwrap();
    running.await.unwrap();

    // The page the run wrote after the deletion went with the source.
    assert_eq!(lore.chunks().await.unwrap().count(None).await.unwrap(), 0);
}

#[tokio::test]
async fn a_crawled_page_that_passes_a_limit_fails_alone_and_the_rest_of_the_site_indexes() {
    use axum::response::IntoResponse;
    let deep = format!("<html><body>{}word{}</body></html>", "<div>".repeat(10_000), "</div>".repeat(10_000));
    let bomb = support::pdf_bomb(256);
    let app = axum::Router::new()
        .route(
            "/docs/",
            axum::routing::get(|| async {
                axum::response::Html(
                    r#"<h1>Manual</h1><p>The index of the manual.</p><a href="/docs/deep">Deep</a> <a href="/docs/bomb.pdf">Bomb</a> <a href="/docs/ok">Fine</a>"#,
                )
            }),
        )
        .route(
            "/docs/ok",
            axum::routing::get(|| async {
                axum::response::Html("<h1>Backups</h1><p>Snapshots are kept for fourteen days.</p>")
            }),
        )
        .route("/docs/deep", axum::routing::get(move || async move { axum::response::Html(deep) }))
        .route(
            "/docs/bomb.pdf",
            axum::routing::get(move || async move {
                ([(axum::http::header::CONTENT_TYPE, "application/pdf")], bomb).into_response()
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let (lore, _dir) = open().await;
    let source =
        website(&lore, serde_json::json!({"start_url": format!("{base}/docs/"), "discovery": "crawl"})).await;
    let job = run(&lore, Some(&source), false).await;
    assert_eq!(job.status, "succeeded", "{:?}", job.message);
    assert_eq!(indexed_uris(&lore, &source).await, [format!("{base}/docs/"), format!("{base}/docs/ok")]);
    let docs = sources::documents(&lore, &source).await.unwrap();
    for (page, reason) in [("deep", "512 deep"), ("bomb.pdf", "expand to more than")] {
        let doc = docs.iter().find(|d| d.uri.ends_with(page)).unwrap();
        assert_eq!(doc.status, DocumentStatus::Failed);
        assert!(doc.error.as_deref().unwrap().contains(reason), "{page}: {:?}", doc.error);
    }
}
