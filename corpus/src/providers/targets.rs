//! Model targets: one model through one account for one capability, its
//! prices and its state as the last probe left it.

use super::*;

/// A target as the role-binding validator judges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetState {
    Ready,
    Disabled,
    Unprobed,
    Blocked,
    Stale,
}

impl TargetState {
    pub fn key(self) -> &'static str {
        match self {
            TargetState::Ready => "ready",
            TargetState::Disabled => "disabled",
            TargetState::Unprobed => "unprobed",
            TargetState::Blocked => "blocked",
            TargetState::Stale => "stale",
        }
    }
}

/// The state of `target` at `now`, and the reason when it is not ready.
pub fn state(target: &Target, max_age_days: u32, now: DateTime<Utc>) -> (TargetState, Option<String>) {
    if !target.enabled {
        return (TargetState::Disabled, Some("the target is disabled; enable it first".into()));
    }
    match (target.probe_status, target.probed_at) {
        (ProbeStatus::Ok, Some(at)) if now - at > chrono::Duration::days(max_age_days.into()) => (
            TargetState::Stale,
            Some(format!("its last successful probe is older than {max_age_days} days; probe it again")),
        ),
        (ProbeStatus::Ok, Some(_)) => (TargetState::Ready, None),
        (ProbeStatus::Failed, _) => (
            TargetState::Blocked,
            Some(format!(
                "its last probe failed: {}",
                target.probe_error.as_deref().unwrap_or("no detail recorded")
            )),
        ),
        _ => (TargetState::Unprobed, Some("it has never been probed; probe it first".into())),
    }
}

/// A new target to register.
#[derive(Clone, Debug, Default)]
pub struct TargetInput {
    pub account_id: String,
    pub capability: String,
    pub model: String,
    pub input_price_per_mtok: Option<f64>,
    pub output_price_per_mtok: Option<f64>,
}

pub(super) fn check_price(price: Option<f64>) -> Result<Option<f64>> {
    match price {
        Some(p) if !p.is_finite() || !(0.0..=10_000.0).contains(&p) => {
            Err(invalid("a price per million tokens must be between 0 and 10000 dollars".into()))
        }
        other => Ok(other),
    }
}

/// Registers a target, unprobed.
pub async fn register_target(lore: &Corpus, actor: &Actor, input: TargetInput) -> Result<Target> {
    Target::decode(register_target_in(&lore.db, actor, input).await?)
}

pub(super) async fn register_target_in(
    db: &impl sea_orm::ConnectionTrait,
    actor: &Actor,
    input: TargetInput,
) -> Result<model_target::Model> {
    let capability = Capability::parse(input.capability.trim())?;
    let model = input.model.trim();
    if model.is_empty() || model.chars().count() > 200 {
        return Err(invalid("a model name needs 1 to 200 characters".into()));
    }
    let Some(account) = provider_account::Entity::find_by_id(input.account_id.clone()).one(db).await? else {
        return Err(ProviderError::AccountNotFound(input.account_id).into());
    };
    if account.kind == embedded::KIND && capability != Capability::Generation {
        return Err(invalid(format!(
            "the embedded provider generates only; embedding on this machine is the embedding role left unbound, \
             and it has no {} model",
            capability.key()
        )));
    }
    let kind = preset(&account.kind)?;
    if !kind.capabilities.contains(&capability) {
        let offered: Vec<&str> = kind.capabilities.iter().map(|c| c.key()).collect();
        return Err(invalid(format!(
            "{} offers no {} models (it offers {})",
            kind.name,
            capability.key(),
            offered.join(", ")
        )));
    }
    let exists = model_target::Entity::find()
        .filter(model_target::Column::AccountId.eq(input.account_id.clone()))
        .filter(model_target::Column::Capability.eq(capability.key()))
        .filter(model_target::Column::Model.eq(model))
        .one(db)
        .await?;
    if exists.is_some() {
        return Err(invalid(format!(
            "{model} is already registered for {} on this account",
            capability.key()
        )));
    }
    let row = model_target::ActiveModel {
        id: Set(uuid::Uuid::new_v4().to_string()),
        account_id: Set(input.account_id),
        capability: Set(capability.key().to_owned()),
        model: Set(model.to_owned()),
        enabled: Set(true),
        input_price_per_mtok: Set(check_price(input.input_price_per_mtok)?),
        output_price_per_mtok: Set(check_price(input.output_price_per_mtok)?),
        probe_status: Set("unprobed".to_owned()),
        probe_latency_ms: Set(None),
        probe_error: Set(None),
        probed_at: Set(None),
        created_at: Set(Utc::now()),
    }
    .insert(db)
    .await?;
    audit::record(
        db,
        actor,
        "provider.target_registered",
        Some(&row.id),
        serde_json::json!({"model": row.model}),
    )
    .await?;
    Ok(row)
}

pub async fn target(lore: &Corpus, id: &str) -> Result<Target> {
    Target::decode(target_row(lore, id).await?)
}

pub(super) async fn target_row(lore: &Corpus, id: &str) -> Result<model_target::Model> {
    stored::<model_target::Entity>(lore, id, ProviderError::TargetNotFound).await
}

