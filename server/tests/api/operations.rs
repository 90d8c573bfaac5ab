//! `POST /operation`: a script written for HarperDB's operations API runs
//! unchanged (on SQLite and PostgreSQL), the permission tree decides every
//! call, and typed attributes round-trip.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{drop_postgres, fresh_postgres, spawn_app, spawn_app_with, Options, TestApp};

/// One call with a key (or, with `None`, the test client's session).
async fn op(app: &TestApp, key: Option<&str>, body: Value) -> (StatusCode, Value) {
    let mut request = app.client.post(app.url("/operation")).json(&body);
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// As the signed-in admin: `call` must succeed; its body.
async fn admin_op(app: &TestApp, body: Value) -> Value {
    let (status, body) = op(app, None, body).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// A key with the `operations` scope for `user`, made on the Access screen's endpoint.
async fn key_for(app: &TestApp, user: &str) -> String {
    let response = app
        .post_json(
            "/admin/keys",
            json!({"name": format!("{user} script"), "kind": "secret", "scopes": ["operations"], "user": user}),
        )
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let created: Value = response.json().await.unwrap();
    created["raw_key"].as_str().unwrap().to_owned()
}

/// A user with a role of its own holding `permission`, and a key for it.
async fn user_with(app: &TestApp, name: &str, permission: Value) -> String {
    admin_op(app, json!({"operation": "add_role", "role": name, "permission": permission})).await;
    admin_op(app, json!({"operation": "add_user", "role": name, "username": name, "password": "unused", "active": true}))
        .await;
    key_for(app, name).await
}

async fn count(app: &TestApp, database: &str, table: &str) -> i64 {
    let described =
        admin_op(app, json!({"operation": "describe_table", "database": database, "table": table})).await;
    described["record_count"].as_i64().unwrap()
}

fn ids(records: &Value) -> Vec<i64> {
    records.as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect()
}

/// The script: what a HarperDB user runs first, through a super user's key.
async fn harperdb_script(app: &TestApp) {
    app.sign_in_with_bootstrap_link().await;
    let admin = user_with(app, "ops_admin", json!({"super_user": true})).await;
    let key = Some(admin.as_str());
    let call = |body: Value| async move {
        let (status, body) = op(app, key, body).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    };

    let made = call(json!({"operation": "create_database", "database": "dev"})).await;
    assert_eq!(made["message"], "database 'dev' successfully created");
    call(json!({"operation": "create_table", "database": "dev", "table": "dog", "primary_key": "id"})).await;
    let breeds = ["lab", "pug", "husky"];
    let records: Vec<Value> = (1..=1000)
        .map(|i| json!({"id": i, "name": format!("dog {i}"), "breed": breeds[i % 3], "age": i % 15, "owner": format!("owner {i}")}))
        .collect();
    let inserted =
        call(json!({"operation": "insert", "database": "dev", "table": "dog", "records": records})).await;
    assert_eq!(inserted["message"], "inserted 1000 of 1000 records");
    assert_eq!(inserted["inserted_hashes"].as_array().unwrap().len(), 1000);

    let found =
        call(json!({"operation": "search_by_id", "database": "dev", "table": "dog", "ids": [2, 999, 4242],
                            "get_attributes": ["*"]}))
        .await;
    assert_eq!(ids(&found), [2, 999]);
    assert_eq!(found[0]["name"], "dog 2");
    assert!(found[0]["__createdtime__"].as_f64().unwrap() > 0.0, "HarperDB's timestamps are kept: {found}");
    // HarperDB's older names still work.
    let by_hash =
        call(json!({"operation": "search_by_hash", "schema": "dev", "table": "dog", "hash_values": [3],
                              "get_attributes": ["id", "breed"]}))
        .await;
    assert_eq!(by_hash, json!([{"id": 3, "breed": "lab"}]));

    let pugs = call(json!({"operation": "search_by_value", "database": "dev", "table": "dog",
                           "search_attribute": "breed", "search_value": "pug", "get_attributes": ["id", "name"]}))
    .await;
    assert_eq!(pugs.as_array().unwrap().len(), 334);
    assert!(pugs
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["id"].as_i64().unwrap() % 3 == 1 && p.get("breed").is_none()));
    let prefixed = call(json!({"operation": "search_by_value", "database": "dev", "table": "dog",
                               "search_attribute": "name", "search_value": "dog 99*", "get_attributes": ["id"]}))
    .await;
    assert_eq!(ids(&prefixed), [99, 990, 991, 992, 993, 994, 995, 996, 997, 998, 999]);

    let conditions = json!({"operation": "search_by_conditions", "database": "dev", "table": "dog",
        "operator": "and", "limit": 5, "offset": 5, "get_attributes": ["id", "age", "breed"],
        "conditions": [{"search_attribute": "age", "search_type": "greater_than_equal", "search_value": 10},
                       {"search_attribute": "breed", "search_type": "equals", "search_value": "lab"}]});
    let page = call(conditions).await;
    // Labs are multiples of 3; age = id % 15 ≥ 10 keeps ids ≡ 12 (mod 15): 12, 27, 42, …
    assert_eq!(ids(&page), [87, 102, 117, 132, 147]);

    let updated = call(json!({"operation": "update", "database": "dev", "table": "dog",
                              "records": [{"id": 1, "name": "Rex"}, {"id": 5000, "name": "nobody"}]}))
    .await;
    assert_eq!(updated["update_hashes"], json!([1]));
    assert_eq!(updated["skipped_hashes"], json!([5000]));
    let upserted = call(json!({"operation": "upsert", "database": "dev", "table": "dog",
                               "records": [{"id": 1, "age": 3}, {"id": 1001, "name": "Newcomer"}]}))
    .await;
    assert_eq!(upserted["upserted_hashes"], json!([1, 1001]));
    let rex = call(json!({"operation": "search_by_id", "database": "dev", "table": "dog", "ids": [1], "get_attributes": ["*"]}))
        .await;
    assert_eq!(
        (&rex[0]["name"], &rex[0]["age"], &rex[0]["breed"]),
        (&json!("Rex"), &json!(3), &json!("pug"))
    );
    let deleted =
        call(json!({"operation": "delete", "database": "dev", "table": "dog", "ids": [1001, 5000]})).await;
    assert_eq!((&deleted["deleted_hashes"], &deleted["skipped_hashes"]), (&json!([1001]), &json!([5000])));

    let all = call(json!({"operation": "describe_all"})).await;
    assert_eq!(all["dev"]["dog"]["record_count"], 1000);
    assert_eq!(all["dev"]["dog"]["hash_attribute"], "id");
    let attributes: Vec<&str> = all["dev"]["dog"]["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["attribute"].as_str().unwrap())
        .collect();
    for name in ["id", "name", "breed", "age", "owner", "__createdtime__", "__updatedtime__"] {
        assert!(attributes.contains(&name), "{name} in {attributes:?}");
    }

    // A role of HarperDB's format, then as that user.
    call(json!({"operation": "add_role", "role": "dog_reader", "permission": {"super_user": false,
        "dev": {"tables": {"dog": {"read": true, "insert": false, "update": false, "delete": false,
            "attribute_permissions": [{"attribute_name": "owner", "read": false, "insert": false, "update": false}]}}}}}))
    .await;
    call(json!({"operation": "add_user", "role": "dog_reader", "username": "reader", "password": "unused", "active": true}))
        .await;
    let reader = key_for(app, "reader").await;
    let (status, found) = op(
        app,
        Some(&reader),
        json!({"operation": "search_by_id", "database": "dev", "table": "dog", "ids": [2],
                                      "get_attributes": ["*"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(found[0]["name"], "dog 2");
    assert!(found[0].get("owner").is_none(), "a hidden attribute is absent: {found}");
    let (status, refused) = op(
        app,
        Some(&reader),
        json!({"operation": "insert", "database": "dev", "table": "dog", "records": [{"id": 2000}]}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(refused["error"]["code"], "permission_denied");
    assert_eq!(refused["error"]["details"]["target"], "dev.dog");
    assert_eq!(count(app, "dev", "dog").await, 1000, "a refused write changes nothing");
    let (_, user) = op(app, Some(&reader), json!({"operation": "user_info"})).await;
    assert_eq!((&user["username"], &user["role"]["role"]), (&json!("reader"), &json!("dog_reader")));
}

#[tokio::test]
async fn a_harperdb_script_runs_unchanged_on_sqlite() {
    let app = spawn_app().await;
    harperdb_script(&app).await;
}

#[tokio::test]
async fn a_harperdb_script_runs_unchanged_on_postgres() {
    let (url, name) = fresh_postgres().await;
    let app = spawn_app_with(Options { database_url: Some(url), ..Options::default() }).await;
    harperdb_script(&app).await;
    assert!(!app.data_dir.path().join("lore.db").exists(), "PostgreSQL was used, not SQLite");
    drop(app);
    drop_postgres(&name).await;
}

/// `describe_all` and `describe_database` count the records of many tables
/// in a few statements (100 tables each): every count lands on its own
/// table, across a statement's boundary too.
async fn counts_land_on_their_tables(app: &TestApp) {
    app.sign_in_with_bootstrap_link().await;
    let tables = 105;
    for i in 0..tables {
        let table = format!("t{i}");
        admin_op(
            app,
            json!({"operation": "create_table", "database": "many", "table": table, "primary_key": "id"}),
        )
        .await;
        let records: Vec<Value> = (0..i % 4).map(|id| json!({"id": id})).collect();
        if !records.is_empty() {
            admin_op(
                app,
                json!({"operation": "insert", "database": "many", "table": table, "records": records}),
            )
            .await;
        }
    }
    let all = admin_op(app, json!({"operation": "describe_all"})).await;
    let database = admin_op(app, json!({"operation": "describe_database", "database": "many"})).await;
    assert_eq!(database.as_object().unwrap().len(), tables);
    for i in 0..tables {
        let table = format!("t{i}");
        assert_eq!(all["many"][&table]["record_count"], i % 4, "{table}");
        assert_eq!(database[&table]["record_count"], i % 4, "{table}");
    }
}

#[tokio::test]
async fn counts_land_on_their_tables_on_sqlite() {
    counts_land_on_their_tables(&spawn_app().await).await;
}

#[tokio::test]
async fn counts_land_on_their_tables_on_postgres() {
    let (url, name) = fresh_postgres().await;
    let app = spawn_app_with(Options { database_url: Some(url), ..Options::default() }).await;
    counts_land_on_their_tables(&app).await;
    drop(app);
    drop_postgres(&name).await;
}

/// Each kind of caller against each family of operation: allowed exactly
/// where the permission tree says, 403 elsewhere, and a refused write
/// leaves the table as it was.
#[tokio::test]
async fn the_permission_tree_decides_every_call() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    admin_op(
        &app,
        json!({"operation": "create_table", "database": "dev", "table": "dog", "primary_key": "id"}),
    )
    .await;
    admin_op(
        &app,
        json!({"operation": "insert", "database": "dev", "table": "dog",
                          "records": [{"id": 1, "name": "Ada", "owner": "Grace"}]}),
    )
    .await;
    admin_op(&app, json!({"operation": "create_database", "database": "prod"})).await;

    let read = json!({"operation": "search_by_id", "database": "dev", "table": "dog", "ids": [1], "get_attributes": ["*"]});
    let write = json!({"operation": "insert", "database": "dev", "table": "dog", "records": [{"id": 2, "name": "Bo"}]});
    let structure_dev =
        json!({"operation": "create_table", "database": "dev", "table": "cat", "primary_key": "id"});
    let structure_prod =
        json!({"operation": "create_table", "database": "prod", "table": "cat", "primary_key": "id"});
    let admin_call = json!({"operation": "add_role", "role": "sneaky", "permission": {"super_user": true}});

    let callers = [
        ("super", Some(json!({"super_user": true}))),
        ("structure_all", Some(json!({"structure_user": true}))),
        ("structure_dev", Some(json!({"structure_user": ["dev"]}))),
        ("listed", Some(json!({"operations": ["search_by_id"], "dev": {"tables": {"dog": {"read": true}}}}))),
        ("table_reader", Some(json!({"dev": {"tables": {"dog": {"read": true}}}}))),
        (
            "attribute_hider",
            Some(json!({"dev": {"tables": {"dog": {"read": true, "insert": true,
            "attribute_permissions": [{"attribute_name": "owner", "read": false, "insert": false, "update": false}]}}}})),
        ),
    ];
    // caller → (read, write, create table in dev, in prod, add_role) allowed?
    let expected = [
        ("super", [true, true, true, true, true]),
        ("structure_all", [false, false, true, true, false]),
        ("structure_dev", [false, false, true, false, false]),
        ("listed", [true, false, false, false, false]),
        ("table_reader", [true, false, false, false, false]),
        ("attribute_hider", [true, true, false, false, false]),
    ];
    for ((name, permission), (expected_name, allowed)) in callers.into_iter().zip(expected) {
        assert_eq!(name, expected_name);
        let key = user_with(&app, name, permission.unwrap()).await;
        for (call, allowed) in
            [&read, &write, &structure_dev, &structure_prod, &admin_call].into_iter().zip(allowed)
        {
            let before = count(&app, "dev", "dog").await;
            let (status, body) = op(&app, Some(&key), call.clone()).await;
            if allowed {
                assert_eq!(status, StatusCode::OK, "{name} may {call}: {body}");
            } else {
                assert_eq!(status, StatusCode::FORBIDDEN, "{name} may not {call}: {body}");
                assert_eq!(body["error"]["code"], "permission_denied");
                assert_eq!(count(&app, "dev", "dog").await, before, "{name}'s refused call changed nothing");
            }
            // Undo what an allowed call made, so the next caller starts alike.
            if allowed && call["operation"] == "insert" {
                admin_op(&app, json!({"operation": "delete", "database": "dev", "table": "dog", "ids": [2]}))
                    .await;
            }
            if allowed && call["operation"] == "create_table" {
                admin_op(
                    &app,
                    json!({"operation": "drop_table", "database": call["database"], "table": "cat"}),
                )
                .await;
            }
            if allowed && call["operation"] == "add_role" {
                admin_op(&app, json!({"operation": "drop_role", "id": "sneaky"})).await;
            }
        }
    }

    // The attribute hider reads without `owner`, may not ask for it, and
    // may not write it.
    let hider = key_for(&app, "attribute_hider").await;
    let (_, found) = op(&app, Some(&hider), read.clone()).await;
    assert_eq!(
        found,
        json!([{"id": 1, "name": "Ada", "__createdtime__": found[0]["__createdtime__"],
                              "__updatedtime__": found[0]["__updatedtime__"]}])
    );
    let (status, body) = op(
        &app,
        Some(&hider),
        json!({"operation": "search_by_id", "database": "dev", "table": "dog",
                                                       "ids": [1], "get_attributes": ["owner"]}),
    )
    .await;
    assert_eq!(
        (status, body["error"]["details"]["target"].clone()),
        (StatusCode::FORBIDDEN, json!("dev.dog.owner"))
    );
    let (status, _) = op(
        &app,
        Some(&hider),
        json!({"operation": "insert", "database": "dev", "table": "dog",
                                                    "records": [{"id": 3, "owner": "Mallory"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(count(&app, "dev", "dog").await, 1);

    // A key without the scope, and no key at all.
    let response = app
        .post_json("/admin/keys", json!({"name": "answers only", "kind": "secret", "scopes": ["answer"]}))
        .await;
    let answer_key: Value = response.json().await.unwrap();
    let (status, body) = op(&app, answer_key["raw_key"].as_str(), read.clone()).await;
    assert_eq!((status, body["error"]["code"].clone()), (StatusCode::FORBIDDEN, json!("insufficient_scope")));
    let anonymous = reqwest::Client::new();
    let response = anonymous.post(app.url("/operation")).json(&read).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    // The operations scope acts as a user: no key without one.
    let response = app
        .post_json("/admin/keys", json!({"name": "nobody's", "kind": "secret", "scopes": ["operations"]}))
        .await;
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

/// The table `dev.dog`, a user `reader` whose role may read it, that
/// user's key, and a call that reads the table.
async fn reader_of_dogs(app: &TestApp) -> (String, Value) {
    admin_op(
        app,
        json!({"operation": "create_table", "database": "dev", "table": "dog", "primary_key": "id"}),
    )
    .await;
    let key = user_with(app, "reader", json!({"dev": {"tables": {"dog": {"read": true}}}})).await;
    let read = json!({"operation": "search_by_value", "database": "dev", "table": "dog",
                      "search_attribute": "id", "search_value": "*"});
    (key, read)
}

/// A role change counts from the next request and tells those who listen.
#[tokio::test]
async fn a_role_change_counts_from_the_next_request() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    let (key, read) = reader_of_dogs(&app).await;
    assert_eq!(op(&app, Some(&key), read.clone()).await.0, StatusCode::OK);

    let mut events = app.lore.appdb_events();
    admin_op(&app, json!({"operation": "alter_role", "id": "reader", "permission": {"dev": {"tables": {}}}}))
        .await;
    assert_eq!(events.recv().await.unwrap(), engine::appdb::Event::RoleChanged);
    assert_eq!(op(&app, Some(&key), read.clone()).await.0, StatusCode::FORBIDDEN);

    admin_op(&app, json!({"operation": "alter_user", "username": "reader", "active": false})).await;
    assert_eq!(events.recv().await.unwrap(), engine::appdb::Event::RoleChanged);
    assert_eq!(op(&app, Some(&key), json!({"operation": "user_info"})).await.0, StatusCode::FORBIDDEN);

    let (status, body) = op(&app, None, json!({"operation": "drop_role", "id": "reader"})).await;
    assert_eq!((status, body["error"]["code"].clone()), (StatusCode::CONFLICT, json!("role_in_use")));
    admin_op(&app, json!({"operation": "drop_user", "username": "reader"})).await;
    assert_eq!(op(&app, Some(&key), json!({"operation": "user_info"})).await.0, StatusCode::UNAUTHORIZED);

    let (status, body) = op(
        &app,
        None,
        json!({"operation": "add_role", "role": "bad",
                                              "permission": {"dev": {"tables": {"dog": {"read": "yes"}}}}}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body["error"]["message"].as_str().unwrap().contains("permission.dev.tables.dog.read"), "{body}");
}

/// On PostgreSQL every process listens for the others' changes: a role
/// altered by `lore roles alter` (another process on the same database)
/// counts from the server's next requests though the server no longer
/// reads the change counter on each one, and still does after the
/// listener's connection is killed (the server stops trusting what it
/// holds until it listens again).
#[tokio::test]
async fn on_postgres_a_role_altered_by_another_process_counts_at_once() {
    let (url, name) = fresh_postgres().await;
    let app = spawn_app_with(Options { database_url: Some(url.clone()), ..Options::default() }).await;
    app.sign_in_with_bootstrap_link().await;
    let (key, read) = reader_of_dogs(&app).await;
    let listening = || async {
        for _ in 0..250 {
            if app.lore.appdb_cache().watched() {
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        false
    };
    assert!(listening().await, "the server listens for changes");
    assert_eq!(op(&app, Some(&key), read.clone()).await.0, StatusCode::OK);

    let alter = |permission: &str| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_lore"))
            .env("LORE_DATA_DIR", app.data_dir.path())
            .env("LORE_DATABASE__URL", &url)
            .args(["roles", "alter", "reader", "--permission", permission])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    };
    // Polls until the reader's read answers `expected` (two seconds at most).
    let answers = |expected: StatusCode| {
        let (key, read) = (key.clone(), read.clone());
        let app = &app;
        async move {
            for _ in 0..100 {
                if op(app, Some(&key), read.clone()).await.0 == expected {
                    return true;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            false
        }
    };
    alter(r#"{"dev": {"tables": {}}}"#);
    assert!(answers(StatusCode::FORBIDDEN).await, "the other process's change counted");

    let admin = sea_orm::Database::connect(
        std::env::var("LORE_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned()),
    )
    .await
    .unwrap();
    let killed = sea_orm::ConnectionTrait::query_all(
        &admin,
        sea_orm::Statement::from_string(
            sea_orm::DbBackend::Postgres,
            format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = '{name}' AND query ILIKE 'LISTEN%'"
            ),
        ),
    )
    .await
    .unwrap();
    assert_eq!(killed.len(), 1, "one listener per process");
    alter(r#"{"dev": {"tables": {"dog": {"read": true}}}}"#);
    assert!(answers(StatusCode::OK).await, "a change while the listener was down counted");
    assert!(listening().await, "the server listens again");
    alter(r#"{"dev": {"tables": {}}}"#);
    assert!(answers(StatusCode::FORBIDDEN).await, "and hears the next change");

    drop(app);
    drop_postgres(&name).await;
}

/// Every type of SPEC's mapping table round-trips, wrong values are refused
/// naming the attribute, and a failed batch writes nothing.
async fn types_round_trip(app: &TestApp) {
    app.sign_in_with_bootstrap_link().await;
    let declared = json!([
        {"name": "id", "type": "ID", "isPrimaryKey": true},
        {"name": "small", "type": "Int"}, {"name": "long", "type": "Long"}, {"name": "big", "type": "BigInt", "indexed": true},
        {"name": "ratio", "type": "Float"}, {"name": "label", "type": "String", "nullable": false},
        {"name": "flag", "type": "Boolean"}, {"name": "born", "type": "Date"}, {"name": "raw", "type": "Bytes"},
        {"name": "file", "type": "Blob"}, {"name": "meta", "type": "Object"}, {"name": "tags", "type": "Array"}
    ]);
    admin_op(
        app,
        json!({"operation": "create_table", "database": "types", "table": "every", "attributes": declared}),
    )
    .await;
    let record = json!({"id": "a-1", "small": -5, "long": 9_007_199_254_740_991_i64, "big": -42, "ratio": 0.25,
        "label": "héllo", "flag": true, "born": "2026-11-24T10:00:00.000Z", "raw": "AAEC", "file": "aGVsbG8=",
        "meta": {"nested": {"deep": [1, 2]}}, "tags": ["x", 1, null]});
    admin_op(
        app,
        json!({"operation": "insert", "database": "types", "table": "every", "records": [record.clone()]}),
    )
    .await;
    let mut found = admin_op(
        app,
        json!({"operation": "search_by_id", "database": "types", "table": "every", "ids": ["a-1"],
                                         "get_attributes": ["*"]}),
    )
    .await;
    let stored = found[0].as_object_mut().unwrap();
    assert_eq!(Value::Object(stored.clone()), record);

    let by_date = admin_op(
        app,
        json!({"operation": "search_by_conditions", "database": "types", "table": "every",
        "conditions": [{"search_attribute": "born", "search_type": "between",
                        "search_value": ["2026-01-01T00:00:00Z", 1_798_761_600_000_i64]}]}),
    )
    .await;
    assert_eq!(by_date.as_array().unwrap().len(), 1, "dates compare as dates: {by_date}");

    for (attribute, value) in [
        ("small", json!(3_000_000_000_i64)),
        ("flag", json!("yes")),
        ("raw", json!("not base64!")),
        ("meta", json!([1])),
        ("born", json!("yesterday")),
    ] {
        let mut bad = json!({"id": "b-1", "label": "x"});
        bad[attribute] = value;
        let (status, body) = op(
            app,
            None,
            json!({"operation": "insert", "database": "types", "table": "every",
                                 "records": [{"id": "ok-1", "label": "fine"}, bad]}),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{attribute}: {body}");
        assert_eq!(body["error"]["code"], "type_mismatch");
        assert_eq!(body["error"]["details"]["field"], attribute);
    }
    let (status, body) = op(
        app,
        None,
        json!({"operation": "insert", "database": "types", "table": "every",
                                              "records": [{"id": "ok-1", "label": "fine"}, {"id": "c-1"}]}),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("missing_attribute"))
    );
    let (status, body) = op(app, None, json!({"operation": "insert", "database": "types", "table": "every",
                                              "records": [{"id": "ok-1", "label": "fine"}, {"id": "a-1", "label": "again"}]}))
    .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::CONFLICT, json!("duplicate_primary_key"))
    );
    let (status, body) = op(
        app,
        None,
        json!({"operation": "insert", "database": "types", "table": "every",
                                              "records": [{"id": "ok-1", "label": "fine", "unknown": 1}]}),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("unknown_attribute"))
    );
    assert_eq!(count(app, "types", "every").await, 1, "no failed batch wrote anything");

    let (status, body) =
        op(app, None, json!({"operation": "describe_table", "database": "nowhere", "table": "x"})).await;
    assert_eq!((status, body["error"]["code"].clone()), (StatusCode::NOT_FOUND, json!("database_not_found")));
    let (status, body) =
        op(app, None, json!({"operation": "describe_table", "database": "types", "table": "x"})).await;
    assert_eq!((status, body["error"]["code"].clone()), (StatusCode::NOT_FOUND, json!("table_not_found")));
    let (status, body) = op(app, None, json!({"operation": "make_coffee"})).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("unknown_operation"))
    );
    let (status, _) = op(app, None, json!({"operation": "create_database", "database": "no-dashes"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn every_type_round_trips_on_sqlite() {
    let app = spawn_app().await;
    types_round_trip(&app).await;
}

#[tokio::test]
async fn every_type_round_trips_on_postgres() {
    let (url, name) = fresh_postgres().await;
    let app = spawn_app_with(Options { database_url: Some(url), ..Options::default() }).await;
    types_round_trip(&app).await;
    drop(app);
    drop_postgres(&name).await;
}

/// Every call lands in the audit log with who made it and how it ended,
/// and Lore's own operations answer with the console's views.
#[tokio::test]
async fn calls_are_audited_and_lores_own_operations_answer() {
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    let key = user_with(&app, "auditor", json!({"operations": ["list_sources", "read_audit_log"]})).await;
    let (status, sources) = op(&app, Some(&key), json!({"operation": "list_sources"})).await;
    assert_eq!((status, sources), (StatusCode::OK, json!([])));
    let (status, _) = op(&app, Some(&key), json!({"operation": "list_keys"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, log) = op(&app, Some(&key), json!({"operation": "read_audit_log", "limit": 3})).await;
    let log = log.as_array().unwrap();
    assert_eq!(log[0]["operation"], "operation.list_keys");
    assert_eq!(log[0]["user"], "user:auditor");
    assert_eq!(log[0]["details"]["outcome"], "refused");
    assert_eq!(log[1]["operation"], "operation.list_sources");
    assert_eq!(log[1]["details"]["outcome"], "ok");
}

/// Lore's system operations call the console's engine functions: status,
/// sources and their runs, answering; the configuration is a super user's
/// only and never shows a secret.
#[tokio::test]
async fn the_system_operations_work_through_the_same_engine_calls() {
    let app = spawn_app_with(Options {
        configure: Some(|settings| {
            settings.metrics.key = Some(engine::settings::Secret::new("s3cret-metrics-key"));
        }),
        ..Options::default()
    })
    .await;
    app.sign_in_with_bootstrap_link().await;
    let operator = user_with(
        &app,
        "operator",
        json!({"operations": ["get_status", "add_source", "sync_source", "search_jobs", "answer", "get_configuration"]}),
    )
    .await;
    let key = Some(operator.as_str());

    let (status, config) = op(&app, key, json!({"operation": "get_configuration"})).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "configuration is a super user's, whatever a list says: {config}"
    );
    let config = admin_op(&app, json!({"operation": "get_configuration"})).await;
    assert_eq!(config["metrics"]["key"], "[redacted]");
    assert!(!config.to_string().contains("s3cret-metrics-key"));

    let (status, state) = op(&app, key, json!({"operation": "get_status"})).await;
    assert_eq!(status, StatusCode::OK, "{state}");
    assert!(state["checks"].as_array().is_some_and(|c| !c.is_empty()), "{state}");

    let (status, source) =
        op(&app, key, json!({"operation": "add_source", "name": "handbook", "kind": "upload"})).await;
    assert_eq!(status, StatusCode::OK, "{source}");
    assert_eq!(source["name"], "handbook");
    let id = source["id"].as_str().unwrap().to_owned();
    let (status, job) = op(&app, key, json!({"operation": "sync_source", "id": id})).await;
    assert_eq!(status, StatusCode::OK, "{job}");
    let (_, jobs) = op(&app, key, json!({"operation": "search_jobs", "source_id": id})).await;
    assert!(jobs.as_array().unwrap().iter().any(|j| j["id"] == job["id"]), "{jobs}");
    let (status, _) = op(&app, key, json!({"operation": "start_index"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "not in the operator's list");
    let every = admin_op(&app, json!({"operation": "start_index"})).await;
    let (_, jobs) = op(&app, key, json!({"operation": "search_jobs"})).await;
    assert!(
        jobs.as_array().unwrap().iter().any(|j| j["id"] == every["id"]),
        "the run of every source is listed: {jobs}"
    );
    let (status, refused) =
        op(&app, key, json!({"operation": "add_source", "name": "", "kind": "upload"})).await;
    assert_eq!(status.as_u16() / 100, 4, "a bad source is the caller's to fix: {refused}");

    let (status, metrics) = op(&app, key, json!({"operation": "get_metrics"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "not in the operator's list: {metrics}");
    let metrics = admin_op(&app, json!({"operation": "get_metrics"})).await;
    let runs: i64 = metrics["jobs"].as_object().unwrap().values().map(|n| n.as_i64().unwrap()).sum();
    assert!(runs >= 1, "the sync is counted: {metrics}");
    let analytics = admin_op(&app, json!({"operation": "get_analytics", "hours": 48})).await;
    assert!(analytics.is_object(), "{analytics}");
    let (status, _) = op(&app, None, json!({"operation": "get_analytics", "hours": 0})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // Nothing indexed, no model bound: the answer pipeline says why.
    let (status, answer) =
        op(&app, key, json!({"operation": "answer", "question": "How do I reset it?"})).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("not_answerable"))
    );
}

/// `read_log` reads the lines Lore's own log writes (the subscriber `lore`
/// installs), and only a super user may.
#[tokio::test]
async fn read_log_reads_lores_own_log_and_is_a_super_users() {
    lore_server::telemetry::init(engine::settings::LogFormat::Text);
    let app = spawn_app().await;
    app.sign_in_with_bootstrap_link().await;
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
    let lines = admin_op(&app, json!({"operation": "read_log", "limit": 200})).await;
    let lines = lines.as_array().unwrap();
    assert!(
        lines.iter().any(|l| l["level"] == "INFO" && l["message"].as_str().unwrap_or("").contains("served")),
        "the request log is there: {lines:?}"
    );
    let warnings = admin_op(&app, json!({"operation": "read_log", "level": "warn"})).await;
    assert!(warnings.as_array().unwrap().iter().all(|l| l["level"] == "WARN" || l["level"] == "ERROR"));
    let key = user_with(&app, "log_reader", json!({"operations": ["read_log"]})).await;
    let (status, _) = op(&app, Some(&key), json!({"operation": "read_log"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "the log is a super user's, whatever a list says");
}
