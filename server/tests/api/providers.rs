//! Providers against a real on-node server (llama.cpp's llama-server with
//! SmolLM2): quick add probes and binds; a dead endpoint blocks its target
//! and the validator refuses it with the reason; the API key never shows.

use serde_json::{json, Value};

use super::helpers::spawn_app;
use super::llama::{dead_port, LlamaServer};

#[tokio::test]
async fn quick_add_on_a_real_llama_server_probes_and_binds_generation() {
    let llama = LlamaServer::start().await;
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;

    let before: Value = app.get("/admin/setup-state/").await.json().await.unwrap();
    let provider_check = |state: &Value| {
        state["checks"].as_array().unwrap().iter().find(|c| c["name"] == "provider").unwrap()["status"]
            .clone()
    };
    assert_eq!(provider_check(&before), "missing");

    let response = app
        .post_json(
            "/admin/providers/quick-add",
            json!({"kind": "llama_cpp", "endpoint": llama.endpoint, "model": "smollm2-135m-instruct"}),
        )
        .await;
    assert_eq!(response.status(), 201, "{:?}", response.text().await);
    let added: Value = response.json().await.unwrap();
    assert_eq!(added["account"]["placement"], "on_node");
    assert_eq!(added["target"]["state"], "ready");
    assert!(added["target"]["probe_latency_ms"].as_i64().unwrap() > 0);

    let overview: Value = app.get("/admin/providers/").await.json().await.unwrap();
    let generation =
        overview["roles"].as_array().unwrap().iter().find(|r| r["role"] == "generation").unwrap();
    assert_eq!(generation["target_id"], added["target"]["id"]);
    assert_eq!(generation["state"], "ready");
    let after: Value = app.get("/admin/setup-state/").await.json().await.unwrap();
    assert_eq!(provider_check(&after), "ok");

    // Re-probing records a fresh result.
    let id = added["target"]["id"].as_str().unwrap();
    let probed: Value =
        app.post_json(&format!("/admin/targets/{id}/probe"), json!({})).await.json().await.unwrap();
    assert_eq!(probed["state"], "ready");
}

#[tokio::test]
async fn a_dead_endpoint_blocks_its_target_and_binding_is_refused_with_the_reason() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    let endpoint = format!("http://127.0.0.1:{}/v1", dead_port());

    // Quick add probes before storing: it fails and leaves nothing.
    let response = app
        .post_json(
            "/admin/providers/quick-add",
            json!({"kind": "custom", "endpoint": endpoint, "model": "m"}),
        )
        .await;
    assert_eq!(response.status(), 502);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "probe_failed");
    assert!(body["error"]["message"].as_str().unwrap().contains("cannot reach"), "{body}");
    let overview: Value = app.get("/admin/providers/").await.json().await.unwrap();
    assert!(overview["accounts"].as_array().unwrap().is_empty(), "nothing half-made remains: {overview}");
    assert!(overview["targets"].as_array().unwrap().is_empty());

    // Made step by step instead: unprobed → refused; probe fails → blocked → refused with the reason.
    let account: Value = app
        .post_json("/admin/providers/accounts", json!({"kind": "custom", "endpoint": endpoint}))
        .await
        .json()
        .await
        .unwrap();
    let target: Value = app
        .post_json(
            "/admin/targets",
            json!({"account_id": account["id"], "capability": "generation", "model": "m"}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(target["state"], "unprobed");
    let id = target["id"].as_str().unwrap();
    let bind = |app: &super::helpers::TestApp| {
        app.client.put(app.url("/admin/roles/generation")).json(&json!({"target_id": id})).send()
    };
    let refused = bind(&app).await.unwrap();
    assert_eq!(refused.status(), 422);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "target_not_ready");
    assert_eq!(body["error"]["details"]["state"], "unprobed");

    let probed: Value =
        app.post_json(&format!("/admin/targets/{id}/probe"), json!({})).await.json().await.unwrap();
    assert_eq!(probed["state"], "blocked");
    assert!(probed["probe_error"].as_str().unwrap().contains("cannot reach"), "{probed}");

    let refused = bind(&app).await.unwrap();
    assert_eq!(refused.status(), 422);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["details"]["state"], "blocked");
    assert!(body["error"]["message"].as_str().unwrap().contains("its last probe failed"), "{body}");

    // A disabled target is refused for that reason.
    let disabled = app
        .client
        .patch(app.url(&format!("/admin/targets/{id}")))
        .json(&json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(disabled.status(), 200);
    let body: Value = bind(&app).await.unwrap().json().await.unwrap();
    assert_eq!(body["error"]["details"]["state"], "disabled");

    // Prices: set both, then `null` clears one and an absent key keeps the other.
    let patch = |body: Value| app.client.patch(app.url(&format!("/admin/targets/{id}"))).json(&body).send();
    let priced: Value = patch(json!({"input_price_per_mtok": 1.5, "output_price_per_mtok": 6.0}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (priced["input_price_per_mtok"].as_f64(), priced["output_price_per_mtok"].as_f64()),
        (Some(1.5), Some(6.0))
    );
    let cleared: Value = patch(json!({"input_price_per_mtok": null})).await.unwrap().json().await.unwrap();
    assert!(cleared["input_price_per_mtok"].is_null(), "null clears the price: {cleared}");
    assert_eq!(cleared["output_price_per_mtok"].as_f64(), Some(6.0), "an absent key keeps it: {cleared}");

    // One change is one write: a refused price leaves the switch as it was too.
    let refused = patch(json!({"enabled": true, "output_price_per_mtok": 20000.0})).await.unwrap();
    assert_eq!(refused.status(), 422);
    let overview: Value = app.get("/admin/providers/").await.json().await.unwrap();
    let kept = overview["targets"].as_array().unwrap().iter().find(|t| t["id"] == id).unwrap();
    assert_eq!(
        (kept["enabled"].as_bool(), kept["output_price_per_mtok"].as_f64()),
        (Some(false), Some(6.0)),
        "{kept}"
    );

    let overview: Value = app.get("/admin/providers/").await.json().await.unwrap();
    let generation =
        overview["roles"].as_array().unwrap().iter().find(|r| r["role"] == "generation").unwrap();
    assert!(generation["target_id"].is_null(), "the role stayed unbound");
}

/// Walks every file under `dir` and says whether any contains `needle`.
fn any_file_contains(dir: &std::path::Path, needle: &[u8]) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = any_file_contains(&path, needle) {
                return Some(found);
            }
        } else if let Ok(bytes) = std::fs::read(&path) {
            if bytes.windows(needle.len()).any(|w| w == needle) {
                return Some(path);
            }
        }
    }
    None
}

