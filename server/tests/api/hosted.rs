//! The hosted families (Anthropic's Messages API, Google's Gemini API), a
//! reranker, and escalation chains.
//!
//! **These tests use doubles.** Anthropic's and Google's services cannot be
//! reached from this machine (its network reaches only package registries),
//! so [`Double`] is a local server that speaks each protocol as the vendor's
//! public API reference documents it: the request shape and headers it
//! checks (`x-api-key` with `anthropic-version`; `x-goog-api-key`), the
//! streamed events (`message_start` … `message_stop`, an `error` event after
//! a 200; `alt=sse` chunks of `GenerateContentResponse`), the error bodies
//! (`{"type":"error","error":{…}}`; `{"error":{"code","message","status",
//! "details"}}` with `API_KEY_INVALID` at HTTP 400) and the usage fields.
//! The reranker is a double too, of the `/rerank` protocol llama.cpp's
//! server, vLLM, Cohere, Jina and Voyage speak: no reranking model installs
//! from the package registries here (see docs/decisions.md).
//!
//! What the double answers is chosen by the model's name, so that a test can
//! make one tier ground its answer and another not: `grounded-…` repeats the
//! first sentence of passage [1] and cites it, `vague-…` answers without
//! the passages.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::helpers::{finished, spawn_app_with, Options, TestApp};

const ANTHROPIC_KEY: &str = "sk-ant-api03-double-0123456789abcdefghij";
const GEMINI_KEY: &str = "AIzaSyDouble0123456789abcdefghijklmnopq";
const VAGUE_REPLY: &str = "Many teams like the colour blue, and most weekends are sunny.";

/// One request the double received.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    query: String,
    headers: HeaderMap,
    body: Value,
}

#[derive(Default)]
struct DoubleState {
    seen: Mutex<Vec<Seen>>,
    /// The vendors' services are overloaded: Anthropic breaks its stream
    /// off with an `error` event, Gemini answers 503.
    overloaded: AtomicBool,
    /// The reranker fails with a 500.
    rerank_down: AtomicBool,
}

/// The local stand-in for the hosted services (see the module's note).
struct Double {
    addr: std::net::SocketAddr,
    state: Arc<DoubleState>,
    _server: tokio::task::JoinHandle<()>,
}

impl Double {
    async fn start() -> Double {
        let state = Arc::new(DoubleState::default());
        let app = Router::new()
            .route("/anthropic/v1/messages", post(anthropic_messages))
            .route("/anthropic/v1/models", get(anthropic_models))
            .route("/gemini/v1beta/models", get(gemini_models))
            .route("/gemini/v1beta/models/{call}", post(gemini_call))
            .route("/rerank/v1/rerank", post(rerank))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Double { addr, state, _server: server }
    }

