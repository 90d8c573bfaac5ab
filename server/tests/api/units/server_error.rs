//! `lore_server::http::error`: the shape of the error bodies clients read beyond the code.

use axum::response::IntoResponse;
use engine::profile::ProfileError;
use engine::providers::{ProviderError, TargetState};
use lore_server::http::error::ApiError;

async fn body(err: ApiError) -> (u16, serde_json::Value) {
    let response = err.into_response();
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap())
}

/// The bodies whose shape clients read beyond the code: the details.
#[tokio::test]
async fn error_bodies_keep_their_shape() {
    let not_answerable = engine::Error::NotAnswerable(vec![
        "provider: No generation target is bound.".into(),
        "content: No source has been indexed.".into(),
    ]);
    let (status, public) = body(ApiError::public(not_answerable)).await;
    assert_eq!(status, 503);
    insta::assert_json_snapshot!(public, @r#"
    {
      "error": {
        "code": "not_answerable",
        "message": "Lore cannot answer yet; details.reasons says what is missing.",
        "details": {
          "reasons": [
            "provider",
            "content"
          ]
        }
      }
    }
    "#);

    let conflict = ProfileError::VersionConflict { base: 3, active: 4 };
    let (status, conflict) = body(ApiError::Engine(conflict.into())).await;
    assert_eq!(status, 409);
    insta::assert_json_snapshot!(conflict, @r#"
    {
      "error": {
        "code": "profile_version_conflict",
        "message": "Version 4 was activated since this edit started from version 3; reload and reapply your change.",
        "details": {
          "base_version": 3,
          "active_version": 4
        }
      }
    }
    "#);

    let not_ready = ProviderError::TargetNotReady {
        role: "generation",
        model: "m".into(),
        state: TargetState::Stale,
        reason: "its last probe is 9 days old".into(),
    };
    let (status, not_ready) = body(ApiError::Engine(engine::Error::Provider(not_ready))).await;
    assert_eq!(status, 422);
    insta::assert_json_snapshot!(not_ready, @r#"
    {
      "error": {
        "code": "target_not_ready",
        "message": "The generation role cannot be bound to m: its last probe is 9 days old.",
        "details": {
          "role": "generation",
          "state": "stale",
          "reason": "its last probe is 9 days old"
        }
      }
    }
    "#);

    let (status, preflight) = body(ApiError::PreflightRefused(Some("https://evil.example".into()))).await;
    assert_eq!(status, 403);
    insta::assert_json_snapshot!(preflight, @r#"
    {
      "error": {
        "code": "origin_not_allowed",
        "message": "No widget key allows requests from https://evil.example."
      }
    }
    "#);
}
