//! A model bound to a role through the save gate: the candidate is the
//! active snapshot naming the binding, judged with that model in the role,
//! and the binding is made in the transaction that activates it; and the
//! quick add of every surface.

use super::*;

/// The model binding a version stands for: its snapshot is its base's,
/// and activating it binds `role` to the target (or, for the embedding
/// role, unbinds it: back to the on-node model).
#[derive(Clone, Debug, PartialEq)]
pub struct Rebinding {
    pub role: Role,
    /// `None`: the role is unbound.
    pub target_id: Option<String>,
    /// The target's model when the version was stored (for display).
    pub model: String,
    /// For the embedding role: the chunk table of the shadow index it was
    /// judged on, which its activation adopts (see [`shadow`]).
    pub index: Option<String>,
}

impl Rebinding {
    pub(super) fn stored(&self) -> serde_json::Value {
        let mut stored =
            serde_json::json!({"role": self.role.key(), "target_id": self.target_id, "model": self.model});
        if let (Some(index), Some(object)) = (&self.index, stored.as_object_mut()) {
            object.insert("index".into(), serde_json::json!(index));
        }
        stored
    }

    pub(super) fn read(value: &serde_json::Value) -> Result<Self> {
        let field = |name: &str| value.get(name).and_then(serde_json::Value::as_str);
        let target_id = match value.get("target_id") {
            Some(serde_json::Value::Null) => Some(None),
            Some(serde_json::Value::String(id)) => Some(Some(id.clone())),
            _ => None,
        };
        match (field("role").map(Role::parse), target_id, field("model")) {
            (Some(Ok(role)), Some(target_id), Some(model)) => Ok(Rebinding {
                role,
                target_id,
                model: model.to_owned(),
                index: field("index").map(str::to_owned),
            }),
            _ => Err(Error::Internal(format!("a version's binding is unreadable: {value}"))),
        }
    }
}

/// A version's binding, checked before an activation changes anything.
pub(super) struct Bindable {
    pub(super) role: Role,
    /// `None`: the activation unbinds the role.
    pub(super) target: Option<Target>,
    /// For the embedding role: the candidate's shadow index, which becomes
    /// the active one with the binding.
    pub(super) adoption: Option<shadow::Adoption>,
}

impl Bindable {
    /// Binds the role (and adopts the shadow index) in the activation's transaction.
    pub(super) async fn make_in(
        &self,
        txn: &impl ConnectionTrait,
        lore: &Corpus,
        actor: &Actor,
    ) -> Result<()> {
        match &self.target {
            Some(target) => {
                providers::bind_in(txn, actor, self.role, target, lore.settings.providers.probe_max_age_days)
                    .await?
            }
            None => providers::unbind_in(txn, actor, self.role).await?,
        }
        if let Some(adoption) = &self.adoption {
            shadow::adopt_in(txn, &actor.label(), adoption).await?;
        }
        Ok(())
    }

    /// After the activation committed.
    pub(super) async fn made(&self, lore: &Corpus) {
        if self.adoption.is_some() {
            if let Err(err) = shadow::adopted(lore).await {
                tracing::warn!(error = %err, "the new embedding model serves, but its full reindex was not queued");
            }
        } else if self.role == Role::Embedding {
            lore.announce(crate::cluster::Change::Embedding).await;
        }
    }
}

/// The target a version's binding names, checked bindable now, with the
/// shadow index an embedding binding adopts.
pub(super) async fn bindable(lore: &Corpus, binding: &Rebinding) -> Result<Bindable> {
    let target = match &binding.target_id {
        Some(id) => {
            let target = providers::target(lore, id).await?;
            providers::check_bindable(binding.role, &target, lore.settings.providers.probe_max_age_days)?;
            Some(target)
        }
        None => None,
    };
    let adoption = match binding.role {
        Role::Embedding if !adopted_already(lore, binding).await? => {
            Some(shadow::adoptable(lore, target.as_ref(), binding.index.as_deref(), &binding.model).await?)
        }
        _ => None,
    };
    Ok(Bindable { role: binding.role, target, adoption })
}

/// Whether an embedding binding's shadow index is the active one and its
/// model the bound one (a version restored after another one that changed
/// neither): there is nothing to adopt, and no reindex to queue.
pub(super) async fn adopted_already(lore: &Corpus, binding: &Rebinding) -> Result<bool> {
    let bound = providers::bound_target_id(lore, Role::Embedding).await?;
    let active_table = shadow::active_table(&lore.db).await?;
    Ok(bound == binding.target_id && binding.index.as_deref() == Some(active_table.as_str()))
}

/// What binding a model came to.
#[derive(Clone, Debug)]
pub enum Rebound {
    /// The role is bound as asked; `version` is the candidate that passed
    /// the eval gate and now serves (`None`: the gate did not apply).
    Bound { version: Option<Version> },
    /// The eval gate kept the candidate inactive: the role is unchanged
    /// until the candidate is activated anyway (see [`restore`]).
    KeptInactive { version: Version },
}

