//! Retrieval that respects who asks, on SQLite with the real embedding model
//! and LanceDB: sources with audiences (everyone, a role, a table's readers)
//! holding planted facts, asked by an admin, a `support` user, a `guest`
//! user, a key without a user and a widget key. Each fact is found by
//! exactly the callers who may read it; what a caller may not read changes
//! nothing it gets (not its results, scores or counts), even when a
//! thousand restricted passages are closer to its question; an audience or
//! a role changed counts from the next request (an attribute's from the
//! sync it queues); bad audiences are refused with nothing stored.

use engine::appdb::Principal;
use engine::asker::{self, Asker};
use engine::audit::Actor;
use engine::ingest::upload::{self, Upload};
use engine::keys::{self, NewKey, Scope};
use engine::search::Traced;
use engine::sources::{self, NewSource};
use engine::{Error, Lore};
use serde_json::{json, Value};

use crate::support;

pub(crate) fn admin() -> Principal {
    Principal::Admin { account_id: "ada".into() }
}

pub(crate) async fn operation(lore: &Lore, body: Value) -> Result<engine::operations::Outcome, Error> {
    // Boxed: a test that awaits many operations would otherwise hold each
    // one's whole state machine in its own, beyond a test thread's stack.
    Box::pin(engine::operations::dispatch(lore, &admin(), body)).await
}

pub(crate) async fn ok(lore: &Lore, body: Value) {
    operation(lore, body.clone()).await.unwrap_or_else(|err| panic!("{body}: {err}"));
}

/// A planted fact: the question that finds it, and a word only it holds.
struct Fact {
    name: &'static str,
    question: &'static str,
    marker: &'static str,
}

const PUBLIC: Fact =
    Fact { name: "public upload", question: "When does the cafeteria open?", marker: "zucchini" };
const HANDBOOK: Fact = Fact {
    name: "internal upload (support)",
    question: "What is the on-call escalation code word?",
    marker: "heliotrope",
};
const HR: Fact = Fact { name: "hr table", question: "What is Ravi's salary band?", marker: "quokka" };
const KB: Fact = Fact { name: "kb table", question: "How do I clear a printer jam?", marker: "lever" };
const KB_HIDDEN: Fact = Fact {
    name: "kb table, attribute hidden from support",
    question: "What is the printer vendor contract number?",
    marker: "NX-4471",
};

/// An upload source with one Markdown file, indexed.
pub(crate) async fn upload_source(
    lore: &Lore,
    name: &str,
    audience: Option<&str>,
    file: &str,
    text: &str,
) -> String {
    let new = NewSource {
        name: name.into(),
        kind: "upload".into(),
        audience: audience.map(str::to_owned),
        ..NewSource::default()
    };
    let id = sources::create(lore, &Actor::System, new).await.unwrap().id;
    let upload = Upload { file_name: file.into(), content_type: None, bytes: text.as_bytes().to_vec() };
    let (_, queued) = upload::receive(lore, &id, upload).await.unwrap();
    let job = support::run_queued(lore, &queued.id).await;
    assert_eq!(job.status, "succeeded", "{:?}", job.message);
    id
}

/// A table source added through the operations API, synced.
async fn table_source(lore: &Lore, name: &str, config: Value) -> String {
    let added =
        operation(lore, json!({"operation": "add_source", "name": name, "kind": "table", "config": config}))
            .await
            .unwrap();
    let engine::operations::Outcome::Source(overview) = added else { panic!("add_source: {added:?}") };
    let id = overview.source.id.clone();
    let first = overview.latest_job.as_ref().expect("a table source's first sync is queued at once");
    let job = support::run_queued(lore, &first.id).await;
    assert_eq!(job.status, "succeeded", "{:?}", job.message);
    id
}