    fn base(&self, family: &str) -> String {
        match family {
            "anthropic" => format!("http://{}/anthropic/v1", self.addr),
            "gemini" => format!("http://{}/gemini/v1beta", self.addr),
            _ => format!("http://{}/rerank/v1", self.addr),
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// Generation calls that reached `model` (probes included).
    fn calls_to(&self, model: &str) -> usize {
        self.seen()
            .iter()
            .filter(|s| s.body["model"] == model || s.path.contains(&format!("/{model}:")))
            .count()
    }
}

fn record(state: &DoubleState, uri: &Uri, headers: &HeaderMap, body: &Value) {
    state.seen.lock().unwrap().push(Seen {
        path: uri.path().to_owned(),
        query: uri.query().unwrap_or_default().to_owned(),
        headers: headers.clone(),
        body: body.clone(),
    });
}

fn json_reply(status: StatusCode, body: Value) -> Response {
    (status, [("content-type", "application/json")], body.to_string()).into_response()
}

/// An SSE body sent in small pieces that cut through lines and events, as a
/// network may deliver it.
fn event_stream(text: String) -> Response {
    let pieces: Vec<Result<Vec<u8>, Infallible>> =
        text.into_bytes().chunks(7).map(|c| Ok(c.to_vec())).collect();
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(futures::stream::iter(pieces)))
        .unwrap()
}

/// What the model named `model` says to `prompt` (the user turn).
fn reply_of(model: &str, prompt: &str) -> String {
    if model.starts_with("vague") {
        return VAGUE_REPLY.to_owned();
    }
    // Passage [1]'s first sentence: the first line of prose after its
    // "[1] title" line.
    let mut lines = prompt
        .lines()
        .skip_while(|line| !line.starts_with("[1] "))
        .skip(1)
        .filter(|line| !line.starts_with('#') && line.split_whitespace().count() >= 4);
    match lines.next() {
        Some(text) => {
            let sentence = text.split_inclusive('.').next().unwrap_or(text).trim();
            format!("{sentence} [1]")
        }
        None => "ok".to_owned(),
    }
}

/// Whole words, the double's stand-in for a tokenizer.
fn tokens(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

async fn anthropic_models(State(state): State<Arc<DoubleState>>, headers: HeaderMap) -> Response {
    if headers.get("x-api-key").and_then(|v| v.to_str().ok()) != Some(ANTHROPIC_KEY) {
        return anthropic_unauthorized();
    }
    let _ = state;
    json_reply(
        StatusCode::OK,
        json!({"data": [{"id": "grounded-claude", "type": "model"}], "has_more": false}),
    )
}

fn anthropic_unauthorized() -> Response {
    json_reply(
        StatusCode::UNAUTHORIZED,
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    )
}

async fn anthropic_messages(
    State(state): State<Arc<DoubleState>>,
    uri: Uri,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    record(&state, &uri, &headers, &body);
    if headers.get("x-api-key").and_then(|v| v.to_str().ok()) != Some(ANTHROPIC_KEY) {
        return anthropic_unauthorized();
    }
    if headers.get("anthropic-version").is_none() {
        return json_reply(
            StatusCode::BAD_REQUEST,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "anthropic-version: header is required"}}),
        );
    }
    // The Messages API's own rules: max_tokens is required, and the system
    // prompt is a top-level field, never a message.
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if !body["max_tokens"].is_u64() || messages.iter().any(|m| m["role"] == "system") {
        return json_reply(
            StatusCode::BAD_REQUEST,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "messages: roles must be user or assistant; max_tokens: required"}}),
        );
    }
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let prompt = messages.last().and_then(|m| m["content"].as_str()).unwrap_or_default();
    let input = tokens(prompt) + tokens(body["system"].as_str().unwrap_or_default());
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut stream = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_double", "type": "message", "role": "assistant",
               "content": [], "model": model, "stop_reason": null,
               "usage": {"input_tokens": input, "output_tokens": 1}}}),
    );
    stream += &event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    stream += &event("ping", json!({"type": "ping"}));
    if state.overloaded.load(Ordering::SeqCst) {
        // The status said 200; the service breaks off with an error event,
        // which here echoes the key, as a careless proxy might.
        stream += &event(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": format!("Overloaded (key {ANTHROPIC_KEY})")}}),
        );
        return event_stream(stream);
    }
    let reply = reply_of(&model, prompt);
    let words: Vec<&str> = reply.split_inclusive(' ').collect();
    for piece in words.chunks(3) {
        stream += &event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece.concat()}}),
        );
    }
    stream += &event("content_block_stop", json!({"type": "content_block_stop", "index": 0}));
    stream += &event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
               "usage": {"output_tokens": tokens(&reply)}}),
    );
    stream += &event("message_stop", json!({"type": "message_stop"}));
    event_stream(stream)
}

fn gemini_refused() -> Response {
    json_reply(
        StatusCode::BAD_REQUEST,
        json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
               "status": "INVALID_ARGUMENT",
               "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                            "domain": "googleapis.com"}]}}),
    )
}

async fn gemini_models(headers: HeaderMap) -> Response {
    if headers.get("x-goog-api-key").and_then(|v| v.to_str().ok()) != Some(GEMINI_KEY) {
        return gemini_refused();
    }
    json_reply(StatusCode::OK, json!({"models": [{"name": "models/grounded-gemini"}]}))
}

