//! The application database's records as stored: a corrupt catalog row is
//! an error naming the table, a key made before users existed cannot act
//! as one, and what is held in memory follows another process's changes.

use crate::support;

use engine::appdb::catalog::{self, NewTable, Origin};
use engine::appdb::{users, AppDbError};
use engine::audit::Actor;
use engine::keys::{self, KeyError, NewKey, Scope};
use engine::Error;
use sea_orm::{ActiveModelTrait, Set};

#[tokio::test]
async fn a_catalog_row_that_does_not_start_with_its_key_is_an_error_naming_the_table() {
    let (lore, _dir) = support::open().await;
    let new = NewTable {
        database: "dev".into(),
        name: "dog".into(),
        primary_key: "id".into(),
        attributes: Vec::new(),
        origin: Origin::Operation,
        options: Default::default(),
    };
    let table = catalog::create_table(&lore.db, new).await.unwrap();
    assert_eq!(catalog::table(&lore.db, "dev", "dog").await.unwrap().key().name, "id");

    let mut reordered = table.attributes.clone();
    reordered.rotate_left(1);
    entity::app_table::ActiveModel {
        id: Set(table.id.clone()),
        attributes: Set(serde_json::to_value(&reordered).unwrap()),
        ..Default::default()
    }
    .update(&lore.db)
    .await
    .unwrap();
    match catalog::table(&lore.db, "dev", "dog").await {
        Err(Error::Internal(message)) => assert!(message.contains("dev.dog"), "{message}"),
        other => panic!("a corrupt catalog row must be an error naming the table, got {other:?}"),
    }
}

#[tokio::test]
async fn a_key_made_before_users_cannot_call_operations() {
    let (lore, _dir) = support::open().await;
    let new = NewKey {
        name: "old".into(),
        kind: "secret".into(),
        scopes: vec!["answer".into()],
        ..NewKey::default()
    };
    let (key, raw) = keys::create(&lore, &Actor::System, new).await.unwrap();
    // What a key with the operations scope looked like before keys had users.
    entity::access_key::ActiveModel {
        id: Set(key.id.clone()),
        scopes: Set(serde_json::json!(["answer", "operations"])),
        ..Default::default()
    }
    .update(&lore.db)
    .await
    .unwrap();
    assert!(keys::authenticate(&lore, Some(&raw), Scope::Answer, None).await.is_ok());
    match keys::authenticate(&lore, Some(&raw), Scope::Operations, None).await {
        Err(Error::Key(KeyError::NeedsUser("operations"))) => {}
        other => panic!("the operations scope needs a user, got {other:?}"),
    }
}

/// The `lore` resource's custom tools are listed to every caller, so each
/// checks the caller's key itself: none, or one without the tool's scope,
/// is refused before anything runs.
#[tokio::test]
async fn the_answer_tools_check_the_callers_key_themselves() {
    use engine::resources::{self, Caller};
    use engine::settings::Secret;

    let (lore, _dir) = support::open().await;
    let registry = resources::registry(&lore).await.unwrap();
    let entry = registry.entry("lore").expect("Lore registers its own resource");
    assert!(entry.export_types.mcp && !entry.export_types.http, "a tool-server resource only");
    let tools: Vec<String> = entry.resource.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(tools, ["answer", "rate_answer", "retrieve"]);

    let args = serde_json::json!({"query": "anything"});
    let anonymous = Caller::default();
    match resources::call_tool(&lore, &anonymous, "lore", "retrieve", args.clone()).await {
        Err(Error::Key(KeyError::Missing)) => {}
        other => panic!("no key: refused, got {other:?}"),
    }
    let new = NewKey {
        name: "answers".into(),
        kind: "secret".into(),
        scopes: vec!["answer".into()],
        ..NewKey::default()
    };
    let (_, raw) = keys::create(&lore, &Actor::System, new).await.unwrap();
    let answering = Caller { principal: None, key: Some(Secret::new(raw)), oauth: false };
    match resources::call_tool(&lore, &answering, "lore", "retrieve", args.clone()).await {
        Err(Error::Key(KeyError::Scope("retrieve"))) => {}
        other => panic!("an answer key may not retrieve, got {other:?}"),
    }
    // Rating needs the answer scope too: a retrieve-only key may not.
    let new = NewKey {
        name: "search".into(),
        kind: "secret".into(),
        scopes: vec!["retrieve".into()],
        ..NewKey::default()
    };
    let (_, raw) = keys::create(&lore, &Actor::System, new).await.unwrap();
    let retrieving = Caller { principal: None, key: Some(Secret::new(raw)), oauth: false };
    let rating = serde_json::json!({"trace_id": "t", "helpful": true});
    match resources::call_tool(&lore, &retrieving, "lore", "rate_answer", rating).await {
        Err(Error::Key(KeyError::Scope("answer"))) => {}
        other => panic!("a retrieve key may not rate, got {other:?}"),
    }
    match resources::call_tool(&lore, &answering, "lore", "nothing", args).await {
        Err(Error::AppDb(_)) => {}
        other => panic!("an unknown tool is refused, got {other:?}"),
    }
}

