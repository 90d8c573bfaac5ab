//! Admin endpoints of the Providers screen: accounts, model targets, roles
//! and quick add. API keys go in, never out: responses say only whether a
//! key is stored.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use engine::providers::{self, AccountInput, QuickAdd, Role, TargetInput};
use engine::settings::Secret;
use serde::Deserialize;

use app::wire::{AccountView, ProvidersOverview, QuickAddResult, TargetView};

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountRequest {
    #[serde(default)]
    pub name: Option<String>,
    pub kind: String,
    #[serde(default)]
    pub placement: Option<String>,
    #[serde(default)]
    pub endpoint: Option<String>,
    /// Blank or absent on edit: keep the stored key.
    #[serde(default)]
    pub api_key: Option<Secret>,
}

impl From<AccountRequest> for AccountInput {
    fn from(r: AccountRequest) -> Self {
        AccountInput {
            name: r.name,
            kind: r.kind,
            placement: r.placement,
            endpoint: r.endpoint,
            api_key: r.api_key,
        }
    }
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetRequest {
    pub account_id: String,
    pub capability: String,
    pub model: String,
    #[serde(default)]
    pub input_price_per_mtok: Option<f64>,
    #[serde(default)]
    pub output_price_per_mtok: Option<f64>,
}

pub async fn register_target(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(r): ApiJson<TargetRequest>,
) -> Result<(StatusCode, Json<TargetView>), ApiError> {
    let input = TargetInput {
        account_id: r.account_id,
        capability: r.capability,
        model: r.model,
        input_price_per_mtok: r.input_price_per_mtok,
        output_price_per_mtok: r.output_price_per_mtok,
    };
    let target = providers::register_target(&state.lore, &admin.actor(), input).await?;
    Ok((StatusCode::CREATED, Json(TargetView::from(providers::TargetStatus::of(&state.lore, target)))))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetPatch {
    #[serde(default)]
    pub enabled: Option<bool>,
    /// A price key that is absent keeps the price; `null` clears it.
    #[serde(default, deserialize_with = "super::json::present")]
    pub input_price_per_mtok: Option<Option<f64>>,
    #[serde(default, deserialize_with = "super::json::present")]
    pub output_price_per_mtok: Option<Option<f64>>,
}

pub async fn update_target(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
    ApiJson(patch): ApiJson<TargetPatch>,
) -> Result<Json<TargetView>, ApiError> {
    let change = providers::TargetChange {
        enabled: patch.enabled,
        input_price_per_mtok: patch.input_price_per_mtok,
        output_price_per_mtok: patch.output_price_per_mtok,
    };
    let lore = &state.lore;
    let target = providers::update_target(lore, &admin.actor(), &id, change).await?;
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BindRequest {
    /// `None` unbinds the role.
    pub target_id: Option<String>,
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
    match request.target_id {
        Some(target_id) => {
            providers::bind(lore, &admin.actor(), role, &target_id).await?;
        }
        None => providers::unbind(lore, &admin.actor(), role).await?,
    }
    Ok(Json(providers::overview(lore).await?.into()))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuickAddRequest {
    pub kind: String,
    #[serde(default)]
    pub endpoint: Option<String>,
    #[serde(default)]
    pub api_key: Option<Secret>,
    pub model: String,
    #[serde(default)]
    pub name: Option<String>,
}

/// `POST /admin/providers/quick-add`: account + target + probe + generation role.
pub async fn quick_add(
    State(state): State<AppState>,
    admin: Admin,
    ApiJson(r): ApiJson<QuickAddRequest>,
) -> Result<(StatusCode, Json<QuickAddResult>), ApiError> {
    let add =
        QuickAdd { kind: r.kind, endpoint: r.endpoint, api_key: r.api_key, model: r.model, name: r.name };
    let (account, target) = providers::quick_add(&state.lore, &admin.actor(), add).await?;
    Ok((
        StatusCode::CREATED,
        Json(QuickAddResult {
            account: account.into(),
            target: TargetView::from(providers::TargetStatus::of(&state.lore, target)),
        }),
    ))
}
