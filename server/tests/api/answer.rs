//! The answer pipeline over HTTP, against real components: a 12-page test
//! site crawled and embedded with the real MiniLM files into LanceDB, and
//! llama.cpp's llama-server serving SmolLM2-135M-Instruct as the generation
//! (and escalation) target. SmolLM2 is deterministic at temperature 0, and
//! small enough to answer from general knowledge readily: exactly what the
//! grounding check is for.

use std::time::Duration;

use sea_orm::EntityTrait;
use serde_json::{json, Value};

use super::helpers::{finished, spawn_app_with, Options, TestApp};
use super::llama::LlamaServer;
use super::site::Site;

const PAGES: usize = 12;

struct Setup {
    app: TestApp,
    site: Site,
    key: String,
    /// A widget key for `https://docs.example.com`.
    widget_key: String,
    _llama: LlamaServer,
}

/// Lore with the site indexed, SmolLM2 bound to generation and a secret key
/// with the answer and retrieve scopes.
async fn setup() -> Setup {
    setup_with(crawls_loopback, |_| {}).await
}

/// The test site is on 127.0.0.1.
fn crawls_loopback(settings: &mut engine::Settings) {
    settings.ingest.allow_private_addresses = true;
}

/// [`setup`] with `configure`d settings, the site's pages changed by
/// `change` before the crawl.
async fn setup_with(configure: fn(&mut engine::Settings), change: impl FnOnce(&Site)) -> Setup {
    let llama = LlamaServer::start().await;
    let site = Site::start(PAGES, Duration::ZERO).await;
    change(&site);
    let app = spawn_app_with(Options { configure: Some(configure), ..Options::default() }).await;
    app.sign_in_with_bootstrap_link().await;
    let key: Value = app
        .post_json(
            "/admin/keys",
            json!({"name": "backend", "kind": "secret", "scopes": ["answer", "retrieve"]}),
        )
        .await
        .json()
        .await
        .unwrap();
    let key = key["raw_key"].as_str().unwrap().to_owned();
    let widget: Value = app
        .post_json(
            "/admin/keys",
            json!({"name": "docs", "kind": "widget", "origins": ["https://docs.example.com"]}),
        )
        .await
        .json()
        .await
        .unwrap();
    let widget_key = widget["raw_key"].as_str().unwrap().to_owned();
    let setup = Setup { app, site, key, widget_key, _llama: llama };

    // Nothing indexed, no provider: not answerable, on every surface.
    let refused = setup.ask("What does guide 4 explain?").await;
    assert_eq!(refused.status(), 503);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_answerable", "{body}");
    // A key's caller learns which concerns fail; their details are the admin's.
    assert_eq!(
        body["error"]["details"]["reasons"],
        json!(["provider", "indexing", "content", "profile_version"]),
        "{body}"
    );
    // Streamed too: the gate fails before the reply starts.
    let streamed = reqwest::Client::new()
        .post(setup.app.url("/answer"))
        .header("x-api-key", &setup.key)
        .header("accept", "text/event-stream")
        .json(&json!({ "question": "What does guide 4 explain?" }))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.status(), 503);
    assert_eq!(streamed.json::<Value>().await.unwrap()["error"]["code"], "not_answerable");
    // From a page, through a widget key.
    let from_page = setup.ask_from_page("What does guide 4 explain?", "application/json").await;
    assert_eq!(from_page.status(), 503);
    assert_eq!(from_page.json::<Value>().await.unwrap()["error"]["code"], "not_answerable");
    // At the terminal: the code, then what is missing, one reason a line.
    let (ok, _, stderr) = setup.lore_ask("What does guide 4 explain?", false).await;
    assert!(!ok && stderr.contains("[not_answerable]"), "{stderr}");
    assert!(stderr.contains("\n  - provider: "), "{stderr}");
    // Under --json: the API's error body, what is missing included.
    let (ok, stdout, stderr) = setup.lore_ask("What does guide 4 explain?", true).await;
    assert!(!ok, "{stdout}");
    let failed: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("not JSON: {stdout}\n{stderr}"));
    assert_eq!(failed["error"]["code"], "not_answerable", "{failed}");
    assert!(failed["error"]["details"]["reasons"][0].as_str().unwrap().starts_with("provider: "), "{failed}");
    let playground = setup.app.post_json("/admin/playground/answer", json!({"question": "x y z"})).await;
    assert_eq!(playground.status(), 503);
    let playground: Value = playground.json().await.unwrap();
    assert!(playground["error"]["details"]["reasons"][0].as_str().unwrap().starts_with("provider: "));

    let source: Value = setup
        .app
        .post_json(
            "/admin/sources/",
            json!({"name": "Guides", "kind": "website",
                   "config": {"start_url": format!("{}/docs/", setup.site.base_url), "discovery": "sitemap"}}),
        )
        .await
        .json()
        .await
        .unwrap();
    let job = source["latest_job"]["id"].as_str().map(str::to_owned);
    let job = match job {
        Some(job) => job,
        None => {
            let synced: Value = setup
                .app
                .post_json(&format!("/admin/sources/{}/sync", source["id"].as_str().unwrap()), json!({}))
                .await
                .json()
                .await
                .unwrap();
            synced["id"].as_str().unwrap().to_owned()
        }
    };
    assert_eq!(finished(&setup.app, &job).await["status"], "succeeded");
    let added = setup
        .app
        .post_json(
            "/admin/providers/quick-add",
            json!({"kind": "llama_cpp", "endpoint": setup._llama.endpoint, "model": "smollm2-135m-instruct"}),
        )
        .await;
    assert_eq!(added.status(), 201);
    setup
}

impl Setup {
    /// `lore ask [--json] QUESTION` on the app's data directory: (success, stdout, stderr).
    async fn lore_ask(&self, question: &str, json: bool) -> (bool, String, String) {
        let mut args = vec!["ask"];
        args.extend(json.then_some("--json"));
        args.push(question);
        self.lore(&args).await
    }

    /// `lore ARGS…` on the app's data directory: (success, stdout, stderr).
    async fn lore(&self, args: &[&str]) -> (bool, String, String) {
        // Not std's blocking call: the app serves on this test's runtime.
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_lore"));
        for (name, _) in std::env::vars() {
            if name.starts_with("LORE_") {
                command.env_remove(name);
            }
        }
        let output = command
            .env("LORE_DATA_DIR", self.app.data_dir.path())
            .env("LORE_MODELS__DIR", super::helpers::models_dir())
            .args(args)
            .output()
            .await
            .unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Binds the one target (SmolLM2) to the escalation role too.
    async fn bind_escalation(&self) {
        let overview: Value = self.app.get("/admin/providers/").await.json().await.unwrap();
        let target = overview["targets"][0]["id"].as_str().unwrap().to_owned();
        let bound = self
            .app
            .client
            .put(self.app.url("/admin/roles/escalation"))
            .json(&json!({"target_id": target}))
            .send()
            .await
            .unwrap();
        assert_eq!(bound.status(), 200);
    }

    /// Asks through the widget key, from a page of its origin.
    async fn ask_from_page(&self, question: &str, accept: &str) -> reqwest::Response {
        reqwest::Client::new()
            .post(self.app.url("/answer"))
            .header("x-api-key", &self.widget_key)
            .header("origin", "https://docs.example.com")
            .header("accept", accept)
            .json(&json!({ "question": question }))
            .send()
            .await
            .unwrap()
    }

    async fn ask(&self, question: &str) -> reqwest::Response {
        reqwest::Client::new()
            .post(self.app.url("/answer"))
            .header("x-api-key", &self.key)
            .json(&json!({ "question": question }))
            .send()
            .await
            .unwrap()
    }

    /// A new profile version whose answers are made as `composition` says:
    /// `generated`, in the model's own words (SmolLM2, small and on this
    /// node, quotes by default), judged by the grounding check statement by
    /// statement; `auto` to quote again.
    async fn compose(&self, composition: &str) {
        self.save_version(composition, |snapshot| {
            assert_ne!(snapshot["behavior"]["composition"], composition, "{snapshot:#}");
            snapshot["behavior"]["composition"] = composition.into();
        })
        .await;
    }

    /// A new active profile version: the active one as `change` leaves it.
    async fn save_version(&self, note: &str, change: impl FnOnce(&mut Value)) {
        let overview: Value = self.app.get("/admin/profile").await.json().await.unwrap();
        let mut snapshot = overview["active"]["snapshot"].clone();
        change(&mut snapshot);
        let base = overview["active"]["version"].clone();
        let saved = self
            .app
            .post_json(
                "/admin/profile/versions",
                json!({"base_version": base, "snapshot": snapshot, "note": note}),
            )
            .await;
        assert_eq!(saved.status(), 201, "{:?}", saved.text().await);
    }

    async fn answer(&self, question: &str) -> Value {
        let response = self.ask(question).await;
        assert_eq!(response.status(), 200, "{question}");
        response.json().await.unwrap()
    }

    /// A second source, unrelated to the site (an uploaded canteen menu),
    /// indexed: Lore stays answerable when the site's source is disabled.
    async fn add_canteen(&self) {
        let menu: Value = self
            .app
            .post_json("/admin/sources/", json!({"name": "Canteen", "kind": "upload"}))
            .await
            .json()
            .await
            .unwrap();
        let menu = menu["id"].as_str().unwrap().to_owned();
        let form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(b"# Canteen\n\nSoup on Mondays, curry on Fridays.\n".to_vec())
                .file_name("menu.md"),
        );
        let received = self
            .app
            .client
            .post(self.app.url(&format!("/admin/sources/{menu}/files")))
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(received.status(), 202);
        let receipts: Value = received.json().await.unwrap();
        assert_eq!(
            finished(&self.app, receipts[0]["job"]["id"].as_str().unwrap()).await["status"],
            "succeeded"
        );
    }
}

fn stage<'a>(answer: &'a Value, name: &str) -> Option<&'a Value> {
    answer["trace"]["stages"].as_array().unwrap().iter().find(|s| s["stage"] == name)
}

async fn gaps(app: &TestApp) -> Vec<(String, i64)> {
    engine::answer::runs::gaps(&app.lore, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|g| (g.question, g.count))
        .collect()
}

