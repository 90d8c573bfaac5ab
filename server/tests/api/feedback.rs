//! Ratings of answers over HTTP, counted exactly by the rollups under
//! concurrency: on SQLite, on PostgreSQL, and through two Lore instances
//! sharing one PostgreSQL database (each with its own caches, recorder and
//! connection pool, as replicas are). The runs rated here are recorded
//! through the engine as the answer pipeline records them (the pipeline's
//! own recording is tested with real answers in `answer.rs`); every rating
//! goes through `POST /answer/feedback`, and every count is read back from
//! the Dashboard.

use chrono::Utc;
use futures::future::join_all;
use serde_json::{json, Value};

use crate::helpers::{drop_postgres, fresh_postgres, spawn_app_with, Options, TestApp};

/// Runs per surface.
const RUNS: usize = 100;
const ORIGIN: &str = "https://docs.example.com";
/// 32 bytes, base64: the instances on one database share it.
const MASTER_KEY: &str = "bG9yZS1mZWVkYmFjay10ZXN0LW1hc3Rlci1rZXktMzI=";

struct Keys {
    secret: (String, String),
    widget: (String, String),
}

/// A secret key and a widget key (allowed well above this test's rate).
async fn keys(app: &TestApp) -> Keys {
    let made = |body: Value| async move {
        let created: Value = app.post_json("/admin/keys", body).await.json().await.unwrap();
        (created["key"]["id"].as_str().unwrap().to_owned(), created["raw_key"].as_str().unwrap().to_owned())
    };
    Keys {
        secret: made(json!({"name": "backend", "kind": "secret", "scopes": ["answer"]})).await,
        widget: made(
            json!({"name": "docs", "kind": "widget", "origins": [ORIGIN], "rate_limit_per_minute": 10000}),
        )
        .await,
    }
}

/// A run as the pipeline records it: asked through `key_id` on `surface`.
fn run(id: String, surface: &str, key_id: &str, version: i32) -> engine::entities::answer_run::Model {
    engine::entities::answer_run::Model {
        id,
        created_at: Utc::now(),
        surface: surface.into(),
        key_id: Some(key_id.to_owned()),
        profile_version: version,
        question: "how do i restore a snapshot".into(),
        cache_status: "hit".into(),
        refused: false,
        grounded: true,
        escalated: false,
        model: None,
        stages: json!([]),
        input_tokens: 0,
        output_tokens: 0,
        estimated_cost_usd: 0.0,
        estimated_savings_usd: 0.0,
        latency_ms: 3.0,
        audience: Some("everyone".into()),
        asked_by: Some(format!("key:{key_id}")),
        reply: Some(json!({
            "question": "How do I restore a snapshot?",
            "answer": "Stop Lore, copy the snapshot back, start it [1].",
            "refused": false,
            "citations": [],
        })),
    }
}

/// Rates `trace_id` through `base` with `raw_key` (from the widget's page
/// when `from_page`).
async fn rate(base: &str, raw_key: &str, from_page: bool, trace_id: &str, helpful: bool) -> u16 {
    let mut request = reqwest::Client::new()
        .post(format!("{base}/answer/feedback"))
        .header("x-api-key", raw_key)
        .json(&json!({"trace_id": trace_id, "helpful": helpful}));
    if from_page {
        request = request.header("origin", ORIGIN);
    }
    request.send().await.unwrap().status().as_u16()
}

