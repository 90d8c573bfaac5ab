//! The escalation chain's further tiers, tried in order after the
//! escalation role's target while no answer was grounded.

use super::*;

/// The most escalation tiers a chain may have (tier 1 included).
pub const MAX_ESCALATION_TIERS: usize = 4;

/// The escalation chain's further tiers, tier 2 first (tier 1 is the
/// escalation role's binding).
pub async fn further_tiers(lore: &Corpus) -> Result<Vec<Target>> {
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
pub async fn resolve_further_tiers(lore: &Corpus) -> Result<Vec<Resolved>> {
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
pub async fn set_further_tiers(lore: &Corpus, actor: &Actor, target_ids: &[String]) -> Result<Vec<Target>> {
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
