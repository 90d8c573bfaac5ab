//! Vectors of texts an embedder made, kept in memory while that embedder
//! serves, so that texts seen again (refused questions on each Dashboard
//! load, pinned questions at each lookup) are embedded once. Another
//! embedder (the role rebound) starts afresh; past [`KEPT_AT_MOST`] vectors
//! all are let go.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use super::{EmbedError, Embedder};

/// At most this many vectors are kept.
pub const KEPT_AT_MOST: usize = 10_000;

#[derive(Default)]
pub struct Kept(Mutex<ByEmbedder>);

#[derive(Default)]
struct ByEmbedder {
    by: Option<Weak<dyn Embedder>>,
    vectors: HashMap<String, Vec<f32>>,
}

impl Kept {
    fn kept(&self) -> std::sync::MutexGuard<'_, ByEmbedder> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The vector of each of `texts` by `embedder`, in order: those kept as
    /// they are, the others embedded now and kept. `as_query`: embedded as
    /// an asked question is ([`Embedder::embed_query`]), so that they
    /// compare with one; otherwise in one batch, as indexing does.
    pub async fn vectors(
        &self,
        embedder: &Arc<dyn Embedder>,
        texts: &[String],
        as_query: bool,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut vectors: Vec<Option<Vec<f32>>> = {
            let mut kept = self.kept();
            if !kept.by.as_ref().is_some_and(|by| by.ptr_eq(&Arc::downgrade(embedder))) {
                *kept = ByEmbedder { by: Some(Arc::downgrade(embedder)), vectors: HashMap::new() };
            }
            texts.iter().map(|text| kept.vectors.get(text).cloned()).collect()
        };
        let missing: Vec<String> =
            texts.iter().zip(&vectors).filter(|(_, v)| v.is_none()).map(|(t, _)| t.clone()).collect();
        if missing.is_empty() {
            return Ok(vectors.into_iter().flatten().collect());
        }
        let fresh = if as_query {
            let mut fresh = Vec::with_capacity(missing.len());
            for text in &missing {
                fresh.push(embedder.embed_query(text).await?);
            }
            fresh
        } else {
            embedder.embed(&missing).await?
        };
        if fresh.len() != missing.len() {
            return Err(EmbedError::Inference("the embedder returned fewer vectors than texts".into()));
        }
        {
            let mut kept = self.kept();
            // Kept only if the same embedder still serves.
            if kept.by.as_ref().is_some_and(|by| by.ptr_eq(&Arc::downgrade(embedder))) {
                if kept.vectors.len() + fresh.len() > KEPT_AT_MOST {
                    kept.vectors.clear();
                }
                kept.vectors.extend(missing.into_iter().zip(fresh.iter().cloned()));
            }
        }
        let mut fresh = fresh.into_iter();
        for slot in vectors.iter_mut().filter(|v| v.is_none()) {
            *slot = fresh.next();
        }
        Ok(vectors.into_iter().flatten().collect())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts the texts it embeds; each vector is the text's length.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    #[async_trait::async_trait]
    impl Embedder for Counting {
        fn model(&self) -> &str {
            "counting"
        }
        fn dimensions(&self) -> usize {
            1
        }
        fn max_tokens(&self) -> usize {
            1
        }
        fn count_tokens(&self, _: &str) -> usize {
            1
        }
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.0.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts.iter().map(|t| vec![t.len() as f32]).collect())
        }
    }

    fn texts(all: &[&str]) -> Vec<String> {
        all.iter().map(|t| t.to_string()).collect()
    }

    #[tokio::test]
    async fn texts_are_embedded_once_for_the_embedder_that_made_them() {
        let first = Arc::new(Counting::default());
        let second = Arc::new(Counting::default());
        let (a, b): (Arc<dyn Embedder>, Arc<dyn Embedder>) = (first.clone(), second.clone());
        let kept = Kept::default();
        assert_eq!(kept.vectors(&a, &texts(&["x", "yy"]), false).await.unwrap(), vec![vec![1.0], vec![2.0]]);
        assert_eq!(first.0.load(Ordering::SeqCst), 2);
        // Seen again, with one new: only the new one is embedded, in order.
        let again = kept.vectors(&a, &texts(&["zzz", "x", "yy"]), true).await.unwrap();
        assert_eq!(again, vec![vec![3.0], vec![1.0], vec![2.0]]);
        assert_eq!(first.0.load(Ordering::SeqCst), 3);
        // Another embedder's space is another: nothing kept counts for it.
        kept.vectors(&b, &texts(&["x"]), false).await.unwrap();
        assert_eq!(second.0.load(Ordering::SeqCst), 1);
        kept.vectors(&a, &texts(&["x"]), false).await.unwrap();
        assert_eq!(first.0.load(Ordering::SeqCst), 4);
    }
}