/// The whole knowledge base of the matrix, with the roles and users.
async fn knowledge_base(lore: &Lore) -> Sources {
    let permission = |tables: Value| json!({"super_user": false, "data": {"tables": tables}});
    let flags = |read: bool| json!({"read": read, "insert": false, "update": false, "delete": false});
    let mut kb = flags(true);
    kb["attribute_permissions"] =
        json!([{"attribute_name": "internal", "read": false, "insert": false, "update": false}]);
    ok(
        lore,
        json!({"operation": "add_role", "role": "support", "permission": permission(json!({"kb": kb}))}),
    )
    .await;
    ok(lore, json!({"operation": "add_role", "role": "guest", "permission": permission(json!({}))})).await;
    for (user, role) in [("sam", "support"), ("gus", "guest")] {
        ok(lore, json!({"operation": "add_user", "username": user, "password": "correct horse", "role": role, "active": true}))
            .await;
    }

    for table in ["hr", "kb"] {
        ok(lore, json!({"operation": "create_table", "table": table, "primary_key": "id"})).await;
    }
    ok(
        lore,
        json!({"operation": "insert", "table": "hr", "records": [
            {"id": "1", "name": "Ravi", "note": "Ravi's salary band is G7, with the quokka retention bonus."}
        ]}),
    )
    .await;
    ok(
        lore,
        json!({"operation": "insert", "table": "kb", "records": [
            {"id": "1", "title": "Printer jams",
             "body": "Clear a printer jam by opening tray four and lifting the green lever.",
             "internal": "The printer vendor contract number is NX-4471."}
        ]}),
    )
    .await;

    let public = upload_source(
        lore,
        "Welcome",
        None,
        "welcome.md",
        "# Cafeteria\n\nThe cafeteria opens at 7:15 and serves zucchini bread on Fridays.\n",
    )
    .await;
    let handbook = upload_source(
        lore,
        "Staff handbook",
        Some("support"),
        "handbook.md",
        "# On call\n\nThe on-call escalation code word is heliotrope; say it to the duty manager.\n",
    )
    .await;
    let hr = table_source(lore, "People", json!({"table": "hr", "title": "name", "text": ["note"]})).await;
    let kb = table_source(lore, "KB", json!({"table": "kb", "title": "title", "text": ["body", "internal"]}))
        .await;
    Sources { public, restricted: vec![handbook, hr, kb] }
}

struct Sources {
    public: String,
    restricted: Vec<String>,
}

/// A key of `user` (or of no user), as `POST /retrieve` authenticates it.
pub(crate) async fn key_caller(lore: &Lore, user: Option<&str>) -> keys::Caller {
    let new = NewKey {
        name: format!("key of {user:?}"),
        kind: "secret".into(),
        scopes: vec!["retrieve".into()],
        user: user.map(str::to_owned),
        ..NewKey::default()
    };
    let (_, raw) = keys::create(lore, &Actor::System, new).await.unwrap();
    keys::authenticate(lore, Some(&raw), Scope::Retrieve, None).await.unwrap()
}

async fn widget_caller(lore: &Lore) -> keys::Caller {
    let new = NewKey {
        name: "widget".into(),
        kind: "widget".into(),
        origins: vec!["https://docs.example.com".into()],
        ..NewKey::default()
    };
    let (_, raw) = keys::create(lore, &Actor::System, new).await.unwrap();
    keys::authenticate(lore, Some(&raw), Scope::Answer, Some("https://docs.example.com")).await.unwrap()
}

pub(crate) async fn retrieve(lore: &Lore, asker: &Asker, question: &str) -> Traced {
    Box::pin(asker::retrieve(lore, asker, question, Some(5))).await.unwrap()
}

/// Whether anything `traced` returns holds `marker`: passage text, title,
/// heading or URL.
pub(crate) fn holds(traced: &Traced, marker: &str) -> bool {
    traced.found.results.iter().any(|r| {
        let chunk = &r.chunk;
        [chunk.text.as_str(), chunk.title.as_str(), chunk.heading.as_deref().unwrap_or_default()]
            .iter()
            .chain(chunk.url.as_deref().iter())
            .any(|field| field.contains(marker))
    })
}

