//! A provider's embedding target as an [`Embedder`]: what indexing and
//! retrieval use while the embedding role is bound (see `providers`).
//!
//! The provider's tokenizer is not available here, so chunk sizes are
//! counted with an estimate (about four characters per token), which errs on
//! the side of shorter chunks for prose. The vectors come back from the
//! provider and are L2-normalised here, as the local model's are.

use async_trait::async_trait;

use super::{EmbedError, Embedder};
use crate::providers::client::{Client, Endpoint};

/// Texts sent per embeddings request.
const BATCH: usize = 32;
/// The window assumed for a provider's model (common for embedding models);
/// the default chunk size is well inside it.
const ASSUMED_MAX_TOKENS: usize = 512;

pub struct RemoteEmbedder {
    /// The name stamped into the corpus fingerprint (see [`identity`]).
    identity: String,
    /// The model name the provider knows.
    target_model: String,
    dimensions: usize,
    client: Client,
    endpoint: Endpoint,
}

/// How a provider target is named in the corpus fingerprint: the model with
/// the account it is reached through, so the same model name on another
/// server counts as another model.
pub fn identity(account_id: &str, model: &str) -> String {
    format!("{model} (provider account {account_id})")
}

impl RemoteEmbedder {
    /// Connects to the target and learns its dimensions with one real call.
    pub async fn connect(
        client: Client,
        endpoint: Endpoint,
        account_id: &str,
        model: &str,
    ) -> Result<Self, EmbedError> {
        let mut embedder = Self {
            identity: identity(account_id, model),
            target_model: model.to_owned(),
            dimensions: 0,
            client,
            endpoint,
        };
        let probe = embedder.call(&["dimensions".to_owned()]).await?;
        embedder.dimensions = probe.first().map(Vec::len).unwrap_or(0);
        if embedder.dimensions == 0 {
            return Err(EmbedError::Model(format!("{model} returned an empty embedding")));
        }
        Ok(embedder)
    }

    async fn call(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let vectors = self
            .client
            .embeddings(&self.endpoint, &self.target_model, texts)
            .await
            .map_err(|err| EmbedError::Inference(err.to_string()))?;
        Ok(vectors.into_iter().map(normalised).collect())
    }
}

fn normalised(mut vector: Vec<f32>) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
    vector
}

/// About four characters per token, at least one token per word.
pub fn estimate_tokens(text: &str) -> usize {
    let chars = text.chars().count().div_ceil(4);
    chars.max(text.split_whitespace().count())
}

#[async_trait]
impl Embedder for RemoteEmbedder {
    fn model(&self) -> &str {
        &self.identity
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn max_tokens(&self) -> usize {
        ASSUMED_MAX_TOKENS
    }

    fn count_tokens(&self, text: &str) -> usize {
        estimate_tokens(text)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let vectors = self.call(batch).await?;
            if let Some(wrong) = vectors.iter().find(|v| v.len() != self.dimensions) {
                return Err(EmbedError::Inference(format!(
                    "{} returned {} dimensions instead of {}",
                    self.target_model,
                    wrong.len(),
                    self.dimensions
                )));
            }
            out.extend(vectors);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_normalised_and_tokens_estimated() {
        let v = normalised(vec![3.0, 4.0]);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        assert_eq!(normalised(vec![0.0, 0.0]), vec![0.0, 0.0]);
        assert_eq!(estimate_tokens("abcdefgh"), 2);
        assert_eq!(estimate_tokens("a b c d e"), 5);
        assert_eq!(estimate_tokens(""), 0);
    }
}
