//! Profile versions on both databases: created at the first index from the
//! chosen persona; two saves from the same base cannot both win; a restore
//! serves a prior version's whole snapshot at once.

// A test crate: a failed precondition should fail the test, loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use engine::audit::Actor;
use engine::profile::{self, Details, PersonaChoice, ProfileError};
use engine::{Error, Lore};
use sea_orm::{ConnectionTrait, Database};

fn admin() -> Actor {
    Actor::Account("ada".into())
}

async fn postgres() -> (String, String) {
    let admin_url = std::env::var("LORE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let name = format!("lore_profile_{}", uuid::Uuid::new_v4().simple());
    let db = Database::connect(&admin_url).await.expect("the local PostgreSQL server is up");
    db.execute_unprepared(&format!("CREATE DATABASE {name}")).await.unwrap();
    let mut url = url::Url::parse(&admin_url).unwrap();
    url.set_path(&name);
    (url.to_string(), name)
}

async fn drop_postgres(name: &str) {
    let admin_url = std::env::var("LORE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    if let Ok(db) = Database::connect(&admin_url).await {
        let _ = db.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
    }
}

#[tokio::test]
async fn no_profile_exists_until_the_first_index_starts_then_it_follows_the_chosen_persona() {
    let (lore, _dir) = support::open().await;
    assert!(profile::active(&lore).await.unwrap().is_none());
    let choice = PersonaChoice {
        persona: "customer_support".into(),
        details: Details { organisation: Some("Acme".into()), ..Details::default() },
    };
    profile::choose_persona(&lore, &admin(), choice).await.unwrap();
    assert!(profile::active(&lore).await.unwrap().is_none(), "choosing a persona creates no profile");

    let source = engine::sources::create(
        &lore,
        &admin(),
        engine::sources::NewSource {
            name: "Files".into(),
            kind: "upload".into(),
            config: None,
            volatility: None,
        },
    )
    .await
    .unwrap();
    engine::ingest::jobs::enqueue(&lore, Some(&source.id), false, "test").await.unwrap();

    let active = profile::active(&lore).await.unwrap().expect("the first index created the profile");
    assert_eq!(active.version, 1);
    assert_eq!(active.snapshot.persona, "customer_support");
    assert!(active.snapshot.prompt.starts_with("You are a customer-support agent for Acme."));
    // A second index leaves it alone.
    engine::ingest::jobs::enqueue(&lore, None, true, "test").await.unwrap();
    assert_eq!(profile::versions(&lore).await.unwrap().len(), 1);
}

async fn concurrent_saves_from_one_base(lore: &Lore) {
    let v1 = profile::ensure(lore, &admin(), "it_helpdesk", Details::default()).await.unwrap();
    let mut a = v1.snapshot.clone();
    a.prompt = "Prompt A".into();
    let mut b = v1.snapshot.clone();
    b.prompt = "Prompt B".into();
    let actor = admin();
    let (first, second) = tokio::join!(
        profile::save(lore, &actor, v1.version, a, Some("a".into())),
        profile::save(lore, &actor, v1.version, b, Some("b".into())),
    );
    let (won, lost) = match (first, second) {
        (Ok(won), Err(lost)) | (Err(lost), Ok(won)) => (won, lost),
        (Ok(_), Ok(_)) => panic!("both saves from version 1 won"),
        (Err(a), Err(b)) => panic!("both saves failed: {a} / {b}"),
    };
    assert!(
        matches!(lost, Error::Profile(ProfileError::VersionConflict { base: 1, active: 2 })),
        "the loser is told which version is active: {lost:?}"
    );
    let active = profile::active(lore).await.unwrap().unwrap();
    assert_eq!(active.version, 2);
    assert_eq!(active.snapshot.prompt, won.snapshot.prompt, "the winner serves, untouched");
    assert_eq!(profile::versions(lore).await.unwrap().len(), 2, "the loser left no version behind");

    // A save from the stale base is refused even when nothing races it.
    let stale = profile::save(lore, &admin(), 1, v1.snapshot.clone(), None).await;
    assert!(matches!(stale, Err(Error::Profile(ProfileError::VersionConflict { .. }))));

    // Restoring version 1 serves its whole snapshot at once; version 2 stays listed.
    let restored = profile::restore(lore, &admin(), 1, Some(2)).await.unwrap();
    assert!(restored.active);
    let active = profile::active(lore).await.unwrap().unwrap();
    assert_eq!(active.version, 1);
    assert_eq!(active.snapshot, v1.snapshot);
    let versions = profile::versions(lore).await.unwrap();
    assert_eq!(
        versions.iter().map(|v| (v.version, v.active)).collect::<Vec<_>>(),
        vec![(2, false), (1, true)]
    );
    // A restore guarded by a version that is no longer active is refused.
    let guarded = profile::restore(lore, &admin(), 2, Some(2)).await;
    assert!(matches!(guarded, Err(Error::Profile(ProfileError::VersionConflict { .. }))));
    // The next save from version 1 becomes version 3, based on 1.
    let mut c = v1.snapshot.clone();
    c.behavior.refusal = "Not in the knowledge base.".into();
    let v3 = profile::save(lore, &admin(), 1, c, None).await.unwrap();
    assert_eq!((v3.version, v3.based_on), (3, Some(1)));
}

#[tokio::test]
async fn two_saves_from_the_same_base_on_sqlite_exactly_one_wins() {
    let (lore, _dir) = support::open().await;
    concurrent_saves_from_one_base(&lore).await;
}

#[tokio::test]
async fn two_saves_from_the_same_base_on_postgres_exactly_one_wins() {
    let (url, name) = postgres().await;
    let (lore, _dir) = support::open_with(|settings| {
        settings.database.url = Some(engine::settings::Secret::new(url.clone()));
    })
    .await;
    concurrent_saves_from_one_base(&lore).await;
    drop(lore);
    drop_postgres(&name).await;
}

#[tokio::test]
async fn invalid_snapshots_are_refused_and_nothing_is_stored() {
    let (lore, _dir) = support::open().await;
    let v1 = profile::ensure(&lore, &admin(), "sales_engineer", Details::default()).await.unwrap();
    let mut bad = v1.snapshot.clone();
    bad.retrieval.top_k = 0;
    let refused = profile::save(&lore, &admin(), 1, bad, None).await;
    assert!(matches!(refused, Err(Error::Profile(ProfileError::Invalid(_)))));
    let mut unknown = v1.snapshot.clone();
    unknown.persona = "pirate".into();
    assert!(matches!(
        profile::save(&lore, &admin(), 1, unknown, None).await,
        Err(Error::Profile(ProfileError::UnknownPersona(_)))
    ));
    assert_eq!(profile::versions(&lore).await.unwrap().len(), 1);
    assert_eq!(profile::active(&lore).await.unwrap().unwrap().version, 1);
}
