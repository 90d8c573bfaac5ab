//! Admin endpoints of the Prompt screen and the wizard's persona step:
//! the persona catalogue, the active version, the history, save (with the
//! version-conflict rule and the eval gate), restore (and "activate
//! anyway"), golden questions, eval runs and pinned answers.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use engine::profile::{self, PersonaChoice, Snapshot};
use engine::Lore;

use app::wire::{
    EvalRunView, GoldenRequest, GoldenView, JudgingView, PersonaRequest, PersonaView, PinRequest, PinView,
    ProfileOverview, ProfileSnapshot, ProfileVersionView, RestoreRequest, RunEvalsRequest,
    SaveProfileRequest,
};
use engine::answer::pins;
use engine::evals;

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use crate::AppState;

pub async fn overview(lore: &Lore) -> Result<ProfileOverview, ApiError> {
    let personas = profile::PERSONAS.iter().map(PersonaView::from).collect();
    let versions = evals::versions(lore)
        .await?
        .into_iter()
        .map(ProfileVersionView::try_from)
        .collect::<Result<Vec<_>, _>>()?;
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
    Ok(Json(profile::version(&state.lore, number).await?.try_into()?))
}

/// `POST /admin/profile/versions`: 201 with the new active version, or 409
/// `profile_version_conflict` when another version became active meanwhile.
pub async fn save(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(request): ApiJson<SaveProfileRequest>,
) -> Result<(StatusCode, Json<ProfileVersionView>), ApiError> {
    let snapshot = Snapshot::try_from(&request.snapshot)?;
    let base = i32::try_from(request.base_version)
        .map_err(|_| engine::Error::from(profile::ProfileError::UnknownVersion(0)))?;
    let saved = profile::save(&state.lore, &admin.actor(), base, snapshot, request.note).await?;
    Ok((StatusCode::CREATED, Json(saved.try_into()?)))
}

pub async fn restore(
    State(state): State<AppState>,
    admin: Admin,
    Path(number): Path<i32>,
    ApiJson(request): ApiJson<RestoreRequest>,
) -> Result<Json<ProfileVersionView>, ApiError> {
    let restored =
        profile::restore(&state.lore, &admin.actor(), number, request.expected_active, request.anyway)
            .await?;
    Ok(Json(restored.try_into()?))
}

/// `GET /admin/profile/judging`: every candidate being judged now, oldest first.
pub async fn judging(
    State(state): State<AppState>,
    _admin: Admin,
) -> Result<Json<Vec<JudgingView>>, ApiError> {
    let under_way = engine::judging::list(&state.lore.db).await?;
    Ok(Json(under_way.into_iter().map(JudgingView::from).collect()))
}

/// `GET /admin/golden`: the golden questions, oldest first.
pub async fn golden(State(state): State<AppState>, _admin: Admin) -> Result<Json<Vec<GoldenView>>, ApiError> {
    Ok(Json(evals::list(&state.lore).await?.into_iter().map(GoldenView::from).collect()))
}

/// `POST /admin/golden`: 201 with the question (replacing one with the same wording).
pub async fn add_golden(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(request): ApiJson<GoldenRequest>,
) -> Result<(StatusCode, Json<GoldenView>), ApiError> {
    let added = evals::add(&state.lore, &admin.actor(), request.try_into()?).await?;
    Ok((StatusCode::CREATED, Json(added.into())))
}

pub async fn remove_golden(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    evals::remove(&state.lore, &admin.actor(), &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /admin/profile/evals`: runs the golden questions against a version
/// (the active one by default) now and stores the result with it; 200 with
/// the report and what got worse since its last eval. 422 when there are no
/// golden questions.
pub async fn run_evals(
    State(state): State<AppState>,
    _admin: Admin,
    ApiJson(request): ApiJson<RunEvalsRequest>,
) -> Result<Json<EvalRunView>, ApiError> {
    let number = request
        .version
        .map(|v| i32::try_from(v).map_err(|_| engine::Error::from(profile::ProfileError::UnknownVersion(0))))
        .transpose()?;
    Ok(Json(evals::rerun(&state.lore, number, &|_, _| {}).await?.try_into()?))
}

/// `GET /admin/pins`: the pinned answers, each checked against the index now.
pub async fn pins(State(state): State<AppState>, _admin: Admin) -> Result<Json<Vec<PinView>>, ApiError> {
    Ok(Json(pins::list(&state.lore).await?.into_iter().map(PinView::from).collect()))
}

/// `POST /admin/pins`: 201 with the pin (replacing the question's pin, if any).
pub async fn pin(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(request): ApiJson<PinRequest>,
) -> Result<(StatusCode, Json<PinView>), ApiError> {
    let pinned = pins::pin(&state.lore, &admin.actor(), request.into()).await?;
    Ok((StatusCode::CREATED, Json(pinned.into())))
}

pub async fn unpin(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    pins::unpin(&state.lore, &admin.actor(), &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT /admin/profile/persona`: the wizard's persona step (before the profile exists).
pub async fn choose_persona(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(request): ApiJson<PersonaRequest>,
) -> Result<StatusCode, ApiError> {
    let choice = PersonaChoice { persona: request.persona, details: request.details.into() };
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
    let snapshot = profile::default_snapshot(&request.persona, request.details.into())?;
    Ok(Json(ProfileSnapshot::try_from(&snapshot)?))
}
