//! The embedded provider: SmolLM2-135M-Instruct (the GGUF file `scripts/test`
//! fetches into the machine's model cache) run by candle inside Lore, over
//! the same 12-page test site and question as the llama-server tests.

use std::time::Duration;

use serde_json::{json, Value};

use super::helpers::{finished, spawn_app_with, Options, TestApp};
use super::site::Site;
use engine::providers::client::{Endpoint, Follow, Message};
use engine::providers::{embedded, repetition};

fn crawls_loopback(settings: &mut engine::Settings) {
    settings.ingest.allow_private_addresses = true;
}

async fn indexed_site(app: &TestApp, site: &Site) {
    let source: Value = app
        .post_json(
            "/admin/sources/",
            json!({"name": "Guides", "kind": "website",
                   "config": {"start_url": format!("{}/docs/", site.base_url), "discovery": "sitemap"}}),
        )
        .await
        .json()
        .await
        .unwrap();
    let job = source["latest_job"]["id"].as_str().unwrap().to_owned();
    assert_eq!(finished(app, &job).await["status"], "succeeded");
}

fn stage<'a>(answer: &'a Value, name: &str) -> Option<&'a Value> {
    answer["trace"]["stages"].as_array().unwrap().iter().find(|s| s["stage"] == name)
}

#[tokio::test]
async fn the_embedded_model_answers_with_citations_on_node_at_no_cost() {
    let site = Site::start(12, Duration::ZERO).await;
    let app = spawn_app_with(Options { configure: Some(crawls_loopback), ..Options::default() }).await;
    app.sign_in_with_bootstrap_link().await;
    indexed_site(&app, &site).await;

    // Quick add with no endpoint, key or model: the default model, probed and bound.
    let added = app.post_json("/admin/providers/quick-add", json!({"kind": "embedded", "model": ""})).await;
    assert_eq!(added.status(), 201, "{}", added.text().await.unwrap());
    let added: Value = added.json().await.unwrap();
    assert_eq!(added["target"]["model"], embedded::DEFAULT_MODEL);
    assert_eq!(added["target"]["state"], "ready", "{added:#}");
    assert_eq!(added["account"]["placement"], "on_node", "{added:#}");

    let answered =
        app.post_json("/admin/playground/answer", json!({"question": "What does guide 4 explain?"})).await;
    assert_eq!(answered.status(), 200);
    let answered: Value = answered.json().await.unwrap();
    assert_eq!(answered["refused"], false, "{answered:#}");
    let page_4 = format!("{}/docs/page-4", site.base_url);
    assert!(
        answered["citations"].as_array().unwrap().iter().any(|c| c["url"] == page_4.as_str()),
        "{answered:#}"
    );
    // The embedded model answers in quotes: the passage's own sentences.
    assert_eq!(stage(&answered, "grounding").unwrap()["decision"], "quoted", "{answered:#}");
    // The funnel tells on-node answers apart, and they cost nothing.
    let generation = stage(&answered, "generation").unwrap();
    assert_eq!(generation["decision"], "answered_on_node", "{answered:#}");
    assert_eq!(answered["trace"]["usage"]["estimated_cost_usd"], 0.0, "{answered:#}");
    assert!(answered["trace"]["usage"]["output_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn the_embedded_model_streams_its_reply_token_by_token() {
    let app = spawn_app_with(Options::default()).await;
    let (tokens, mut pieces) = tokio::sync::mpsc::unbounded_channel();
    let endpoint = Endpoint::openai(embedded::ENDPOINT, None);
    let messages = [Message::user("Name three colours of the rainbow.")];
    let completion = engine::providers::chat(
        &app.lore,
        &endpoint,
        embedded::DEFAULT_MODEL,
        &messages,
        24,
        0.0,
        Follow { tokens: Some(tokens), stop_repeating: false },
    )
    .await
    .unwrap();
    let mut received = Vec::new();
    while let Ok(piece) = pieces.try_recv() {
        received.push(piece);
    }
    assert!(completion.output_tokens > 1 && received.len() > 1, "{received:?}");
    assert_eq!(received.concat().trim(), completion.text, "the pieces make the reply");
    assert!(completion.input_tokens > 5);

    // The maximum of new tokens holds.
    let short = engine::providers::chat(
        &app.lore,
        &endpoint,
        embedded::DEFAULT_MODEL,
        &messages,
        3,
        0.0,
        Follow::default(),
    )
    .await
    .unwrap();
    assert!(short.output_tokens <= 3, "{short:?}");
}

/// A reply that repeats itself ends where it began to, long before its
/// token budget: on the embedded model, and on llama-server (streamed, the
/// connection closed at the cut). What is kept is the reply up to there.
#[tokio::test]
async fn a_reply_that_repeats_itself_stops_at_its_second_copy() {
    let app = spawn_app_with(Options::default()).await;
    let llama = super::llama::LlamaServer::start().await;
    // SmolLM2 writes one stanza of this poem again and again.
    let messages = [Message::user("Write a poem where every line is: The red fox jumps over the old fence.")];
    let targets = [
        (Endpoint::openai(embedded::ENDPOINT, None), embedded::DEFAULT_MODEL),
        (Endpoint::openai(llama.endpoint.clone(), None), "smollm2-135m-instruct"),
    ];
    for (endpoint, model) in &targets {
        let chat =
            |follow: Follow| engine::providers::chat(&app.lore, endpoint, model, &messages, 120, 0.0, follow);
        let whole = chat(Follow::default()).await.unwrap();
        let cut = chat(Follow::stopping_repetition()).await.unwrap();
        assert!(!whole.repeated && cut.repeated, "{}: {whole:?} / {cut:?}", endpoint.base);
        assert!(
            cut.output_tokens < whole.output_tokens && !cut.text.is_empty(),
            "{}: stopped early: {cut:?} / {whole:?}",
            endpoint.base
        );
        assert!(whole.text.starts_with(&cut.text), "{}: the reply up to the cut: {cut:?}", endpoint.base);
        assert_eq!(repetition::repeats(&cut.text), None, "{}: {cut:?}", endpoint.base);
        assert!(repetition::repeats(&whole.text).is_some(), "{}: {whole:?}", endpoint.base);
    }
}

#[tokio::test]
async fn an_embedded_target_is_refused_while_unprobed_and_a_bad_file_fails_its_probe() {
    let app = spawn_app_with(Options::default()).await;
    app.sign_in_with_bootstrap_link().await;
    let account: Value =
        app.post_json("/admin/providers/accounts", json!({"kind": "embedded"})).await.json().await.unwrap();
    assert_eq!(account["endpoint"], embedded::ENDPOINT, "{account:#}");
    let register = |model: String| {
        let account = account["id"].as_str().unwrap().to_owned();
        let app = &app;
        async move {
            let response = app
                .post_json(
                    "/admin/targets",
                    json!({"account_id": account, "capability": "generation", "model": model}),
                )
                .await;
            assert_eq!(response.status(), 201);
            response.json::<Value>().await.unwrap()
        }
    };
    let bind = |id: String| {
        let app = &app;
        async move {
            app.client
                .put(app.url("/admin/roles/generation"))
                .json(&json!({"target_id": id}))
                .send()
                .await
                .unwrap()
        }
    };

    // Unprobed: the role-binding validator refuses it.
    let target = register(embedded::DEFAULT_MODEL.to_owned()).await;
    let refused = bind(target["id"].as_str().unwrap().to_owned()).await;
    assert_eq!(refused.status(), 422);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["error"]["code"], "target_not_ready", "{refused:#}");

    // A missing file and a file that is not a model: the probe fails with the reason.
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("absent.gguf");
    let corrupt = dir.path().join("corrupt.gguf");
    std::fs::write(&corrupt, b"GGUF? no: a text file").unwrap();
    for (path, says) in [(&absent, "does not exist"), (&corrupt, "not a GGUF file")] {
        let target = register(path.display().to_string()).await;
        let id = target["id"].as_str().unwrap().to_owned();
        let probed: Value =
            app.post_json(&format!("/admin/targets/{id}/probe"), json!({})).await.json().await.unwrap();
        assert_eq!(probed["state"], "blocked", "{probed:#}");
        assert!(probed["probe_error"].as_str().unwrap().contains(says), "{probed:#}");
        assert_eq!(bind(id).await.status(), 422);
    }

    // It generates only: no embedding target on it.
    let embedding = app
        .post_json(
            "/admin/targets",
            json!({"account_id": account["id"], "capability": "embedding", "model": embedded::DEFAULT_MODEL}),
        )
        .await;
    assert_eq!(embedding.status(), 422);
}
