//! Access keys: the raw value once, only a hash stored, and the one check
//! every keyed request passes (status, scope, widget origin and rate).

use crate::support;

use engine::audit::Actor;
use engine::keys::{self, KeyError, NewKey, Scope};
use engine::Error;
use sea_orm::EntityTrait;

fn admin() -> Actor {
    Actor::Account("ada".into())
}

fn secret(scopes: &[&str]) -> NewKey {
    NewKey {
        name: "backend".into(),
        kind: "secret".into(),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        ..NewKey::default()
    }
}

#[tokio::test]
async fn only_a_hash_and_a_prefix_of_the_raw_key_are_stored() {
    let (lore, _dir) = support::open().await;
    let (row, raw) = keys::create(&lore, &admin(), secret(&["retrieve"])).await.unwrap();
    assert!(raw.starts_with("lore_sk_") && raw.len() == 40, "{raw}");
    let stored = entity::access_key::Entity::find_by_id(row.id.clone()).one(&lore.db).await.unwrap().unwrap();
    assert_eq!(stored.hash, keys::hash(&raw));
    assert!(raw.starts_with(&stored.prefix) && stored.prefix.len() < raw.len());
    let everything = format!("{stored:?}{:?}", keys::list(&lore).await.unwrap());
    assert!(!everything.contains(&raw), "the raw key is not kept anywhere");
}

#[tokio::test]
async fn the_check_refuses_unknown_revoked_and_out_of_scope_keys() {
    let (lore, _dir) = support::open().await;
    let (row, raw) = keys::create(&lore, &admin(), secret(&["answer"])).await.unwrap();

    let caller = keys::authenticate(&lore, Some(&raw), Scope::Answer, None).await.unwrap();
    assert_eq!(caller.key_id, row.id);
    assert!(matches!(
        keys::authenticate(&lore, Some(&raw), Scope::Retrieve, None).await,
        Err(Error::Key(KeyError::Scope("retrieve")))
    ));
    assert!(matches!(
        keys::authenticate(&lore, None, Scope::Answer, None).await,
        Err(Error::Key(KeyError::Missing))
    ));
    let forged = format!("lore_sk_{}", "x".repeat(32));
    assert!(matches!(
        keys::authenticate(&lore, Some(&forged), Scope::Answer, None).await,
        Err(Error::Key(KeyError::Unknown))
    ));

    keys::revoke(&lore, &admin(), &row.id).await.unwrap();
    assert!(matches!(
        keys::authenticate(&lore, Some(&raw), Scope::Answer, None).await,
        Err(Error::Key(KeyError::Revoked))
    ));
}

#[tokio::test]
async fn a_widget_key_answers_only_from_its_origins_and_within_its_rate() {
    let (lore, _dir) = support::open().await;
    let new = NewKey {
        name: "docs widget".into(),
        kind: "widget".into(),
        origins: vec!["https://Docs.Example.com/".into()],
        rate_limit_per_minute: Some(3),
        ..NewKey::default()
    };
    let (row, raw) = keys::create(&lore, &admin(), new).await.unwrap();
    assert!(raw.starts_with("lore_wk_"));
    assert_eq!(row.scopes, vec![Scope::Answer]);

    let allowed =
        keys::authenticate(&lore, Some(&raw), Scope::Answer, Some("https://docs.example.com")).await;
    assert_eq!(allowed.unwrap().key_id, row.id, "accepted from an allowed origin");
    assert!(matches!(
        keys::authenticate(&lore, Some(&raw), Scope::Answer, Some("https://evil.example")).await,
        Err(Error::Key(KeyError::Origin(_)))
    ));
    assert!(matches!(
        keys::authenticate(&lore, Some(&raw), Scope::Answer, None).await,
        Err(Error::Key(KeyError::Origin(_)))
    ));
    assert!(matches!(
        keys::authenticate(&lore, Some(&raw), Scope::Retrieve, Some("https://docs.example.com")).await,
        Err(Error::Key(KeyError::Scope("retrieve")))
    ));
    // Three allowed a minute: one was used above, two more pass, the fourth is limited.
    for _ in 0..2 {
        keys::authenticate(&lore, Some(&raw), Scope::Answer, Some("https://docs.example.com")).await.unwrap();
    }
    assert!(matches!(
        keys::authenticate(&lore, Some(&raw), Scope::Answer, Some("https://docs.example.com")).await,
        Err(Error::Key(KeyError::RateLimited(3)))
    ));
    assert!(keys::origin_allowed(&lore, "https://docs.example.com").await.unwrap());
    assert!(!keys::origin_allowed(&lore, "https://evil.example").await.unwrap());
}

