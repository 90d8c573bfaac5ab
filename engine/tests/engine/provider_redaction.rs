//! A provider that echoes the API key in its 401 reply: the key reaches no
//! error, probe result, stored `probe_error`, state reason or stored row.
//!
//! The fake provider is a real HTTP server on 127.0.0.1 that answers every
//! request with 401 and an OpenAI-style error whose message repeats the bare
//! key and the whole `Authorization` header, the way some servers do.

use crate::support;

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::{Json, Router};
use engine::audit::Actor;
use engine::profile;
use engine::providers::{self, AccountInput, ProviderError, QuickAdd, TargetInput};
use engine::settings::Secret;
use engine::Error;
use sea_orm::EntityTrait;

/// Shaped like no known credential format (no `sk-` prefix), so only the
/// key the client sent can find it in the reply.
const KEY: &str = "lore-test-9fQ2xR7vT1mB8nW4pL6kZ3";

fn admin() -> Actor {
    Actor::Account("ada".into())
}

/// The `Authorization` headers the fake provider received.
type Seen = Arc<Mutex<Vec<String>>>;

async fn echo_unauthorized(State(seen): State<Seen>, headers: HeaderMap) -> impl IntoResponse {
    let auth = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    seen.lock().unwrap().push(auth.clone());
    let bare = auth.strip_prefix("Bearer ").unwrap_or(&auth);
    let body = serde_json::json!({
        "error": {
            "message": format!(
                "Incorrect API key provided: {bare}. Your request said\r\nAuthorization: {auth}\u{0}"
            ),
            "type": "invalid_request_error",
        },
        "headers": {"Authorization": auth},
    });
    (StatusCode::UNAUTHORIZED, Json(body))
}

/// Starts the fake provider; its API base and what it saw.
async fn echoing_provider() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = Router::new().fallback(echo_unauthorized).with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{addr}/v1"), seen)
}

/// Asserts that `text` does not hold the key, or any long piece of it.
fn assert_keyless(what: &str, text: &str) {
    for piece in KEY.as_bytes().windows(12) {
        let piece = std::str::from_utf8(piece).unwrap();
        assert!(!text.contains(piece), "{what} holds part of the key ({piece}): {text}");
    }
}

#[tokio::test]
async fn a_provider_echoing_the_key_in_a_401_reply_leaks_it_nowhere() {
    let (lore, _dir) = support::open().await;
    let (base, seen) = echoing_provider().await;

    // Quick add probes before storing anything; its refusal is redacted.
    let failed = profile::quick_add(
        &lore,
        &admin(),
        QuickAdd {
            kind: "custom".into(),
            endpoint: Some(base.clone()),
            api_key: Some(Secret::new(format!("  {KEY} "))),
            model: "m".into(),
            name: None,
        },
    )
    .await
    .unwrap_err();
    assert!(matches!(failed, Error::Provider(ProviderError::ProbeFailed { .. })), "{failed:?}");
    let shown = failed.to_string();
    assert!(shown.contains("refused the API key (HTTP 401)"), "{shown}");
    assert!(shown.contains("Incorrect API key provided: [redacted]"), "{shown}");
    assert!(shown.contains("Authorization: Bearer [redacted]"), "{shown}");
    assert!(!shown.contains('\r') && !shown.contains('\u{0}'), "control characters are removed: {shown:?}");
    assert_keyless("quick add's error", &shown);
    assert_keyless("quick add's error (Debug)", &format!("{failed:?}"));

    // Made step by step, so that a failed probe is stored.
    let account = providers::create_account(
        &lore,
        &admin(),
        AccountInput {
            kind: "custom".into(),
            endpoint: Some(base.clone()),
            api_key: Some(Secret::new(KEY)),
            ..AccountInput::default()
        },
    )
    .await
    .unwrap();
    for capability in ["generation", "embedding", "rerank"] {
        let target = providers::register_target(
            &lore,
            &admin(),
            TargetInput {
                account_id: account.id.clone(),
                capability: capability.into(),
                model: "m".into(),
                ..TargetInput::default()
            },
        )
        .await
        .unwrap();
        let (probed, probe) = providers::probe(&lore, &admin(), &target.id).await.unwrap();
        assert!(!probe.ok, "{capability}: {probe:?}");
        let error = probe.error.clone().unwrap();
        assert!(error.contains("[redacted]"), "{capability}: {error}");
        assert_keyless(&format!("the {capability} probe's result"), &format!("{probe:?}"));
        assert_eq!(probed.probe_status, providers::ProbeStatus::Failed);
        assert_keyless(&format!("the {capability} target's probe_error"), &format!("{probed:?}"));

        let stored = providers::target(&lore, &target.id).await.unwrap();
        let stored_error = stored.probe_error.clone().unwrap();
        assert!(stored_error.chars().count() <= base.len() + 600, "bounded: {stored_error}");
        assert_keyless(&format!("the stored {capability} probe_error"), &stored_error);
        let (_, reason) = providers::state(&stored, 30, chrono::Utc::now());
        assert_keyless(&format!("the {capability} target's state reason"), &reason.unwrap());
    }

    // The account's models list.
    let listed = providers::list_models(&lore, &account.id).await.unwrap_err();
    let shown = listed.to_string();
    assert!(shown.contains("[redacted]"), "{shown}");
    assert_keyless("the models list's error", &shown);
    assert_keyless("the models list's error (Debug)", &format!("{listed:?}"));

    // Every row the attempts wrote: targets, audit records and the account
    // (whose key is sealed, so its raw value is not there either).
    let targets = entity::model_target::Entity::find().all(&lore.db).await.unwrap();
    assert_eq!(targets.len(), 3);
    assert_keyless("the model_target rows", &format!("{targets:?}"));
    let audit = entity::audit_log::Entity::find().all(&lore.db).await.unwrap();
    assert_keyless("the audit log", &format!("{audit:?}"));
    let accounts = entity::provider_account::Entity::find().all(&lore.db).await.unwrap();
    assert_eq!(accounts.len(), 1, "quick add left nothing behind");
    assert_keyless("the provider_account rows", &format!("{accounts:?}"));

    // The provider did get the key each time, so the replies really echoed it.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert!(seen.iter().all(|auth| *auth == format!("Bearer {KEY}")), "{seen:?}");
}
