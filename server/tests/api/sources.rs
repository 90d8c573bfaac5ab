//! The admin API behind the Sources screen, over HTTP: uploads and their
//! errors, search, the chunking acknowledgement and the fail-closed rule.

use reqwest::multipart::{Form, Part};
use serde_json::{json, Value};

use crate::helpers::{finished, git, spawn_app_with, Options, TestApp};

async fn admin_app() -> TestApp {
    let app = spawn_app_with(Options {
        configure: Some(|s| {
            s.ingest.upload_max_bytes = 64 * 1024;
            s.ingest.allow_private_addresses = true;
        }),
        ..Options::default()
    })
    .await;
    app.sign_in_with_bootstrap_link().await;
    app
}

async fn upload(app: &TestApp, source: &str, name: &str, bytes: Vec<u8>) -> reqwest::Response {
    let form = Form::new().part("file", Part::bytes(bytes).file_name(name.to_owned()));
    app.client.post(app.url(&format!("/admin/sources/{source}/files"))).multipart(form).send().await.unwrap()
}

async fn error_code(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    (status, body["error"]["code"].as_str().unwrap_or_default().to_owned())
}

const GUIDE: &str = "# Restores\n\n## From a snapshot\n\nStop Lore, copy the snapshot over the data directory, and start it again.\n";

/// `GET /admin/index`: the vector index as the Sources screen shows it,
/// with a training under way on another replica; for admins only.
#[tokio::test]
async fn the_vector_index_and_a_training_under_way_are_shown_to_admins() {
    let app = admin_app().await;
    let created: Value = app
        .post_json("/admin/sources/", json!({"name": "Runbook", "kind": "upload"}))
        .await
        .json()
        .await
        .unwrap();
    let received: Value =
        upload(&app, created["id"].as_str().unwrap(), "restores.md", GUIDE.as_bytes().to_vec())
            .await
            .json()
            .await
            .unwrap();
    finished(&app, received[0]["job"]["id"].as_str().unwrap()).await;

    let index: Value = app.get("/admin/index").await.json().await.unwrap();
    assert_eq!(index["chunks"], 1, "{index}");
    assert!(index["indexed"].is_null(), "below the threshold every vector is compared: {index}");
    assert!(index["training"].is_null(), "{index}");

    let training = engine::upkeep::Training {
        table: engine::shadow::active_table(&app.lore.db).await.unwrap(),
        rows: 12_000,
        owner: "replica-2".into(),
        started_at: chrono::Utc::now(),
        failed: None,
    };
    let value = serde_json::to_value(&training).unwrap();
    engine::store::put_setting(&app.lore.db, engine::upkeep::TRAINING, value, "replica-2").await.unwrap();
    let index: Value = app.get("/admin/index").await.json().await.unwrap();
    assert_eq!(index["training"]["chunks"], 12_000, "{index}");
    assert!(index["training"]["failed"].is_null(), "{index}");

    let signed_out = reqwest::get(app.url("/admin/index")).await.unwrap();
    assert_eq!(signed_out.status(), 401);
}

