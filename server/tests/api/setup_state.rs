use crate::helpers::{spawn_app, spawn_app_with, Options};

#[tokio::test]
async fn an_empty_install_cannot_answer_and_says_why() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;

    let response = app.get("/admin/setup-state/").await;
    assert_eq!(response.status(), 200);
    let state: serde_json::Value = response.json().await.unwrap();

    assert_eq!(state["canAnswer"], false);
    // The old name stays for a release, with the same verdict.
    assert_eq!(state["can_answer"], false);
    let checks: Vec<(String, String)> = state["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_owned(), c["status"].as_str().unwrap().to_owned()))
        .collect();
    let expected = [
        ("configuration", "ok"),
        ("embedding", "ok"),
        ("provider", "missing"),
        ("indexing", "missing"),
        ("content", "missing"),
        ("profile_version", "missing"),
    ];
    assert_eq!(checks, expected.map(|(n, s)| (n.to_owned(), s.to_owned())));

    let reasons: Vec<&str> =
        state["reasons"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert_eq!(reasons.len(), 4, "{reasons:?}");
    for (reason, concern) in reasons.iter().zip(["provider", "indexing", "content", "profile_version"]) {
        assert!(reason.starts_with(&format!("{concern}: ")), "{reason}");
    }
    assert_eq!(state["active_profile_version"], serde_json::Value::Null);
    assert_eq!(state["wizard_complete"], false);

    // A fresh install's home is the setup wizard...
    let home = app.get("/").await;
    assert_eq!(home.status(), 303);
    assert_eq!(home.headers()["location"], "/setup");
    assert_eq!(app.get("/dashboard").await.status(), 200, "the Dashboard stays one click away");
    // ...until there is a profile: then it is the Dashboard.
    engine::profile::ensure_on_first_index(&app.lore, &engine::audit::Actor::System).await.unwrap();
    assert_eq!(app.get("/").await.status(), 200);
}

#[tokio::test]
async fn missing_model_files_are_reported_on_their_own() {
    let app = spawn_app_with(Options { without_models: true, ..Options::default() }).await;
    app.sign_in_with_bootstrap_link().await;

    let state: serde_json::Value = app.get("/admin/setup-state/").await.json().await.unwrap();
    let embedding = state["checks"].as_array().unwrap().iter().find(|c| c["name"] == "embedding").unwrap();
    assert_eq!(embedding["status"], "missing");
    assert!(embedding["detail"].as_str().unwrap().contains("are missing from"), "{embedding}");
    assert!(state["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r.as_str().unwrap().starts_with("embedding: ")));
}

#[tokio::test]
async fn broken_model_files_are_failing_not_missing() {
    let app = spawn_app_with(Options { without_models: true, ..Options::default() }).await;
    let dir = app.data_dir.path().join("no-models/all-MiniLM-L6-v2");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), r#"{"hidden_size": 384}"#).unwrap();
    std::fs::write(dir.join("tokenizer.json"), r#"{"model": {}}"#).unwrap();
    std::fs::write(dir.join("model.safetensors"), b"not a safetensors file").unwrap();
    app.sign_in_with_bootstrap_link().await;

    let state: serde_json::Value = app.get("/admin/setup-state/").await.json().await.unwrap();
    let embedding = state["checks"].as_array().unwrap().iter().find(|c| c["name"] == "embedding").unwrap();
    assert_eq!(embedding["status"], "failing", "{embedding}");
}
