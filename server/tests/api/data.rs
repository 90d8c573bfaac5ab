//! REST for exported resources under `/data/`: every verb on a table the
//! schema file exports, search with conditions, attribute selection, limit
//! and cursor; the permission matrix of each verb for each kind of caller;
//! and the OpenAPI 3.0.3 document of exactly what is exported over HTTP.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use engine::appdb::schema;
use engine::audit::Actor;

use crate::helpers::{spawn_app, TestApp};

const SCHEMA: &str = r#"
type Dog @table(database: "dev", table: "dog") @export(name: "dogs") {
  id: ID @primaryKey
  name: String! @indexed
  breed: String
  age: Int
  owner: String
}
type Note @table(database: "dev", table: "note") @export(name: "notes", http: false) {
  id: ID @primaryKey
  body: String
}
type Plain @table(database: "dev", table: "plain") {
  id: ID @primaryKey
}
"#;

async fn call(
    app: &TestApp,
    key: Option<&str>,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let client = if key.is_some() { reqwest::Client::new() } else { app.client.clone() };
    let mut request = client.request(method, app.url(path));
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A user with its own role holding `permission`, and a key (scope
/// `operations`) for it.
async fn user_with(app: &TestApp, name: &str, permission: Value) -> String {
    for body in [
        json!({"operation": "add_role", "role": name, "permission": permission}),
        json!({"operation": "add_user", "role": name, "username": name, "active": true}),
    ] {
        let response = app.client.post(app.url("/operation")).json(&body).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let response = app
        .post_json(
            "/admin/keys",
            json!({"name": name, "kind": "secret", "scopes": ["operations"], "user": name}),
        )
        .await;
    let created: Value = response.json().await.unwrap();
    created["raw_key"].as_str().unwrap().to_owned()
}

async fn exported_app() -> TestApp {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    schema::apply(&app.lore, &Actor::System, SCHEMA).await.unwrap();
    app
}

async fn dog_count(app: &TestApp) -> usize {
    let (status, page) = call(app, None, Method::GET, "/data/dogs/?limit=1000", None).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["records"].as_array().unwrap().len()
}

#[tokio::test]
async fn every_verb_works_on_an_exported_table() {
    let app = exported_app().await;
    let key = user_with(&app, "owner", json!({"super_user": true})).await;
    let key = Some(key.as_str());

    let (status, created) =
        call(&app, key, Method::POST, "/data/dogs/", Some(json!({"name": "Rex", "breed": "lab", "age": 3})))
            .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let (status, rex) = call(&app, key, Method::GET, &format!("/data/dogs/{id}"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!((&rex["name"], &rex["age"]), (&json!("Rex"), &json!(3)));

    let (status, _) =
        call(&app, key, Method::PATCH, &format!("/data/dogs/{id}"), Some(json!({"age": 4}))).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) =
        call(&app, key, Method::PUT, "/data/dogs/d2", Some(json!({"name": "Bo", "breed": "pug", "age": 9})))
            .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "PUT creates a missing record");
    for i in 0..5 {
        let body = json!({"id": format!("p{i}"), "name": format!("Pug {i}"), "breed": "pug", "age": i});
        let (status, _) = call(&app, key, Method::POST, "/data/dogs/", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let (_, rex) = call(&app, key, Method::GET, &format!("/data/dogs/{id}?select=name,age"), None).await;
    assert_eq!(rex, json!({"name": "Rex", "age": 4}), "PATCH changed age; select picks attributes");

    // Search: conditions, selection, pages through the cursor.
    let (_, page) =
        call(&app, key, Method::GET, "/data/dogs/?breed=pug&age=ge=2&select=id,age&limit=2", None).await;
    let mut seen: Vec<Value> = page["records"].as_array().unwrap().clone();
    assert_eq!(seen.len(), 2);
    let mut cursor = page["next_cursor"].as_str().map(str::to_owned);
    while let Some(next) = cursor {
        let (status, page) = call(
            &app,
            key,
            Method::GET,
            &format!("/data/dogs/?breed=pug&age=ge=2&select=id,age&limit=2&cursor={next}"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        seen.extend(page["records"].as_array().unwrap().iter().cloned());
        cursor = page["next_cursor"].as_str().map(str::to_owned);
    }
    let mut ids: Vec<&str> = seen.iter().map(|r| r["id"].as_str().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, ["d2", "p2", "p3", "p4"]);
    assert!(seen.iter().all(|r| r.get("name").is_none()));

    let (status, _) = call(&app, key, Method::DELETE, "/data/dogs/d2", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = call(&app, key, Method::GET, "/data/dogs/d2", None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("record_not_found")));
    let (status, body) = call(&app, key, Method::PATCH, "/data/dogs/nobody", Some(json!({"age": 1}))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("record_not_found")));

    // Only what is exported over HTTP is served.
    for path in ["/data/notes/", "/data/plain/", "/data/nothing/1"] {
        let (status, body) = call(&app, key, Method::GET, path, None).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::NOT_FOUND, Some("resource_not_found")),
            "{path}"
        );
    }
    // Bad input: a clear code, nothing written.
    let (status, body) = call(&app, key, Method::POST, "/data/dogs/", Some(json!({"breed": "lab"}))).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("missing_attribute"))
    );
    let (status, _) = call(&app, key, Method::GET, "/data/dogs/?limit=0", None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(dog_count(&app).await, 6);
}

/// Each kind of caller against each verb: allowed exactly where its table
/// permissions say, 403 elsewhere, and a refused write changes nothing.
#[tokio::test]
async fn the_permission_tree_decides_every_verb() {
    let app = exported_app().await;
    let (status, _) =
        call(&app, None, Method::PUT, "/data/dogs/d1", Some(json!({"name": "Ada", "owner": "Grace"}))).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "the signed-in admin acts as super user");

    let read_only = json!({"dev": {"tables": {"dog": {"read": true}}}});
    let callers = [
        ("super", json!({"super_user": true}), [true, true, true, true, true, true]),
        ("structure", json!({"structure_user": true}), [false, false, false, false, false, false]),
        ("structure_dev", json!({"structure_user": ["dev"]}), [false, false, false, false, false, false]),
        (
            "listed",
            json!({"operations": ["search_by_id"], "dev": {"tables": {"dog": {"read": true}}}}),
            [true, true, false, false, false, false],
        ),
        ("reader", read_only, [true, true, false, false, false, false]),
        (
            "writer",
            json!({"dev": {"tables": {"dog": {"read": true, "insert": true, "update": true, "delete": true}}}}),
            [true, true, true, true, true, true],
        ),
    ];
    for (name, permission, allowed) in callers {
        let key = user_with(&app, name, permission).await;
        let verbs = [
            (Method::GET, "/data/dogs/d1".to_owned(), None),
            (Method::GET, "/data/dogs/?name=Ada".to_owned(), None),
            (Method::POST, "/data/dogs/".to_owned(), Some(json!({"id": "x", "name": "X"}))),
            (Method::PUT, "/data/dogs/y".to_owned(), Some(json!({"name": "Y"}))),
            (Method::PATCH, "/data/dogs/d1".to_owned(), Some(json!({"breed": "lab"}))),
            (Method::DELETE, "/data/dogs/x".to_owned(), None),
        ];
        for ((method, path, body), allowed) in verbs.into_iter().zip(allowed) {
            let before = dog_count(&app).await;
            let (status, answer) = call(&app, Some(&key), method.clone(), &path, body).await;
            if allowed {
                assert!(status.is_success(), "{name} may {method} {path}: {status} {answer}");
            } else {
                assert_eq!(status, StatusCode::FORBIDDEN, "{name} may not {method} {path}: {answer}");
                assert_eq!(answer["error"]["code"], "permission_denied");
                assert_eq!(dog_count(&app).await, before, "{name}'s refused {method} changed nothing");
            }
        }
        // Leave the table as the next caller expects it.
        for id in ["x", "y"] {
            call(&app, None, Method::DELETE, &format!("/data/dogs/{id}"), None).await;
        }
        call(
            &app,
            None,
            Method::PUT,
            "/data/dogs/d1",
            Some(json!({"name": "Ada", "breed": null, "owner": "Grace"})),
        )
        .await;
    }

    // An attribute the caller may not read is absent; one it may not write is refused.
    let hider = user_with(&app, "hider", json!({"dev": {"tables": {"dog": {"read": true, "update": true,
        "attribute_permissions": [{"attribute_name": "owner", "read": false, "insert": false, "update": false}]}}}}))
    .await;
    let (_, ada) = call(&app, Some(&hider), Method::GET, "/data/dogs/d1", None).await;
    assert_eq!(ada, json!({"id": "d1", "name": "Ada"}));
    let (_, page) = call(&app, Some(&hider), Method::GET, "/data/dogs/", None).await;
    assert!(page["records"].as_array().unwrap().iter().all(|r| r.get("owner").is_none()), "{page}");
    let (status, _) =
        call(&app, Some(&hider), Method::PATCH, "/data/dogs/d1", Some(json!({"owner": "Mallory"}))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, ada) = call(&app, None, Method::GET, "/data/dogs/d1", None).await;
    assert_eq!(ada["owner"], "Grace", "the refused write changed nothing");

    // A key without the scope, and no key at all.
    let response = app
        .post_json("/admin/keys", json!({"name": "answers", "kind": "secret", "scopes": ["answer"]}))
        .await;
    let answer_key: Value = response.json().await.unwrap();
    let (status, body) = call(&app, answer_key["raw_key"].as_str(), Method::GET, "/data/dogs/d1", None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::FORBIDDEN, Some("insufficient_scope")));
    let response = reqwest::Client::new().get(app.url("/data/dogs/d1")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_openapi_document_lists_exactly_the_exported_verbs_and_validates() {
    let app = exported_app().await;
    let (status, document) = call(&app, None, Method::GET, "/data/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(document["openapi"], "3.0.3");
    let paths = document["paths"].as_object().unwrap();
    let mut listed: Vec<&str> = paths.keys().map(String::as_str).collect();
    listed.sort();
    assert_eq!(listed, ["/data/dogs/", "/data/dogs/{id}"], "only what is exported over HTTP");
    let methods = |path: &str| -> Vec<String> {
        let mut methods: Vec<String> = paths[path].as_object().unwrap().keys().cloned().collect();
        methods.sort();
        methods
    };
    assert_eq!(methods("/data/dogs/"), ["get", "post"]);
    assert_eq!(methods("/data/dogs/{id}"), ["delete", "get", "patch", "put"]);
    let dog = &document["components"]["schemas"]["dogs"]["properties"];
    assert_eq!(
        (dog["age"]["type"].as_str(), dog["name"]["type"].as_str()),
        (Some("integer"), Some("string"))
    );
    let response = reqwest::Client::new().get(app.url("/data/openapi.json")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "the document needs the same credentials");

    // The official validator of OpenAPI documents, in Python.
    let python = std::env::var("LORE_TEST_OPENAPI_PYTHON")
        .expect("LORE_TEST_OPENAPI_PYTHON: a Python with openapi-spec-validator (scripts/test sets it)");
    let file = app.data_dir.path().join("data-openapi.json");
    std::fs::write(&file, serde_json::to_vec(&document).unwrap()).unwrap();
    let output = std::process::Command::new(python)
        .args(["-c", "import json,sys\nfrom openapi_spec_validator import validate, OpenAPIV30SpecValidator\nvalidate(json.load(open(sys.argv[1])), cls=OpenAPIV30SpecValidator)\nprint('valid')"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}
