//! Advanced tuning over HTTP: effective values say whether they are stored
//! or the default; a blank (absent) field keeps its value; retrieval and
//! cache changes become a new profile version; a chunking change of an
//! indexed corpus without the acknowledgement persists nothing, not even the
//! other fields of the same request; source volatility is set per source.

use reqwest::multipart::{Form, Part};
use serde_json::{json, Value};

use crate::helpers::{finished, spawn_app_with, Options, TestApp};

async fn put(app: &TestApp, path: &str, body: Value) -> reqwest::Response {
    app.client.put(app.url(path)).json(&body).send().await.unwrap()
}

async fn tuning(app: &TestApp) -> Value {
    app.get("/admin/tuning").await.json().await.unwrap()
}

#[tokio::test]
async fn blank_keeps_placeholders_show_effective_values_and_unacknowledged_chunking_persists_nothing() {
    let app = spawn_app_with(Options::default()).await;
    app.sign_in_with_bootstrap_link().await;

    // Defaults before anything is set.
    let fresh = tuning(&app).await;
    assert_eq!(fresh["chunk_size"], json!({"value": 200, "stored": false}));
    assert_eq!(fresh["top_k"]["stored"], false);
    assert_eq!(
        fresh["embedding_model"],
        json!({"value": "sentence-transformers/all-MiniLM-L6-v2", "stored": false})
    );
    assert_eq!(fresh["profile_version"], Value::Null);

    // Retrieval values live in the profile, which the first index creates.
    let early = put(&app, "/admin/tuning", json!({"top_k": 8})).await;
    assert_eq!(early.status(), 422);

    // Index one upload: the profile exists and the corpus is indexed.
    let source: Value = app
        .post_json("/admin/sources/", json!({"name": "Runbook", "kind": "upload"}))
        .await
        .json()
        .await
        .unwrap();
    let id = source["id"].as_str().unwrap().to_owned();
    let form = Form::new().part(
        "file",
        Part::bytes(b"# Restores\n\nStop Lore, copy the snapshot back, start it again.\n".to_vec())
            .file_name("restores.md"),
    );
    let receipts: Value = app
        .client
        .post(app.url(&format!("/admin/sources/{id}/files")))
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    finished(&app, receipts[0]["job"]["id"].as_str().unwrap()).await;
    let before = tuning(&app).await;
    assert_eq!(before["profile_version"], 1);

    // Only the fields given change; the rest keep their values.
    let applied: Value = put(&app, "/admin/tuning", json!({"top_k": 8, "cache_min_similarity": 0.95}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(applied["profile_version"], 2, "{applied:#}");
    let after = &applied["tuning"];
    assert_eq!(after["top_k"], json!({"value": 8, "stored": true}));
    assert_eq!(after["cache_min_similarity"]["stored"], true);
    for unchanged in [
        "score_cutoff",
        "vector_weight",
        "text_weight",
        "cache_enabled",
        "cache_max_age_seconds",
        "chunk_size",
    ] {
        assert_eq!(after[unchanged], before[unchanged], "{unchanged}");
    }
    let active = engine::profile::active(&app.lore).await.unwrap().unwrap();
    assert_eq!((active.version, active.snapshot.retrieval.top_k), (2, 8));

    // Nothing to change → no new version.
    let same: Value = put(&app, "/admin/tuning", json!({"top_k": 8})).await.json().await.unwrap();
    assert_eq!(same["profile_version"], Value::Null);

    // A chunking change without the acknowledgement: 409, and nothing of the
    // request is persisted, not even its retrieval value.
    let refused = put(&app, "/admin/tuning", json!({"chunk_size": 120, "top_k": 3})).await;
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "reindex_acknowledgement_required");
    let unchanged = tuning(&app).await;
    assert_eq!(unchanged["chunk_size"], json!({"value": 200, "stored": false}));
    assert_eq!(unchanged["top_k"]["value"], 8);
    assert_eq!(engine::profile::versions(&app.lore).await.unwrap().len(), 2);

    // With it, both persist and a full reindex runs.
    let acknowledged: Value =
        put(&app, "/admin/tuning", json!({"chunk_size": 120, "top_k": 3, "acknowledge_reindex": true}))
            .await
            .json()
            .await
            .unwrap();
    assert_eq!(acknowledged["tuning"]["chunk_size"], json!({"value": 120, "stored": true}));
    assert_eq!(acknowledged["tuning"]["top_k"]["value"], 3);
    let job = acknowledged["reindex_job"].as_str().unwrap();
    assert_eq!(finished(&app, job).await["status"], "succeeded");

    // Bad values are refused with a code, and keep everything.
    for bad in [
        json!({"top_k": 0}),
        json!({"score_cutoff": 2.0}),
        json!({"chunk_size": 5}),
        json!({"colour": "red"}),
        // 1e39 is infinity as an f32: it was stored as null, and from then on
        // every answer, the tuning screen and readiness answered 500.
        json!({"vector_weight": 1e39}),
        json!({"text_weight": 1e39}),
        // Finite, but the fused score overflowed and retrieval found nothing.
        json!({"vector_weight": 3e38}),
    ] {
        let versions = engine::profile::versions(&app.lore).await.unwrap().len();
        let response = put(&app, "/admin/tuning", bad.clone()).await;
        assert_eq!(response.status(), 422, "{bad}");
        assert_eq!(
            engine::profile::versions(&app.lore).await.unwrap().len(),
            versions,
            "{bad} stored a version"
        );
    }
    assert_eq!(tuning(&app).await["top_k"]["value"], 3);
    assert_eq!(app.get("/admin/setup-state/").await.status(), 200);
    assert_eq!(app.get("/admin/profile").await.status(), 200);

    // Volatility per source.
    let set: Value = put(&app, &format!("/admin/sources/{id}/volatility"), json!({"volatility": "high"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(set["volatility"], "high");
    let wrong = put(&app, &format!("/admin/sources/{id}/volatility"), json!({"volatility": "hourly"})).await;
    assert_eq!(wrong.status(), 422);
}
