//! The Providers screen and the wizard's provider step: provider accounts,
//! model targets, execution roles and quick add. API keys go in, never out.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What `Debug` shows instead of an API key.
const REDACTED: &str = "[redacted]";

/// A provider type the console offers (`GET /admin/providers/`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProviderPresetView {
    pub key: String,
    pub name: String,
    /// `None` for custom.
    pub endpoint: Option<String>,
    /// `on_node`, `off_node`, or `None` (custom: either).
    pub placement: Option<String>,
    pub needs_key: bool,
    /// The wire protocol: `openai` (OpenAI-compatible), `anthropic` or
    /// `gemini`.
    pub protocol: String,
    /// The capabilities its targets may have (`generation`, `embedding`,
    /// `rerank`).
    pub capabilities: Vec<String>,
}

/// A provider account. The API key itself never crosses the wire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccountView {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub placement: String,
    pub endpoint: String,
    /// Whether a key is stored (its value is never sent).
    pub has_api_key: bool,
    pub created_at: String,
    pub updated_at: String,
}

/// A model target with its probe state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetView {
    pub id: String,
    pub account_id: String,
    pub capability: String,
    pub model: String,
    pub enabled: bool,
    /// `ready`, `disabled`, `unprobed`, `blocked` or `stale`.
    pub state: String,
    /// Why it is not ready (`None` when ready).
    pub state_reason: Option<String>,
    pub probe_latency_ms: Option<i64>,
    pub probe_error: Option<String>,
    pub probed_at: Option<String>,
    pub input_price_per_mtok: Option<f64>,
    pub output_price_per_mtok: Option<f64>,
}

/// An execution role and its binding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoleView {
    /// `generation`, `escalation`, `embedding` or `rerank`.
    pub role: String,
    pub capability: String,
    pub target_id: Option<String>,
    pub model: Option<String>,
    /// The bound target's state, or `None` when unbound.
    pub state: Option<String>,
    pub state_reason: Option<String>,
    /// What an unbound role means.
    pub unbound_means: String,
}

/// The Providers screen in one response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProvidersOverview {
    pub presets: Vec<ProviderPresetView>,
    pub accounts: Vec<AccountView>,
    pub targets: Vec<TargetView>,
    pub roles: Vec<RoleView>,
    /// The escalation chain's further tiers (target ids, tier 2 first): tried
    /// in order after the escalation role's target (tier 1) was not grounded.
    #[serde(default)]
    pub further_tiers: Vec<String>,
    /// After a binding the eval gate judged (golden questions exist): what
    /// it decided. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<BindingVerdictView>,
}

/// The eval gate's verdict on binding a model to the generation,
/// escalation or embedding role, or on unbinding the embedding role: the
/// candidate profile version that stands for it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BindingVerdictView {
    pub version: i64,
    pub role: String,
    /// The model judged (when unbinding: the on-node model).
    pub model: String,
    /// The candidate unbinds the role (the on-node model embeds again).
    #[serde(default)]
    pub unbinds: bool,
    /// `true`: it passed and serves. `false`: kept inactive, the role
    /// unchanged until the version is activated anyway on the Prompt screen.
    pub bound: bool,
    /// Why it was kept inactive (empty when bound).
    pub regressions: Vec<String>,
}

impl BindingVerdictView {
    /// One sentence for the console's flash and the CLI.
    pub fn message(&self) -> String {
        let change = if self.unbinds {
            format!("the {} role is unbound and the on-node model {} embeds again", self.role, self.model)
        } else {
            format!("the {} role is bound to it", self.role)
        };
        if self.bound {
            let index = if self.role == "embedding" {
                " Its index, built beside the active one for the evaluation, serves now; a full reindex chunks the corpus again at its sizes."
            } else {
                ""
            };
            format!(
                "{} answers the golden questions no worse than the active version: {change} (version {} serves).{index}",
                self.model, self.version
            )
        } else {
            let which = if self.unbinds { "unbinds" } else { "binds" };
            format!(
                "The golden questions went worse with {} ({}), so the {} role was not changed: version {}, which {which} it, was kept inactive. Compare it on the Prompt screen, where it can be activated anyway.",
                self.model,
                self.regressions.join("; "),
                self.role,
                self.version
            )
        }
    }
}

/// The result of a quick add.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuickAddResult {
    pub account: AccountView,
    pub target: TargetView,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<BindingVerdictView>,
}

/// `POST /admin/providers/accounts` and `PUT /admin/providers/accounts/{id}`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Blank or absent on edit: keep the stored key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
}

/// Never prints the API key.
impl fmt::Debug for AccountRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccountRequest")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("placement", &self.placement)
            .field("endpoint", &self.endpoint)
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .finish()
    }
}

/// `POST /admin/targets`: another model of an account, for one capability.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetRequest {
    pub account_id: String,
    pub capability: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_price_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_price_per_mtok: Option<f64>,
}

/// `PATCH /admin/targets/{id}`: an absent field keeps its value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// A price key that is absent keeps the price; `null` clears it.
    #[serde(default, deserialize_with = "crate::wire::present", skip_serializing_if = "Option::is_none")]
    pub input_price_per_mtok: Option<Option<f64>>,
    #[serde(default, deserialize_with = "crate::wire::present", skip_serializing_if = "Option::is_none")]
    pub output_price_per_mtok: Option<Option<f64>>,
}

/// `PUT /admin/roles/{role}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BindRequest {
    /// `None` unbinds the role.
    pub target_id: Option<String>,
}

/// `PUT /admin/providers/escalation-tiers`: the escalation chain's further
/// tiers, in the order they are tried after the escalation role's target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TiersRequest {
    /// Target ids, tier 2 first; empty leaves the chain at one tier.
    pub target_ids: Vec<String>,
}

