//! Admin endpoints of the Providers screen: accounts, model targets, roles
//! and quick add. API keys go in, never out: responses say only whether a
//! key is stored.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use chrono::Utc;
use engine::audit::Actor;
use engine::entities::{model_target, provider_account};
use engine::providers::{self, AccountInput, QuickAdd, Role, TargetInput};
use engine::settings::Secret;
use engine::Lore;
use serde::Deserialize;

use app::wire::{AccountView, ProviderPresetView, ProvidersOverview, QuickAddResult, RoleView, TargetView};

use super::admin::Admin;
use super::error::ApiError;
use super::json::ApiJson;
use super::sources::time;
use crate::AppState;

fn actor(admin: &Admin) -> Actor {
    Actor::Account(admin.0.account_id.clone())
}

pub fn account_view(account: provider_account::Model) -> AccountView {
    AccountView {
        has_api_key: account.api_key_sealed.is_some(),
        id: account.id,
        name: account.name,
        kind: account.kind,
        placement: account.placement,
        endpoint: account.endpoint,
        created_at: time(account.created_at),
        updated_at: time(account.updated_at),
    }
}

pub fn target_view(lore: &Lore, target: model_target::Model) -> TargetView {
    let (state, reason) = providers::state(&target, lore.settings.providers.probe_max_age_days, Utc::now());
    TargetView {
        id: target.id,
        account_id: target.account_id,
        capability: target.capability,
        model: target.model,
        enabled: target.enabled,
        state: state.key().to_owned(),
        state_reason: reason,
        probe_latency_ms: target.probe_latency_ms.map(i64::from),
        probe_error: target.probe_error,
        probed_at: target.probed_at.map(time),
        input_price_per_mtok: target.input_price_per_mtok,
        output_price_per_mtok: target.output_price_per_mtok,
    }
}

fn unbound_means(role: Role) -> &'static str {
    match role {
        Role::Generation => "Nothing can answer: bind a generation target.",
        Role::Escalation => "No escalation: an ungrounded first-tier answer is refused.",
        Role::Embedding => "The on-node CPU model (all-MiniLM-L6-v2).",
        Role::Rerank => "No reranking: retrieval order is the fused score.",
    }
}

/// Everything the Providers screen shows.
pub async fn overview(lore: &Lore) -> Result<ProvidersOverview, ApiError> {
    let presets = providers::PRESETS
        .iter()
        .map(|p| ProviderPresetView {
            key: p.key.to_owned(),
            name: p.name.to_owned(),
            endpoint: p.endpoint.map(str::to_owned),
            placement: p.placement.map(|pl| pl.key().to_owned()),
            needs_key: p.needs_key,
        })
        .collect();
    let accounts = providers::accounts(lore).await?.into_iter().map(account_view).collect();
    let targets = providers::targets(lore).await?.into_iter().map(|t| target_view(lore, t)).collect();
    let roles = providers::bindings(lore)
        .await?
        .into_iter()
        .map(|binding| RoleView {
            role: binding.role.key().to_owned(),
            capability: binding.role.capability().key().to_owned(),
            target_id: binding.target.as_ref().map(|t| t.id.clone()),
            model: binding.target.as_ref().map(|t| t.model.clone()),
            state: binding.state.as_ref().map(|(s, _)| s.key().to_owned()),
            state_reason: binding.state.and_then(|(_, reason)| reason),
            unbound_means: unbound_means(binding.role).to_owned(),
        })
        .collect();
    Ok(ProvidersOverview { presets, accounts, targets, roles })
}

pub async fn get_overview(
    State(state): State<AppState>,
    _admin: Admin,
) -> Result<Json<ProvidersOverview>, ApiError> {
    Ok(Json(overview(&state.lore).await?))
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
    let account = providers::create_account(&state.lore, &actor(&admin), request.into()).await?;
    Ok((StatusCode::CREATED, Json(account_view(account))))
}

pub async fn update_account(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<AccountRequest>,
) -> Result<Json<AccountView>, ApiError> {
    let account = providers::update_account(&state.lore, &actor(&admin), &id, request.into()).await?;
    Ok(Json(account_view(account)))
}

pub async fn delete_account(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    providers::delete_account(&state.lore, &actor(&admin), &id).await?;
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
    let target = providers::register_target(&state.lore, &actor(&admin), input).await?;
    Ok((StatusCode::CREATED, Json(target_view(&state.lore, target))))
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
    let target = providers::update_target(lore, &actor(&admin), &id, change).await?;
    Ok(Json(target_view(lore, target)))
}

pub async fn probe_target(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<TargetView>, ApiError> {
    let (target, _) = providers::probe(&state.lore, &actor(&admin), &id).await?;
    Ok(Json(target_view(&state.lore, target)))
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
            providers::bind(lore, &actor(&admin), role, &target_id).await?;
        }
        None => providers::unbind(lore, &actor(&admin), role).await?,
    }
    Ok(Json(overview(lore).await?))
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
    let (account, target) = providers::quick_add(&state.lore, &actor(&admin), add).await?;
    Ok((
        StatusCode::CREATED,
        Json(QuickAddResult { account: account_view(account), target: target_view(&state.lore, target) }),
    ))
}
