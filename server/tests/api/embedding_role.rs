//! The embedding role bound to a provider target (llama.cpp's llama-server
//! serving mean-pooled SmolLM2 embeddings). Without golden questions,
//! retrieval fails closed until a full reindex re-embeds the corpus with
//! it, in the target's dimensions, and unbinding returns to the on-node
//! model, failing closed again. With golden questions, binding and
//! unbinding are judged on a shadow index first and never fail closed.

use reqwest::multipart::{Form, Part};
use sea_orm::TransactionTrait;
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

/// An upload source, Runbook, with `text` as `restores.md`, indexed by the
/// worker: the source's id.
async fn index_runbook(app: &TestApp, text: &str) -> String {
    let source: Value = app
        .post_json("/admin/sources/", json!({"name": "Runbook", "kind": "upload"}))
        .await
        .json()
        .await
        .unwrap();
    let form = Form::new().part("file", Part::bytes(text.as_bytes().to_vec()).file_name("restores.md"));
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
    let indexed = finished(app, receipts[0]["job"]["id"].as_str().unwrap()).await;
    assert_eq!(indexed["status"], "succeeded", "{indexed}");
    source["id"].as_str().unwrap().to_owned()
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
    index_runbook(&app, GUIDE).await;
    assert_eq!(search(&app).await.status(), 200);
    let local = engine::fingerprint::stamped(&app.lore.db).await.unwrap().unwrap();
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
    let remote = engine::fingerprint::stamped(&app.lore.db).await.unwrap().unwrap();
    assert!(remote.embedding_model.starts_with("smollm2-135m"), "{remote:?}");
    assert_eq!(remote.dimensions, 576, "SmolLM2-135M's hidden size");
    let found: Value = search(&app).await.json().await.unwrap();
    assert_eq!(found["results"][0]["title"], "Restores", "{found}");

    // Unbound, the on-node model is configured again and the stamp is not its.
    assert_eq!(bind_embedding(&app, None).await.status(), 200);
    assert_eq!(search(&app).await.status(), 503);
}

/// One section, one chunk: any embedding model retrieves the same passage
/// for the golden question, so the candidate answers as the active one does.
const RUNBOOK: &str = "# Restores\n\n## From a snapshot\n\nTo restore Lore from a snapshot, stop the service first. Copy the snapshot directory over the data directory, keeping its permissions, and start the service again. Lore reads the restored database and vectors at start, checks the corpus stamp, and answers from the restored index at once. A snapshot taken while Lore was running is consistent, because both the database and the vector store write atomically. Keep at least one snapshot a day, and test a restore on another machine every month so that you know the steps work before you need them.\n";

/// Waits for the full reindex a switch of the embedding model queued (the
/// newest), which must succeed.
async fn embedding_reindex_succeeds(app: &TestApp) {
    let reindex = engine::ingest::jobs::recent(&app.lore, None, 10)
        .await
        .unwrap()
        .into_iter()
        .find(|job| job.trigger == "embedding" && job.full)
        .expect("a full reindex was queued with the switch");
    assert_eq!(finished(app, &reindex.id).await["status"], "succeeded");
}

/// An embedding target on `endpoint`, probed (ready): its id.
async fn embedding_target(app: &TestApp, endpoint: &str, model: &str) -> String {
    let account: Value = app
        .post_json(
            "/admin/providers/accounts",
            json!({"kind": "llama_cpp", "endpoint": endpoint, "name": model}),
        )
        .await
        .json()
        .await
        .unwrap();
    let target: Value = app
        .post_json(
            "/admin/targets",
            json!({"account_id": account["id"], "capability": "embedding", "model": model}),
        )
        .await
        .json()
        .await
        .unwrap();
    let id = target["id"].as_str().unwrap().to_owned();
    let probed: Value =
        app.post_json(&format!("/admin/targets/{id}/probe"), json!({})).await.json().await.unwrap();
    assert_eq!(probed["state"], "ready", "{probed}");
    id
}

