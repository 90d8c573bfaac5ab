//! The corpus fingerprint: which embedding model (and dimensions) and which
//! chunking produced the indexed vectors. A full index stamps it; changing the
//! embedding model clears it. Retrieval fails closed while the configured
//! model differs from the stamp, or while chunks exist without a stamp:
//! comparing a query embedded by one model with chunks embedded by another
//! returns confident nonsense.

use entity::cluster_state;
use sea_orm::{ActiveModelTrait, ConnectionTrait, Set};
use serde::{Deserialize, Serialize};

use crate::chunk::ChunkingParams;
use crate::Result;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub embedding_model: String,
    pub dimensions: usize,
    pub chunking: ChunkingParams,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetrievalState {
    Operating,
    /// Why retrieval refuses until a full reindex.
    FailingClosed(String),
}

/// Decides whether retrieval may run.
pub fn retrieval_state(
    configured_model: &str,
    stamped: Option<&Fingerprint>,
    indexed_chunks: usize,
) -> RetrievalState {
    match stamped {
        Some(stamp) if stamp.embedding_model != configured_model => RetrievalState::FailingClosed(format!(
            "the corpus was embedded with {} but {configured_model} is configured; a full reindex is needed",
            stamp.embedding_model
        )),
        None if indexed_chunks > 0 => RetrievalState::FailingClosed(
            "the embedding model changed since the corpus was indexed; a full reindex is needed".into(),
        ),
        _ => RetrievalState::Operating,
    }
}

/// The stamped fingerprint, if any.
pub async fn stamped(db: &impl ConnectionTrait) -> Result<Option<Fingerprint>> {
    let state = crate::store::ensure_cluster_in(db).await?;
    Ok(state.corpus_fingerprint.and_then(|value| serde_json::from_value(value).ok()))
}

/// Stamps (or clears, with `None`) the fingerprint.
pub async fn set(db: &impl ConnectionTrait, fingerprint: Option<&Fingerprint>) -> Result<()> {
    let state = crate::store::ensure_cluster_in(db).await?;
    let mut row: cluster_state::ActiveModel = state.into();
    row.corpus_fingerprint = Set(fingerprint
        .map(serde_json::to_value)
        .transpose()
        .map_err(|err| crate::Error::Internal(format!("serialising the corpus fingerprint: {err}")))?);
    row.update(db).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(model: &str) -> Fingerprint {
        Fingerprint { embedding_model: model.into(), dimensions: 384, chunking: ChunkingParams::default() }
    }

    #[test]
    fn retrieval_fails_closed_on_a_model_mismatch_or_a_cleared_stamp() {
        let model = "sentence-transformers/all-MiniLM-L6-v2";
        assert_eq!(retrieval_state(model, Some(&stamp(model)), 10), RetrievalState::Operating);
        assert_eq!(retrieval_state(model, None, 0), RetrievalState::Operating, "nothing indexed yet");
        assert!(matches!(
            retrieval_state("other/model", Some(&stamp(model)), 10),
            RetrievalState::FailingClosed(why) if why.contains("other/model")
        ));
        assert!(matches!(retrieval_state(model, None, 10), RetrievalState::FailingClosed(_)));
    }
}
