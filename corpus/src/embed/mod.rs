//! Embeddings: text in, unit vectors out.
//!
//! [`Embedder`] is the interface indexing and retrieval use. The default is
//! [`local::LocalEmbedder`], all-MiniLM-L6-v2 run by candle on the CPU; a
//! provider's embedding target implements the same trait (bound through the
//! embedding role). Model files are found by [`model_files::resolve`].

pub mod bert;
pub mod kept;
pub mod local;
pub mod model_files;
pub mod remote;

use async_trait::async_trait;

/// Why embedding failed.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model files are missing or unusable.
    #[error("the embedding model cannot be loaded: {0}")]
    Model(String),
    /// The model ran but failed on this input.
    #[error("embedding failed: {0}")]
    Inference(String),
}

#[async_trait]
pub trait Embedder: Send + Sync {
    /// The model's name as stamped into the corpus fingerprint.
    fn model(&self) -> &str;
    /// Length of every vector returned.
    fn dimensions(&self) -> usize;
    /// Inputs longer than this many tokens are truncated.
    fn max_tokens(&self) -> usize;
    /// Counts the tokens of `text` as the model sees them (without special tokens).
    fn count_tokens(&self, text: &str) -> usize;
    /// One L2-normalised vector per text, in order: what indexing stores.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// The vector of one query or question at answer time, where latency
    /// matters most; an embedder may compute it with a faster, slightly less
    /// exact configuration (the on-CPU model's `models.query_precision`).
    async fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.embed(&[text.to_owned()])
            .await?
            .pop()
            .ok_or_else(|| EmbedError::Inference("no vector came back for the query".into()))
    }
}

/// Cosine similarity of two vectors (1.0 for identical directions).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let denominator = norm(a) * norm(b);
    if denominator == 0.0 {
        0.0
    } else {
        dot / denominator
    }
}