#[tokio::test]
async fn answers_cite_the_right_page_refusals_are_gaps_and_ungrounded_output_is_caught() {
    let s = setup().await;

    // Answerable: the answer cites guide 4's page.
    let answered = s.answer("What does guide 4 explain?").await;
    assert_eq!(answered["refused"], false, "{answered:#}");
    let page_4 = format!("{}/docs/page-4", s.site.base_url);
    assert!(
        answered["citations"].as_array().unwrap().iter().any(|c| c["url"] == page_4.as_str()),
        "{answered:#}"
    );
    // SmolLM2 (135M parameters, on this node) answers in quotes by default:
    // the passages' own sentences, as it chose them.
    assert_eq!(stage(&answered, "grounding").unwrap()["decision"], "quoted", "{answered:#}");
    assert!(
        stage(&answered, "prompt").unwrap()["reason"].as_str().unwrap().contains("quote"),
        "{answered:#}"
    );
    assert_eq!(answered["cache"]["status"], "miss");
    assert!(answered["trace"]["usage"]["output_tokens"].as_u64().unwrap() > 0);
    // Each statement carries its citation and the span of that passage
    // that says it: the passage's own text at the offsets given.
    let statements = answered["statements"].as_array().unwrap();
    assert!(!statements.is_empty(), "{answered:#}");
    let query = json!({"query": "What does guide 4 explain?", "top_k": 50});
    let (status, retrieved) = keyed(&s.app, &s.key, "/retrieve", query, "application/json").await;
    assert_eq!(status, 200, "{retrieved}");
    let retrieved: Value = serde_json::from_str(&retrieved).unwrap();
    for statement in statements {
        let citation =
            answered["citations"].as_array().unwrap().iter().find(|c| c["index"] == statement["citation"]);
        let chunk = citation.and_then(|c| {
            retrieved["results"].as_array().unwrap().iter().find(|r| r["chunk_id"] == c["chunk_id"])
        });
        let chunk = chunk.unwrap_or_else(|| panic!("{statement:#} cites a retrieved passage: {answered:#}"));
        let support = &statement["support"];
        let (start, end) =
            (support["start"].as_u64().unwrap() as usize, support["end"].as_u64().unwrap() as usize);
        let at: String = chunk["text"].as_str().unwrap().chars().skip(start).take(end - start).collect();
        assert_eq!(at, support["quote"].as_str().unwrap(), "{statement:#}");
        // Quoted: each statement is a sentence of its passage, verbatim.
        let collapse = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        let said = collapse(statement["text"].as_str().unwrap());
        let said = said.trim_end_matches('.').trim_end();
        assert!(collapse(chunk["text"].as_str().unwrap()).contains(said), "{said:?} is verbatim: {chunk:#}");
    }
    assert_eq!(answered["related"], json!([]), "an answer lists no maybe-related passages");

    // Nothing retrievable: refused before any model call, counted as a gap.
    let nothing = s.answer("Zyxwv qrstu plokm?").await;
    assert_eq!(nothing["refused"], true, "{nothing:#}");
    assert!(stage(&nothing, "generation").is_none(), "no model call: {nothing:#}");
    assert_eq!(nothing["trace"]["usage"]["output_tokens"], 0);
    let _ = s.answer("Zyxwv  qrstu plokm").await;
    assert!(gaps(&s.app).await.contains(&("zyxwv qrstu plokm".to_owned(), 2)), "{:?}", gaps(&s.app).await);

    // In its own words SmolLM2 makes up an answer (quoting, it copies guide
    // 2's sentence about backups): the grounding check catches it; with no
    // escalation target the question is refused, and the trace says why.
    s.compose("generated").await;
    let made_up = s.answer("How do I back up the database?").await;
    assert_eq!(made_up["refused"], true, "{made_up:#}");
    // SmolLM2 runs on this node: its ungrounded reply is its own funnel row.
    assert_eq!(stage(&made_up, "grounding").unwrap()["decision"], "ungrounded_on_node", "{made_up:#}");
    // Its reason is a bounded summary; every statement judged is in the detail.
    let grounding = stage(&made_up, "grounding").unwrap();
    let (reason, detail) = (grounding["reason"].as_str().unwrap(), grounding["detail"].as_str().unwrap());
    assert!(
        reason.chars().count() <= 1_501 && detail.starts_with(reason.lines().next().unwrap()),
        "{grounding:#}"
    );
    assert_eq!(stage(&made_up, "escalation").unwrap()["decision"], "unbound");
    // The refusal still helps: the closest passages found, each with its
    // sentence closest to the question, apart from any citation.
    let related = made_up["related"].as_array().unwrap();
    assert!((1..=3).contains(&related.len()), "{made_up:#}");
    for passage in related {
        assert!(passage["title"].is_string() && passage["url"].is_string(), "{passage:#}");
        assert!(!passage["sentence"]["quote"].as_str().unwrap().is_empty(), "{passage:#}");
    }
    assert_eq!((made_up["citations"].clone(), made_up["statements"].clone()), (json!([]), json!([])));
    // A refusal is never cached as an answer: the next asker's run misses
    // the cache and gets the same help.
    let again = s.answer("How do I back up the database?").await;
    assert_eq!((&again["refused"], &again["cache"]["status"]), (&json!(true), &json!("miss")), "{again:#}");
    assert_eq!(again["related"], made_up["related"], "{again:#}");

    // With an escalation target bound, an ungrounded answer is escalated
    // (SmolLM2 again, in its own words: the stage shows it ran and what it
    // cost).
    s.bind_escalation().await;
    let escalated = s.answer("How do I back up the database, step by step?").await;
    let escalation = stage(&escalated, "escalation").unwrap();
    assert!(
        matches!(escalation["decision"].as_str(), Some("tier1_grounded" | "tier1_ungrounded")),
        "{escalated:#}"
    );
    assert!(escalation["cost_usd"].is_number(), "{escalated:#}");
    s.compose("auto").await;

    // Every run reached the Dashboard's rollups, read back through
    // POST /admin/observability/.
    let dashboard: Value =
        s.app.post_json("/admin/observability/", json!({"hours": 1})).await.json().await.unwrap();
    assert_eq!(dashboard["totals"]["queries"], 6, "{dashboard:#}");
    let funnel = dashboard["funnel"].as_array().unwrap();
    let row =
        |stage: &str, decision: &str| funnel.iter().any(|f| f["stage"] == stage && f["decision"] == decision);
    assert!(
        row("generation", "answered_on_node") && row("grounding", "ungrounded_on_node"),
        "an on-node model's answers and ungrounded replies are rows of their own: {dashboard:#}"
    );
    assert!(dashboard["totals"]["refusals"].as_i64().unwrap() >= 3, "{dashboard:#}");
    assert_eq!(dashboard["keys"][0]["name"], "backend");
    assert_eq!(dashboard["keys"][0]["queries"], 6);
    let gaps = dashboard["content_gaps"].as_array().unwrap();
    assert!(gaps.iter().any(|g| g["query"] == "zyxwv qrstu plokm" && g["count"] == 2), "{dashboard:#}");
    let groups = dashboard["gap_groups"].as_array().unwrap();
    assert!(
        groups.iter().any(|g| g["label"] == "zyxwv qrstu plokm" && g["count"].as_i64() >= Some(2)),
        "{dashboard:#}"
    );
    let funnel = dashboard["funnel"].as_array().unwrap();
    assert!(funnel
        .iter()
        .any(|f| f["stage"] == "escalation" && f["decision"] == "unbound" && f["count"] == 2));
    assert!(funnel
        .iter()
        .any(|f| f["stage"] == "retrieval" && f["decision"] == "nothing" && f["count"] == 2));
    for bad in [
        json!({"hours": 0}),
        json!({"from": "yesterday"}),
        json!({"hours": 2, "from": "2026-11-01T00:00:00Z"}),
    ] {
        let refused = s.app.post_json("/admin/observability/", bad.clone()).await;
        assert_eq!(refused.status(), 422, "{bad}");
    }

    // Each API run is recorded server-side with what the Dashboard needs.
    let runs = engine::entities::answer_run::Entity::find().all(&s.app.lore.db).await.unwrap();
    let answered_run = runs.iter().find(|r| r.id == answered["trace"]["id"].as_str().unwrap()).unwrap();
    assert_eq!(answered_run.surface, "api");
    assert_eq!(answered_run.key_id.as_deref(), Some(dashboard["keys"][0]["key_id"].as_str().unwrap()));
    assert_eq!((answered_run.profile_version, answered_run.cache_status.as_str()), (1, "miss"));
    assert!(!answered_run.refused && answered_run.grounded && answered_run.output_tokens > 0);
    assert!(answered_run.latency_ms > 0.0);
    assert_eq!(answered_run.model.as_deref(), Some("smollm2-135m-instruct"));
    assert_eq!(answered_run.stages, answered["trace"]["stages"]);

    // A page's visitor, through the widget key, sees the trace's id and
    // its stages' names, decisions and durations; the rest is the admin's,
    // kept in the recorded run under the same id.
    let visited = s.ask_from_page("What does guide 2 explain?", "application/json").await;
    assert_eq!(visited.status(), 200);
    let visited: Value = visited.json().await.unwrap();
    let trace = &visited["trace"];
    assert!(trace["stages"].as_array().unwrap().len() >= 3, "{visited:#}");
    assert!(trace["stages"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["reason"] == "" && s.get("cost_usd").is_none() && s.get("detail").is_none()));
    assert_eq!((&trace["model"], &trace["retrieval"]), (&Value::Null, &json!([])), "{visited:#}");
    assert_eq!(
        (&trace["usage"]["input_tokens"], &trace["usage"]["estimated_cost_usd"]),
        (&json!(0), &json!(0.0))
    );
    s.app.lore.flush_writes().await;
    let kept = engine::entities::answer_run::Entity::find_by_id(trace["id"].as_str().unwrap())
        .one(&s.app.lore.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept.surface, "widget");
    let kept_stages = kept.stages.as_array().unwrap();
    assert_eq!(kept_stages.len(), trace["stages"].as_array().unwrap().len());
    assert!(kept_stages.iter().all(|s| !s["reason"].as_str().unwrap().is_empty()), "{:#}", kept.stages);

    // `lore ask` runs the same pipeline at the terminal, recorded as `cli`.
    let (ok, stdout, stderr) = s.lore_ask("What does guide 4 explain?", true).await;
    assert!(ok, "{stderr}");
    let asked: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(asked["refused"], false, "{asked:#}");
    assert!(asked["citations"].as_array().unwrap().iter().any(|c| c["url"] == page_4.as_str()), "{asked:#}");
    let cli_run = engine::entities::answer_run::Entity::find_by_id(asked["trace"]["id"].as_str().unwrap())
        .one(&s.app.lore.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((cli_run.surface.as_str(), cli_run.key_id.as_deref()), ("cli", None));

    // The Playground's profile-retrieval mode: the active version, its
    // resolved scope (the enabled sources) and what that scope retrieves.
    let profile: Value = s
        .app
        .post_json("/admin/playground/retrieval", json!({"query": "What does guide 4 explain?"}))
        .await
        .json()
        .await
        .unwrap();
    assert!(profile["profile_version"].as_i64().is_some(), "{profile:#}");
    let scope: Vec<&str> =
        profile["sources"].as_array().unwrap().iter().map(|pair| pair[1].as_str().unwrap()).collect();
    let hits = profile["results"]["results"].as_array().unwrap();
    assert!(hits.iter().any(|hit| hit["url"] == page_4.as_str()), "{profile:#}");
    assert!(
        !scope.is_empty() && hits.iter().all(|hit| scope.contains(&hit["source_id"].as_str().unwrap())),
        "every hit is of a source in the scope: {profile:#}"
    );

    // A cutoff just above the best passage's score: refused before any
    // model call, and the refusal still lists the nearest pages it dropped.
    let best = answered["trace"]["retrieval"][0]["score"].as_f64().unwrap();
    s.save_version("a cutoff nothing passes", |snapshot| {
        snapshot["retrieval"]["score_cutoff"] = (best + 0.01).into();
    })
    .await;
    let below = s.answer("What does guide 4 explain?").await;
    assert_eq!(below["refused"], true, "{below:#}");
    assert!(stage(&below, "generation").is_none(), "{below:#}");
    let listed: Vec<&str> =
        below["related"].as_array().unwrap().iter().filter_map(|r| r["url"].as_str()).collect();
    assert!(listed.contains(&page_4.as_str()), "{below:#}");

    // Retrieval failing closed → 503 retrieval_failing_closed.
    // A stamp from another embedding model (its name is the admin's to read).
    let stamp = engine::fingerprint::Fingerprint {
        embedding_model: "other/embedder-v9".into(),
        dimensions: 384,
        chunking: engine::chunk::ChunkingParams::default(),
    };
    engine::fingerprint::set(&s.app.lore.db, Some(&stamp)).await.unwrap();
    let closed = s.ask("What does guide 4 explain?").await;
    assert_eq!(closed.status(), 503);
    let closed: Value = closed.json().await.unwrap();
    assert_eq!(closed["error"]["code"], "retrieval_failing_closed");
    assert!(!closed.to_string().contains("embedder-v9"), "the models are the admin's to know: {closed}");
    let retrieve = reqwest::Client::new()
        .post(s.app.url("/retrieve"))
        .header("x-api-key", &s.key)
        .json(&json!({"query": "guide 4"}))
        .send()
        .await
        .unwrap();
    assert_eq!(retrieve.status(), 503);
    assert_eq!(retrieve.json::<Value>().await.unwrap()["error"]["code"], "retrieval_failing_closed");
    let admin: Value = s
        .app
        .post_json("/admin/playground/answer", json!({"question": "What does guide 4 explain?"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(admin["error"]["code"], "retrieval_failing_closed");
    assert!(
        admin["error"]["message"].as_str().unwrap().contains("embedder-v9"),
        "the admin learns why: {admin}"
    );
    let profile = s.app.post_json("/admin/playground/retrieval", json!({"query": "guide 4"})).await;
    assert_eq!(profile.status(), 503, "profile retrieval fails closed too");
    assert_eq!(profile.json::<Value>().await.unwrap()["error"]["code"], "retrieval_failing_closed");
    // So does the operator at the terminal, in the API's error body under --json.
    let (ok, stdout, stderr) = s.lore_ask("What does guide 4 explain?", true).await;
    assert!(!ok, "{stdout}");
    let failed: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("not JSON: {stdout}\n{stderr}"));
    assert_eq!(failed["error"]["code"], "retrieval_failing_closed", "{failed}");
    assert!(failed["error"]["message"].as_str().unwrap().contains("embedder-v9"), "{failed}");
}

#[tokio::test]
async fn the_cache_hits_for_the_same_or_a_close_question_and_invalidates_itself() {
    let s = setup().await;
    // Priced, so the run has a cost and a hit on it a saving.
    let overview: Value = s.app.get("/admin/providers/").await.json().await.unwrap();
    let target = overview["targets"][0]["id"].as_str().unwrap().to_owned();
    let priced = s
        .app
        .client
        .patch(s.app.url(&format!("/admin/targets/{target}")))
        .json(&json!({"input_price_per_mtok": 1.0, "output_price_per_mtok": 2.0}))
        .send()
        .await
        .unwrap();
    assert_eq!(priced.status(), 200);
    let question = "What does guide 4 explain?";
    let first = s.answer(question).await;
    assert_eq!(first["refused"], false, "{first:#}");
    assert_eq!(first["cache"]["status"], "miss");
    let cost = first["trace"]["usage"]["estimated_cost_usd"].as_f64().unwrap();
    assert!(cost > 0.0, "{first:#}");

    // The same question (normalised) → exact hit, no model call; the
    // Dashboard counts what it saved: the cost of the answer it reused.
    let again = s.answer("  what does Guide 4 explain ").await;
    assert_eq!(again["cache"]["status"], "hit", "{again:#}");
    assert_eq!(again["cache"]["kind"], "exact");
    assert!(stage(&again, "generation").is_none());
    assert_eq!(again["answer"], first["answer"]);
    assert_eq!(again["trace"]["usage"]["estimated_cost_usd"], 0.0);
    let dashboard: Value =
        s.app.post_json("/admin/observability/", json!({"hours": 1})).await.json().await.unwrap();
    let totals = &dashboard["totals"];
    assert_eq!(
        (totals["queries"].as_i64(), totals["cache_hits"].as_i64()),
        (Some(2), Some(1)),
        "{dashboard:#}"
    );
    assert!((totals["estimated_savings_usd"].as_f64().unwrap() - cost).abs() < 1e-12, "{dashboard:#}");
    assert!((totals["estimated_spend_usd"].as_f64().unwrap() - cost).abs() < 1e-12, "{dashboard:#}");

    // A close paraphrase above the gate → semantic hit, with its similarity.
    let close = s.answer("What does guide number 4 explain?").await;
    assert_eq!(close["cache"]["status"], "hit", "{close:#}");
    assert_eq!(close["cache"]["kind"], "semantic");
    let similarity = close["cache"]["similarity"].as_f64().unwrap();
    let gate =
        f64::from(engine::profile::active(&s.app.lore).await.unwrap().unwrap().snapshot.cache.min_similarity);
    assert!(similarity >= gate, "{similarity} >= {gate}");

    // Below the gate → miss, and the trace says how near it came.
    let far = s.answer("How many items are on the checklist of guide 4?").await;
    assert_eq!(far["cache"]["status"], "miss", "{far:#}");
    assert!(stage(&far, "semantic_cache").unwrap()["reason"].as_str().unwrap().contains("below the gate"));

    // Another version was active since → the entries made before it was
    // restored never serve, even under the same version number.
    let overview: Value = s.app.get("/admin/profile").await.json().await.unwrap();
    let active = overview["active"]["version"].as_i64().unwrap();
    let app = &s.app;
    // A new version that writes the same answers (its prompt and retrieval
    // unchanged), so that only the version can make the difference.
    let save = |note: &'static str, min_similarity: f64| {
        let mut snapshot = overview["active"]["snapshot"].clone();
        snapshot["cache"]["min_similarity"] = min_similarity.into();
        async move {
            let base = engine::profile::active(&app.lore).await.unwrap().unwrap().version;
            let saved = app
                .post_json(
                    "/admin/profile/versions",
                    json!({"base_version": base, "snapshot": snapshot, "note": note}),
                )
                .await;
            assert_eq!(saved.status(), 201, "{:?}", saved.text().await);
        }
    };
    save("a looser gate", 0.91).await;
    let restored = s
        .app
        .post_json(
            &format!("/admin/profile/versions/{active}/restore"),
            json!({"expected_active": active + 1}),
        )
        .await;
    assert_eq!(restored.status(), 200);
    let after_restore = s.answer(question).await;
    assert_eq!(after_restore["cache"]["status"], "miss", "{after_restore:#}");
    assert_eq!(after_restore["profile_version"], active);
    assert!(
        stage(&after_restore, "exact_cache").unwrap()["reason"]
            .as_str()
            .unwrap()
            .contains("last made active"),
        "{after_restore:#}"
    );

    // A new profile version → entries of the old one never serve.
    let cached_again = s.answer(question).await;
    assert_eq!(cached_again["cache"]["status"], "hit", "{cached_again:#}");
    save("a looser gate still", 0.9).await;
    let under_new_version = s.answer(question).await;
    assert_eq!(under_new_version["cache"]["status"], "miss", "{under_new_version:#}");
    assert_eq!(under_new_version["profile_version"], active + 2);

    // The maximum age follows the cited source's volatility as set now: an
    // 8 s gate keeps a medium source's answer 8 s, a high one's 2 s.
    let source = s.app.get("/admin/sources/").await.json::<Value>().await.unwrap()[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let put = |path: String, body: Value| s.app.client.put(s.app.url(&path)).json(&body).send();
    let volatility = |level: &'static str| {
        put(format!("/admin/sources/{source}/volatility"), json!({"volatility": level}))
    };
    let tuned = put("/admin/tuning".into(), json!({"cache_max_age_seconds": 8})).await.unwrap();
    assert_eq!(tuned.status(), 200);
    let fresh = s.answer(question).await;
    assert_eq!(fresh["cache"]["status"], "miss", "{fresh:#}");
    let hit = s.answer(question).await;
    assert_eq!(hit["cache"]["status"], "hit", "{hit:#}");
    assert_eq!(volatility("high").await.unwrap().status(), 200);
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let aged = s.answer(question).await;
    assert_eq!(aged["cache"]["status"], "miss", "{aged:#}");
    assert!(
        stage(&aged, "exact_cache").unwrap()["reason"]
            .as_str()
            .unwrap()
            .contains("older than its 2 s maximum age"),
        "{aged:#}"
    );

    // The cited page changes and is re-synced → the entry is invalid, here
    // found by a close paraphrase on the semantic path (a static source's
    // answer lives 30 times the gate: only the change ends it).
    assert_eq!(volatility("static").await.unwrap().status(), 200);
    s.site.change_page(4, "Guide number 4 now explains archiving old chat channels. Step one for guide 4: open the indigo panel.");
    let synced: Value =
        s.app.post_json(&format!("/admin/sources/{source}/sync"), json!({})).await.json().await.unwrap();
    assert_eq!(finished(&s.app, synced["id"].as_str().unwrap()).await["status"], "succeeded");
    let after_change = s.answer("What does guide number 4 explain?").await;
    assert_eq!(after_change["cache"]["status"], "miss", "{after_change:#}");
    let semantic = stage(&after_change, "semantic_cache").unwrap()["reason"].as_str().unwrap();
    assert!(
        semantic.contains("was invalid") && semantic.contains("changed or disappeared"),
        "{after_change:#}"
    );
}

#[tokio::test]
async fn streaming_sends_tokens_then_the_final_object_and_bad_input_gets_4xx() {
    let s = setup().await;
    let streamed = reqwest::Client::new()
        .post(s.app.url("/answer"))
        .header("x-api-key", &s.key)
        .header("accept", "text/event-stream")
        .json(&json!({"question": "What does guide 4 explain?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.status(), 200);
    assert!(streamed.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let body = streamed.text().await.unwrap();
    let events: Vec<(&str, &str)> = body
        .split("\n\n")
        .filter_map(|block| {
            let event = block.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((event, data))
        })
        .collect();
    let (last_event, last_data) = events.last().unwrap();
    assert_eq!(*last_event, "answer");
    let last: Value = serde_json::from_str(last_data).unwrap();
    let tokens: String = events
        .iter()
        .filter(|(e, _)| *e == "token")
        .map(|(_, d)| serde_json::from_str::<Value>(d).unwrap()["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(events.iter().filter(|(e, _)| *e == "token").count() > 1, "{body}");
    assert_eq!(tokens, last["answer"].as_str().unwrap());
    // Each stage as it ended, before any token: the trace, live.
    let first_token = events.iter().position(|(e, _)| *e == "token").unwrap();
    let live: Vec<Value> =
        events.iter().filter(|(e, _)| *e == "stage").map(|(_, d)| serde_json::from_str(d).unwrap()).collect();
    assert!(events[..first_token].iter().all(|(e, _)| *e == "stage"), "{body}");
    assert_eq!(Value::from(live), last["trace"]["stages"], "{body}");
    // The streamed run counts for its key, once it has ended (after the
    // setup's two refused requests).
    let mut counted = Value::Null;
    for _ in 0..50 {
        let keys: Value = s.app.get("/admin/keys").await.json().await.unwrap();
        let backend = keys.as_array().unwrap().iter().find(|k| k["name"] == "backend").unwrap();
        counted = backend["queries_7d"].clone();
        if counted == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(counted, 3);
    // Streamed to a page's visitor (now a cache hit): the stages, live, without their reasons.
    let visited = s.ask_from_page("What does guide 4 explain?", "text/event-stream").await;
    assert_eq!(visited.status(), 200);
    let body = visited.text().await.unwrap();
    let data: Vec<Value> = body
        .split("\n\n")
        .filter_map(|block| block.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    let (last, live) = data.split_last().unwrap();
    let live: Vec<&Value> = live.iter().filter(|d| d.get("stage").is_some()).collect();
    assert!(live.len() >= 3 && live.iter().all(|s| s["reason"] == ""), "{body}");
    assert_eq!(last["trace"]["model"], Value::Null, "{body}");

    let post = |body: String, content_type: &'static str| {
        reqwest::Client::new()
            .post(s.app.url("/answer"))
            .header("x-api-key", &s.key)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let cases = [
        (json!({"question": ""}).to_string(), "application/json", 422, "invalid_input"),
        (json!({"question": "x".repeat(200 * 1024)}).to_string(), "application/json", 422, "invalid_input"),
        (json!({"question": 42}).to_string(), "application/json", 422, "invalid_input"),
        (json!({"question": "hi", "colour": "red"}).to_string(), "application/json", 422, "invalid_input"),
        ("{\"question\":".to_owned(), "application/json", 400, "malformed_json"),
        ("question=hi".to_owned(), "application/x-www-form-urlencoded", 415, "unsupported_media_type"),
    ];
    for (body, content_type, status, code) in cases {
        let response = post(body.clone(), content_type).await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{}", &body[..body.len().min(60)]);
        assert_eq!(response.json::<Value>().await.unwrap()["error"]["code"], code);
    }

    // The OpenAPI document describes both public routes and the Dashboard's.
    let openapi: Value = s.app.get("/openapi.json").await.json().await.unwrap();
    assert_eq!(openapi["openapi"], "3.0.3");
    assert!(
        openapi["paths"]["/answer"]["post"].is_object() && openapi["paths"]["/retrieve"]["post"].is_object()
    );
    let observability = &openapi["paths"]["/admin/observability/"]["post"];
    assert_eq!(observability["security"][0]["adminSession"], json!([]), "{openapi:#}");
    assert!(openapi["components"]["schemas"]["ObservabilityResponse"]["properties"]["funnel"].is_object());
    assert!(
        openapi["components"]["schemas"]["AnswerResponse"]["properties"]["citations"].is_object(),
        "{openapi:#}"
    );
    // The bounds the handlers enforce are the ones documented.
    let schemas = &openapi["components"]["schemas"];
    assert_eq!(
        schemas["AnswerRequest"]["properties"]["question"]["maxLength"],
        engine::answer::MAX_QUESTION_CHARS
    );
    assert_eq!(
        schemas["RetrieveRequest"]["properties"]["query"]["maxLength"],
        engine::search::MAX_QUERY_CHARS
    );
    assert_eq!(schemas["RetrieveRequest"]["properties"]["top_k"]["maximum"], engine::retrieve::MAX_TOP_K);
    let retrieve_errors = openapi["paths"]["/retrieve"]["post"]["responses"].as_object().unwrap();
    assert!(!retrieve_errors["503"]["description"].as_str().unwrap().contains("not_answerable"));
    assert!(retrieve_errors.contains_key("413") && retrieve_errors.contains_key("405"));

    // POST /retrieve uses the active version's retrieval settings; a
    // request's top_k replaces only its top k.
    let overview: Value = s.app.get("/admin/profile").await.json().await.unwrap();
    let mut snapshot = overview["active"]["snapshot"].clone();
    snapshot["retrieval"]["top_k"] = 1.into();
    snapshot["retrieval"]["score_cutoff"] = 0.0.into();
    let saved = s
        .app
        .post_json(
            "/admin/profile/versions",
            json!({"base_version": overview["active"]["version"], "snapshot": snapshot, "note": "one passage"}),
        )
        .await;
    assert_eq!(saved.status(), 201, "{:?}", saved.text().await);
    let retrieve = |body: Value| {
        reqwest::Client::new().post(s.app.url("/retrieve")).header("x-api-key", &s.key).json(&body).send()
    };
    let results = |body: &Value| body["results"].as_array().unwrap().len();
    let by_profile: Value =
        retrieve(json!({"query": "What does guide 4 explain?"})).await.unwrap().json().await.unwrap();
    assert_eq!(results(&by_profile), 1, "{by_profile:#}");
    assert!(by_profile["trace"]["stages"][0]["reason"].as_str().unwrap().contains("cutoff 0.00, top 1"));
    let by_request: Value = retrieve(json!({"query": "What does guide 4 explain?", "top_k": 3}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(results(&by_request), 3, "{by_request:#}");
    let scores = &by_request["trace"]["retrieval"];
    assert_eq!(scores[0]["chunk_id"], by_request["results"][0]["chunk_id"]);
    assert!(scores[0]["vector_score"].is_number(), "{by_request:#}");
    assert!(schemas["ResultScores"]["properties"]["text_score"].is_object(), "typed in the document");
    let zero = retrieve(json!({"query": "guide 4", "top_k": 0})).await.unwrap();
    assert_eq!(zero.status(), 422);
    let over = retrieve(json!({"query": "guide 4", "top_k": engine::retrieve::MAX_TOP_K + 1})).await.unwrap();
    assert_eq!(over.status(), 422);
    assert_eq!(over.json::<Value>().await.unwrap()["error"]["code"], "invalid_input");

    // The model server goes away. A key's caller learns that the provider
    // did not answer, not where it lives; the Playground's admin sees why.
    let endpoint = s._llama.endpoint.clone();
    drop(s._llama);
    for _ in 0..100 {
        if reqwest::get(format!("{endpoint}/models")).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let public = reqwest::Client::new()
        .post(s.app.url("/answer"))
        .header("x-api-key", &s.key)
        .json(&json!({"question": "What does guide 7 explain?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(public.status(), 502);
    let public: Value = public.json().await.unwrap();
    assert_eq!(public["error"]["code"], "provider_unavailable", "{public}");
    assert!(!public.to_string().contains("127.0.0.1"), "{public}");
    let admin =
        s.app.post_json("/admin/playground/answer", json!({"question": "What does guide 8 explain?"})).await;
    assert_eq!(admin.status(), 502);
    let admin: Value = admin.json().await.unwrap();
    assert_eq!(admin["error"]["code"], "provider_unavailable");
    assert!(admin["error"]["message"].as_str().unwrap().contains("127.0.0.1"), "{admin}");

    // Streamed, the failure comes after the gate passed: the stream ends
    // with an error event in the same shape, and the same plain message.
    let streamed = reqwest::Client::new()
        .post(s.app.url("/answer"))
        .header("x-api-key", &s.key)
        .json(&json!({"question": "What does guide 9 explain?", "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.status(), 200);
    let body = streamed.text().await.unwrap();
    let last = body.trim_end().rsplit("\n\n").next().unwrap();
    assert!(last.starts_with("event: error"), "{body}");
    assert!(body.contains("\"decision\":\"failed\""), "the failed stage is streamed: {body}");
    let error: Value =
        serde_json::from_str(last.lines().find_map(|l| l.strip_prefix("data: ")).unwrap()).unwrap();
    assert_eq!(error["error"]["code"], "provider_unavailable");
    assert!(!body.contains(&endpoint), "{body}");

    // Each failed call is a run on the Dashboard: the outage shows in the funnel.
    let dashboard: Value =
        s.app.post_json("/admin/observability/", json!({"hours": 1})).await.json().await.unwrap();
    let failed = dashboard["funnel"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["stage"] == "generation" && f["decision"] == "failed")
        .cloned();
    assert_eq!(failed.map(|f| f["count"].clone()), Some(json!(3)), "{dashboard:#}");
}

/// The tool server's `answer` tool runs the same pipeline as `/answer`: it
/// cites the right page, is offered only to a key with its scope
/// (`answer`), and its run reaches the Dashboard as surface `mcp`.
#[tokio::test]
async fn the_answer_tool_over_mcp_cites_the_right_page_and_counts_as_surface_mcp() {
    let s = setup().await;
    for body in [
        json!({"operation": "add_role", "role": "assistant", "permission": {"super_user": false}}),
        json!({"operation": "add_user", "role": "assistant", "username": "assistant"}),
    ] {
        let response = s.app.client.post(s.app.url("/operation")).json(&body).send().await.unwrap();
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    }
    let key = |scopes: Value| {
        let app = &s.app;
        async move {
            let made: Value = app
                .post_json(
                    "/admin/keys",
                    json!({"name": "assistant", "kind": "secret", "scopes": scopes, "user": "assistant"}),
                )
                .await
                .json()
                .await
                .unwrap();
            made["raw_key"].as_str().unwrap().to_owned()
        }
    };
    let (answering, listing_only) = (key(json!(["mcp", "answer"])).await, key(json!(["mcp"])).await);
    let call = |key: String| {
        let url = s.app.url("/mcp");
        async move {
            let client = reqwest::Client::new();
            let post = |body: Value, session: Option<String>| {
                let mut request = client
                    .post(&url)
                    .header("x-api-key", &key)
                    .header("accept", "application/json, text/event-stream")
                    .json(&body);
                if let Some(session) = session {
                    request = request.header("mcp-session-id", session);
                }
                request.send()
            };
            let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
            let opened = post(init, None).await.unwrap();
            let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
            let ask = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "answer", "arguments": {"question": "What does guide 4 explain?"}}});
            let reply: Value = post(ask, Some(session.clone())).await.unwrap().json().await.unwrap();
            // The answer says how to rate it: the tool beside `answer`.
            let trace_id = reply["result"]["structuredContent"]["feedback"]["trace_id"].clone();
            let rating = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                "params": {"name": "rate_answer", "arguments": {"trace_id": trace_id, "helpful": false, "comment": "too short"}}});
            let rated: Value = post(rating, Some(session)).await.unwrap().json().await.unwrap();
            (reply, rated)
        }
    };

    // A key without the answer scope is not offered the tool: to it, there
    // is none.
    let (refused, not_rated) = call(listing_only).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused:#}");
    assert_eq!(refused["error"]["data"]["code"], "tool_not_found", "{refused:#}");
    assert_eq!(not_rated["error"]["data"]["code"], "tool_not_found", "{not_rated:#}");

    let (answered, rated) = call(answering).await;
    let answered = answered["result"].clone();
    assert_eq!(answered["structuredContent"]["feedback"]["tool"], "rate_answer", "{answered:#}");
    let rated = &rated["result"];
    assert_eq!(rated["isError"], false, "{rated:#}");
    assert_eq!(rated["structuredContent"]["helpful"], false, "{rated:#}");
    assert_eq!(rated["structuredContent"]["comment"], "too short", "{rated:#}");
    assert_eq!(answered["isError"], false, "{answered:#}");
    let answer = &answered["structuredContent"];
    assert_eq!(answer["refused"], false, "{answer:#}");
    let page_4 = format!("{}/docs/page-4", s.site.base_url);
    assert!(
        answer["citations"].as_array().unwrap().iter().any(|c| c["url"] == page_4.as_str()),
        "{answer:#}"
    );

    s.app.lore.flush_writes().await;
    let dashboard: Value =
        s.app.post_json("/admin/observability/", json!({"hours": 1})).await.json().await.unwrap();
    let mcp = dashboard["surfaces"].as_array().unwrap().iter().find(|s| s["surface"] == "mcp").cloned();
    assert_eq!(mcp.as_ref().map(|m| m["queries"].clone()), Some(json!(1)), "{dashboard:#}");
    assert_eq!(mcp.map(|m| (m["helpful"].clone(), m["unhelpful"].clone())), Some((json!(0), json!(1))));
}

/// SQLite's limits, in its documentation's own words (`limits.html`), as
/// two pages of the site: the page the issue's wrong answer came from.
const ATTACHED_DATABASES: &str = "Maximum Number Of Attached Databases. The ATTACH statement is an SQLite \
    extension that allows two or more databases to be associated to the same database connection and to \
    operate as if they were a single database. The number of simultaneously attached databases is limited to \
    SQLITE_MAX_ATTACHED which is set to 10 by default. The maximum number of attached databases cannot be \
    increased above 125. The maximum number of attached databases can be lowered at run-time using the \
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, size) interface.";
const PAGES_AND_ROWS: &str = "Maximum Number Of Pages In A Database File. SQLite is able to limit the size of \
    a database file to prevent the database file from growing too large and consuming too much disk space. The \
    SQLITE_MAX_PAGE_COUNT parameter, which is normally set to 1073741823, is the maximum number of pages \
    allowed in a single database file. The largest possible setting for SQLITE_MAX_PAGE_COUNT is 4294967294. \
    When used with the maximum page size of 65536, this gives a maximum SQLite database size of about 281 \
    terabytes. Maximum Number Of Rows In A Table. The theoretical maximum number of rows in a table is 2 64 \
    (18446744073709551616 or about 1.8e+19). This limit is unreachable since the maximum database size of 281 \
    terabytes will be reached first.";

/// The runs of digits of `text`, citation markers aside.
fn figures(text: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        plain.push_str(&rest[..open]);
        match rest[open..].find(']') {
            Some(close)
                if rest[open + 1..open + close]
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == ',' || c == ' ') =>
            {
                rest = &rest[open + close + 1..];
            }
            _ => {
                plain.push('[');
                rest = &rest[open + 1..];
            }
        }
    }
    plain.push_str(rest);
    plain.split(|c: char| !c.is_ascii_digit()).filter(|d| !d.is_empty()).map(str::to_owned).collect()
}

#[tokio::test]
async fn an_answer_stating_a_figure_its_passage_does_not_bind_is_never_served() {
    let s = setup_with(crawls_loopback, |site| {
        site.change_page(11, ATTACHED_DATABASES);
        site.change_page(12, PAGES_AND_ROWS);
    })
    .await;
    s.compose("generated").await;
    // Each question with every figure its pages state.
    let attached = ["10", "125"];
    let pages = ["1073741823", "4294967294", "65536", "281"];
    let rows = ["2", "64", "18446744073709551616", "1", "8", "19", "281"];
    let questions: [(&str, &[&str]); 5] = [
        ("What is the maximum number of attached databases?", &attached),
        ("How many databases can be attached by default?", &attached),
        ("What is the maximum number of pages in a database file?", &pages),
        ("What is the largest page size of an SQLite database?", &pages),
        ("What is the maximum number of rows in a table?", &rows),
    ];
    let mut caught = Vec::new();
    for (question, stated) in questions {
        let answered = s.answer(question).await;
        let grounding = stage(&answered, "grounding").cloned().unwrap_or(Value::Null);
        let text = answered["answer"].as_str().unwrap_or_default();
        if answered["refused"] == false {
            // Served: every figure in it is one the pages state for it.
            let invented: Vec<String> =
                figures(text).into_iter().filter(|f| !stated.contains(&f.as_str())).collect();
            assert!(invented.is_empty(), "served {invented:?} the pages do not state: {answered:#}");
            assert_eq!(answered["grounded"], true);
        } else if grounding["decision"] == "ungrounded_on_node" {
            let reason = grounding["reason"].as_str().unwrap_or_default();
            if reason.contains("(not in the passage)")
                || reason.contains("(not near the statement's other words)")
            {
                caught.push(reason.to_owned());
            }
            // Refused, with no escalation target bound; the trace says which
            // statement, which passage, what matched and what did not.
            assert!(reason.contains("unsupported \u{ab}"), "{reason}");
            assert!(reason.contains(" vs ["), "{reason}");
            assert_eq!(stage(&answered, "escalation").unwrap()["decision"], "unbound");
        }
    }
    // SmolLM2 (deterministic at temperature 0) states a figure the pages do
    // not bind for at least one of these; the check caught it.
    assert!(!caught.is_empty(), "no wrong figure was caught, so the check was not exercised");
}

/// Every statement the grounding check passes is narrow: each goes to the
/// second opinion.
fn every_pass_is_narrow(settings: &mut engine::Settings) {
    crawls_loopback(settings);
    settings.answer.verification_margin = 1.0;
}

#[tokio::test]
async fn a_narrow_pass_is_put_to_the_escalation_target_and_its_cost_is_in_the_trace_and_funnel() {
    let s = setup_with(every_pass_is_narrow, |_| {}).await;

    // No escalation target: no judge; the stage says so, the lexical
    // judgement stands and the answer is served.
    let unjudged = s.answer("What does guide 4 explain?").await;
    assert_eq!(stage(&unjudged, "grounding").unwrap()["decision"], "quoted", "{unjudged:#}");
    assert_eq!(stage(&unjudged, "verification").unwrap()["decision"], "no_judge", "{unjudged:#}");
    assert_eq!(unjudged["refused"], false);

    // SmolLM2 bound for escalation judges: the stage names it, says what it
    // found for each statement, and carries what the calls cost.
    s.bind_escalation().await;
    // The first of these SmolLM2 answers so that the check passes it (the
    // guide 4 answer is cached now, and judged answers are not).
    let mut judged = Value::Null;
    for n in [5, 6, 7, 8, 9, 10, 11, 12] {
        let answered = s.answer(&format!("What does guide {n} explain?")).await;
        if stage(&answered, "grounding").unwrap()["decision"] == "quoted" {
            judged = answered;
            break;
        }
    }
    assert!(judged.is_object(), "SmolLM2 answered none of the guides so that the check passed it");
    let verification = stage(&judged, "verification").unwrap();
    assert!(
        matches!(verification["decision"].as_str(), Some("confirmed" | "rejected" | "unclear")),
        "{judged:#}"
    );
    let reason = verification["reason"].as_str().unwrap();
    assert!(reason.starts_with("smollm2-135m-instruct judged "), "{reason}");
    assert!(reason.contains(" vs ["), "each statement and its passage: {reason}");
    assert!(verification["cost_usd"].is_number(), "{judged:#}");

    // The funnel counts the stage's decisions.
    let dashboard: Value =
        s.app.post_json("/admin/observability/", json!({"hours": 1})).await.json().await.unwrap();
    let funnel = dashboard["funnel"].as_array().unwrap();
    assert!(
        funnel.iter().any(|f| f["stage"] == "verification" && f["decision"] == "no_judge"),
        "{dashboard:#}"
    );
    assert!(
        funnel.iter().any(|f| f["stage"] == "verification" && f["decision"] == verification["decision"]),
        "{dashboard:#}"
    );
}

async fn audited(app: &TestApp, action: &str) -> usize {
    app.lore.flush_writes().await;
    entity::audit_log::Entity::find()
        .all(&app.lore.db)
        .await
        .unwrap()
        .into_iter()
        .filter(|entry| entry.action == action)
        .count()
}

#[tokio::test]
async fn the_eval_gate_keeps_a_version_that_refuses_everything_inactive_until_activated_anyway() {
    let s = setup().await;
    let profile: Value = s.app.get("/admin/profile").await.json().await.unwrap();
    let first = profile["active"]["version"].as_i64().unwrap();
    let snapshot = profile["active"]["snapshot"].clone();

    // Nothing to run yet: a clear error.
    let nothing = s.app.post_json("/admin/profile/evals", json!({})).await;
    assert_eq!(nothing.status(), 422);
    assert_eq!(nothing.json::<Value>().await.unwrap()["error"]["code"], "invalid_input");

    // The golden set: questions the site answers, and one it cannot.
    for body in [
        json!({"question": "What does guide 4 explain?"}),
        json!({"question": "What does guide 6 explain?", "origin": "playground"}),
        json!({"question": "Zyxwv qrstu plokm?", "should_refuse": true, "origin": "dashboard"}),
    ] {
        let added = s.app.post_json("/admin/golden", body.clone()).await;
        assert_eq!(added.status(), 201, "{body}: {:?}", added.text().await);
    }
    // Bad golden questions are refused with a stable code and store nothing.
    for (body, code) in [
        (json!({"question": "  "}), "invalid_input"),
        (json!({"question": "Q?", "should_refuse": true, "expected_facts": ["x"]}), "invalid_input"),
        (json!({"question": "Q?", "expected_source": "no-such-source"}), "invalid_input"),
        (json!({"question": "Q?", "origin": "elsewhere"}), "invalid_input"),
    ] {
        let refused = s.app.post_json("/admin/golden", body.clone()).await;
        assert_eq!(refused.status(), 422, "{body}");
        assert_eq!(refused.json::<Value>().await.unwrap()["error"]["code"], code, "{body}");
    }
    let gone = s.app.client.delete(s.app.url("/admin/golden/nope")).send().await.unwrap();
    assert_eq!(gone.status(), 404);
    assert_eq!(gone.json::<Value>().await.unwrap()["error"]["code"], "golden_question_not_found");
    let set: Value = s.app.get("/admin/golden").await.json().await.unwrap();
    assert_eq!(set.as_array().unwrap().len(), 3, "{set:#}");

    // A version that refuses every question (nothing passes its cutoff):
    // stored, evaluated beside the active one, and kept inactive.
    let mut refusing = snapshot.clone();
    refusing["retrieval"]["score_cutoff"] = json!(1.0);
    let saved = s
        .app
        .post_json(
            "/admin/profile/versions",
            json!({"base_version": first, "snapshot": refusing, "note": "refuse all"}),
        )
        .await;
    assert_eq!(saved.status(), 201);
    let held: Value = saved.json().await.unwrap();
    assert_eq!(held["active"], false, "{held:#}");
    let gate = &held["evals"]["gate"];
    assert_eq!(gate["passed"], false, "{held:#}");
    assert_eq!(gate["baseline_version"], first);
    assert!(gate["regressions"][0].as_str().unwrap().contains("right"), "{gate:#}");
    assert_eq!(held["evals"]["totals"]["wrongly_refused"], 2, "{held:#}");
    assert_eq!(held["evals"]["totals"]["correct"], 1, "the nonsense question is refused rightly: {held:#}");
    assert!(gate["baseline"]["correct"].as_u64().unwrap() > 1, "{gate:#}");
    let held_version = held["version"].as_i64().unwrap();
    // The active version still serves, and its eval score is on Readiness.
    let served = s.answer("What does guide 4 explain?").await;
    assert_eq!(served["profile_version"], first, "{served:#}");
    assert_eq!(served["refused"], false, "{served:#}");
    let readiness: Value = s.app.get("/admin/setup-state/").await.json().await.unwrap();
    assert_eq!(readiness["active_evals"]["questions"], 3, "{readiness:#}");
    assert_eq!(readiness["active_evals"]["correct"], gate["baseline"]["correct"], "{readiness:#}");
    // Eval runs are not recorded: the Dashboard counts the one question asked.
    let dashboard: Value =
        s.app.post_json("/admin/observability/", json!({"hours": 1})).await.json().await.unwrap();
    assert_eq!(dashboard["totals"]["queries"], 1, "{dashboard:#}");

    // A neutral change (a cache gate; the answers are the same) passes.
    let mut neutral = snapshot.clone();
    neutral["cache"]["min_similarity"] = json!(0.93);
    let passed: Value = s
        .app
        .post_json("/admin/profile/versions", json!({"base_version": first, "snapshot": neutral}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(passed["active"], true, "{passed:#}");
    assert_eq!(passed["evals"]["gate"]["passed"], true, "{passed:#}");
    let neutral_version = passed["version"].as_i64().unwrap();

    // Restoring the held version needs "activate anyway"; that is recorded.
    let restore_path = format!("/admin/profile/versions/{held_version}/restore");
    let restore = |anyway: bool| {
        s.app.post_json(&restore_path, json!({"expected_active": neutral_version, "anyway": anyway}))
    };
    let refused = restore(false).await;
    assert_eq!(refused.status(), 409);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["error"]["code"], "eval_regression", "{refused:#}");
    assert_eq!(refused["error"]["details"]["version"], held_version);
    assert_eq!(engine::profile::active(&s.app.lore).await.unwrap().unwrap().version as i64, neutral_version);
    assert_eq!(audited(&s.app, "profile.activated_anyway").await, 0);
    let activated = restore(true).await;
    assert_eq!(activated.status(), 200);
    let activated: Value = activated.json().await.unwrap();
    assert_eq!(activated["active"], true);
    assert_eq!(
        activated["evals"]["gate"]["activated_anyway"]["by"].as_str().map(|b| !b.is_empty()),
        Some(true)
    );
    assert_eq!(audited(&s.app, "profile.activated_anyway").await, 1);
    let now = s.answer("What does guide 4 explain?").await;
    assert_eq!((now["refused"].as_bool(), now["profile_version"].as_i64()), (Some(true), Some(held_version)));

    // At the terminal: the active (refusing) version answers as it did at
    // its last eval: nothing got worse, exit 0.
    let (ok, stdout, stderr) = s.lore(&["evals", "run"]).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("Version {held_version}: 1 of 3 right")), "{stdout}");
    // Version `first`, evaluated now, against its last eval (as the gate's
    // baseline): the same answers, exit 0, JSON on request.
    let (ok, stdout, stderr) = s.lore(&["evals", "run", "--json", "--version", &first.to_string()]).await;
    assert!(ok, "{stdout}\n{stderr}");
    let ran: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(ran["version"], first);
    assert_eq!(ran["regressions"], json!([]));
    // The guides go (disabled), an unrelated page stays: version `first`
    // now refuses the questions it answered at its last eval, and the
    // terminal says so with a non-zero exit and the stable code.
    s.add_canteen().await;
    let guides = s.app.get("/admin/sources/").await.json::<Value>().await.unwrap();
    let guides = guides.as_array().unwrap().iter().find(|g| g["name"] == "Guides").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let disabled = s.app.post_json(&format!("/admin/sources/{guides}/disable"), json!({})).await;
    assert_eq!(disabled.status(), 200, "{:?}", disabled.text().await);
    let (ok, stdout, stderr) = s.lore(&["evals", "run", "--json", "--version", &first.to_string()]).await;
    let failed: Value = serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("{stdout}\n{stderr}"));
    assert!(!ok, "{failed:#}");
    assert_eq!(failed["error"]["code"], "eval_regression", "{failed:#}");
    assert!(failed["error"]["details"]["regressions"][0].as_str().unwrap().contains("right"), "{failed:#}");
    assert_eq!(failed["error"]["details"]["report"]["totals"]["answered"], 0, "{failed:#}");
}

#[tokio::test]
async fn binding_a_model_that_answers_worse_leaves_the_role_alone_until_its_version_is_activated_anyway() {
    let s = setup().await;
    let targets = |overview: &Value| overview["targets"].as_array().unwrap().clone();
    let bound_to = |overview: &Value, role: &str| {
        overview["roles"].as_array().unwrap().iter().find(|r| r["role"] == role).unwrap()["target_id"]
            .as_str()
            .map(str::to_owned)
    };
    let overview: Value = s.app.get("/admin/providers/").await.json().await.unwrap();
    let smollm = targets(&overview)[0]["id"].as_str().unwrap().to_owned();
    for body in [
        json!({"question": "What does guide 4 explain?"}),
        json!({"question": "What does guide 6 explain?"}),
        json!({"question": "Zyxwv qrstu plokm?", "should_refuse": true}),
    ] {
        assert_eq!(s.app.post_json("/admin/golden", body).await.status(), 201);
    }
    let first = engine::profile::active(&s.app.lore).await.unwrap().unwrap().version;

    // A second llama-server whose context holds a probe but no answer's
    // passages: it probes fine, and then cannot answer a golden question.
    let cramped = LlamaServer::start_with_context(128).await;
    let added = s
        .app
        .post_json(
            "/admin/providers/quick-add",
            json!({"kind": "llama_cpp", "endpoint": cramped.endpoint, "model": "smollm2-cramped"}),
        )
        .await;
    assert_eq!(added.status(), 201);
    let added: Value = added.json().await.unwrap();
    let verdict = &added["verdict"];
    assert_eq!(verdict["bound"], false, "{added:#}");
    assert_eq!(
        (verdict["role"].as_str(), verdict["model"].as_str()),
        (Some("generation"), Some("smollm2-cramped"))
    );
    assert!(verdict["regressions"][0].as_str().unwrap().contains("right"), "{added:#}");
    let cramped_id = added["target"]["id"].as_str().unwrap().to_owned();
    let held = verdict["version"].as_i64().unwrap();
    // The role is unchanged, the active version too, and answers come from
    // the model that was bound.
    let overview: Value = s.app.get("/admin/providers/").await.json().await.unwrap();
    assert_eq!(bound_to(&overview, "generation").as_deref(), Some(smollm.as_str()), "{overview:#}");
    let served = s.answer("What does guide 4 explain?").await;
    assert_eq!(served["profile_version"], first, "{served:#}");
    let generated = stage(&served, "generation").map(|g| g["reason"].as_str().unwrap_or_default().to_owned());
    assert!(generated.as_deref().is_some_and(|g| g.starts_with("smollm2-135m")), "{served:#}");
    // The held candidate is the active snapshot, naming the binding, with
    // the comparison question by question.
    let version: Value = s.app.get("/admin/profile").await.json().await.unwrap();
    let candidate =
        version["versions"].as_array().unwrap().iter().find(|v| v["version"] == held).unwrap().clone();
    assert_eq!(candidate["note"], "Binds the generation role to smollm2-cramped", "{candidate:#}");
    assert_eq!(candidate["snapshot"], version["active"]["snapshot"]);
    assert_eq!(candidate["evals"]["gate"]["baseline_version"], first);
    let failed =
        candidate["evals"]["results"].as_array().unwrap().iter().filter(|r| r["error"].is_string()).count();
    assert!(failed > 0, "the cramped model's calls fail: {candidate:#}");

    // Binding it again is judged again (and held again): nothing else moves.
    let rebind = |target: String| {
        s.app.client.put(s.app.url("/admin/roles/generation")).json(&json!({"target_id": target})).send()
    };
    // A target that does not exist is refused before anything is stored.
    let versions_before = engine::profile::versions(&s.app.lore).await.unwrap().len();
    let missing = rebind("no-such-target".into()).await.unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(engine::profile::versions(&s.app.lore).await.unwrap().len(), versions_before);

    // "Activate anyway" makes the binding, recorded.
    let activated =
        s.app.post_json(&format!("/admin/profile/versions/{held}/restore"), json!({"anyway": true})).await;
    assert_eq!(activated.status(), 200, "{:?}", activated.text().await);
    assert_eq!(audited(&s.app, "profile.activated_anyway").await, 1);
    let overview: Value = s.app.get("/admin/providers/").await.json().await.unwrap();
    assert_eq!(bound_to(&overview, "generation").as_deref(), Some(cramped_id.as_str()), "{overview:#}");
    let broken = s.ask("What does guide 6 explain?").await;
    assert_eq!(broken.status(), 502, "the cramped model cannot answer");
    assert_eq!(broken.json::<Value>().await.unwrap()["error"]["code"], "provider_unavailable");

    // Binding SmolLM2 back answers better than what serves: it passes, the
    // role is bound and a new version serves.
    let back = rebind(smollm.clone()).await.unwrap();
    assert_eq!(back.status(), 200);
    let back: Value = back.json().await.unwrap();
    assert_eq!(back["verdict"]["bound"], true, "{back:#}");
    assert_eq!(bound_to(&back, "generation").as_deref(), Some(smollm.as_str()), "{back:#}");
    let now = back["verdict"]["version"].as_i64().unwrap();
    assert!(now > held);
    let served = s.answer("What does guide 4 explain?").await;
    assert_eq!(served["profile_version"].as_i64(), Some(now), "{served:#}");
    let generated = stage(&served, "generation").map(|g| g["reason"].as_str().unwrap_or_default().to_owned());
    assert!(generated.as_deref().is_some_and(|g| g.starts_with("smollm2-135m")), "{served:#}");

    // Activating the cramped model's version again would bind it again; with
    // its target disabled that is refused, and nothing changes.
    let disabled = s
        .app
        .client
        .patch(s.app.url(&format!("/admin/targets/{cramped_id}")))
        .json(&json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(disabled.status(), 200);
    let refused = s.app.post_json(&format!("/admin/profile/versions/{held}/restore"), json!({})).await;
    assert_eq!(refused.status(), 422);
    assert_eq!(refused.json::<Value>().await.unwrap()["error"]["code"], "target_not_ready");
    assert_eq!(engine::profile::active(&s.app.lore).await.unwrap().unwrap().version as i64, now);
    let overview: Value = s.app.get("/admin/providers/").await.json().await.unwrap();
    assert_eq!(bound_to(&overview, "generation").as_deref(), Some(smollm.as_str()), "{overview:#}");
    cramped.stop().await;
}

/// No statement passes narrowly: no second opinion is asked for.
fn no_pass_is_narrow(settings: &mut engine::Settings) {
    crawls_loopback(settings);
    settings.answer.verification_margin = 0.0;
}

/// Binding the escalation role with golden questions is judged as a
/// generation binding is: the candidate names the binding and answers the
/// golden set with the target in the escalation role, and the role is bound
/// in the transaction that activates it. SmolLM2 escalating to itself (no
/// second opinions asked) answers much as the active version does, but
/// llama-server's prompt cache can change its wording between runs, so the
/// verdict may go either way: held, the role is unchanged until "Activate
/// anyway"; passed, it is bound at once.
#[tokio::test]
async fn binding_the_escalation_role_is_judged_by_the_golden_questions() {
    let s = setup_with(no_pass_is_narrow, |_| {}).await;
    for body in [
        json!({"question": "What does guide 4 explain?"}),
        json!({"question": "What does guide 6 explain?"}),
        json!({"question": "Zyxwv qrstu plokm?", "should_refuse": true}),
    ] {
        assert_eq!(s.app.post_json("/admin/golden", body).await.status(), 201);
    }
    let first = engine::profile::active(&s.app.lore).await.unwrap().unwrap().version;
    let overview: Value = s.app.get("/admin/providers/").await.json().await.unwrap();
    let smollm = overview["targets"][0]["id"].as_str().unwrap().to_owned();
    let escalation_target = |overview: &Value| {
        overview["roles"].as_array().unwrap().iter().find(|r| r["role"] == "escalation").unwrap()["target_id"]
            .clone()
    };

    let bound = s
        .app
        .client
        .put(s.app.url("/admin/roles/escalation"))
        .json(&json!({"target_id": smollm}))
        .send()
        .await
        .unwrap();
    assert_eq!(bound.status(), 200);
    let bound: Value = bound.json().await.unwrap();
    let verdict = &bound["verdict"];
    assert_eq!(verdict["role"], "escalation", "{bound:#}");
    let candidate = verdict["version"].as_i64().unwrap() as i32;
    assert!(candidate > first, "the binding made a version");
    let judged = engine::profile::version(&s.app.lore, candidate).await.unwrap();
    let binding = judged.binding.clone().expect("the version names the binding");
    assert_eq!(
        (binding.role, binding.target_id.as_deref()),
        (engine::providers::Role::Escalation, Some(smollm.as_str()))
    );
    assert_eq!(judged.note.as_deref(), Some("Binds the escalation role to smollm2-135m-instruct"));
    let evals = judged.evals.clone().unwrap();
    assert_eq!(evals["gate"]["baseline_version"], first, "{evals:#}");
    assert_eq!(evals["results"].as_array().unwrap().len(), 3, "{evals:#}");
    assert_eq!(evals["gate"]["passed"], verdict["bound"], "{evals:#}");
    if verdict["bound"] == false {
        assert_eq!(escalation_target(&bound), Value::Null, "held: the role is unchanged");
        assert_eq!(engine::profile::active(&s.app.lore).await.unwrap().unwrap().version, first);
        let anyway = s
            .app
            .post_json(&format!("/admin/profile/versions/{candidate}/restore"), json!({"anyway": true}))
            .await;
        assert_eq!(anyway.status(), 200, "{:?}", anyway.text().await);
    }
    assert_eq!(engine::profile::active(&s.app.lore).await.unwrap().unwrap().version, candidate);
    let overview: Value = s.app.get("/admin/providers/").await.json().await.unwrap();
    assert_eq!(escalation_target(&overview), smollm.as_str(), "{overview:#}");
}

/// While a save is judged its candidate is stored but held ("its evals
/// have not finished"): restoring it needs "activate anyway". When another
/// version becomes active meanwhile, the save loses with a conflict once
/// judged and its candidate is removed: nothing of it is left.
#[tokio::test]
async fn a_save_is_held_while_judged_and_leaves_nothing_when_another_version_activates_meanwhile() {
    let s = setup().await;
    let profile: Value = s.app.get("/admin/profile").await.json().await.unwrap();
    let first = profile["active"]["version"].as_i64().unwrap();
    let snapshot = profile["active"]["snapshot"].clone();
    for body in
        [json!({"question": "What does guide 4 explain?"}), json!({"question": "What does guide 6 explain?"})]
    {
        assert_eq!(s.app.post_json("/admin/golden", body).await.status(), 201);
    }
    let save = |gate: f64, base: i64| {
        let mut changed = snapshot.clone();
        changed["cache"]["min_similarity"] = json!(gate);
        s.app
            .client
            .post(s.app.url("/admin/profile/versions"))
            .json(&json!({"base_version": base, "snapshot": changed}))
            .send()
    };
    let second: Value = save(0.93, first).await.unwrap().json().await.unwrap();
    assert_eq!(second["active"], true, "{second:#}");
    let second = second["version"].as_i64().unwrap();

    // The next save, judged in the background.
    let saving = tokio::spawn(save(0.94, second));
    let pending_path = format!("/admin/profile/versions/{}", second + 1);
    let mut pending = Value::Null;
    for _ in 0..1500 {
        let response = s.app.get(&pending_path).await;
        if response.status() == 200 {
            pending = response.json().await.unwrap();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(pending["active"], false, "{pending:#}");
    assert_eq!(
        pending["evals"]["gate"]["regressions"],
        json!(["its evals have not finished"]),
        "{pending:#}"
    );
    let early = s.app.post_json(&format!("{pending_path}/restore"), json!({"expected_active": second})).await;
    assert_eq!(early.status(), 409);
    assert_eq!(early.json::<Value>().await.unwrap()["error"]["code"], "eval_regression");
    // Another version becomes active while it is judged.
    let restored = s
        .app
        .post_json(&format!("/admin/profile/versions/{first}/restore"), json!({"expected_active": second}))
        .await;
    assert_eq!(restored.status(), 200);

    let lost = saving.await.unwrap().unwrap();
    assert_eq!(lost.status(), 409);
    assert_eq!(lost.json::<Value>().await.unwrap()["error"]["code"], "profile_version_conflict");
    assert_eq!(s.app.get(&pending_path).await.status(), 404, "the losing candidate is gone");
    assert_eq!(engine::profile::active(&s.app.lore).await.unwrap().unwrap().version as i64, first);
}

#[tokio::test]
async fn a_save_shows_its_judging_live_to_every_console_until_its_verdict() {
    let s = setup().await;
    let profile: Value = s.app.get("/admin/profile").await.json().await.unwrap();
    let first = profile["active"]["version"].as_i64().unwrap();
    let mut changed = profile["active"]["snapshot"].clone();
    changed["cache"]["min_similarity"] = json!(0.93);
    for n in [3, 4, 5, 6] {
        let body = json!({"question": format!("What does guide {n} explain?")});
        assert_eq!(s.app.post_json("/admin/golden", body).await.status(), 201);
    }
    assert_eq!(s.app.get("/admin/profile/judging").await.json::<Value>().await.unwrap(), json!([]));

    let note = "A stricter cache gate";
    let saving = tokio::spawn(
        s.app
            .client
            .post(s.app.url("/admin/profile/versions"))
            .json(&json!({"base_version": first, "snapshot": changed, "note": note}))
            .send(),
    );
    // What another admin's console polls meanwhile.
    let mut seen: Vec<(String, u64, u64)> = Vec::new();
    let mut by = String::new();
    while !saving.is_finished() {
        let listed: Value = s.app.get("/admin/profile/judging").await.json().await.unwrap();
        if let Some(judging) = listed.as_array().and_then(|l| l.first()) {
            assert_eq!(judging["what"], note, "{judging:#}");
            by = judging["by"].as_str().unwrap().to_owned();
            let step = judging["step"].as_str().unwrap().to_owned();
            let point = (step, judging["done"].as_u64().unwrap(), judging["total"].as_u64().unwrap());
            if point.0 != "shadow" && point.2 > 0 {
                assert_eq!(judging["version"], first + 1, "the candidate is named: {judging:#}");
            }
            if seen.last() != Some(&point) {
                seen.push(point);
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let saved = saving.await.unwrap().unwrap();
    assert_eq!(saved.status(), 201);
    let saved: Value = saved.json().await.unwrap();
    assert_eq!(saved["created_by"], by.as_str(), "the judging names who asked");
    assert_eq!(
        s.app.get("/admin/profile/judging").await.json::<Value>().await.unwrap(),
        json!([]),
        "the judging is gone with its verdict"
    );
    // Both halves were seen moving, each counted against the four questions.
    for step in ["candidate", "baseline"] {
        let points: Vec<u64> = seen.iter().filter(|p| p.0 == step && p.2 == 4).map(|p| p.1).collect();
        assert!(points.iter().any(|done| (1..4).contains(done)), "{step} was seen part-way: {seen:?}");
        assert!(points.windows(2).all(|w| w[0] <= w[1]), "{step} never went back: {seen:?}");
    }
    let first_baseline = seen.iter().position(|p| p.0 == "baseline").unwrap();
    assert!(seen[first_baseline..].iter().all(|p| p.0 == "baseline"), "the candidate comes first: {seen:?}");

    // A client that stops waiting (a proxy's timeout, a closed tab) does
    // not stop the judging: its verdict lands in the candidate all the same.
    let profile: Value = s.app.get("/admin/profile").await.json().await.unwrap();
    let base = profile["active"]["version"].as_i64().unwrap();
    let newest = profile["versions"][0]["version"].as_i64().unwrap();
    let mut stricter = profile["active"]["snapshot"].clone();
    stricter["cache"]["min_similarity"] = json!(0.94);
    let gave_up = s
        .app
        .client
        .post(s.app.url("/admin/profile/versions"))
        .json(&json!({"base_version": base, "snapshot": stricter}))
        .timeout(std::time::Duration::from_millis(300))
        .send()
        .await;
    assert!(gave_up.unwrap_err().is_timeout());
    let path = format!("/admin/profile/versions/{}", newest + 1);
    let mut judged = Value::Null;
    for _ in 0..1200 {
        let response = s.app.get(&path).await;
        if response.status() == 200 {
            let version: Value = response.json().await.unwrap();
            if version["evals"]["gate"]["regressions"] != json!(["its evals have not finished"]) {
                judged = version;
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(judged["evals"]["totals"]["questions"] == 4, "judged to the end: {judged:#}");
    // Its record goes once the judging has wound up (right after the verdict).
    let mut listed = Value::Null;
    for _ in 0..100 {
        listed = s.app.get("/admin/profile/judging").await.json().await.unwrap();
        if listed == json!([]) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(listed, json!([]));
}

#[tokio::test]
async fn a_pinned_answer_serves_the_question_and_a_paraphrase_until_its_cited_page_changes() {
    let s = setup().await;
    let question = "What does guide 4 explain?";
    let written = s.answer(question).await;
    assert_eq!(written["refused"], false, "{written:#}");
    let citations = written["citations"].clone();
    assert!(!citations.as_array().unwrap().is_empty(), "{written:#}");

    // Bad pins are refused and store nothing.
    for (body, status, code) in [
        (json!({"question": question, "answer": "  ", "citations": citations}), 422, "invalid_input"),
        (json!({"question": "", "answer": "A."}), 422, "invalid_input"),
        // Two citations under one `[n]`.
        (
            json!({"question": question, "answer": "A [1].", "citations": [citations[0].clone(), citations[0].clone()]}),
            422,
            "invalid_input",
        ),
        (
            json!({"question": question, "answer": "A.", "citations": [{"index": 1, "chunk_id": "nope", "source_id": "s", "document_id": "d", "title": "t", "url": null, "snippet": "", "score": 0.0}]}),
            422,
            "invalid_input",
        ),
    ] {
        let refused = s.app.post_json("/admin/pins", body.clone()).await;
        assert_eq!(refused.status(), status, "{body}");
        assert_eq!(refused.json::<Value>().await.unwrap()["error"]["code"], code, "{body}");
    }
    assert_eq!(s.app.get("/admin/pins").await.json::<Value>().await.unwrap(), json!([]));

    let curated = "Guide 4 is the curated answer the docs team wrote [1].";
    let pinned = s
        .app
        .post_json("/admin/pins", json!({"question": question, "answer": curated, "citations": citations}))
        .await;
    assert_eq!(pinned.status(), 201);
    let pin: Value = pinned.json().await.unwrap();

    // The question, asked again: the pin, before the caches, no model call.
    let again = s.answer("what does guide 4 explain").await;
    assert_eq!(
        (again["pinned"].as_bool(), again["answer"].as_str()),
        (Some(true), Some(curated)),
        "{again:#}"
    );
    assert_eq!(stage(&again, "pinned").unwrap()["decision"], "served", "{again:#}");
    assert!(stage(&again, "exact_cache").is_none() && stage(&again, "generation").is_none(), "{again:#}");
    assert_eq!(again["citations"], citations);
    // A close paraphrase (above the semantic gate) is served the pin too.
    let close = s.answer("What does guide number 4 explain?").await;
    assert_eq!(close["pinned"], true, "{close:#}");
    assert!(stage(&close, "pinned").unwrap()["reason"].as_str().unwrap().contains("similar"), "{close:#}");
    // Another question is not.
    let other = s.answer("What does guide 6 explain?").await;
    assert_eq!(other["pinned"], false, "{other:#}");
    // The Dashboard's funnel counts the pin's serves.
    let dashboard: Value =
        s.app.post_json("/admin/observability/", json!({"hours": 1})).await.json().await.unwrap();
    let served = dashboard["funnel"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["stage"] == "pinned" && f["decision"] == "served")
        .unwrap_or_else(|| panic!("{dashboard:#}"))["count"]
        .clone();
    assert_eq!(served, 2, "{dashboard:#}");

    // Its source disabled (another stays, so Lore still answers), the pin
    // is held: not served, not flagged; enabled again, it serves again.
    let source = s.app.get("/admin/sources/").await.json::<Value>().await.unwrap()[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    s.add_canteen().await;
    let disabled = s.app.post_json(&format!("/admin/sources/{source}/disable"), json!({})).await;
    assert_eq!(disabled.status(), 200);
    let held = s.answer(question).await;
    assert_eq!(held["pinned"], false, "{held:#}");
    let stage_held = stage(&held, "pinned").unwrap();
    assert_eq!(stage_held["decision"], "held", "{held:#}");
    assert!(stage_held["reason"].as_str().unwrap().contains("disabled"), "{held:#}");
    let pins: Value = s.app.get("/admin/pins").await.json().await.unwrap();
    assert!(pins[0]["flagged_at"].is_null(), "{pins:#}");
    let enabled = s.app.post_json(&format!("/admin/sources/{source}/enable"), json!({})).await;
    assert_eq!(enabled.status(), 200);
    let back = s.answer(question).await;
    assert_eq!((back["pinned"].as_bool(), back["answer"].as_str()), (Some(true), Some(curated)), "{back:#}");

    // The cited page changes: the pin is flagged and no longer serves.
    s.site.change_page(4, "Guide number 4 now explains archiving old chat channels. Step one for guide 4: open the indigo panel.");
    let synced: Value =
        s.app.post_json(&format!("/admin/sources/{source}/sync"), json!({})).await.json().await.unwrap();
    assert_eq!(finished(&s.app, synced["id"].as_str().unwrap()).await["status"], "succeeded");
    let after = s.answer(question).await;
    assert_eq!(after["pinned"], false, "{after:#}");
    let flagged = stage(&after, "pinned").unwrap();
    assert_eq!(flagged["decision"], "flagged", "{after:#}");
    let why = flagged["reason"].as_str().unwrap();
    assert!(why.contains("changed") || why.contains("no longer in the index"), "{after:#}");
    let pins: Value = s.app.get("/admin/pins").await.json().await.unwrap();
    assert_eq!(pins[0]["id"], pin["id"]);
    assert!(pins[0]["flagged_at"].is_string(), "{pins:#}");

    // Removed: gone; removing again is a 404 with its code.
    let removed = s
        .app
        .client
        .delete(s.app.url(&format!("/admin/pins/{}", pin["id"].as_str().unwrap())))
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status(), 204);
    let again = s
        .app
        .client
        .delete(s.app.url(&format!("/admin/pins/{}", pin["id"].as_str().unwrap())))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 404);
    assert_eq!(again.json::<Value>().await.unwrap()["error"]["code"], "pin_not_found");
}

/// Uploads one Markdown file into a new upload source with `audience`
/// (`None`: the default, everyone), indexed; returns the source's id.
async fn upload_with_audience(app: &TestApp, name: &str, audience: Option<&str>, text: &str) -> String {
    let mut body = json!({"name": name, "kind": "upload"});
    if let Some(audience) = audience {
        body["audience"] = audience.into();
    }
    let created = app.post_json("/admin/sources/", body).await;
    assert_eq!(created.status(), 201, "{:?}", created.text().await);
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["audience"], audience.unwrap_or("everyone"), "{created:#}");
    let id = created["id"].as_str().unwrap().to_owned();
    let form = reqwest::multipart::Form::new()
        .part("file", reqwest::multipart::Part::bytes(text.as_bytes().to_vec()).file_name("notes.md"));
    let received =
        app.client.post(app.url(&format!("/admin/sources/{id}/files"))).multipart(form).send().await.unwrap();
    assert_eq!(received.status(), 202);
    let receipts: Value = received.json().await.unwrap();
    assert_eq!(finished(app, receipts[0]["job"]["id"].as_str().unwrap()).await["status"], "succeeded");
    id
}

/// A user of a new role `role` (`permission`) and a key of theirs with `scopes`.
async fn user_key(app: &TestApp, role: &str, permission: Value, scopes: Value) -> String {
    for body in [
        json!({"operation": "add_role", "role": role, "permission": permission}),
        json!({"operation": "add_user", "role": role, "username": role}),
    ] {
        let response = app.client.post(app.url("/operation")).json(&body).send().await.unwrap();
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    }
    let made = app
        .post_json("/admin/keys", json!({"name": role, "kind": "secret", "scopes": scopes, "user": role}))
        .await;
    made.json::<Value>().await.unwrap()["raw_key"].as_str().unwrap().to_owned()
}

/// A request with `key` to `path`, its body as text (to look for what must
/// not be anywhere in it, a stream's events included).
async fn keyed(app: &TestApp, key: &str, path: &str, body: Value, accept: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(app.url(path))
        .header("x-api-key", key)
        .header("origin", "https://docs.example.com")
        .header("accept", accept)
        .json(&body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn answers_retrievals_caches_and_pins_respect_who_asks() {
    let s = setup().await;
    let plain = json!({"super_user": false});
    let support = user_key(&s.app, "support", plain.clone(), json!(["answer", "retrieve", "mcp"])).await;
    let guest = user_key(&s.app, "guest", plain, json!(["answer", "retrieve", "mcp"])).await;
    let handbook =
        "# Heliotrope protocol\n\nThe on-call escalation code word is heliotrope; say it to the duty manager.\n";
    upload_with_audience(&s.app, "Staff handbook", Some("support"), handbook).await;
    // A source only a third role reads: no caller below reads everything.
    let auditors = json!({"operation": "add_role", "role": "auditors", "permission": {"super_user": false}});
    assert_eq!(
        s.app.client.post(s.app.url("/operation")).json(&auditors).send().await.unwrap().status(),
        200
    );
    upload_with_audience(
        &s.app,
        "Audit notes",
        Some("auditors"),
        "# Audit\n\nThe audit found eleven unlocked cabinets.\n",
    )
    .await;
    let secret = "heliotrope";
    let question = "What is the on-call escalation code word?";

    // Every surface, every caller: the fact reaches exactly the support user.
    let (json_accept, stream_accept) = ("application/json", "text/event-stream");
    let mut checks = 0;
    for (who, key, may) in
        [("support", &support, true), ("guest", &guest, false), ("a key without a user", &s.key, false)]
    {
        for (path, body, accept) in [
            ("/retrieve", json!({"query": question}), json_accept),
            ("/answer", json!({"question": question}), json_accept),
            ("/answer", json!({"question": question}), stream_accept),
        ] {
            let (status, text) = keyed(&s.app, key, path, body, accept).await;
            assert_eq!(status, 200, "{who} {path} {accept}: {text}");
            // The passage's title names it: a retrieval, an answer's trace
            // and a stream's last event show it to a caller who may read it.
            assert_eq!(text.to_lowercase().contains(secret), may, "{who} {path} {accept}: {text}");
            checks += 1;
        }
    }
    for accept in [json_accept, stream_accept] {
        let (status, text) =
            keyed(&s.app, &s.widget_key, "/answer", json!({"question": question}), accept).await;
        assert_eq!(status, 200, "{text}");
        assert!(!text.to_lowercase().contains(secret), "the widget, {accept}: {text}");
        checks += 1;
    }
    // Both protocol eras: a session bound to the key's user, and the
    // sessionless revision, where each request names its caller anew.
    let url = s.app.url("/mcp");
    for (who, key, may) in [("support", &support, true), ("guest", &guest, false)] {
        let session = super::mcp::initialize(&url, key).await;
        for (tool, arguments) in
            [("retrieve", json!({"query": question})), ("answer", json!({"question": question}))]
        {
            let params = json!({"name": tool, "arguments": arguments});
            let in_session = super::mcp::call(&url, key, &session, "tools/call", params.clone()).await;
            let sessionless = super::mcp::call_sessionless(&url, key, "tools/call", params).await;
            for (era, reply) in [("session", in_session), ("sessionless", sessionless)] {
                assert_eq!(reply["result"]["isError"], false, "{who} {tool}, {era}: {reply:#}");
                // The answer tool may word its reply without the fact; it
                // never holds it for a caller who may not read it.
                if tool == "retrieve" || !may {
                    assert_eq!(
                        reply.to_string().to_lowercase().contains(secret),
                        may,
                        "{who} over MCP, {tool}, {era}: {reply:#}"
                    );
                }
                checks += 1;
            }
        }
    }
    println!("who-asks matrix: {checks} checks");

    // The cache: an answer made for one visible scope serves that scope
    // only, exactly or as a paraphrase.
    let (site_question, paraphrase) = ("What does guide 4 explain?", "What does guide number 4 explain?");
    let ask = |key: &str, question: &'static str| {
        let (app, key) = (&s.app, key.to_owned());
        async move {
            let (status, text) =
                keyed(app, &key, "/answer", json!({"question": question}), json_accept).await;
            assert_eq!(status, 200, "{text}");
            serde_json::from_str::<Value>(&text).unwrap()
        }
    };
    let playground = || async {
        let asked = s.app.post_json("/admin/playground/answer", json!({"question": site_question})).await;
        asked.json::<Value>().await.unwrap()
    };
    let first = playground().await;
    assert_eq!(
        (first["refused"].as_bool(), first["cache"]["status"].as_str()),
        (Some(false), Some("miss")),
        "{first:#}"
    );
    assert_eq!(playground().await["cache"]["status"], "hit", "the admin's own scope hits");
    for (who, key) in [("support", &support), ("the widget", &s.widget_key)] {
        let asked = ask(key, paraphrase).await;
        assert_ne!(
            asked["cache"]["status"], "hit",
            "{who}: the admin's answer serves the admin only: {asked:#}"
        );
    }
    let exact = ask(&support, site_question).await;
    assert_eq!(exact["refused"], false, "{exact:#}");
    // That the admin asked the same words shows nowhere: support's question
    // is embedded beside the readiness check, as for a question nobody
    // asked, since the cache holds it for another scope only.
    let stages = exact["trace"]["stages"].as_array().unwrap();
    let readiness = stages.iter().find(|stage| stage["stage"] == "readiness").unwrap();
    assert!(readiness["reason"].as_str().unwrap().contains("embedded meanwhile"), "{readiness}");
    // Support's own answers serve support.
    let again = ask(&support, site_question).await;
    assert_eq!(again["cache"]["status"], "hit", "{again:#}");
    // A guest and a key without a user read the same sources: they share.
    let guest_first = ask(&guest, site_question).await;
    if guest_first["cache"]["status"] == "miss" {
        assert_eq!(guest_first["refused"], false, "{guest_first:#}");
    }
    let keyless = ask(&s.key, site_question).await;
    assert_eq!(keyless["cache"]["status"], "hit", "{keyless:#}");

    // A pin citing the handbook serves only who may read the handbook.
    let (_, found) = keyed(&s.app, &support, "/retrieve", json!({"query": question}), json_accept).await;
    let found: Value = serde_json::from_str(&found).unwrap();
    let best = &found["results"][0];
    assert!(best["text"].as_str().unwrap().contains(secret), "{found:#}");
    let citation = json!({"index": 1, "chunk_id": best["chunk_id"], "source_id": best["source_id"],
                          "document_id": best["document_id"], "title": best["title"], "url": best["url"],
                          "snippet": "the code word", "score": best["score"]});
    let curated = "Say heliotrope to the duty manager [1].";
    let pinned = s
        .app
        .post_json("/admin/pins", json!({"question": question, "answer": curated, "citations": [citation]}))
        .await;
    assert_eq!(pinned.status(), 201, "{:?}", pinned.text().await);
    let (_, text) = keyed(&s.app, &support, "/answer", json!({"question": question}), json_accept).await;
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["pinned"], true, "{text}");
    for key in [&guest, &s.key, &s.widget_key] {
        let (_, text) = keyed(&s.app, key, "/answer", json!({"question": question}), json_accept).await;
        assert!(!text.to_lowercase().contains(secret) && !text.contains("\"pinned\":true"), "{text}");
    }

    // A pin with an audience of its own serves inside it only; an unknown
    // role is refused and nothing is pinned.
    let duty = "Who is the night duty manager?";
    let refused = s
        .app
        .post_json("/admin/pins", json!({"question": duty, "answer": "Priya.", "audience": "suport"}))
        .await;
    assert_eq!(refused.status(), 422);
    assert!(refused.text().await.unwrap().contains("`suport`"));
    let pinned = s
        .app
        .post_json(
            "/admin/pins",
            json!({"question": duty, "answer": "Priya is the night duty manager.", "audience": "support"}),
        )
        .await;
    assert_eq!(pinned.status(), 201, "{:?}", pinned.text().await);
    let (_, text) = keyed(&s.app, &support, "/answer", json!({"question": duty}), json_accept).await;
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["pinned"], true, "{text}");
    for key in [&guest, &s.key, &s.widget_key] {
        let (_, text) = keyed(&s.app, key, "/answer", json!({"question": duty}), json_accept).await;
        assert!(!text.contains("Priya") && !text.contains("\"pinned\":true"), "{text}");
    }
}

/// A rating through `path` with the key `raw` (or the admin's session when
/// none): (status, body).
async fn rated(s: &Setup, raw: Option<&str>, path: &str, body: Value) -> (u16, Value) {
    let request = match raw {
        Some(raw) => reqwest::Client::new().post(s.app.url(path)).header("x-api-key", raw),
        None => s.app.client.post(s.app.url(path)),
    };
    let response = request.json(&body).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn people_rate_answers_where_they_asked_and_the_review_queue_turns_the_bad_ones_into_fixes() {
    let s = setup().await;
    let question = "What does guide 4 explain?";
    // Each answer says where to rate it.
    let api = s.answer(question).await;
    let api_trace = api["trace"]["id"].as_str().unwrap().to_owned();
    assert_eq!(api["feedback"], json!({"href": "/answer/feedback", "trace_id": api_trace}), "{api:#}");
    let playground: Value = s
        .app
        .post_json("/admin/playground/answer", json!({"question": question}))
        .await
        .json()
        .await
        .unwrap();
    let playground_trace = playground["trace"]["id"].as_str().unwrap().to_owned();
    assert_eq!(playground["feedback"]["href"], "/admin/playground/feedback", "{playground:#}");

    // Only whoever asked rates: the key its answer, the admin theirs.
    let mine = |helpful: bool, trace: &str, comment: Option<&str>| json!({"trace_id": trace, "helpful": helpful, "comment": comment});
    let (status, body) =
        rated(&s, Some(&s.key), "/answer/feedback", mine(false, &playground_trace, None)).await;
    assert_eq!((status, body["error"]["code"].clone()), (403, json!("not_your_answer")));
    let (status, body) = rated(&s, None, "/admin/playground/feedback", mine(false, &api_trace, None)).await;
    assert_eq!((status, body["error"]["code"].clone()), (403, json!("not_your_answer")));
    let (status, body) =
        rated(&s, None, "/admin/playground/feedback", mine(true, &playground_trace, None)).await;
    assert_eq!((status, body["replaced"].clone()), (200, json!(false)), "{body}");
    let (status, first) = rated(&s, Some(&s.key), "/answer/feedback", mine(true, &api_trace, None)).await;
    assert_eq!(status, 200, "{first}");
    // A second rating replaces the first.
    let (status, second) = rated(
        &s,
        Some(&s.key),
        "/answer/feedback",
        mine(false, &api_trace, Some("  It leaves out step 2.  ")),
    )
    .await;
    assert_eq!(
        (status, second["replaced"].clone(), second["comment"].clone()),
        (200, json!(true), json!("It leaves out step 2."))
    );

    // At the terminal: `lore ask --rate`, answered at its prompt.
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_lore"));
    for (name, _) in std::env::vars() {
        if name.starts_with("LORE_") {
            command.env_remove(name);
        }
    }
    let mut child = command
        .env("LORE_DATA_DIR", s.app.data_dir.path())
        .env("LORE_MODELS__DIR", super::helpers::models_dir())
        .args(["ask", "--rate", "What does guide 2 explain?"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"n\nNot what I asked.\n").await.unwrap();
    }
    let output = child.wait_with_output().await.unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("Was this answer helpful? [y/n]") && stderr.contains("Rated unhelpful"),
        "{stderr}"
    );

    // The Dashboard counts them per surface and in all, from the rollups.
    let dashboard: Value =
        s.app.post_json("/admin/observability/", json!({"hours": 1})).await.json().await.unwrap();
    assert_eq!(
        (dashboard["totals"]["helpful"].clone(), dashboard["totals"]["unhelpful"].clone()),
        (json!(1), json!(2))
    );
    let surface = |name: &str| {
        let row = dashboard["surfaces"].as_array().unwrap().iter().find(|r| r["surface"] == name).unwrap();
        (row["helpful"].as_i64().unwrap(), row["unhelpful"].as_i64().unwrap())
    };
    assert_eq!((surface("api"), surface("playground"), surface("cli")), ((0, 1), (1, 0), (0, 1)));

    // The review queue: the two unhelpful answers, newest first, with what
    // was asked, served and said.
    let queue: Value = s.app.get("/admin/feedback").await.json().await.unwrap();
    let items: Vec<Value> = queue["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["items"].as_array().unwrap().clone())
        .collect();
    assert_eq!(items.len(), 2, "{queue:#}");
    let item = |surface: &str| items.iter().find(|i| i["surface"] == surface).unwrap().clone();
    let (from_api, from_cli) = (item("api"), item("cli"));
    assert_eq!(from_api["question"], question);
    assert_eq!(from_api["answer"], api["answer"]);
    assert_eq!(from_api["citations"], api["citations"]);
    assert_eq!(from_api["comment"], "It leaves out step 2.");
    assert_eq!(from_cli["comment"], "Not what I asked.");
    assert_eq!(from_cli["trace_id"].as_str().map(|t| stdout.contains(t)), Some(true), "{stdout}");

    // Pin a corrected answer from an item; the question is then answered
    // by the pin, and the item names the pin.
    let review = |trace: &Value| format!("/admin/feedback/{}/review", trace.as_str().unwrap());
    let corrected = "Guide 4 explains the indigo panel setting, step by step [1].";
    let pinned: Value = s
        .app
        .post_json(
            &review(&from_api["trace_id"]),
            json!({"action": "pin", "question": question, "answer": corrected, "citations": [api["citations"][0]]}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(pinned["done"], "pinned", "{pinned}");
    let pins: Value = s.app.get("/admin/pins").await.json().await.unwrap();
    assert_eq!(pinned["made"], pins[0]["id"], "{pins}");
    let again = s.answer(question).await;
    assert_eq!(
        (again["pinned"].clone(), again["answer"].clone()),
        (json!(true), json!(corrected)),
        "{again:#}"
    );

    // A refused action records nothing; a golden question ("should refuse")
    // and a dismissal are recorded on their items.
    let (status, body) = rated(
        &s,
        None,
        &review(&from_cli["trace_id"]),
        json!({"action": "pin", "question": "", "answer": "x"}),
    )
    .await;
    assert_eq!((status, body["error"]["code"].clone()), (422, json!("invalid_input")));
    let (status, body) =
        rated(&s, None, &review(&json!("no-such-trace")), json!({"action": "dismiss"})).await;
    assert_eq!((status, body["error"]["code"].clone()), (404, json!("answer_not_found")));
    let open: Value = s.app.get("/admin/feedback?open=true").await.json().await.unwrap();
    assert_eq!(open.to_string().matches("\"trace_id\"").count(), 1, "only the CLI's item is open: {open:#}");
    let (status, golden) = rated(
        &s,
        None,
        &review(&from_cli["trace_id"]),
        json!({"action": "golden", "question": "What does guide 2 explain?", "should_refuse": true}),
    )
    .await;
    assert_eq!((status, golden["done"].clone()), (200, json!("golden")), "{golden}");
    let set: Value = s.app.get("/admin/golden").await.json().await.unwrap();
    let added = set.as_array().unwrap().iter().find(|g| g["id"] == golden["made"]).unwrap();
    assert_eq!((added["should_refuse"].clone(), added["origin"].clone()), (json!(true), json!("dashboard")));
    let (status, dismissed) =
        rated(&s, None, &review(&from_cli["trace_id"]), json!({"action": "dismiss"})).await;
    assert_eq!(
        (status, dismissed["done"].clone(), dismissed["made"].clone()),
        (200, json!("dismissed"), Value::Null)
    );
    let open: Value = s.app.get("/admin/feedback?open=true").await.json().await.unwrap();
    assert_eq!(open["groups"], json!([]), "{open:#}");

    // The active version's eval summary shows the helpful rate of what it served.
    let profile: Value = s.app.get("/admin/profile").await.json().await.unwrap();
    assert_eq!(
        (profile["active"]["helpful"].clone(), profile["active"]["unhelpful"].clone()),
        (json!(1), json!(2)),
        "{:#}",
        profile["active"]
    );
}
