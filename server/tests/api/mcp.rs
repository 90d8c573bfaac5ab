//! The tool server by raw HTTP: every status code and JSON-RPC error of
//! docs/mcp.md, per-user tool lists, and list_changed sent only to the
//! session whose own surface changed. (The official SDK clients and the
//! Inspector connect in end2end/tests/mcp.test.mjs.)

use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{drop_postgres, fresh_postgres, spawn_app_with, Options, TestApp};

pub(crate) const SCHEMA: &str = r#"type Dog @table(database: "dev", table: "dog") @export(name: "dogs") {
  id: ID @primaryKey
  name: String
}
type Cat @table(database: "dev", table: "cat") @export(name: "cats") {
  id: ID @primaryKey
}"#;

fn options() -> Options {
    Options {
        configure: Some(|settings| {
            settings.mcp.operations = Some(Default::default());
        }),
        ..Options::default()
    }
}

async fn admin_op(app: &TestApp, body: Value) {
    let response = app.client.post(app.url("/operation")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{}", response.text().await.unwrap());
}

/// A user with its own role and a key with the `mcp` scope.
async fn user(app: &TestApp, name: &str, permission: Value) -> String {
    admin_op(app, json!({"operation": "add_role", "role": name, "permission": permission})).await;
    admin_op(app, json!({"operation": "add_user", "role": name, "username": name})).await;
    let response = app
        .post_json("/admin/keys", json!({"name": name, "kind": "secret", "scopes": ["mcp"], "user": name}))
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json::<Value>().await.unwrap()["raw_key"].as_str().unwrap().to_owned()
}

async fn setup() -> (TestApp, String, String) {
    let app = spawn_app_with(options()).await;
    app.sign_in_with_bootstrap_link().await;
    engine::appdb::schema::apply(&app.lore, &engine::audit::Actor::System, SCHEMA).await.unwrap();
    let reads_dogs = json!({"dev": {"tables": {"dog": {"read": true, "insert": false, "update": false, "delete": false}}}});
    let ann = user(&app, "ann", reads_dogs.clone()).await;
    let bob = user(&app, "bob", reads_dogs).await;
    (app, ann, bob)
}

/// A client without the test's session cookie: MCP callers bring a key.
fn bare() -> reqwest::Client {
    reqwest::Client::new()
}

async fn rpc(
    url: &str,
    key: &str,
    session: Option<&str>,
    body: Value,
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let mut request = bare()
        .post(url)
        .header("x-api-key", key)
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.json().await.unwrap_or(Value::Null))
}

/// An event stream from the server, as its chunks arrive.
pub(crate) type Events =
    std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>;

/// A session's push channel (GET).
pub(crate) async fn channel(url: &str, key: &str, session: &str) -> Events {
    let response = bare()
        .get(url)
        .header("x-api-key", key)
        .header("mcp-session-id", session)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    Box::pin(response.bytes_stream())
}

