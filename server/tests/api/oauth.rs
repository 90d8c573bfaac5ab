//! Assistants signing in over OAuth 2.1, by raw HTTP against a real `lore
//! serve` and the local OpenID provider: the challenge and the metadata a
//! client discovers Lore by, dynamic registration, the person's sign-in and
//! consent, the code exchange with PKCE and the resource bound in, tokens
//! acting as the person's Lore user in both MCP eras, refresh rotation and
//! its reuse, revocation, and each refusal of RFC 6749/7591/8707 changing
//! nothing.

use base64::Engine as _;
use reqwest::StatusCode;
use sea_orm::{ConnectionTrait, EntityTrait, Statement};
use serde_json::{json, Value};
use sha2::Digest;

use crate::helpers::{spawn_app_with, Options, TestApp};

const CALLBACK: &str = "http://127.0.0.1:9/callback";

fn options(oidc: bool) -> Options {
    Options {
        oidc,
        configure: Some(|settings| settings.mcp.operations = Some(Default::default())),
        ..Options::default()
    }
}

fn no_redirects(jar: std::sync::Arc<reqwest::cookie::Jar>) -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_provider(jar)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A PKCE verifier and its S256 challenge.
fn pkce() -> (String, String) {
    let verifier = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    let challenge =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

async fn register(app: &TestApp, body: Value) -> (StatusCode, Value) {
    let response = reqwest::Client::new().post(app.url("/oauth/register")).json(&body).send().await.unwrap();
    (response.status(), response.json().await.unwrap_or(Value::Null))
}

async fn client_id(app: &TestApp) -> String {
    let (status, client) =
        register(app, json!({"redirect_uris": [CALLBACK], "client_name": "Test Assistant"})).await;
    assert_eq!(status, StatusCode::CREATED, "{client}");
    client["client_id"].as_str().unwrap().to_owned()
}

/// The query of an authorization request for `/mcp`.
fn authorize_query(app: &TestApp, client: &str, challenge: &str) -> Vec<(&'static str, String)> {
    vec![
        ("response_type", "code".into()),
        ("client_id", client.into()),
        ("redirect_uri", CALLBACK.into()),
        ("scope", "mcp".into()),
        ("state", "s-42".into()),
        ("code_challenge", challenge.into()),
        ("code_challenge_method", "S256".into()),
        ("resource", app.url("/mcp")),
    ]
}

fn authorize_url(app: &TestApp, query: &[(&str, String)]) -> String {
    let encoded: String = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(query).finish();
    app.url(&format!("/oauth/authorize?{encoded}"))
}

/// The person (whose browser holds `jar`) allows `granted`: the code, from
/// the redirect to the client.
async fn allow(
    app: &TestApp,
    jar: std::sync::Arc<reqwest::cookie::Jar>,
    query: &[(&str, String)],
    granted: &[&str],
) -> String {
    let mut form: Vec<(&str, String)> = query.to_vec();
    form.push(("decision", "allow".into()));
    form.extend(granted.iter().map(|g| ("granted", g.to_string())));
    let response = no_redirects(jar).post(app.url("/oauth/authorize")).form(&form).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER, "{}", response.text().await.unwrap());
    let location = url::Url::parse(response.headers()["location"].to_str().unwrap()).unwrap();
    assert!(location.as_str().starts_with(CALLBACK), "{location}");
    let pairs: std::collections::HashMap<String, String> = location.query_pairs().into_owned().collect();
    assert_eq!(pairs["state"], "s-42");
    assert_eq!(pairs["iss"], app.base_url, "RFC 9207: the issuer rides along");
    pairs["code"].clone()
}

async fn token(app: &TestApp, form: &[(&str, &str)]) -> (StatusCode, Value) {
    let response = reqwest::Client::new().post(app.url("/oauth/token")).form(form).send().await.unwrap();
    assert_eq!(response.headers()["cache-control"], "no-store");
    (response.status(), response.json().await.unwrap())
}

/// A code exchanged at the token endpoint: status and body.
async fn exchange(
    app: &TestApp,
    client: &str,
    code: &str,
    verifier: &str,
    resource: &str,
) -> (StatusCode, Value) {
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("client_id", client),
        ("redirect_uri", CALLBACK),
        ("code_verifier", verifier),
        ("resource", resource),
    ];
    token(app, &form).await
}

/// A new access key's raw value.
async fn raw_key(app: &TestApp, body: Value) -> String {
    let created: Value = app.post_json("/admin/keys", body).await.json().await.unwrap();
    created["raw_key"].as_str().unwrap().to_owned()
}

/// A JSON-RPC request to the tool server at `path` with a bearer token:
/// status, headers, reply.
async fn mcp(
    app: &TestApp,
    path: &str,
    bearer: Option<&str>,
    session: Option<&str>,
    body: Value,
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let mut request = reqwest::Client::new()
        .post(app.url(path))
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.json().await.unwrap_or(Value::Null))
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

