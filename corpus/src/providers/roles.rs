//! Roles: which target does which job (generation, escalation, embedding,
//! rerank); the binding validator and the resolution of a role to a
//! callable target.

use super::*;

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

/// A role and what it is bound to.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    pub role: Role,
    pub target: Option<Target>,
    /// The bound target's state now (`None` when unbound).
    pub state: Option<(TargetState, Option<String>)>,
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

pub async fn overview(lore: &Corpus) -> Result<Overview> {
    let accounts = accounts(lore).await?;
    let targets = targets(lore).await?.into_iter().map(|t| TargetStatus::of(lore, t)).collect();
    let bindings = bindings(lore).await?;
    let further_tiers = further_tiers(lore).await?.into_iter().map(|t| t.id).collect();
    Ok(Overview { presets: &PRESETS, accounts, targets, bindings, further_tiers })
}

pub async fn bindings(lore: &Corpus) -> Result<Vec<Binding>> {
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
pub async fn bind(lore: &Corpus, actor: &Actor, role: Role, target_id: &str) -> Result<Target> {
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
pub async fn unbind(lore: &Corpus, actor: &Actor, role: Role) -> Result<()> {
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
pub async fn bound_target_id(lore: &Corpus, role: Role) -> Result<Option<String>> {
    Ok(role_binding::Entity::find_by_id(role.key()).one(&lore.db).await?.map(|binding| binding.target_id))
}

/// What `role` is bound to now, with the endpoint opened (`None`: unbound).
pub async fn resolve(lore: &Corpus, role: Role) -> Result<Option<Resolved>> {
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
pub async fn resolve_target(lore: &Corpus, id: &str) -> Result<Resolved> {
    resolved(lore, target(lore, id).await?).await
}

pub(super) async fn resolved(lore: &Corpus, target: Target) -> Result<Resolved> {
    let account = account(lore, &target.account_id).await?;
    let endpoint = endpoint_of(lore, &account)?;
    let (state, _) = state(&target, lore.settings.providers.probe_max_age_days, Utc::now());
    Ok(Resolved { target, account, endpoint, state })
}
