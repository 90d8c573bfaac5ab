//! Access keys and profile versions over HTTP: a key's raw value appears in
//! the create response only; revoked → 401, wrong scope → 403, a widget key
//! from a foreign origin → 403 and no CORS; two saves from one base → one
//! 201 and one 409; restore activates the old snapshot.

use std::net::SocketAddr;

use axum::extract::connect_info::MockConnectInfo;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::helpers::spawn_app;

#[tokio::test]
async fn a_key_is_shown_once_and_the_public_layer_enforces_status_and_scope() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;

    let created = app
        .post_json("/admin/keys", json!({"name": "backend", "kind": "secret", "scopes": ["retrieve"]}))
        .await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let raw = created["raw_key"].as_str().unwrap().to_owned();
    assert!(raw.starts_with("lore_sk_"));
    let listed = app.get("/admin/keys").await.text().await.unwrap();
    assert!(!listed.contains(&raw), "the list never carries the raw key");
    assert!(listed.contains(created["key"]["prefix"].as_str().unwrap()));
    let page = app.get("/access").await.text().await.unwrap();
    assert!(!page.contains(&raw));

    let public = reqwest::Client::new();
    let retrieve = |key: Option<&str>| {
        let mut request = public.post(app.url("/retrieve")).json(&json!({"query": "backups"}));
        if let Some(key) = key {
            request = request.header("x-api-key", key);
        }
        request.send()
    };
    let ok = retrieve(Some(&raw)).await.unwrap();
    assert_eq!(ok.status(), 200, "{:?}", ok.text().await);
    let body: Value = retrieve(Some(&raw)).await.unwrap().json().await.unwrap();
    assert!(body["results"].is_array() && body["trace"]["stages"].is_array(), "{body}");

    let missing = retrieve(None).await.unwrap();
    assert_eq!(missing.status(), 401);
    assert_eq!(missing.json::<Value>().await.unwrap()["error"]["code"], "missing_api_key");
    let unknown = retrieve(Some("lore_sk_0000000000000000000000000000000")).await.unwrap();
    assert_eq!(unknown.status(), 401);
    assert_eq!(unknown.json::<Value>().await.unwrap()["error"]["code"], "invalid_api_key");

    // An answer-only key may not retrieve.
    let answer_only: Value = app
        .post_json("/admin/keys", json!({"name": "asker", "kind": "secret", "scopes": ["answer"]}))
        .await
        .json()
        .await
        .unwrap();
    let wrong_scope = retrieve(answer_only["raw_key"].as_str()).await.unwrap();
    assert_eq!(wrong_scope.status(), 403);
    assert_eq!(wrong_scope.json::<Value>().await.unwrap()["error"]["code"], "insufficient_scope");

    // Revoked: 401 at once.
    let id = created["key"]["id"].as_str().unwrap();
    let revoked = app.post_json(&format!("/admin/keys/{id}/revoke"), json!({})).await;
    assert_eq!(revoked.status(), 200);
    assert_eq!(revoked.json::<Value>().await.unwrap()["status"], "revoked");
    let refused = retrieve(Some(&raw)).await.unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(refused.json::<Value>().await.unwrap()["error"]["code"], "key_revoked");

    // Usage was recorded for the two successful calls (counted after the response).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let keys: Value = app.get("/admin/keys").await.json().await.unwrap();
    let listed = keys.as_array().unwrap().iter().find(|k| k["id"] == id).unwrap();
    assert_eq!(listed["queries_7d"], 2, "{listed}");

    // Another method, or a body over the limit: 4xx with a code, in the one
    // error shape (with a key of their own, so the counts above hold).
    let spare: Value = app
        .post_json("/admin/keys", json!({"name": "spare", "kind": "secret", "scopes": ["retrieve"]}))
        .await
        .json()
        .await
        .unwrap();
    let spare = spare["raw_key"].as_str().unwrap();
    let wrong_method = public.get(app.url("/retrieve")).header("x-api-key", spare).send().await.unwrap();
    assert_eq!(wrong_method.status(), 405);
    assert_eq!(wrong_method.json::<Value>().await.unwrap()["error"]["code"], "method_not_allowed");
    // The method is wrong whoever asks: no key check stands before that answer.
    let keyless = public.get(app.url("/answer")).send().await.unwrap();
    assert_eq!(keyless.status(), 405);
    assert_eq!(keyless.json::<Value>().await.unwrap()["error"]["code"], "method_not_allowed");
    // In-process: over TCP the server's early reply races the rest of the upload.
    let huge = json!({"query": "x".repeat(3 * 1024 * 1024)}).to_string();
    let request = axum::http::Request::post("/retrieve")
        .header("x-api-key", spare)
        .header("content-type", "application/json")
        .body(axum::body::Body::from(huge))
        .unwrap();
    let router = lore_server::serve::app(app.lore.clone())
        .layer(MockConnectInfo(SocketAddr::from(([127, 0, 0, 1], 40000))));
    let too_large = router.oneshot(request).await.unwrap();
    assert_eq!(too_large.status(), 413);
    let body = axum::body::to_bytes(too_large.into_body(), 1 << 16).await.unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&body).unwrap()["error"]["code"], "payload_too_large");
}