#[tokio::test]
async fn bad_key_requests_are_refused_with_reasons() {
    let (lore, _dir) = support::open().await;
    for bad in [
        secret(&[]),
        secret(&["everything"]),
        NewKey { kind: "widget".into(), name: "w".into(), ..NewKey::default() },
        NewKey {
            kind: "widget".into(),
            name: "w".into(),
            origins: vec!["https://a.example/path".into()],
            ..NewKey::default()
        },
        NewKey {
            kind: "secret".into(),
            name: "s".into(),
            scopes: vec!["answer".into()],
            origins: vec!["https://a.example".into()],
            ..NewKey::default()
        },
        NewKey { kind: "robot".into(), name: "r".into(), ..NewKey::default() },
    ] {
        assert!(
            matches!(keys::create(&lore, &admin(), bad.clone()).await, Err(Error::Key(KeyError::Invalid(_)))),
            "{bad:?}"
        );
    }
    assert!(keys::list(&lore).await.unwrap().is_empty());
}

#[tokio::test]
async fn usage_is_counted_per_key_over_seven_days() {
    let (lore, _dir) = support::open().await;
    let (a, _) = keys::create(&lore, &admin(), secret(&["answer"])).await.unwrap();
    let (b, _) = keys::create(&lore, &admin(), secret(&["retrieve"])).await.unwrap();
    lore.recorder().key_usage(&a.id, 0.002).await.unwrap();
    lore.recorder().key_usage(&a.id, 0.003).await.unwrap();
    lore.recorder().key_usage(&b.id, 0.0).await.unwrap();
    let listed = keys::list(&lore).await.unwrap();
    let usage = |id: &str| {
        listed.iter().find(|k| k.key.id == id).map(|k| (k.queries_7d, k.estimated_cost_7d)).unwrap()
    };
    let (queries, cost) = usage(&a.id);
    assert_eq!(queries, 2);
    assert!((cost - 0.005).abs() < 1e-9);
    assert_eq!(usage(&b.id).0, 1);
    assert!(listed.iter().find(|k| k.key.id == a.id).unwrap().key.last_used_at.is_some());

    // The window is the last 7 UTC days, today included: 6 days ago counts,
    // 7 days ago does not.
    let day = |ago: u64| {
        let today = chrono::Utc::now().date_naive();
        today.checked_sub_days(chrono::Days::new(ago)).unwrap().format("%Y-%m-%d").to_string()
    };
    for (ago, queries) in [(6, 10), (7, 100)] {
        let row = entity::key_usage::ActiveModel {
            key_id: sea_orm::Set(b.id.clone()),
            day: sea_orm::Set(day(ago)),
            queries: sea_orm::Set(queries),
            estimated_cost_usd: sea_orm::Set(0.0),
        };
        entity::key_usage::Entity::insert(row).exec(&lore.db).await.unwrap();
    }
    let listed = keys::list(&lore).await.unwrap();
    let b_queries = listed.iter().find(|k| k.key.id == b.id).unwrap().queries_7d;
    assert_eq!(b_queries, 1 + 10, "the day 7 days ago is outside the window");

    // Revoking answers with the key as the list shows it, its usage kept.
    let revoked = keys::revoke(&lore, &admin(), &a.id).await.unwrap();
    assert_eq!((revoked.key.id.as_str(), revoked.key.status), (a.id.as_str(), keys::KeyStatus::Revoked));
    assert_eq!(revoked.queries_7d, 2);
    assert!((revoked.estimated_cost_7d - 0.005).abs() < 1e-9);
    assert_eq!(revoked.key.scopes, vec![keys::Scope::Answer]);
    let again = keys::revoke(&lore, &admin(), &a.id).await.unwrap();
    assert_eq!(again.key.revoked_at, revoked.key.revoked_at, "revoking twice changes nothing");
}

#[tokio::test]
async fn a_key_whose_stored_scopes_cannot_be_read_is_an_error_never_an_empty_list() {
    let (lore, _dir) = support::open().await;
    let (key, raw) = keys::create(&lore, &admin(), secret(&["answer"])).await.unwrap();
    let stored = entity::access_key::Entity::find_by_id(key.id.clone()).one(&lore.db).await.unwrap().unwrap();
    let mut row: entity::access_key::ActiveModel = stored.into();
    row.scopes = sea_orm::Set(serde_json::json!(["answer", "everything"]));
    sea_orm::ActiveModelTrait::update(row, &lore.db).await.unwrap();

    let err = keys::list(&lore).await.unwrap_err().to_string();
    assert!(err.contains(&key.id) && err.contains("scopes"), "{err}");
    // The keyed check does not guess either: the request fails, it is not
    // served with whatever scopes could be read.
    let refused = keys::authenticate(&lore, Some(&raw), Scope::Answer, None).await.unwrap_err();
    assert!(matches!(refused, Error::Internal(ref why) if why.contains("scopes")), "{refused:?}");
}
