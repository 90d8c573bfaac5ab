//! What the HTTP API takes in a body: only a JSON object on every JSON
//! route; a question or query the engine's normalisation leaves empty is
//! refused as the OpenAPI document says; a provider key that cannot go into
//! a header is refused before any call and stores nothing.

use serde_json::{json, Value};

use super::helpers::{spawn_app_with, Options, TestApp};

/// A signed-in admin, and an access key for both public routes.
async fn app_with_key() -> (TestApp, String) {
    let app = spawn_app_with(Options { without_models: true, ..Options::default() }).await;
    app.sign_in_with_bootstrap_link().await;
    let created = app
        .post_json(
            "/admin/keys",
            json!({"name": "bodies", "kind": "secret", "scopes": ["answer", "retrieve"]}),
        )
        .await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let key = created["raw_key"].as_str().unwrap().to_owned();
    (app, key)
}

/// Sends `body` as it is, declared as JSON: to a public route with the key,
/// to an admin route with the session.
async fn post_raw(app: &TestApp, key: &str, path: &str, body: &str) -> (u16, Value) {
    let client = if path.starts_with("/admin/") { app.client.clone() } else { reqwest::Client::new() };
    let response = client
        .post(app.url(path))
        .header("x-api-key", key)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn every_json_route_takes_only_an_object() {
    let (app, key) = app_with_key().await;
    // An array used to pass as the struct's fields in order (`/retrieve`
    // answered 200); a scalar was refused with a message naming the struct.
    for path in ["/retrieve", "/answer", "/admin/observability/"] {
        for body in
            [r#"["alpha beacon", 3]"#, r#"["alpha beacon", false]"#, "[null, null]", r#""x""#, "3", "null"]
        {
            let (status, answered) = post_raw(&app, &key, path, body).await;
            assert_eq!(status, 422, "{path} {body}: {answered}");
            assert_eq!(answered["error"]["code"], "invalid_input", "{path} {body}");
            assert_eq!(answered["error"]["message"], "The body must be a JSON object.", "{path} {body}");
        }
        // Not JSON at all is still malformed, whatever it starts with.
        let (status, answered) = post_raw(&app, &key, path, r#"["alpha beacon","#).await;
        assert_eq!((status, answered["error"]["code"].as_str()), (400, Some("malformed_json")), "{path}");
    }
    // The same route takes the object, and its fields are checked as before.
    let (status, answered) = post_raw(&app, &key, "/admin/observability/", r#" {"hours": 24}"#).await;
    assert_eq!(status, 200, "{answered}");
    let (status, answered) = post_raw(&app, &key, "/admin/observability/", r#"{"hours": "a day"}"#).await;
    assert_eq!(status, 422, "{answered}");
    assert_ne!(answered["error"]["message"], "The body must be a JSON object.");
    // Another admin route, through the same extractor.
    let (status, answered) = post_raw(&app, &key, "/admin/keys", r#"["bodies", "secret"]"#).await;
    assert_eq!((status, answered["error"]["code"].as_str()), (422, Some("invalid_input")), "{answered}");
}

#[tokio::test]
async fn a_question_of_whitespace_alone_is_refused_as_the_document_says() {
    let (app, key) = app_with_key().await;
    // U+0085 (next line) is Unicode whitespace: the engine's normalisation
    // leaves nothing, though the raw text has one character.
    for (path, body) in [
        ("/answer", r#"{"question": "\u0085"}"#),
        ("/answer", r#"{"question": " \u3000\t\u0085 "}"#),
        ("/retrieve", r#"{"query": "\u0085"}"#),
        ("/retrieve", r#"{"query": "\u2028 \u00a0"}"#),
    ] {
        let (status, answered) = post_raw(&app, &key, path, body).await;
        assert_eq!(status, 422, "{body}: {answered}");
        assert_eq!(answered["error"]["code"], "invalid_input", "{body}");
    }

    let document: Value = app.get("/openapi.json").await.json().await.unwrap();
    let schemas = &document["components"]["schemas"];
    for (field, name) in [
        (&schemas["AnswerRequest"]["properties"]["question"], "question"),
        (&schemas["RetrieveRequest"]["properties"]["query"], "query"),
    ] {
        let description = field["description"].as_str().unwrap();
        assert!(description.contains("U+0085") && description.contains("422 `invalid_input`"), "{name}");
        assert!(description.contains("Unicode `White_Space`"), "{name}");
        // The pattern is the machine-readable form: some character outside
        // the whitespace it lists, U+0085 among them.
        let pattern = field["pattern"].as_str().unwrap();
        assert!(pattern.starts_with("[^") && pattern.contains(r"\u0085"), "{name}: {pattern}");
    }
    // The documented 422s name the rule too.
    let answer_422 =
        document["paths"]["/answer"]["post"]["responses"]["422"]["description"].as_str().unwrap();
    assert!(answer_422.contains("not a JSON object") && answer_422.contains("normalised"), "{answer_422}");
    // One event of the stream is `{"event", "data"}`, with each event's schema.
    let stream = &document["paths"]["/answer"]["post"]["responses"]["200"]["content"]["text/event-stream"];
    assert_eq!(stream["schema"]["type"], "object");
    assert_eq!(stream["schema"]["required"], serde_json::json!(["event", "data"]));
    for event in ["stage", "token", "answer", "error"] {
        assert!(stream["x-sse-events"][event]["schema"]["$ref"].is_string(), "{event}: {stream}");
    }
}

#[tokio::test]
async fn a_provider_key_with_control_characters_is_refused_before_any_call() {
    let (app, _) = app_with_key().await;
    // An endpoint that would take the probe's connection: none may come.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let endpoint = format!("http://{}/v1", listener.local_addr().unwrap());

    let refused = |response: reqwest::Response| async move {
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["error"]["code"], "invalid_input", "{body}");
        body["error"]["message"].as_str().unwrap().to_owned()
    };
    for key in ["\u{0}", "sk-abc\u{0}def", "sk-abc\ndef", "sk-\u{7f}", "sk-\u{85}x", "sk-schlüssel"] {
        let add = json!({"kind": "custom", "endpoint": endpoint, "model": "m", "api_key": key});
        let message = refused(app.post_json("/admin/providers/quick-add", add).await).await;
        assert!(message.contains("API key") && !message.contains(key), "{message}");
        let create = json!({"kind": "custom", "endpoint": endpoint, "api_key": key});
        refused(app.post_json("/admin/providers/accounts", create).await).await;
    }
    // The brief's exact body, escaped in the JSON text.
    let raw = format!(r#"{{"kind": "custom", "endpoint": "{endpoint}", "model": "m", "api_key": "\u0000"}}"#);
    let response = app
        .client
        .post(app.url("/admin/providers/quick-add"))
        .header("content-type", "application/json")
        .body(raw)
        .send()
        .await
        .unwrap();
    refused(response).await;
    assert!(
        listener.accept().is_err_and(|err| err.kind() == std::io::ErrorKind::WouldBlock),
        "no call was made"
    );
    let overview: Value = app.get("/admin/providers/").await.json().await.unwrap();
    assert!(overview["accounts"].as_array().unwrap().is_empty(), "nothing stored: {overview}");
    assert!(overview["targets"].as_array().unwrap().is_empty(), "{overview}");

    // A key pasted with a newline after it is fine: keys are trimmed.
    let created = app
        .post_json(
            "/admin/providers/accounts",
            json!({"kind": "custom", "endpoint": endpoint, "api_key": "sk-abc\n"}),
        )
        .await;
    assert_eq!(created.status(), 201, "{:?}", created.text().await);
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["has_api_key"], true);
    // An edit with a bad key is refused and keeps the account as it was.
    let id = created["id"].as_str().unwrap();
    let edit = app
        .client
        .put(app.url(&format!("/admin/providers/accounts/{id}")))
        .json(&json!({"kind": "custom", "endpoint": endpoint, "name": "renamed", "api_key": "sk-\u{1b}[0m"}))
        .send()
        .await
        .unwrap();
    refused(edit).await;
    let overview: Value = app.get("/admin/providers/").await.json().await.unwrap();
    let accounts = overview["accounts"].as_array().unwrap();
    assert_eq!(accounts.len(), 1, "{overview}");
    assert_ne!(accounts[0]["name"], "renamed", "{overview}");
    assert!(listener.accept().is_err(), "no call was made");
}
