//! The example extension (`examples/kennel`) over the real tool server:
//! a custom tool declared by a resource, run in the transactional envelope
//! (its two writes commit together or not at all, the allow predicates
//! decide per record, each write and the call are audited), checking its
//! caller itself; and anonymous sessions, which
//! `mcp.application.anonymousCustomTools` admits to the custom tools only.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, Options, TestApp};
use crate::mcp::{call, initialize, tool_names};

const SCHEMA: &str = r#"type Dog @table(database: "kennel", table: "dog") @export(name: "dogs") {
  id: ID @primaryKey
  name: String
  adopted_by: String
}
type Adoption @table(database: "kennel", table: "adoption") {
  id: ID @primaryKey
  dog: String
  by: String
}"#;

async fn op(app: &TestApp, body: Value) -> Value {
    let response = app.client.post(app.url("/operation")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

async fn dog(app: &TestApp, id: &str) -> Value {
    let found =
        op(app, json!({"operation": "search_by_id", "database": "kennel", "table": "dog", "ids": [id]}))
            .await;
    found[0].clone()
}

/// A session without credentials (session era).
async fn anonymous_session(url: &str) -> (StatusCode, Option<String>) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let response = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
    (response.status(), session)
}

async fn anonymous_call(url: &str, session: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
    reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_custom_tool_runs_in_one_transaction_under_its_predicates_and_checks_its_caller() {
    let app = spawn_app_with(Options {
        configure: Some(|settings| {
            settings.mcp.application.anonymous_custom_tools = true;
            // Low, so the anonymous budget is seen to end.
            settings.mcp.tool_calls_per_minute = 3;
        }),
        ..Options::default()
    })
    .await;
    app.sign_in_with_bootstrap_link().await;
    engine::appdb::schema::apply(&app.lore, &engine::audit::Actor::System, SCHEMA).await.unwrap();
    lore_example_kennel::install(&app.lore);
    let dogs = json!([{"id": "rex", "name": "Rex"}, {"id": "fido", "name": "Fido"}]);
    op(&app, json!({"operation": "insert", "database": "kennel", "table": "dog", "records": dogs})).await;
    // Fido's adoption is on record already (another path wrote it).
    op(
        &app,
        json!({"operation": "insert", "database": "kennel", "table": "adoption",
               "records": [{"id": "fido", "dog": "fido", "by": "someone"}]}),
    )
    .await;
    // Ann's role reads dogs and writes nothing.
    let reads = json!({"kennel": {"tables": {"dog": {"read": true, "insert": false, "update": false, "delete": false}}}});
    op(&app, json!({"operation": "add_role", "role": "visitor", "permission": reads})).await;
    op(&app, json!({"operation": "add_user", "role": "visitor", "username": "ann"})).await;
    let ann: Value = app
        .post_json("/admin/keys", json!({"name": "ann", "kind": "secret", "scopes": ["mcp"], "user": "ann"}))
        .await
        .json()
        .await
        .unwrap();
    let ann = ann["raw_key"].as_str().unwrap().to_owned();
    let url = app.url("/mcp");

    let session = initialize(&url, &ann).await;
    let tools = tool_names(&url, &ann, &session).await;
    assert!(tools.contains(&"adopt_dog".to_owned()) && tools.contains(&"get_dogs".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"update_dogs".to_owned()), "her role writes no dog: {tools:?}");

    // She adopts Rex: the kennel vouches for that one change.
    let reply =
        call(&url, &ann, &session, "tools/call", json!({"name": "adopt_dog", "arguments": {"id": "rex"}}))
            .await;
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(reply["result"]["structuredContent"], json!({"adopted": "rex", "by": "ann"}));
    assert_eq!(dog(&app, "rex").await["adopted_by"], "ann");

    // Fido's second write fails (his adoption is on record): the first,
    // his `adopted_by`, is rolled back with it.
    let reply =
        call(&url, &ann, &session, "tools/call", json!({"name": "adopt_dog", "arguments": {"id": "fido"}}))
            .await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(reply["result"]["structuredContent"]["error"]["code"], "duplicate_primary_key", "{reply}");
    assert_eq!(dog(&app, "fido").await["adopted_by"], Value::Null, "nothing of the call was kept");

    // The calls are in the audit log, and the writes that were kept: Rex's
    // update, not Fido's rolled-back one.
    let audit = op(&app, json!({"operation": "read_audit_log", "limit": 100})).await;
    let count = |action: &str| audit.to_string().matches(&format!("\"{action}\"")).count();
    assert_eq!(count("mcp.tools_call"), 2, "{audit}");
    assert_eq!((count("data.update"), count("data.insert")), (1, 1), "{audit}");

    // An anonymous session sees the custom tools and nothing else; the tool
    // refuses it, and nothing changes.
    let (status, session) = anonymous_session(&url).await;
    assert_eq!(status, StatusCode::OK);
    let session = session.expect("an anonymous session");
    let listed = anonymous_call(&url, &session, "tools/list", json!({})).await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["adopt_dog"], "{listed}");
    let resources = anonymous_call(&url, &session, "resources/list", json!({})).await;
    assert_eq!(resources["result"]["resources"], json!([]), "{resources}");
    let refused =
        anonymous_call(&url, &session, "tools/call", json!({"name": "get_dogs", "arguments": {"id": "rex"}}))
            .await;
    assert_eq!(refused["error"]["code"], -32602, "no table tools for an anonymous session: {refused}");
    let refused = anonymous_call(
        &url,
        &session,
        "tools/call",
        json!({"name": "adopt_dog", "arguments": {"id": "fido"}}),
    )
    .await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(refused["result"]["structuredContent"]["error"]["code"], "permission_denied", "{refused}");
    assert_eq!(dog(&app, "fido").await["adopted_by"], Value::Null);
    // A user's key on the anonymous session is refused, as another user's.
    let status = reqwest::Client::new()
        .post(&url)
        .header("x-api-key", &ann)
        .header("mcp-session-id", &session)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Anonymous calls are marked so in the audit log, never passed off as
    // Lore's own.
    let audit = op(&app, json!({"operation": "read_audit_log", "limit": 100})).await;
    let anonymous = audit
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| {
            entry.to_string().contains("mcp.tools_call") && entry.to_string().contains("\"anonymous\":true")
        })
        .count();
    assert_eq!(anonymous, 2, "{audit}");
    // Anonymous sessions are opened within one shared budget (3 a minute
    // here; one is open already).
    for _ in 0..2 {
        assert_eq!(anonymous_session(&url).await.0, StatusCode::OK);
    }
    let (status, session) = anonymous_session(&url).await;
    assert_eq!((status, session), (StatusCode::TOO_MANY_REQUESTS, None));
}

/// By default there are no anonymous sessions: a request without
/// credentials is refused with the OAuth challenge.
#[tokio::test]
async fn without_the_setting_a_request_without_credentials_is_refused() {
    let app = spawn_app_with(Options::default()).await;
    lore_example_kennel::install(&app.lore);
    let (status, session) = anonymous_session(&app.url("/mcp")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(session, None);
}
