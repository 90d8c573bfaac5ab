//! Admin endpoints of the Providers screen: accounts, model targets, roles
//! and quick add. API keys go in, never out: responses say only whether a
//! key is stored.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use engine::profile;
use engine::providers::{self, Role};

use app::wire::{
    AccountRequest, AccountView, BindRequest, BindingVerdictView, ProbeView, ProvidersOverview,
    QuickAddRequest, QuickAddResult, TargetPatch, TargetRequest, TargetView, TiersRequest,
};

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use crate::AppState;

pub async fn get_overview(
    State(state): State<AppState>,
    _admin: Admin,
) -> Result<Json<ProvidersOverview>, ApiError> {
    Ok(Json(providers::overview(&state.lore).await?.into()))
}

pub async fn create_account(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(request): ApiJson<AccountRequest>,
) -> Result<(StatusCode, Json<AccountView>), ApiError> {
    let account = providers::create_account(&state.lore, &admin.actor(), request.into()).await?;
    Ok((StatusCode::CREATED, Json(account.into())))
}

pub async fn update_account(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<AccountRequest>,
) -> Result<Json<AccountView>, ApiError> {
    let account = providers::update_account(&state.lore, &admin.actor(), &id, request.into()).await?;
    Ok(Json(account.into()))
}

pub async fn delete_account(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    providers::delete_account(&state.lore, &admin.actor(), &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn list_models(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<Vec<String>>, ApiError> {
    Ok(Json(providers::list_models(&state.lore, &id).await?))
}

pub async fn register_target(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(r): ApiJson<TargetRequest>,
) -> Result<(StatusCode, Json<TargetView>), ApiError> {
    let target = providers::register_target(&state.lore, &admin.actor(), r.into()).await?;
    Ok((StatusCode::CREATED, Json(TargetView::from(providers::TargetStatus::of(&state.lore, target)))))
}

pub async fn update_target(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
    ApiJson(patch): ApiJson<TargetPatch>,
) -> Result<Json<TargetView>, ApiError> {
    let lore = &state.lore;
    let target = providers::update_target(lore, &admin.actor(), &id, patch.into()).await?;
    Ok(Json(TargetView::from(providers::TargetStatus::of(lore, target))))
}

pub async fn probe_target(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<TargetView>, ApiError> {
    let (target, _) = providers::probe(&state.lore, &admin.actor(), &id).await?;
    Ok(Json(TargetView::from(providers::TargetStatus::of(&state.lore, target))))
}

/// `GET /admin/targets/{id}/probes`: the target's recent probes, newest first.
pub async fn probe_history(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<Vec<ProbeView>>, ApiError> {
    let probes = providers::probe_history(&state.lore, &id).await?;
    Ok(Json(probes.into_iter().map(ProbeView::from).collect()))
}

/// `PUT /admin/providers/escalation-tiers`: the escalation chain after tier 1.
pub async fn set_escalation_tiers(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(request): ApiJson<TiersRequest>,
) -> Result<Json<ProvidersOverview>, ApiError> {
    let lore = &state.lore;
    providers::set_further_tiers(lore, &admin.actor(), &request.target_ids).await?;
    Ok(Json(providers::overview(lore).await?.into()))
}

/// `PUT /admin/roles/{role}`: the role-binding validator's verdict.
pub async fn bind_role(
    State(state): State<AppState>,
    admin: Admin,
    Path(role): Path<String>,
    ApiJson(request): ApiJson<BindRequest>,
) -> Result<Json<ProvidersOverview>, ApiError> {
    let lore = &state.lore;
    let role = Role::parse(&role)?;
    let rebound = profile::bind_model(lore, &admin.actor(), role, request.target_id.as_deref()).await?;
    let verdict = BindingVerdictView::of(&rebound);
    Ok(Json(ProvidersOverview { verdict, ..providers::overview(lore).await?.into() }))
}

/// `POST /admin/providers/quick-add`: account + target + probe + generation role.
pub async fn quick_add(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(r): ApiJson<QuickAddRequest>,
) -> Result<(StatusCode, Json<QuickAddResult>), ApiError> {
    let (account, target, rebound) = profile::quick_add(&state.lore, &admin.actor(), r.into()).await?;
    Ok((
        StatusCode::CREATED,
        Json(QuickAddResult {
            account: account.into(),
            target: TargetView::from(providers::TargetStatus::of(&state.lore, target)),
            verdict: BindingVerdictView::of(&rebound),
        }),
    ))
}