async fn gemini_call(
    State(state): State<Arc<DoubleState>>,
    Path(call): Path<String>,
    uri: Uri,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    record(&state, &uri, &headers, &body);
    if headers.get("x-goog-api-key").and_then(|v| v.to_str().ok()) != Some(GEMINI_KEY) {
        return gemini_refused();
    }
    let Some((model, method)) = call.split_once(':') else {
        return json_reply(
            StatusCode::NOT_FOUND,
            json!({"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}}),
        );
    };
    match method {
        "batchEmbedContents" => {
            let embeddings: Vec<Value> = body["requests"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|request| {
                    let text = request["content"]["parts"][0]["text"].as_str().unwrap_or_default();
                    let values: Vec<f32> = (0..8).map(|i| ((text.len() + i) % 5) as f32 + 0.5).collect();
                    json!({ "values": values })
                })
                .collect();
            json_reply(StatusCode::OK, json!({ "embeddings": embeddings }))
        }
        "streamGenerateContent" if uri.query() == Some("alt=sse") => {
            if state.overloaded.load(Ordering::SeqCst) {
                return json_reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    json!({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}),
                );
            }
            let prompt = body["contents"][0]["parts"][0]["text"].as_str().unwrap_or_default();
            let system = body["systemInstruction"]["parts"][0]["text"].as_str().unwrap_or_default();
            let input = tokens(prompt) + tokens(system);
            let reply = reply_of(model, prompt);
            let words: Vec<&str> = reply.split_inclusive(' ').collect();
            let pieces: Vec<String> = words.chunks(4).map(|c| c.concat()).collect();
            let mut stream = String::new();
            let mut written = 0;
            for (i, piece) in pieces.iter().enumerate() {
                written += tokens(piece);
                let last = i + 1 == pieces.len();
                let mut candidate =
                    json!({"content": {"parts": [{"text": piece}], "role": "model"}, "index": 0});
                if last {
                    candidate["finishReason"] = json!("STOP");
                }
                let chunk = json!({"candidates": [candidate],
                    "usageMetadata": {"promptTokenCount": input, "candidatesTokenCount": written,
                                      "totalTokenCount": input + written},
                    "modelVersion": model});
                stream += &format!("data: {chunk}\r\n\r\n");
            }
            event_stream(stream)
        }
        _ => json_reply(
            StatusCode::BAD_REQUEST,
            json!({"error": {"code": 400, "message": format!("unknown method {method}"), "status": "INVALID_ARGUMENT"}}),
        ),
    }
}

/// Scores the documents in reverse of the order they came in: the last
/// candidate is the most relevant. Reports its usage as llama.cpp does.
async fn rerank(
    State(state): State<Arc<DoubleState>>,
    uri: Uri,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    record(&state, &uri, &headers, &body);
    if state.rerank_down.load(Ordering::SeqCst) {
        return json_reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": {"message": "the reranker crashed"}}),
        );
    }
    let documents = body["documents"].as_array().cloned().unwrap_or_default();
    let results: Vec<Value> = documents
        .iter()
        .enumerate()
        .map(|(index, _)| json!({"index": index, "relevance_score": index as f32 / documents.len() as f32}))
        .collect();
    let used: u64 = documents.iter().map(|d| tokens(d.as_str().unwrap_or_default())).sum();
    json_reply(
        StatusCode::OK,
        json!({"model": body["model"], "results": results,
                                      "usage": {"prompt_tokens": used, "total_tokens": used}}),
    )
}

/// The handbook's pages, one document (and one chunk) each.
const HANDBOOK: [(&str, &str); 4] = [
    ("webhooks.md", "# Webhooks\n\nA webhook sends an HTTP POST to your endpoint whenever an order ships. Register it under Settings.\n"),
    ("refunds.md", "# Refunds\n\nRefunds are paid back to the original card within five working days.\n"),
    ("passwords.md", "# Passwords\n\nPasswords are reset from the sign-in page with the link we email you.\n"),
    ("exports.md", "# Exports\n\nExports of every order are written as CSV files once a night.\n"),
];

/// Lore with the handbook indexed, the answer cache off, signed in, and a
/// secret key with the answer and retrieve scopes.
async fn app_with_handbook() -> (TestApp, String) {
    fn no_second_opinions(settings: &mut engine::Settings) {
        // Narrow passes are not put to a judge here: the escalation chain's
        // tiers are what these tests count.
        settings.answer.verification_margin = 0.0;
    }
    let app = spawn_app_with(Options { configure: Some(no_second_opinions), ..Options::default() }).await;
    app.sign_in_with_bootstrap_link().await;
    let source: Value = app
        .post_json("/admin/sources/", json!({"name": "Handbook", "kind": "upload"}))
        .await
        .json()
        .await
        .unwrap();
    let source = source["id"].as_str().unwrap().to_owned();
    for (name, text) in HANDBOOK {
        let form = reqwest::multipart::Form::new()
            .part("file", reqwest::multipart::Part::bytes(text.as_bytes().to_vec()).file_name(name));
        let received = app
            .client
            .post(app.url(&format!("/admin/sources/{source}/files")))
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(received.status(), 202);
        let receipts: Value = received.json().await.unwrap();
        assert_eq!(finished(&app, receipts[0]["job"]["id"].as_str().unwrap()).await["status"], "succeeded");
    }
    // Each question here is answered by a model, not by the cache.
    let tuned =
        app.client.put(app.url("/admin/tuning")).json(&json!({"cache_enabled": false})).send().await.unwrap();
    assert_eq!(tuned.status(), 200, "{:?}", tuned.text().await);
    let key: Value = app
        .post_json(
            "/admin/keys",
            json!({"name": "backend", "kind": "secret", "scopes": ["answer", "retrieve"]}),
        )
        .await
        .json()
        .await
        .unwrap();
    (app, key["raw_key"].as_str().unwrap().to_owned())
}