/// The first chunk holding `needle` within `within` (`None`: nothing did).
pub(crate) async fn heard(events: &mut Events, needle: &str, within: Duration) -> Option<String> {
    tokio::time::timeout(within, async {
        while let Some(Ok(chunk)) = events.next().await {
            let text = String::from_utf8_lossy(&chunk).to_string();
            if text.contains(needle) {
                return Some(text);
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
}

pub(crate) async fn initialize(url: &str, key: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, headers, reply) = rpc(url, key, None, body).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["result"]["protocolVersion"], "2025-06-18");
    headers["mcp-session-id"].to_str().unwrap().to_owned()
}

pub(crate) async fn tool_names(url: &str, key: &str, session: &str) -> Vec<String> {
    let (_, _, reply) =
        rpc(url, key, Some(session), json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    reply["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn every_status_code_of_the_transport() {
    let (app, ann, bob) = setup().await;
    let url = app.url("/mcp");
    let session = initialize(&url, &ann).await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});

    let (status, _, reply) = rpc(&url, &ann, None, list.clone()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "no session header: {reply}");
    let (status, _, _) = rpc(&url, &ann, Some("0123456789abcdef0123456789abcdef"), list.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "an unknown session");
    let (status, _, _) = rpc(&url, &bob, Some(&session), list.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "another user's session");
    let (status, _, _) = rpc(&url, &ann, Some(&session), json!([list.clone()])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a batch");
    let (status, _, _) =
        rpc(&url, &ann, Some(&session), json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    assert_eq!(status, StatusCode::ACCEPTED, "a notification");
    let (status, _, reply) =
        rpc(&url, &ann, Some(&session), json!({"jsonrpc": "2.0", "id": 3, "method": "nope"})).await;
    assert_eq!((status, reply["error"]["code"].as_i64()), (StatusCode::OK, Some(-32601)));
    let (_, _, reply) = rpc(
        &url,
        &ann,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "drop_everything"}}),
    )
    .await;
    assert_eq!(reply["error"]["code"], -32602, "an unknown tool: {reply}");

    let versioned = bare()
        .post(&url)
        .header("x-api-key", &ann)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "1999-01-01")
        .json(&list)
        .send()
        .await
        .unwrap();
    assert_eq!(versioned.status(), StatusCode::BAD_REQUEST, "an unsupported MCP-Protocol-Version");
    let accept = bare()
        .post(&url)
        .header("x-api-key", &ann)
        .header("accept", "text/html")
        .json(&list)
        .send()
        .await
        .unwrap();
    assert_eq!(accept.status(), StatusCode::NOT_ACCEPTABLE);
    let foreign = bare()
        .post(&url)
        .header("x-api-key", &ann)
        .header("origin", "https://evil.example")
        .json(&list)
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), StatusCode::FORBIDDEN, "a foreign Origin");
    let delete = bare()
        .delete(&url)
        .header("x-api-key", &ann)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status(), StatusCode::METHOD_NOT_ALLOWED, "DELETE is off by default");
    assert_eq!(delete.headers()["allow"], "GET, POST");
    let (status, _, _) = rpc(&url, "lore_sk_00000000000000000000000000000000", None, list.clone()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "an unknown key");

    // The sessionless revision: headers must match the body.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let modern = |version: &str, method: &str| {
        bare()
            .post(&url)
            .header("x-api-key", &ann)
            .header("mcp-protocol-version", version)
            .header("mcp-method", method)
            .json(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"_meta": meta}}))
    };
    let ok = modern("2026-07-28", "tools/list").send().await.unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    let ok: Value = ok.json().await.unwrap();
    assert_eq!(ok["result"]["resultType"], "complete");
    assert_eq!(ok["result"]["cacheScope"], "private");
    let wrong = modern("2026-07-28", "tools/call").send().await.unwrap();
    assert_eq!(wrong.status(), StatusCode::BAD_REQUEST);
    assert_eq!(wrong.json::<Value>().await.unwrap()["error"]["code"], -32020);
    let old = modern("2025-06-18", "tools/list").send().await.unwrap();
    assert_eq!(old.status(), StatusCode::BAD_REQUEST, "header and body disagree");
}

#[tokio::test]
async fn list_changed_reaches_only_the_session_whose_surface_changed() {
    let (app, ann, bob) = setup().await;
    let url = app.url("/mcp");
    let (ann_session, bob_session) = (initialize(&url, &ann).await, initialize(&url, &bob).await);
    // Her key has only the `mcp` scope: the answer tools are not hers to call, so not listed.
    assert_eq!(tool_names(&url, &ann, &ann_session).await, ["get_dogs", "search_dogs"]);

    let mut ann_stream = channel(&url, &ann, &ann_session).await;
    let mut bob_stream = channel(&url, &bob, &bob_session).await;
    // Let both channels register before the change.
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Ann's role gains cat: her tools change; Bob's do not.
    let more = json!({"dev": {"tables": {
        "dog": {"read": true, "insert": false, "update": false, "delete": false},
        "cat": {"read": true, "insert": true, "update": false, "delete": false}}}});
    admin_op(&app, json!({"operation": "alter_role", "id": "ann", "permission": more})).await;

    heard(&mut ann_stream, "notifications/tools/list_changed", Duration::from_secs(1))
        .await
        .expect("ann's session is told within a second");
    assert!(tool_names(&url, &ann, &ann_session).await.contains(&"create_cats".to_owned()));
    // Her resources changed too (cat's schema and descriptor are hers now).
    heard(&mut ann_stream, "notifications/resources/list_changed", Duration::from_secs(1))
        .await
        .expect("ann's resource list changed too");
    let (_, _, listed) =
        rpc(&url, &ann, Some(&ann_session), json!({"jsonrpc": "2.0", "id": 3, "method": "resources/list"}))
            .await;
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"svc://schema/dev/cat"), "{uris:?}");

    let quiet = heard(&mut bob_stream, "list_changed", Duration::from_millis(1500)).await;
    assert_eq!(quiet, None, "bob's surface did not change: he hears nothing");
}