/// What must be equal between two retrievals for one to reveal nothing the
/// other could not: the passages, in order, with every score, and the
/// counts and reasons the trace reports.
fn shape(traced: &Traced) -> String {
    let passages: Vec<String> = traced
        .found
        .results
        .iter()
        .map(|r| format!("{} {:.6} {:?}", r.chunk.id, r.score, r.text_score))
        .collect();
    let reasons: Vec<String> =
        traced.trace.stages.iter().map(|s| format!("{} {}", s.decision, s.reason)).collect();
    format!(
        "{passages:?}; {} candidates, {} below the cutoff; {reasons:?}",
        traced.found.candidates, traced.found.below_cutoff
    )
}

#[tokio::test]
async fn each_caller_retrieves_exactly_what_it_may_read() {
    let (lore, _dir) = support::open().await;
    let sources = Box::pin(knowledge_base(&lore)).await;
    let sam = engine::appdb::users::principal(&lore, "sam").await.unwrap();
    let gus = engine::appdb::users::principal(&lore, "gus").await.unwrap();
    let callers: Vec<(&str, Asker)> = vec![
        ("admin", Asker::Admin),
        ("support (a key of sam)", Asker::Key(key_caller(&lore, Some("sam")).await)),
        ("support (sam's session)", Asker::Principal(sam)),
        ("guest (gus's session)", Asker::Principal(gus)),
        ("a key without a user", Asker::Key(key_caller(&lore, None).await)),
        ("a widget key", Asker::Key(widget_caller(&lore).await)),
    ];
    // Who may read each fact, by caller label prefix.
    let readers: [(&Fact, &[&str]); 5] = [
        (&PUBLIC, &["admin", "support", "guest", "a key", "a widget"]),
        (&HANDBOOK, &["admin", "support"]),
        (&HR, &["admin"]),
        (&KB, &["admin", "support"]),
        // The same source and row as the kb fact: support reads its
        // view without the attribute it may not read.
        (&KB_HIDDEN, &["admin"]),
    ];
    let mut checks = 0;
    for (label, asker) in &callers {
        for (fact, allowed) in &readers {
            let traced = retrieve(&lore, asker, fact.question).await;
            let may = allowed.iter().any(|prefix| label.starts_with(prefix));
            assert_eq!(
                holds(&traced, fact.marker),
                may,
                "{label} asking for the {} fact ({}): {:?}",
                fact.name,
                fact.question,
                traced.found.results.iter().map(|r| &r.chunk.text).collect::<Vec<_>>()
            );
            checks += 1;
        }
    }
    println!("permission matrix: {} callers x {} facts = {checks} checks", callers.len(), readers.len());

    // What a guest gets is exactly what it would get if the restricted
    // sources did not exist: the same passages, scores and counts.
    let guest = &callers[3].1;
    let as_guest: Vec<Traced> = {
        let mut all = Vec::new();
        for (fact, _) in &readers {
            all.push(retrieve(&lore, guest, fact.question).await);
        }
        all
    };
    for id in &sources.restricted {
        sources::set_enabled(&lore, &Actor::System, id, false).await.unwrap();
    }
    for ((fact, _), seen) in readers.iter().zip(&as_guest) {
        let without = retrieve(&lore, &Asker::Admin, fact.question).await;
        assert_eq!(
            shape(seen),
            shape(&without),
            "the guest's {} retrieval reveals the restricted sources",
            fact.name
        );
    }
    for id in &sources.restricted {
        sources::set_enabled(&lore, &Actor::System, id, true).await.unwrap();
    }
    assert!(!sources.public.is_empty());
}

