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

impl Admin {
    /// Who the audit log says acted.
    pub fn actor(&self) -> engine::audit::Actor {
        engine::audit::Actor::Account(self.0.account_id.clone())
    }
}

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

/// `POST /admin/observability/`: the Dashboard's aggregates for a range,
/// computed from the rollup tables only (never from runs or traces).
pub async fn observability(
    State(state): State<AppState>,
    _admin: Admin,
    super::json::ApiJson(request): super::json::ApiJson<app::wire::ObservabilityRequest>,
) -> Result<Json<app::wire::ObservabilityResponse>, ApiError> {
    let range = observability_range(&request, chrono::Utc::now())?;
    let everything = engine::sources::Reader::Everything;
    let dashboard =
        engine::metrics::analytics(&state.lore, &everything, range, request.audience.as_deref()).await?;
    Ok(Json(dashboard.into()))
}

/// The range a request names: `from`/`to`, or `hours` back from `now` (24 by default).
fn observability_range(
    request: &app::wire::ObservabilityRequest,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<engine::metrics::Range, engine::Error> {
    let parse = |field: &str, value: &str| {
        chrono::DateTime::parse_from_rfc3339(value)
            .map(|at| at.with_timezone(&chrono::Utc))
            .map_err(|_| engine::Error::InvalidInput(format!("{field} must be an RFC 3339 time")))
    };
    match (&request.from, &request.to, request.hours) {
        (Some(from), to, None) => {
            let to = to.as_deref().map(|to| parse("to", to)).transpose()?.unwrap_or(now);
            Ok(engine::metrics::Range { from: parse("from", from)?, to })
        }
        (None, None, hours) => {
            let hours = hours.unwrap_or(24);
            if hours == 0 || hours > 24 * 400 {
                return Err(engine::Error::InvalidInput("hours must be between 1 and 9600".into()));
            }
            Ok(engine::metrics::Range::last_hours(now, i64::from(hours)))
        }
        _ => Err(engine::Error::InvalidInput("give either hours, or from (and optionally to)".into())),
    }
}
