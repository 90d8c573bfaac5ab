//! Model providers: accounts, model targets, execution roles and quick add.
//!
//! - An **account** is an OpenAI-compatible endpoint: a hosted preset (always
//!   off-node), an on-node server product, or a custom endpoint; or the
//!   [`embedded`] provider, a GGUF model run inside the `lore` process. Its API key is
//!   sealed with AES-256-GCM ([`crate::secrets`]); it is opened only to make a
//!   call and never leaves the server. On edit a blank key keeps the stored
//!   one; a new value rotates it.
//! - A **target** is one model through one account for one capability. Each
//!   is probed on its own with a minimal real call; its [`TargetState`] follows
//!   from the probe: `ready`, `disabled`, `unprobed`, `blocked` (last probe
//!   failed) or `stale` (probe older than `providers.probe_max_age_days`).
//! - A **role** binds a target to a job. [`bind`] is the role-binding
//!   validator: only a `ready` target of the right capability is accepted.
//! - [`quick_add`] stores an account, registers a generation target, probes
//!   it and binds the generation role in one action; on any failure nothing
//!   it made remains.
//! - What a provider replies is untrusted: [`client`] scrubs it with
//!   [`redact::scrub`] (the account's key, credential-like values, control
//!   characters, length) before it becomes an error, so probe results,
//!   stored `probe_error`s, log lines and responses never carry a key.

pub mod client;
pub mod embedded;
pub mod gguf;
pub mod hosted;
pub mod redact;
pub mod sse;

use std::time::Instant;

use chrono::{DateTime, Utc};
use entity::{escalation_tier, model_target, provider_account, role_binding, target_probe};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};

use crate::audit::{self, Actor};
use crate::settings::Secret;
use crate::{Error, Lore, Result};
use client::{CallError, Endpoint, Message, Protocol};

/// Why a provider action was refused.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("{0}")]
    Invalid(String),
    #[error("there is no provider account {0}")]
    AccountNotFound(String),
    #[error("there is no model target {0}")]
    TargetNotFound(String),
    /// The role-binding validator's refusal, with the reason.
    #[error("the {role} role cannot be bound to {model}: {reason}")]
    TargetNotReady { role: &'static str, model: String, state: TargetState, reason: String },
    #[error("the probe of {model} failed: {error}")]
    ProbeFailed { model: String, error: CallError },
    /// An account whose targets serve roles: deleting it would leave them
    /// with nothing.
    #[error(
        "the provider {account} serves the {} role(s); bind them to another target, or unbind them, first",
        roles.join(", ")
    )]
    InUse { account: String, roles: Vec<String> },
    #[error(transparent)]
    Call(#[from] CallError),
}

/// Where a provider runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    OnNode,
    OffNode,
}

impl Placement {
    pub fn key(self) -> &'static str {
        match self {
            Placement::OnNode => "on_node",
            Placement::OffNode => "off_node",
        }
    }

    pub fn parse(raw: &str) -> Result<Self> {
        match raw {
            "on_node" => Ok(Placement::OnNode),
            "off_node" => Ok(Placement::OffNode),
            other => Err(invalid(format!("unknown placement `{other}` (on_node or off_node)"))),
        }
    }
}

/// A provider type: its label, default endpoint, where it runs, the
/// protocol it speaks and what its models can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    pub key: &'static str,
    pub name: &'static str,
    /// `None` for `custom`: the endpoint must be given.
    pub endpoint: Option<&'static str>,
    /// `None` for `custom`: either, by the endpoint's host.
    pub placement: Option<Placement>,
    pub needs_key: bool,
    pub protocol: Protocol,
    /// The capabilities its targets may have.
    pub capabilities: &'static [Capability],
}

const ALL_CAPABILITIES: &[Capability] = &[Capability::Generation, Capability::Embedding, Capability::Rerank];
const GENERATION_ONLY: &[Capability] = &[Capability::Generation];