#[tokio::test]
async fn a_thousand_closer_restricted_passages_leave_a_guest_its_own_top_k() {
    let (lore, _dir) = support::open().await;
    ok(&lore, json!({"operation": "add_role", "role": "support", "permission": {"super_user": false}})).await;
    ok(&lore, json!({"operation": "add_role", "role": "guest", "permission": {"super_user": false}})).await;
    ok(&lore, json!({"operation": "add_user", "username": "gus", "password": "correct horse", "role": "guest", "active": true}))
        .await;
    upload_source(
        &lore,
        "Welcome",
        None,
        "welcome.md",
        "# Cafeteria\n\nThe cafeteria opens at 7:15 and serves zucchini bread on Fridays.\n",
    )
    .await;
    // Each restricted passage asks the very question, so each is closer to
    // it than the public one.
    let decoys: String = (1..=1000)
        .map(|n| {
            format!(
                "## When does the cafeteria open\n\nThe cafeteria on floor {n} opens at 7:{:02}.\n\n",
                n % 60
            )
        })
        .collect();
    let restricted = upload_source(&lore, "Floors", Some("support"), "floors.md", &decoys).await;
    let stored = sources::get(&lore, &restricted).await.unwrap();
    assert!(stored.chunk_count >= 1000, "{} restricted chunks", stored.chunk_count);

    let question = "When does the cafeteria open?";
    let everything = retrieve(&lore, &Asker::Admin, question).await;
    assert!(
        everything.found.results.iter().all(|r| r.chunk.source_id == restricted),
        "the restricted passages are the closer ones: {:?}",
        everything.found.results.iter().map(|r| &r.chunk.text).collect::<Vec<_>>()
    );
    let gus = Asker::Principal(engine::appdb::users::principal(&lore, "gus").await.unwrap());
    let guest = retrieve(&lore, &gus, question).await;
    assert!(holds(&guest, "zucchini"), "the guest gets the public passage");
    assert!(guest.found.results.iter().all(|r| r.chunk.source_id != restricted));
    assert!(
        guest.found.candidates < 10,
        "{} candidates: the count is of what the guest may read",
        guest.found.candidates
    );
}