/// What the Dashboard says of the ratings: (helpful, unhelpful) per
/// surface, per key id, per profile version, and in all.
async fn counted(app: &TestApp) -> (Value, Value, Value, (i64, i64)) {
    let dashboard: Value =
        app.post_json("/admin/observability/", json!({"hours": 24})).await.json().await.unwrap();
    let pairs = |list: &Value, field: &str| -> Value {
        list.as_array()
            .unwrap()
            .iter()
            .map(|row| (row[field].to_string(), json!([row["helpful"], row["unhelpful"]])))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let totals = &dashboard["totals"];
    (
        pairs(&dashboard["surfaces"], "surface"),
        pairs(&dashboard["keys"], "key_id"),
        pairs(&dashboard["versions"], "version"),
        (totals["helpful"].as_i64().unwrap(), totals["unhelpful"].as_i64().unwrap()),
    )
}

/// One recorded run, and how its asker rates it.
struct Rated {
    id: String,
    raw_key: String,
    from_page: bool,
    surface: &'static str,
    version: i32,
    helpful: bool,
}

/// `[helpful, unhelpful]` of the ratings `pick` chooses.
fn expected(rated: &[Rated], pick: impl Fn(&Rated) -> bool) -> Value {
    let chosen: Vec<&Rated> = rated.iter().filter(|r| pick(r)).collect();
    let helpful = chosen.iter().filter(|r| r.helpful).count();
    json!([helpful, chosen.len() - helpful])
}

/// The Dashboard shows exactly the ratings of `rated`.
async fn shows_exactly(app: &TestApp, keys: &Keys, rated: &[Rated]) {
    let (surfaces, keyed, versions, totals) = counted(app).await;
    assert_eq!(surfaces["\"api\""], expected(rated, |r| r.surface == "api"), "{surfaces}");
    assert_eq!(surfaces["\"widget\""], expected(rated, |r| r.surface == "widget"), "{surfaces}");
    assert_eq!(keyed[&json!(keys.secret.0).to_string()], expected(rated, |r| r.surface == "api"), "{keyed}");
    assert_eq!(
        keyed[&json!(keys.widget.0).to_string()],
        expected(rated, |r| r.surface == "widget"),
        "{keyed}"
    );
    assert_eq!(versions["1"], expected(rated, |r| r.version == 1), "{versions}");
    assert_eq!(versions["2"], expected(rated, |r| r.version == 2), "{versions}");
    assert_eq!(json!([totals.0, totals.1]), expected(rated, |_| true), "each answer counts once");
    // The Access screen's usage column: the same, per key, over 7 days.
    let listed: Value = app.get("/admin/keys").await.json().await.unwrap();
    for (id, surface) in [(&keys.secret.0, "api"), (&keys.widget.0, "widget")] {
        let key = listed.as_array().unwrap().iter().find(|k| k["id"] == id.as_str()).unwrap();
        assert_eq!(
            json!([key["helpful_7d"], key["unhelpful_7d"]]),
            expected(rated, |r| r.surface == surface)
        );
    }
}

/// Records [`RUNS`] runs per surface through `apps[0]`, rates every one of
/// them at once, spread over `apps`, then re-rates some; the Dashboard (and
/// a rebuild of the rollups) must show exactly those counts.
async fn two_hundred_concurrent_ratings(apps: &[&TestApp]) {
    let first = apps[0];
    first.sign_in_with_bootstrap_link().await;
    let keys = keys(first).await;
    let mut rated = Vec::new();
    for i in 0..RUNS {
        for (surface, (key_id, raw_key), from_page) in
            [("api", &keys.secret, false), ("widget", &keys.widget, true)]
        {
            let id = uuid::Uuid::new_v4().to_string();
            // Version 1 answered each surface's first 40 questions.
            let version = if i < 40 { 1 } else { 2 };
            engine::metrics::record_run(&first.lore, run(id.clone(), surface, key_id, version))
                .await
                .unwrap();
            // Every third answer of the API and every fourth of the widget
            // did not help.
            let helpful = if surface == "api" { i % 3 != 0 } else { i % 4 != 0 };
            rated.push(Rated { id, raw_key: raw_key.clone(), from_page, surface, version, helpful });
        }
    }

    let statuses = join_all(rated.iter().enumerate().map(|(n, r)| {
        let base = apps[n % apps.len()].base_url.clone();
        async move { rate(&base, &r.raw_key, r.from_page, &r.id, r.helpful).await }
    }))
    .await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    shows_exactly(first, &keys, &rated).await;

    // A second rating replaces the first: the first 30 API answers change
    // their verdict, each through another instance than before.
    for (n, r) in rated.iter_mut().filter(|r| r.surface == "api").take(30).enumerate() {
        r.helpful = !r.helpful;
        let base = &apps[(n + 1) % apps.len()].base_url;
        assert_eq!(rate(base, &r.raw_key, r.from_page, &r.id, r.helpful).await, 200);
    }
    shows_exactly(first, &keys, &rated).await;

    // One answer rated ten times at once, each verdict in turn, through
    // every instance: one rating is kept, and counted once, as stored.
    let contested = uuid::Uuid::new_v4().to_string();
    engine::metrics::record_run(&first.lore, run(contested.clone(), "api", &keys.secret.0, 2)).await.unwrap();
    let statuses = join_all((0..10).map(|n| {
        let (base, raw, id) =
            (apps[n % apps.len()].base_url.clone(), keys.secret.1.clone(), contested.clone());
        async move { rate(&base, &raw, false, &id, n % 2 == 0).await }
    }))
    .await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    use sea_orm::EntityTrait;
    let kept = engine::entities::answer_rating::Entity::find_by_id(contested.clone())
        .one(&first.lore.db)
        .await
        .unwrap()
        .unwrap();
    rated.push(Rated {
        id: contested,
        raw_key: keys.secret.1.clone(),
        from_page: false,
        surface: "api",
        version: 2,
        helpful: kept.helpful,
    });
    shows_exactly(first, &keys, &rated).await;

    // A rebuild of the rollups from the runs and ratings gives the same.
    engine::metrics::rebuild(&first.lore).await.unwrap();
    shows_exactly(first, &keys, &rated).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_ratings_are_counted_exactly_on_sqlite() {
    let app = spawn_app_with(Options::default()).await;
    two_hundred_concurrent_ratings(&[&app]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_ratings_are_counted_exactly_on_postgres_and_across_two_instances() {
    let (url, database) = fresh_postgres().await;
    {
        let on_postgres = |url: &str| Options {
            database_url: Some(url.to_owned()),
            configure: Some(|s| s.master_key = Some(engine::settings::Secret::new(MASTER_KEY))),
            ..Options::default()
        };
        let app = spawn_app_with(on_postgres(&url)).await;
        two_hundred_concurrent_ratings(&[&app]).await;
        drop(app);

        // A second database, rated through two instances at once.
        let (url2, database2) = fresh_postgres().await;
        let a = spawn_app_with(on_postgres(&url2)).await;
        let b = spawn_app_with(on_postgres(&url2)).await;
        two_hundred_concurrent_ratings(&[&a, &b]).await;
        drop((a, b));
        drop_postgres(&database2).await;
    }
    drop_postgres(&database).await;
}

/// Every refusal of a rating changes nothing: an unknown or foreign trace
/// id, another key, a widget's page not on the key's list, a comment too
/// long, a flood over the key's rate; and markup in a comment is kept as
/// the text it is.
#[tokio::test]
async fn a_refused_rating_changes_nothing() {
    let app = spawn_app_with(Options::default()).await;
    app.sign_in_with_bootstrap_link().await;
    let keys = keys(&app).await;
    let other: Value = app
        .post_json("/admin/keys", json!({"name": "other", "kind": "secret", "scopes": ["answer"]}))
        .await
        .json()
        .await
        .unwrap();
    let other = other["raw_key"].as_str().unwrap().to_owned();
    let slow: Value = app
        .post_json(
            "/admin/keys",
            json!({"name": "slow", "kind": "widget", "origins": [ORIGIN], "rate_limit_per_minute": 3}),
        )
        .await
        .json()
        .await
        .unwrap();
    let (slow_id, slow_raw) =
        (slow["key"]["id"].as_str().unwrap().to_owned(), slow["raw_key"].as_str().unwrap().to_owned());
    let (api_run, widget_run, slow_run) =
        ("run-api".to_owned(), "run-widget".to_owned(), "run-slow".to_owned());
    engine::metrics::record_run(&app.lore, run(api_run.clone(), "api", &keys.secret.0, 1)).await.unwrap();
    engine::metrics::record_run(&app.lore, run(widget_run.clone(), "widget", &keys.widget.0, 1))
        .await
        .unwrap();
    engine::metrics::record_run(&app.lore, run(slow_run.clone(), "widget", &slow_id, 1)).await.unwrap();
    // A run recorded before ratings: who asked is not known.
    let mut old = run("run-old".into(), "api", &keys.secret.0, 1);
    old.asked_by = None;
    old.reply = None;
    engine::metrics::record_run(&app.lore, old).await.unwrap();

    let send = |raw: String, origin: Option<&'static str>, body: Value| {
        let url = app.url("/answer/feedback");
        async move {
            let mut request = reqwest::Client::new().post(url).header("x-api-key", raw).json(&body);
            if let Some(origin) = origin {
                request = request.header("origin", origin);
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let code =
        |(status, body): (u16, Value)| (status, body["error"]["code"].as_str().unwrap_or("").to_owned());
    let secret = keys.secret.1.clone();

    for unknown in ["no-such-trace", "run-old", "", &"x".repeat(100)] {
        let refused = send(secret.clone(), None, json!({"trace_id": unknown, "helpful": false})).await;
        assert_eq!(code(refused), (404, "answer_not_found".into()), "{unknown:?}");
    }
    let foreign = send(other.clone(), None, json!({"trace_id": api_run, "helpful": false})).await;
    assert_eq!(code(foreign), (403, "not_your_answer".into()));
    // The widget's key, from its page, rating the API's answer.
    let crossed =
        send(keys.widget.1.clone(), Some(ORIGIN), json!({"trace_id": api_run, "helpful": true})).await;
    assert_eq!(code(crossed), (403, "not_your_answer".into()));
    let elsewhere = send(
        keys.widget.1.clone(),
        Some("https://evil.example.net"),
        json!({"trace_id": widget_run, "helpful": false}),
    )
    .await;
    assert_eq!(code(elsewhere), (403, "origin_not_allowed".into()));
    let long = send(
        secret.clone(),
        None,
        json!({"trace_id": api_run, "helpful": false, "comment": "é".repeat(1001)}),
    )
    .await;
    assert_eq!(code(long), (422, "invalid_input".into()));
    let not_json = send(secret.clone(), None, json!({"trace_id": api_run, "helpful": "no"})).await;
    assert_eq!(not_json.0, 422, "{}", not_json.1);
    // NUL cannot be stored (PostgreSQL refuses it): refused as input, not a 500.
    let nul =
        send(secret.clone(), None, json!({"trace_id": api_run, "helpful": false, "comment": "a\u{0}b"}))
            .await;
    assert_eq!(code(nul), (422, "invalid_input".into()));
    let bad_filter = app.get("/admin/feedback?open=yes").await;
    assert_eq!(bad_filter.status(), 422);
    // Nothing of that was counted, or kept; and no rating, refused or
    // not, is a query of its key.
    assert_eq!(counted(&app).await.3, (0, 0));
    let listed: Value = app.get("/admin/keys").await.json().await.unwrap();
    assert!(listed.as_array().unwrap().iter().all(|k| k["queries_7d"] == 0), "{listed:#}");
    let queue: Value = app.get("/admin/feedback").await.json().await.unwrap();
    assert_eq!(queue["groups"], json!([]), "{queue}");

    // A flood over the key's rate is refused once the rate is spent.
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(
            send(slow_raw.clone(), Some(ORIGIN), json!({"trace_id": slow_run, "helpful": true})).await.0,
        );
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    assert_eq!(counted(&app).await.3, (1, 0), "three ratings of one answer are one rating");

    // Markup and script in a comment are kept as text; the browser test
    // (`end2end/tests/playground.test.mjs`) checks the Dashboard shows them inert.
    let markup = "<img src=x onerror=alert(1)><script>alert('x')</script> wrong & late";
    let kept = send(secret, None, json!({"trace_id": api_run, "helpful": false, "comment": markup})).await;
    assert_eq!(kept.0, 200, "{}", kept.1);
    assert_eq!(kept.1["comment"], markup);
    let queue: Value = app.get("/admin/feedback").await.json().await.unwrap();
    assert_eq!(queue["groups"][0]["items"][0]["comment"], markup, "{queue}");
    assert_eq!(queue["groups"][0]["items"][0]["trace_id"], api_run);
}
