//! Admin endpoints: cookie-authenticated, authorized admins only.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::Json;
use engine::auth::{AuthError, Viewer};

use super::error::ApiError;
use crate::AppState;

/// An authorized admin, or the request is refused: 401 without a session,
/// 403 `admin_unavailable` for a signed-in account that is not an admin.
pub struct Admin(pub Viewer);

impl<S: Send + Sync> FromRequestParts<S> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let viewer = parts.extensions.get::<Viewer>().ok_or(AuthError::Unauthenticated)?;
        viewer.require_admin()?;
        Ok(Admin(viewer.clone()))
    }
}

/// `GET /admin/setup-state/`: Readiness and the canAnswer verdict.
pub async fn setup_state(
    State(state): State<AppState>,
    _admin: Admin,
) -> Result<Json<app::wire::SetupState>, ApiError> {
    Ok(Json(engine::readiness::assess(&state.lore).await?.into()))
}