#[tokio::test]
async fn the_provider_key_never_appears_in_plain_text() {
    let llama = LlamaServer::start().await;
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    let key = "sk-test-9f8e7d6c5b4a-do-not-leak";

    // llama-server ignores the bearer key; the call still carries it.
    let response = app
        .post_json(
            "/admin/providers/quick-add",
            json!({"kind": "custom", "endpoint": llama.endpoint, "api_key": key, "model": "smollm2", "name": "keyed"}),
        )
        .await;
    let text = response.text().await.unwrap();
    assert!(!text.contains(key), "{text}");
    let added: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(added["account"]["has_api_key"], true);
    let id = added["account"]["id"].as_str().unwrap().to_owned();

    // Rotation: a blank key keeps the stored one, a new value replaces it.
    let kept = app
        .client
        .put(app.url(&format!("/admin/providers/accounts/{id}")))
        .json(&json!({"kind": "custom", "endpoint": llama.endpoint, "api_key": ""}))
        .send()
        .await
        .unwrap();
    assert_eq!(kept.status(), 200);
    let account = engine::providers::account(&app.lore, &id).await.unwrap();
    let sealed = |id: String| async {
        use sea_orm::EntityTrait;
        entity::provider_account::Entity::find_by_id(id)
            .one(&app.lore.db)
            .await
            .unwrap()
            .unwrap()
            .api_key_sealed
    };
    let sealed_before = sealed(id.clone()).await.unwrap();
    assert_eq!(engine::providers::endpoint_of(&app.lore, &account).unwrap().api_key.unwrap().expose(), key);
    let rotated_key = "sk-test-rotated-0123456789";
    app.client
        .put(app.url(&format!("/admin/providers/accounts/{id}")))
        .json(&json!({"kind": "custom", "endpoint": llama.endpoint, "api_key": rotated_key}))
        .send()
        .await
        .unwrap();
    let account = engine::providers::account(&app.lore, &id).await.unwrap();
    assert_ne!(sealed(id.clone()).await.unwrap(), sealed_before);
    assert_eq!(
        engine::providers::endpoint_of(&app.lore, &account).unwrap().api_key.unwrap().expose(),
        rotated_key
    );

    // Nowhere readable: every page and JSON response, every file of the data
    // directory (database, its journal, the audit log in it).
    for path in ["/admin/providers/", "/providers", "/admin/setup-state/"] {
        let page = app.get(path).await.text().await.unwrap();
        assert!(!page.contains(key) && !page.contains(rotated_key), "{path} shows the key");
    }
    for secret in [key, rotated_key] {
        assert_eq!(
            any_file_contains(app.data_dir.path(), secret.as_bytes()),
            None,
            "{secret} is stored in plain text"
        );
    }
}

#[tokio::test]
async fn an_account_whose_target_serves_a_role_is_not_deleted_until_the_role_is_unbound() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    // The embedded model: a ready target bound to generation, with no server to start.
    let added = app.post_json("/admin/providers/quick-add", json!({"kind": "embedded", "model": ""})).await;
    assert_eq!(added.status(), 201, "{:?}", added.text().await);
    let added: Value = added.json().await.unwrap();
    let id = added["account"]["id"].as_str().unwrap().to_owned();
    let target = added["target"]["id"].as_str().unwrap().to_owned();
    let delete = || app.client.delete(app.url(&format!("/admin/providers/accounts/{id}"))).send();

    let refused = delete().await.unwrap();
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "provider_in_use", "{body:#}");
    assert!(body["error"]["message"].as_str().unwrap().contains("generation role"), "{body:#}");
    // The refusal changed nothing: the account, its target and the binding stay.
    engine::providers::account(&app.lore, &id).await.unwrap();
    engine::providers::target(&app.lore, &target).await.unwrap();
    let bindings = engine::providers::bindings(&app.lore).await.unwrap();
    let generation = bindings.iter().find(|b| b.role == engine::providers::Role::Generation).unwrap();
    assert_eq!(generation.target.as_ref().map(|t| t.id.as_str()), Some(target.as_str()));

    let unbound = app
        .client
        .put(app.url("/admin/roles/generation"))
        .json(&json!({"target_id": null}))
        .send()
        .await
        .unwrap();
    assert_eq!(unbound.status(), 200, "{:?}", unbound.text().await);
    let deleted = delete().await.unwrap();
    assert!(deleted.status().is_success(), "{:?}", deleted.text().await);
    assert!(engine::providers::account(&app.lore, &id).await.is_err());
    assert!(engine::providers::target(&app.lore, &target).await.is_err(), "its targets go with it");
}