/// A role change that alters only what a user may read of resources (a
/// table's schema she may now describe) tells her session
/// `notifications/resources/list_changed` and nothing about tools; another
/// session hears nothing.
#[tokio::test]
async fn a_resource_list_change_alone_reaches_only_its_session() {
    let (app, ann, bob) = setup().await;
    let url = app.url("/mcp");
    let (ann_session, bob_session) = (initialize(&url, &ann).await, initialize(&url, &bob).await);
    let mut ann_stream = channel(&url, &ann, &ann_session).await;
    let mut bob_stream = channel(&url, &bob, &bob_session).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Ann may now describe dev.cat (an attribute she may read), though
    // she may not read or write its records: no tool changes.
    let describes = json!({"dev": {"tables": {
        "dog": {"read": true, "insert": false, "update": false, "delete": false},
        "cat": {"read": false, "insert": false, "update": false, "delete": false,
                "attribute_permissions": [{"attribute_name": "id", "read": true, "insert": false, "update": false}]}}}});
    admin_op(&app, json!({"operation": "alter_role", "id": "ann", "permission": describes})).await;
    let event = heard(&mut ann_stream, "list_changed", Duration::from_secs(1)).await.expect("ann is told");
    assert!(event.contains("notifications/resources/list_changed"), "{event}");
    assert!(!event.contains("tools/list_changed"), "{event}");
    assert_eq!(tool_names(&url, &ann, &ann_session).await, ["get_dogs", "search_dogs"]);
    assert_eq!(heard(&mut bob_stream, "list_changed", Duration::from_millis(1000)).await, None);
}