fn challenge_of(headers: &reqwest::header::HeaderMap) -> String {
    headers.get("www-authenticate").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

async fn admin_op(app: &TestApp, body: Value) {
    let response = app.client.post(app.url("/operation")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{}", response.text().await.unwrap());
}

#[tokio::test]
async fn an_assistant_signs_in_as_a_lore_user_and_its_tokens_follow_the_grant() {
    let app = spawn_app_with(options(true)).await;
    assert!(app.sign_in_with_oidc("ada").await.is_success());
    engine::appdb::schema::apply(&app.lore, &engine::audit::Actor::System, crate::mcp::SCHEMA).await.unwrap();
    let reads_dogs = json!({"dev": {"tables": {"dog": {"read": true, "insert": false, "update": false, "delete": false}}}});
    admin_op(&app, json!({"operation": "add_role", "role": "reader", "permission": reads_dogs})).await;
    admin_op(&app, json!({"operation": "add_user", "role": "reader", "username": "bob@example.test"})).await;

    // A client that knows nothing is told where to look.
    let (status, headers, _) = mcp(&app, "/mcp", None, None, initialize()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let metadata_url = app.url("/.well-known/oauth-protected-resource/mcp");
    assert_eq!(challenge_of(&headers), format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"mcp\""));
    let resource: Value = reqwest::get(&metadata_url).await.unwrap().json().await.unwrap();
    assert_eq!(resource["resource"], app.url("/mcp"));
    assert_eq!(resource["authorization_servers"], json!([app.base_url]));
    assert_eq!(resource["scopes_supported"], json!(["mcp"]));
    let server: Value =
        reqwest::get(app.url("/.well-known/oauth-authorization-server")).await.unwrap().json().await.unwrap();
    assert_eq!(server["issuer"], app.base_url);
    assert_eq!(server["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(server["authorization_response_iss_parameter_supported"], true);
    let client = client_id(&app).await;

    // Bob's browser: the authorization request sends him to sign in, which
    // brings him back to the consent page naming the client and the user.
    let (verifier, challenge) = pkce();
    let query = authorize_query(&app, &client, &challenge);
    let signed_out = no_redirects(Default::default()).get(authorize_url(&app, &query)).send().await.unwrap();
    assert_eq!(signed_out.status(), StatusCode::SEE_OTHER);
    assert!(signed_out.headers()["location"]
        .to_str()
        .unwrap()
        .starts_with("/signin?next=%2Foauth%2Fauthorize"));
    let bob_jar = std::sync::Arc::new(reqwest::cookie::Jar::default());
    let browser = reqwest::Client::builder().cookie_provider(bob_jar.clone()).build().unwrap();
    let path = authorize_url(&app, &query).trim_start_matches(&app.base_url).to_owned();
    let start = app.url(&format!(
        "/auth/oidc/start?return_to={}",
        url::form_urlencoded::byte_serialize(path.as_bytes()).collect::<String>()
    ));
    let login = browser.get(start).send().await.unwrap();
    let login_url = login.url().as_str().trim_end_matches('/').to_owned();
    let consent =
        browser.post(format!("{login_url}/login")).form(&[("account", "bob")]).send().await.unwrap();
    assert_eq!(consent.url().path(), "/oauth/authorize");
    let page = consent.text().await.unwrap();
    assert!(page.contains("Allow Test Assistant to use Lore?"), "{page}");
    assert!(page.contains("user bob@example.test") && page.contains("127.0.0.1"), "{page}");
    let code = allow(&app, bob_jar.clone(), &query, &["mcp"]).await;

    // The code is exchanged once, with the verifier and the resource.
    let spend = |verifier: String, resource: String| {
        let (client, code, app) = (client.clone(), code.clone(), &app);
        async move { exchange(app, &client, &code, &verifier, &resource).await }
    };
    let (status, refused) = spend(pkce().0, app.url("/mcp")).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "{refused}"
    );
    let (status, refused) = spend(verifier.clone(), app.url("/answer")).await;
    assert_eq!(refused["error"], "invalid_target", "{status} {refused}");
    let (status, issued) = spend(verifier.clone(), app.url("/mcp")).await;
    assert_eq!(status, StatusCode::OK, "{issued}");
    assert_eq!((issued["token_type"].as_str(), issued["scope"].as_str()), (Some("Bearer"), Some("mcp")));
    let access = issued["access_token"].as_str().unwrap().to_owned();

    // The token acts as bob@example.test: his role's tools, in both eras.
    let (status, headers, _) = mcp(&app, "/mcp", Some(&access), None, initialize()).await;
    assert_eq!(status, StatusCode::OK);
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let (_, _, listed) = mcp(
        &app,
        "/mcp",
        Some(&access),
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    let tools: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"get_dogs") && !tools.contains(&"create_dogs"), "{tools:?}");
    // The custom tools come with the tool server's scope, listed and callable
    // with no key.
    assert!(tools.contains(&"answer") && tools.contains(&"retrieve"), "{tools:?}");
    let retrieve = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "retrieve", "arguments": {"query": "dogs"}}});
    let (_, _, called) = mcp(&app, "/mcp", Some(&access), Some(&session), retrieve).await;
    assert_eq!(called["result"]["isError"], false, "{called}");
    let sessionless = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let response = reqwest::Client::new()
        .post(app.url("/mcp"))
        .bearer_auth(&access)
        .header("accept", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .json(&sessionless)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let listed: Value = response.json().await.unwrap();
    assert!(
        listed["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "get_dogs"),
        "{listed}"
    );
    // A session stays its user's: another user's key on bob's session is
    // refused, as another user's token would be.
    admin_op(&app, json!({"operation": "add_user", "role": "reader", "username": "carl"})).await;
    let carl =
        raw_key(&app, json!({"name": "carl", "kind": "secret", "scopes": ["mcp"], "user": "carl"})).await;
    let response = reqwest::Client::new()
        .post(app.url("/mcp"))
        .header("x-api-key", carl)
        .header("mcp-session-id", &session)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN, "bob's session is not carl's");

    // A token for /mcp is not one for /operation/mcp.
    let (status, headers, _) = mcp(&app, "/operation/mcp", Some(&access), None, initialize()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(challenge_of(&headers).starts_with("Bearer error=\"invalid_token\""), "{headers:?}");

    // The code a second time: refused, and what it gave is taken back.
    let (status, replayed) = spend(verifier.clone(), app.url("/mcp")).await;
    assert_eq!((status, replayed["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    let (status, _, _) = mcp(&app, "/mcp", Some(&access), None, initialize()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "a replayed code revokes its grant");

    // A new grant: refresh rotates, and an old refresh token used again
    // revokes the grant.
    let (verifier, challenge) = pkce();
    let query = authorize_query(&app, &client, &challenge);
    let code = allow(&app, bob_jar.clone(), &query, &["mcp"]).await;
    let resource = app.url("/mcp");
    let (_, issued) = exchange(&app, &client, &code, &verifier, &resource).await;
    let first_refresh = issued["refresh_token"].as_str().unwrap().to_owned();
    let refresh = |refresh_token: String| {
        let (client, app) = (client.clone(), &app);
        async move {
            token(
                app,
                &[("grant_type", "refresh_token"), ("refresh_token", &refresh_token), ("client_id", &client)],
            )
            .await
        }
    };
    let (status, rotated) = refresh(first_refresh.clone()).await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    assert_ne!(rotated["refresh_token"], issued["refresh_token"]);
    let access = rotated["access_token"].as_str().unwrap().to_owned();
    assert_eq!(mcp(&app, "/mcp", Some(&access), None, initialize()).await.0, StatusCode::OK);
    // Deactivating the user refuses the token at its next request.
    admin_op(&app, json!({"operation": "alter_user", "username": "bob@example.test", "active": false})).await;
    assert_eq!(mcp(&app, "/mcp", Some(&access), None, initialize()).await.0, StatusCode::UNAUTHORIZED);
    admin_op(&app, json!({"operation": "alter_user", "username": "bob@example.test", "active": true})).await;
    assert_eq!(mcp(&app, "/mcp", Some(&access), None, initialize()).await.0, StatusCode::OK);
    // Used again at once (a retry, two requests racing): refused, and the
    // grant stands. Used again later: one holder is a thief, and the
    // grant is revoked.
    let (status, retried) = refresh(first_refresh.clone()).await;
    assert_eq!((status, retried["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    assert_eq!(mcp(&app, "/mcp", Some(&access), None, initialize()).await.0, StatusCode::OK);
    let backend = app.lore.db.get_database_backend();
    let aged = "UPDATE oauth_token SET rotated_at = '2020-01-01T00:00:00Z' WHERE rotated_at IS NOT NULL";
    app.lore.db.execute(Statement::from_string(backend, aged.to_owned())).await.unwrap();
    let (status, reused) = refresh(first_refresh).await;
    assert_eq!(
        (status, reused["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "{reused}"
    );
    assert_eq!(mcp(&app, "/mcp", Some(&access), None, initialize()).await.0, StatusCode::UNAUTHORIZED);
    let (status, _) = refresh(rotated["refresh_token"].as_str().unwrap().to_owned()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "the whole grant is revoked, its newest refresh token too");

    // The Access screen's list shows a live grant, and an admin's revoke
    // ends it; the client's own revocation (RFC 7009) ends another.
    let granted = |jar: std::sync::Arc<reqwest::cookie::Jar>| {
        let (app, client, resource) = (&app, client.clone(), resource.clone());
        async move {
            let (verifier, challenge) = pkce();
            let code = allow(app, jar, &authorize_query(app, &client, &challenge), &["mcp"]).await;
            exchange(app, &client, &code, &verifier, &resource).await.1
        }
    };
    let issued = granted(bob_jar.clone()).await;
    let access = issued["access_token"].as_str().unwrap().to_owned();
    assert_eq!(mcp(&app, "/mcp", Some(&access), None, initialize()).await.0, StatusCode::OK);
    let listed: Value = app.get("/admin/oauth/connections").await.json().await.unwrap();
    let [connection] = listed.as_array().unwrap().as_slice() else { panic!("one live grant: {listed}") };
    assert_eq!(connection["client_name"], "Test Assistant");
    assert_eq!(connection["acts_as"], "user bob@example.test");
    assert_eq!(
        (connection["scopes"].clone(), connection["resource"].clone()),
        (json!(["mcp"]), json!(resource))
    );
    assert!(!connection.to_string().contains("lore_at_"), "no token in the list: {connection}");
    let path = format!("/admin/oauth/connections/{}/revoke", connection["grant_id"].as_str().unwrap());
    let left: Value = app.post_json(&path, json!({})).await.json().await.unwrap();
    assert_eq!(left, json!([]));
    assert_eq!(mcp(&app, "/mcp", Some(&access), None, initialize()).await.0, StatusCode::UNAUTHORIZED);

    let issued = granted(bob_jar.clone()).await;
    let access = issued["access_token"].as_str().unwrap().to_owned();
    assert_eq!(mcp(&app, "/mcp", Some(&access), None, initialize()).await.0, StatusCode::OK);
    let revoke = |client_id: &str| {
        let form = [
            ("token", issued["refresh_token"].as_str().unwrap().to_owned()),
            ("client_id", client_id.to_owned()),
        ];
        reqwest::Client::new().post(app.url("/oauth/revoke")).form(&form).send()
    };
    assert_eq!(revoke(&client_id(&app).await).await.unwrap().status(), StatusCode::OK);
    assert_eq!(
        mcp(&app, "/mcp", Some(&access), None, initialize()).await.0,
        StatusCode::OK,
        "another client cannot revoke this one's grant"
    );
    let unnamed = reqwest::Client::new()
        .post(app.url("/oauth/revoke"))
        .form(&[("token", issued["refresh_token"].as_str().unwrap())])
        .send()
        .await
        .unwrap();
    assert_eq!(unnamed.status(), StatusCode::BAD_REQUEST, "a public client names itself to revoke");
    assert_eq!(mcp(&app, "/mcp", Some(&access), None, initialize()).await.0, StatusCode::OK);
    assert_eq!(revoke(&client).await.unwrap().status(), StatusCode::OK);
    assert_eq!(mcp(&app, "/mcp", Some(&access), None, initialize()).await.0, StatusCode::UNAUTHORIZED);
    let connections = engine::oauth::connections(&app.lore).await.unwrap();
    assert!(connections.is_empty(), "every grant of this test ended: {connections:?}");

    // A grant lasts `auth.mcp.grant_days` (90), refreshes or not.
    let issued = granted(bob_jar).await;
    let aged = "UPDATE oauth_grant SET created_at = '2020-01-01T00:00:00Z' WHERE revoked_at IS NULL";
    app.lore.db.execute(Statement::from_string(backend, aged.to_owned())).await.unwrap();
    let (status, expired) = refresh(issued["refresh_token"].as_str().unwrap().to_owned()).await;
    assert_eq!(
        (status, expired["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "{expired}"
    );

    // The audit log has the story, and no token in it.
    let log = engine::audit::recent(&app.lore.db, 200, None).await.unwrap();
    let actions: Vec<&str> = log.iter().map(|e| e.action.as_str()).collect();
    for action in
        ["oauth.client_registered", "oauth.granted", "oauth.token_issued", "oauth.refreshed", "oauth.revoked"]
    {
        assert!(actions.contains(&action), "{action} in {actions:?}");
    }
    let text = format!("{log:?}");
    assert!(
        !text.contains(&access) && !text.contains("lore_rt_") && !text.contains("lore_at_"),
        "no token in the audit log"
    );
}

#[tokio::test]
async fn every_bad_request_gets_the_rfcs_error_and_no_token() {
    let app = spawn_app_with(options(false)).await;
    app.sign_in_with_bootstrap_link().await;
    let client = client_id(&app).await;

    // Registration.
    for (body, error) in [
        (json!({"redirect_uris": ["http://192.168.1.9/cb"]}), "invalid_redirect_uri"),
        (json!({"redirect_uris": []}), "invalid_redirect_uri"),
        (json!({"redirect_uris": ["javascript:alert(1)"]}), "invalid_redirect_uri"),
        (
            json!({"redirect_uris": [CALLBACK], "grant_types": ["client_credentials"]}),
            "invalid_client_metadata",
        ),
        (json!("not an object"), "invalid_client_metadata"),
    ] {
        let (status, refused) = register(&app, body.clone()).await;
        assert_eq!(
            (status, refused["error"].as_str()),
            (StatusCode::BAD_REQUEST, Some(error)),
            "{body}: {refused}"
        );
    }
    // A client that asks for a secret is registered as the public client
    // it can be (RFC 7591 §3.2.1), and says so.
    let (status, registered) = register(
        &app,
        json!({"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "client_secret_post"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(registered["token_endpoint_auth_method"], "none");
    assert!(registered.get("logo_uri").is_none(), "absent, not null: {registered}");

    // Authorization: an unknown client or an unregistered redirect URI is
    // told to the person, never redirected to.
    let (_, challenge) = pkce();
    let good = authorize_query(&app, &client, &challenge);
    let browser = no_redirects(app.jar.clone());
    let with = |name: &str, value: Option<&str>| {
        let mut query: Vec<(&str, String)> = good.iter().filter(|(n, _)| *n != name).cloned().collect();
        if let Some(value) = value {
            let at = good.iter().position(|(n, _)| *n == name).unwrap();
            query.insert(at, (good[at].0, value.to_owned()));
        }
        query
    };
    for (query, shown) in [
        (with("client_id", Some("lore_oc_nobody")), "not registered"),
        (with("redirect_uri", Some("https://evil.example/cb")), "not one the client registered"),
    ] {
        let response = browser.get(authorize_url(&app, &query)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert!(response.text().await.unwrap().contains(shown));
    }
    // The rest are shown too, with a link back to the client carrying the
    // error, the state and the issuer: never an automatic redirect.
    for (query, error) in [
        (with("code_challenge", None), "invalid_request"),
        (with("code_challenge_method", Some("plain")), "invalid_request"),
        (with("response_type", Some("token")), "unsupported_response_type"),
        (with("resource", None), "invalid_target"),
        (with("resource", Some("https://elsewhere.example/mcp")), "invalid_target"),
        (with("scope", Some("mcp admin")), "invalid_scope"),
        // The operations API's scope is not the application tool server's.
        (with("scope", Some("operations")), "invalid_scope"),
    ] {
        let response = browser.get(authorize_url(&app, &query)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query:?}");
        assert_eq!(response.headers()["x-frame-options"], "DENY");
        let page = response.text().await.unwrap();
        let href = page.split("class=\"back\" href=\"").nth(1).unwrap().split('"').next().unwrap();
        let location = url::Url::parse(&href.replace("&amp;", "&")).unwrap();
        assert!(location.as_str().starts_with(CALLBACK), "{location}");
        let pairs: std::collections::HashMap<String, String> = location.query_pairs().into_owned().collect();
        assert_eq!(pairs["error"], error, "{query:?}");
        assert_eq!((pairs["state"].as_str(), pairs["iss"].as_str()), ("s-42", app.base_url.as_str()));
        assert!(!pairs.contains_key("code"));
    }

    // An admin on a bare install signs an assistant in as the admin; the
    // person may deny, and the client hears `access_denied`.
    let page = browser.get(authorize_url(&app, &good)).send().await.unwrap();
    assert!(page.text().await.unwrap().contains("act as <b>an admin</b>"));
    let mut denied: Vec<(&str, String)> = good.clone();
    denied.push(("decision", "deny".into()));
    let response = browser.post(app.url("/oauth/authorize")).form(&denied).send().await.unwrap();
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.contains("error=access_denied"), "{location}");

    // The token endpoint.
    let (verifier, challenge) = pkce();
    let query = authorize_query(&app, &client, &challenge);
    let code = allow(&app, app.jar.clone(), &query, &["mcp"]).await;
    let other = client_id(&app).await;
    let resource = app.url("/mcp");
    let form = |client: &str, verifier: Option<&str>, redirect: &str| {
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.clone()),
            ("client_id", client.to_owned()),
            ("redirect_uri", redirect.to_owned()),
            ("resource", resource.clone()),
        ];
        if let Some(verifier) = verifier {
            form.push(("code_verifier", verifier.to_owned()));
        }
        form
    };
    for (form, status, error) in [
        (form("lore_oc_nobody", Some(&verifier), CALLBACK), StatusCode::UNAUTHORIZED, "invalid_client"),
        (form(&other, Some(&verifier), CALLBACK), StatusCode::BAD_REQUEST, "invalid_grant"),
        (form(&client, None, CALLBACK), StatusCode::BAD_REQUEST, "invalid_request"),
        (
            form(&client, Some(&verifier), "http://127.0.0.1:9/other"),
            StatusCode::BAD_REQUEST,
            "invalid_grant",
        ),
        (
            vec![("grant_type", "password".to_owned()), ("client_id", client.clone())],
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
        ),
    ] {
        let pairs: Vec<(&str, &str)> = form.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let (got, refused) = token(&app, &pairs).await;
        assert_eq!((got, refused["error"].as_str()), (status, Some(error)), "{form:?}: {refused}");
    }
    // None of those spent the code; an expired one is refused.
    let right = form(&client, Some(&verifier), CALLBACK);
    let pairs: Vec<(&str, &str)> = right.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let backend = app.lore.db.get_database_backend();
    app.lore
        .db
        .execute(Statement::from_string(
            backend,
            "UPDATE oauth_grant SET code_expires_at = '2020-01-01T00:00:00Z'".to_owned(),
        ))
        .await
        .unwrap();
    let (status, refused) = token(&app, &pairs).await;
    assert_eq!((status, refused["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    assert!(refused["error_description"].as_str().unwrap().contains("expired"), "{refused}");
    assert!(engine::oauth::connections(&app.lore).await.unwrap().is_empty(), "no token was issued");

    // Registrations are limited per peer (30 a minute by default): this
    // test's own earlier ones count, and the limit is reached.
    let mut refused = None;
    for _ in 0..40 {
        let (status, body) = register(&app, json!({"redirect_uris": [CALLBACK]})).await;
        if status != StatusCode::CREATED {
            refused = Some((status, body));
            break;
        }
    }
    let (status, body) = refused.expect("the registration limit is reached within 40");
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("temporarily_unavailable"))
    );

    // At the tool server: a token of no grant, and a key or token without
    // the scope, each with its challenge.
    let (status, headers, _) = mcp(&app, "/mcp", Some("lore_at_forged"), None, initialize()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(challenge_of(&headers).starts_with("Bearer error=\"invalid_token\""));
    let answer_only = raw_key(&app, json!({"name": "answers", "kind": "secret", "scopes": ["answer"]})).await;
    let response = reqwest::Client::new()
        .post(app.url("/operation/mcp"))
        .header("x-api-key", answer_only)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let metadata = app.url("/.well-known/oauth-protected-resource/operation/mcp");
    assert_eq!(
        challenge_of(response.headers()),
        format!("Bearer error=\"insufficient_scope\", scope=\"mcp\", resource_metadata=\"{metadata}\"")
    );
}

/// Client ID metadata documents served on loopback, as a client publishes
/// its own: a good one (kept for five minutes) and each kind of bad one.
struct Documents {
    base: String,
    reads: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    _server: tokio::task::JoinHandle<()>,
}

impl Documents {
    async fn serve() -> Documents {
        use axum::extract::{Path, State};
        use axum::response::IntoResponse;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let state = (base.clone(), reads.clone());
        let serve = |State((base, reads)): State<(
            String,
            std::sync::Arc<std::sync::atomic::AtomicUsize>,
        )>,
                     Path(name): Path<String>| async move {
            reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let own = format!("{base}/{name}");
            let document = |id: &str, redirect: &str| {
                json!({"client_id": id, "client_name": "Document Assistant", "redirect_uris": [redirect],
                       "grant_types": ["authorization_code", "refresh_token"], "token_endpoint_auth_method": "none"})
            };
            let body = match name.as_str() {
                "good.json" => document(&own, CALLBACK),
                "big.json" => {
                    let mut big = document(&own, CALLBACK);
                    big["padding"] = json!("x".repeat(6 * 1024));
                    big
                }
                "slow.json" => {
                    tokio::time::sleep(std::time::Duration::from_secs(7)).await;
                    document(&own, CALLBACK)
                }
                "moved.json" => {
                    return (StatusCode::FOUND, [("location", "http://10.0.0.1/client.json")]).into_response()
                }
                "other-id.json" => document(&format!("{base}/good.json"), CALLBACK),
                "other-redirect.json" => document(&own, "https://elsewhere.example/cb"),
                "secret.json" => {
                    let mut secret = document(&own, CALLBACK);
                    secret["client_secret"] = json!("published-for-all-to-see");
                    secret
                }
                _ => return StatusCode::NOT_FOUND.into_response(),
            };
            ([("cache-control", "public, max-age=300")], axum::Json(body)).into_response()
        };
        let router = axum::Router::new().route("/{name}", axum::routing::get(serve)).with_state(state);
        let server = tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Documents { base, reads, _server: server }
    }

    fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    fn reads(&self) -> usize {
        self.reads.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[tokio::test]
async fn a_client_named_by_its_metadata_document_signs_in_and_a_bad_document_is_refused() {
    let documents = Documents::serve().await;
    // Loopback is private: only where private addresses may be read (a
    // lab, this test) is a document there, or over plain http, read at all.
    let app = spawn_app_with(Options {
        configure: Some(|settings| settings.ingest.allow_private_addresses = true),
        ..Options::default()
    })
    .await;
    app.sign_in_with_bootstrap_link().await;
    let server: Value =
        reqwest::get(app.url("/.well-known/oauth-authorization-server")).await.unwrap().json().await.unwrap();
    assert_eq!(server["client_id_metadata_document_supported"], true);

    // The client's id is its document's URL: no registration, and the
    // consent page names what the document says.
    let client = documents.url("good.json");
    let (verifier, challenge) = pkce();
    let query = authorize_query(&app, &client, &challenge);
    let browser = no_redirects(app.jar.clone());
    let page = browser.get(authorize_url(&app, &query)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("Allow Document Assistant to use Lore?"), "{page}");
    assert!(page.contains(&format!("It describes itself at <span class=\"host\">{client}</span>")), "{page}");
    let code = allow(&app, app.jar.clone(), &query, &["mcp"]).await;
    let (status, issued) = exchange(&app, &client, &code, &verifier, &app.url("/mcp")).await;
    assert_eq!(status, StatusCode::OK, "{issued}");
    let access = issued["access_token"].as_str().unwrap();
    assert_eq!(mcp(&app, "/mcp", Some(access), None, initialize()).await.0, StatusCode::OK);
    assert_eq!(documents.reads(), 1, "read once, then kept for its max-age");
    let connections = engine::oauth::connections(&app.lore).await.unwrap();
    assert_eq!(connections[0].client_name, "Document Assistant");

    // Each bad document is refused with the error the drafts name, before
    // anyone is asked, and nothing of it is kept.
    for (name, error, why) in [
        ("missing.json", "invalid_client", "answered 404"),
        ("big.json", "invalid_client", "larger than 5120 bytes"),
        ("slow.json", "invalid_client", "timed out"),
        ("moved.json", "invalid_client", "redirects elsewhere"),
        ("other-id.json", "invalid_client_metadata", "not the address it is served at"),
        ("secret.json", "invalid_client_metadata", "client_secret"),
        ("other-redirect.json", "invalid_request", "not one the client registered"),
    ] {
        let query = authorize_query(&app, &documents.url(name), &challenge);
        let response = browser.get(authorize_url(&app, &query)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{name}");
        let page = response.text().await.unwrap();
        assert!(page.contains(&format!("({error})")) && page.contains(why), "{name}: {page}");
        assert!(!page.contains("class=\"back\""), "{name}: no way back to a client not known");
    }
    let (status, refused) = exchange(&app, &documents.url("missing.json"), &code, &verifier, "").await;
    assert_eq!((status, refused["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("invalid_client")));
    let mut kept: Vec<String> = entity::oauth_client::Entity::find()
        .all(&app.lore.db)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    kept.sort();
    assert_eq!(
        kept,
        vec![client.clone(), documents.url("other-redirect.json")],
        "only documents that read well"
    );

    // The audit log has the client's first reading and every refusal.
    let log = engine::audit::recent(&app.lore.db, 200, None).await.unwrap();
    assert!(log
        .iter()
        .any(|e| e.action == "oauth.client_registered" && e.target.as_deref() == Some(&client)));
    let refusals = log.iter().filter(|e| e.action == "oauth.refused").count();
    assert_eq!(refusals, 8, "seven sign-ins and one token request: {log:?}");

    // Where private addresses are not read (the default), a document on
    // loopback is refused by the crawler's address guard, unread.
    let guarded = spawn_app_with(Options::default()).await;
    guarded.sign_in_with_bootstrap_link().await;
    let before = documents.reads();
    for (client, why) in [
        (client.replace("http://", "https://"), "not a public address"),
        (client.clone(), "served over https"),
    ] {
        let query = authorize_query(&guarded, &client, &challenge);
        let response =
            no_redirects(guarded.jar.clone()).get(authorize_url(&guarded, &query)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let page = response.text().await.unwrap();
        assert!(page.contains(why), "{client}: {page}");
    }
    assert_eq!(documents.reads(), before, "nothing was fetched");
}

/// A JWT access token from the external issuer for `resource` and `scope`.
async fn machine_token(issuer: &str, resource: &str, scope: &str) -> String {
    let form = [
        ("grant_type", "client_credentials"),
        ("client_id", "lore-machine"),
        ("client_secret", "lore-machine-secret"),
        ("resource", resource),
        ("scope", scope),
    ];
    let response = reqwest::Client::new().post(format!("{issuer}/token")).form(&form).send().await.unwrap();
    let issued: Value = response.json().await.unwrap();
    issued["access_token"].as_str().unwrap_or_else(|| panic!("a token: {issued}")).to_owned()
}

fn key_id(jwt: &str) -> String {
    let header = jwt.split('.').next().unwrap();
    let header: Value =
        serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(header).unwrap())
            .unwrap();
    header["kid"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn with_an_external_issuer_its_jwt_access_tokens_act_as_the_user_they_name() {
    let mut provider = crate::helpers::OidcProvider::start_issuing_access_tokens().await;
    let mut app = spawn_app_with(options(false)).await;
    app.sign_in_with_bootstrap_link().await;
    engine::appdb::schema::apply(&app.lore, &engine::audit::Actor::System, crate::mcp::SCHEMA).await.unwrap();
    let reads_dogs = json!({"dev": {"tables": {"dog": {"read": true, "insert": false, "update": false, "delete": false}}}});
    admin_op(&app, json!({"operation": "add_role", "role": "reader", "permission": reads_dogs})).await;
    admin_op(&app, json!({"operation": "add_user", "role": "reader", "username": "lore-machine"})).await;
    let issuer = provider.issuer.clone();
    app.restart_with(move |settings| settings.auth.mcp.issuer = Some(issuer)).await;

    // Lore names the issuer, and its own authorization server is off.
    let resource: Value = reqwest::get(app.url("/.well-known/oauth-protected-resource/mcp"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(resource["authorization_servers"], json!([provider.issuer]));
    let own = reqwest::get(app.url("/.well-known/oauth-authorization-server")).await.unwrap();
    assert_eq!(own.status(), StatusCode::NOT_FOUND);
    let (status, _) = register(&app, json!({"redirect_uris": [CALLBACK]})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Its token for /mcp acts as the user its subject names.
    let access = machine_token(&provider.issuer, &app.url("/mcp"), "mcp").await;
    let (status, headers, _) = mcp(&app, "/mcp", Some(&access), None, initialize()).await;
    assert_eq!(status, StatusCode::OK);
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (_, _, listed) = mcp(&app, "/mcp", Some(&access), Some(&session), list).await;
    let tools: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"get_dogs") && !tools.contains(&"create_dogs"), "{tools:?}");

    // Refused: a token for another resource, one without the scope, one
    // Lore issued, one signed by no key of the issuer's.
    let elsewhere = machine_token(&provider.issuer, &app.url("/operation/mcp"), "mcp").await;
    let (status, headers, _) = mcp(&app, "/mcp", Some(&elsewhere), None, initialize()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(challenge_of(&headers).starts_with("Bearer error=\"invalid_token\""), "{headers:?}");
    let unscoped = machine_token(&provider.issuer, &app.url("/mcp"), "operations").await;
    let (status, headers, _) = mcp(&app, "/mcp", Some(&unscoped), None, initialize()).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(challenge_of(&headers).starts_with("Bearer error=\"insufficient_scope\", scope=\"mcp\""));
    assert_eq!(
        mcp(&app, "/mcp", Some("lore_at_of-lores-own"), None, initialize()).await.0,
        StatusCode::UNAUTHORIZED
    );
    let mut forged: Vec<String> = access.split('.').map(str::to_owned).collect();
    forged[2] = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([7u8; 256]);
    assert_eq!(
        mcp(&app, "/mcp", Some(&forged.join(".")), None, initialize()).await.0,
        StatusCode::UNAUTHORIZED
    );

    // The issuer rotates its signing key: the first token signed with the
    // new one has Lore read the keys again, and the old key's tokens hold.
    provider.rotate_keys().await;
    tokio::time::sleep(engine::oauth::external::REREAD_AT_MOST).await;
    let rotated = machine_token(&provider.issuer, &app.url("/mcp"), "mcp").await;
    assert_ne!(key_id(&rotated), key_id(&access), "signed with the new key");
    assert_eq!(mcp(&app, "/mcp", Some(&rotated), None, initialize()).await.0, StatusCode::OK);
    assert_eq!(mcp(&app, "/mcp", Some(&access), None, initialize()).await.0, StatusCode::OK);

    // Deactivating the user refuses its tokens at their next request.
    admin_op(&app, json!({"operation": "alter_user", "username": "lore-machine", "active": false})).await;
    assert_eq!(mcp(&app, "/mcp", Some(&rotated), None, initialize()).await.0, StatusCode::UNAUTHORIZED);

    // Tool calls made with tokens are limited per user, as a key's are per key.
    admin_op(&app, json!({"operation": "alter_user", "username": "lore-machine", "active": true})).await;
    app.restart_with(|settings| settings.mcp.tool_calls_per_minute = 2).await;
    let access = machine_token(&provider.issuer, &app.url("/mcp"), "mcp").await;
    let (_, headers, _) = mcp(&app, "/mcp", Some(&access), None, initialize()).await;
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let retrieve = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "retrieve", "arguments": {"query": "dogs"}}});
    for _ in 0..2 {
        let (status, _, reply) = mcp(&app, "/mcp", Some(&access), Some(&session), retrieve.clone()).await;
        assert_eq!((status, &reply["result"]["isError"]), (StatusCode::OK, &json!(false)), "{reply}");
    }
    let (status, _, reply) = mcp(&app, "/mcp", Some(&access), Some(&session), retrieve).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{reply}");
    assert_eq!(reply["error"]["data"]["code"], "rate_limited");

    // The issuer goes away: the keys already read still verify, and a
    // process that has read none answers 503, not an invalid token a client
    // would throw away.
    drop(provider);
    assert_eq!(mcp(&app, "/mcp", Some(&access), None, initialize()).await.0, StatusCode::OK);
    app.restart_with(|_| {}).await;
    let (status, _, reply) = mcp(&app, "/mcp", Some(&access), None, initialize()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{reply}");
    assert_eq!(reply["error"]["code"], "identity_provider_unavailable");
}