#[tokio::test]
async fn with_golden_questions_a_new_embedding_model_is_judged_on_a_shadow_index_and_never_fails_closed() {
    let generation = LlamaServer::start().await;
    let embeddings = LlamaServer::start_embeddings().await;
    let cramped = LlamaServer::start_embeddings_with_context(64).await;
    let app = spawn_app_with(Options::default()).await;
    app.sign_in_with_bootstrap_link().await;
    let runbook = index_runbook(&app, RUNBOOK).await;
    let added = app
        .post_json(
            "/admin/providers/quick-add",
            json!({"kind": "llama_cpp", "endpoint": generation.endpoint, "model": "smollm2-135m-instruct"}),
        )
        .await;
    assert_eq!(added.status(), 201);
    let golden =
        json!({"question": "How do I restore Lore from a snapshot?", "expected_facts": ["snapshot"]});
    assert_eq!(app.post_json("/admin/golden", golden).await.status(), 201);
    let lore = &app.lore;
    let local = engine::fingerprint::stamped(&lore.db).await.unwrap().unwrap();
    let first = engine::profile::active(lore).await.unwrap().unwrap().version;
    let versions = engine::profile::versions(lore).await.unwrap().len();
    let bound_embedding = || async {
        engine::providers::bindings(lore)
            .await
            .unwrap()
            .into_iter()
            .find(|b| b.role == engine::providers::Role::Embedding)
            .and_then(|b| b.target)
            .map(|t| t.id)
    };

    // A model that cannot embed a passage (its context holds a probe's
    // word, not a chunk) is refused while its shadow is built: the role,
    // the stamp, the active table and the versions are as they were, and
    // the corpus still answers.
    let cramped_id = embedding_target(&app, &cramped.endpoint, "smollm2-cramped").await;
    let refused = bind_embedding(&app, Some(&cramped_id)).await;
    assert_eq!(refused.status(), 422);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "target_not_ready", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("could not embed the corpus"), "{body}");
    assert_eq!(bound_embedding().await, None);
    assert_eq!(engine::fingerprint::stamped(&lore.db).await.unwrap().as_ref(), Some(&local));
    assert_eq!(engine::shadow::active_table(&lore.db).await.unwrap(), "chunks");
    assert_eq!(engine::profile::versions(lore).await.unwrap().len(), versions);
    assert_eq!(search(&app).await.status(), 200);

    // A model that embeds: its shadow is built and judged while the active
    // index serves. SmolLM2 answers the golden question from the same
    // single passage either way, but llama-server's prompt cache can change
    // its wording between the two runs, so the verdict may go either way.
    // Held, nothing has changed, and "Activate anyway" makes the switch;
    // passed, the switch is made at once. Either way it is a pointer move:
    // retrieval answers at once, in the new model's space.
    let smollm = embedding_target(&app, &embeddings.endpoint, "smollm2-135m").await;
    let bound = bind_embedding(&app, Some(&smollm)).await;
    assert_eq!(bound.status(), 200, "{:?}", bound.text().await);
    let bound: Value = bound.json().await.unwrap();
    let verdict = &bound["verdict"];
    assert_eq!(
        (verdict["role"].as_str(), verdict["model"].as_str()),
        (Some("embedding"), Some("smollm2-135m"))
    );
    let candidate = verdict["version"].as_i64().unwrap() as i32;
    let judged = engine::profile::version(lore, candidate).await.unwrap();
    let evals = judged.evals.clone().unwrap();
    assert_eq!(evals["gate"]["baseline_version"], first, "{evals:#}");
    assert!(evals["results"][0]["error"].is_null(), "the candidate answered from its shadow: {evals:#}");
    if verdict["bound"] == false {
        assert_eq!(evals["gate"]["passed"], false, "{evals:#}");
        assert_eq!(bound_embedding().await, None, "held: the role is unchanged");
        assert_eq!(engine::fingerprint::stamped(&lore.db).await.unwrap().as_ref(), Some(&local));
        assert_eq!(engine::shadow::active_table(&lore.db).await.unwrap(), "chunks");
        assert_eq!(engine::profile::active(lore).await.unwrap().unwrap().version, first);
        assert_eq!(search(&app).await.status(), 200);
        let anyway = app
            .post_json(&format!("/admin/profile/versions/{candidate}/restore"), json!({"anyway": true}))
            .await;
        assert_eq!(anyway.status(), 200, "{:?}", anyway.text().await);
    } else {
        assert_eq!(evals["gate"]["passed"], true, "{evals:#}");
    }
    let serving = engine::profile::active(lore).await.unwrap().unwrap();
    assert_eq!(serving.version, candidate, "the candidate serves");
    assert_eq!(serving.binding.as_ref().and_then(|b| b.target_id.as_deref()), Some(smollm.as_str()));
    assert_eq!(bound_embedding().await.as_deref(), Some(smollm.as_str()));
    let stamp = engine::fingerprint::stamped(&lore.db).await.unwrap().unwrap();
    assert!(stamp.embedding_model.starts_with("smollm2-135m"), "{stamp:?}");
    assert_eq!(stamp.dimensions, 576, "SmolLM2-135M's hidden size");
    let index =
        serving.binding.as_ref().and_then(|b| b.index.clone()).expect("the shadow index it was judged on");
    assert!(index.starts_with("chunks_"), "{index}");
    assert_eq!(engine::shadow::active_table(&lore.db).await.unwrap(), index);
    let found = search(&app).await;
    assert_eq!(found.status(), 200, "no window where retrieval fails closed");
    let found: Value = found.json().await.unwrap();
    assert_eq!(found["results"][0]["title"], "Restores", "{found}");

    // The full reindex queued with the switch chunks the corpus again for
    // the new model, and retrieval answers throughout and after it.
    embedding_reindex_succeeds(&app).await;
    assert_eq!(search(&app).await.status(), 200);
    assert_eq!(engine::fingerprint::stamped(&lore.db).await.unwrap().unwrap().dimensions, 576);

    // Restoring an earlier version keeps the model (versions hold no
    // binding of their own), and restoring the binding's version again
    // finds its index active and its model bound: nothing to adopt, no
    // second reindex.
    let embedding_runs = || async {
        engine::ingest::jobs::recent(lore, None, 50)
            .await
            .unwrap()
            .into_iter()
            .filter(|job| job.trigger == "embedding")
            .count()
    };
    let runs = embedding_runs().await;
    for number in [first, candidate] {
        let restored = app.post_json(&format!("/admin/profile/versions/{number}/restore"), json!({})).await;
        assert_eq!(restored.status(), 200, "{:?}", restored.text().await);
    }
    assert_eq!(engine::profile::active(lore).await.unwrap().unwrap().version, candidate);
    assert_eq!(bound_embedding().await.as_deref(), Some(smollm.as_str()));
    assert_eq!(engine::shadow::active_table(&lore.db).await.unwrap(), index);
    assert_eq!(embedding_runs().await, runs, "no reindex queued by the restores");
    assert_eq!(search(&app).await.status(), 200);

    // Unbinding goes back to the on-node model the same way: its own
    // shadow index, judged, then adopted with the unbinding; retrieval
    // never fails closed on the way.
    let unbound = bind_embedding(&app, None).await;
    assert_eq!(unbound.status(), 200, "{:?}", unbound.text().await);
    let unbound: Value = unbound.json().await.unwrap();
    let verdict = &unbound["verdict"];
    assert_eq!(verdict["unbinds"], true, "{verdict:#}");
    assert_eq!(verdict["model"], local.embedding_model.as_str(), "{verdict:#}");
    let back = verdict["version"].as_i64().unwrap() as i32;
    if verdict["bound"] == false {
        assert_eq!(bound_embedding().await.as_deref(), Some(smollm.as_str()), "held: still bound");
        assert_eq!(engine::shadow::active_table(&lore.db).await.unwrap(), index);
        let anyway =
            app.post_json(&format!("/admin/profile/versions/{back}/restore"), json!({"anyway": true})).await;
        assert_eq!(anyway.status(), 200, "{:?}", anyway.text().await);
    }
    assert_eq!(engine::profile::active(lore).await.unwrap().unwrap().version, back);
    assert_eq!(bound_embedding().await, None, "the role is unbound");
    assert_eq!(
        engine::fingerprint::stamped(&lore.db).await.unwrap().as_ref(),
        Some(&local),
        "the on-node stamp"
    );
    let on_node = engine::shadow::active_table(&lore.db).await.unwrap();
    assert_ne!(on_node, index, "a shadow of its own");
    let found = search(&app).await;
    assert_eq!(found.status(), 200, "no window where retrieval fails closed");
    assert_eq!(found.json::<Value>().await.unwrap()["results"][0]["title"], "Restores");
    embedding_reindex_succeeds(&app).await;
    assert_eq!(search(&app).await.status(), 200);
    assert_eq!(engine::fingerprint::stamped(&lore.db).await.unwrap().as_ref(), Some(&local));

    // A document deleted after a shadow was built is not answerable once
    // the shadow is adopted: its chunks go at the adoption (the reindex that
    // follows replaces only what still exists). Built here by the on-node
    // model, which embeds now.
    let heard = std::sync::Mutex::new(Vec::new());
    let progress = |done: usize, total: usize| heard.lock().unwrap().push((done, total));
    let shadow = engine::shadow::build(lore, None, &progress).await.unwrap();
    let chunks = lore.chunks().await.unwrap().count(None).await.unwrap();
    assert!(chunks > 0);
    let heard = heard.into_inner().unwrap();
    assert_eq!(heard.first(), Some(&(0, chunks)), "the build says its size first");
    assert_eq!(heard.last(), Some(&(chunks, chunks)), "and ends with every chunk done");
    assert_eq!(shadow.store.count(None).await.unwrap(), chunks, "every chunk embedded again");
    let deleted = app.client.delete(app.url(&format!("/admin/sources/{runbook}"))).send().await.unwrap();
    assert!(deleted.status().is_success());
    assert_eq!(shadow.store.count(None).await.unwrap(), chunks, "the shadow still holds them");
    let adoption =
        engine::shadow::adoptable(lore, None, Some(&shadow.table), &local.embedding_model).await.unwrap();
    let txn = lore.db.begin().await.unwrap();
    engine::shadow::adopt_in(&txn, "test", &adoption).await.unwrap();
    txn.commit().await.unwrap();
    engine::shadow::adopted(lore).await.unwrap();
    assert_eq!(engine::shadow::active_table(&lore.db).await.unwrap(), shadow.table);
    assert_eq!(
        lore.chunks().await.unwrap().count(None).await.unwrap(),
        0,
        "the deleted document's chunks went"
    );
    cramped.stop().await;
}