/// Waits until `here` heard of a change made elsewhere since its cache's
/// epoch was `before`: on PostgreSQL, where a listener is told of each
/// change, until its notification arrived; on SQLite at once (the next
/// request reads the change counter).
async fn heard(here: &engine::Lore, before: u64) {
    if !here.appdb_cache().watched() {
        return;
    }
    for _ in 0..250 {
        if here.appdb_cache().epoch() != before {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("no notification of the change arrived");
}

/// Users, roles and tables are held in memory between requests; a change
/// made by another process (a second `lore serve` on the same database,
/// `lore roles`, `lore schema apply`) still counts from the next request
/// (on PostgreSQL, from the first after its notification arrives, without
/// reading the change counter on each request).
async fn another_process_changes_count_from_the_next_request(settings: engine::Settings) {
    use engine::operations::{self, Credentials};
    use serde_json::json;

    let postgres = settings.database.url.is_some();
    let here = engine::Lore::open(settings.clone()).await.unwrap();
    let there = engine::Lore::open(settings).await.unwrap();
    if postgres {
        for _ in 0..250 {
            if here.appdb_cache().watched() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(here.appdb_cache().watched(), "on PostgreSQL each process listens for changes");
    } else {
        assert!(!here.appdb_cache().watched(), "SQLite has nothing to listen to");
    }
    // Runs a change `there` and waits until `here` heard of it.
    macro_rules! elsewhere {
        ($change:expr) => {{
            let before = here.appdb_cache().epoch();
            let done = $change;
            heard(&here, before).await;
            done
        }};
    }
    let admin = Actor::System;
    let reader = json!({"dev": {"tables": {"dog": {"read": true, "insert": false, "update": false, "delete": false}}}});
    users::add_role(&here, &admin, "reader", &reader).await.unwrap();
    users::add_user(&here, &admin, "ann", "reader", true).await.unwrap();
    let new = NewKey {
        name: "ann".into(),
        kind: "secret".into(),
        scopes: vec!["operations".into()],
        user: Some("ann".into()),
        ..NewKey::default()
    };
    let (key, raw) = keys::create(&here, &admin, new).await.unwrap();
    let schema = "type Dog @table(database: \"dev\", table: \"dog\") { id: ID @primaryKey\n name: String }";
    engine::appdb::schema::apply(&here, &admin, schema).await.unwrap();
    let super_user = engine::appdb::Principal::Admin { account_id: "ada".into() };
    let insert = json!({"operation": "insert", "database": "dev", "table": "dog", "records": [{"id": "1", "name": "Rex"}]});
    operations::dispatch(&here, &super_user, insert).await.unwrap();

    let read = || json!({"operation": "search_by_id", "database": "dev", "table": "dog", "ids": ["1"]});
    let call = |body: serde_json::Value| {
        let (here, raw) = (here.clone(), raw.clone());
        async move {
            let (principal, _) =
                operations::authenticate(&here, Credentials::Key { raw: &raw, origin: None }).await?;
            operations::dispatch(&here, &principal, body).await
        }
    };
    // Twice: the second is served from what the first read.
    for _ in 0..2 {
        call(read()).await.expect("the role reads dev.dog");
    }

    // The other process takes the table away from the role...
    let none = json!({"dev": {"tables": {"dog": {"read": false, "insert": false, "update": false, "delete": false}}}});
    let role = users::role(&there.db, "reader").await.unwrap();
    elsewhere!(users::alter_role(&there, &admin, &role.id, None, Some(&none)).await.unwrap());
    match call(read()).await {
        Err(Error::AppDb(AppDbError::PermissionDenied { .. })) => {}
        other => panic!("the changed role counts from the next request, got {other:?}"),
    }
    // ...gives it back, and adds an attribute the next read returns.
    elsewhere!(users::alter_role(&there, &admin, &role.id, None, Some(&reader)).await.unwrap());
    let schema =
        "type Dog @table(database: \"dev\", table: \"dog\") { id: ID @primaryKey\n name: String\n age: Int }";
    elsewhere!(engine::appdb::schema::apply(&there, &admin, schema).await.unwrap());
    let update =
        json!({"operation": "update", "database": "dev", "table": "dog", "records": [{"id": "1", "age": 3}]});
    operations::dispatch(&there, &super_user, update).await.unwrap();
    match call(read()).await {
        Ok(operations::Outcome::Records(found)) => assert_eq!(found[0]["age"], 3, "{found:?}"),
        other => panic!("the new attribute is read, got {other:?}"),
    }
    // A table the other process exports is served here too.
    let schema = "type Dog @table(database: \"dev\", table: \"dog\") { id: ID @primaryKey\n name: String\n age: Int }\ntype Cat @table(database: \"dev\") @export { id: ID @primaryKey }";
    elsewhere!(engine::appdb::schema::apply(&there, &admin, schema).await.unwrap());
    call(read()).await.unwrap();
    assert!(
        engine::resources::http_resource(&here, "Cat").await.is_ok(),
        "the other process's export is served"
    );
    // Keys are held too: one revoked by the other process is refused at once.
    elsewhere!(keys::revoke(&there, &admin, &key.id).await.unwrap());
    match call(read()).await {
        Err(Error::Key(KeyError::Revoked)) => {}
        other => panic!("a key revoked elsewhere is refused from the next request, got {other:?}"),
    }
}

#[tokio::test]
async fn another_process_changes_count_from_the_next_request_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let settings = engine::Settings { data_dir: dir.path().to_owned(), ..engine::Settings::default() };
    another_process_changes_count_from_the_next_request(settings).await;
}

#[tokio::test]
async fn another_process_changes_count_from_the_next_request_on_postgres() {
    let (url, name) = support::postgres().await;
    let dir = tempfile::tempdir().unwrap();
    let mut settings = engine::Settings { data_dir: dir.path().to_owned(), ..engine::Settings::default() };
    settings.database.url = Some(engine::settings::Secret::new(url));
    another_process_changes_count_from_the_next_request(settings).await;
    support::drop_postgres(&name).await;
}
