//! The application database's records as stored: a corrupt catalog row is
//! an error naming the table, and a key made before users existed cannot
//! act as one.

use crate::support;

use engine::appdb::catalog::{self, NewTable, Origin};
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
