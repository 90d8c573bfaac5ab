//! Admin-tunable settings stored in `cluster_setting` (a missing key means
//! the compiled default). This issue brings chunking; retrieval weights,
//! cache gates and the rest of Advanced tuning join them.
//!
//! The chunking rule: changing the chunking of an indexed corpus re-embeds
//! everything, so it is refused unless the request acknowledges the reindex;
//! with the acknowledgement the change persists and a full reindex is queued.

use chrono::Utc;
use entity::{cluster_setting, index_job};
use sea_orm::{ActiveModelTrait, EntityTrait, Set, TransactionTrait};

use crate::audit::{self, Actor};
use crate::chunk::ChunkingParams;
use crate::ingest::IngestError;
use crate::{Error, Lore, Result};

const CHUNKING: &str = "chunking";

/// The effective chunking: the stored value, else the default.
pub async fn chunking(lore: &Lore) -> Result<ChunkingParams> {
    Ok(stored_chunking(lore).await?.unwrap_or_default())
}

/// The stored chunking, if an admin set one.
pub async fn stored_chunking(lore: &Lore) -> Result<Option<ChunkingParams>> {
    let row = cluster_setting::Entity::find_by_id(CHUNKING.to_owned()).one(&lore.db).await?;
    Ok(row.and_then(|row| serde_json::from_value(row.value).ok()))
}

/// What a chunking change did.
#[derive(Debug)]
pub enum ChunkingChange {
    /// Same as the effective value: nothing to do.
    Unchanged,
    /// Stored; nothing was indexed, so no reindex is needed.
    Stored,
    /// Stored, and this full reindex was queued.
    Reindexing(Box<index_job::Model>),
}

/// Changes the chunking (see the module docs for the acknowledgement rule).
pub async fn set_chunking(
    lore: &Lore,
    actor: &Actor,
    params: ChunkingParams,
    acknowledge_reindex: bool,
) -> Result<ChunkingChange> {
    params.validate().map_err(IngestError::InvalidTuning)?;
    if chunking(lore).await? == params {
        return Ok(ChunkingChange::Unchanged);
    }
    let indexed = lore.chunks().await?.count(None).await.map_err(IngestError::Index)?;
    if indexed > 0 && !acknowledge_reindex {
        return Err(IngestError::ReindexAcknowledgementRequired.into());
    }
    let value = serde_json::to_value(params).map_err(|err| Error::Internal(err.to_string()))?;
    let txn = lore.db.begin().await?;
    let row = cluster_setting::ActiveModel {
        key: Set(CHUNKING.to_owned()),
        value: Set(value.clone()),
        updated_at: Set(Utc::now()),
        updated_by: Set(actor_name(actor)),
    };
    if cluster_setting::Entity::find_by_id(CHUNKING.to_owned()).one(&txn).await?.is_some() {
        row.update(&txn).await?;
    } else {
        row.insert(&txn).await?;
    }
    audit::record(&txn, actor, "tuning.chunking", None, value).await?;
    txn.commit().await?;
    if indexed > 0 {
        let job = crate::ingest::jobs::enqueue(lore, None, true, "tuning").await?;
        return Ok(ChunkingChange::Reindexing(Box::new(job)));
    }
    Ok(ChunkingChange::Stored)
}

fn actor_name(actor: &Actor) -> String {
    match actor {
        Actor::Account(id) => id.clone(),
        Actor::System => "system".into(),
    }
}