/// Two replicas on one PostgreSQL database: Ann's session and push channel
/// are on B; her role changes through A's operations API. B hears of it
/// through PostgreSQL (`NOTIFY lore_changes`) and tells her at once.
#[tokio::test]
async fn a_role_changed_through_one_replica_reaches_a_session_on_another() {
    let (database, name) = fresh_postgres().await;
    let on = |database: &str| Options {
        database_url: Some(database.to_owned()),
        configure: Some(|settings| settings.mcp.operations = Some(Default::default())),
        ..Options::default()
    };
    let a = spawn_app_with(on(&database)).await;
    let b = spawn_app_with(on(&database)).await;
    a.sign_in_with_bootstrap_link().await;
    engine::appdb::schema::apply(&a.lore, &engine::audit::Actor::System, SCHEMA).await.unwrap();
    let reads_dogs = json!({"dev": {"tables": {"dog": {"read": true, "insert": false, "update": false, "delete": false}}}});
    let ann = user(&a, "ann", reads_dogs).await;
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !(a.lore.hears_other_replicas() && b.lore.hears_other_replicas()) {
        assert!(std::time::Instant::now() < until, "the replicas never listened for each other");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let on_b = b.url("/mcp");
    let session = initialize(&on_b, &ann).await;
    assert_eq!(tool_names(&on_b, &ann, &session).await, ["get_dogs", "search_dogs"]);
    let mut stream = channel(&on_b, &ann, &session).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    let more = json!({"dev": {"tables": {
        "dog": {"read": true, "insert": false, "update": false, "delete": false},
        "cat": {"read": true, "insert": true, "update": false, "delete": false}}}});
    admin_op(&a, json!({"operation": "alter_role", "id": "ann", "permission": more})).await;
    let event = heard(&mut stream, "list_changed", Duration::from_secs(1))
        .await
        .expect("the session on B is told within a second");
    assert!(event.contains("notifications/tools/list_changed"), "{event}");
    assert!(tool_names(&on_b, &ann, &session).await.contains(&"create_cats".to_owned()));
    // Sessions are one table for every replica: B's is A's system.mcp_session
    // (a view on PostgreSQL as on SQLite).
    let search = json!({"operation": "search_by_value", "database": "system", "table": "mcp_session",
                        "search_attribute": "id", "search_value": session});
    let found: Value =
        a.client.post(a.url("/operation")).json(&search).send().await.unwrap().json().await.unwrap();
    assert_eq!(found[0]["principal"], json!({"user": "ann"}), "{found}");
    let seen = found[0]["last_seen_at"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(seen).is_ok(), "{seen}");
    drop((a, b));
    drop_postgres(&name).await;
}

/// Whether `events` ends (the server closed the stream) within `within`.
async fn closes(events: &mut Events, within: Duration) -> bool {
    tokio::time::timeout(within, async {
        while let Some(chunk) = events.next().await {
            if chunk.is_err() {
                break;
            }
        }
    })
    .await
    .is_ok()
}

/// The status of a `tools/list` on `session` (404 once it is evicted).
async fn listed_status(url: &str, key: &str, session: &str) -> StatusCode {
    rpc(url, key, Some(session), json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await.0
}

/// A client that only listens on its push channel is alive: the server's
/// own sweep (every second here) keeps its session past the idle timeout
/// while one nobody listens on expires. Once its channel is gone, the
/// session is idle like any other.
#[tokio::test]
async fn a_listening_session_stays_and_an_idle_one_is_evicted() {
    let app = spawn_app_with(Options {
        configure: Some(|settings| {
            settings.mcp.session.idle_timeout_seconds = 2;
        }),
        ..Options::default()
    })
    .await;
    app.sign_in_with_bootstrap_link().await;
    let key = user(&app, "ann", json!({"super_user": true})).await;
    let url = app.url("/mcp");
    let listening = initialize(&url, &key).await;
    let mut stream = channel(&url, &key, &listening).await;
    let idle = initialize(&url, &key).await;

    // Past the timeout and a few sweeps, touching neither session (a
    // request would slide its timer; one past the timeout finds it gone).
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(listed_status(&url, &key, &idle).await, StatusCode::NOT_FOUND, "nobody listens on it");
    assert_eq!(listed_status(&url, &key, &listening).await, StatusCode::OK, "the listening one stays");

    // Its channel goes (as when the client hangs up); from then on it idles.
    lore_toolserver::ToolServer::open(app.lore.clone()).hub().close_session(&listening);
    assert!(closes(&mut stream, Duration::from_secs(5)).await, "the channel closed");
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(listed_status(&url, &key, &listening).await, StatusCode::NOT_FOUND);
}

pub(crate) async fn call(url: &str, key: &str, session: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    rpc(url, key, Some(session), body).await.2
}

/// One request of the sessionless revision (2026-07-28): no session; the
/// version, the method and the tool's name (ASCII here) in the headers and
/// in the request.
pub(crate) async fn call_sessionless(url: &str, key: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}});
    let mut request = bare()
        .post(url)
        .header("x-api-key", key)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str() {
        request = request.header("mcp-name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": 8, "method": method, "params": params});
    let response = request.json(&body).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{method}");
    response.json().await.unwrap()
}

