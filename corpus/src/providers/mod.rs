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
//! - [`add_generation_target`] stores an account, registers a generation
//!   target, probes it and (when asked) binds the generation role in one
//!   action; on any failure nothing it made remains. The quick add of the
//!   wizard, the Providers screen and the CLI is `profile::quick_add`,
//!   which decides whether the binding is judged by golden questions first.
//! - What a provider replies is untrusted: [`client`] scrubs it with
//!   [`redact::scrub`] (the account's key, credential-like values, control
//!   characters, length) before it becomes an error, so probe results,
//!   stored `probe_error`s, log lines and responses never carry a key.

mod accounts;
pub mod client;
pub mod embedded;
pub mod gguf;
pub mod hosted;
mod presets;
mod probes;
mod quick_add;
pub mod redact;
pub mod repetition;
mod roles;
pub mod sse;
mod targets;
mod tiers;

pub use accounts::*;
pub use presets::*;
pub use probes::*;
pub use quick_add::*;
pub use roles::*;
pub use targets::*;
pub use tiers::*;

use std::time::Instant;

use chrono::{DateTime, Utc};
use entity::{escalation_tier, model_target, provider_account, role_binding, target_probe};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};

use crate::audit::{self, Actor};
use crate::settings::Secret;
use crate::{Corpus, Error, Result};
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

fn invalid(message: String) -> Error {
    ProviderError::Invalid(message).into()
}

/// The stored row of entity `E` with this id, or the error `missing` makes
/// of the id.
async fn stored<E>(lore: &Corpus, id: &str, missing: fn(String) -> ProviderError) -> Result<E::Model>
where
    E: EntityTrait,
    <E::PrimaryKey as sea_orm::PrimaryKeyTrait>::ValueType: From<String>,
{
    E::find_by_id(id.to_owned()).one(&lore.db).await?.ok_or_else(|| missing(id.to_owned()).into())
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
