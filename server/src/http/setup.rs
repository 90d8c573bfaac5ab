//! The setup wizard's endpoints. The wizard's state lives on the server
//! (`engine::wizard`); each step is one POST that validates, acts and moves
//! on, and `GET /admin/setup/` says where to resume.
//!
//! | method | path | step |
//! | --- | --- | --- |
//! | GET | /admin/setup/ | where the wizard is, what its steps made |
//! | POST | /admin/setup/persona | choose the persona (with optional details) |
//! | POST | /admin/setup/source | add the first source (not indexed yet) |
//! | POST | /admin/setup/provider | quick add: store, register, probe, bind |
//! | POST | /admin/setup/index | start the first index (creates the profile) |
//! | POST | /admin/setup/ask | ask the first question (the Playground's pipeline) |
//! | POST | /admin/setup/next | move on (optional advanced step, revisits, finish) |
//! | POST | /admin/setup/back | go back one step |

use axum::extract::State;
use axum::Json;
use engine::wizard;

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use crate::AppState;
use app::wire::{
    AnswerResponse, AskRequest, CreateSourceRequest, PersonaRequest, QuickAddRequest, SetupWizardView,
};

/// Where the wizard is now, after a step moved it (or not).
async fn view(state: &AppState) -> Result<Json<SetupWizardView>, ApiError> {
    Ok(Json(wizard::overview(&state.lore).await?.into()))
}

pub async fn get_wizard(
    State(state): State<AppState>,
    _admin: Admin,
) -> Result<Json<SetupWizardView>, ApiError> {
    view(&state).await
}

pub async fn persona(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(request): ApiJson<PersonaRequest>,
) -> Result<Json<SetupWizardView>, ApiError> {
    let choice = engine::profile::PersonaChoice { persona: request.persona, details: request.details.into() };
    wizard::choose_persona(&state.lore, &admin.actor(), choice).await?;
    view(&state).await
}

pub async fn source(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(new): ApiJson<CreateSourceRequest>,
) -> Result<Json<SetupWizardView>, ApiError> {
    wizard::add_source(&state.lore, &admin.actor(), new.into()).await?;
    view(&state).await
}

pub async fn provider(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(r): ApiJson<QuickAddRequest>,
) -> Result<Json<SetupWizardView>, ApiError> {
    wizard::add_provider(&state.lore, &admin.actor(), r.into()).await?;
    view(&state).await
}

pub async fn index(State(state): State<AppState>, admin: Admin) -> Result<Json<SetupWizardView>, ApiError> {
    wizard::start_index(&state.lore, &admin.actor()).await?;
    view(&state).await
}

pub async fn ask(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(request): ApiJson<AskRequest>,
) -> Result<Json<AnswerResponse>, ApiError> {
    let answered = wizard::ask(&state.lore, &admin.actor(), &request.question).await?;
    Ok(Json(answered.into()))
}

pub async fn next(State(state): State<AppState>, admin: Admin) -> Result<Json<SetupWizardView>, ApiError> {
    wizard::next(&state.lore, &admin.actor()).await?;
    view(&state).await
}

pub async fn back(State(state): State<AppState>, admin: Admin) -> Result<Json<SetupWizardView>, ApiError> {
    wizard::back(&state.lore, &admin.actor()).await?;
    view(&state).await
}