#[tokio::test]
async fn audiences_and_roles_count_from_the_next_request_and_bad_ones_are_refused() {
    let (lore, _dir) = support::open().await;
    let sources = Box::pin(knowledge_base(&lore)).await;
    let sam = Asker::Key(key_caller(&lore, Some("sam")).await);
    let public_key = Asker::Key(key_caller(&lore, None).await);
    let handbook = &sources.restricted[0];

    // The handbook opened to everyone, then closed again: no reindex.
    assert!(!holds(&retrieve(&lore, &public_key, HANDBOOK.question).await, HANDBOOK.marker));
    ok(&lore, json!({"operation": "alter_source", "id": handbook, "audience": "everyone"})).await;
    assert!(holds(&retrieve(&lore, &public_key, HANDBOOK.question).await, HANDBOOK.marker));
    ok(&lore, json!({"operation": "alter_source", "id": handbook, "audience": ["support"]})).await;
    assert!(!holds(&retrieve(&lore, &public_key, HANDBOOK.question).await, HANDBOOK.marker));
    assert!(holds(&retrieve(&lore, &sam, HANDBOOK.question).await, HANDBOOK.marker));

    // Revoking `read` on kb from support hides the KB source at sam's next request.
    assert!(holds(&retrieve(&lore, &sam, KB.question).await, KB.marker));
    let revoked = json!({"super_user": false, "data": {"tables": {"kb": {"read": false, "insert": false, "update": false, "delete": false}}}});
    let role = engine::appdb::users::role(&lore.db, "support").await.unwrap();
    ok(&lore, json!({"operation": "alter_role", "id": role.id, "permission": revoked})).await;
    assert!(!holds(&retrieve(&lore, &sam, KB.question).await, KB.marker));
    // A deactivated user reads what everyone may, from its next request.
    ok(&lore, json!({"operation": "alter_user", "username": "sam", "active": false})).await;
    assert!(!holds(&retrieve(&lore, &sam, HANDBOOK.question).await, HANDBOOK.marker));
    assert!(holds(&retrieve(&lore, &sam, PUBLIC.question).await, PUBLIC.marker));

    // An unknown role is refused by name, and nothing is stored.
    let before = sources::list(&lore).await.unwrap();
    let refused = operation(
        &lore,
        json!({"operation": "add_source", "name": "Secret", "kind": "upload", "audience": "support,auditors"}),
    )
    .await
    .unwrap_err();
    assert!(refused.to_string().contains("`auditors`"), "{refused}");
    let refused =
        operation(&lore, json!({"operation": "alter_source", "id": handbook, "audience": "nobody"}))
            .await
            .unwrap_err();
    assert!(refused.to_string().contains("`nobody`"), "{refused}");
    let refused = operation(&lore, json!({"operation": "alter_source", "id": handbook, "audience": "table"}))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("table source"), "{refused}");
    assert_eq!(sources::list(&lore).await.unwrap(), before, "a refused audience changes nothing");

    // A role an audience names is not dropped (a role made later under the
    // same name would read those sources); once no audience names it, it is.
    ok(&lore, json!({"operation": "add_role", "role": "auditors", "permission": {"super_user": false}}))
        .await;
    ok(&lore, json!({"operation": "alter_source", "id": handbook, "audience": "support,auditors"})).await;
    let auditors = engine::appdb::users::role(&lore.db, "auditors").await.unwrap();
    let refused = operation(&lore, json!({"operation": "drop_role", "id": auditors.id})).await.unwrap_err();
    assert!(refused.to_string().contains("Staff handbook"), "{refused}");
    ok(&lore, json!({"operation": "alter_source", "id": handbook, "audience": "support"})).await;
    ok(&lore, json!({"operation": "drop_role", "id": auditors.id})).await;
    // A golden question can be asked as a role, which must exist.
    let golden = |asked_as: &str| engine::evals::NewGolden {
        question: HANDBOOK.question.into(),
        expected_facts: vec!["heliotrope".into()],
        should_refuse: false,
        expected_source: None,
        origin: engine::evals::Origin::Prompt,
        asked_as: Some(asked_as.into()),
    };
    let refused =
        Box::pin(engine::evals::add(&lore, &Actor::System, golden("role:nobody"))).await.unwrap_err();
    assert!(refused.to_string().contains("nobody"), "{refused}");
    let added = Box::pin(engine::evals::add(&lore, &Actor::System, golden("role:support"))).await.unwrap();
    assert_eq!(added.asked_as.as_deref(), Some("role:support"));

    // A renamed role keeps its place in the audiences that named it, and
    // its golden questions are asked as it under the new name.
    ok(&lore, json!({"operation": "alter_role", "id": role.id, "role": "helpdesk"})).await;
    let renamed = sources::get(&lore, handbook).await.unwrap();
    assert_eq!(renamed.audience, sources::Audience::Roles(vec!["helpdesk".into()]));
    let golden = engine::evals::list(&lore).await.unwrap();
    assert_eq!(golden.iter().map(|g| g.asked_as.as_deref()).collect::<Vec<_>>(), [Some("role:helpdesk")]);

    // A role or a user that golden questions are asked as is not dropped:
    // their evals could not run.
    ok(&lore, json!({"operation": "alter_source", "id": handbook, "audience": "everyone"})).await;
    let refused = operation(&lore, json!({"operation": "drop_role", "id": role.id})).await.unwrap_err();
    assert!(refused.to_string().contains("golden question"), "{refused}");
    let (hal, asked_as_hal) = golden_for_user(&lore).await;
    let refused = operation(&lore, json!({"operation": "drop_user", "username": hal})).await.unwrap_err();
    assert!(refused.to_string().contains("golden question"), "{refused}");
    assert!(engine::appdb::users::user(&lore, &hal).await.unwrap().is_some(), "nothing dropped");
    for id in [&golden[0].id, &asked_as_hal] {
        engine::evals::remove(&lore, &Actor::System, id).await.unwrap();
    }
    ok(&lore, json!({"operation": "drop_user", "username": hal})).await;
}

