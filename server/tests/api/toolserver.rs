//! The tool server's surface as a user sees it, read off the functions of
//! the crate `lore-toolserver` (in this binary, not one of their own: each
//! test binary links LanceDB): tool names that stay put, the documents a
//! resource registers, and writes told to the channels subscribed to them.

use std::sync::Arc;

use engine::appdb::{AppDbError, Principal};
use engine::audit::Actor;
use engine::Error;
use lore_toolserver::{self as mcp, Profile, ToolServer};

/// A tool server over a fresh Lore in a temporary data directory.
async fn open() -> (ToolServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let settings = engine::Settings { data_dir: dir.path().to_owned(), ..engine::Settings::default() };
    (ToolServer::open(engine::Lore::open(settings).await.unwrap()), dir)
}

/// The application profile's tool names (SPEC rule 2): a shared name takes
/// the database as a prefix, a name still shared a 6-hex suffix, and the
/// names are the same after a restart; a table resource has put and patch,
/// so only `update_` is offered.
#[tokio::test]
async fn tool_names_take_a_prefix_then_a_suffix_and_survive_a_restart() {
    use engine::resources::Caller;

    let dir = tempfile::tempdir().unwrap();
    let settings = engine::Settings { data_dir: dir.path().to_owned(), ..engine::Settings::default() };
    let schema = r#"
type A @table(database: "dev", table: "a") @export(name: "a/b/c") { id: ID @primaryKey }
type B @table(database: "prod", table: "b") @export(name: "a_b/c") { id: ID @primaryKey }
type C @table(database: "prod", table: "c") @export(name: "a/b_c") { id: ID @primaryKey }
type D @table(database: "dev", table: "d") @export(name: "dogs") { id: ID @primaryKey }
"#;
    let names = |lore: ToolServer| async move {
        let caller = Caller {
            principal: Some(engine::appdb::Principal::Admin { account_id: "ada".into() }),
            ..Caller::default()
        };
        let surface = mcp::surface(&lore, Profile::Application, &caller).await.unwrap();
        surface.tools.into_iter().map(|t| t.name).filter(|n| n.starts_with("get_")).collect::<Vec<_>>()
    };
    let first = {
        let lore = ToolServer::open(engine::Lore::open(settings.clone()).await.unwrap());
        engine::appdb::schema::apply(&lore, &Actor::System, schema).await.unwrap();
        let surface = mcp::surface(
            &lore,
            Profile::Application,
            &Caller {
                principal: Some(engine::appdb::Principal::Admin { account_id: "ada".into() }),
                ..Caller::default()
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

    let again = names(ToolServer::open(engine::Lore::open(settings).await.unwrap())).await;
    assert_eq!(first, again, "the same names after a restart");
}

/// A resource's documents are the tool server's through the registry, like
/// its tools: listed and read on the profiles they name, after the tool
/// server's own (which are served the same way), and not at all when the
/// resource is not exported to the tool server.
#[tokio::test]
async fn a_registered_resource_serves_its_documents_on_the_profiles_it_names() {
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

    let (lore, _dir) = open().await;
    let caller =
        Caller { principal: Some(Principal::Admin { account_id: "ada".into() }), ..Caller::default() };
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

/// Every `ToolServer` of one Lore shares its push channels, and a record
/// written on any surface (here the operations API) is told to the channel
/// subscribed to it through the engine's write watcher: once, though the
/// tool server was opened twice.
#[tokio::test]
async fn a_committed_write_is_told_once_to_the_channel_subscribed_to_its_record() {
    use engine::resources::Caller;
    use lore_toolserver::hub::{self, Filter, Notice};
    use serde_json::json;

    let (tools, _dir) = open().await;
    let again = ToolServer::open(tools.lore().clone());
    let schema = "type Dog @table(database: \"dev\", table: \"dog\") @export(name: \"dogs\") { id: ID @primaryKey\n name: String }";
    engine::appdb::schema::apply(&tools, &Actor::System, schema).await.unwrap();
    let admin = Principal::Admin { account_id: "ada".into() };
    let caller = Caller { principal: Some(admin.clone()), ..Caller::default() };
    let uri = mcp::record_uri(&tools.settings.base_url(), "dogs", &json!("1"));
    let filter = Filter { tools: false, resources: false, updates: vec![uri.clone()] };
    let mut stream = hub::listen(&again, Profile::Application, &caller, json!(7), filter).await.unwrap();
    assert_eq!(tools.hub().open_channels(), 1, "the channel opened through one handle is the other's too");

    let insert = json!({"operation": "insert", "database": "dev", "table": "dog", "records": [{"id": "1", "name": "Rex"}]});
    engine::operations::dispatch(&tools, &admin, insert).await.unwrap();
    let pushed = stream.messages.try_recv().unwrap();
    assert_eq!(pushed.notice, Notice::ResourceUpdated(uri));
    assert_eq!(pushed.subscription, Some(json!(7)));
    assert!(stream.messages.try_recv().is_err(), "told once");

    drop(stream);
    assert_eq!(tools.hub().open_channels(), 0, "a dropped stream leaves the hub");
}