#[tokio::test]
async fn each_kind_of_user_sees_its_own_operations_and_a_refused_call_changes_nothing() {
    let (app, ann, _) = setup().await;
    let url = app.url("/operation/mcp");
    let root = user(&app, "root", json!({"super_user": true})).await;
    let builder =
        user(&app, "builder", json!({"structure_user": true, "operations": ["describe_all"]})).await;
    let lister = user(
        &app,
        "lister",
        json!({"operations": ["describe_all", "search_by_value", "insert", "list_users", "read_log"],
        "dev": {"tables": {"dog": {"read": true, "insert": false, "update": false, "delete": false}}}}),
    )
    .await;
    // ann's role lists no operations: she sees none (SPEC, Authentication 6).
    let session = initialize(&url, &ann).await;
    assert!(tool_names(&url, &ann, &session).await.is_empty());

    let session = initialize(&url, &root).await;
    let all = tool_names(&url, &root, &session).await;
    assert!(
        all.contains(&"describe_all".to_owned()) && all.contains(&"read_audit_log".to_owned()),
        "{all:?}"
    );
    assert!(!all.contains(&"insert".to_owned()), "insert is not in the default allow list");

    // The structure operations are outside the default allow list too: a
    // structure user sees what its role lists, plus structure operations
    // the operator allows.
    let session = initialize(&url, &builder).await;
    assert_eq!(tool_names(&url, &builder, &session).await, ["describe_all"]);

    // His role lists list_users and read_log, which only a super user may
    // run: listed, they would only be refused, so they are not listed.
    let session = initialize(&url, &lister).await;
    assert_eq!(tool_names(&url, &lister, &session).await, ["describe_all", "search_by_value"]);
    let reply =
        call(&url, &lister, &session, "tools/call", json!({"name": "list_users", "arguments": {}})).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    // A listed operation the operator does not allow is no tool of his.
    let reply = call(&url, &lister, &session, "tools/call", json!({"name": "insert", "arguments": {}})).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    // A visible tool still runs the table permissions: dev.cat is not his.
    let reply = call(
        &url,
        &lister,
        &session,
        "tools/call",
        json!({"name": "search_by_value",
        "arguments": {"database": "dev", "table": "cat", "search_attribute": "id", "search_value": "*"}}),
    )
    .await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(reply["result"]["structuredContent"]["error"]["code"], "permission_denied", "{reply}");
}

#[tokio::test]
async fn application_tools_follow_table_permissions_and_schemas_narrow_per_user() {
    let (app, ann, _) = setup().await;
    let url = app.url("/mcp");
    let writer = user(&app, "writer", json!({"dev": {"tables": {"dog": {"read": true, "insert": true, "update": false, "delete": false,
        "attribute_permissions": [{"attribute_name": "name", "read": true, "insert": false, "update": false}]}}}})).await;
    let session = initialize(&url, &writer).await;
    let (_, _, reply) =
        rpc(&url, &writer, Some(&session), json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    let tools = reply["result"]["tools"].as_array().unwrap();
    let create = tools.iter().find(|t| t["name"] == "create_dogs").expect("insert allows create_dogs");
    assert!(create["inputSchema"]["properties"].get("name").is_none(), "name is not hers to write: {create}");
    assert!(create["inputSchema"]["properties"].get("id").is_some());
    assert!(!tools.iter().any(|t| t["name"] == "delete_dogs" || t["name"] == "update_dogs"));
    assert_eq!(tools.iter().find(|t| t["name"] == "get_dogs").unwrap()["annotations"]["readOnlyHint"], true);

    // A refused write (an attribute she may not insert) changes nothing.
    let reply = call(
        &url,
        &writer,
        &session,
        "tools/call",
        json!({"name": "create_dogs", "arguments": {"id": "x", "name": "X"}}),
    )
    .await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let reply =
        call(&url, &writer, &session, "tools/call", json!({"name": "get_dogs", "arguments": {"id": "x"}}))
            .await;
    assert_eq!(reply["result"]["structuredContent"]["record"], Value::Null, "nothing was written: {reply}");

    // svc://schema: a table she may see, and one she may neither read nor describe.
    let reply = call(
        &url,
        &ann,
        &initialize(&url, &ann).await,
        "resources/read",
        json!({"uri": "svc://schema/dev/dog"}),
    )
    .await;
    let text = reply["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(text.contains("\"primary_key\": \"id\""), "{text}");
    let reply = call(&url, &writer, &session, "resources/read", json!({"uri": "svc://schema/dev/cat"})).await;
    assert_eq!(reply["error"]["code"], -32001, "permission denied: {reply}");
    assert_eq!(reply["error"]["data"]["code"], "permission_denied");
    let reply = call(&url, &writer, &session, "resources/read", json!({"uri": "svc://nothing"})).await;
    assert_eq!(reply["error"]["code"], -32002, "{reply}");

    // The template is listed for clients that expand it; the OpenAPI
    // document and a descriptor read over MCP.
    let templates = call(&url, &writer, &session, "resources/templates/list", json!({})).await;
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"], "svc://schema/{database}/{table}",
        "{templates}"
    );
    let openapi = call(&url, &writer, &session, "resources/read", json!({"uri": "svc://openapi"})).await;
    let text = openapi["result"]["contents"][0]["text"].as_str().unwrap();
    let document: Value = serde_json::from_str(text).unwrap();
    assert_eq!(document["openapi"], "3.0.3");
    assert!(document["paths"].as_object().unwrap().keys().any(|p| p.starts_with("/data/dogs")), "{text}");
    let descriptor = format!("{}/data/dogs", app.base_url);
    let read = call(&url, &writer, &session, "resources/read", json!({"uri": descriptor})).await;
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    let described: Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        (described["path"].as_str(), described["table"].as_str()),
        (Some("dogs"), Some("dog")),
        "{text}"
    );
    assert!(described["hint"].as_str().unwrap().contains("get_dogs"), "{text}");
}