pub static PRESETS: [Preset; 15] = [
    Preset {
        key: embedded::KIND,
        name: "Embedded (on this machine)",
        endpoint: Some(embedded::ENDPOINT),
        placement: Some(Placement::OnNode),
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: GENERATION_ONLY,
    },
    Preset {
        key: "openai",
        name: "OpenAI",
        endpoint: Some("https://api.openai.com/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "anthropic",
        name: "Anthropic",
        endpoint: Some("https://api.anthropic.com/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::Anthropic,
        capabilities: GENERATION_ONLY,
    },
    Preset {
        key: "gemini",
        name: "Google Gemini",
        endpoint: Some("https://generativelanguage.googleapis.com/v1beta"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::Gemini,
        capabilities: &[Capability::Generation, Capability::Embedding],
    },
    Preset {
        key: "groq",
        name: "Groq",
        endpoint: Some("https://api.groq.com/openai/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "together",
        name: "Together AI",
        endpoint: Some("https://api.together.xyz/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "mistral",
        name: "Mistral AI",
        endpoint: Some("https://api.mistral.ai/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "deepseek",
        name: "DeepSeek",
        endpoint: Some("https://api.deepseek.com/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "openrouter",
        name: "OpenRouter",
        endpoint: Some("https://openrouter.ai/api/v1"),
        placement: Some(Placement::OffNode),
        needs_key: true,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "ollama",
        name: "Ollama",
        endpoint: Some("http://127.0.0.1:11434/v1"),
        placement: Some(Placement::OnNode),
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "llama_cpp",
        name: "llama.cpp server",
        endpoint: Some("http://127.0.0.1:8080/v1"),
        placement: Some(Placement::OnNode),
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "vllm",
        name: "vLLM",
        endpoint: Some("http://127.0.0.1:8000/v1"),
        placement: Some(Placement::OnNode),
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "lm_studio",
        name: "LM Studio",
        endpoint: Some("http://127.0.0.1:1234/v1"),
        placement: Some(Placement::OnNode),
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "localai",
        name: "LocalAI",
        endpoint: Some("http://127.0.0.1:8080/v1"),
        placement: Some(Placement::OnNode),
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
    Preset {
        key: "custom",
        name: "Custom (OpenAI-compatible)",
        endpoint: None,
        placement: None,
        needs_key: false,
        protocol: Protocol::OpenAi,
        capabilities: ALL_CAPABILITIES,
    },
];

pub fn preset(key: &str) -> Result<&'static Preset> {
    PRESETS.iter().find(|p| p.key == key).ok_or_else(|| {
        let known: Vec<&str> = PRESETS.iter().map(|p| p.key).collect();
        invalid(format!("unknown provider type `{key}` ({})", known.join(", ")))
    })
}

fn invalid(message: String) -> Error {
    ProviderError::Invalid(message).into()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    Generation,
    Embedding,
    Rerank,
}

impl Capability {
    pub fn key(self) -> &'static str {
        match self {
            Capability::Generation => "generation",
            Capability::Embedding => "embedding",
            Capability::Rerank => "rerank",
        }
    }

    pub fn parse(raw: &str) -> Result<Self> {
        match raw {
            "generation" => Ok(Capability::Generation),
            "embedding" => Ok(Capability::Embedding),
            "rerank" => Ok(Capability::Rerank),
            other => Err(invalid(format!("unknown capability `{other}` (generation, embedding, rerank)"))),
        }
    }
}

/// The execution roles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// First-tier answers.
    Generation,
    /// A stronger target for answers the first tier did not ground (optional).
    Escalation,
    /// Indexing and query embeddings; unbound = the on-node CPU model.
    Embedding,
    /// Reordering retrieved passages (optional).
    Rerank,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Generation, Role::Escalation, Role::Embedding, Role::Rerank];

    pub fn key(self) -> &'static str {
        match self {
            Role::Generation => "generation",
            Role::Escalation => "escalation",
            Role::Embedding => "embedding",
            Role::Rerank => "rerank",
        }
    }

    pub fn parse(raw: &str) -> Result<Self> {
        Role::ALL.into_iter().find(|role| role.key() == raw).ok_or_else(|| {
            invalid(format!("unknown role `{raw}` (generation, escalation, embedding, rerank)"))
        })
    }

    pub fn capability(self) -> Capability {
        match self {
            Role::Generation | Role::Escalation => Capability::Generation,
            Role::Embedding => Capability::Embedding,
            Role::Rerank => Capability::Rerank,
        }
    }

    /// What Lore does while nothing is bound to this role.
    pub fn unbound_means(self) -> &'static str {
        match self {
            Role::Generation => "Nothing can answer: bind a generation target.",
            Role::Escalation => "No escalation: an ungrounded first-tier answer is refused.",
            Role::Embedding => "The on-node CPU model (all-MiniLM-L6-v2).",
            Role::Rerank => "No reranking: retrieval order is the fused score.",
        }
    }
}

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

/// What an account is made from. For an edit, `api_key: None` (or blank)
/// keeps the stored key and a value rotates it.
#[derive(Clone, Debug, Default)]
pub struct AccountInput {
    pub name: Option<String>,
    pub kind: String,
    pub placement: Option<String>,
    pub endpoint: Option<String>,
    pub api_key: Option<Secret>,
}

fn is_loopback_or_private(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => *name == "localhost" || name.ends_with(".localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    }
}

/// Checks the type, endpoint, placement and key of an account.
fn resolve_account(input: &AccountInput) -> Result<(&'static Preset, String, Placement)> {
    check_api_key(&input.api_key)?;
    let preset = preset(input.kind.trim())?;
    if preset.key == embedded::KIND {
        // Nothing to reach: the model runs in this process.
        if input.placement.as_deref().is_some_and(|p| !p.trim().is_empty() && p.trim() != "on_node") {
            return Err(invalid(format!("{} is on-node only", preset.name)));
        }
        return Ok((preset, embedded::ENDPOINT.to_owned(), Placement::OnNode));
    }
    let endpoint = match input.endpoint.as_deref().map(str::trim).filter(|e| !e.is_empty()) {
        Some(given) => given.trim_end_matches('/').to_owned(),
        None => preset
            .endpoint
            .ok_or_else(|| {
                invalid(
                    "a custom provider needs its endpoint (the API base, like http://host:port/v1)".into(),
                )
            })?
            .to_owned(),
    };
    let url = url::Url::parse(&endpoint).map_err(|_| invalid(format!("`{endpoint}` is not a URL")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(invalid(format!("`{endpoint}` must be an http or https URL")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid("put the API key in the key field, not in the endpoint URL".into()));
    }
    let local = url.host().is_some_and(|host| is_loopback_or_private(&host));
    let placement =
        match (input.placement.as_deref().map(str::trim).filter(|p| !p.is_empty()), preset.placement) {
            (Some(raw), Some(fixed)) => {
                let asked = Placement::parse(raw)?;
                if asked != fixed {
                    return Err(invalid(format!(
                        "{} is {} only",
                        preset.name,
                        fixed.key().replace('_', "-")
                    )));
                }
                fixed
            }
            (None, Some(fixed)) => fixed,
            (Some(raw), None) => Placement::parse(raw)?,
            (None, None) => {
                if local {
                    Placement::OnNode
                } else {
                    Placement::OffNode
                }
            }
        };
    Ok((preset, endpoint, placement))
}

fn non_blank(secret: &Option<Secret>) -> Option<&Secret> {
    secret.as_ref().filter(|s| !s.expose().trim().is_empty())
}

/// Refuses a key that cannot be sent as it is, before it is stored or any
/// call is made: the key goes into an HTTP header, where a control character
/// (a NUL, a line break inside the key) cannot go, and no provider issues a
/// key outside printable ASCII. Without this the probe fails while building
/// its request and a typing mistake reads as the provider's failure. The key
/// is trimmed first, as it is when used, so a pasted trailing newline is
/// fine; the message never repeats the key.
fn check_api_key(secret: &Option<Secret>) -> Result<()> {
    match non_blank(secret) {
        Some(key) if !key.expose().trim().chars().all(|c| c == ' ' || c.is_ascii_graphic()) => {
            Err(Error::InvalidInput(
                "an API key can hold only printable ASCII characters, and no control characters".into(),
            ))
        }
        _ => Ok(()),
    }
}

/// Stores a new account (its key sealed).
pub async fn create_account(lore: &Lore, actor: &Actor, input: AccountInput) -> Result<Account> {
    Account::decode(create_account_in(lore, &lore.db, actor, input).await?)
}

async fn create_account_in(
    lore: &Lore,
    db: &impl sea_orm::ConnectionTrait,
    actor: &Actor,
    input: AccountInput,
) -> Result<provider_account::Model> {
    let (preset, endpoint, placement) = resolve_account(&input)?;
    let key = non_blank(&input.api_key);
    if preset.needs_key && key.is_none() {
        return Err(invalid(format!("{} needs an API key", preset.name)));
    }
    let name = match input.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) if name.chars().count() <= 100 => name.to_owned(),
        Some(_) => return Err(invalid("an account name has at most 100 characters".into())),
        None => preset.name.to_owned(),
    };
    let now = Utc::now();
    let row = provider_account::ActiveModel {
        id: Set(uuid::Uuid::new_v4().to_string()),
        name: Set(name),
        kind: Set(preset.key.to_owned()),
        placement: Set(placement.key().to_owned()),
        endpoint: Set(endpoint),
        api_key_sealed: Set(key.map(|k| lore.keys.seal(k.expose().trim())).transpose()?),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(db)
    .await?;
    audit::record(
        db,
        actor,
        "provider.account_created",
        Some(&row.id),
        serde_json::json!({"kind": row.kind}),
    )
    .await?;
    Ok(row)
}

/// Edits an account. A blank key keeps the stored one; a value rotates it.
pub async fn update_account(lore: &Lore, actor: &Actor, id: &str, input: AccountInput) -> Result<Account> {
    let account = account_row(lore, id).await?;
    let (_, endpoint, placement) = resolve_account(&input)?;
    let rotated = non_blank(&input.api_key).is_some();
    let mut row: provider_account::ActiveModel = account.clone().into();
    if let Some(name) = input.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        row.name = Set(name.chars().take(100).collect());
    }
    row.kind = Set(input.kind.trim().to_owned());
    row.endpoint = Set(endpoint);
    row.placement = Set(placement.key().to_owned());
    if let Some(key) = non_blank(&input.api_key) {
        row.api_key_sealed = Set(Some(lore.keys.seal(key.expose().trim())?));
    }
    row.updated_at = Set(Utc::now());
    let updated = row.update(&lore.db).await?;
    audit::record(
        &lore.db,
        actor,
        "provider.account_updated",
        Some(id),
        serde_json::json!({"key_rotated": rotated}),
    )
    .await?;
    Account::decode(updated)
}

pub async fn account(lore: &Lore, id: &str) -> Result<Account> {
    Account::decode(account_row(lore, id).await?)
}

async fn account_row(lore: &Lore, id: &str) -> Result<provider_account::Model> {
    provider_account::Entity::find_by_id(id)
        .one(&lore.db)
        .await?
        .ok_or_else(|| ProviderError::AccountNotFound(id.to_owned()).into())
}

pub async fn accounts(lore: &Lore) -> Result<Vec<Account>> {
    provider_account::Entity::find()
        .order_by_asc(provider_account::Column::CreatedAt)
        .all(&lore.db)
        .await?
        .into_iter()
        .map(Account::decode)
        .collect()
}

/// Deletes an account with its targets (and the roles bound to them).
pub async fn delete_account(lore: &Lore, actor: &Actor, id: &str) -> Result<()> {
    let account = account_row(lore, id).await?;
    let txn = crate::store::begin_write(&lore.db).await?;
    // Checked in the write transaction: a role bound meanwhile is seen.
    let targets: Vec<String> = model_target::Entity::find()
        .filter(model_target::Column::AccountId.eq(&account.id))
        .all(&txn)
        .await?
        .into_iter()
        .map(|t| t.id)
        .collect();
    let mut roles: Vec<String> = role_binding::Entity::find()
        .filter(role_binding::Column::TargetId.is_in(targets.clone()))
        .all(&txn)
        .await?
        .into_iter()
        .map(|binding| binding.role)
        .collect();
    roles.extend(
        escalation_tier::Entity::find()
            .filter(escalation_tier::Column::TargetId.is_in(targets))
            .all(&txn)
            .await?
            .into_iter()
            .map(|tier| format!("escalation (tier {})", tier.position)),
    );
    if !roles.is_empty() {
        roles.sort();
        return Err(ProviderError::InUse { account: account.name, roles }.into());
    }
    // Children first: not every database enforces the cascades.
    model_target::Entity::delete_many()
        .filter(model_target::Column::AccountId.eq(&account.id))
        .exec(&txn)
        .await?;
    provider_account::Entity::delete_by_id(&account.id).exec(&txn).await?;
    audit::record(&txn, actor, "provider.account_deleted", Some(id), serde_json::json!({})).await?;
    txn.commit().await?;
    Ok(())
}

/// The account's endpoint with its key opened, for one call.
pub fn endpoint_of(lore: &Lore, account: &Account) -> Result<Endpoint> {
    let api_key = account.api_key_sealed.as_deref().map(|sealed| lore.keys.open(sealed)).transpose()?;
    Ok(Endpoint { base: account.endpoint.clone(), api_key, protocol: preset(&account.kind)?.protocol })
}

/// The models the provider lists, where it can list them.
pub async fn list_models(lore: &Lore, id: &str) -> Result<Vec<String>> {
    let account = account(lore, id).await?;
    if account.kind == embedded::KIND {
        return Ok(embedded::available(&lore.settings));
    }
    let endpoint = endpoint_of(lore, &account)?;
    Ok(lore.provider_client.models(&endpoint).await.map_err(ProviderError::from)?)
}

/// One chat completion from the target at `endpoint`: the embedded model
/// in this process, or the provider's server. `tokens`, when given, gets
/// the reply's text piece by piece as the embedded model or a hosted
/// family streams it (an OpenAI-compatible server's reply arrives whole,
/// as one piece).
pub async fn chat(
    lore: &Lore,
    endpoint: &Endpoint,
    model: &str,
    messages: &[Message],
    max_tokens: u32,
    temperature: f32,
    tokens: Option<tokio::sync::mpsc::UnboundedSender<String>>,
) -> Result<client::Completion, CallError> {
    if embedded::is_embedded(&endpoint.base) {
        let timeout = std::time::Duration::from_secs(lore.settings.providers.request_timeout_seconds.max(1));
        return embedded::chat(&lore.settings, &lore.embedded, model, messages, max_tokens, timeout, tokens)
            .await;
    }
    lore.provider_client.chat(endpoint, model, messages, max_tokens, temperature, tokens.as_ref()).await
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

fn check_price(price: Option<f64>) -> Result<Option<f64>> {
    match price {
        Some(p) if !p.is_finite() || !(0.0..=10_000.0).contains(&p) => {
            Err(invalid("a price per million tokens must be between 0 and 10000 dollars".into()))
        }
        other => Ok(other),
    }
}

/// Registers a target, unprobed.
pub async fn register_target(lore: &Lore, actor: &Actor, input: TargetInput) -> Result<Target> {
    Target::decode(register_target_in(&lore.db, actor, input).await?)
}

async fn register_target_in(
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

pub async fn target(lore: &Lore, id: &str) -> Result<Target> {
    Target::decode(target_row(lore, id).await?)
}

async fn target_row(lore: &Lore, id: &str) -> Result<model_target::Model> {
    model_target::Entity::find_by_id(id)
        .one(&lore.db)
        .await?
        .ok_or_else(|| ProviderError::TargetNotFound(id.to_owned()).into())
}

pub async fn targets(lore: &Lore) -> Result<Vec<Target>> {
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
pub async fn update_target(lore: &Lore, actor: &Actor, id: &str, change: TargetChange) -> Result<Target> {
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

/// The outcome of one probe, as recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub ok: bool,
    pub latency_ms: u64,
    pub error: Option<String>,
    pub at: DateTime<Utc>,
}

/// The minimal real call for the target's capability.
async fn probe_call(lore: &Lore, endpoint: &Endpoint, target: &Target) -> Result<(), CallError> {
    let client = &lore.provider_client;
    if embedded::is_embedded(&endpoint.base) {
        if target.capability != Capability::Generation {
            return Err(CallError::Protocol {
                endpoint: endpoint.base.clone(),
                reason: "the embedded provider generates only".into(),
            });
        }
        // A known model missing from this machine is fetched first.
        embedded::ensure(&lore.settings, &target.model, &crate::fetch::quietly).await.map_err(|reason| {
            CallError::Unusable { endpoint: format!("the embedded model {}", target.model), reason }
        })?;
    }
    match target.capability {
        Capability::Embedding => {
            let vectors = client.embeddings(endpoint, &target.model, &["probe".to_owned()]).await?;
            if vectors.first().is_none_or(|v| v.is_empty()) {
                return Err(CallError::Protocol {
                    endpoint: endpoint.base.clone(),
                    reason: "an empty embedding".into(),
                });
            }
            Ok(())
        }
        Capability::Rerank => {
            client
                .rerank(endpoint, &target.model, "probe", &["probe".to_owned(), "other".to_owned()])
                .await?;
            Ok(())
        }
        Capability::Generation => {
            let probe = [Message::user("Reply with the single word: ok")];
            chat(lore, endpoint, &target.model, &probe, 8, 0.0, None).await?;
            Ok(())
        }
    }
}

/// Probes a target with a minimal real call and records the result, latency
/// and time (and the error, when it failed; the client has already scrubbed
/// the provider's part of it).
pub async fn probe(lore: &Lore, actor: &Actor, id: &str) -> Result<(Target, Probe)> {
    let stored = target_row(lore, id).await?;
    let target = Target::decode(stored.clone())?;
    let account = account(lore, &target.account_id).await?;
    let endpoint = endpoint_of(lore, &account)?;
    let started = Instant::now();
    let result = probe_call(lore, &endpoint, &target).await;
    let probe = Probe {
        ok: result.is_ok(),
        latency_ms: started.elapsed().as_millis() as u64,
        error: result.err().map(|err| err.to_string()),
        at: Utc::now(),
    };
    let mut row: model_target::ActiveModel = stored.into();
    let status = if probe.ok { ProbeStatus::Ok } else { ProbeStatus::Failed };
    row.probe_status = Set(status.key().to_owned());
    row.probe_latency_ms = Set(Some(probe.latency_ms.min(i32::MAX as u64) as i32));
    row.probe_error = Set(probe.error.clone());
    row.probed_at = Set(Some(probe.at));
    let txn = crate::store::begin_write(&lore.db).await?;
    let updated = row.update(&txn).await?;
    record_probe(&txn, id, &probe).await?;
    audit::record(&txn, actor, "provider.target_probed", Some(id), serde_json::json!({"ok": probe.ok}))
        .await?;
    txn.commit().await?;
    Ok((Target::decode(updated)?, probe))
}

/// How many probes of each target the history keeps.
pub const PROBE_HISTORY: usize = 20;

/// Adds `probe` to the target's history and drops what is older than the
/// last [`PROBE_HISTORY`].
async fn record_probe(db: &impl sea_orm::ConnectionTrait, target_id: &str, probe: &Probe) -> Result<()> {
    target_probe::ActiveModel {
        id: Set(uuid::Uuid::new_v4().to_string()),
        target_id: Set(target_id.to_owned()),
        ok: Set(probe.ok),
        latency_ms: Set(probe.latency_ms.min(i32::MAX as u64) as i32),
        error: Set(probe.error.clone()),
        probed_at: Set(probe.at),
    }
    .insert(db)
    .await?;
    let older: Vec<String> = target_probe::Entity::find()
        .filter(target_probe::Column::TargetId.eq(target_id))
        .order_by_desc(target_probe::Column::ProbedAt)
        .order_by_desc(target_probe::Column::Id)
        .all(db)
        .await?
        .into_iter()
        .skip(PROBE_HISTORY)
        .map(|row| row.id)
        .collect();
    if !older.is_empty() {
        target_probe::Entity::delete_many().filter(target_probe::Column::Id.is_in(older)).exec(db).await?;
    }
    Ok(())
}

/// The target's recent probes, newest first.
pub async fn probe_history(lore: &Lore, id: &str) -> Result<Vec<Probe>> {
    target_row(lore, id).await?;
    Ok(target_probe::Entity::find()
        .filter(target_probe::Column::TargetId.eq(id))
        .order_by_desc(target_probe::Column::ProbedAt)
        .all(&lore.db)
        .await?
        .into_iter()
        .map(|row| Probe {
            ok: row.ok,
            latency_ms: u64::try_from(row.latency_ms).unwrap_or(0),
            error: row.error,
            at: row.probed_at,
        })
        .collect())
}

/// The most escalation tiers a chain may have (tier 1 included).
pub const MAX_ESCALATION_TIERS: usize = 4;

/// The escalation chain's further tiers, tier 2 first (tier 1 is the
/// escalation role's binding).
pub async fn further_tiers(lore: &Lore) -> Result<Vec<Target>> {
    let rows =
        escalation_tier::Entity::find().order_by_asc(escalation_tier::Column::Position).all(&lore.db).await?;
    let mut tiers = Vec::with_capacity(rows.len());
    for row in rows {
        if let Some(target) = model_target::Entity::find_by_id(row.target_id).one(&lore.db).await? {
            tiers.push(Target::decode(target)?);
        }
    }
    Ok(tiers)
}

/// The further tiers as the pipeline calls them, tier 2 first.
pub async fn resolve_further_tiers(lore: &Lore) -> Result<Vec<Resolved>> {
    let mut resolved_tiers = Vec::new();
    for target in further_tiers(lore).await? {
        resolved_tiers.push(resolved(lore, target).await?);
    }
    Ok(resolved_tiers)
}

/// Sets the escalation chain's further tiers (tier 2 onwards, in order),
/// replacing the ones before; an empty list leaves one tier. Each target
/// must be bindable to the escalation role, appear once, and differ from
/// tier 1, which must be bound: a chain starts at the escalation role.
pub async fn set_further_tiers(lore: &Lore, actor: &Actor, target_ids: &[String]) -> Result<Vec<Target>> {
    if target_ids.len() + 1 > MAX_ESCALATION_TIERS {
        return Err(invalid(format!(
            "an escalation chain has at most {MAX_ESCALATION_TIERS} tiers: the escalation role and {} more",
            MAX_ESCALATION_TIERS - 1
        )));
    }
    let txn = crate::store::begin_write(&lore.db).await?;
    let first = role_binding::Entity::find_by_id(Role::Escalation.key()).one(&txn).await?;
    let Some(first) = first.filter(|_| !target_ids.is_empty()).map(|binding| binding.target_id) else {
        if !target_ids.is_empty() {
            return Err(invalid(
                "bind the escalation role first: its target is tier 1, and further tiers follow it".into(),
            ));
        }
        escalation_tier::Entity::delete_many().exec(&txn).await?;
        audit::record(&txn, actor, "provider.escalation_tiers_set", None, serde_json::json!({"targets": []}))
            .await?;
        txn.commit().await?;
        return Ok(Vec::new());
    };
    let mut tiers = Vec::with_capacity(target_ids.len());
    for (i, id) in target_ids.iter().enumerate() {
        if *id == first || target_ids[..i].contains(id) {
            return Err(invalid(format!("target {id} is in the escalation chain twice")));
        }
        let row = model_target::Entity::find_by_id(id.clone())
            .one(&txn)
            .await?
            .ok_or_else(|| ProviderError::TargetNotFound(id.clone()))?;
        let target = Target::decode(row)?;
        check_bindable(Role::Escalation, &target, lore.settings.providers.probe_max_age_days)?;
        tiers.push(target);
    }
    escalation_tier::Entity::delete_many().exec(&txn).await?;
    let now = Utc::now();
    for (i, target) in tiers.iter().enumerate() {
        escalation_tier::ActiveModel {
            position: Set(i as i32 + 2),
            target_id: Set(target.id.clone()),
            updated_by: Set(actor.label()),
            updated_at: Set(now),
        }
        .insert(&txn)
        .await?;
    }
    audit::record(
        &txn,
        actor,
        "provider.escalation_tiers_set",
        None,
        serde_json::json!({"targets": target_ids}),
    )
    .await?;
    txn.commit().await?;
    Ok(tiers)
}

/// A role and what it is bound to.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    pub role: Role,
    pub target: Option<Target>,
    /// The bound target's state now (`None` when unbound).
    pub state: Option<(TargetState, Option<String>)>,
}

/// A provider account as every surface sees it. Its key stays sealed in
/// the engine: a surface learns only whether there is one.
#[derive(Clone, Debug, PartialEq)]
pub struct Account {
    pub id: String,
    pub name: String,
    /// A preset's key (`openai`, `llama_cpp`, ...) or `custom`.
    pub kind: String,
    pub placement: Placement,
    /// The API base, for example `http://127.0.0.1:8080/v1`.
    pub endpoint: String,
    api_key_sealed: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Account {
    fn decode(row: provider_account::Model) -> Result<Account> {
        let placement = Placement::parse(&row.placement).map_err(|_| {
            Error::Internal(format!(
                "provider account {}: its stored placement {:?} is unknown",
                row.id, row.placement
            ))
        })?;
        Ok(Account {
            id: row.id,
            name: row.name,
            kind: row.kind,
            placement,
            endpoint: row.endpoint,
            api_key_sealed: row.api_key_sealed,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }

    /// Whether an API key is stored (it is never shown).
    pub fn has_api_key(&self) -> bool {
        self.api_key_sealed.is_some()
    }
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
    fn decode(row: model_target::Model) -> Result<Target> {
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
    pub fn of(lore: &Lore, target: Target) -> Self {
        let (state, reason) = state(&target, lore.settings.providers.probe_max_age_days, Utc::now());
        TargetStatus { target, state, reason }
    }
}

/// Everything the Providers screen and `lore providers list` show.
#[derive(Clone, Debug)]
pub struct Overview {
    pub presets: &'static [Preset],
    pub accounts: Vec<Account>,
    pub targets: Vec<TargetStatus>,
    pub bindings: Vec<Binding>,
    /// The escalation chain's further tiers' target ids, tier 2 first.
    pub further_tiers: Vec<String>,
}

pub async fn overview(lore: &Lore) -> Result<Overview> {
    let accounts = accounts(lore).await?;
    let targets = targets(lore).await?.into_iter().map(|t| TargetStatus::of(lore, t)).collect();
    let bindings = bindings(lore).await?;
    let further_tiers = further_tiers(lore).await?.into_iter().map(|t| t.id).collect();
    Ok(Overview { presets: &PRESETS, accounts, targets, bindings, further_tiers })
}

pub async fn bindings(lore: &Lore) -> Result<Vec<Binding>> {
    let rows = role_binding::Entity::find().all(&lore.db).await?;
    let targets = targets(lore).await?;
    let max_age = lore.settings.providers.probe_max_age_days;
    let now = Utc::now();
    Ok(Role::ALL
        .into_iter()
        .map(|role| {
            let target = rows
                .iter()
                .find(|row| row.role == role.key())
                .and_then(|row| targets.iter().find(|t| t.id == row.target_id))
                .cloned();
            let state = target.as_ref().map(|t| state(t, max_age, now));
            Binding { role, target, state }
        })
        .collect())
}

/// The role-binding validator: binds `role` to `target_id` only when the
/// target has the role's capability and is `ready`.
pub async fn bind(lore: &Lore, actor: &Actor, role: Role, target_id: &str) -> Result<Target> {
    let target = target(lore, target_id).await?;
    bind_in(&lore.db, actor, role, &target, lore.settings.providers.probe_max_age_days).await?;
    if role == Role::Embedding {
        lore.announce(crate::cluster::Change::Embedding).await;
    }
    Ok(target)
}

/// Binds `role` to `target` within `db` (a transaction of the caller's),
/// after [`check_bindable`].
pub(crate) async fn bind_in(
    db: &impl sea_orm::ConnectionTrait,
    actor: &Actor,
    role: Role,
    target: &Target,
    max_age_days: u32,
) -> Result<()> {
    check_bindable(role, target, max_age_days)?;
    role_binding::Entity::delete_by_id(role.key()).exec(db).await?;
    role_binding::ActiveModel {
        role: Set(role.key().to_owned()),
        target_id: Set(target.id.clone()),
        updated_by: Set(actor.label()),
        updated_at: Set(Utc::now()),
    }
    .insert(db)
    .await?;
    audit::record(
        db,
        actor,
        "provider.role_bound",
        Some(role.key()),
        serde_json::json!({"target": target.id}),
    )
    .await?;
    Ok(())
}

/// The role-binding validator's rule: `target` has the role's capability
/// and is `ready` now.
pub fn check_bindable(role: Role, target: &Target, max_age_days: u32) -> Result<()> {
    if target.capability != role.capability() {
        return Err(ProviderError::TargetNotReady {
            role: role.key(),
            model: target.model.clone(),
            state: TargetState::Ready,
            reason: format!(
                "it is a {} target; the {} role needs {}",
                target.capability.key(),
                role.key(),
                role.capability().key()
            ),
        }
        .into());
    }
    if let (state, Some(reason)) = state(target, max_age_days, Utc::now()) {
        return Err(ProviderError::TargetNotReady {
            role: role.key(),
            model: target.model.clone(),
            state,
            reason,
        }
        .into());
    }
    Ok(())
}

/// Unbinds a role (embedding falls back to the on-node CPU model).
pub async fn unbind(lore: &Lore, actor: &Actor, role: Role) -> Result<()> {
    unbind_in(&lore.db, actor, role).await?;
    if role == Role::Embedding {
        lore.announce(crate::cluster::Change::Embedding).await;
    }
    Ok(())
}

/// Unbinds `role` within `db` (a transaction of the caller's).
/// Unbinding the escalation role ends its chain: the further tiers go too.
pub(crate) async fn unbind_in(db: &impl sea_orm::ConnectionTrait, actor: &Actor, role: Role) -> Result<()> {
    role_binding::Entity::delete_by_id(role.key()).exec(db).await?;
    if role == Role::Escalation {
        escalation_tier::Entity::delete_many().exec(db).await?;
    }
    audit::record(db, actor, "provider.role_unbound", Some(role.key()), serde_json::json!({})).await?;
    Ok(())
}

/// A bound role's target with its account, ready to call.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub target: Target,
    pub account: Account,
    pub endpoint: Endpoint,
    pub state: TargetState,
}

/// The id of the target `role` is bound to now (`None`: unbound).
pub async fn bound_target_id(lore: &Lore, role: Role) -> Result<Option<String>> {
    Ok(role_binding::Entity::find_by_id(role.key()).one(&lore.db).await?.map(|binding| binding.target_id))
}

/// What `role` is bound to now, with the endpoint opened (`None`: unbound).
pub async fn resolve(lore: &Lore, role: Role) -> Result<Option<Resolved>> {
    let Some(target_id) = bound_target_id(lore, role).await? else {
        return Ok(None);
    };
    let Some(target) = model_target::Entity::find_by_id(target_id).one(&lore.db).await? else {
        return Ok(None);
    };
    resolved(lore, Target::decode(target)?).await.map(Some)
}

/// Target `id` as a role bound to it would call it: how a candidate that
/// stands for a binding is evaluated before the binding is made.
pub async fn resolve_target(lore: &Lore, id: &str) -> Result<Resolved> {
    resolved(lore, target(lore, id).await?).await
}

async fn resolved(lore: &Lore, target: Target) -> Result<Resolved> {
    let account = account(lore, &target.account_id).await?;
    let endpoint = endpoint_of(lore, &account)?;
    let (state, _) = state(&target, lore.settings.providers.probe_max_age_days, Utc::now());
    Ok(Resolved { target, account, endpoint, state })
}

/// The wizard's provider step and the Providers screen's quick add.
#[derive(Clone, Debug, Default)]
pub struct QuickAdd {
    pub kind: String,
    pub endpoint: Option<String>,
    pub api_key: Option<Secret>,
    pub model: String,
    pub name: Option<String>,
}

/// Stores the account, registers the generation target, probes it and binds
/// the generation role. The probe runs before anything is stored; the rows
/// are then written in one transaction, so a failure leaves nothing behind.
/// With golden questions the binding is judged first: `profile::quick_add`.
pub async fn quick_add(lore: &Lore, actor: &Actor, add: QuickAdd) -> Result<(Account, Target)> {
    add_generation_target(lore, actor, add, true).await
}

/// [`quick_add`], binding the generation role only when `bind` says so.
pub async fn add_generation_target(
    lore: &Lore,
    actor: &Actor,
    add: QuickAdd,
    bind: bool,
) -> Result<(Account, Target)> {
    let input = AccountInput {
        name: add.name.clone(),
        kind: add.kind.clone(),
        placement: None,
        endpoint: add.endpoint.clone(),
        api_key: add.api_key.clone(),
    };
    let (preset, endpoint, _) = resolve_account(&input)?;
    if preset.needs_key && non_blank(&add.api_key).is_none() {
        return Err(invalid(format!("{} needs an API key", preset.name)));
    }
    let model = match add.model.trim() {
        "" if preset.key == embedded::KIND => embedded::DEFAULT_MODEL.to_owned(),
        "" => return Err(invalid("name the model to answer with".into())),
        named => named.to_owned(),
    };
    // Probe first, on an unsaved target.
    let call = Endpoint {
        base: endpoint,
        api_key: non_blank(&add.api_key).map(|k| Secret::new(k.expose().trim())),
        protocol: preset.protocol,
    };
    let started = Instant::now();
    let unsaved = Target {
        id: String::new(),
        account_id: String::new(),
        capability: Capability::Generation,
        model: model.clone(),
        enabled: true,
        input_price_per_mtok: None,
        output_price_per_mtok: None,
        probe_status: ProbeStatus::Unprobed,
        probe_latency_ms: None,
        probe_error: None,
        probed_at: None,
        created_at: Utc::now(),
    };
    probe_call(lore, &call, &unsaved)
        .await
        .map_err(|error| ProviderError::ProbeFailed { model: model.clone(), error })?;
    let latency = started.elapsed().as_millis().min(i32::MAX as u128) as i32;

    let txn = crate::store::begin_write(&lore.db).await?;
    let account = create_account_in(lore, &txn, actor, input).await?;
    let target = register_target_in(
        &txn,
        actor,
        TargetInput {
            account_id: account.id.clone(),
            capability: Capability::Generation.key().into(),
            model,
            ..TargetInput::default()
        },
    )
    .await?;
    let mut row: model_target::ActiveModel = target.into();
    let probed = Probe { ok: true, latency_ms: latency as u64, error: None, at: Utc::now() };
    row.probe_status = Set(ProbeStatus::Ok.key().into());
    row.probe_latency_ms = Set(Some(latency));
    row.probed_at = Set(Some(probed.at));
    let target = Target::decode(row.update(&txn).await?)?;
    record_probe(&txn, &target.id, &probed).await?;
    if bind {
        bind_in(&txn, actor, Role::Generation, &target, lore.settings.providers.probe_max_age_days).await?;
    }
    txn.commit().await?;
    Ok((Account::decode(account)?, target))
}

impl From<ProviderError> for Error {
    fn from(err: ProviderError) -> Self {
        Error::Provider(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(enabled: bool, status: ProbeStatus, probed_days_ago: Option<i64>) -> Target {
        Target {
            id: "t".into(),
            account_id: "a".into(),
            capability: Capability::Generation,
            model: "m".into(),
            enabled,
            input_price_per_mtok: None,
            output_price_per_mtok: None,
            probe_status: status,
            probe_latency_ms: None,
            probe_error: Some("connection refused".into()),
            probed_at: probed_days_ago.map(|d| Utc::now() - chrono::Duration::days(d)),
            created_at: Utc::now(),
        }
    }

    #[test]
    fn target_states_follow_the_probe() {
        let now = Utc::now();
        assert_eq!(state(&target(true, ProbeStatus::Ok, Some(1)), 7, now).0, TargetState::Ready);
        assert_eq!(state(&target(true, ProbeStatus::Ok, Some(8)), 7, now).0, TargetState::Stale);
        assert_eq!(state(&target(false, ProbeStatus::Ok, Some(1)), 7, now).0, TargetState::Disabled);
        assert_eq!(state(&target(true, ProbeStatus::Unprobed, None), 7, now).0, TargetState::Unprobed);
        let (blocked, reason) = state(&target(true, ProbeStatus::Failed, Some(0)), 7, now);
        assert_eq!(blocked, TargetState::Blocked);
        assert!(reason.unwrap().contains("connection refused"));
    }

    #[test]
    fn presets_fix_placement_and_custom_infers_it() {
        let hosted =
            AccountInput { kind: "openai".into(), placement: Some("on_node".into()), ..Default::default() };
        assert!(resolve_account(&hosted).is_err());
        let local = AccountInput {
            kind: "custom".into(),
            endpoint: Some("http://127.0.0.1:9/v1/".into()),
            ..Default::default()
        };
        let (_, endpoint, placement) = resolve_account(&local).unwrap();
        assert_eq!((endpoint.as_str(), placement), ("http://127.0.0.1:9/v1", Placement::OnNode));
        let remote = AccountInput {
            kind: "custom".into(),
            endpoint: Some("https://llm.example.com/v1".into()),
            ..Default::default()
        };
        assert_eq!(resolve_account(&remote).unwrap().2, Placement::OffNode);
        let no_endpoint = AccountInput { kind: "custom".into(), ..Default::default() };
        assert!(resolve_account(&no_endpoint).is_err());
        let with_credentials = AccountInput {
            kind: "custom".into(),
            endpoint: Some("https://u:p@x.example/v1".into()),
            ..Default::default()
        };
        assert!(resolve_account(&with_credentials).is_err());
    }
}