/// An account of `kind` at the double, with `key`.
async fn account(app: &TestApp, double: &Double, kind: &str, key: &str) -> String {
    let endpoint = double.base(kind);
    let response = app
        .post_json("/admin/providers/accounts", json!({"kind": kind, "endpoint": endpoint, "api_key": key}))
        .await;
    assert_eq!(response.status(), 201, "{:?}", response.text().await);
    let account: Value = response.json().await.unwrap();
    assert_eq!(account["placement"], "off_node", "a hosted family is off-node: {account}");
    account["id"].as_str().unwrap().to_owned()
}

/// A target of `model` on `account`, probed; its view.
async fn probed_target(app: &TestApp, account: &str, capability: &str, model: &str) -> Value {
    let target: Value = app
        .post_json(
            "/admin/targets",
            json!({"account_id": account, "capability": capability, "model": model,
                   "input_price_per_mtok": 3.0, "output_price_per_mtok": 15.0}),
        )
        .await
        .json()
        .await
        .unwrap();
    let id = target["id"].as_str().unwrap_or_else(|| panic!("{target}"));
    app.post_json(&format!("/admin/targets/{id}/probe"), json!({})).await.json().await.unwrap()
}

async fn bind(app: &TestApp, role: &str, target: &Value) {
    let bound = app
        .client
        .put(app.url(&format!("/admin/roles/{role}")))
        .json(&json!({"target_id": target["id"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(bound.status(), 200, "{:?}", bound.text().await);
}

async fn ask(app: &TestApp, key: &str, question: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(app.url("/answer"))
        .header("x-api-key", key)
        .json(&json!({ "question": question }))
        .send()
        .await
        .unwrap()
}

/// The streamed `/answer`: the token pieces and the final answer object.
async fn ask_streamed(app: &TestApp, key: &str, question: &str) -> (Vec<String>, Value) {
    let response = reqwest::Client::new()
        .post(app.url("/answer"))
        .header("x-api-key", key)
        .json(&json!({ "question": question, "stream": true }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    let mut pieces = Vec::new();
    let mut answer = Value::Null;
    for event in body.split("\n\n") {
        let name = event.lines().find_map(|l| l.strip_prefix("event: ")).unwrap_or_default();
        let data = event.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or("null");
        match name {
            "token" => {
                pieces.push(serde_json::from_str::<Value>(data).unwrap()["text"].as_str().unwrap().to_owned())
            }
            "answer" => answer = serde_json::from_str(data).unwrap(),
            _ => {}
        }
    }
    assert!(answer.is_object(), "{body}");
    (pieces, answer)
}

fn stages<'a>(answer: &'a Value, name: &str) -> Vec<&'a Value> {
    answer["trace"]["stages"].as_array().unwrap().iter().filter(|s| s["stage"] == name).collect()
}

/// Log lines written while the test runs (its runtime has one thread, so
/// the app's tasks log here too).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test]
async fn anthropic_and_gemini_stream_answers_count_usage_and_keep_vendor_errors_for_the_console() {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
    let _logging = tracing::subscriber::set_default(subscriber);

    let double = Double::start().await;
    let (app, key) = app_with_handbook().await;

    // A wrong key is refused by each service in its own way (Gemini says
    // so with HTTP 400); both block the target with the reason.
    let wrong = account(&app, &double, "gemini", "AIzaSyWrongKey000000000000000000000000").await;
    let blocked = probed_target(&app, &wrong, "generation", "grounded-gemini").await;
    assert_eq!(blocked["state"], "blocked", "{blocked}");
    assert!(blocked["probe_error"].as_str().unwrap().contains("refused the API key"), "{blocked}");
    // Rotated to the right key (a blank key would keep the stored one), it
    // probes ready; the history keeps both probes, newest first.
    let kept = app
        .client
        .put(app.url(&format!("/admin/providers/accounts/{wrong}")))
        .json(&json!({"kind": "gemini", "endpoint": double.base("gemini"), "api_key": ""}))
        .send()
        .await
        .unwrap();
    assert_eq!(kept.status(), 200);
    let id = blocked["id"].as_str().unwrap();
    let still: Value =
        app.post_json(&format!("/admin/targets/{id}/probe"), json!({})).await.json().await.unwrap();
    assert_eq!(still["state"], "blocked", "a blank key kept the wrong one");
    let rotated = app
        .client
        .put(app.url(&format!("/admin/providers/accounts/{wrong}")))
        .json(&json!({"kind": "gemini", "endpoint": double.base("gemini"), "api_key": GEMINI_KEY}))
        .send()
        .await
        .unwrap();
    assert_eq!(rotated.status(), 200);
    let gemini: Value =
        app.post_json(&format!("/admin/targets/{id}/probe"), json!({})).await.json().await.unwrap();
    assert_eq!(gemini["state"], "ready", "{gemini}");
    let history: Value = app.get(&format!("/admin/targets/{id}/probes")).await.json().await.unwrap();
    let oks: Vec<bool> = history.as_array().unwrap().iter().map(|p| p["ok"].as_bool().unwrap()).collect();
    assert_eq!(oks, [true, false, false], "{history:#}");
    assert!(history[1]["error"].as_str().unwrap().contains("API key not valid"), "{history:#}");
    let gemini_account = wrong;

    let anthropic_account = account(&app, &double, "anthropic", "sk-ant-api03-wrong-key-000000000000").await;
    let refused = probed_target(&app, &anthropic_account, "generation", "grounded-claude").await;
    assert_eq!(refused["state"], "blocked");
    assert!(refused["probe_error"].as_str().unwrap().contains("invalid x-api-key"), "{refused}");
    app.client
        .put(app.url(&format!("/admin/providers/accounts/{anthropic_account}")))
        .json(&json!({"kind": "anthropic", "endpoint": double.base("anthropic"), "api_key": ANTHROPIC_KEY}))
        .send()
        .await
        .unwrap();
    let id = refused["id"].as_str().unwrap();
    let claude: Value =
        app.post_json(&format!("/admin/targets/{id}/probe"), json!({})).await.json().await.unwrap();
    assert_eq!(claude["state"], "ready", "{claude}");
    let models: Value =
        app.get(&format!("/admin/providers/accounts/{anthropic_account}/models")).await.json().await.unwrap();
    assert_eq!(models, json!(["grounded-claude"]));
    let models: Value =
        app.get(&format!("/admin/providers/accounts/{gemini_account}/models")).await.json().await.unwrap();
    assert_eq!(models, json!(["grounded-gemini"]));

    // What each family offers: Gemini embeds (probed with a real
    // batchEmbedContents call), Anthropic does not.
    let embedding = probed_target(&app, &gemini_account, "embedding", "text-embedding-004").await;
    assert_eq!(embedding["state"], "ready", "{embedding}");
    let no_embedding = app
        .post_json(
            "/admin/targets",
            json!({"account_id": anthropic_account, "capability": "embedding", "model": "x"}),
        )
        .await;
    assert_eq!(no_embedding.status(), 422);
    assert_eq!(no_embedding.json::<Value>().await.unwrap()["error"]["code"], "invalid_provider");

    // Each family answers, streamed piece by piece, with its usage and cost.
    for (target, question) in [(&claude, "How do webhooks work?"), (&gemini, "How does a webhook work?")] {
        bind(&app, "generation", target).await;
        let (pieces, answer) = ask_streamed(&app, &key, question).await;
        assert_eq!(answer["refused"], false, "{answer:#}");
        assert!(pieces.len() > 1, "the reply arrived in pieces: {pieces:?}");
        assert_eq!(pieces.concat().trim(), answer["answer"].as_str().unwrap());
        assert!(answer["answer"].as_str().unwrap().contains("HTTP POST"), "{answer:#}");
        assert_eq!(answer["citations"][0]["index"], 1);
        let usage = &answer["trace"]["usage"];
        let (input, output) =
            (usage["input_tokens"].as_f64().unwrap(), usage["output_tokens"].as_f64().unwrap());
        assert!(input > 20.0 && output > 3.0, "{usage}");
        let cost = usage["estimated_cost_usd"].as_f64().unwrap();
        assert!((cost - (input * 3.0 + output * 15.0) / 1e6).abs() < 1e-9, "{usage}");
    }

    // The double saw each protocol's shape.
    let seen = double.seen();
    let anthropic = seen.iter().rev().find(|s| s.path.ends_with("/messages")).unwrap();
    assert_eq!(anthropic.headers["anthropic-version"], "2023-06-01");
    assert!(anthropic.headers.get("authorization").is_none(), "the key goes in x-api-key only");
    assert!(anthropic.body["system"].as_str().unwrap().contains("Answer only from the numbered passages"));
    assert_eq!(anthropic.body["messages"][0]["role"], "user");
    assert_eq!(anthropic.body["stream"], true);
    let google = seen.iter().rev().find(|s| s.path.ends_with(":streamGenerateContent")).unwrap();
    assert_eq!(google.query, "alt=sse");
    assert!(google.body["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .unwrap()
        .contains("numbered passages"));
    assert!(google.body["generationConfig"]["maxOutputTokens"].is_u64());

    // The services fail. An API key's caller learns only that the provider
    // did not answer; the Playground's admin reads the vendor's message; the
    // log keeps it; the key is in none of them.
    double.state.overloaded.store(true, Ordering::SeqCst);
    for (target, question, vendor_says) in [
        (&claude, "How are refunds paid?", "Overloaded"),
        (&gemini, "When are refunds paid back?", "The model is overloaded"),
    ] {
        bind(&app, "generation", target).await;
        let public = ask(&app, &key, question).await;
        assert_eq!(public.status(), 502);
        let public: Value = public.json().await.unwrap();
        assert_eq!(public["error"]["code"], "provider_unavailable", "{public}");
        assert!(
            !public.to_string().contains(vendor_says) && !public.to_string().contains("127.0.0.1"),
            "{public}"
        );
        let admin = app.post_json("/admin/playground/answer", json!({"question": question})).await;
        assert_eq!(admin.status(), 502);
        let admin: Value = admin.json().await.unwrap();
        assert_eq!(admin["error"]["code"], "provider_unavailable");
        assert!(admin["error"]["message"].as_str().unwrap().contains(vendor_says), "{admin}");
        assert!(!admin.to_string().contains(ANTHROPIC_KEY), "{admin}");
    }
    let logged = logs.text();
    assert!(logged.contains("Overloaded"), "the log keeps the vendor's message: {logged}");
    for secret in [ANTHROPIC_KEY, GEMINI_KEY] {
        assert!(!logged.contains(secret), "a key reached the log");
    }
}

#[tokio::test]
async fn each_escalation_tier_is_tried_only_when_the_one_before_was_ungrounded() {
    let double = Double::start().await;
    let (app, key) = app_with_handbook().await;
    let claude = account(&app, &double, "anthropic", ANTHROPIC_KEY).await;
    let gemini = account(&app, &double, "gemini", GEMINI_KEY).await;
    let first = probed_target(&app, &claude, "generation", "vague-claude").await;
    let tier1 = probed_target(&app, &gemini, "generation", "vague-gemini").await;
    let tier2 = probed_target(&app, &claude, "generation", "grounded-claude").await;
    let grounded_gemini = probed_target(&app, &gemini, "generation", "grounded-gemini").await;
    bind(&app, "generation", &first).await;

    // Further tiers start at the escalation role: refused while it is unbound.
    let set_tiers = |ids: Vec<&Value>| {
        app.client
            .put(app.url("/admin/providers/escalation-tiers"))
            .json(&json!({ "target_ids": ids }))
            .send()
    };
    let early = set_tiers(vec![&tier2["id"]]).await.unwrap();
    assert_eq!(early.status(), 422, "{:?}", early.text().await);
    bind(&app, "escalation", &tier1).await;
    // A target twice in the chain, or one not ready, is refused.
    assert_eq!(set_tiers(vec![&tier1["id"]]).await.unwrap().status(), 422);
    let set = set_tiers(vec![&tier2["id"]]).await.unwrap();
    assert_eq!(set.status(), 200, "{:?}", set.text().await);
    let overview: Value = set.json().await.unwrap();
    assert_eq!(overview["further_tiers"], json!([tier2["id"]]));

    // The first tier and tier 1 do not ground their answers; tier 2 does,
    // and its answer is served. Each tier's decision and cost is traced.
    let answered: Value = ask(&app, &key, "When are refunds paid back?").await.json().await.unwrap();
    assert_eq!(answered["refused"], false, "{answered:#}");
    assert!(answered["answer"].as_str().unwrap().contains("five working days"), "{answered:#}");
    assert_eq!(answered["trace"]["model"], "grounded-claude");
    let escalations = stages(&answered, "escalation");
    let decisions: Vec<&str> = escalations.iter().map(|s| s["decision"].as_str().unwrap()).collect();
    assert_eq!(decisions, ["tier1_ungrounded", "tier2_grounded"], "{answered:#}");
    assert!(escalations.iter().all(|s| s["cost_usd"].as_f64().unwrap() > 0.0), "{answered:#}");

    // Tier 1 grounded: tier 2 is never called.
    bind(&app, "escalation", &grounded_gemini).await;
    let overview: Value = app.get("/admin/providers/").await.json().await.unwrap();
    assert_eq!(overview["further_tiers"], json!([tier2["id"]]), "rebinding tier 1 keeps the chain");
    let tier2_calls = double.calls_to("grounded-claude");
    let answered: Value = ask(&app, &key, "How do I reset a password?").await.json().await.unwrap();
    assert_eq!(answered["refused"], false, "{answered:#}");
    let decisions: Vec<Value> =
        stages(&answered, "escalation").iter().map(|s| s["decision"].clone()).collect();
    assert_eq!(decisions, [json!("tier1_grounded")], "{answered:#}");
    assert_eq!(double.calls_to("grounded-claude"), tier2_calls, "tier 2 was not called");

    // Every tier ungrounded: the terminal refusal, after each tier's try.
    bind(&app, "escalation", &tier1).await;
    let vague_claude_2 = probed_target(&app, &claude, "generation", "vague-claude-2").await;
    assert_eq!(set_tiers(vec![&vague_claude_2["id"]]).await.unwrap().status(), 200);
    let refused: Value = ask(&app, &key, "How often are exports written?").await.json().await.unwrap();
    assert_eq!(refused["refused"], true, "{refused:#}");
    let decisions: Vec<Value> =
        stages(&refused, "escalation").iter().map(|s| s["decision"].clone()).collect();
    assert_eq!(decisions, [json!("tier1_ungrounded"), json!("tier2_ungrounded")], "{refused:#}");

    // A tier whose target is disabled is passed over, and says so.
    let disabled = app
        .client
        .patch(app.url(&format!("/admin/targets/{}", vague_claude_2["id"].as_str().unwrap())))
        .json(&json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(disabled.status(), 200, "{:?}", disabled.text().await);
    let calls = double.calls_to("vague-claude-2");
    let refused: Value = ask(&app, &key, "How often are exports written?").await.json().await.unwrap();
    assert_eq!(refused["refused"], true, "{refused:#}");
    let decisions: Vec<Value> =
        stages(&refused, "escalation").iter().map(|s| s["decision"].clone()).collect();
    assert_eq!(decisions, [json!("tier1_ungrounded"), json!("tier2_disabled")], "{refused:#}");
    assert_eq!(double.calls_to("vague-claude-2"), calls, "a disabled tier is not called");

    // The funnel counts each tier's decisions, with what they cost, and
    // shows the disabled tier.
    let dashboard: Value =
        app.post_json("/admin/observability/", json!({"hours": 1})).await.json().await.unwrap();
    let funnel = dashboard["funnel"].as_array().unwrap();
    let count = |decision: &str| {
        funnel
            .iter()
            .find(|f| f["stage"] == "escalation" && f["decision"] == decision)
            .map_or(0, |f| f["count"].as_i64().unwrap())
    };
    assert_eq!(
        (
            count("tier1_ungrounded"),
            count("tier1_grounded"),
            count("tier2_grounded"),
            count("tier2_ungrounded")
        ),
        (3, 1, 1, 1),
        "{dashboard:#}"
    );
    assert_eq!(count("tier2_disabled"), 1, "{dashboard:#}");
    let spend = funnel.iter().find(|f| f["decision"] == "tier2_grounded").unwrap()["estimated_spend_usd"]
        .as_f64()
        .unwrap();
    assert!(spend > 0.0, "{dashboard:#}");
    assert!(funnel.iter().any(|f| f["stage"] == "answer" && f["decision"] == "refused"), "{dashboard:#}");

    // An account whose target is a further tier is in use: not deleted.
    let refused =
        app.client.delete(app.url(&format!("/admin/providers/accounts/{claude}"))).send().await.unwrap();
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "provider_in_use");
    assert!(body["error"]["message"].as_str().unwrap().contains("escalation (tier 2)"), "{body}");
    // Unbinding the escalation role ends the chain.
    let unbound = app
        .client
        .put(app.url("/admin/roles/escalation"))
        .json(&json!({"target_id": null}))
        .send()
        .await
        .unwrap();
    assert_eq!(unbound.status(), 200);
    let overview: Value = unbound.json().await.unwrap();
    assert_eq!(overview["further_tiers"], json!([]), "{overview:#}");
}

#[tokio::test]
async fn a_bound_reranker_reorders_the_best_candidates_and_the_trace_shows_it() {
    let double = Double::start().await;
    let (app, key) = app_with_handbook().await;
    let retrieve = |query: &'static str| {
        let (app, key) = (&app, &key);
        async move {
            let response = reqwest::Client::new()
                .post(app.url("/retrieve"))
                .header("x-api-key", key)
                .json(&json!({ "query": query, "top_k": 2 }))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            response.json::<Value>().await.unwrap()
        }
    };
    let ids = |found: &Value| -> Vec<String> {
        found["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["chunk_id"].as_str().unwrap().to_owned())
            .collect()
    };
    // A low cutoff, so that several candidates pass it, and a pool of three.
    let tuned = app
        .client
        .put(app.url("/admin/tuning"))
        .json(&json!({"score_cutoff": 0.0, "rerank_candidates": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(tuned.status(), 200, "{:?}", tuned.text().await);
    let query = "refunds paid back to the card";
    let fused = retrieve(query).await;
    assert!(stages(&fused, "rerank").is_empty(), "no reranker bound: no stage");
    let fused_ids = ids(&fused);
    assert_eq!(fused_ids.len(), 2);
    // The fused order of the three best, for comparison.
    let three = reqwest::Client::new()
        .post(app.url("/retrieve"))
        .header("x-api-key", &key)
        .json(&json!({ "query": query, "top_k": 3 }))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let three = ids(&three);
    assert_eq!(three.len(), 3);

    let reranker = app
        .post_json("/admin/providers/accounts", json!({"kind": "custom", "endpoint": double.base("rerank")}))
        .await
        .json::<Value>()
        .await
        .unwrap();
    let target = probed_target(&app, reranker["id"].as_str().unwrap(), "rerank", "bge-reranker-double").await;
    assert_eq!(target["state"], "ready", "{target}");
    bind(&app, "rerank", &target).await;

    // The double ranks the last candidate it is given first: with a pool of
    // three, the top two are the third and second fused results.
    let reranked = retrieve(query).await;
    assert_eq!(ids(&reranked), [three[2].clone(), three[1].clone()], "{reranked:#}");
    let stage = stages(&reranked, "rerank");
    assert_eq!(stage.len(), 1, "{reranked:#}");
    assert_eq!(stage[0]["decision"], "reordered");
    assert!(
        stage[0]["reason"].as_str().unwrap().contains("bge-reranker-double scored 3 candidates"),
        "{stage:?}"
    );
    let scores = reranked["trace"]["retrieval"].as_array().unwrap();
    assert!(scores[0]["rerank_score"].as_f64().unwrap() > scores[1]["rerank_score"].as_f64().unwrap());
    let last = double.seen().into_iter().rev().find(|s| s.path.ends_with("/rerank")).unwrap();
    assert_eq!(last.body["documents"].as_array().unwrap().len(), 3, "the pool is the setting");
    assert_eq!(last.body["query"], query);

    // An answer goes through the same stage.
    let gemini = account(&app, &double, "gemini", GEMINI_KEY).await;
    let generation = probed_target(&app, &gemini, "generation", "grounded-gemini").await;
    bind(&app, "generation", &generation).await;
    let answered: Value = ask(&app, &key, "How are refunds paid back?").await.json().await.unwrap();
    let stage = stages(&answered, "rerank");
    assert_eq!(stage.len(), 1, "{answered:#}");
    assert_eq!(stage[0]["decision"], "reordered");
    assert!(stage[0]["cost_usd"].as_f64().unwrap() > 0.0, "priced by its input tokens: {stage:?}");

    // A reranker that fails never stops retrieval: the fused order stands.
    double.state.rerank_down.store(true, Ordering::SeqCst);
    let fallback = retrieve(query).await;
    assert_eq!(ids(&fallback), fused_ids);
    assert_eq!(stages(&fallback, "rerank")[0]["decision"], "failed");
}
