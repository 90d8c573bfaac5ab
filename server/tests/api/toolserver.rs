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

/// The application profile's tool names (SPEC rule 2): the first export
/// of a name keeps it when another database exports the same name later;
/// the newcomers take the database as a prefix, then a 6-hex suffix; the
/// names are the same after a restart; a table resource has put and
/// patch, so only `update_` is offered.
#[tokio::test]
async fn tool_names_stay_put_when_a_later_export_collides_and_survive_a_restart() {
    use engine::resources::Caller;

    let dir = tempfile::tempdir().unwrap();
    let settings = engine::Settings { data_dir: dir.path().to_owned(), ..engine::Settings::default() };
    // The senior's path sorts last and the newcomers are declared first:
    // only the stored seniority can keep dev's name.
    let first = r#"
type A @table(database: "dev", table: "a") @export(name: "a_b_c") { id: ID @primaryKey }
type D @table(database: "dev", table: "d") @export(name: "dogs") { id: ID @primaryKey }
"#;
    let later = format!(
        r#"
type B @table(database: "prod", table: "b") @export(name: "a/b/c") {{ id: ID @primaryKey }}
type C @table(database: "prod", table: "c") @export(name: "a/b_c") {{ id: ID @primaryKey }}
{first}"#
    );
    let admin = || Caller {
        principal: Some(engine::appdb::Principal::Admin { account_id: "ada".into() }),
        ..Caller::default()
    };
    let names = |lore: ToolServer| async move {
        let surface = mcp::surface(&lore, Profile::Application, &admin()).await.unwrap();
        surface.tools.into_iter().map(|t| t.name).collect::<Vec<_>>()
    };
    let (before, after) = {
        let lore = ToolServer::open(engine::Lore::open(settings.clone()).await.unwrap());
        engine::appdb::schema::apply(&lore, &Actor::System, first).await.unwrap();
        let before = names(lore.clone()).await;
        engine::appdb::schema::apply(&lore, &Actor::System, &later).await.unwrap();
        (before, names(lore).await)
    };
    assert!(before.contains(&"get_a_b_c".to_owned()), "{before:?}");
    assert!(
        after.contains(&"update_dogs".to_owned()) && !after.iter().any(|n| n.starts_with("patch_")),
        "{after:?}"
    );
    assert!(after.contains(&"get_a_b_c".to_owned()), "dev's export keeps its name: {after:?}");
    assert!(
        after.contains(&"get_prod_a_b_c".to_owned()),
        "the database prefix settles one newcomer: {after:?}"
    );
    let suffixed: Vec<&String> = after.iter().filter(|n| n.starts_with("get_prod_a_b_c_")).collect();
    assert_eq!(suffixed.len(), 1, "{after:?}");
    assert_eq!(suffixed[0].len(), "get_prod_a_b_c_".len() + 6);

    let again = names(ToolServer::open(engine::Lore::open(settings).await.unwrap())).await;
    assert_eq!(after, again, "the same names after a restart");
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

/// What the application profile lists follows each export and the
/// caller's permissions (and nested types are described all the way): `mcp: false` hides a table from the tool server,
/// `http: false` keeps its tools but lists no REST descriptor (which would
/// point at nothing); a concrete `svc://schema/…` resource is listed for
/// every table the caller may see, read with only the attributes it may
/// read, and the same attributes are gone from its `get_` and `search_`
/// schemas; managed and computed attributes are read, never written; Lore's
/// own resource cannot be exported over.
#[tokio::test]
async fn listings_follow_exports_and_permissions_and_lores_own_names_are_reserved() {
    use engine::resources::Caller;
    use serde_json::json;

    let (lore, _dir) = open().await;
    let schema = r#"
type Dog @table(database: "dev", table: "dog") @export(name: "dogs") { id: ID @primaryKey
  name: String
  secret: String
  owner: Owner
  born: Float @createdTime
  label: String @computed(from: "name") }
type Owner { city: String!, pets: [Pet] }
type Pet { kind: String }
type Cat @table(database: "dev", table: "cat") @export(name: "cats", http: false) { id: ID @primaryKey }
type Owl @table(database: "dev", table: "owl") @export(name: "owls", mcp: false) { id: ID @primaryKey }
type Bat @table(database: "dev", table: "bat") { id: ID @primaryKey }
"#;
    engine::appdb::schema::apply(&lore, &Actor::System, schema).await.unwrap();
    let admin = Principal::Admin { account_id: "ada".into() };
    let base = lore.settings.base_url();

    let surface = mcp::surface(
        &lore,
        Profile::Application,
        &Caller { principal: Some(admin.clone()), ..Caller::default() },
    )
    .await
    .unwrap();
    let tools: Vec<&str> = surface.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(tools.contains(&"get_cats"), "http: false still serves the tool server: {tools:?}");
    assert!(!tools.iter().any(|t| t.ends_with("_owls")), "mcp: false hides it: {tools:?}");
    let uris: Vec<&str> = surface.resources.iter().map(|r| r.uri.as_str()).collect();
    assert!(uris.contains(&format!("{base}/data/dogs").as_str()), "{uris:?}");
    assert!(!uris.iter().any(|u| u.ends_with("/data/cats") || u.ends_with("/data/owls")), "{uris:?}");
    for table in ["dog", "cat", "owl", "bat"] {
        assert!(uris.contains(&format!("svc://schema/dev/{table}").as_str()), "{table}: {uris:?}");
    }
    // A declared type inside a record is described, not a bare object: in
    // the tools' schemas, `svc://schema` and the OpenAPI document alike.
    let create = &surface.tools.iter().find(|t| t.name == "create_dogs").unwrap().input_schema;
    let owner = &create["properties"]["owner"];
    assert_eq!(owner["properties"]["city"], json!({"type": "string"}), "{create}");
    assert_eq!(owner["required"], json!(["city"]), "{create}");
    assert_eq!(
        owner["properties"]["pets"]["items"]["properties"]["kind"],
        json!({"type": ["string", "null"]})
    );
    // Managed and computed attributes are no one's to write (schema rule 2),
    // but are read.
    for tool in ["create_dogs", "update_dogs"] {
        let schema = &surface.tools.iter().find(|t| t.name == tool).unwrap().input_schema;
        let properties = schema["properties"].as_object().unwrap();
        assert!(properties.contains_key("name"), "{tool}: {schema}");
        assert!(!properties.contains_key("born") && !properties.contains_key("label"), "{tool}: {schema}");
    }
    let get = &surface.tools.iter().find(|t| t.name == "get_dogs").unwrap().input_schema;
    let readable = get["properties"]["get_attributes"]["items"]["enum"].to_string();
    assert!(readable.contains("born") && readable.contains("label"), "{readable}");
    let caller = Caller { principal: Some(admin.clone()), ..Caller::default() };
    let read = mcp::read(&lore, Profile::Application, &caller, "svc://schema/dev/dog").await.unwrap();
    let described =
        read.json["attributes"].as_array().unwrap().iter().find(|a| a["name"] == "owner").unwrap();
    assert_eq!(described["schema"]["properties"]["city"], json!({"type": "string"}), "{described}");
    let document = lore_openapi::data_document(
        &engine::resources::http_exports(&lore).await.unwrap(),
        &lore.settings.base_url(),
    );
    let text = document.to_string();
    assert!(text.contains("\"city\":{\"type\":\"string\"}"), "{text}");
    let refused =
        mcp::read(&lore, Profile::Application, &caller, &format!("{base}/data/cats")).await.unwrap_err();
    assert!(matches!(refused, Error::AppDb(AppDbError::UnknownResource(_))), "{refused:?}");

    // A user who reads dogs, but not their secret.
    let role = json!({"operation": "add_role", "role": "walker", "permission": {"dev": {"tables": {"dog": {
        "read": true, "insert": false, "update": false, "delete": false,
        "attribute_permissions": [{"attribute_name": "secret", "read": false, "insert": false, "update": false}]}}}}});
    engine::operations::dispatch(&lore, &admin, role).await.unwrap();
    let user =
        json!({"operation": "add_user", "role": "walker", "username": "wanda", "password": "a long secret"});
    engine::operations::dispatch(&lore, &admin, user).await.unwrap();
    let wanda = Caller {
        principal: Some(engine::appdb::users::principal(&lore, "wanda").await.unwrap()),
        ..Caller::default()
    };
    let surface = mcp::surface(&lore, Profile::Application, &wanda).await.unwrap();
    let schemas: Vec<&str> =
        surface.resources.iter().map(|r| r.uri.as_str()).filter(|u| u.starts_with("svc://schema/")).collect();
    assert_eq!(schemas, ["svc://schema/dev/dog"], "only the table she may see");
    let read = mcp::read(&lore, Profile::Application, &wanda, "svc://schema/dev/dog").await.unwrap();
    let text = read.json.to_string();
    assert!(text.contains("\"name\"") && !text.contains("secret"), "{text}");
    for tool in ["get_dogs", "search_dogs"] {
        let schema = &surface.tools.iter().find(|t| t.name == tool).unwrap().input_schema;
        let text = schema.to_string();
        assert!(text.contains("\"name\"") && !text.contains("secret"), "{tool}: {text}");
    }

    // `lore` is Lore's own resource: no table is exported over it.
    let shadow = "type Lore @table(database: \"dev\", table: \"lore\")\n  @export(name: \"lore\") { id: ID @primaryKey }";
    let refused = engine::appdb::schema::apply(&lore, &Actor::System, shadow).await.unwrap_err();
    let message = refused.to_string();
    assert!(message.contains("line 2") && message.contains("`lore`"), "{message}");
    let own = engine::resources::registry(&lore).await.unwrap().entry("lore").unwrap();
    assert!(own.resource.tools().iter().any(|t| t.name == "answer"), "the answer tools are still Lore's");
}
