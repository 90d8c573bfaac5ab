//! Admin endpoints of the Prompt screen and the wizard's persona step:
//! the persona catalogue, the active version, the history, save (with the
//! version-conflict rule) and restore.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use engine::profile::{self, Details, PersonaChoice, Snapshot, Version};
use engine::Lore;
use serde::Deserialize;

use app::wire::{
    PersonaView, ProfileDetails, ProfileOverview, ProfileSnapshot, ProfileVersionView, SaveProfileRequest,
};

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use crate::AppState;
use app::wire::time;

/// Engine and wire snapshots share one JSON shape; the engine's parse is
/// the validation of enum values and unknown fields.
fn to_wire(snapshot: &Snapshot) -> Result<ProfileSnapshot, ApiError> {
    let value = serde_json::to_value(snapshot).map_err(|err| engine::Error::Internal(err.to_string()))?;
    Ok(serde_json::from_value(value).map_err(|err| engine::Error::Internal(err.to_string()))?)
}

fn from_wire(snapshot: &ProfileSnapshot) -> Result<Snapshot, ApiError> {
    let value = serde_json::to_value(snapshot).map_err(|err| engine::Error::Internal(err.to_string()))?;
    Ok(serde_json::from_value(value).map_err(|err| {
        engine::Error::from(profile::ProfileError::Invalid(format!("the snapshot is not valid: {err}")))
    })?)
}

pub(crate) fn details_from_wire(details: ProfileDetails) -> Details {
    Details {
        organisation: details.organisation,
        product: details.product,
        audience: details.audience,
        extra_instructions: details.extra_instructions,
    }
}

pub fn version_view(version: Version) -> Result<ProfileVersionView, ApiError> {
    Ok(ProfileVersionView {
        snapshot: to_wire(&version.snapshot)?,
        version: version.version.into(),
        based_on: version.based_on.map(i64::from),
        active: version.active,
        note: version.note,
        created_by: version.created_by,
        created_at: time(version.created_at),
        evals: version.evals,
    })
}

pub async fn overview(lore: &Lore) -> Result<ProfileOverview, ApiError> {
    let personas = profile::PERSONAS
        .iter()
        .map(|p| PersonaView {
            key: p.key.to_owned(),
            name: p.name.to_owned(),
            summary: p.summary.to_owned(),
        })
        .collect();
    let versions =
        profile::versions(lore).await?.into_iter().map(version_view).collect::<Result<Vec<_>, _>>()?;
    let active = versions.iter().find(|v| v.active).cloned();
    Ok(ProfileOverview { personas, active, versions })
}

pub async fn get_overview(
    State(state): State<AppState>,
    _admin: Admin,
) -> Result<Json<ProfileOverview>, ApiError> {
    Ok(Json(overview(&state.lore).await?))
}

pub async fn get_version(
    State(state): State<AppState>,
    _admin: Admin,
    Path(number): Path<i32>,
) -> Result<Json<ProfileVersionView>, ApiError> {
    Ok(Json(version_view(profile::version(&state.lore, number).await?)?))
}

/// `POST /admin/profile/versions`: 201 with the new active version, or 409
/// `profile_version_conflict` when another version became active meanwhile.
pub async fn save(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(request): ApiJson<SaveProfileRequest>,
) -> Result<(StatusCode, Json<ProfileVersionView>), ApiError> {
    let snapshot = from_wire(&request.snapshot)?;
    let base = i32::try_from(request.base_version)
        .map_err(|_| engine::Error::from(profile::ProfileError::UnknownVersion(0)))?;
    let saved = profile::save(&state.lore, &admin.actor(), base, snapshot, request.note).await?;
    Ok((StatusCode::CREATED, Json(version_view(saved)?)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreRequest {
    /// The version the admin saw active; guards like a save's base.
    #[serde(default)]
    pub expected_active: Option<i32>,
}

pub async fn restore(
    State(state): State<AppState>,
    admin: Admin,
    Path(number): Path<i32>,
    ApiJson(request): ApiJson<RestoreRequest>,
) -> Result<Json<ProfileVersionView>, ApiError> {
    let restored = profile::restore(&state.lore, &admin.actor(), number, request.expected_active).await?;
    Ok(Json(version_view(restored)?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonaRequest {
    pub persona: String,
    #[serde(default)]
    pub details: ProfileDetails,
}

/// `PUT /admin/profile/persona`: the wizard's persona step (before the profile exists).
pub async fn choose_persona(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(request): ApiJson<PersonaRequest>,
) -> Result<StatusCode, ApiError> {
    let choice = PersonaChoice { persona: request.persona, details: details_from_wire(request.details) };
    profile::choose_persona(&state.lore, &admin.actor(), choice).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /admin/profile/render`: the persona's default snapshot for these
/// details (the editor's "reset to persona" action; nothing is stored).
pub async fn render(
    State(_state): State<AppState>,
    _admin: Admin,
    ApiJson(request): ApiJson<PersonaRequest>,
) -> Result<Json<ProfileSnapshot>, ApiError> {
    let snapshot = profile::default_snapshot(&request.persona, details_from_wire(request.details))?;
    Ok(Json(to_wire(&snapshot)?))
}
