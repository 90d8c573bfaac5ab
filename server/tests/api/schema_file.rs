//! The schema file (`appdb.schema`): every type of SPEC's mapping table
//! round-trips through insert and read on SQLite and PostgreSQL, managed
//! and computed attributes are set by Lore and refused as input, an expired
//! record disappears, and a bad declaration names its line (at start too).

use engine::appdb::schema;
use engine::audit::Actor;
use engine::{Lore, Settings};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{drop_postgres, fresh_postgres, spawn_app, spawn_app_with, Options, TestApp};

const SCHEMA: &str = r#"
# Every type, the managed stamps and a computed attribute.
type Thing @table(database: "lab", table: "thing") @export {
  id: ID @primaryKey
  int: Int
  long: Long
  big: BigInt
  float: Float
  text: String @indexed
  ident: ID
  flag: Boolean
  day: Date
  bytes: Bytes
  blob: Blob
  object: Object
  array: [String]
  required: String!
  created: Float @createdTime
  updated: Date @updatedTime
  doubled: Long @computed(from: "int * 2")
}

type Note @table(database: "lab", table: "note", expiration: 1) {
  id: ID @primaryKey
  body: String
  expires: Float @expiresAt
}
"#;

async fn op(app: &TestApp, body: Value) -> (StatusCode, Value) {
    let response = app.client.post(app.url("/operation")).json(&body).send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn ok(app: &TestApp, body: Value) -> Value {
    let (status, body) = op(app, body).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

async fn round_trip(app: &TestApp) {
    app.sign_in_with_bootstrap_link().await;
    let applied = schema::apply(&app.lore, &Actor::System, SCHEMA).await.unwrap();
    assert_eq!(applied.created, ["lab.thing", "lab.note"]);
    let again = schema::apply(&app.lore, &Actor::System, SCHEMA).await.unwrap();
    assert_eq!((again.created.len(), again.changed.len()), (0, 0), "applying twice changes nothing");

    let thing = json!({
        "id": "t1", "int": -7, "long": 9_007_199_254_740_991_i64, "big": -9_007_199_254_740_991_i64,
        "float": 2.5, "text": "héllo", "ident": "abc-1", "flag": true, "day": "2026-11-25T10:00:00.000Z",
        "bytes": "AAEC/w==", "blob": "bG9yZQ==", "object": {"a": [1, {"b": null}]}, "array": ["x", "y"],
        "required": "here",
    });
    ok(app, json!({"operation": "insert", "database": "lab", "table": "thing", "records": [thing.clone()]}))
        .await;
    let found =
        ok(app, json!({"operation": "search_by_id", "database": "lab", "table": "thing", "ids": ["t1"]}))
            .await;
    let record = found[0].as_object().unwrap();
    for (name, value) in thing.as_object().unwrap() {
        assert_eq!(&record[name], value, "`{name}` round-trips");
    }
    assert_eq!(record["doubled"], -14, "computed from int");
    assert!(record["created"].as_f64().unwrap() > 1.7e12, "created is epoch ms: {record:?}");
    assert!(record["updated"].as_str().unwrap().ends_with('Z'), "updated is a Date: {record:?}");

    // Lore's attributes are not input; a required one is required.
    for (name, value) in
        [("created", json!(1.0)), ("updated", json!("2020-01-01T00:00:00Z")), ("doubled", json!(3))]
    {
        let mut record = json!({"id": "t2", "required": "x"});
        record[name] = value;
        let (status, body) =
            op(app, json!({"operation": "insert", "database": "lab", "table": "thing", "records": [record]}))
                .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_operation")),
            "{name}: {body}"
        );
    }
    let (status, body) = op(
        app,
        json!({"operation": "insert", "database": "lab", "table": "thing", "records": [{"id": "t3"}]}),
    )
    .await;
    assert_eq!(body["error"]["code"], "missing_attribute", "{status}: {body}");
    let (_, body) = op(
        app,
        json!({"operation": "insert", "database": "lab", "table": "thing", "records": [{"id": "t4", "required": "x", "int": "7"}]}),
    )
    .await;
    assert_eq!(
        (body["error"]["code"].as_str(), body["error"]["details"]["field"].as_str()),
        (Some("type_mismatch"), Some("int"))
    );
    let described =
        ok(app, json!({"operation": "describe_table", "database": "lab", "table": "thing"})).await;
    assert_eq!(described["record_count"], 1, "refused inserts wrote nothing");

    // A record lives `expiration` seconds after its last write.
    ok(app, json!({"operation": "insert", "database": "lab", "table": "note", "records": [{"id": "n1", "body": "soon gone"}]}))
        .await;
    let note =
        ok(app, json!({"operation": "search_by_id", "database": "lab", "table": "note", "ids": ["n1"]}))
            .await;
    let now_ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as f64;
    let expires = note[0]["expires"].as_f64().unwrap();
    assert!(expires > now_ms && expires <= now_ms + 1000.0, "written + 1 s: {note}");
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let gone =
        ok(app, json!({"operation": "search_by_id", "database": "lab", "table": "note", "ids": ["n1"]}))
            .await;
    assert_eq!(gone, json!([]), "an expired record is gone from reads");
    let described = ok(app, json!({"operation": "describe_table", "database": "lab", "table": "note"})).await;
    assert_eq!(described["record_count"], 0, "and from counts");
    ok(app, json!({"operation": "insert", "database": "lab", "table": "note", "records": [{"id": "n1", "body": "again"}]}))
        .await;
}

#[tokio::test]
async fn every_type_round_trips_through_the_schema_file_on_sqlite() {
    let app = spawn_app().await;
    round_trip(&app).await;
}

#[tokio::test]
async fn every_type_round_trips_through_the_schema_file_on_postgres() {
    let (url, name) = fresh_postgres().await;
    let app = spawn_app_with(Options { database_url: Some(url), ..Options::default() }).await;
    round_trip(&app).await;
    drop(app);
    drop_postgres(&name).await;
}

#[tokio::test]
async fn a_bad_declaration_names_its_line_and_changes_nothing() {
    let app = spawn_app().await;
    let bad = "type Dog @table {\n  id: ID @primaryKey\n  name: Nope\n}\n";
    let err = schema::apply(&app.lore, &Actor::System, bad).await.unwrap_err();
    assert!(err.to_string().contains("line 3"), "{err}");
    assert!(engine::appdb::catalog::tables(&app.lore.db, None).await.unwrap().is_empty());

    // A type cannot change under stored records.
    schema::apply(&app.lore, &Actor::System, "type Dog @table {\n  id: ID @primaryKey\n  age: Int\n}\n")
        .await
        .unwrap();
    let err = schema::apply(
        &app.lore,
        &Actor::System,
        "type Dog @table {\n  id: ID @primaryKey\n  name: String\n  age: String\n}\n",
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("line 4"), "{err}");
    let dog = engine::appdb::catalog::table(&app.lore.db, "data", "Dog").await.unwrap();
    assert!(dog.attribute("name").is_none(), "nothing of a refused file is applied");
}

#[tokio::test]
async fn the_configured_schema_file_is_applied_at_start_and_a_bad_one_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.graphql");
    std::fs::write(&path, "type Cat @table(database: \"pets\") @export {\n  id: ID @primaryKey\n}\n")
        .unwrap();
    let mut settings = Settings { data_dir: dir.path().join("data"), ..Settings::default() };
    settings.appdb.schema = Some(path.clone());
    let lore = Lore::open(settings.clone()).await.unwrap();
    let cat = engine::appdb::catalog::table(&lore.db, "pets", "Cat").await.unwrap();
    assert_eq!(cat.options.export.as_ref().map(|e| e.path.as_str()), Some("Cat"));
    lore.db.clone().close().await.unwrap();

    std::fs::write(&path, "type Cat @table(database: \"pets\") {\n  id: ID @primaryKey\n  @oops\n}\n")
        .unwrap();
    let err = Lore::open(settings).await.err().expect("a bad schema file stops the start");
    assert!(err.to_string().contains("line 3"), "{err}");
}
