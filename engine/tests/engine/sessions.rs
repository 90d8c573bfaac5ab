//! Console sessions against a real SQLite database: short-lived tokens that are
//! re-issued while the session lives, and nothing that outlives the row.

use chrono::{Duration, Utc};
use engine::auth::{sessions, AuthError};
use engine::{Error, Lore, Settings};

async fn open() -> (Lore, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings { data_dir: dir.path().to_owned(), ..Settings::default() };
    (Lore::open(settings).await.unwrap(), dir)
}

async fn bootstrap_session(lore: &Lore, now: chrono::DateTime<Utc>) -> sessions::SessionToken {
    use engine::auth::bootstrap::{issue, redeem, RequestOrigin};
    let token = issue(lore, now).await.unwrap();
    let origin = RequestOrigin { peer: std::net::Ipv4Addr::LOCALHOST.into(), forwarded: false };
    redeem(lore, &token, origin, now).await.unwrap()
}

fn is_unauthenticated(result: Result<sessions::Viewer, Error>) -> bool {
    matches!(result, Err(Error::Auth(AuthError::Unauthenticated)))
}

#[tokio::test]
async fn a_token_past_half_life_is_reissued_and_an_expired_one_is_refused() {
    let (lore, _dir) = open().await;
    let t0 = Utc::now();
    let first = bootstrap_session(&lore, t0).await;

    let fresh = sessions::authenticate(&lore, &first.value, t0 + Duration::minutes(5)).await.unwrap();
    assert!(fresh.is_admin);
    assert!(fresh.refreshed.is_none(), "a young token is not re-issued");

    let aging = sessions::authenticate(&lore, &first.value, t0 + Duration::minutes(20)).await.unwrap();
    let second = aging.refreshed.expect("a token past half its life is re-issued");

    // The first token dies at its own expiry; the re-issued one carries on.
    assert!(is_unauthenticated(
        sessions::authenticate(&lore, &first.value, t0 + Duration::minutes(31)).await
    ));
    sessions::authenticate(&lore, &second.value, t0 + Duration::minutes(31)).await.unwrap();
}

#[tokio::test]
async fn nothing_outlives_the_session_row() {
    let (lore, _dir) = open().await;
    let t0 = Utc::now();
    let token = bootstrap_session(&lore, t0).await;
    assert_eq!(token.session_expires_at, t0 + Duration::hours(12));

    // Near the absolute end, a re-issued token expires with the session.
    let late = t0 + Duration::hours(12) - Duration::minutes(1);
    let mut current = token.value.clone();
    let mut at = t0;
    while at < late {
        at = (at + Duration::minutes(20)).min(late);
        if let Some(next) = sessions::authenticate(&lore, &current, at).await.unwrap().refreshed {
            current = next.value;
        }
    }
    assert!(is_unauthenticated(sessions::authenticate(&lore, &current, t0 + Duration::hours(12)).await));
}

#[tokio::test]
async fn revoking_a_session_refuses_every_token_of_it() {
    let (lore, _dir) = open().await;
    let t0 = Utc::now();
    let token = bootstrap_session(&lore, t0).await;
    let viewer = sessions::authenticate(&lore, &token.value, t0 + Duration::minutes(20)).await.unwrap();
    let reissued = viewer.refreshed.clone().unwrap();

    sessions::revoke(&lore, &viewer.session_id, t0 + Duration::minutes(21)).await.unwrap();
    for value in [&token.value, &reissued.value] {
        assert!(is_unauthenticated(sessions::authenticate(&lore, value, t0 + Duration::minutes(22)).await));
    }
}

#[tokio::test]
async fn a_token_signed_with_another_key_is_refused() {
    let (lore, _dir) = open().await;
    let (other, _other_dir) = open().await;
    let t0 = Utc::now();
    let foreign = bootstrap_session(&other, t0).await;
    assert!(is_unauthenticated(sessions::authenticate(&lore, &foreign.value, t0).await));
}
