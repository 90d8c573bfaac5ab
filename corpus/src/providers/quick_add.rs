//! An account, its generation target and the probe in one action, for
//! `profile::quick_add` (the quick add of every surface).

use super::*;

/// The wizard's provider step and the Providers screen's quick add.
#[derive(Clone, Debug, Default)]
pub struct QuickAdd {
    pub kind: String,
    pub endpoint: Option<String>,
    pub api_key: Option<Secret>,
    pub model: String,
    pub name: Option<String>,
}

/// Stores the account, registers the generation target, probes it and, when
/// `bind` says so, binds the generation role. The probe runs before anything
/// is stored; the rows are then written in one transaction, so a failure
/// leaves nothing behind. Called through `profile::quick_add`, which binds
/// here only when no golden question has to judge the binding first.
pub async fn add_generation_target(
    lore: &Corpus,
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