pub async fn targets(lore: &Corpus) -> Result<Vec<Target>> {
    model_target::Entity::find()
        .order_by_asc(model_target::Column::CreatedAt)
        .all(&lore.db)
        .await?
        .into_iter()
        .map(Target::decode)
        .collect()
}

/// What a change to a target sets; a field that is `None` keeps its value.
/// A price is `Some(None)` to clear it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TargetChange {
    /// Disabling a bound target leaves the binding in place; the role then
    /// reports it as not ready.
    pub enabled: Option<bool>,
    /// US dollars per million input tokens.
    pub input_price_per_mtok: Option<Option<f64>>,
    /// US dollars per million output tokens.
    pub output_price_per_mtok: Option<Option<f64>>,
}

/// Changes a target's switch and prices in one transaction: a change that
/// is refused (a price out of range) changes nothing, and a change that is
/// stored is stored whole, with one audit entry per kind of change.
pub async fn update_target(lore: &Corpus, actor: &Actor, id: &str, change: TargetChange) -> Result<Target> {
    // It reads, then writes: on SQLite the write lock comes first.
    let txn = crate::store::begin_write(&lore.db).await?;
    let current = model_target::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .ok_or_else(|| ProviderError::TargetNotFound(id.to_owned()))?;
    // An unknown target is 404 whatever the change; a refused price then
    // drops the transaction, which rolls it back.
    let input = change.input_price_per_mtok.map(check_price).transpose()?;
    let output = change.output_price_per_mtok.map(check_price).transpose()?;
    let priced = input.is_some() || output.is_some();
    let (input, output) =
        (input.unwrap_or(current.input_price_per_mtok), output.unwrap_or(current.output_price_per_mtok));
    let mut row: model_target::ActiveModel = current.clone().into();
    if priced {
        row.input_price_per_mtok = Set(input);
        row.output_price_per_mtok = Set(output);
    }
    if let Some(enabled) = change.enabled {
        row.enabled = Set(enabled);
    }
    let updated = if row.is_changed() { row.update(&txn).await? } else { current };
    if priced {
        let details = serde_json::json!({"input": input, "output": output});
        audit::record(&txn, actor, "provider.target_priced", Some(id), details).await?;
    }
    if let Some(enabled) = change.enabled {
        let action = if enabled { "provider.target_enabled" } else { "provider.target_disabled" };
        audit::record(&txn, actor, action, Some(id), serde_json::json!({})).await?;
    }
    txn.commit().await?;
    Target::decode(updated)
}

/// The last probe's verdict on a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeStatus {
    Unprobed,
    Ok,
    Failed,
}

impl ProbeStatus {
    pub fn key(self) -> &'static str {
        match self {
            ProbeStatus::Unprobed => "unprobed",
            ProbeStatus::Ok => "ok",
            ProbeStatus::Failed => "failed",
        }
    }
}

/// One model reached through one account for one capability, with its last
/// probe and its pricing, as every surface sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub id: String,
    pub account_id: String,
    pub capability: Capability,
    pub model: String,
    pub enabled: bool,
    /// US dollars per million input tokens (for spend estimates).
    pub input_price_per_mtok: Option<f64>,
    pub output_price_per_mtok: Option<f64>,
    pub probe_status: ProbeStatus,
    pub probe_latency_ms: Option<u32>,
    pub probe_error: Option<String>,
    pub probed_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl Target {
    pub(super) fn decode(row: model_target::Model) -> Result<Target> {
        let corrupt = |detail: String| Error::Internal(format!("model target {}: {detail}", row.id));
        let capability = Capability::parse(&row.capability)
            .map_err(|_| corrupt(format!("its stored capability {:?} is unknown", row.capability)))?;
        let probe_status = match row.probe_status.as_str() {
            "unprobed" => ProbeStatus::Unprobed,
            "ok" => ProbeStatus::Ok,
            "failed" => ProbeStatus::Failed,
            other => return Err(corrupt(format!("its stored probe status {other:?} is unknown"))),
        };
        let probe_latency_ms = row
            .probe_latency_ms
            .map(|ms| {
                u32::try_from(ms).map_err(|_| corrupt(format!("its stored probe latency {ms} is negative")))
            })
            .transpose()?;
        Ok(Target {
            id: row.id,
            account_id: row.account_id,
            capability,
            model: row.model,
            enabled: row.enabled,
            input_price_per_mtok: row.input_price_per_mtok,
            output_price_per_mtok: row.output_price_per_mtok,
            probe_status,
            probe_latency_ms,
            probe_error: row.probe_error,
            probed_at: row.probed_at,
            created_at: row.created_at,
        })
    }
}

/// A target with its state now, as every surface shows it.
#[derive(Clone, Debug)]
pub struct TargetStatus {
    pub target: Target,
    pub state: TargetState,
    /// Why it is not ready (`None` when ready).
    pub reason: Option<String>,
}

impl TargetStatus {
    /// `target`'s state now, with this deployment's probe age limit.
    pub fn of(lore: &Corpus, target: Target) -> Self {
        let (state, reason) = state(&target, lore.settings.providers.probe_max_age_days, Utc::now());
        TargetStatus { target, state, reason }
    }
}
