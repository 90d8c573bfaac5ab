//! Shapes that cross the wire, seen by the server (which fills them from engine
//! types) and the browser (which reads them). SeaORM models never appear here.

use serde::{Deserialize, Serialize};

/// `GET /admin/setup-state/`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetupState {
    /// One entry per concern, in display order: configuration, embedding,
    /// provider, indexing, content, profile_version.
    pub checks: Vec<ReadinessCheck>,
    /// The server's verdict; the answer runtime enforces exactly this.
    pub can_answer: bool,
    /// Why not (empty when `can_answer`).
    pub reasons: Vec<String>,
    pub active_profile_version: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadinessCheck {
    pub name: String,
    /// `ok`, `pending`, `missing` or `failing`.
    pub status: String,
    pub detail: String,
}

/// Who is signed in, as the console needs to know it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewerInfo {
    pub display_name: String,
    pub email: Option<String>,
    pub is_admin: bool,
}

/// How an admin can sign in to this install.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignInOptions {
    /// An identity provider is configured (otherwise: the bootstrap link).
    pub oidc: bool,
}

/// The error body of every JSON endpoint:
/// `{"error": {"code": "...", "message": "...", "details": {...}}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

#[cfg(feature = "ssr")]
mod from_engine {
    use super::*;
    use engine::readiness;

    impl From<readiness::SetupState> for SetupState {
        fn from(state: readiness::SetupState) -> Self {
            Self {
                checks: state
                    .checks
                    .into_iter()
                    .map(|check| ReadinessCheck {
                        name: check.concern.key().to_owned(),
                        status: check.status.key().to_owned(),
                        detail: check.detail,
                    })
                    .collect(),
                can_answer: state.can_answer,
                reasons: state.reasons,
                active_profile_version: state.active_profile_version,
            }
        }
    }

    impl From<&engine::auth::Viewer> for ViewerInfo {
        fn from(viewer: &engine::auth::Viewer) -> Self {
            Self {
                display_name: viewer
                    .display_name
                    .clone()
                    .or_else(|| viewer.email.clone())
                    .unwrap_or_else(|| "Admin".to_owned()),
                email: viewer.email.clone(),
                is_admin: viewer.is_admin,
            }
        }
    }
}
