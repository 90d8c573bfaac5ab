//! `/metrics`: off by default; behind its bearer key when one is set;
//! Prometheus text with request counts per route pattern and the answer
//! counters from the rollups.

use chrono::Utc;
use serde_json::Value;

use crate::helpers::{spawn_app, spawn_app_with, Options};

#[tokio::test]
async fn metrics_are_off_by_default() {
    let app = spawn_app().await;
    let response = app.get("/metrics").await;
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "metrics_disabled");
}

#[tokio::test]
async fn metrics_need_the_key_and_count_requests_and_answers() {
    let app = spawn_app_with(Options {
        configure: Some(|s| {
            s.metrics.enabled = true;
            s.metrics.key = Some(engine::settings::Secret::new("scrape-key-123"));
        }),
        ..Options::default()
    })
    .await;
    assert_eq!(app.get("/metrics").await.status(), 401);
    let wrong = app.client.get(app.url("/metrics")).bearer_auth("nope").send().await.unwrap();
    assert_eq!(wrong.status(), 401);

    for _ in 0..3 {
        assert_eq!(app.get("/healthz").await.status(), 200);
    }
    // Invented methods share one label, whatever they are called.
    for invented in ["BREW", "PROPFIND", "XYZZY"] {
        let method = reqwest::Method::from_bytes(invented.as_bytes()).unwrap();
        app.client.request(method, app.url("/healthz")).send().await.unwrap();
    }
    // One recorded run, as the answer pipeline records it.
    engine::metrics::record_run(
        &app.lore,
        engine::entities::answer_run::Model {
            id: "run-1".into(),
            created_at: Utc::now(),
            surface: "api".into(),
            key_id: None,
            profile_version: 1,
            question: "how do i restore".into(),
            cache_status: "hit".into(),
            refused: false,
            grounded: true,
            escalated: false,
            model: None,
            stages: serde_json::json!([]),
            input_tokens: 0,
            output_tokens: 0,
            estimated_cost_usd: 0.0,
            estimated_savings_usd: 0.25,
            latency_ms: 4.0,
            audience: None,
            asked_by: None,
            reply: None,
        },
    )
    .await
    .unwrap();

    let scraped = app.client.get(app.url("/metrics")).bearer_auth("scrape-key-123").send().await.unwrap();
    assert_eq!(scraped.status(), 200);
    assert!(scraped.headers()["content-type"].to_str().unwrap().starts_with("application/openmetrics-text"));
    let text = scraped.text().await.unwrap();
    let line = |prefix: &str| text.lines().find(|l| l.starts_with(prefix)).unwrap_or_default().to_owned();
    assert_eq!(
        line(r#"lore_http_requests_total{route="/healthz",method="GET",status="200"}"#),
        r#"lore_http_requests_total{route="/healthz",method="GET",status="200"} 3"#,
        "{text}"
    );
    assert!(
        line(r#"lore_http_requests_total{route="/metrics",method="GET",status="401"}"#).ends_with(" 2"),
        "{text}"
    );
    assert!(text.contains(r#"lore_http_request_duration_seconds_bucket{le="#), "{text}");
    assert!(!text.contains("BREW") && !text.contains("XYZZY"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("lore_http_requests_total{")
            && l.contains(r#"method="other""#)
            && l.ends_with(" 3")),
        "{text}"
    );
    assert_eq!(
        line(r#"lore_answers_total{surface="api"}"#),
        r#"lore_answers_total{surface="api"} 1"#,
        "{text}"
    );
    assert_eq!(
        line(r#"lore_answer_cache_hits_total{surface="api"}"#),
        r#"lore_answer_cache_hits_total{surface="api"} 1"#
    );
    assert!(line(r#"lore_answer_estimated_savings_usd_total{surface="api"}"#).ends_with(" 0.25"), "{text}");
    assert!(text.trim_end().ends_with("# EOF"));
    assert!(!text.contains("scrape-key-123"), "the key never appears");
}