/// SPEC, Authentication 6, for structure users: `structure_user: true`
/// sees the structure operations the operator offers, and so does a list of
/// databases, whose calls then reach only those databases.
#[tokio::test]
async fn structure_users_see_the_offered_structure_operations_for_their_databases() {
    let app = spawn_app_with(Options {
        configure: Some(|settings| {
            settings.mcp.operations = Some(offering(&["describe_all", "create_table"]));
        }),
        ..Options::default()
    })
    .await;
    app.sign_in_with_bootstrap_link().await;
    let url = app.url("/operation/mcp");
    let everywhere = user(&app, "everywhere", json!({"structure_user": true})).await;
    let dev_only = user(&app, "dev_only", json!({"structure_user": ["dev"]})).await;
    let nobody = user(&app, "nobody", json!({"operations": ["describe_all"]})).await;
    for (key, expected) in [
        (&everywhere, vec!["create_table"]),
        (&dev_only, vec!["create_table"]),
        (&nobody, vec!["describe_all"]),
    ] {
        let session = initialize(&url, key).await;
        assert_eq!(tool_names(&url, key, &session).await, expected);
    }
    let session = initialize(&url, &dev_only).await;
    let create = |database: &str| json!({"name": "create_table", "arguments": {"database": database, "table": "t", "primary_key": "id"}});
    let made = call(&url, &dev_only, &session, "tools/call", create("dev")).await;
    assert_eq!(made["result"]["isError"], false, "{made}");
    let refused = call(&url, &dev_only, &session, "tools/call", create("prod")).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(refused["result"]["structuredContent"]["error"]["code"], "permission_denied", "{refused}");
}

/// An operations profile offering exactly `allow`.
fn offering(allow: &[&str]) -> engine::settings::McpOperationsSettings {
    engine::settings::McpOperationsSettings {
        allow: allow.iter().map(|name| (*name).to_owned()).collect(),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_subscribed_record_is_pushed_when_written_and_tool_calls_are_audited_and_limited() {
    let app = spawn_app_with(Options {
        configure: Some(|settings| {
            settings.mcp.tool_calls_per_minute = 3;
        }),
        ..Options::default()
    })
    .await;
    app.sign_in_with_bootstrap_link().await;
    engine::appdb::schema::apply(&app.lore, &engine::audit::Actor::System, SCHEMA).await.unwrap();
    let key = user(&app, "root", json!({"super_user": true})).await;
    let url = app.url("/mcp");
    let session = initialize(&url, &key).await;
    let uri = format!("{}/data/dogs/rex", app.base_url);
    let reply = call(&url, &key, &session, "resources/subscribe", json!({"uri": uri})).await;
    assert_eq!(reply["result"], json!({}), "{reply}");
    let reply = call(&url, &key, &session, "resources/subscribe", json!({"uri": "svc://about"})).await;
    assert!(reply["error"].is_object(), "only records take subscriptions: {reply}");
    let mut stream = channel(&url, &key, &session).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    let reply = call(
        &url,
        &key,
        &session,
        "tools/call",
        json!({"name": "create_dogs", "arguments": {"id": "rex", "name": "Rex", "api_key": "hunter2"}}),
    )
    .await;
    assert_eq!(reply["result"]["isError"], true, "api_key is no attribute of dogs: {reply}");
    let reply = call(
        &url,
        &key,
        &session,
        "tools/call",
        json!({"name": "create_dogs", "arguments": {"id": "rex", "name": "Rex"}}),
    )
    .await;
    assert_eq!(reply["result"]["structuredContent"]["id"], "rex", "{reply}");
    let pushed = heard(&mut stream, "notifications/resources/updated", Duration::from_secs(2))
        .await
        .expect("the subscribed record's change is pushed");
    assert!(pushed.contains(&uri), "{pushed}");

    // Every call is in the audit log, a secret-looking argument redacted.
    app.lore.flush_writes().await;
    let entries = engine::audit::recent(&app.lore.db, 20, None).await.unwrap();
    let calls: Vec<_> = entries.iter().filter(|e| e.action == "mcp.tools_call").collect();
    assert_eq!(calls.len(), 2, "{entries:?}");
    let details = calls.iter().map(|e| e.details.to_string()).collect::<Vec<_>>().join(" ");
    assert!(!details.contains("hunter2") && details.contains("[redacted]"), "{details}");

    // The fourth call in a minute is refused with 429, cleanly.
    let body = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "get_dogs", "arguments": {"id": "rex"}}});
    let (status, _, _) = rpc(&url, &key, Some(&session), body.clone()).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, reply) = rpc(&url, &key, Some(&session), body).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{reply}");
    assert_eq!(reply["error"]["data"]["code"], "rate_limited");
}