#[tokio::test]
async fn publicly_cached_documents_never_carry_a_session_cookie() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    // A stale cookie makes the console's session layer clear it in its reply;
    // a shared cache must never get such a reply, nor a fresh session token.
    let stale = reqwest::Client::new();
    for path in ["/widget.js", "/openapi.json"] {
        let response = stale.get(app.url(path)).header("cookie", "lore_session=stale").send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert!(response.headers().get("set-cookie").is_none(), "{path}: {:?}", response.headers());
    }
    // The console itself still clears it.
    let console = stale
        .get(app.url("/admin/setup-state/"))
        .header("cookie", "lore_session=stale")
        .send()
        .await
        .unwrap();
    assert!(console.headers().get("set-cookie").is_some());
}

#[tokio::test]
async fn widget_keys_get_cors_only_for_their_origins() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    let created: Value = app
        .post_json(
            "/admin/keys",
            json!({"name": "docs widget", "kind": "widget", "origins": ["https://docs.example.com"]}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(created["key"]["scopes"], json!(["answer"]));
    let raw = created["raw_key"].as_str().unwrap().to_owned();
    let public = reqwest::Client::new();

    let preflight = |origin: &'static str| {
        public
            .request(reqwest::Method::OPTIONS, app.url("/answer"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type, x-api-key")
            .send()
    };
    let allowed = preflight("https://docs.example.com").await.unwrap();
    assert_eq!(allowed.status(), 204);
    assert_eq!(allowed.headers()["access-control-allow-origin"], "https://docs.example.com");
    let foreign = preflight("https://evil.example").await.unwrap();
    assert_eq!(foreign.status(), 403);
    assert!(foreign.headers().get("access-control-allow-origin").is_none());
    // A refused preflight answers in the one error shape, as every refusal does.
    assert_eq!(foreign.json::<Value>().await.unwrap()["error"]["code"], "origin_not_allowed");

    // From a foreign origin the key is refused before anything else.
    let refused = public
        .post(app.url("/retrieve"))
        .header("origin", "https://evil.example")
        .header("x-api-key", &raw)
        .json(&json!({"query": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    assert!(refused.headers().get("access-control-allow-origin").is_none());
    assert_eq!(refused.json::<Value>().await.unwrap()["error"]["code"], "origin_not_allowed");
    // From its own origin it passes the origin check and gets CORS, but it
    // carries the answer scope only.
    let scoped = public
        .post(app.url("/retrieve"))
        .header("origin", "https://docs.example.com")
        .header("x-api-key", &raw)
        .json(&json!({"query": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(scoped.status(), 403);
    assert_eq!(scoped.headers()["access-control-allow-origin"], "https://docs.example.com");
    assert_eq!(scoped.json::<Value>().await.unwrap()["error"]["code"], "insufficient_scope");

    // A request the key let through gets CORS from the key itself: here the
    // handler refuses the body, after the key check passed.
    let passed = public
        .post(app.url("/answer"))
        .header("origin", "https://docs.example.com")
        .header("x-api-key", &raw)
        .json(&json!({"question": 42}))
        .send()
        .await
        .unwrap();
    assert_eq!(passed.status(), 422);
    assert_eq!(passed.headers()["access-control-allow-origin"], "https://docs.example.com");

    // Outside a web page (no Origin) a widget key is refused.
    let pageless = public
        .post(app.url("/answer"))
        .header("x-api-key", &raw)
        .json(&json!({"question": 42}))
        .send()
        .await
        .unwrap();
    assert_eq!(pageless.status(), 403);
    assert_eq!(pageless.json::<Value>().await.unwrap()["error"]["code"], "origin_not_allowed");

    // A secret key pasted into a page, even one a widget key lists, is let
    // through the key check but gets no CORS: no browser may read it.
    let secret: Value = app
        .post_json("/admin/keys", json!({"name": "backend", "kind": "secret", "scopes": ["answer"]}))
        .await
        .json()
        .await
        .unwrap();
    let embedded = public
        .post(app.url("/answer"))
        .header("origin", "https://docs.example.com")
        .header("x-api-key", secret["raw_key"].as_str().unwrap())
        .json(&json!({"question": 42}))
        .send()
        .await
        .unwrap();
    assert_eq!(embedded.status(), 422, "the key check passed");
    assert!(embedded.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn a_widget_key_over_its_rate_gets_429_with_cors_so_the_widget_can_say_so() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    let created: Value = app
        .post_json(
            "/admin/keys",
            json!({"name": "docs widget", "kind": "widget", "origins": ["https://docs.example.com"],
                   "rate_limit_per_minute": 2}),
        )
        .await
        .json()
        .await
        .unwrap();
    let raw = created["raw_key"].as_str().unwrap().to_owned();
    let ask = || {
        reqwest::Client::new()
            .post(app.url("/answer"))
            .header("origin", "https://docs.example.com")
            .header("x-api-key", &raw)
            .json(&json!({"question": 42}))
            .send()
    };
    for _ in 0..2 {
        assert_eq!(ask().await.unwrap().status(), 422, "within the rate: the handler answers");
    }
    let over = ask().await.unwrap();
    assert_eq!(over.status(), 429);
    assert_eq!(over.headers()["access-control-allow-origin"], "https://docs.example.com");
    assert_eq!(over.json::<Value>().await.unwrap()["error"]["code"], "rate_limited");
}

#[tokio::test]
async fn concurrent_profile_saves_one_wins_one_conflicts_and_restore_brings_a_version_back() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    let empty: Value = app.get("/admin/profile").await.json().await.unwrap();
    assert!(empty["active"].is_null());
    assert_eq!(empty["personas"].as_array().unwrap().len(), 5);

    // A misspelt detail is refused, not dropped.
    let misspelt = app
        .client
        .put(app.url("/admin/profile/persona"))
        .json(&json!({"persona": "devrel_guide", "details": {"prodcut": "Lore"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(misspelt.status(), 422);
    let refused: Value = misspelt.json().await.unwrap();
    assert_eq!(refused["error"]["code"], "invalid_input");
    assert!(refused["error"]["message"].as_str().unwrap().contains("prodcut"), "{refused}");

    let chosen = app
        .client
        .put(app.url("/admin/profile/persona"))
        .json(&json!({"persona": "devrel_guide", "details": {"product": "Lore"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(chosen.status(), 204);
    // The first index creates the profile.
    let source: Value = app
        .post_json("/admin/sources/", json!({"name": "Files", "kind": "upload"}))
        .await
        .json()
        .await
        .unwrap();
    let sync =
        app.post_json(&format!("/admin/sources/{}/sync", source["id"].as_str().unwrap()), json!({})).await;
    assert_eq!(sync.status(), 202);
    let overview: Value = app.get("/admin/profile").await.json().await.unwrap();
    let v1 = overview["active"].clone();
    assert_eq!(v1["version"], 1);
    assert_eq!(v1["snapshot"]["persona"], "devrel_guide");
    assert!(v1["snapshot"]["prompt"].as_str().unwrap().contains("Lore"));

    let save = |prompt: &str| {
        let mut snapshot = v1["snapshot"].clone();
        snapshot["prompt"] = prompt.into();
        app.client
            .post(app.url("/admin/profile/versions"))
            .json(&json!({"base_version": 1, "snapshot": snapshot}))
            .send()
    };
    let (a, b) = tokio::join!(save("Prompt A"), save("Prompt B"));
    let mut statuses = vec![a.as_ref().unwrap().status().as_u16(), b.as_ref().unwrap().status().as_u16()];
    statuses.sort();
    assert_eq!(statuses, vec![201, 409]);
    let loser = if a.as_ref().unwrap().status() == 409 { a.unwrap() } else { b.unwrap() };
    let body: Value = loser.json().await.unwrap();
    assert_eq!(body["error"]["code"], "profile_version_conflict");
    assert_eq!(body["error"]["details"]["active_version"], 2);

    let bad = app
        .client
        .post(app.url("/admin/profile/versions"))
        .json(&json!({"base_version": 2, "snapshot": {"persona": "devrel_guide"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422, "an incomplete snapshot is refused");

    let restored = app.post_json("/admin/profile/versions/1/restore", json!({"expected_active": 2})).await;
    assert_eq!(restored.status(), 200);
    let overview: Value = app.get("/admin/profile").await.json().await.unwrap();
    assert_eq!(overview["active"]["version"], 1);
    assert_eq!(overview["active"]["snapshot"], v1["snapshot"]);
    assert_eq!(overview["versions"].as_array().unwrap().len(), 2);
    let shown: Value = app.get("/admin/profile/versions/2").await.json().await.unwrap();
    assert_eq!(shown["active"], false);
}
