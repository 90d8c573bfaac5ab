//! The embedding role bound to a provider target (llama.cpp's llama-server
//! serving mean-pooled SmolLM2 embeddings): retrieval fails closed until a
//! full reindex re-embeds the corpus with it, in the target's dimensions;
//! unbinding returns to the on-node model, and fails closed again.

use reqwest::multipart::{Form, Part};
use serde_json::{json, Value};

use super::helpers::{finished, spawn_app_with, Options, TestApp};
use super::llama::LlamaServer;

async fn search(app: &TestApp) -> reqwest::Response {
    app.post_json("/admin/search", json!({"query": "restore a snapshot", "top_k": 3})).await
}

async fn bind_embedding(app: &TestApp, target: Option<&str>) -> reqwest::Response {
    app.client
        .put(app.url("/admin/roles/embedding"))
        .json(&json!({"target_id": target}))
        .send()
        .await
        .unwrap()
}

const GUIDE: &str = "# Restores\n\n## From a snapshot\n\nStop Lore, copy the snapshot over the data directory, and start it again.\n";

#[tokio::test]
async fn binding_the_embedding_role_to_a_provider_reindexes_with_it() {
    let llama = LlamaServer::start_embeddings().await;
    let app = spawn_app_with(Options {
        configure: Some(|s| s.ingest.allow_private_addresses = true),
        ..Options::default()
    })
    .await;
    app.sign_in_with_bootstrap_link().await;

    // A corpus embedded on the node (all-MiniLM-L6-v2, 384 dimensions).
    let source: Value = app
        .post_json("/admin/sources/", json!({"name": "Runbook", "kind": "upload"}))
        .await
        .json()
        .await
        .unwrap();
    let form = Form::new().part("file", Part::bytes(GUIDE.as_bytes().to_vec()).file_name("restores.md"));
    let receipts: Value = app
        .client
        .post(app.url(&format!("/admin/sources/{}/files", source["id"].as_str().unwrap())))
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let first = finished(&app, receipts[0]["job"]["id"].as_str().unwrap()).await;
    assert_eq!(first["status"], "succeeded", "{first}");
    assert_eq!(search(&app).await.status(), 200);
    let local = engine::corpus::stamped(&app.lore.db).await.unwrap().unwrap();
    assert_eq!(
        (local.embedding_model.as_str(), local.dimensions),
        (app.lore.settings.models.embedding.as_str(), 384)
    );

    // An embedding target on the provider, probed with a real embedding call.
    let account: Value = app
        .post_json("/admin/providers/accounts", json!({"kind": "llama_cpp", "endpoint": llama.endpoint}))
        .await
        .json()
        .await
        .unwrap();
    let target: Value = app
        .post_json(
            "/admin/targets",
            json!({"account_id": account["id"], "capability": "embedding", "model": "smollm2-135m"}),
        )
        .await
        .json()
        .await
        .unwrap();
    let id = target["id"].as_str().unwrap().to_owned();
    assert_eq!(bind_embedding(&app, Some(&id)).await.status(), 422, "an unprobed target is refused");
    let probed: Value =
        app.post_json(&format!("/admin/targets/{id}/probe"), json!({})).await.json().await.unwrap();
    assert_eq!(probed["state"], "ready", "{probed}");
    let bound = bind_embedding(&app, Some(&id)).await;
    assert_eq!(bound.status(), 200, "{:?}", bound.text().await);

    // The corpus was made by another model: retrieval refuses until a reindex.
    let refused = search(&app).await;
    assert_eq!(refused.status(), 503);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "retrieval_failing_closed");

    let reindex: Value = app.post_json("/admin/reindex", json!({})).await.json().await.unwrap();
    let ended = finished(&app, reindex["id"].as_str().unwrap()).await;
    assert_eq!(ended["status"], "succeeded", "{ended}");
    let remote = engine::corpus::stamped(&app.lore.db).await.unwrap().unwrap();
    assert!(remote.embedding_model.starts_with("smollm2-135m"), "{remote:?}");
    assert_eq!(remote.dimensions, 576, "SmolLM2-135M's hidden size");
    let found: Value = search(&app).await.json().await.unwrap();
    assert_eq!(found["results"][0]["title"], "Restores", "{found}");

    // Unbound, the on-node model is configured again and the stamp is not its.
    assert_eq!(bind_embedding(&app, None).await.status(), 200);
    assert_eq!(search(&app).await.status(), 503);
}