#[tokio::test]
async fn uploads_are_indexed_by_the_worker_and_bad_files_get_stable_codes() {
    let app = admin_app().await;
    let created = app.post_json("/admin/sources/", json!({"name": "Runbook", "kind": "upload"})).await;
    assert_eq!(created.status(), 201);
    let source: Value = created.json().await.unwrap();
    let id = source["id"].as_str().unwrap().to_owned();
    assert_eq!(source["status"], "empty");

    let received = upload(&app, &id, "restores.md", GUIDE.as_bytes().to_vec()).await;
    assert_eq!(received.status(), 202);
    let receipts: Value = received.json().await.unwrap();
    let job = receipts[0]["job"]["id"].as_str().unwrap().to_owned();
    let ended = finished(&app, &job).await;
    assert_eq!(ended["status"], "succeeded", "{ended}");
    assert_eq!(ended["progress"]["done"], 1);

    let found: Value = app
        .post_json("/admin/search", json!({"query": "how do I restore a snapshot", "top_k": 3}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(found["results"][0]["title"], "Restores", "{found}");
    assert!(found["results"][0]["vector_score"].as_f64().unwrap() > 0.3);

    assert_eq!(
        error_code(upload(&app, &id, "big.txt", vec![b'x'; 70 * 1024]).await).await,
        (413, "file_too_large".into())
    );
    assert_eq!(
        error_code(upload(&app, &id, "scan.pdf", b"%PDF-1.7\nthis is not a PDF body".to_vec()).await).await,
        (422, "corrupt_file".into())
    );
    assert_eq!(
        error_code(upload(&app, &id, "logo.png", b"\x89PNG\r\n\x1a\n\0\0binary".to_vec()).await).await,
        (415, "unsupported_file_type".into())
    );
    // 10,000 nested <div> (55 KB) overflowed a worker's stack and ended the
    // whole server; now the page is refused by the nesting limit.
    let deep = format!("{}x{}", "<div>".repeat(10_000), "</div>".repeat(1_000));
    assert_eq!(
        error_code(upload(&app, &id, "deep.html", deep.into_bytes()).await).await,
        (422, "document_over_limit".into())
    );
    assert_eq!(
        error_code(upload(&app, "no-such-source", "a.md", GUIDE.into()).await).await,
        (404, "source_not_found".into())
    );
    // Earlier content is intact after every refusal.
    let sources: Value = app.get("/admin/sources/").await.json().await.unwrap();
    assert_eq!(sources[0]["document_count"], 1, "{sources}");
    let docs: Value = app.get(&format!("/admin/sources/{id}/documents")).await.json().await.unwrap();
    assert_eq!(docs.as_array().unwrap().len(), 1);

    for (body, status, code) in [
        (json!({"name": "Bank", "kind": "page_bank"}), 422, "source_kind_unavailable"),
        (json!({"name": "", "kind": "upload"}), 422, "invalid_source"),
        (
            json!({"name": "Web", "kind": "website", "config": {"start_url": "ftp://x"}}),
            422,
            "invalid_source",
        ),
        (
            json!({"name": "Web", "kind": "website", "config": {"start_url": "https://a.test", "bogus": 1}}),
            422,
            "invalid_source",
        ),
    ] {
        assert_eq!(
            error_code(app.post_json("/admin/sources/", body.clone()).await).await,
            (status, code.into()),
            "{body}"
        );
    }
    let unknown_field =
        app.post_json("/admin/sources/", json!({"name": "x", "kind": "upload", "colour": "red"})).await;
    assert!(unknown_field.status().is_client_error());
    let empty_query = app.post_json("/admin/search", json!({"query": "  "})).await;
    assert_eq!(error_code(empty_query).await, (422, "invalid_input".into()));
}

#[tokio::test]
async fn chunking_changes_need_the_acknowledgement_and_a_foreign_fingerprint_fails_closed() {
    let app = admin_app().await;
    let source: Value = app
        .post_json("/admin/sources/", json!({"name": "Runbook", "kind": "upload"}))
        .await
        .json()
        .await
        .unwrap();
    let id = source["id"].as_str().unwrap();
    let receipts: Value = upload(&app, id, "restores.md", GUIDE.into()).await.json().await.unwrap();
    finished(&app, receipts[0]["job"]["id"].as_str().unwrap()).await;

    let change = json!({"max_tokens": 96, "overlap_tokens": 16});
    let refused = app.client.put(app.url("/admin/tuning/chunking")).json(&change).send().await.unwrap();
    assert_eq!(error_code(refused).await, (409, "reindex_acknowledgement_required".into()));
    assert_eq!(engine::tuning::stored_chunking(&app.lore).await.unwrap(), None, "nothing persisted");

    let acknowledged = json!({"max_tokens": 96, "overlap_tokens": 16, "acknowledge_reindex": true});
    let accepted: Value = app
        .client
        .put(app.url("/admin/tuning/chunking"))
        .json(&acknowledged)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(accepted["changed"], true);
    let reindex = finished(&app, accepted["reindex"]["id"].as_str().unwrap()).await;
    assert_eq!(reindex["status"], "succeeded", "{reindex}");

    // The corpus as if another embedding model had made it.
    let mut stamp = engine::fingerprint::stamped(&app.lore.db).await.unwrap().unwrap();
    stamp.embedding_model = "BAAI/bge-small-en-v1.5".into();
    engine::fingerprint::set(&app.lore.db, Some(&stamp)).await.unwrap();
    let failing = app.post_json("/admin/search", json!({"query": "restore a snapshot"})).await;
    assert_eq!(error_code(failing).await, (503, "retrieval_failing_closed".into()));
    let state: Value = app.get("/admin/setup-state/").await.json().await.unwrap();
    let indexing =
        state["checks"].as_array().unwrap().iter().find(|c| c["name"] == "indexing").unwrap().clone();
    assert_eq!(indexing["status"], "failing", "{indexing}");
}

#[tokio::test]
async fn the_sources_api_is_for_admins_only() {
    let app = spawn_app_with(Options::default()).await;
    let response = app.get("/admin/sources/").await;
    assert_eq!(response.status(), 401);
    let response = app.post_json("/admin/sources/", json!({"name": "x", "kind": "upload"})).await;
    assert_eq!(response.status(), 401);
}

/// The first passage `/admin/search` finds for `query`: its title and text.
async fn first_hit(app: &TestApp, query: &str) -> (String, String) {
    let found: Value =
        app.post_json("/admin/search", json!({"query": query, "top_k": 3})).await.json().await.unwrap();
    let hit = &found["results"][0];
    (
        hit["title"].as_str().unwrap_or_default().to_owned(),
        hit["text"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test]
async fn a_table_source_answers_a_write_through_the_operations_api_within_seconds() {
    let app = admin_app().await;
    let caller = &app;
    let operation = |body: Value| async move { caller.post_json("/operation", body).await };
    let made =
        operation(json!({"operation": "create_table", "table": "lighthouse", "primary_key": "id"})).await;
    assert_eq!(made.status(), 200);
    let records: Vec<Value> = (0..20)
        .map(|id| json!({"id": id, "name": format!("Light {id}"), "keeper": format!("Keeper number {id} trims the wick at dusk.")}))
        .collect();
    assert_eq!(
        operation(json!({"operation": "insert", "table": "lighthouse", "records": records})).await.status(),
        200
    );

    let refused = app
        .post_json("/admin/sources/", json!({"name": "Lights", "kind": "table", "config": {"table": "lighthouse", "title": "name", "text": ["warden"]}}))
        .await;
    assert_eq!(error_code(refused).await, (422, "invalid_source".into()));
    let listed: Value = app.get("/admin/sources/").await.json().await.unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "a refused configuration stores nothing: {listed}");

    let created = app
        .post_json("/admin/sources/", json!({"name": "Lights", "kind": "table", "config": {"table": "lighthouse", "title": "name", "text": ["keeper"]}}))
        .await;
    assert_eq!(created.status(), 201);
    let id = created.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let source: Value = app.get(&format!("/admin/sources/{id}")).await.json().await.unwrap();
        if source["status"] == "ready" {
            assert_eq!(source["document_count"], 20, "{source}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the first sync did not finish: {source}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // The worker of `lore serve` picks the write up on its own.
    let written = std::time::Instant::now();
    let updated = operation(json!({"operation": "update", "table": "lighthouse", "records": [
        {"id": 7, "keeper": "Keeper Ingrid polishes the great Fresnel lens every Sunday."}
    ]}))
    .await;
    assert_eq!(updated.status(), 200);
    loop {
        let (title, text) = first_hit(&app, "Who polishes the Fresnel lens on Sundays?").await;
        if text.contains("Ingrid") {
            assert_eq!(title, "Light 7");
            break;
        }
        assert!(
            written.elapsed() < std::time::Duration::from_secs(5),
            "the update was not retrievable within 5 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// A repository on disk with one commit of `GUIDE`, made with the real git.
fn repository() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("restores.md"), GUIDE).unwrap();
    for args in
        [&["init", "--quiet", "-b", "main"][..], &["add", "--all"], &["commit", "--quiet", "-m", "Docs"]]
    {
        git(repo.path(), args);
    }
    repo
}

#[tokio::test]
async fn a_forge_s_webhook_queues_a_git_source_s_sync_only_with_the_secret() {
    use hmac::Mac as _;
    // This test's process alone reads it (one process per test).
    std::env::set_var("LORE_TEST_DOCS_WEBHOOK", "hook-s3cret");
    let app = admin_app().await;
    let repo = repository();
    let config =
        json!({"url": repo.path().display().to_string(), "webhook_secret_env": "LORE_TEST_DOCS_WEBHOOK"});
    let created = app
        .post_json("/admin/sources/", json!({"name": "Runbook repo", "kind": "git", "config": config}))
        .await;
    assert_eq!(created.status(), 201);
    let source: Value = created.json().await.unwrap();
    let id = source["id"].as_str().unwrap().to_owned();
    let first = source["latest_job"]["id"].as_str().unwrap().to_owned();
    assert_eq!(finished(&app, &first).await["status"], "succeeded");
    let latest_job = || async {
        let source: Value = app.get(&format!("/admin/sources/{id}")).await.json().await.unwrap();
        source["latest_job"]["id"].as_str().unwrap().to_owned()
    };

    // A forge has no session: only the secret lets its call through.
    let forge = reqwest::Client::new();
    let hook = |source: &str| forge.post(app.url(&format!("/admin/sources/{source}/sync")));
    let body = r#"{"ref":"refs/heads/main"}"#;
    let signed = |secret: &str| {
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(body.as_bytes());
        let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256={hex}")
    };
    for refused in [
        hook(&id).header("x-hub-signature-256", signed("wrong")).body(body),
        hook(&id).header("x-gitlab-token", "hook-s3cre").body(body),
        hook("no-such-source").header("x-gitlab-token", "hook-s3cret").body(body),
    ] {
        let (status, code) = error_code(refused.send().await.unwrap()).await;
        assert_eq!((status, code.as_str()), (401, "webhook_refused"));
    }
    let (status, code) = error_code(hook(&id).body(body).send().await.unwrap()).await;
    assert_eq!((status, code.as_str()), (401, "unauthenticated"));
    assert_eq!(latest_job().await, first, "a refused call queues nothing");

    // Signed as GitHub signs, then with GitLab's token: each queues a sync.
    for accepted in [
        hook(&id).header("x-hub-signature-256", signed("hook-s3cret")).body(body),
        hook(&id).header("x-gitlab-token", "hook-s3cret").body(body),
    ] {
        let response = accepted.send().await.unwrap();
        assert_eq!(response.status(), 202);
        let job: Value = response.json().await.unwrap();
        assert_eq!(job["trigger"], "webhook");
        let ended = finished(&app, job["id"].as_str().unwrap()).await;
        assert_eq!(ended["status"], "succeeded", "{ended}");
        assert_eq!(latest_job().await, job["id"].as_str().unwrap());
    }
}