#[tokio::test]
async fn a_role_reads_the_attributes_it_may_and_an_attribute_change_rebuilds_its_view() {
    let (lore, _dir) = support::open().await;
    let sources = Box::pin(knowledge_base(&lore)).await;
    let kb = &sources.restricted[2];
    let sam = Asker::Key(key_caller(&lore, Some("sam")).await);
    let reads = |asker: &Asker, fact: &'static Fact| {
        let lore = &lore;
        let asker = asker.clone();
        async move { holds(&retrieve(lore, &asker, fact.question).await, fact.marker) }
    };
    let documents = || async { sources::get(&lore, kb).await.unwrap().document_count };
    let support_may = |hidden: &[&str]| {
        let hidden: Vec<Value> = hidden
            .iter()
            .map(|name| json!({"attribute_name": name, "read": false, "insert": false, "update": false}))
            .collect();
        json!({"super_user": false, "data": {"tables": {"kb": {
            "read": true, "insert": false, "update": false, "delete": false,
            "attribute_permissions": hidden}}}})
    };
    let role = engine::appdb::users::role(&lore.db, "support").await.unwrap();
    let alter = |hidden: &'static [&'static str]| {
        let (lore, id, permission) = (&lore, role.id.clone(), support_may(hidden));
        async move { ok(lore, json!({"operation": "alter_role", "id": id, "permission": permission})).await }
    };
    let sync = || async {
        let queued = engine::ingest::jobs::recent(&lore, Some(kb), 1).await.unwrap();
        let job = queued.first().expect("the change queued a sync of the source");
        assert_eq!((job.status.as_str(), job.trigger.as_str()), ("queued", "permissions"));
        let ran = support::run_queued(&lore, &job.id).await;
        assert_eq!(ran.status, "succeeded", "{:?}", ran.message);
    };

    // One row, two documents: the whole row, and support's view of it
    // without `internal`.
    assert_eq!(documents().await, 2);
    assert!(reads(&sam, &KB).await && !reads(&sam, &KB_HIDDEN).await);
    assert!(reads(&Asker::Admin, &KB_HIDDEN).await);

    // Granted `internal`, support reads the whole row from its next
    // request; the sync then drops the view nobody reads any more.
    alter(&[]).await;
    assert!(reads(&sam, &KB_HIDDEN).await);
    sync().await;
    assert_eq!(documents().await, 1);
    assert!(reads(&sam, &KB).await && reads(&sam, &KB_HIDDEN).await);

    // Hidden again: support reads nothing of the source at once, and its
    // view once the sync has built it.
    alter(&["internal"]).await;
    assert!(!reads(&sam, &KB).await && !reads(&sam, &KB_HIDDEN).await);
    sync().await;
    assert_eq!(documents().await, 2);
    assert!(reads(&sam, &KB).await && !reads(&sam, &KB_HIDDEN).await);

    // With every attribute of the text hidden there is nothing to read,
    // and no view to build.
    alter(&["body", "internal"]).await;
    assert!(!reads(&sam, &KB).await);
    sync().await;
    assert_eq!(documents().await, 1);
    assert!(!reads(&sam, &KB).await && reads(&Asker::Admin, &KB).await);
}

/// A user of role `helpdesk` and a golden question asked as that user:
/// the user's name and the question's id.
async fn golden_for_user(lore: &Lore) -> (String, String) {
    ok(lore, json!({"operation": "add_user", "username": "hal", "password": "correct horse", "role": "helpdesk", "active": true}))
        .await;
    let new = engine::evals::NewGolden {
        question: "Who answers the pager?".into(),
        expected_facts: vec![],
        should_refuse: true,
        expected_source: None,
        origin: engine::evals::Origin::Prompt,
        asked_as: Some("user:hal".into()),
    };
    let added = Box::pin(engine::evals::add(lore, &Actor::System, new)).await.unwrap();
    ("hal".to_owned(), added.id)
}