/// One probe of a target (`GET /admin/targets/{id}/probes`, newest first).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeView {
    pub ok: bool,
    pub latency_ms: u64,
    /// Why it failed (the provider's text, scrubbed of keys).
    pub error: Option<String>,
    pub probed_at: String,
}

/// `POST /admin/providers/quick-add` and the wizard's
/// `POST /admin/setup/provider`: account, target, probe and generation role
/// in one action.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuickAddRequest {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Never prints the API key.
impl fmt::Debug for QuickAddRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuickAddRequest")
            .field("kind", &self.kind)
            .field("endpoint", &self.endpoint)
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .field("model", &self.model)
            .field("name", &self.name)
            .finish()
    }
}

#[cfg(feature = "ssr")]
mod from_engine {
    use super::*;
    use crate::wire::time;
    use engine::settings::Secret;

    impl From<engine::providers::Probe> for ProbeView {
        fn from(probe: engine::providers::Probe) -> Self {
            Self { ok: probe.ok, latency_ms: probe.latency_ms, error: probe.error, probed_at: time(probe.at) }
        }
    }

    impl From<engine::providers::Account> for AccountView {
        fn from(account: engine::providers::Account) -> Self {
            Self {
                has_api_key: account.has_api_key(),
                id: account.id,
                name: account.name,
                kind: account.kind,
                placement: account.placement.key().to_owned(),
                endpoint: account.endpoint,
                created_at: time(account.created_at),
                updated_at: time(account.updated_at),
            }
        }
    }

    impl From<engine::providers::TargetStatus> for TargetView {
        fn from(status: engine::providers::TargetStatus) -> Self {
            let target = status.target;
            Self {
                id: target.id,
                account_id: target.account_id,
                capability: target.capability.key().to_owned(),
                model: target.model,
                enabled: target.enabled,
                state: status.state.key().to_owned(),
                state_reason: status.reason,
                probe_latency_ms: target.probe_latency_ms.map(i64::from),
                probe_error: target.probe_error,
                probed_at: target.probed_at.map(time),
                input_price_per_mtok: target.input_price_per_mtok,
                output_price_per_mtok: target.output_price_per_mtok,
            }
        }
    }

    impl From<engine::providers::Overview> for ProvidersOverview {
        fn from(overview: engine::providers::Overview) -> Self {
            let presets = overview
                .presets
                .iter()
                .map(|p| ProviderPresetView {
                    key: p.key.to_owned(),
                    name: p.name.to_owned(),
                    endpoint: p.endpoint.map(str::to_owned),
                    placement: p.placement.map(|pl| pl.key().to_owned()),
                    needs_key: p.needs_key,
                    protocol: p.protocol.key().to_owned(),
                    capabilities: p.capabilities.iter().map(|c| c.key().to_owned()).collect(),
                })
                .collect();
            let roles = overview
                .bindings
                .into_iter()
                .map(|binding| RoleView {
                    role: binding.role.key().to_owned(),
                    capability: binding.role.capability().key().to_owned(),
                    target_id: binding.target.as_ref().map(|t| t.id.clone()),
                    model: binding.target.as_ref().map(|t| t.model.clone()),
                    state: binding.state.as_ref().map(|(s, _)| s.key().to_owned()),
                    state_reason: binding.state.and_then(|(_, reason)| reason),
                    unbound_means: binding.role.unbound_means().to_owned(),
                })
                .collect();
            Self {
                presets,
                accounts: overview.accounts.into_iter().map(AccountView::from).collect(),
                targets: overview.targets.into_iter().map(TargetView::from).collect(),
                roles,
                further_tiers: overview.further_tiers,
                verdict: None,
            }
        }
    }

    impl BindingVerdictView {
        /// The gate's verdict, when the gate judged the binding.
        pub fn of(rebound: &engine::profile::Rebound) -> Option<Self> {
            use engine::profile::Rebound;
            let (version, bound) = match rebound {
                Rebound::Bound { version: None } => return None,
                Rebound::Bound { version: Some(version) } => (version, true),
                Rebound::KeptInactive { version } => (version, false),
            };
            let binding = version.binding.as_ref()?;
            Some(Self {
                version: version.version.into(),
                role: binding.role.key().to_owned(),
                model: binding.model.clone(),
                unbinds: binding.target_id.is_none(),
                bound,
                regressions: engine::profile::gate_refusal(version.evals.as_ref())
                    .map(|(_, regressions)| regressions)
                    .unwrap_or_default(),
            })
        }
    }

    impl From<AccountRequest> for engine::providers::AccountInput {
        fn from(r: AccountRequest) -> Self {
            Self {
                name: r.name,
                kind: r.kind,
                placement: r.placement,
                endpoint: r.endpoint,
                api_key: r.api_key.map(Secret::new),
            }
        }
    }

    impl From<TargetRequest> for engine::providers::TargetInput {
        fn from(r: TargetRequest) -> Self {
            Self {
                account_id: r.account_id,
                capability: r.capability,
                model: r.model,
                input_price_per_mtok: r.input_price_per_mtok,
                output_price_per_mtok: r.output_price_per_mtok,
            }
        }
    }

    impl From<TargetPatch> for engine::providers::TargetChange {
        fn from(patch: TargetPatch) -> Self {
            Self {
                enabled: patch.enabled,
                input_price_per_mtok: patch.input_price_per_mtok,
                output_price_per_mtok: patch.output_price_per_mtok,
            }
        }
    }

    impl From<QuickAddRequest> for engine::providers::QuickAdd {
        fn from(r: QuickAddRequest) -> Self {
            Self {
                kind: r.kind,
                endpoint: r.endpoint,
                api_key: r.api_key.map(Secret::new),
                model: r.model,
                name: r.name,
            }
        }
    }
}