#[tokio::test]
async fn a_sessionless_listen_stream_acknowledges_then_hears_its_users_changes() {
    let (app, ann, _) = setup().await;
    let url = app.url("/mcp");
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let listen = |notifications: Value| {
        bare()
            .post(&url)
            .header("x-api-key", &ann)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .json(&json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
                          "params": {"_meta": meta, "notifications": notifications}}))
            .send()
    };
    // A record of a table she may not see is no subscription of hers, and
    // the refusal says nothing of the table behind the export.
    let cat = format!("{}/data/cats/tom", app.base_url);
    let refused = listen(json!({"resourceSubscriptions": [cat]})).await.unwrap();
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(!refused.to_string().contains("dev.cat"), "{refused}");
    assert_eq!(
        lore_toolserver::ToolServer::open(app.lore.clone()).hub().open_channels(),
        0,
        "nothing was opened"
    );

    let response = listen(json!({"toolsListChanged": true})).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut stream: Events = Box::pin(response.bytes_stream());
    let first = String::from_utf8_lossy(&stream.next().await.unwrap().unwrap()).to_string();
    assert!(
        first.contains("notifications/subscriptions/acknowledged") && first.contains("toolsListChanged"),
        "{first}"
    );
    assert!(!first.contains("resourcesListChanged"), "only what was asked is honoured: {first}");
    tokio::time::sleep(Duration::from_millis(200)).await;

    let more = json!({"dev": {"tables": {"dog": {"read": true, "insert": false, "update": false, "delete": false},
        "cat": {"read": true, "insert": false, "update": false, "delete": false}}}});
    admin_op(&app, json!({"operation": "alter_role", "id": "ann", "permission": more})).await;
    let told = heard(&mut stream, "list_changed", Duration::from_secs(2))
        .await
        .expect("the listen stream hears the change");
    assert!(told.contains("notifications/tools/list_changed") && told.contains("listen-1"), "{told}");
    assert!(!told.contains("resources/list_changed"), "resources were not asked for: {told}");
}

#[tokio::test]
async fn delete_ends_a_session_when_the_setting_allows_it() {
    let app = spawn_app_with(Options {
        configure: Some(|settings| {
            settings.mcp.session.allow_client_delete = true;
        }),
        ..Options::default()
    })
    .await;
    app.sign_in_with_bootstrap_link().await;
    let ann = user(&app, "ann", json!({"super_user": true})).await;
    let bob = user(&app, "bob", json!({"super_user": true})).await;
    let url = app.url("/mcp");
    let session = initialize(&url, &ann).await;
    let mut stream = channel(&url, &ann, &session).await;
    let delete =
        |key: String| bare().delete(&url).header("x-api-key", key).header("mcp-session-id", &session).send();
    assert_eq!(delete(bob.clone()).await.unwrap().status(), StatusCode::FORBIDDEN, "not bob's to end");
    assert_eq!(delete(ann.clone()).await.unwrap().status(), StatusCode::NO_CONTENT);
    assert!(closes(&mut stream, Duration::from_secs(5)).await, "DELETE closes the session's push channel");
    let (status, _, _) =
        rpc(&url, &ann, Some(&session), json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "an ended session is gone");
    assert_eq!(delete(ann).await.unwrap().status(), StatusCode::NOT_FOUND);
}

