//! Probes: a minimal real call to a target, its outcome recorded on the
//! target and kept in its history.

use super::*;

/// The outcome of one probe, as recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub ok: bool,
    pub latency_ms: u64,
    pub error: Option<String>,
    pub at: DateTime<Utc>,
}

/// The minimal real call for the target's capability.
pub(super) async fn probe_call(lore: &Corpus, endpoint: &Endpoint, target: &Target) -> Result<(), CallError> {
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
            chat(lore, endpoint, &target.model, &probe, 8, 0.0, client::Follow::default()).await?;
            Ok(())
        }
    }
}

/// Probes a target with a minimal real call and records the result, latency
/// and time (and the error, when it failed; the client has already scrubbed
/// the provider's part of it).
pub async fn probe(lore: &Corpus, actor: &Actor, id: &str) -> Result<(Target, Probe)> {
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
pub(super) async fn record_probe(
    db: &impl sea_orm::ConnectionTrait,
    target_id: &str,
    probe: &Probe,
) -> Result<()> {
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
pub async fn probe_history(lore: &Corpus, id: &str) -> Result<Vec<Probe>> {
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
