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
    assert_eq!(tools, ["answer", "retrieve"]);

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
    let answering = Caller { principal: None, key: Some(Secret::new(raw)) };
    match resources::call_tool(&lore, &answering, "lore", "retrieve", args.clone()).await {
        Err(Error::Key(KeyError::Scope("retrieve"))) => {}
        other => panic!("an answer key may not retrieve, got {other:?}"),
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
        Ok(operations::Outcome::Json(found)) => assert_eq!(found[0]["age"], 3, "{found}"),
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

/// The application profile's tool names (SPEC rule 2): a shared name takes
/// the database as a prefix, a name still shared a 6-hex suffix, and the
/// names are the same after a restart; a table resource has put and patch,
/// so only `update_` is offered.
#[tokio::test]
async fn tool_names_take_a_prefix_then_a_suffix_and_survive_a_restart() {
    use engine::mcp::{self, Profile};
    use engine::resources::Caller;

    let dir = tempfile::tempdir().unwrap();
    let settings = engine::Settings { data_dir: dir.path().to_owned(), ..engine::Settings::default() };
    let schema = r#"
type A @table(database: "dev", table: "a") @export(name: "a/b/c") { id: ID @primaryKey }
type B @table(database: "prod", table: "b") @export(name: "a_b/c") { id: ID @primaryKey }
type C @table(database: "prod", table: "c") @export(name: "a/b_c") { id: ID @primaryKey }
type D @table(database: "dev", table: "d") @export(name: "dogs") { id: ID @primaryKey }
"#;
    let names = |lore: engine::Lore| async move {
        let caller = Caller {
            principal: Some(engine::appdb::Principal::Admin { account_id: "ada".into() }),
            key: None,
        };
        let surface = mcp::surface(&lore, Profile::Application, &caller).await.unwrap();
        surface.tools.into_iter().map(|t| t.name).filter(|n| n.starts_with("get_")).collect::<Vec<_>>()
    };
    let first = {
        let lore = engine::Lore::open(settings.clone()).await.unwrap();
        engine::appdb::schema::apply(&lore, &Actor::System, schema).await.unwrap();
        let surface = mcp::surface(
            &lore,
            Profile::Application,
            &Caller {
                principal: Some(engine::appdb::Principal::Admin { account_id: "ada".into() }),
                key: None,
            },
        )
        .await
        .unwrap();
        let all: Vec<String> = surface.tools.iter().map(|t| t.name.clone()).collect();
        assert!(
            all.contains(&"update_dogs".to_owned()) && !all.iter().any(|n| n.starts_with("patch_")),
            "{all:?}"
        );
        names(lore).await
    };
    assert!(first.contains(&"get_dev_a_b_c".to_owned()), "the database prefix settles dev's: {first:?}");
    assert!(first.contains(&"get_dogs".to_owned()), "no collision, no change: {first:?}");
    let suffixed: Vec<&String> = first.iter().filter(|n| n.starts_with("get_prod_a_b_c_")).collect();
    assert_eq!(suffixed.len(), 2, "{first:?}");
    assert!(suffixed.iter().all(|n| n.len() == "get_prod_a_b_c_".len() + 6) && suffixed[0] != suffixed[1]);

    let again = names(engine::Lore::open(settings).await.unwrap()).await;
    assert_eq!(first, again, "the same names after a restart");
}

/// A resource's documents are the tool server's through the registry, like
/// its tools: listed and read on the profiles they name, after the tool
/// server's own (which are served the same way), and not at all when the
/// resource is not exported to the tool server.
#[tokio::test]
async fn a_registered_resource_serves_its_documents_on_the_profiles_it_names() {
    use std::sync::Arc;

    use engine::appdb::Principal;
    use engine::mcp::{self, Profile};
    use engine::resources::{Caller, Document, ExportTypes, Resource, Verb};

    const TERMS: Document = Document {
        uri: "svc://glossary",
        name: "glossary",
        description: "The product's terms.",
        profiles: &[Profile::Application],
    };
    struct Glossary;
    #[async_trait::async_trait]
    impl Resource for Glossary {
        fn verbs(&self) -> Vec<Verb> {
            Vec::new()
        }
        fn documents(&self) -> &'static [Document] {
            &[TERMS]
        }
        async fn read_document(
            &self,
            _lore: &engine::Lore,
            profile: Profile,
            caller: &Caller,
            document: &Document,
            uri: &str,
        ) -> engine::Result<serde_json::Value> {
            assert_eq!(*document, TERMS);
            Ok(
                serde_json::json!({"uri": uri, "profile": profile.key(), "signed_in": caller.principal.is_some()}),
            )
        }
    }

    let (lore, _dir) = support::open().await;
    let caller = Caller { principal: Some(Principal::Admin { account_id: "ada".into() }), key: None };
    lore.resources().set("glossary", Arc::new(Glossary), ExportTypes { http: false, mcp: true });

    let application = mcp::surface(&lore, Profile::Application, &caller).await.unwrap();
    let uris: Vec<&str> = application.resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["svc://about", "svc://openapi", "svc://glossary"]);
    let templates: Vec<&str> = application.templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(templates, ["svc://schema/{database}/{table}"]);
    let read = mcp::read(&lore, Profile::Application, &caller, "svc://glossary").await.unwrap();
    assert_eq!(
        read.json,
        serde_json::json!({"uri": "svc://glossary", "profile": "application", "signed_in": true})
    );

    // Not on the profile it does not name.
    let operations = mcp::surface(&lore, Profile::Operations, &caller).await.unwrap();
    let uris: Vec<&str> = operations.resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["svc://about", "svc://operations"]);
    let refused = mcp::read(&lore, Profile::Operations, &caller, "svc://glossary").await.unwrap_err();
    assert!(matches!(refused, Error::AppDb(AppDbError::UnknownResource(_))), "{refused:?}");

    // The tool server's own documents are read the same way, on both profiles.
    for profile in [Profile::Application, Profile::Operations] {
        let about = mcp::read(&lore, profile, &caller, "svc://about").await.unwrap();
        assert_eq!(about.json["profile"], profile.key());
    }

    // Served over HTTP only, it is no longer the tool server's.
    lore.resources().set("glossary", Arc::new(Glossary), ExportTypes { http: true, mcp: false });
    let refused = mcp::read(&lore, Profile::Application, &caller, "svc://glossary").await.unwrap_err();
    assert!(matches!(refused, Error::AppDb(AppDbError::UnknownResource(_))), "{refused:?}");
    let application = mcp::surface(&lore, Profile::Application, &caller).await.unwrap();
    assert!(!application.resources.iter().any(|r| r.uri == "svc://glossary"));
}