/// The tool server's sessions are `system.mcp_session` to the operations
/// API (SPEC, "stored in the table system.mcp_session"): a super user
/// describes and searches them, its times in RFC 3339; a role that names
/// the table is still refused; nobody writes it, and no application
/// database takes the name `system`.
#[tokio::test]
async fn sessions_are_system_mcp_session_to_super_users_only() {
    let (app, ann, _) = setup().await;
    let session = initialize(&app.url("/mcp"), &ann).await;
    let op = |body: Value| {
        let request = app.client.post(app.url("/operation")).json(&body);
        async move {
            let response = request.send().await.unwrap();
            (response.status(), response.json::<Value>().await.unwrap())
        }
    };

    let (status, described) =
        op(json!({"operation": "describe_table", "database": "system", "table": "mcp_session"})).await;
    assert_eq!(status, StatusCode::OK, "{described}");
    let text = described.to_string();
    assert!(text.contains("last_seen_at") && text.contains("protocol_version"), "{text}");

    let (status, found) =
        op(json!({"operation": "search_by_value", "database": "system", "table": "mcp_session",
        "search_attribute": "id", "search_value": session}))
        .await;
    assert_eq!(status, StatusCode::OK, "{found}");
    let record = &found[0];
    assert_eq!(record["profile"], "application", "{found}");
    assert_eq!(record["principal"], json!({"user": "ann"}), "{found}");
    assert_eq!(record["protocol_version"], "2025-06-18");
    let seen = record["last_seen_at"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(seen).is_ok() && seen.ends_with('Z'), "{seen}");
    let (_, later) = op(json!({"operation": "search_by_conditions", "database": "system", "table": "mcp_session",
        "conditions": [{"search_attribute": "last_seen_at", "search_type": "greater_than", "search_value": "2000-01-01T00:00:00Z"}]})).await;
    assert_eq!(later.as_array().map(Vec::len), Some(1), "dates compare as dates: {later}");

    // Read-only, even for a super user; the name is Lore's.
    for body in [
        json!({"operation": "insert", "database": "system", "table": "mcp_session", "records": [{"id": "x"}]}),
        json!({"operation": "delete", "database": "system", "table": "mcp_session", "ids": [session]}),
        json!({"operation": "drop_table", "database": "system", "table": "mcp_session"}),
        json!({"operation": "create_database", "database": "system"}),
        json!({"operation": "create_table", "database": "system", "table": "mine", "primary_key": "id"}),
    ] {
        let (status, refused) = op(body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {refused}");
        assert_eq!(refused["error"]["code"], "invalid_operation", "{body}: {refused}");
        assert!(refused.to_string().contains("Lore's own database"), "{refused}");
    }
    let (_, still) = op(json!({"operation": "search_by_value", "database": "system", "table": "mcp_session",
        "search_attribute": "id", "search_value": session}))
    .await;
    assert_eq!(still.as_array().map(Vec::len), Some(1), "nothing was deleted");

    // A role that names the table reads nothing of it.
    let nosy = json!({"operations": ["search_by_value", "describe_table"],
        "system": {"tables": {"mcp_session": {"read": true, "insert": false, "update": false, "delete": false}}}});
    admin_op(&app, json!({"operation": "add_role", "role": "nosy", "permission": nosy})).await;
    admin_op(&app, json!({"operation": "add_user", "role": "nosy", "username": "nosy"})).await;
    let key = app
        .post_json(
            "/admin/keys",
            json!({"name": "nosy", "kind": "secret", "scopes": ["operations"], "user": "nosy"}),
        )
        .await
        .json::<Value>()
        .await
        .unwrap()["raw_key"]
        .as_str()
        .unwrap()
        .to_owned();
    for body in [
        json!({"operation": "search_by_value", "database": "system", "table": "mcp_session", "search_attribute": "id", "search_value": "*"}),
        json!({"operation": "describe_table", "database": "system", "table": "mcp_session"}),
    ] {
        let response =
            bare().post(app.url("/operation")).header("x-api-key", &key).json(&body).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{body}");
        let text = response.text().await.unwrap();
        assert!(!text.contains(&session), "nothing of it is revealed: {text}");
    }
}