/// Binds `role` to target `target_id`, or unbinds it (`None`). With golden
/// questions and a profile, binding a generation or escalation model, and
/// binding or unbinding the embedding model, is a candidate version judged
/// by the save gate with that model in the role: made only if it passes
/// (or when the candidate is activated anyway). An embedding model
/// (a target's, or the on-node one when unbinding) is judged on a shadow
/// index (see [`shadow`]) built first, and only when there is an indexed
/// corpus to judge it on. The rerank role, unbinding the others, and every
/// role before there are golden questions, change at once as
/// `providers::bind` and `providers::unbind` do.
pub async fn bind_model(
    lore: &Corpus,
    actor: &Actor,
    role: Role,
    target_id: Option<&str>,
) -> Result<Rebound> {
    let gated = match (role, target_id) {
        (Role::Generation | Role::Escalation, Some(_)) => true,
        (Role::Embedding, _) => shadow::corpus_indexed(lore).await?,
        _ => false,
    } && providers::bound_target_id(lore, role).await?.as_deref() != target_id
        && lore.save_gate.applies(lore).await?;
    let serving = if gated { active(lore).await? } else { None };
    let Some(serving) = serving else {
        match target_id {
            Some(id) => {
                providers::bind(lore, actor, role, id).await?;
            }
            None => providers::unbind(lore, actor, role).await?,
        }
        return Ok(Rebound::Bound { version: None });
    };
    let target = match target_id {
        Some(id) => {
            let target = providers::target(lore, id).await?;
            // Refused before anything is stored, as an ungated binding would be.
            providers::check_bindable(role, &target, lore.settings.providers.probe_max_age_days)?;
            Some(target)
        }
        None => None,
    };
    let note = match &target {
        Some(target) => format!("Binds the {} role to {}", role.key(), target.model),
        None => format!(
            "Returns the {} role to the on-node model ({})",
            role.key(),
            lore.settings.models.embedding
        ),
    };
    let first = if role == Role::Embedding { Step::Shadow } else { Step::Candidate };
    let (lore, actor) = (lore.clone(), actor.clone());
    let version = to_the_end(async move {
        let progress = judging::Tracker::start(&lore.db, &note, &actor.label(), first).await?;
        let version = judge_binding(&lore, &actor, serving, role, target.as_ref(), note, &progress).await;
        progress.finish().await;
        version
    })
    .await?;
    Ok(if version.active {
        Rebound::Bound { version: Some(version) }
    } else {
        Rebound::KeptInactive { version }
    })
}

/// A gated binding of `role` to `target` (`None`: unbinding it) as a
/// candidate version based on `serving`: the shadow index first for an
/// embedding model, then the gate.
pub(super) async fn judge_binding(
    lore: &Corpus,
    actor: &Actor,
    serving: Version,
    role: Role,
    target: Option<&Target>,
    note: String,
    progress: &judging::Tracker,
) -> Result<Version> {
    let index = match role {
        Role::Embedding => {
            let bound = match target {
                Some(target) => Some(providers::resolve_target(lore, &target.id).await?),
                None => None,
            };
            let report = |done, total| progress.report(Step::Shadow, done, total);
            Some(shadow::build(lore, bound.as_ref(), &report).await?.table.clone())
        }
        _ => None,
    };
    let base_row = profile_version::Entity::find_by_id(serving.id.clone())
        .one(&lore.db)
        .await?
        .ok_or(ProfileError::UnknownVersion(serving.version))?;
    let expected = expected_active_id(lore, &base_row).await?;
    let binding = Rebinding {
        role,
        target_id: target.map(|t| t.id.clone()),
        model: target.map_or_else(|| lore.settings.models.embedding.clone(), |t| t.model.clone()),
        index,
    };
    let candidate = Candidate { snapshot: serving.snapshot, note: Some(note), binding: Some(binding) };
    save_gated(lore, actor, serving.version, expected, candidate, progress).await
}

/// The quick add (account, generation target, probe) whose generation
/// binding goes through [`bind_model`]: judged when golden questions exist.
pub async fn quick_add(lore: &Corpus, actor: &Actor, add: QuickAdd) -> Result<(Account, Target, Rebound)> {
    let gated = lore.save_gate.applies(lore).await? && active(lore).await?.is_some();
    if !gated {
        let (account, target) = providers::add_generation_target(lore, actor, add, true).await?;
        return Ok((account, target, Rebound::Bound { version: None }));
    }
    let (account, target) = providers::add_generation_target(lore, actor, add, false).await?;
    let rebound = bind_model(lore, actor, Role::Generation, Some(&target.id)).await?;
    Ok((account, target, rebound))
}
